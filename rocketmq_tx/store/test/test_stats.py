"""StoreStatsService (Java's texts for the runtime info) and the store's calls into it."""

from __future__ import annotations

import os

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.store.clean import disk_partition_used_percent
from rocketmq_tx.store.config import FlushDiskType
from rocketmq_tx.store.stats import PUT_DISTRIBUTE_DESC, StoreStatsService, put_distribute_index
from rocketmq_tx.store.status import GetMessageStatus, PutMessageStatus
from rocketmq_tx.store.test.util import Clock, message, open_store, temp_root

T0_MS = 1767268800000


def java_distribute_index(value: int) -> int:
    """Java ``setPutMessageEntireTimeMax``'s if-chain, transcribed as the oracle."""
    if value <= 0:
        return 0
    for i, bound in enumerate((10, 50, 100, 200, 500, 1000, 2000, 3000, 4000, 5000, 10000)):
        if value < bound:
            return i + 1
    return 12


class MsClock:
    """A millisecond clock the test moves."""

    def __init__(self) -> None:
        self.ms = T0_MS

    def __call__(self) -> int:
        return self.ms


class StoreStatsServiceTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.clock = MsClock()
        self.stats = StoreStatsService(self.clock)

    def tick(self, seconds: int = 1) -> None:
        for _ in range(seconds):
            self.clock.ms += 1000
            self.stats.sampling()

    def test_distribute_ranges(self) -> None:
        """Each latency lands in Java's range: 0 and less, then [0~10ms) ... [10s~)."""
        for value in (-3, 0, 1, 9, 10, 49, 50, 99, 100, 199, 200, 499, 500, 999, 1000, 1999, 2000, 2999, 3000,
                      3999, 4000, 4999, 5000, 9999, 10000, 60000):
            self.assertEqual(put_distribute_index(value), java_distribute_index(value), value)

    def test_distribution_is_the_last_minute(self) -> None:
        """``null`` until a minute has passed; then the whole last minute's counts, Java's text."""
        info = self.stats.runtime_info()
        self.assertEqual(info["putMessageDistributeTime"], "null")
        for ms in (0, 0, 3, 12, 12, 700, 15000):
            self.stats.put_time(ms)
        self.tick(60)
        self.assertEqual(self.stats.runtime_info()["putMessageDistributeTime"], "null")
        self.tick()  # more than 60 s after the start: the minute rolls over
        self.stats.put_time(1)  # the new minute's, not shown
        self.assertEqual(self.stats.runtime_info()["putMessageDistributeTime"],
                         "[<=0ms]:2 [0~10ms]:1 [10~50ms]:2 [50~100ms]:0 [100~200ms]:0 [200~500ms]:0 "
                         "[500ms~1s]:1 [1~2s]:0 [2~3s]:0 [3~4s]:0 [4~5s]:0 [5~10s]:0 [10s~]:1 ")
        self.assertEqual(len(PUT_DISTRIBUTE_DESC), 13)
        self.assertEqual(self.stats.runtime_info()["putMessageEntireTimeMax"], "15000")

    def test_put_latency_percentiles(self) -> None:
        """putLatency99/999 interpolate within the last minute's buckets, "%.2f" as Java."""
        self.assertEqual(self.stats.runtime_info()["putLatency99"], "0.00")
        for _ in range(98):
            self.stats.put_time(0)
        self.stats.put_time(30)
        self.stats.put_time(30)
        self.tick(61)
        info = self.stats.runtime_info()
        # 100 puts: index 99 falls in the bucket (28, 30] holding 2 -> 28 + 2 * 1 / 2
        self.assertEqual(info["putLatency99"], "29.00")
        # index 99 again (int(100 * 0.999) == 99)
        self.assertEqual(info["putLatency999"], "29.00")
        self.assertEqual(self.stats.put_latency(0.5), 50 / 98)  # in the first bucket (0, 1]: 1 * 50 / 98

    def test_rates(self) -> None:
        """putTps and the get rates over 10, 60 and 600 s; a window not covered yet is empty."""
        info = self.stats.runtime_info()
        self.assertEqual((info["putTps"], info["getTotalTps"]), ("  ", "0.0 0.0 0.0"))
        self.tick()
        for second in range(10):
            self.stats.put_message_times_total += 50
            self.stats.get_time(0, True, 3)
            if second % 2:
                self.stats.get_time(0, False, 0)
            self.tick()
        info = self.stats.runtime_info()
        self.assertEqual(info["putTps"], "50.0  ")
        self.assertEqual(info["getFoundTps"], "1.0  ")
        self.assertEqual(info["getMissTps"], "0.5  ")
        self.assertEqual(info["getTotalTps"], "1.5 0.0 0.0")
        self.assertEqual(info["getTransferedTps"], "3.0  ")
        self.assertEqual(info["getTransferredTps"], info["getTransferedTps"])
        self.tick(50)
        self.assertEqual(self.stats.runtime_info()["putTps"], "0.0 8.333333333333334 ")

    def test_counters(self) -> None:
        """Java reports 1 put (and an average of 0.0) while none was made; failures and the
        slowest read are counted."""
        info = self.stats.runtime_info()
        self.assertEqual((info["putMessageTimesTotal"], info["putMessageAverageSize"]), ("1", "0.0"))
        self.stats.put_message_times_total, self.stats.put_message_size_total = 4, 1002
        self.stats.put_time(0, ok=False)
        self.stats.put_time(7, ok=False)
        self.stats.get_time(12, False, 0)
        self.stats.get_time(4, True, 2)
        info = self.stats.runtime_info()
        self.assertEqual((info["putMessageTimesTotal"], info["putMessageSizeTotal"], info["putMessageAverageSize"]),
                         ("4", "1002", "250.5"))
        self.assertEqual((info["putMessageFailedTimes"], info["getMessageEntireTimeMax"], info["dispatchMaxBuffer"]),
                         ("2", "12", "0"))


class StoreFiguresTests(SynchronousTestCase):
    """What the store feeds the stats service, and its own runtime figures."""

    def setUp(self) -> None:
        self.clock = Clock()
        self.root = temp_root(self)
        self.store = open_store(self.root, self.clock)
        self.addCleanup(self.store.shutdown)
        self.stats = self.store.store_stats_service

    def test_puts_counted(self) -> None:
        """Every stored message and its record's bytes; a timed put lands in the distribution."""
        r1 = self.store.put_message(message())
        r2 = self.store.put_message(message(body=b"x" * 100))
        self.assertEqual(self.stats.put_message_times_total, 2)
        self.assertEqual(self.stats.put_message_size_total,
                         r1.append_result.wrote_bytes + r2.append_result.wrote_bytes)  # type: ignore[union-attr]
        self.assertEqual(self.stats._distribute[0], 2)

    def test_refused_put_not_timed(self) -> None:
        """A put refused before the CommitLog is neither counted nor timed (as Java)."""
        self.store.writeable = False
        self.assertEqual(self.store.put_message(message()).status, PutMessageStatus.SERVICE_NOT_AVAILABLE)
        self.assertEqual((self.stats.put_message_times_total, sum(self.stats._distribute)), (0, 0))

    def test_gets_counted(self) -> None:
        """Found and missed reads, messages transferred, the slowest read."""
        self.store.put_message(message())
        self.store.put_message(message())
        reader = self.store.reader
        original = reader.get_message

        delays = [0.0355, 0.0]

        def slow(*args: object) -> object:
            self.clock.advance(delays.pop(0))
            return original(*args)  # type: ignore[arg-type]
        reader.get_message = slow  # type: ignore[method-assign]
        self.assertEqual(self.store.get_message("g", "TopicTest", 0, 0, 32).status, GetMessageStatus.FOUND)
        self.assertNotEqual(self.store.get_message("g", "TopicTest", 0, 2, 32).status, GetMessageStatus.FOUND)
        self.assertEqual((self.stats.get_message_times_total_found, self.stats.get_message_times_total_miss,
                          self.stats.get_message_transferred_msg_count, self.stats.get_message_entire_time_max),
                         (1, 1, 2, 35))

    def test_lock_time_while_flushing(self) -> None:
        """pageCacheLockTimeMills: the age of the CommitLog flush in progress, 0 outside one."""
        self.store.put_message(message())
        commit_log = self.store.commit_log
        original = commit_log.flush
        seen = []

        def slow_flush(*args: object) -> object:
            self.clock.advance(0.0425)
            seen.append(self.store.lock_time_mills())
            return original(*args)  # type: ignore[arg-type]
        commit_log.flush = slow_flush  # type: ignore[method-assign]
        self.assertEqual(self.store.lock_time_mills(), 0)
        self.store.flush()
        self.assertEqual((seen, self.store.lock_time_mills()), ([42], 0))

    def test_remain_to_flush(self) -> None:
        """Bytes written and not yet flushed."""
        r = self.store.put_message(message())
        self.assertEqual(self.store.remain_how_many_data_to_flush(), r.append_result.wrote_bytes)  # type: ignore
        self.store.flush()
        self.assertEqual(self.store.remain_how_many_data_to_flush(), 0)

    def test_runtime_info(self) -> None:
        """Java's store keys: the disk ratios per CommitLog path and the least, the offsets."""
        self.store.put_message(message())
        info = self.store.get_runtime_info()
        path = self.store.config.store_path_commit_log
        ratio = disk_partition_used_percent(path)
        self.assertTrue(0.0 <= ratio <= 1.0)
        self.assertEqual((info[f"commitLogDiskRatio_{path}"], info["commitLogDiskRatio"]), (str(ratio), str(ratio)))
        self.assertEqual(info["consumeQueueDiskRatio"],
                         str(disk_partition_used_percent(os.path.join(self.root, "consumequeue"))))
        self.assertEqual((info["commitLogMinOffset"], info["commitLogMaxOffset"]),
                         ("0", str(self.store.get_max_phy_offset())))
        self.assertEqual(disk_partition_used_percent(os.path.join(self.root, "nowhere")), -1.0)


class SyncFlushLockTimeTests(SynchronousTestCase):
    def test_group_commit_in_progress(self) -> None:
        """With SYNC_FLUSH the group commit batch in progress is what pageCacheLockTimeMills times."""
        clock = Clock()
        store = open_store(temp_root(self), clock, flush_disk_type=FlushDiskType.SYNC_FLUSH)
        self.addCleanup(store.shutdown)
        gc = store.group_commit_service
        assert gc is not None
        original = gc._flush
        seen = []

        def slow_flush() -> int:
            clock.advance(0.0175)
            seen.append(store.lock_time_mills())
            return original()
        gc._flush = slow_flush  # type: ignore[method-assign]
        result = store.async_put_message(message())
        self.assertIsNotNone(result.flush_future)
        gc.commit()
        self.assertEqual((seen, store.lock_time_mills(), gc.busy_since), ([17], 0, 0.0))
