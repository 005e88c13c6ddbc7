# -*- test-case-name: rocketmq_tx.store.test.test_stats -*-
"""
:class:`StoreStatsService`: the store's own figures in GET_BROKER_RUNTIME_INFO (Java's
``StoreStatsService``): put latency (maximum, the minute's distribution, p99 and p99.9), put
and get counters, and their rates over the last 10 s, 60 s and 600 s.

Nothing here schedules itself: the owner calls :meth:`StoreStatsService.sampling` every
second (Java's service thread does), which also rolls the latency distribution over each
minute. The texts are Java's to the character, so ``mqadmin brokerStatus`` and
``clusterList`` read them as they read a Java broker's.
"""

from __future__ import annotations

import logging
import math
from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Callable

from rocketmq_tx.common.javatext import double_to_string, format_fixed

__all__ = ["StoreStatsService", "PUT_DISTRIBUTE_DESC", "PUT_LATENCY_BOUNDS", "put_distribute_index"]

log = logging.getLogger("rocketmq_tx.store")

#: the labels of putMessageDistributeTime's 13 ranges, as Java prints them
PUT_DISTRIBUTE_DESC = ("[<=0ms]", "[0~10ms]", "[10~50ms]", "[50~100ms]", "[100~200ms]", "[200~500ms]",
                       "[500ms~1s]", "[1~2s]", "[2~3s]", "[3~4s]", "[4~5s]", "[5~10s]", "[10s~]")
#: where the ranges after the first begin (a latency of 10 ms is in the third range, [10~50ms])
_DISTRIBUTE_BOUNDS = (10, 50, 100, 200, 500, 1000, 2000, 3000, 4000, 5000, 10000)


def _latency_bounds() -> tuple[int, ...]:
    # Java's PUT_MESSAGE_ENTIRE_TIME_BUCKETS: (step, count) runs of upper bounds, then one
    # open bucket; a latency falls in the first bucket whose bound is >= it.
    bounds = []
    upper = 0
    for step, count in ((1, 20), (2, 15), (5, 10), (10, 10), (50, 6), (100, 5), (1000, 9)):
        for _ in range(count):
            upper += step
            bounds.append(upper)
    bounds.append((1 << 63) - 1)
    return tuple(bounds)


#: the upper bounds (ms) of the buckets behind putLatency99 / putLatency999
PUT_LATENCY_BOUNDS = _latency_bounds()
#: samples kept (Java's MAX_RECORDS_OF_SAMPLING + 1): the 600 s window needs 601
_MAX_SAMPLES = 601
#: Java's printTPSInterval: the distribution shown is the last whole minute's
_ROLL_MS = 60 * 1000


def put_distribute_index(elapsed_ms: int) -> int:
    """The putMessageDistributeTime range of a put that took *elapsed_ms*."""
    if elapsed_ms <= 0:
        return 0
    return bisect_right(_DISTRIBUTE_BOUNDS, elapsed_ms) + 1


class StoreStatsService:
    """
    :param now_ms: the clock (ms); Java's service reads the wall clock.

    :ivar put_message_times_total: messages stored (every put, the broker's own included).
    :ivar put_message_size_total: bytes of the records stored.
    :ivar put_message_failed_times: puts that reached the CommitLog and did not end PUT_OK
        (a failed append, a flush or replica timeout).
    :ivar put_message_entire_time_max: the slowest put so far, ms, from the append request
        to its result (the SYNC_FLUSH and SYNC_MASTER waits included, as Java's).
    :ivar get_message_entire_time_max: the slowest read of a queue so far, ms.
    """

    def __init__(self, now_ms: Callable[[], int]) -> None:
        self.now_ms = now_ms
        self.boot_timestamp = now_ms()
        self.put_message_times_total = 0
        self.put_message_size_total = 0
        self.put_message_failed_times = 0
        self.put_message_entire_time_max = 0
        self.get_message_entire_time_max = 0
        self.get_message_times_total_found = 0
        self.get_message_times_total_miss = 0
        self.get_message_transferred_msg_count = 0
        #: this minute's putMessageDistributeTime counts; the last minute's is what is shown
        self._distribute = [0] * len(PUT_DISTRIBUTE_DESC)
        self._last_distribute: list[int] | None = None  # Java prints "null" before the first minute ends
        self._latency = [0] * len(PUT_LATENCY_BOUNDS)
        self._last_latency: list[int] = []  # Java starts from an empty map: the percentiles read 0
        #: (ms, puts, found, miss, transferred), one a second
        self._samples: deque[tuple[int, int, int, int, int]] = deque(maxlen=_MAX_SAMPLES)
        self._last_roll = self.boot_timestamp

    # -- recording (the put and get paths: a few operations each)

    def put_time(self, elapsed_ms: int, ok: bool = True) -> None:
        """One put that took *elapsed_ms* to its result (Java ``setPutMessageEntireTimeMax``)."""
        if elapsed_ms <= 0:
            self._distribute[0] += 1
            self._latency[0] += 1
            if not ok:
                self.put_message_failed_times += 1
            return
        self._distribute[put_distribute_index(elapsed_ms)] += 1
        self._latency[bisect_left(PUT_LATENCY_BOUNDS, elapsed_ms)] += 1
        if elapsed_ms > self.put_message_entire_time_max:
            self.put_message_entire_time_max = elapsed_ms
        if not ok:
            self.put_message_failed_times += 1

    def get_time(self, elapsed_ms: int, found: bool, transferred: int) -> None:
        """One read of a queue: found messages or not, how many (Java's ``getMessage`` counters)."""
        if found:
            self.get_message_times_total_found += 1
            self.get_message_transferred_msg_count += transferred
        else:
            self.get_message_times_total_miss += 1
        if elapsed_ms > self.get_message_entire_time_max:
            self.get_message_entire_time_max = elapsed_ms

    # -- the one-second tick

    def sampling(self) -> None:
        """Record the counters (every second), and roll the distribution over each minute."""
        now = self.now_ms()
        self._samples.append((now, self.put_message_times_total, self.get_message_times_total_found,
                              self.get_message_times_total_miss, self.get_message_transferred_msg_count))
        if now > self._last_roll + _ROLL_MS:
            self._last_roll = now
            self._roll()

    def _roll(self) -> None:
        log.info("[STORETPS] put_tps %s get_found_tps %s get_miss_tps %s get_transfered_tps %s",
                 self._tps(1, 60), self._tps(2, 60), self._tps(3, 60), self._tps(4, 60))
        last, self._distribute = self._distribute, [0] * len(PUT_DISTRIBUTE_DESC)
        self._last_distribute = last
        self._last_latency, self._latency = self._latency, [0] * len(PUT_LATENCY_BOUNDS)
        log.info("[PAGECACHERT] TotalPut %d, PutMessageDistributeTime %s", sum(last),
                 self.put_message_distribute_time())

    # -- the texts

    def _rate(self, field: int, seconds: int) -> float | None:
        samples = self._samples
        if len(samples) <= seconds:
            return None
        last = samples[-1]
        before = samples[-1 - seconds]
        count, ms = last[field] - before[field], last[0] - before[0]
        if ms == 0:  # two samples in one ms (a test clock): Java's double division gives these
            return float("nan") if count == 0 else math.copysign(math.inf, count)
        # Java's CallSnapshot.getTPS: per ms, then times 1000 (the same rounding as Java's)
        return count / float(ms) * 1000

    def _tps(self, field: int, seconds: int) -> str:
        rate = self._rate(field, seconds)
        return "" if rate is None else double_to_string(rate)

    def _tps_text(self, field: int) -> str:
        # "10s 60s 600s"; a window the samples do not cover yet is empty, as in Java
        return " ".join(self._tps(field, seconds) for seconds in (10, 60, 600))

    def _total_tps_text(self) -> str:
        parts = []
        for seconds in (10, 60, 600):
            found = self._rate(2, seconds)
            miss = self._rate(3, seconds)
            parts.append(double_to_string((found or 0.0) + (miss or 0.0)))
        return " ".join(parts)

    def put_message_distribute_time(self) -> str:
        """The last whole minute's latency ranges: ``[<=0ms]:N [0~10ms]:N ... [10s~]:N `` (Java's
        trailing space kept), or ``null`` before the first minute has ended."""
        counts = self._last_distribute
        if counts is None:
            return "null"
        return "".join(f"{desc}:{n} " for desc, n in zip(PUT_DISTRIBUTE_DESC, counts))

    def put_latency(self, px: float) -> float:
        """The last whole minute's put latency at quantile *px*, interpolated within its bucket
        (Java ``findPutMessageEntireTimePX``)."""
        counts = self._last_latency
        total = sum(counts)
        px_index = int(total * px)
        passed = 0
        for i, count in enumerate(counts):
            if px_index <= passed + count:
                relative = px_index - passed
                bound = PUT_LATENCY_BOUNDS[i]
                if i == 0:
                    return 0.0 if count == 0 else bound * relative / count
                lower = PUT_LATENCY_BOUNDS[i - 1]
                return lower + (0.0 if count == 0 else (bound - lower) * relative / count)
            passed += count
        return 0.0

    def runtime_info(self) -> dict[str, str]:
        """Java ``StoreStatsService.getRuntimeInfo``'s keys and texts (the caller adds ``runtime``
        and ``bootTimestamp``; 4.9's ``getTransferedTps`` and 5.x's ``getTransferredTps``)."""
        # Java substitutes 1 for 0 here (so an idle broker reports one put and an average of 0.0)
        times = self.put_message_times_total or 1
        transferred = self._tps_text(4)
        return {
            "putMessageEntireTimeMax": str(self.put_message_entire_time_max),
            "putMessageTimesTotal": str(times),
            "putMessageFailedTimes": str(self.put_message_failed_times),
            "putMessageSizeTotal": str(self.put_message_size_total),
            "putMessageDistributeTime": self.put_message_distribute_time(),
            "putMessageAverageSize": double_to_string(self.put_message_size_total / times),
            # Java declares it and never sets it
            "dispatchMaxBuffer": "0",
            "getMessageEntireTimeMax": str(self.get_message_entire_time_max),
            "putTps": self._tps_text(1),
            "getFoundTps": self._tps_text(2),
            "getMissTps": self._tps_text(3),
            "getTotalTps": self._total_tps_text(),
            "getTransferedTps": transferred,
            "getTransferredTps": transferred,
            "putLatency99": format_fixed(self.put_latency(0.99), 2),
            "putLatency999": format_fixed(self.put_latency(0.999), 2),
        }
