"""delete_expired: fileReservedTime, deleteWhen, diskMaxUsedSpaceRatio; readers of deleted ranges."""

from __future__ import annotations

import os
import time

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.store import DefaultMessageStore, GetMessageStatus
from rocketmq_tx.store.test.util import Clock, message, small_config, temp_root


def local(hour: int, minute: int = 30) -> float:
    return time.mktime((2026, 3, 10, hour, minute, 0, 0, 0, -1))


class ExpiryTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.root = temp_root(self)
        self.clock = Clock(local(10))
        self.ratio = 0.1
        self.store = DefaultMessageStore(small_config(self.root, delete_when="04;05"), now=self.clock,
                                         disk_used_ratio=lambda path: self.ratio)
        self.assertTrue(self.store.load())
        self.store.start()
        self.addCleanup(self.store.shutdown)
        for i in range(200):
            self.store.put_message(message(body=b"x" * 1000, keys=f"k{i}"))
        self.files = list(self.store.commit_log.mapped_file_queue.files)
        self.assertGreater(len(self.files), 3)

    def age(self, files, hours: float) -> None:
        for f in files:
            t = self.clock() - hours * 3600
            os.utime(f.path, (t, t))

    def test_not_time_yet(self) -> None:
        self.age(self.files, 100)
        self.assertEqual(self.store.delete_expired(self.clock()), 0)

    def test_delete_when_hour(self) -> None:
        self.age(self.files[:2], 73)
        self.age(self.files[2:], 1)
        now = local(5) + 86400
        self.clock.t = now
        self.age(self.files[:2], 73)
        self.assertEqual(self.store.delete_expired(now), 2)
        s = self.store
        min_phy = s.get_min_phy_offset()
        self.assertEqual(min_phy, self.files[2].file_from_offset)
        min_q = s.get_min_offset_in_queue("TopicTest", 0)
        self.assertGreater(min_q, 0)
        g = s.get_message("g", "TopicTest", 0, 0, 32)
        self.assertEqual((g.status, g.next_begin_offset), (GetMessageStatus.OFFSET_TOO_SMALL, min_q))
        g = s.get_message("g", "TopicTest", 0, min_q, 32)
        self.assertEqual(g.status, GetMessageStatus.FOUND)
        self.assertIsNone(s.look_message_by_offset(0))
        self.assertEqual(s.query_message("TopicTest", "k0", 32, 0, int(now * 1000)).message_buffers, [])
        self.assertEqual(s.get_earliest_message_time("TopicTest", 0),
                         s.get_message_store_timestamp("TopicTest", 0, min_q))

    def test_disk_full_ratio(self) -> None:
        self.age(self.files[:1], 73)
        self.ratio = 0.80  # above 75 %: expired files go at any hour
        self.assertEqual(self.store.delete_expired(self.clock()), 1)
        self.ratio = 0.90  # above 85 %: even unexpired ones
        self.assertGreater(self.store.delete_expired(self.clock()), 0)
        self.assertEqual(len(self.store.commit_log.mapped_file_queue.files), 1)  # never the last

    def test_message_was_removing(self) -> None:
        self.age(self.files[:1], 73)
        self.store.commit_log.mapped_file_queue.delete_expired_file_by_time(3600, self.clock(), False)
        # The first records are gone but their ConsumeQueue entries are not yet: Java skips
        # to the next CommitLog file, and reports MESSAGE_WAS_REMOVING if nothing is left in the
        # ConsumeQueue file it looked at.
        gone = self.files[1].file_from_offset
        cq = self.store.find_consume_queue("TopicTest", 0)
        first_alive = next(i for i in range(200) if cq.get_entry(i)[0] >= gone)
        g = self.store.get_message("g", "TopicTest", 0, 0, 32)
        if first_alive < 64:
            self.assertEqual(g.status, GetMessageStatus.FOUND)
            self.assertEqual(g.message_queue_offsets[0], first_alive)
        else:
            self.assertEqual((g.status, g.next_begin_offset), (GetMessageStatus.MESSAGE_WAS_REMOVING, 64))
        self.assertIsNone(self.store.look_message_by_offset(0))

    def test_restart_after_deletion(self) -> None:
        self.age(self.files[:2], 100)
        self.ratio = 0.8
        self.store.delete_expired(self.clock())
        min_q = self.store.get_min_offset_in_queue("TopicTest", 0)
        self.store.shutdown()
        self.store = DefaultMessageStore(small_config(self.root), now=self.clock)
        self.assertTrue(self.store.load())
        self.store.start()
        self.assertEqual(self.store.get_min_offset_in_queue("TopicTest", 0), min_q)
        self.assertEqual(self.store.get_max_offset_in_queue("TopicTest", 0), 200)
