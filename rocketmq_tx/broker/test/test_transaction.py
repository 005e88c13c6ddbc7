# -*- test-case-name: rocketmq_tx.broker.test.test_transaction -*-
"""
Transactional messages on the broker: the half message's layout, END_TRANSACTION (37),
the check (CHECK_TRANSACTION_STATE, 39) with its progress offsets, discards after
transactionCheckMax, RESUME_CHECK_HALF_MESSAGE (323), and the check run in slices.
"""

from __future__ import annotations

from typing import Any

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.broker.controller import BrokerController
from rocketmq_tx.broker.processors import processor_table
from rocketmq_tx.broker.test.util import T0, Ctx, FakeReactor, broker_settings, heartbeat, make_controller
from rocketmq_tx.broker.transaction import (
    CID_SYS_RMQ_TRANS,
    TRANS_CHECK_MAX_TIME_TOPIC,
    TRANS_HALF_TOPIC,
    TRANS_OP_HALF_TOPIC,
)
from rocketmq_tx.broker.transaction.check import TransactionalMessageCheckService
from rocketmq_tx.broker.transaction.util import java_hashmap_order, java_long, parse_op_body
from rocketmq_tx.common.message import MessageExt, properties_to_string
from rocketmq_tx.common.messagecodec import decode_message, decode_messages
from rocketmq_tx.common.sysflag import MessageSysFlag
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.remoting.headers import SendMessageRequestHeader
from rocketmq_tx.remoting.headers.transaction import CheckTransactionStateRequestHeader, EndTransactionRequestHeader
from rocketmq_tx.store.commitlog import offset_msg_id

COMMIT = MessageSysFlag.TRANSACTION_COMMIT_TYPE
ROLLBACK = MessageSysFlag.TRANSACTION_ROLLBACK_TYPE
NOT_TYPE = MessageSysFlag.TRANSACTION_NOT_TYPE
PREPARED = MessageSysFlag.TRANSACTION_PREPARED_TYPE
TOPIC = "TopicTx"


def half_props(**extra: str) -> str:
    values = {"TAGS": "TagA", "KEYS": "k1", "UNIQ_KEY": "UNIQ0001", "WAIT": "true", "TRAN_MSG": "true",
              "PGROUP": "pg"}
    values.update(extra)
    return properties_to_string(values)


class TransactionTestCase(SynchronousTestCase):
    #: these tests look at each op message as END_TRANSACTION writes it (Java 4.9's form);
    #: 5.x's batches are test_transaction_opbatch's
    keys: dict = {"transactionOpBatchInterval": 0}

    def setUp(self) -> None:
        self.reactor = FakeReactor()
        self.root = self.mktemp()
        self.start_broker()

    def start_broker(self) -> None:
        self.controller = make_controller(self, self.reactor, self.root, **self.keys)
        self.table = processor_table(self.controller)
        self.store = self.controller.store
        self.producer = Ctx("127.0.0.1:6666")

    def restart(self) -> None:
        self.controller.shutdown()
        self.start_broker()

    def call(self, code: int, ext: dict | None = None, body: bytes = b"", ctx: Any = None) -> Any:
        request = RemotingCommand.request(code, ext, body, version=409)
        request.opaque = 5
        return self.table.dispatch(ctx or self.producer, request)

    def send_half(self, body: bytes = b"hello", queue_id: int = 2, sys_flag: int = PREPARED, **extra: str
                  ) -> RemotingCommand:
        header = SendMessageRequestHeader(
            producer_group="pg", topic=TOPIC, default_topic="TBW102", default_topic_queue_nums=4, queue_id=queue_id,
            sys_flag=sys_flag, born_timestamp=T0 * 1000 - 5, flag=7, properties=half_props(**extra))
        response = self.call(RequestCode.SEND_MESSAGE_V2, header.to_v2().to_ext_fields(), body)
        self.assertEqual((response.code, response.remark), (ResponseCode.SUCCESS, None))
        return response

    def end(self, offset: int, queue_offset: int, state: int, group: str = "pg", from_check: bool = False) -> Any:
        header = EndTransactionRequestHeader(group, queue_offset, offset, state, from_check, "UNIQ0001", "UNIQ0001")
        return self.call(RequestCode.END_TRANSACTION, header.to_ext_fields())

    def queue(self, topic: str, queue_id: int = 0) -> list[MessageExt]:
        got = self.store.get_message("g", topic, queue_id, 0, 100)
        return [decode_message(b, 0)[0] for b in got.message_buffers]

    def register_producer(self, ctx: Any = None) -> None:
        response = self.call(RequestCode.HEART_BEAT, body=heartbeat("producer-1", ("pg",)).body, ctx=ctx)
        self.assertEqual(response.code, ResponseCode.SUCCESS)

    def check(self) -> None:
        self.controller.transactional_message_check_service.run_now()

    def checks_sent(self, ctx: Any = None) -> list[tuple[CheckTransactionStateRequestHeader, MessageExt]]:
        sent = [r for r in (ctx or self.producer).oneways if r.code == RequestCode.CHECK_TRANSACTION_STATE]
        (ctx or self.producer).oneways.clear()
        return [(CheckTransactionStateRequestHeader.from_ext_fields(r.ext_fields), decode_messages(r.body)[0])
                for r in sent]

    def offsets(self) -> tuple[int, int]:
        m = self.controller.consumer_offset_manager
        return (m.query_offset(CID_SYS_RMQ_TRANS, TRANS_HALF_TOPIC, 0),
                m.query_offset(CID_SYS_RMQ_TRANS, TRANS_OP_HALF_TOPIC, 0))


class HalfMessageTests(TransactionTestCase):
    def test_half_message_layout(self) -> None:
        """Stored in the half topic queue 0, REAL_TOPIC/REAL_QID added, sysFlag NOT_TYPE; the
        answer names the real queue, the half message's offsets and its UNIQ_KEY as transactionId."""
        response = self.send_half(queue_id=2)
        self.assertEqual(response.ext_fields["queueId"], "2")
        self.assertEqual(response.ext_fields["queueOffset"], "0")
        self.assertEqual(response.ext_fields["msgId"], offset_msg_id(("127.0.0.1", 10911), 0))
        # the 5.x proxy ends the transaction with this id and refuses to without it
        self.assertEqual(response.ext_fields["transactionId"], "UNIQ0001")
        [half] = self.queue(TRANS_HALF_TOPIC)
        self.assertEqual((half.topic, half.queue_id, half.sys_flag, half.flag), (TRANS_HALF_TOPIC, 0, 0, 7))
        self.assertEqual(half.properties, {
            "TAGS": "TagA", "KEYS": "k1", "UNIQ_KEY": "UNIQ0001", "WAIT": "true", "TRAN_MSG": "true", "PGROUP": "pg",
            "CLUSTER": "DefaultCluster", "REAL_TOPIC": TOPIC, "REAL_QID": "2"})
        self.assertEqual(self.queue(TOPIC, 2), [])

    def test_rejected(self) -> None:
        self.controller.settings["rejectTransactionMessage"] = True
        header = SendMessageRequestHeader(
            producer_group="pg", topic=TOPIC, default_topic="TBW102", default_topic_queue_nums=4, queue_id=0,
            sys_flag=PREPARED, born_timestamp=T0 * 1000, flag=0, properties=half_props())
        response = self.call(RequestCode.SEND_MESSAGE, header.to_ext_fields(), b"x")
        self.assertEqual((response.code, response.remark),
                         (ResponseCode.NO_PERMISSION, "the broker[127.0.0.1] sending transaction message is forbidden"))
        self.assertEqual(self.store.get_max_phy_offset(), 0)


class SystemTopicTests(TransactionTestCase):
    def test_half_and_op_topics_are_system_topics(self) -> None:
        """As Java's TopicValidator: no direct sends, no admin create, listed as system topics."""
        for topic in (TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC, TRANS_CHECK_MAX_TIME_TOPIC):
            header = SendMessageRequestHeader(
                producer_group="pg", topic=topic, default_topic="TBW102", default_topic_queue_nums=4, queue_id=0,
                sys_flag=0, born_timestamp=T0 * 1000, flag=0, properties="")
            response = self.call(RequestCode.SEND_MESSAGE, header.to_ext_fields(), b"x")
            self.assertEqual((response.code, response.remark),
                             (ResponseCode.NO_PERMISSION, f"Sending message to topic[{topic}] is forbidden."))
            self.assertTrue(self.controller.topic_config_manager.is_system_topic(topic))
            fields = {"topic": topic, "defaultTopic": "TBW102", "readQueueNums": "1", "writeQueueNums": "1",
                      "perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false"}
            response = self.call(RequestCode.UPDATE_AND_CREATE_TOPIC, fields)
            self.assertEqual((response.code, response.remark),
                             (ResponseCode.SYSTEM_ERROR, f"The topic[{topic}] is conflict with system topic."))
        # the check creates the half topic's config (1 queue), as Java's bridge does
        self.check()
        tc = self.controller.topic_config_manager.select_topic_config(TRANS_HALF_TOPIC)
        assert tc is not None
        self.assertEqual((tc.read_queue_nums, tc.write_queue_nums, tc.perm), (1, 1, 6))


class EndTransactionTests(TransactionTestCase):
    def test_commit(self) -> None:
        self.send_half(body=b"payload")
        response = self.end(0, 0, COMMIT)
        self.assertEqual((response.code, response.remark), (ResponseCode.SUCCESS, None))
        [msg] = self.queue(TOPIC, 2)
        self.assertEqual(msg.body, b"payload")
        self.assertEqual(msg.sys_flag & MessageSysFlag.TRANSACTION_MASK, COMMIT)
        self.assertEqual((msg.prepared_transaction_offset, msg.flag, msg.born_timestamp), (0, 7, T0 * 1000 - 5))
        # Java serialises the properties before clearing REAL_TOPIC, REAL_QID and TRAN_MSG
        self.assertEqual(msg.properties["TRAN_MSG"], "true")
        self.assertEqual((msg.properties["REAL_TOPIC"], msg.properties["REAL_QID"]), (TOPIC, "2"))
        self.assertEqual(msg.tags, "TagA")
        [op] = self.queue(TRANS_OP_HALF_TOPIC)
        self.assertEqual((op.body, op.tags, op.queue_id, op.sys_flag), (b"0", "d", 0, 0))
        self.assertEqual(list(op.properties), ["UNIQ_KEY", "WAIT", "TAGS"])  # java.util.HashMap's order
        self.assertEqual(op.born_host, ("127.0.0.1", 10911))

    def test_rollback(self) -> None:
        self.send_half()
        self.send_half()
        size = self.store.look_message_by_offset(0).store_size
        response = self.end(size, 1, ROLLBACK)
        self.assertEqual((response.code, response.remark), (ResponseCode.SUCCESS, None))
        self.assertEqual(self.queue(TOPIC, 2), [])
        [op] = self.queue(TRANS_OP_HALF_TOPIC)
        self.assertEqual(op.body, b"1")

    def test_unknown_is_not_answered(self) -> None:
        self.send_half()
        for from_check in (False, True):
            self.assertIsNone(self.end(0, 0, NOT_TYPE, from_check=from_check))
        self.assertEqual(self.queue(TRANS_OP_HALF_TOPIC), [])
        self.assertEqual(self.queue(TOPIC, 2), [])

    def test_put_figures(self) -> None:
        """As Java: the half message counts as a put to the half topic (the send processor's
        figures); the committed and op messages the broker writes itself count nowhere."""
        self.send_half()
        self.assertEqual(self.end(0, 0, COMMIT).code, ResponseCode.SUCCESS)
        stats = self.controller.stats
        self.assertEqual(stats.put_total, 1)
        self.assertEqual(set(stats.items["TOPIC_PUT_NUMS"]), {"RMQ_SYS_TRANS_HALF_TOPIC"})

    def test_from_check_commit(self) -> None:
        self.send_half()
        self.assertEqual(self.end(0, 0, COMMIT, from_check=True).code, ResponseCode.SUCCESS)
        self.assertEqual(len(self.queue(TOPIC, 2)), 1)

    def test_refusals(self) -> None:
        self.send_half()
        for args, remark in (((0, 0, COMMIT, "other"), "The producer group wrong"),
                             ((0, 3, COMMIT), "The transaction state table offset wrong"),
                             ((0, 0, ROLLBACK, "other"), "The producer group wrong"),
                             ((10 ** 9, 0, COMMIT), "Find prepared transaction message failed"),
                             ((10 ** 9, 0, ROLLBACK), "Find prepared transaction message failed")):
            response = self.end(*args)
            self.assertEqual((response.code, response.remark), (ResponseCode.SYSTEM_ERROR, remark))
        self.assertEqual(self.queue(TRANS_OP_HALF_TOPIC), [])
        self.assertEqual(self.queue(TOPIC, 2), [])

    def test_bad_state_and_slave(self) -> None:
        response = self.end(0, 0, 5)
        self.assertEqual(response.code, ResponseCode.SYSTEM_ERROR)
        self.assertIn("commitOrRollback", response.remark)
        from rocketmq_tx.store.config import BrokerRole
        self.controller.store_config.broker_role = BrokerRole.SLAVE
        self.assertEqual(self.end(0, 0, COMMIT).code, ResponseCode.SLAVE_NOT_AVAILABLE)

    def test_resume_check_half_message(self) -> None:
        self.send_half(TRANSACTION_CHECK_TIMES="15")
        response = self.call(RequestCode.RESUME_CHECK_HALF_MESSAGE,
                             {"msgId": offset_msg_id(("127.0.0.1", 10911), 0)})
        self.assertEqual((response.code, response.remark), (ResponseCode.SUCCESS, None))
        first, again = self.queue(TRANS_HALF_TOPIC)
        self.assertEqual(again.properties["TRANSACTION_CHECK_TIMES"], "0")
        self.assertEqual(again.properties["REAL_TOPIC"], TOPIC)
        response = self.call(RequestCode.RESUME_CHECK_HALF_MESSAGE,
                             {"msgId": offset_msg_id(("127.0.0.1", 10911), 10 ** 9)})
        self.assertEqual(response.code, ResponseCode.SYSTEM_ERROR)


class EndTransactionFromStoreTests(EndTransactionTests):
    """The same, each half message read back from the store (none kept in memory)."""

    def start_broker(self) -> None:
        super().start_broker()
        self.controller.transactional_message_service.recent_halves.max_count = 0


class RecentHalfMessagesTests(TransactionTestCase):
    def test_kept_half_reads_as_the_store_does(self) -> None:
        """The half message END_TRANSACTION gets from memory has every field a read of its
        record gives (but the body CRC, which nothing there uses), and is then forgotten."""
        service = self.controller.transactional_message_service
        self.send_half(body=b"first")
        self.send_half(body=b"second", queue_id=1, KEYS="k2 k3")
        offset = self.store.look_message_by_offset(0).store_size
        stored = self.store.look_message_by_offset(offset)
        self.assertEqual(len(service.recent_halves), 2)
        kept = service.get_half_message_by_offset(offset)
        self.assertIsNotNone(kept)
        for name in ("topic", "body", "flag", "properties", "queue_id", "store_size", "queue_offset",
                     "born_timestamp", "born_host", "store_timestamp", "store_host", "commit_log_offset",
                     "reconsume_times", "prepared_transaction_offset", "offset_msg_id"):
            self.assertEqual(getattr(kept, name), getattr(stored, name), name)
        mask = MessageSysFlag.TRANSACTION_MASK  # (the codec adds the IPv6 bits from the hosts)
        self.assertEqual(kept.sys_flag & mask, stored.sys_flag & mask)
        self.assertEqual(len(service.recent_halves), 1)
        # the second time from the store
        self.assertEqual(service.get_half_message_by_offset(offset), stored)
        self.assertEqual(self.end(offset, 1, COMMIT).code, ResponseCode.SUCCESS)

    def test_bounded(self) -> None:
        from rocketmq_tx.broker.transaction.service import RecentHalfMessages
        from rocketmq_tx.store import MessageExtBrokerInner
        halves = RecentHalfMessages(max_count=3, max_bytes=100)

        def inner(body: bytes) -> MessageExtBrokerInner:
            return MessageExtBrokerInner(TRANS_HALF_TOPIC, body, b"A\x01b\x02", property_map={"A": "b"})

        for i in range(5):
            halves.add(inner(b"x"), i * 100, i, 100, ("127.0.0.1", 1), T0)
        self.assertEqual((len(halves), halves.size), (3, 15))  # the oldest two dropped
        self.assertIsNone(halves.pop(0))
        halves.add(inner(b"y" * 90), 500, 5, 100, ("127.0.0.1", 1), T0)  # 94 bytes: two more dropped
        self.assertEqual((len(halves), halves.size), (2, 99))
        halves.add(inner(b"z" * 200), 600, 6, 300, ("127.0.0.1", 1), T0)  # larger than the bound: not kept
        self.assertEqual((len(halves), halves.size), (2, 99))
        self.assertEqual(halves.pop(500).queue_offset, 5)
        self.assertEqual((len(halves), halves.size), (1, 5))
        self.assertEqual(halves.pop(400).queue_offset, 4)
        self.assertEqual((len(halves), halves.size), (0, 0))
        self.assertIsNone(halves.pop(400))  # forgotten

    def test_not_used_once_outside_the_commit_log(self) -> None:
        """A kept half message whose record is no longer within the CommitLog's offsets (cut,
        or expired) is not used: the store decides, as without the kept ones."""
        service = self.controller.transactional_message_service
        self.send_half()
        read: list[int] = []
        service.bridge.look_message_by_offset = lambda offset: read.append(offset)  # type: ignore[method-assign]
        self.patch(self.store, "get_max_phy_offset", lambda: 10)  # the log cut inside the record
        self.assertIsNone(service.get_half_message_by_offset(0))
        self.assertEqual((read, len(service.recent_halves)), ([0], 0))

    def test_not_kept_when_not_stored_as_half(self) -> None:
        """A half message the store moved elsewhere (a delay level: the schedule topic) is read
        back from the store, as the rest; the slave refusal forgets every kept one."""
        service = self.controller.transactional_message_service
        self.send_half(DELAY="3")
        self.assertEqual(len(service.recent_halves), 0)
        self.send_half()
        self.assertEqual(len(service.recent_halves), 1)
        from rocketmq_tx.store.config import BrokerRole
        self.controller.store_config.broker_role = BrokerRole.SLAVE
        self.assertEqual(self.end(0, 0, COMMIT).code, ResponseCode.SLAVE_NOT_AVAILABLE)
        self.assertEqual(len(service.recent_halves), 0)


class SyncFlushTests(TransactionTestCase):
    """SYNC_FLUSH: the half message and (WAIT=true carried over, as Java) the commit wait for the disk."""

    keys = {"flushDiskType": "SYNC_FLUSH", "transactionOpBatchInterval": 0}

    def test_half_and_commit_wait_for_group_commit(self) -> None:
        gc = self.store.group_commit_service
        header = SendMessageRequestHeader(
            producer_group="pg", topic=TOPIC, default_topic="TBW102", default_topic_queue_nums=4, queue_id=1,
            sys_flag=PREPARED, born_timestamp=T0 * 1000, flag=0, properties=half_props())
        sent = self.call(RequestCode.SEND_MESSAGE, header.to_ext_fields(), b"x")
        self.assertNoResult(sent)
        gc.commit()
        self.assertEqual(self.successResultOf(sent).code, ResponseCode.SUCCESS)
        ended = self.end(0, 0, COMMIT)
        self.assertNoResult(ended)
        gc.commit()
        self.assertEqual(self.successResultOf(ended).code, ResponseCode.SUCCESS)
        self.assertEqual(len(self.queue(TOPIC, 1)), 1)
        self.assertEqual(len(self.queue(TRANS_OP_HALF_TOPIC)), 1)


class CheckTests(TransactionTestCase):
    def test_not_due_yet(self) -> None:
        self.register_producer()
        self.send_half()
        self.reactor.advance(5)
        self.check()
        self.assertEqual(self.checks_sent(), [])
        self.assertEqual(self.offsets(), (-1, -1))

    def test_check_then_commit(self) -> None:
        """A due half message is renewed at the queue's end and the producer asked about the copy;
        its answer commits the copy; later passes find nothing to do."""
        self.register_producer()
        self.send_half(body=b"late")
        self.reactor.advance(7)
        self.check()
        [(header, msg)] = self.checks_sent()
        self.assertEqual((msg.topic, msg.queue_id, msg.body), (TOPIC, 2, b"late"))
        self.assertEqual(msg.properties["TRANSACTION_CHECK_TIMES"], "1")
        copy = self.queue(TRANS_HALF_TOPIC)[1]
        self.assertEqual((header.tran_state_table_offset, header.commit_log_offset), (1, copy.commit_log_offset))
        self.assertEqual((header.msg_id, header.transaction_id), ("UNIQ0001", "UNIQ0001"))
        self.assertEqual(header.offset_msg_id, copy.offset_msg_id)
        self.assertEqual(copy.properties["TRANSACTION_CHECK_TIMES"], "1")
        self.assertEqual(copy.born_timestamp, T0 * 1000 - 5)
        self.assertEqual(self.offsets(), (1, -1))
        response = self.end(header.commit_log_offset, header.tran_state_table_offset, COMMIT, from_check=True)
        self.assertEqual(response.code, ResponseCode.SUCCESS)
        [committed] = self.queue(TOPIC, 2)
        self.assertEqual(committed.body, b"late")
        self.reactor.advance(60)
        self.check()
        self.assertEqual(self.checks_sent(), [])
        self.assertEqual(self.offsets(), (2, 1))
        self.assertEqual(len(self.queue(TOPIC, 2)), 1)

    def test_resolved_before_due_never_checked(self) -> None:
        self.register_producer()
        self.send_half()
        self.send_half()
        size = self.store.look_message_by_offset(0).store_size
        self.end(0, 0, COMMIT)
        self.end(size, 1, ROLLBACK)
        self.reactor.advance(60)
        self.check()
        self.assertEqual(self.checks_sent(), [])
        self.assertEqual(self.offsets(), (2, 2))

    def test_op_messages_as_5x_writes_them(self) -> None:
        """A 5.x broker merges op messages ("0,1,"): both half messages are resolved by one."""
        from rocketmq_tx.broker.transaction.util import op_message
        self.register_producer()
        self.send_half()
        self.send_half()
        half = self.store.look_message_by_offset(0)
        op = op_message(half, "UNIQ-OP", T0 * 1000, ("127.0.0.1", 10911))
        op.body = b"0,1,"
        self.assertTrue(self.controller.transactional_message_bridge.put_ok(op))
        self.reactor.advance(60)
        self.check()
        self.assertEqual(self.checks_sent(), [])
        self.assertEqual(self.offsets(), (2, 1))

    def test_check_max_discards(self) -> None:
        """transactionCheckMax checks, then (4.9.8) the message goes to TRANS_CHECK_MAX_TIME_TOPIC."""
        self.controller.settings["transactionCheckMax"] = 3
        self.register_producer()
        self.send_half()
        counts = []
        for _ in range(5):
            self.reactor.advance(61)
            self.check()
            counts += [m.properties["TRANSACTION_CHECK_TIMES"] for _, m in self.checks_sent()]
        self.assertEqual(counts, ["1", "2", "3"])
        [kept] = self.queue(TRANS_CHECK_MAX_TIME_TOPIC)
        self.assertEqual(kept.properties["TRANSACTION_CHECK_TIMES"], "3")
        self.assertEqual(kept.properties["REAL_TOPIC"], TOPIC)
        self.assertIsNotNone(self.controller.topic_config_manager.select_topic_config(TRANS_CHECK_MAX_TIME_TOPIC))
        self.assertEqual(self.queue(TOPIC, 2), [])

    def test_no_producer_online(self) -> None:
        self.send_half()
        self.reactor.advance(7)
        self.check()  # logged; the count still goes up, as in Java
        self.register_producer()
        self.reactor.advance(60)
        self.check()
        [(_, msg)] = self.checks_sent()
        self.assertEqual(msg.properties["TRANSACTION_CHECK_TIMES"], "2")

    def test_check_immunity_time(self) -> None:
        self.register_producer()
        self.send_half(CHECK_IMMUNITY_TIME_IN_SECONDS="30")
        self.reactor.advance(10)
        self.check()
        self.assertEqual(self.checks_sent(), [])
        # Java renews the message with its first queue offset, and moves on past the original
        halves = self.queue(TRANS_HALF_TOPIC)
        self.assertEqual(halves[1].properties["TRAN_PREPARED_QUEUE_OFFSET"], "0")
        self.reactor.advance(30)
        self.check()
        [(header, _)] = self.checks_sent()
        self.assertEqual(header.tran_state_table_offset, 2)

    def test_progress_survives_restart(self) -> None:
        self.register_producer()
        self.send_half(body=b"a")
        self.send_half(body=b"b")
        self.end(0, 0, COMMIT)
        self.reactor.advance(7)
        self.check()
        [(header, msg)] = self.checks_sent()
        self.assertEqual(msg.body, b"b")
        self.assertEqual(self.offsets(), (2, 1))  # the renewed copy (2) was stored during the pass
        self.restart()
        self.assertEqual(self.offsets(), (2, 1))
        self.register_producer()
        self.assertEqual(self.end(header.commit_log_offset, header.tran_state_table_offset, COMMIT, from_check=True
                                  ).code, ResponseCode.SUCCESS)
        self.reactor.advance(60)
        self.check()
        self.assertEqual(self.checks_sent(), [])
        self.assertEqual([m.body for m in self.queue(TOPIC, 2)], [b"a", b"b"])
        self.assertEqual(self.offsets(), (3, 2))

    def test_another_producer_of_the_group_gets_the_check(self) -> None:
        other = Ctx("127.0.0.1:7777")
        self.register_producer()
        self.register_producer(other)
        self.send_half()
        self.reactor.advance(7)
        self.check()
        sent = len(self.checks_sent()) + len(self.checks_sent(other))
        self.assertEqual(sent, 1)
        self.controller.channel_closed(self.producer)
        for _ in range(2):
            self.reactor.advance(60)
            self.check()
            self.assertEqual(len(self.checks_sent(other)), 1)


class StepClock:
    """Keeps the calls ``callLater(0, f)`` asks for, for the test to run one per turn."""

    def __init__(self) -> None:
        self.calls: list[Any] = []

    def callLater(self, delay: float, f: Any) -> Any:  # noqa: N802 - Twisted's name
        self.calls.append(f)
        return self

    def active(self) -> bool:
        return False


class SlicedCheckTests(TransactionTestCase):
    def test_pass_in_slices(self) -> None:
        """With a wall clock that says each step took long, every step gets its own reactor turn."""
        self.register_producer()
        for _ in range(3):
            self.send_half()
        self.reactor.advance(7)
        ticks = iter(range(10 ** 6))
        clock = StepClock()
        service = TransactionalMessageCheckService(
            self.controller.transactional_message_service, self.controller.transactional_message_check_listener,
            self.controller.settings, clock, wall=lambda: float(next(ticks)), slice_seconds=0.5)
        done = service.tick()
        self.assertNoResult(done)
        self.assertIs(service.tick(), done)  # a pass still running is not started twice
        turns = 0
        while clock.calls:
            clock.calls.pop(0)()
            turns += 1
        self.successResultOf(done)
        self.assertGreaterEqual(turns, 3)
        self.assertEqual(len(self.checks_sent()), 3)
        self.assertEqual(service.passes, 1)

    def test_stop(self) -> None:
        self.send_half()
        self.reactor.advance(7)
        ticks = iter(range(10 ** 6))
        service = TransactionalMessageCheckService(
            self.controller.transactional_message_service, self.controller.transactional_message_check_listener,
            self.controller.settings, self.reactor, wall=lambda: float(next(ticks)), slice_seconds=0.5)
        done = service.tick()
        service.stop()
        self.successResultOf(done)
        self.assertEqual(self.reactor.getDelayedCalls(), [c for c in self.reactor.getDelayedCalls() if c.active()])


class ServiceTimerTests(SynchronousTestCase):
    def test_check_runs_every_interval(self) -> None:
        from rocketmq_tx.broker.service import BrokerService
        reactor = FakeReactor()
        settings = broker_settings(self, transactionCheckInterval=1000, listenPort=0)
        svc = BrokerService(settings, reactor, drive_store=False)
        checks: list[int] = []
        svc.controller.transactional_message_check_service.tick = lambda: checks.append(1)  # type: ignore
        svc.startService()
        self.addCleanup(lambda: svc.stopService())
        reactor.advance(0.5)
        self.assertEqual(checks, [])
        reactor.advance(0.6)
        reactor.advance(1.0)
        self.assertEqual(len(checks), 2)
        self.assertIsInstance(svc.controller, BrokerController)


class UtilTests(SynchronousTestCase):
    def test_java_long(self) -> None:
        self.assertEqual([java_long(t) for t in ("12", "-3", "+4", " 1", "1_0", "x", "", None, str(2 ** 63))],
                         [12, -3, 4, -1, -1, -1, -1, -1, -1])
        self.assertEqual(parse_op_body(b"\xff"), [-1])
        self.assertEqual([parse_op_body(b) for b in (b"7", b"7,", b"7,8,9,", b"", b"x")],
                         [[7], [7], [7, 8, 9], [-1], [-1]])

    def test_hashmap_order(self) -> None:
        # jshell: a HashMap with TAGS, WAIT, UNIQ_KEY put in prints [UNIQ_KEY, WAIT, TAGS]
        order = java_hashmap_order({"TAGS": "d", "WAIT": "true", "UNIQ_KEY": "u"})
        self.assertEqual(list(order), ["UNIQ_KEY", "WAIT", "TAGS"])
