"""Tests for the BlockingTransactionProducer against the threaded fake cluster over real sockets."""

from __future__ import annotations

import time
from typing import Any

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.blocking import BlockingTransactionProducer
from rocketmq_tx.common import trace
from rocketmq_tx.common.message import Message, MessageExt
from rocketmq_tx.common.sysflag import MessageSysFlag
from rocketmq_tx.common.trace import TraceType
from rocketmq_tx.remoting.transactionapi import LocalTransactionState
from rocketmq_tx.testing.fakebroker import HALF_TOPIC, ThreadedFakeServer


class BlockingTransactionProducerTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.server = ThreadedFakeServer()
        self.addCleanup(self.server.close)
        self.cluster = self.server.cluster
        self.cluster.add_topic("T", 2)
        self.broker = self.cluster.brokers["broker-a"]
        self.checked: list[MessageExt] = []
        self.producer = BlockingTransactionProducer("TXG", self.server.namesrv_addr, check_listener=self.check,
                                                    local_transaction=lambda msg, arg: arg)
        self.addCleanup(self.producer.close)

    def check(self, msg: MessageExt) -> LocalTransactionState:
        self.checked.append(msg)
        return LocalTransactionState.ROLLBACK_MESSAGE

    def wait_for(self, condition: Any) -> None:
        deadline = time.monotonic() + 5
        while not condition():
            self.assertLess(time.monotonic(), deadline, "timed out")
            time.sleep(0.01)

    def test_commit(self) -> None:
        """A committed transaction ends with type 8 and its message is stored in the real topic."""
        result = self.producer.send_message_in_transaction(Message("T", b"b"), LocalTransactionState.COMMIT_MESSAGE)
        self.assertEqual(result.local_transaction_state, LocalTransactionState.COMMIT_MESSAGE)
        self.wait_for(lambda: self.cluster.ended)
        self.assertEqual(self.cluster.ended[0][1].commit_or_rollback, MessageSysFlag.TRANSACTION_COMMIT_TYPE)
        self.assertEqual(len(self.cluster.messages[("broker-a", "T", result.message_queue.queue_id)]), 1)

    def test_heartbeat_then_check_served(self) -> None:
        """The first transactional send heartbeats the group; serve_checks answers a check on that connection."""
        result = self.producer.send_message_in_transaction(Message("T", b"b"), LocalTransactionState.UNKNOW)
        self.assertEqual(self.cluster.heartbeats[self.broker][-1]["producerDataSet"], [{"groupName": "TXG"}])
        (half,) = self.cluster.messages[("broker-a", HALF_TOPIC, 0)]
        self.assertEqual(self.server.push(self.broker, self.cluster.check_request("broker-a", half.commit_log_offset)),
                         1)
        self.assertEqual(self.producer.serve_checks(0.5), 1)
        self.wait_for(lambda: len(self.cluster.ended) == 2)
        _, header, _ = self.cluster.ended[1]
        self.assertEqual((header.commit_or_rollback, header.from_transaction_check, header.msg_id),
                         (MessageSysFlag.TRANSACTION_ROLLBACK_TYPE, True, result.msg_id))
        self.assertEqual([m.transaction_id for m in self.checked], [result.msg_id])
        self.assertEqual(self.cluster.messages[("broker-a", HALF_TOPIC, 0)], [])

    def test_check_served_during_next_request(self) -> None:
        """A check that arrives while the producer waits for another answer is served then."""
        self.producer.send_message_in_transaction(Message("T", b"b"), LocalTransactionState.UNKNOW)
        (half,) = self.cluster.messages[("broker-a", HALF_TOPIC, 0)]
        self.server.push(self.broker, self.cluster.check_request("broker-a", half.commit_log_offset))
        time.sleep(0.05)
        self.producer.send(Message("T", b"plain"))
        self.wait_for(lambda: len(self.cluster.ended) == 2)
        self.assertEqual(len(self.checked), 1)


class BlockingTransactionTraceTests(SynchronousTestCase):
    def test_pub_and_end_transaction_records(self) -> None:
        """With trace on, the half message's Pub record and an EndTransaction record per END_TRANSACTION
        (the local transaction's, then a check's) reach the trace topic by close()."""
        server = ThreadedFakeServer()
        self.addCleanup(server.close)
        server.cluster.add_topic("T", 1)
        server.cluster.add_topic(trace.RMQ_SYS_TRACE_TOPIC, 1)
        producer = BlockingTransactionProducer("TXG", server.namesrv_addr, enable_msg_trace=True,
                                               check_listener=lambda msg: LocalTransactionState.ROLLBACK_MESSAGE,
                                               local_transaction=lambda msg, arg: arg)
        self.addCleanup(producer.close)
        result = producer.send_message_in_transaction(Message("T", b"b", properties={"KEYS": "k"}),
                                                      LocalTransactionState.UNKNOW)
        broker = server.cluster.brokers["broker-a"]
        (half,) = server.cluster.messages[("broker-a", HALF_TOPIC, 0)]
        server.push(broker, server.cluster.check_request("broker-a", half.commit_log_offset))
        self.assertEqual(producer.serve_checks(0.5), 1)
        producer.close()
        records = [c for m in server.cluster.messages[("broker-a", trace.RMQ_SYS_TRACE_TOPIC, 0)]
                   for c in trace.decode(m.body.decode())]
        self.assertEqual([r.trace_type for r in records], [TraceType.Pub, TraceType.EndTransaction,
                                                           TraceType.EndTransaction])
        self.assertEqual({r.group_name for r in records}, {"TXG"})
        self.assertEqual({r.beans[0].msg_id for r in records}, {result.msg_id})
        self.assertEqual([(r.beans[0].transaction_state, r.beans[0].from_transaction_check) for r in records[1:]],
                         [(LocalTransactionState.UNKNOW.value, False),
                          (LocalTransactionState.ROLLBACK_MESSAGE.value, True)])
