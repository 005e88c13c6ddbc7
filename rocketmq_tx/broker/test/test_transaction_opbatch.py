# -*- test-case-name: rocketmq_tx.broker.test.test_transaction_opbatch -*-
"""
Op messages written in batches (Java 5.x ``deletePrepareMessage`` and
``TransactionalOpBatchService``): through END_TRANSACTION on a broker with the default
settings, and the service alone with a recording bridge (several half queues, the size
trigger, the schedule).
"""

from __future__ import annotations

from typing import Any

from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.broker.config import BrokerSettings, ConfigError
from rocketmq_tx.broker.test.test_transaction import COMMIT, ROLLBACK, TOPIC, TransactionTestCase
from rocketmq_tx.broker.transaction import TRANS_OP_HALF_TOPIC, opbatch
from rocketmq_tx.broker.transaction.opbatch import TransactionalOpBatchService
from rocketmq_tx.broker.transaction.util import parse_op_body
from rocketmq_tx.common.message import MessageExt
from rocketmq_tx.remoting import RequestCode, ResponseCode


class BatchedEndTransactionTests(TransactionTestCase):
    """The broker's defaults: 3,000 ms, 4,096 characters."""

    keys: dict = {}

    def commit_all(self, count: int, rollback_every: int = 0) -> None:
        """*count* half messages, each committed (or rolled back) at once."""
        for i in range(count):
            sent = self.send_half(body=b"m%d" % i)
            offset = int(sent.ext_fields["msgId"][-16:], 16)
            state = ROLLBACK if rollback_every and i % rollback_every == 0 else COMMIT
            response = self.end(offset, int(sent.ext_fields["queueOffset"]), state)
            self.assertEqual((response.code, response.remark), (ResponseCode.SUCCESS, None))

    def test_written_after_the_interval(self) -> None:
        self.commit_all(5, rollback_every=2)
        self.assertEqual(len(self.queue(TOPIC, 2)), 2)  # the commits (1 and 3) are there at once
        self.assertEqual(self.queue(TRANS_OP_HALF_TOPIC), [])
        self.reactor.advance(2.9)
        self.assertEqual(self.queue(TRANS_OP_HALF_TOPIC), [])
        self.reactor.advance(0.2)
        [op] = self.queue(TRANS_OP_HALF_TOPIC)
        self.assertEqual((op.body, op.tags, op.queue_id, op.sys_flag), (b"0,1,2,3,4,", "d", 0, 0))
        self.assertEqual(list(op.properties), ["UNIQ_KEY", "WAIT", "TAGS"])  # as every op message
        self.assertEqual(self.controller.transactional_op_batch_service.pending(), 0)

    def test_one_offset_in_49s_form(self) -> None:
        """A batch of one is written as 4.9 writes it; 4.9 and 5.x both read it."""
        self.commit_all(1)
        self.reactor.advance(3)
        [op] = self.queue(TRANS_OP_HALF_TOPIC)
        self.assertEqual(op.body, b"0")
        self.assertEqual(parse_op_body(op.body), [0])

    def test_size_trigger(self) -> None:
        """Past transactionOpMsgMaxSize characters the batch is written at once."""
        self.controller.settings["transactionOpMsgMaxSize"] = 10
        self.commit_all(6)  # "0,1,2,3,4," is 10 characters: written with the sixth
        [op] = self.queue(TRANS_OP_HALF_TOPIC)
        self.assertEqual(op.body, b"0,1,2,3,4,")
        self.reactor.advance(2.9)  # the rest waits for the interval from that write
        self.assertEqual(len(self.queue(TRANS_OP_HALF_TOPIC)), 1)
        self.reactor.advance(0.1)
        self.assertEqual([op.body for op in self.queue(TRANS_OP_HALF_TOPIC)], [b"0,1,2,3,4,", b"5"])

    def test_check_writes_pending_first(self) -> None:
        """No producer is asked about a message resolved while its op message waits."""
        self.register_producer()
        self.commit_all(3)
        self.controller.settings["transactionOpBatchInterval"] = 60000
        self.send_half(body=b"open")
        self.reactor.advance(7)  # past transactionTimeOut, before any batch is due
        self.assertEqual(self.queue(TRANS_OP_HALF_TOPIC), [])
        self.check()
        [(_, msg)] = self.checks_sent()
        self.assertEqual(msg.body, b"open")
        self.assertEqual([op.body for op in self.queue(TRANS_OP_HALF_TOPIC)], [b"0,1,2,"])
        self.assertEqual(self.offsets(), (4, 1))

    def test_shutdown_writes_pending(self) -> None:
        self.commit_all(4)
        self.restart()
        self.assertEqual([op.body for op in self.queue(TRANS_OP_HALF_TOPIC)], [b"0,1,2,3,"])
        self.reactor.advance(60)
        self.check()
        self.assertEqual(self.checks_sent(), [])
        self.assertEqual(self.offsets(), (4, 1))

    def test_interval_zero_by_update(self) -> None:
        """UPDATE_BROKER_CONFIG transactionOpBatchInterval=0: each op message at once, 4.9's form."""
        response = self.call(RequestCode.UPDATE_BROKER_CONFIG, body=b"transactionOpBatchInterval=0\n")
        self.assertEqual((response.code, response.remark), (ResponseCode.SUCCESS, None))
        self.commit_all(2)
        self.assertEqual([op.body for op in self.queue(TRANS_OP_HALF_TOPIC)], [b"0", b"1"])

    def test_bad_values_refused(self) -> None:
        for body, key in ((b"transactionOpBatchInterval=-1\n", "transactionOpBatchInterval"),
                          (b"transactionOpMsgMaxSize=0\n", "transactionOpMsgMaxSize")):
            response = self.call(RequestCode.UPDATE_BROKER_CONFIG, body=body)
            self.assertEqual(response.code, ResponseCode.SYSTEM_ERROR)
            self.assertIn(key, response.remark)
        self.assertRaises(ConfigError, BrokerSettings({"transactionOpBatchInterval": -5}).validate)


class RecordingBridge:
    def __init__(self) -> None:
        self.bodies: list[tuple[int, bytes]] = []
        self.singles: list[tuple[int, int]] = []
        self.ok = True

    def put_op_body(self, queue_id: int, body: bytes) -> bool:
        self.bodies.append((queue_id, body))
        return self.ok

    def put_op_message(self, half: MessageExt) -> bool:
        self.singles.append((half.queue_id, half.queue_offset))
        return self.ok


class ServiceTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.clock = Clock()
        self.clock.advance(1000)
        self.bridge = RecordingBridge()
        self.settings: dict[str, Any] = {"transactionOpBatchInterval": 3000, "transactionOpMsgMaxSize": 4096}
        self.service = TransactionalOpBatchService(self.bridge, self.settings, self.clock,
                                                   lambda: int(self.clock.seconds() * 1000))

    def resolve(self, queue_id: int, *offsets: int) -> None:
        for offset in offsets:
            self.assertTrue(self.service.delete_prepare_message(MessageExt("H", b"", queue_id=queue_id,
                                                                           queue_offset=offset)))

    def test_queues_apart(self) -> None:
        self.resolve(0, 10, 11)
        self.clock.advance(1)
        self.resolve(3, 7)
        self.clock.advance(2)  # queue 0's interval is up, queue 3's is not
        self.assertEqual(self.bridge.bodies, [(0, b"10,11,")])
        self.clock.advance(1)
        self.assertEqual(self.bridge.bodies, [(0, b"10,11,"), (3, b"7")])
        self.assertEqual(self.clock.getDelayedCalls(), [])  # nothing pending, nothing scheduled

    def test_batches_bounded_by_size(self) -> None:
        self.settings["transactionOpMsgMaxSize"] = 1000
        self.resolve(0, *range(1000, 1200))  # 5 characters each: written every 201
        self.assertEqual(len(self.bridge.bodies), 0)
        self.resolve(0, 1200)
        [(_, body)] = self.bridge.bodies
        self.assertEqual(body, b"".join(b"%d," % i for i in range(1000, 1200)))
        self.service.flush()
        self.assertEqual(self.bridge.bodies[1], (0, b"1200"))
        self.assertEqual(self.service.pending(), 0)

    def test_context_capacity(self) -> None:
        self.patch(opbatch, "OP_CONTEXT_CAPACITY", 3)
        self.settings["transactionOpMsgMaxSize"] = 10 ** 6
        self.resolve(0, 1, 2, 3, 4)
        self.assertEqual(self.bridge.singles, [(0, 4)])  # written alone, as Java's full queue
        self.clock.advance(3)
        self.assertEqual(self.bridge.bodies, [(0, b"1,2,3,")])

    def test_failed_write_logged(self) -> None:
        self.bridge.ok = False
        self.resolve(0, 5)
        with self.assertLogs("rocketmq_tx.broker.transaction", "ERROR") as logged:
            self.clock.advance(3)
        self.assertIn("Transaction batch op message write failed. body is 5, queueId is 0", logged.output[0])
        self.assertEqual(self.bridge.bodies, [(0, b"5")])
        self.assertEqual(self.service.pending(), 0)  # as Java: the offsets are gone with the failed message

    def test_stopped_writes_at_once(self) -> None:
        self.resolve(0, 1)
        self.service.stop()
        self.assertEqual(self.bridge.bodies, [(0, b"1")])
        self.resolve(0, 2)
        self.assertEqual(self.bridge.singles, [(0, 2)])
        self.assertEqual(self.clock.getDelayedCalls(), [])

    def test_idle_queue_written_soon(self) -> None:
        """A queue idle for longer than the interval: its next offset is due at once (Java's
        thread wakes at least once an interval and finds it due)."""
        self.resolve(0, 1)
        self.clock.advance(3)
        self.clock.advance(100)
        self.resolve(0, 2)
        self.clock.advance(0)
        self.assertEqual(self.bridge.bodies, [(0, b"1"), (0, b"2")])
