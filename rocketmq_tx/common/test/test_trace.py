"""
Tests for rocketmq_tx.common.trace: the records match what Java's ``TraceDataEncoder``
writes, byte for byte, and decode back; the batching rule of ``AsyncTraceDispatcher``.

The vectors were printed by the official 4.9.8 ``TraceDataEncoder.encoderFromContextBean``
for the contexts built in ``TraceVectors.java`` (next to this file; the command is at its
top, and compat-tests/test_trace_client.py runs it again and compares): :data:`CONTEXTS`
builds the same contexts here.
"""

from __future__ import annotations

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.common import trace
from rocketmq_tx.common.message import MessageExt
from rocketmq_tx.common.trace import ConsumeReturnType, MessageType, TraceBatcher, TraceBean, TraceContext, TraceType

#: name -> (hex of the UTF-8 record text, sorted keys), as Java printed them.
JAVA_VECTORS = {
    "pub": ("50756201313730303030303030303132330144656661756c74526567696f6e01504701540143304138303030313030303032"
            "413946303030303030303030303030303030310154616741016b31206b32013132372e302e302e313a313039313101350137"
            "0130013746303030303031303030303241394630303030303030303030303030303030017472756502",
            ["C0A8000100002A9F0000000000000001", "k1", "k2"]),
    "pubnull": ("50756201313730303030303030303435360144656661756c74526567696f6e015047015401494432016e756c6c016e756c"
                "6c013132372e302e302e313a3130393131013301300131014f4646320166616c736502", ["ID2"]),
    "subbefore": ("5375624265666f726501313730303030303030313030300144656661756c74526567696f6e0143470152455131014d3101"
                  "30016b31025375624265666f726501313730303030303030313030300144656661756c74526567696f6e01434701524551"
                  "31014d320132016e756c6c02", ["M1", "M2", "k1"]),
    "subafter": ("53756241667465720152455131014d310132350166616c7365016b3101340131373030303030303031303530014347025375"
                 "6241667465720152455131014d320132350166616c7365016e756c6c01340131373030303030303031303530014347"
                 "02", ["M1", "M2", "k1"]),
    "endtx": ("456e645472616e73616374696f6e01313730303030303030323030300144656661756c74526567696f6e015458470154014d"
              "330154616741016b33013132372e302e302e313a31303931310132014d3301434f4d4d49545f4d455353414745017472756502",
              ["M3", "k3"]),
}


def contexts() -> dict[str, TraceContext]:
    """The contexts TraceVectors.java builds."""
    s1 = TraceBean(msg_id="M1", retry_times=0, keys="k1")
    s2 = TraceBean(msg_id="M2", retry_times=2, keys=None)
    return {
        "pub": TraceContext(TraceType.Pub, 1700000000123, "DefaultRegion", "PG", 7, True, beans=[TraceBean(
            topic="T", msg_id="C0A8000100002A9F0000000000000001", tags="TagA", keys="k1 k2",
            store_host="127.0.0.1:10911", body_length=5, msg_type=MessageType.Normal_Msg,
            offset_msg_id="7F00000100002A9F0000000000000000")]),
        "pubnull": TraceContext(TraceType.Pub, 1700000000456, "DefaultRegion", "PG", 0, False, beans=[TraceBean(
            topic="T", msg_id="ID2", tags=None, keys=None, store_host="127.0.0.1:10911", body_length=3,
            msg_type=MessageType.Trans_Msg_Half, offset_msg_id="OFF2")]),
        "subbefore": TraceContext(TraceType.SubBefore, 1700000001000, "DefaultRegion", "CG", request_id="REQ1",
                                  beans=[s1, s2]),
        "subafter": TraceContext(TraceType.SubAfter, 1700000001050, "DefaultRegion", "CG", 25, False, "REQ1", 4,
                                 beans=[s1, s2]),
        "endtx": TraceContext(TraceType.EndTransaction, 1700000002000, "DefaultRegion", "TXG", beans=[TraceBean(
            topic="T", msg_id="M3", tags="TagA", keys="k3", store_host="127.0.0.1:10911",
            msg_type=MessageType.Trans_msg_Commit, transaction_id="M3", transaction_state="COMMIT_MESSAGE",
            from_transaction_check=True)]),
    }


class EncoderTests(SynchronousTestCase):
    def test_java_vectors(self) -> None:
        """Each record encodes to the bytes and keys Java's TraceDataEncoder produced for it."""
        for name, ctx in contexts().items():
            encoded = trace.encode(ctx)
            hex_text, keys = JAVA_VECTORS[name]
            self.assertEqual(encoded.data.encode("utf-8").hex(), hex_text, name)
            self.assertEqual(sorted(encoded.keys), keys, name)

    def test_separators(self) -> None:
        """The separators are Java's characters 1 and 2."""
        self.assertEqual((trace.CONTENT_SPLITOR, trace.FIELD_SPLITOR), (chr(1), chr(2)))

    def test_round_trip(self) -> None:
        """Each vector decodes to its context (one per bean; ``null`` stays the text, as in Java)."""
        for name, ctx in contexts().items():
            decoded = trace.decode(bytes.fromhex(JAVA_VECTORS[name][0]).decode())
            self.assertEqual(len(decoded), len(ctx.beans), name)
            for got, bean in zip(decoded, ctx.beans):
                self.assertEqual(got.trace_type, ctx.trace_type)
                self.assertEqual(got.beans[0].msg_id, bean.msg_id)
                self.assertEqual(got.beans[0].keys, bean.keys if bean.keys is not None else "null")
                self.assertEqual((got.time_stamp, got.group_name), (ctx.time_stamp, ctx.group_name))
                if ctx.trace_type is not TraceType.SubBefore:
                    self.assertEqual(got.success, ctx.success)
            self.assertEqual(trace.encode(decoded[0]).data.split(trace.CONTENT_SPLITOR)[0], ctx.trace_type.value)
        pub = trace.decode(bytes.fromhex(JAVA_VECTORS["pub"][0]).decode())[0]
        self.assertEqual((pub.beans[0].offset_msg_id, pub.beans[0].store_host, pub.cost_time, pub.beans[0].msg_type),
                         ("7F00000100002A9F0000000000000000", "127.0.0.1:10911", 7, MessageType.Normal_Msg))
        after = trace.decode(bytes.fromhex(JAVA_VECTORS["subafter"][0]).decode())[0]
        self.assertEqual((after.request_id, after.cost_time, after.context_code), ("REQ1", 25, 4))
        end = trace.decode(bytes.fromhex(JAVA_VECTORS["endtx"][0]).decode())[0]
        self.assertEqual((end.beans[0].transaction_state, end.beans[0].from_transaction_check),
                         ("COMMIT_MESSAGE", True))

    def test_old_layouts_and_unknown(self) -> None:
        """A 13-field Pub (no offsetMsgId), a 15-field one (client host), a 6-field SubAfter, unknown types."""
        sep = trace.CONTENT_SPLITOR
        old = sep.join(["Pub", "1", "R", "G", "T", "ID", "t", "k", "h:1", "3", "2", "0", "true"]) + trace.FIELD_SPLITOR
        new = sep.join(["Pub", "1", "R", "G", "T", "ID", "t", "k", "h:1", "3", "2", "3", "OFF", "false", "c"])
        after = sep.join(["SubAfter", "REQ", "ID", "5", "true", "k"])
        decoded = trace.decode(old + "Other" + sep + "x" + trace.FIELD_SPLITOR + new + trace.FIELD_SPLITOR + after)
        self.assertEqual([c.trace_type for c in decoded], [TraceType.Pub, TraceType.Pub, TraceType.SubAfter])
        self.assertEqual((decoded[0].success, decoded[0].beans[0].offset_msg_id), (True, ""))
        self.assertEqual((decoded[1].success, decoded[1].beans[0].client_host, decoded[1].beans[0].msg_type),
                         (False, "c", MessageType.Delay_Msg))
        self.assertEqual((decoded[2].cost_time, decoded[2].context_code), (5, 0))
        self.assertEqual(trace.decode(""), [])
        self.assertRaises(ValueError, trace.decode, "Pub" + sep + "1")


class ContextTests(SynchronousTestCase):
    def test_pub(self) -> None:
        """A Pub record's time, cost, store time and message type follow Java's send hook."""
        ctx = trace.pub_context("PG", "T", {"TAGS": "a", "KEYS": "k1 k2", "DELAY": "3"}, 10, "b:1", "U", "O", True,
                                "R", 1000, now_ms=1010)
        self.assertEqual((ctx.time_stamp, ctx.cost_time, ctx.beans[0].msg_type, ctx.beans[0].store_time),
                         (1000, 10, MessageType.Delay_Msg, 1005))
        self.assertEqual(trace.message_type({"TRAN_MSG": "true"}), MessageType.Trans_Msg_Half)
        self.assertEqual(trace.message_type({}), MessageType.Normal_Msg)

    def test_sub(self) -> None:
        """SubBefore skips messages with TRACE_ON=false; SubAfter shares the request id and divides the cost."""
        on = MessageExt("T", b"x", properties={"UNIQ_KEY": "U1", "KEYS": "k", "MSG_REGION": "R"}, reconsume_times=1)
        off = MessageExt("T", b"y", properties={"UNIQ_KEY": "U2", "TRACE_ON": "false"})
        before = trace.sub_before_context("CG", [on, off], "REQ", now_ms=100)
        assert before is not None
        self.assertEqual([(b.msg_id, b.retry_times, b.keys) for b in before.beans], [("U1", 1, "k")])
        self.assertEqual(before.region_id, "R")
        self.assertIsNone(trace.sub_before_context("CG", [off], "REQ"))
        after = trace.sub_after_context(before, 2, False, ConsumeReturnType.FAILED, now_ms=150)
        self.assertEqual((after.cost_time, after.success, after.context_code, after.request_id, after.time_stamp),
                         (25, False, 4, "REQ", 150))


class BatcherTests(SynchronousTestCase):
    def ctx(self, msg_id: str, keys: str | None = None) -> TraceContext:
        return TraceContext(TraceType.Pub, 1, "R", "G", beans=[TraceBean(topic="T", msg_id=msg_id, keys=keys)])

    def test_waits_then_sends_one_batch(self) -> None:
        """Records wait 500 ms from the first, then leave as one body with their keys, once."""
        batcher = TraceBatcher("TT", wait_ms=500)
        self.assertEqual(batcher.add(self.ctx("A", "k1 k2"), now_ms=1000), [])
        self.assertEqual(batcher.add(self.ctx("B", "k1"), now_ms=1200), [])
        self.assertEqual(batcher.due(now_ms=1499), [])
        ((topic, body, keys),) = batcher.due(now_ms=1500)
        self.assertEqual((topic, keys), ("TT", "A k1 k2 B"))
        self.assertEqual([c.beans[0].msg_id for c in trace.decode(body.decode())], ["A", "B"])
        self.assertEqual((batcher.pending, batcher.due(now_ms=5000), batcher.flush()), (0, [], []))

    def test_size_limit(self) -> None:
        """A batch leaves at once when its text reaches the size limit."""
        batcher = TraceBatcher(max_msg_size=10100)
        big = self.ctx("A" * 120)
        sent = []
        for _ in range(200):
            sent += batcher.add(big, now_ms=0)
        self.assertTrue(sent)
        self.assertTrue(all(len(body) >= 100 for _, body, _ in sent))
        self.assertEqual(sent[0][0], trace.RMQ_SYS_TRACE_TOPIC)

    def test_bounded(self) -> None:
        """At most queue_size records wait; later ones are counted as discarded."""
        batcher = TraceBatcher(queue_size=2, max_msg_size=10 ** 9)
        for i in range(3):
            batcher.add(self.ctx(str(i)), now_ms=0)
        self.assertEqual((batcher.pending, batcher.discarded), (2, 1))
