# -*- test-case-name: rocketmq_tx.broker.test.test_processors -*-
"""
``BrokerStats``: the counters behind GET_BROKER_RUNTIME_INFO, VIEW_BROKER_STATS_DATA and
the consume TPS of GET_CONSUME_STATS (Java's ``BrokerStatsManager``, reduced to totals and
per-key rates over the last minute, hour and day).
"""

from __future__ import annotations

import collections
import itertools
from collections.abc import Callable
from typing import Any

__all__ = ["BrokerStats", "StatsItem", "RequestsInFlight"]

TOPIC_PUT_NUMS = "TOPIC_PUT_NUMS"
TOPIC_PUT_SIZE = "TOPIC_PUT_SIZE"
GROUP_GET_NUMS = "GROUP_GET_NUMS"
GROUP_GET_SIZE = "GROUP_GET_SIZE"
BROKER_PUT_NUMS = "BROKER_PUT_NUMS"
BROKER_GET_NUMS = "BROKER_GET_NUMS"


class StatsItem:
    """A counter with one-second buckets for the last day (sums and TPS by window)."""

    __slots__ = ("total", "times", "_buckets", "_second", "_bucket")

    def __init__(self) -> None:
        self.total = 0
        self.times = 0
        self._buckets: collections.OrderedDict[int, list[int]] = collections.OrderedDict()
        # The current second's bucket: puts come thousands a second, and all but the first
        # of a second land here without a dictionary lookup.
        self._second = -1
        self._bucket = [0, 0]

    def add(self, second: int, value: int, times: int = 1) -> None:
        self.total += value
        self.times += times
        bucket: list[int] | None
        if second == self._second:
            bucket = self._bucket
        else:
            bucket = self._buckets.get(second)
            if bucket is None:
                bucket = self._buckets[second] = [0, 0]
                while self._buckets and next(iter(self._buckets)) < second - 86400:
                    self._buckets.popitem(last=False)
            self._second = second
            self._bucket = bucket
        bucket[0] += value
        bucket[1] += times

    def window(self, now_second: int, seconds: int) -> tuple[int, int]:
        """(sum, times) over the last *seconds*."""
        total = times = 0
        for second, (value, n) in reversed(self._buckets.items()):
            if second <= now_second - seconds:
                break
            total += value
            times += n
        return total, times

    def snapshot(self, now_second: int, seconds: int) -> dict:
        """Java ``BrokerStatsItem``: sum, tps and average per time (``avgpt``)."""
        total, times = self.window(now_second, seconds)
        return {"avgpt": (total / times) if times else 0.0, "sum": total, "tps": total / seconds}


class BrokerStats:
    def __init__(self, now_ms: Callable[[], int]) -> None:
        self.now_ms = now_ms
        self.items: dict[str, dict[str, StatsItem]] = collections.defaultdict(dict)
        #: topic -> its put items and the broker's, looked up once
        self._put_items: dict[str, tuple[StatsItem, StatsItem, StatsItem]] = {}
        self.put_total = 0
        self.put_size_total = 0
        self.get_total = 0
        self.put_total_yesterday_morning = 0
        self.put_total_today_morning = 0
        self.get_total_yesterday_morning = 0
        self.get_total_today_morning = 0

    def _item(self, name: str, key: str) -> StatsItem:
        table = self.items[name]
        item = table.get(key)
        if item is None:
            item = table[key] = StatsItem()
        return item

    def put(self, topic: str, nums: int, size: int) -> None:
        second = self.now_ms() // 1000
        self.put_total += nums
        self.put_size_total += size
        items = self._put_items.get(topic)
        if items is None:
            items = self._put_items[topic] = (self._item(TOPIC_PUT_NUMS, topic), self._item(TOPIC_PUT_SIZE, topic),
                                              self._item(BROKER_PUT_NUMS, ""))
        items[0].add(second, nums)
        items[1].add(second, size)
        items[2].add(second, nums)

    def forget_topic(self, topic: str) -> None:
        """Drop a deleted topic's put counters (``autoDeleteUnusedStats``)."""
        for name in (TOPIC_PUT_NUMS, TOPIC_PUT_SIZE):
            self.items.get(name, {}).pop(topic, None)
        self._put_items.pop(topic, None)

    def get(self, group: str, topic: str, nums: int, size: int) -> None:
        second = self.now_ms() // 1000
        self.get_total += nums
        key = f"{topic}@{group}"
        self._item(GROUP_GET_NUMS, key).add(second, nums)
        self._item(GROUP_GET_SIZE, key).add(second, size)
        self._item(BROKER_GET_NUMS, "").add(second, nums)

    def find(self, name: str, key: str) -> StatsItem | None:
        return self.items.get(name, {}).get(key)

    def consume_tps(self, group: str, topic: str) -> float:
        item = self.find(GROUP_GET_NUMS, f"{topic}@{group}")
        if item is None:
            return 0.0
        return item.window(self.now_ms() // 1000, 60)[0] / 60

    def stats_data(self, name: str, key: str) -> dict | None:
        """VIEW_BROKER_STATS_DATA body: statsMinute / statsHour / statsDay."""
        item = self.find(name, key)
        if item is None:
            return None
        now = self.now_ms() // 1000
        return {"statsDay": item.snapshot(now, 86400), "statsHour": item.snapshot(now, 3600),
                "statsMinute": item.snapshot(now, 60)}


class RequestsInFlight:
    """
    The requests of one kind received and not yet answered, and how long the oldest has
    waited: what the broker shows where Java shows a thread pool's queue size and the wait of
    its head (``sendThreadPoolQueueSize``, ``...HeadWaitTimeMills``). We have no pools: a
    request is handled when its frame is read, so the requests that wait are the ones whose
    answer waits (for a group commit, a slave, a registration); those answered at once never
    enter.
    """

    __slots__ = ("now_ms", "_started", "_ids")

    def __init__(self, now_ms: Callable[[], int]) -> None:
        self.now_ms = now_ms
        #: id -> when it started; insertion-ordered, so the first is the oldest
        self._started: dict[int, int] = {}
        self._ids = itertools.count()

    def track(self, deferred: Any) -> None:
        """Count the request answered by *deferred* until it fires."""
        key = next(self._ids)
        self._started[key] = self.now_ms()
        deferred.addBoth(self._done, key)

    def _done(self, result: Any, key: int) -> Any:
        self._started.pop(key, None)
        return result

    def size(self) -> int:
        return len(self._started)

    def head_wait_ms(self) -> int:
        """How long the oldest has waited (0 when none is waiting)."""
        for started in self._started.values():
            return max(0, self.now_ms() - started)
        return 0
