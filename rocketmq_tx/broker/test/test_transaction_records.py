# -*- test-case-name: rocketmq_tx.broker.test.test_transaction_records -*-
"""
The committed and op messages END_TRANSACTION writes (``final_message``, ``op_message``,
rebuilt for speed, issue #21) byte for byte against the builders they replaced, kept here as
the reference: the same END_TRANSACTION on two brokers with the same clock and the same
UNIQ_KEY generator, one with each pair of builders, leaves the same CommitLog.
"""

from __future__ import annotations

from typing import Any

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.broker.processors import processor_table
from rocketmq_tx.broker.test.util import T0, Ctx, FakeReactor, make_controller
from rocketmq_tx.broker.transaction import util
from rocketmq_tx.broker.transaction.util import TRANS_OP_HALF_TOPIC, java_hashmap_order
from rocketmq_tx.common.message import MessageConst, MessageExt, properties_to_string, wait_store_msg_ok
from rocketmq_tx.common.messagecodec import java_string_hash
from rocketmq_tx.common.msgid import UniqueKeyGenerator
from rocketmq_tx.common.sysflag import MessageSysFlag, reset_transaction_value
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.remoting.headers import SendMessageRequestHeader
from rocketmq_tx.remoting.headers.transaction import EndTransactionRequestHeader
from rocketmq_tx.store import MessageExtBrokerInner

COMMIT = MessageSysFlag.TRANSACTION_COMMIT_TYPE
ROLLBACK = MessageSysFlag.TRANSACTION_ROLLBACK_TYPE
PREPARED = MessageSysFlag.TRANSACTION_PREPARED_TYPE


# ---------------------------------------------------------------- the builders as they were

def _tags_code(props: dict[str, str]) -> int:
    tags = props.get(MessageConst.PROPERTY_TAGS)
    return java_string_hash(tags) if tags else 0


def old_final_message(half: MessageExt, transaction_type: int, commit_log_offset: int) -> MessageExtBrokerInner:
    props = dict(half.properties)
    topic = props.get(MessageConst.PROPERTY_REAL_TOPIC)
    if not topic:
        raise ValueError("the half message has no REAL_TOPIC")
    queue_id = int(props[MessageConst.PROPERTY_REAL_QUEUE_ID])
    text = properties_to_string(props)
    for name in (MessageConst.PROPERTY_REAL_TOPIC, MessageConst.PROPERTY_REAL_QUEUE_ID,
                 MessageConst.PROPERTY_TRANSACTION_PREPARED):
        props.pop(name, None)
    return MessageExtBrokerInner(
        topic=topic, body=half.body, properties=text.encode(), queue_id=queue_id, flag=half.flag,
        sys_flag=reset_transaction_value(half.sys_flag, transaction_type), born_timestamp=half.born_timestamp,
        born_host=half.born_host, store_host=half.store_host, reconsume_times=half.reconsume_times,
        prepared_transaction_offset=commit_log_offset, tags_code=_tags_code(props), property_map=props,
        wait_store_msg_ok=wait_store_msg_ok(props))


_OLD_OP_PROPERTIES = tuple(java_hashmap_order({MessageConst.PROPERTY_TAGS: "d",
                                               MessageConst.PROPERTY_WAIT_STORE_MSG_OK: "true",
                                               MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX: None}).items())


def old_op_message(half: MessageExt, uniq_key: str, now_ms: int, broker_host: tuple[str, int]
                   ) -> MessageExtBrokerInner:
    props = {name: uniq_key if value is None else value for name, value in _OLD_OP_PROPERTIES}
    return MessageExtBrokerInner(
        topic=TRANS_OP_HALF_TOPIC, body=str(half.queue_offset).encode(),
        properties=properties_to_string(props).encode(),
        queue_id=half.queue_id, flag=0, sys_flag=0, born_timestamp=now_ms, born_host=broker_host,
        store_host=broker_host, tags_code=java_string_hash("d"), property_map=props, wait_store_msg_ok=False)


def old_op_message_body(queue_id: int, body: bytes, uniq_key: str, now_ms: int, broker_host: tuple[str, int]
                        ) -> MessageExtBrokerInner:
    """The bridge's call, answered by the old builder (4.9's form: *body* is one offset)."""
    half = MessageExt(TRANS_OP_HALF_TOPIC, b"", queue_id=queue_id, queue_offset=int(body))
    return old_op_message(half, uniq_key, now_ms, broker_host)


# ---------------------------------------------------------------- the comparison

def _ids() -> UniqueKeyGenerator:
    return UniqueKeyGenerator(ip="10.0.0.9", pid=77, class_loader_hash=12345, now=lambda: T0 + 1.5)


class Broker:
    """One broker on a fresh store, its clock at T0, its op messages' UNIQ_KEYs fixed."""

    def __init__(self, case: SynchronousTestCase) -> None:
        self.reactor = FakeReactor()
        # each op message as END_TRANSACTION writes it (4.9's form, the builders compared)
        self.controller = make_controller(case, self.reactor, transactionOpBatchInterval=0)
        self.controller.transactional_message_bridge.ids = _ids()
        self.table = processor_table(self.controller)

    def call(self, ctx: Ctx, code: int, ext: dict, body: bytes = b"") -> Any:
        request = RemotingCommand.request(code, ext, body, version=409)
        return self.table.dispatch(ctx, request)

    def commit_log(self) -> bytes:
        store = self.controller.store
        end = store.get_max_phy_offset()
        data = store.commit_log.get_message(0, end)
        assert data is not None
        return bytes(data)


class RecordsTests(SynchronousTestCase):
    #: (peer, properties, body, sysFlag, flag, reconsumeTimes, ending)
    SENDS: tuple[tuple[str, dict[str, str], bytes, int, int, int, int], ...] = (
        ("127.0.0.1:6666", {"UNIQ_KEY": "U1", "WAIT": "true", "TAGS": "TagA", "TRAN_MSG": "true", "PGROUP": "pg"},
         b"payload" * 100, PREPARED, 0, 0, COMMIT),
        # keys, no tags, WAIT=false, a flag and reconsume times, the bits Java's clients set
        ("10.1.2.3:40000", {"KEYS": "k1 k2", "UNIQ_KEY": "U2", "WAIT": "false", "TRAN_MSG": "true", "PGROUP": "pg",
                            "CHECK_IMMUNITY_TIME_IN_SECONDS": "30", "user": "x\x01y"},
         b"", PREPARED | MessageSysFlag.MULTI_TAGS_FLAG, 7, 3, COMMIT),
        # an IPv6 producer; compressed body flag kept as it is
        ("[::1]:5000", {"UNIQ_KEY": "U3", "TAGS": "t", "TRAN_MSG": "true", "PGROUP": "pg"},
         b"\x78\x9c\x03\x00\x00\x00\x00\x01", PREPARED | MessageSysFlag.COMPRESSED_FLAG, 0, 0, COMMIT),
        ("127.0.0.1:6666", {"UNIQ_KEY": "U4", "TAGS": "TagB", "TRAN_MSG": "true", "PGROUP": "pg"}, b"r", PREPARED,
         0, 0, ROLLBACK),
        # a delayed message: its commit goes through the schedule topic
        ("127.0.0.1:6666", {"UNIQ_KEY": "U5", "DELAY": "2", "TRAN_MSG": "true", "PGROUP": "pg"}, b"d", PREPARED,
         0, 0, COMMIT),
    )

    def run_all(self, broker: Broker) -> None:
        for i, (peer, props, body, sys_flag, flag, reconsume, ending) in enumerate(self.SENDS):
            broker.reactor.advance(0.003)
            header = SendMessageRequestHeader(
                producer_group="pg", topic="TopicTx", default_topic="TBW102", default_topic_queue_nums=4,
                queue_id=i % 4, sys_flag=sys_flag, born_timestamp=T0 * 1000 - i, flag=flag,
                properties=properties_to_string(props), reconsume_times=reconsume)
            ctx = Ctx(peer)
            sent = broker.call(ctx, RequestCode.SEND_MESSAGE_V2, header.to_v2().to_ext_fields(), body)
            self.assertEqual((sent.code, sent.remark), (ResponseCode.SUCCESS, None))
            f = sent.ext_fields
            broker.reactor.advance(0.002)
            end = EndTransactionRequestHeader("pg", int(f["queueOffset"]), int(f["msgId"][-16:], 16), ending, False,
                                              props["UNIQ_KEY"], props["UNIQ_KEY"])
            ended = broker.call(ctx, RequestCode.END_TRANSACTION, end.to_ext_fields())
            self.assertEqual((ended.code, ended.remark), (ResponseCode.SUCCESS, None))

    def test_same_commit_log(self) -> None:
        new = Broker(self)
        self.run_all(new)
        self.patch(util, "final_message", old_final_message)
        self.patch(util, "op_message", old_op_message)
        from rocketmq_tx.broker.processors import endtransaction
        from rocketmq_tx.broker.transaction import bridge
        self.patch(endtransaction, "final_message", old_final_message)
        self.patch(bridge, "op_message_body", old_op_message_body)
        old = Broker(self)
        self.run_all(old)
        # 5 half messages, 4 committed ones, 5 op messages
        self.assertEqual(old.controller.store.get_max_phy_offset(), new.controller.store.get_max_phy_offset())
        self.assertEqual(old.commit_log(), new.commit_log())
        self.assertGreater(len(new.commit_log()), 14 * 100)

    def test_builders_alike(self) -> None:
        """The builders' whole output, the in-memory map and WAIT included."""
        half = MessageExt("RMQ_SYS_TRANS_HALF_TOPIC", b"body", 5, {
            "UNIQ_KEY": "U", "WAIT": "false", "TAGS": "T", "TRAN_MSG": "true", "PGROUP": "pg", "REAL_TOPIC": "A",
            "REAL_QID": "3", "KEYS": "k"}, None, 0, 0, 9, MessageSysFlag.COMPRESSED_FLAG, T0, ("::1", 5), T0 + 1,
            ("127.0.0.1", 10911), 1234, 0, 2, 0)
        self.assertEqual(util.final_message(half, COMMIT, 1234), old_final_message(half, COMMIT, 1234))
        self.assertEqual(util.op_message(half, "KEY", T0, ("127.0.0.1", 10911)),
                         old_op_message(half, "KEY", T0, ("127.0.0.1", 10911)))
