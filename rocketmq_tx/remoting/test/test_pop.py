"""
Tests for the POP codecs: headers, extra-info strings, revive-topic records, batch-ack body.

The vectors were printed by the 5.5.0 Java classes (rocketmq-remoting/-store 5.5.0 with
fastjson2, as the 5.5.0 broker writes them; ``makeCustomHeaderToNet`` for the headers).
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.common import fastjson
from rocketmq_tx.remoting import RemotingCommandError
from rocketmq_tx.remoting import extrainfo as ei
from rocketmq_tx.remoting.headers.pop import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
    NotificationRequestHeader,
    NotificationResponseHeader,
    PeekMessageRequestHeader,
    PollingInfoRequestHeader,
    PollingInfoResponseHeader,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
)
from rocketmq_tx.remoting.popbodies import (
    AckMsg,
    BatchAck,
    BatchAckMessageRequestBody,
    BatchAckMsg,
    PopCheckPoint,
    _compact,
    revive_topic,
)

POP_EXT = {"attemptId": "att", "bname": "broker-a", "bornTime": "1700000000000", "consumerGroup": "GID_a",
           "exp": "*", "expType": "TAG", "initMode": "0", "invisibleTime": "60000", "maxMsgNums": "32",
           "order": "true", "pollTime": "15000", "queueId": "-1", "topic": "TopicA"}
CK_JSON = (b'{"bm":0,"bn":"broker-a","c":"GID_a","d":[0,1,5],"it":60000,"n":3,"pt":1700000000000,"q":2,'
           b'"reviveTime":1700000060000,"ro":0,"so":10,"sp":false,"t":"TopicA"}')
CK_JSON_MIN = b'{"bm":0,"c":"g","it":0,"n":0,"pt":0,"q":0,"reviveTime":0,"ro":0,"rp":"2","so":0,"sp":false,"t":"t"}'
ACK_JSON = b'{"ao":12,"bn":"broker-a","c":"GID_a","pt":1700000000000,"q":2,"so":10,"t":"TopicA"}'
BACK_JSON = b'{"ao":0,"aol":[11,13],"bn":"broker-a","c":"GID_a","pt":1700000000000,"q":2,"so":10,"t":"TopicA"}'
BATCH_BODY = (b'{"acks":[{"b":"BQI=","c":"GID_a","it":60000,"pt":1700000000000,"q":2,"r":"0","rq":3,"so":10,'
              b'"t":"TopicA"}],"brokerName":"broker-a"}')


class HeaderTests(SynchronousTestCase):
    def test_pop_request_vector(self) -> None:
        """POP_MESSAGE's header decodes from and encodes to what the 5.5.0 client writes."""
        header = PopMessageRequestHeader.from_ext_fields(POP_EXT)
        self.assertEqual((header.queue_id, header.max_msg_nums, header.invisible_time, header.is_order),
                         (-1, 32, 60000, True))
        self.assertEqual(header.to_ext_fields(), POP_EXT)

    def test_pop_request_required(self) -> None:
        """A POP request without its invisible time is refused with Java's text."""
        ext = dict(POP_EXT)
        del ext["invisibleTime"]
        with self.assertRaisesRegex(RemotingCommandError, "<invisibleTime> is null"):
            PopMessageRequestHeader.from_ext_fields(ext)

    def test_other_vectors(self) -> None:
        """Each POP-family header writes Java's extFields."""
        cases = [
            (PopMessageResponseHeader(1, 2, 3, 4, "0 2 10"),
             {"invisibleTime": "2", "popTime": "1", "restNum": "4", "reviveQid": "3", "startOffsetInfo": "0 2 10"}),
            (AckMessageRequestHeader("g", "t", 1, "x", 5),
             {"consumerGroup": "g", "extraInfo": "x", "offset": "5", "queueId": "1", "topic": "t"}),
            (ChangeInvisibleTimeRequestHeader("g", "t", 1, "x", 5, 3000, False),
             {"consumerGroup": "g", "extraInfo": "x", "invisibleTime": "3000", "offset": "5", "queueId": "1",
              "suspend": "false", "topic": "t"}),
            (ChangeInvisibleTimeResponseHeader(1, 2, 3), {"invisibleTime": "2", "popTime": "1", "reviveQid": "3"}),
            (PeekMessageRequestHeader("g", "t", 1, 3),
             {"consumerGroup": "g", "maxMsgNums": "3", "queueId": "1", "topic": "t"}),
            (NotificationRequestHeader("g", "t", 1, 10, 11, False),
             {"bornTime": "11", "consumerGroup": "g", "order": "false", "pollTime": "10", "queueId": "1",
              "topic": "t"}),
            (NotificationResponseHeader(True, False), {"hasMsg": "true", "pollingFull": "false"}),
            (PollingInfoRequestHeader("g", "t", 1), {"consumerGroup": "g", "queueId": "1", "topic": "t"}),
            (PollingInfoResponseHeader(7), {"pollingNum": "7"}),
        ]
        for header, ext in cases:
            self.assertEqual(header.to_ext_fields(), ext)
            self.assertEqual(type(header).from_ext_fields(ext), header)


class ExtraInfoTests(SynchronousTestCase):
    def test_build_vectors(self) -> None:
        """buildExtraInfo writes Java's string for V1 and V2 retry topics, with and without the offset."""
        self.assertEqual(ei.build_extra_info(10, 1700000000000, 60000, 3, "%RETRY%g_t", "broker-a", 2, 11),
                         "10 1700000000000 60000 3 1 broker-a 2 11")
        self.assertEqual(ei.build_extra_info(10, 1700000000000, 60000, 3, "%RETRY%g+t", "broker-a", 2),
                         "10 1700000000000 60000 3 2 broker-a 2")

    def test_info_vectors(self) -> None:
        """startOffsetInfo, msgOffsetInfo and orderCountInfo are built as Java builds them."""
        info = ei.build_start_offset_info(ei.build_start_offset_info("", "t", 2, 10), "%RETRY%g_t", 0, 4)
        self.assertEqual(info, "0 2 10;1 0 4")
        self.assertEqual(ei.parse_start_offset_info(info), {"0@2": 10, "1@0": 4})
        info = ei.build_msg_offset_info(ei.build_msg_offset_info("", "t", 2, [10, 11]), "%RETRY%g+t", 0, [4])
        self.assertEqual(info, "0 2 10,11;2 0 4")
        self.assertEqual(ei.parse_msg_offset_info(info), {"0@2": [10, 11], "2@0": [4]})
        info = ei.build_queue_id_order_count_info(ei.build_queue_offset_order_count_info("", "t", 2, 10, 1), "t", 2, 3)
        self.assertEqual(info, "0 qo2%10 1;0 2 3")
        self.assertEqual(ei.parse_order_count_info(info), {"0@qo2%10": 1, "0@2": 3})

    def test_parse_refuses(self) -> None:
        """Short, non-numeric, out-of-range extra info is refused; duplicates in infos too."""
        for bad in ["", "1 2 3 4 0 b", "1 2 3 x 0 b 0", "1 2 3 4 0 b 2147483648", "1 2 3 4 0 b 0 1_0",
                    "1 2 3 4 0 b  0", "9223372036854775808 2 3 4 0 b 0"]:
            self.assertRaises(ValueError, ei.parse_extra_info, bad)
        self.assertRaises(ValueError, ei.parse_start_offset_info, "0 1 2;0 1 3")
        self.assertRaises(ValueError, ei.parse_start_offset_info, "0 1")

    def test_retry_topics(self) -> None:
        """Pop retry topic names and their retry flags, both forms."""
        self.assertEqual(ei.build_pop_retry_topic("T", "G"), "%RETRY%G_T")
        self.assertEqual(ei.build_pop_retry_topic("T", "G", True), "%RETRY%G+T")
        self.assertEqual(ei.parse_normal_topic("%RETRY%G_T", "G"), "T")
        self.assertEqual(ei.parse_normal_topic("%RETRY%G+T", "G"), "T")
        self.assertEqual(ei.real_topic("T", "G", "2"), "%RETRY%G+T")
        self.assertRaises(ValueError, ei.real_topic, "T", "G", "3")
        self.assertEqual(revive_topic("DefaultCluster"), "rmq_sys_REVIVE_LOG_DefaultCluster")

    @given(st.integers(0, 2 ** 63 - 1), st.integers(0, 2 ** 63 - 1), st.integers(0, 2 ** 63 - 1),
           st.integers(0, 999), st.sampled_from(["T", "%RETRY%G_T", "%RETRY%G+T"]),
           st.text("abc-_019", min_size=1), st.integers(0, 2 ** 31 - 1), st.none() | st.integers(0, 2 ** 63 - 1))
    def test_round_trip(self, ck: int, pop: int, inv: int, rq: int, topic: str, broker: str, qid: int,
                        qo: int | None) -> None:
        """Any extra info built parses back to its fields."""
        parsed = ei.parse_extra_info(ei.build_extra_info(ck, pop, inv, rq, topic, broker, qid, qo))
        self.assertEqual(parsed, ei.ExtraInfo(ck, pop, inv, rq, ei.retry_flag(topic), broker, qid, qo))
        self.assertEqual(parsed.real_topic("T", "G"), topic)


class ReviveRecordTests(SynchronousTestCase):
    @given(st.lists(st.one_of(st.integers(-(2 ** 64), 2 ** 64).map(str), st.sampled_from(["0", "1", "2", "", "+7",
                                                                                          "-0", "x", "00012"]),
                              st.text(alphabet="0123456789+- ab", max_size=21)), min_size=5, max_size=10))
    def test_fast_path_same_as_general(self, fields: list[str]) -> None:
        """The one-regex fast path answers exactly as the field-by-field parser (or both refuse)."""
        text = " ".join(fields)
        try:
            general = ei._parse_extra_info(text)
        except ValueError:
            general = None
        try:
            fast = ei.parse_extra_info(text)
        except ValueError:
            fast = None
        self.assertEqual(fast, general)

    @given(st.integers(-(2 ** 63), 2 ** 63 - 1), st.integers(-(2 ** 63), 2 ** 63 - 1),
           st.one_of(st.none(), st.text(max_size=8), st.sampled_from(["CG", "%RETRY%CG", "a|b.c:d-e_f"])),
           st.one_of(st.none(), st.text(max_size=8), st.sampled_from(["T", "rmq_sys_X"])),
           st.integers(-(2 ** 31), 2 ** 31 - 1), st.integers(0, 2 ** 63 - 1),
           st.one_of(st.none(), st.text(max_size=8), st.sampled_from(["broker-a"])))
    def test_ack_json_fast_path(self, ao: int, so: int, group: str | None, topic: str | None, qid: int, pt: int,
                                broker: str | None) -> None:
        """AckMsg.to_json's direct form writes the same bytes as the general writer."""
        ack = AckMsg(ao, so, group, topic, qid, pt, broker)
        self.assertEqual(ack.to_json(), fastjson.dumps(_compact(ack._fields())))

    def test_checkpoint_vectors(self) -> None:
        """A checkpoint writes and reads the JSON the 5.5.0 broker writes."""
        ck = PopCheckPoint(10, 1700000000000, 60000, 0, 3, 2, "TopicA", "GID_a", 0, [0, 1, 5], "broker-a")
        self.assertEqual(ck.to_json(), CK_JSON)
        self.assertEqual(PopCheckPoint.from_json(CK_JSON), ck)
        minimal = PopCheckPoint(topic="t", cid="g", re_put_times="2")
        self.assertEqual(minimal.to_json(), CK_JSON_MIN)
        self.assertEqual(PopCheckPoint.from_json(CK_JSON_MIN), minimal)
        self.assertEqual([ck.index_of_ack(o) for o in (9, 10, 11, 12, 15)], [-1, 0, 1, -1, 2])
        self.assertEqual(ck.ack_offset_by_index(2), 15)

    def test_ack_vectors(self) -> None:
        """Ack and batch-ack records write Java's JSON and read its long alternate names too."""
        ack = AckMsg(12, 10, "GID_a", "TopicA", 2, 1700000000000, "broker-a")
        self.assertEqual(ack.to_json(), ACK_JSON)
        self.assertEqual(AckMsg.from_json(ACK_JSON), ack)
        self.assertEqual(AckMsg.from_json(b'{"ackOffset":5,"consumerGroup":"g"}'), AckMsg(5, consumer_group="g"))
        back = BatchAckMsg(0, 10, "GID_a", "TopicA", 2, 1700000000000, "broker-a", [11, 13])
        self.assertEqual(back.to_json(), BACK_JSON)
        self.assertEqual(BatchAckMsg.from_json(BACK_JSON), back)

    def test_refused(self) -> None:
        """Records with fields of the wrong type or range are refused."""
        for raw in [b"[]", b"{", b'{"so":"x"}', b'{"n":300}', b'{"t":{}}', b'{"d":[1,"a"]}']:
            self.assertRaises(ValueError, PopCheckPoint.from_json, raw)

    def test_batch_body_vector(self) -> None:
        """BATCH_ACK_MESSAGE's body and its bitset decode and encode as the 5.5.0 client writes them."""
        body = BatchAckMessageRequestBody.decode(BATCH_BODY)
        self.assertEqual(body.broker_name, "broker-a")
        (ack,) = body.acks
        self.assertEqual(ack.offsets(), [10, 12, 19])
        self.assertEqual((ack.retry, ack.revive_queue_id, ack.invisible_time), ("0", 3, 60000))
        self.assertEqual(body.encode(), BATCH_BODY)

    def test_batch_body_refused(self) -> None:
        """A batch ack body with a bad bitset, too wide a bitset or no list is refused."""
        for raw in [b'{"acks":{}}', b'{"acks":[{"b":"!!"}]}', b'{"acks":[1]}',
                    b'{"acks":[{"b":"' + b"A" * 200 + b'"}]}']:
            self.assertRaises(ValueError, BatchAckMessageRequestBody.decode, raw)

    @given(st.lists(st.builds(BatchAck, st.text(max_size=5), st.text(max_size=5), st.sampled_from(["0", "1", "2"]),
                              st.integers(0, 2 ** 40), st.integers(0, 64), st.integers(0, 8), st.integers(0, 2 ** 42),
                              st.integers(0, 2 ** 30), st.integers(0, 2 ** 64 - 1)), max_size=3))
    def test_batch_round_trip(self, acks: list[BatchAck]) -> None:
        """Any batch-ack body encodes and decodes back to itself."""
        body = BatchAckMessageRequestBody("b", acks)
        self.assertEqual(BatchAckMessageRequestBody.decode(body.encode()), body)
