"""Tests for message trace on the BlockingProducer against the threaded fake cluster."""

from __future__ import annotations

import pickle
import time

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.blocking import BlockingProducer
from rocketmq_tx.common import trace
from rocketmq_tx.common.message import Message
from rocketmq_tx.common.trace import TraceType
from rocketmq_tx.testing.fakebroker import ThreadedFakeServer

TRACE = trace.RMQ_SYS_TRACE_TOPIC


class BlockingTraceTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.server = ThreadedFakeServer()
        self.addCleanup(self.server.close)
        self.cluster = self.server.cluster
        self.cluster.add_topic("T", 1)
        self.cluster.add_topic(TRACE, 1)
        self.producer = BlockingProducer("PG", self.server.namesrv_addr, enable_msg_trace=True)
        self.addCleanup(self.producer.close)

    def records(self) -> list[trace.TraceContext]:
        return [c for m in self.cluster.messages[("broker-a", TRACE, 0)] for c in trace.decode(m.body.decode())]

    def test_sent_after_wait_or_at_close(self) -> None:
        """A batch leaves after a send once its first record waited 500 ms (all of it, as Java's segment)."""
        first = self.producer.send(Message("T", b"one", properties={"KEYS": "k1"}))
        self.assertEqual(self.records(), [])
        time.sleep(0.55)
        second = self.producer.send(Message("T", b"two"))
        one, two = self.records()
        self.assertEqual((one.trace_type, one.group_name, one.beans[0].msg_id, one.beans[0].keys,
                          one.beans[0].store_host), (TraceType.Pub, "PG", first.msg_id, "k1",
                                                     self.cluster.brokers["broker-a"]))
        self.assertEqual(two.beans[0].msg_id, second.msg_id)
        (stored,) = self.cluster.messages[("broker-a", TRACE, 0)]
        self.assertEqual(stored.keys, [first.msg_id, "k1", second.msg_id])
        third = self.producer.send(Message("T", b"three"))
        self.assertEqual(len(self.records()), 2)
        self.producer.close()
        self.assertEqual(self.records()[-1].beans[0].msg_id, third.msg_id)

    def test_off_by_default_and_pickles(self) -> None:
        """Without the option nothing is traced; a pickled producer keeps its trace setting."""
        plain = BlockingProducer("PG2", self.server.namesrv_addr)
        self.addCleanup(plain.close)
        plain.send(Message("T", b"x"))
        plain.close()
        self.assertEqual(self.records(), [])
        copy = pickle.loads(pickle.dumps(self.producer))
        self.addCleanup(copy.close)
        self.assertIsNotNone(copy.trace_dispatcher)
        self.assertIsNone(pickle.loads(pickle.dumps(plain)).trace_dispatcher)
