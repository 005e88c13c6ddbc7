"""BrokerStats counters."""

from __future__ import annotations

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.broker.stats import BROKER_PUT_NUMS, TOPIC_PUT_NUMS, TOPIC_PUT_SIZE, BrokerStats


class BrokerStatsTests(SynchronousTestCase):
    def test_forgotten_topic_counts_afresh(self) -> None:
        """A deleted topic's counters go, and a topic of the same name counts in new ones."""
        stats = BrokerStats(lambda: 5_000)
        stats.put("T", 2, 100)
        stats.forget_topic("T")
        self.assertIsNone(stats.find(TOPIC_PUT_NUMS, "T"))
        stats.put("T", 1, 10)
        self.assertEqual((stats.find(TOPIC_PUT_NUMS, "T").total, stats.find(TOPIC_PUT_SIZE, "T").total), (1, 10))
        self.assertEqual(stats.find(BROKER_PUT_NUMS, "").total, 3)

    def test_same_second_and_next(self) -> None:
        now = [1_000]
        stats = BrokerStats(lambda: now[0])
        stats.put("T", 1, 1)
        stats.put("T", 1, 1)
        now[0] = 2_000
        stats.put("T", 1, 1)
        item = stats.find(TOPIC_PUT_NUMS, "T")
        self.assertEqual(item.window(2, 1), (1, 1))
        self.assertEqual(item.window(2, 2), (3, 3))
