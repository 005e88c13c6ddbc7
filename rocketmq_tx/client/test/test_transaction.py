"""Tests for the Twisted TransactionProducer against the fake cluster over the in-memory network."""

from __future__ import annotations

from typing import Any

from twisted.internet.defer import Deferred
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.client import LocalTransactionState, Message, TransactionProducer
from rocketmq_tx.client.instance import MQClientInstance
from rocketmq_tx.common.message import MessageExt
from rocketmq_tx.common.sysflag import MessageSysFlag
from rocketmq_tx.testing.fakebroker import HALF_TOPIC, FakeCluster
from rocketmq_tx.testing.fakenet import FakeNetwork

BROKER = "10.0.0.1:10911"


class TransactionProducerTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.cluster = FakeCluster({"broker-a": BROKER})
        self.cluster.add_topic("T", 2)
        self.net = FakeNetwork(self.cluster)
        self.instance = MQClientInstance(self.net.reactor, "127.0.0.1:9876", remoting=self.net.client)
        self.checked: list[MessageExt] = []
        self.answer: Any = LocalTransactionState.COMMIT_MESSAGE
        self.producer = TransactionProducer("TXG", instance=self.instance, check_listener=self.check,
                                            local_transaction=lambda msg, arg: arg)
        self.producer.start()

    def check(self, msg: MessageExt) -> Any:
        self.checked.append(msg)
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer

    def send(self, state: LocalTransactionState) -> Any:
        d = self.producer.send_message_in_transaction(Message("T", b"body"), state)
        self.net.flush()
        return self.successResultOf(d)

    def half_offset(self) -> int:
        (half,) = self.cluster.messages[("broker-a", HALF_TOPIC, 0)]
        return half.commit_log_offset

    def test_commit_and_rollback(self) -> None:
        """Commit makes the message visible in its queue; rollback drops the half message."""
        result = self.send(LocalTransactionState.COMMIT_MESSAGE)
        self.assertEqual(result.local_transaction_state, LocalTransactionState.COMMIT_MESSAGE)
        self.assertEqual([m.body for m in self.cluster.messages[("broker-a", "T", result.message_queue.queue_id)]],
                         [b"body"])
        self.send(LocalTransactionState.ROLLBACK_MESSAGE)
        self.assertEqual([h.commit_or_rollback for _, h, _ in self.cluster.ended],
                         [MessageSysFlag.TRANSACTION_COMMIT_TYPE, MessageSysFlag.TRANSACTION_ROLLBACK_TYPE])
        self.assertEqual(self.cluster.messages[("broker-a", HALF_TOPIC, 0)], [])

    def test_unknown_resolved_by_check(self) -> None:
        """UNKNOW leaves the half message; the broker's check is answered on its connection, committing it."""
        result = self.send(LocalTransactionState.UNKNOW)
        self.net.servers[BROKER].send_oneway(self.cluster.check_request("broker-a", self.half_offset()))
        self.net.flush()
        (checked,) = self.checked
        self.assertEqual((checked.body, checked.transaction_id), (b"body", result.msg_id))
        _, header, remark = self.cluster.ended[-1]
        self.assertEqual((header.commit_or_rollback, header.from_transaction_check, header.msg_id, remark),
                         (MessageSysFlag.TRANSACTION_COMMIT_TYPE, True, result.msg_id, None))
        self.assertEqual(len(self.cluster.messages[("broker-a", "T", result.message_queue.queue_id)]), 1)

    def test_check_deferred_and_failing(self) -> None:
        """The listener may answer later with a Deferred; one that raises answers UNKNOW with Java's remark."""
        self.send(LocalTransactionState.UNKNOW)
        later: Deferred[LocalTransactionState] = Deferred()
        self.answer = later
        self.net.servers[BROKER].send_oneway(self.cluster.check_request("broker-a", self.half_offset()))
        self.net.flush()
        self.assertEqual(len(self.cluster.ended), 1)
        later.callback(LocalTransactionState.ROLLBACK_MESSAGE)
        self.net.flush()
        self.assertEqual(self.cluster.ended[-1][1].commit_or_rollback, MessageSysFlag.TRANSACTION_ROLLBACK_TYPE)

        self.send(LocalTransactionState.UNKNOW)
        self.answer = RuntimeError("lost")
        self.net.servers[BROKER].send_oneway(self.cluster.check_request("broker-a", self.half_offset()))
        self.net.flush()
        _, header, remark = self.cluster.ended[-1]
        self.assertEqual(header.commit_or_rollback, MessageSysFlag.TRANSACTION_NOT_TYPE)
        self.assertEqual(remark, "checkLocalTransactionState Exception: RuntimeError: lost")
        self.flushLoggedErrors(RuntimeError)

    def test_check_for_another_group_ignored(self) -> None:
        """A check for a group with no transactional producer here is dropped unanswered."""
        self.send(LocalTransactionState.UNKNOW)
        check = self.cluster.check_request("broker-a", self.half_offset())
        self.producer.stop()
        self.net.flush()
        self.net.servers[BROKER].send_oneway(check)
        self.net.flush()
        self.assertEqual((self.checked, len(self.cluster.ended)), ([], 1))

    def test_heartbeat_names_group(self) -> None:
        """The instance's heartbeat carries the transactional producer's group, so brokers can check it."""
        self.send(LocalTransactionState.COMMIT_MESSAGE)
        self.instance.send_heartbeat_to_all_brokers()
        self.net.flush()
        self.assertIn({"groupName": "TXG"}, self.cluster.heartbeats[BROKER][-1]["producerDataSet"])
