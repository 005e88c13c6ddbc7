"""Tests for the queue allocation strategies (Java's results for the same inputs)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.common.message import MessageQueue
from rocketmq_tx.common.rebalance import allocate_averagely, allocate_averagely_by_circle, allocate_consistent_hash

MQS = [MessageQueue("T", "b", i) for i in range(8)]


class AllocateTests(SynchronousTestCase):
    def test_averagely(self) -> None:
        """8 queues over 3 consumers: 3, 3, 2 contiguous (what Java 4.9.8's AllocateMessageQueueAveragely gives)."""
        cids = ["c", "a", "b"]
        self.assertEqual([q.queue_id for q in allocate_averagely("a", MQS, cids)], [0, 1, 2])
        self.assertEqual([q.queue_id for q in allocate_averagely("b", MQS, cids)], [3, 4, 5])
        self.assertEqual([q.queue_id for q in allocate_averagely("c", MQS, cids)], [6, 7])
        self.assertEqual(allocate_averagely("z", MQS, cids), [])
        self.assertEqual([q.queue_id for q in allocate_averagely("a", MQS[:2], ["a", "b", "c"])], [0])
        self.assertEqual(allocate_averagely("c", MQS[:2], ["a", "b", "c"]), [])

    def test_by_circle(self) -> None:
        self.assertEqual([q.queue_id for q in allocate_averagely_by_circle("b", MQS, ["a", "b", "c"])], [1, 4, 7])

    def test_consistent_hash_matches_java(self) -> None:
        """The allocation Java 4.9.8's AllocateMessageQueueConsistentHash computes for the same inputs (jshell)."""
        mqs = [MessageQueue("TopicX", "broker-a" if i < 8 else "broker-b", i % 8) for i in range(16)]
        cids = ["10.0.0.1@1#2", "10.0.0.2@3#4", "10.0.0.3@5#6"]
        expected = {
            "10.0.0.1@1#2": [("broker-a", 2), ("broker-a", 7)],
            "10.0.0.2@3#4": [("broker-a", 1), ("broker-a", 3), ("broker-a", 5), ("broker-a", 6), ("broker-b", 3),
                             ("broker-b", 4), ("broker-b", 5), ("broker-b", 6)],
            "10.0.0.3@5#6": [("broker-a", 0), ("broker-a", 4), ("broker-b", 0), ("broker-b", 1), ("broker-b", 2),
                             ("broker-b", 7)],
        }
        for cid, queues in expected.items():
            self.assertEqual([(q.broker_name, q.queue_id) for q in allocate_consistent_hash(cid, mqs, cids)], queues)

    @given(st.integers(0, 20), st.integers(1, 6))
    def test_partition(self, queues: int, consumers: int) -> None:
        """Every queue is owned exactly once, whatever the sizes."""
        mqs = [MessageQueue("T", "b", i) for i in range(queues)]
        cids = [f"c{i}" for i in range(consumers)]
        for strategy in (allocate_averagely, allocate_averagely_by_circle, allocate_consistent_hash):
            owned = [q for cid in cids for q in strategy(cid, mqs, cids)]
            self.assertEqual(sorted(owned), mqs)
