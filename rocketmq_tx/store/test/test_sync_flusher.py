"""
The C accelerator's SYNC_FLUSH flusher (``_speedups.SyncFlusher``) and the group commit and
store running on it; the Python group commit it stands in for is tested in test_flush.py.
"""

from __future__ import annotations

import os
import threading

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.common.native import speedups
from rocketmq_tx.common.test.test_native import _require_native
from rocketmq_tx.store import FlushDiskType, PutMessageStatus, StoreDriver
from rocketmq_tx.store.flush import GroupCommitService
from rocketmq_tx.store.test.util import Clock, message, open_store, temp_root

SIZE = 1 << 16


def _open_fds() -> set[int]:
    return {int(n) for n in os.listdir("/proc/self/fd")}


class SyncFlusherTests(SynchronousTestCase):
    def setUp(self) -> None:
        _require_native(self)
        assert speedups is not None
        root = temp_root(self)
        os.makedirs(root)
        self.fds = []
        for i in range(3):
            fd = os.open(os.path.join(root, f"{i * SIZE:020d}"), os.O_RDWR | os.O_CREAT, 0o644)
            os.ftruncate(fd, SIZE)
            self.addCleanup(os.close, fd)
            self.fds.append(fd)
        self.cls = speedups.SyncFlusher

    def started(self, flushed: int = 0, hold: int = 0, files: int = 3):
        f = self.cls(flushed, hold)
        for i in range(files):
            f.add_file(self.fds[i], i * SIZE, (i + 1) * SIZE)
        f.start()
        self.addCleanup(f.stop)
        return f

    def test_request_then_wait(self) -> None:
        f = self.started()
        self.assertEqual((f.flushed, f.running, f.error), (0, 1, 0))
        os.pwrite(self.fds[0], b"x" * 100, 0)
        f.request(100)
        self.assertTrue(f.wait(100, 5.0))
        self.assertGreaterEqual(f.flushed, 100)
        self.assertGreaterEqual(f.syncs, 1)
        self.assertEqual(f.requested, 100)
        # a waiter asks for its offset itself, led or not
        self.assertTrue(f.wait(200, 5.0))
        self.assertTrue(f.wait(300, 5.0, True))
        self.assertEqual((f.flushed, f.requested), (300, 300))

    def test_leader_syncs_itself(self) -> None:
        """A leading waiter with no sync running syncs on its own thread: no wake-up needed."""
        f = self.cls(0, 1 << 40)
        f.add_file(self.fds[0], 0, SIZE)
        f.start()
        self.addCleanup(f.stop)
        f.request(10)
        self.assertEqual(f.begun, 0)  # below hold, nobody waiting: no sync yet
        self.assertFalse(f.wait(10, 0.0, True))  # a zero timeout only looks, it does not lead
        self.assertTrue(f.wait(10, 5.0, True))
        self.assertEqual((f.flushed, f.syncs), (10, 1))

    def test_hold(self) -> None:
        f = self.started(hold=1000)
        f.request(999)
        f.request(1000)  # the hold is reached: the thread syncs unasked
        self.assertTrue(f.wait(1000, 5.0))
        self.assertEqual(f.flushed, 1000)

    def test_across_files_and_descriptors_released(self) -> None:
        before = _open_fds()
        f = self.cls(0)
        for i in range(3):
            f.add_file(self.fds[i], i * SIZE, (i + 1) * SIZE)
        self.assertEqual(len(_open_fds() - before), 3)  # its own duplicates
        f.start()
        f.request(2 * SIZE + 5)
        self.assertTrue(f.wait(2 * SIZE + 5, 5.0))
        # files synced to their end are let go; the newest is kept
        self.assertEqual(len(_open_fds() - before), 1)
        f.stop()
        self.assertEqual(_open_fds() - before, set())
        self.assertEqual(f.running, 0)

    def test_first_file_past_flushed(self) -> None:
        """An empty flusher adopts the first file's start (older files were deleted)."""
        f = self.cls(0)
        f.add_file(self.fds[1], SIZE, 2 * SIZE)
        self.assertEqual((f.flushed, f.requested), (SIZE, SIZE))
        f.start()
        self.addCleanup(f.stop)
        self.assertTrue(f.wait(SIZE + 1, 5.0, True))

    def test_hole_is_never_acknowledged(self) -> None:
        """Bytes no registered file holds cannot be synced: EINVAL, and the offset stays."""
        f = self.cls(0)
        f.add_file(self.fds[0], 0, SIZE)
        f.start()
        self.addCleanup(f.stop)
        self.assertFalse(f.wait(SIZE + 10, 0.2, True))
        self.assertEqual((f.flushed, f.error), (0, 22))

    def test_add_file_errors(self) -> None:
        f = self.cls(0)
        f.add_file(self.fds[1], SIZE, 2 * SIZE)
        self.assertRaises(ValueError, f.add_file, self.fds[0], 0, SIZE)  # out of order
        self.assertRaises(ValueError, f.add_file, self.fds[2], 3 * SIZE, 2 * SIZE)  # empty range
        closed = os.dup(self.fds[2])
        os.close(closed)
        self.assertRaises(OSError, f.add_file, closed, 2 * SIZE, 3 * SIZE)
        f.stop()
        self.assertRaises(ValueError, f.add_file, self.fds[2], 2 * SIZE, 3 * SIZE)  # stopped

    def test_stop_syncs_what_was_requested(self) -> None:
        f = self.cls(0, 1 << 40)  # the thread would not sync by itself
        f.add_file(self.fds[0], 0, SIZE)
        f.start()
        f.request(500)
        f.stop()
        self.assertEqual((f.flushed, f.running), (500, 0))
        self.assertFalse(f.wait(600, 5.0, True))  # stopped: no waiting, no leading

    def test_many_waiters(self) -> None:
        """Threads waiting for different offsets all return once theirs is covered."""
        f = self.started()
        results: dict[int, bool] = {}

        def waiter(k: int) -> None:
            results[k] = f.wait(k * 100, 10.0, k % 2 == 0)

        threads = [threading.Thread(target=waiter, args=(k,)) for k in range(1, 33)]
        for t in threads:
            t.start()
        for k in range(1, 33):
            f.request(k * 100)
        for t in threads:
            t.join(15)
        self.assertEqual(results, {k: True for k in range(1, 33)})
        self.assertGreaterEqual(f.flushed, 3200)

    def test_start_stop_and_wait_at_once(self) -> None:
        """
        start(), several stop()s and leading waiters in threads of their own (stop() and wait()
        run without the GIL): one stop() joins the thread, the others wait for that before
        closing the descriptors, and everybody returns. start() and stop() once read and wrote
        `started` outside the mutex (ThreadSanitizer), and two stop()s could both join.
        """
        before = _open_fds()
        for _ in range(20):
            f = self.cls(0, 0)
            for i in range(3):
                f.add_file(self.fds[i], i * SIZE, (i + 1) * SIZE)
            errors: list[BaseException] = []

            def run(fn, *args, errors: list[BaseException] = errors) -> None:
                try:
                    fn(*args)
                except RuntimeError as e:  # start() after a stop(): refused
                    errors.append(e)

            threads = [threading.Thread(target=run, args=(f.start,))]
            threads += [threading.Thread(target=run, args=(f.wait, k * 1000, 0.5, True)) for k in range(1, 5)]
            threads += [threading.Thread(target=run, args=(f.stop,)) for _ in range(3)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(15)
                self.assertFalse(t.is_alive())
            self.assertEqual(f.running, 0)
            self.assertLessEqual(len(errors), 1)
        self.assertEqual(_open_fds(), before)  # every duplicated descriptor closed, once


class NativeGroupCommitTests(SynchronousTestCase):
    """GroupCommitService with a flusher attached (as a StoreDriver runs it)."""

    def setUp(self) -> None:
        _require_native(self)
        assert speedups is not None
        root = temp_root(self)
        os.makedirs(root)
        fd = os.open(os.path.join(root, "f"), os.O_RDWR | os.O_CREAT, 0o644)
        os.ftruncate(fd, SIZE)
        self.addCleanup(os.close, fd)
        self.flusher = speedups.SyncFlusher(0, 1 << 40)
        self.flusher.add_file(fd, 0, SIZE)
        self.flusher.start()
        self.addCleanup(self.flusher.stop)
        self.python_flushes: list[int] = []
        self.reported: list[int] = []
        self.gc = GroupCommitService(lambda: self.python_flushes.append(1) or 0, Clock(), 5000)
        self.gc.attach_native(self.flusher, self.reported.append)

    def test_commit_waits_for_the_flusher(self) -> None:
        a, b = self.gc.put_request(100), self.gc.put_request(200)
        self.assertIs(a, b)  # no sync began in between: one batch
        self.assertEqual(self.gc.commit(), 2)
        self.assertEqual(a.result(0), PutMessageStatus.PUT_OK)
        self.assertEqual(self.python_flushes, [])
        self.assertEqual(self.reported, [200])

    def test_batches_follow_syncs(self) -> None:
        """Puts after a sync began form a new batch: its waiters never wait for later puts."""
        a = self.gc.put_request(100)
        self.assertTrue(self.flusher.wait(100, 5.0, True))
        b = self.gc.put_request(200)
        self.assertIsNot(a, b)
        # a waiter sees the flusher's progress without the group commit thread
        self.assertEqual(a.result(0), PutMessageStatus.PUT_OK)
        self.assertFalse(b.done())
        # a commit waits for the oldest batch, completes what is covered, keeps the rest
        self.assertEqual(self.gc.commit(), 1)
        self.assertFalse(b.done())
        self.assertEqual(self.gc.commit(), 1)
        self.assertEqual(b.result(0), PutMessageStatus.PUT_OK)
        self.assertEqual(self.reported, [100, 200])

    def test_flush_soon(self) -> None:
        self.gc.flush_soon(300)
        self.assertEqual(self.flusher.requested, 300)

    def test_detach(self) -> None:
        f = self.gc.put_request(100)
        self.assertIs(self.gc.detach_native(), self.flusher)
        self.assertIsNone(self.gc.native)
        # back to the Python flush, which here reports offset 0: not done
        self.assertEqual(self.gc.commit(), 0)
        self.assertEqual(self.python_flushes, [1])
        self.assertFalse(f.done())


class NativeStoreTests(SynchronousTestCase):
    def setUp(self) -> None:
        _require_native(self)

    def test_driver_attaches_and_detaches(self) -> None:
        import time
        # small CommitLog files: the puts roll over, and new files are registered
        s = open_store(temp_root(self), Clock(), flush_disk_type=FlushDiskType.SYNC_FLUSH,
                       mapped_file_size_commit_log=8 * 1024)
        s.now = time.time
        self.assertTrue(s.page_warmer.zero)  # zeros ahead; the appends use pwrite
        driver = StoreDriver(s, clean=False)
        driver.start()
        gc = s.group_commit_service
        flusher = gc.native
        self.assertIsNotNone(flusher)
        statuses = []

        def writer(n: int) -> None:
            for i in range(25):
                statuses.append(s.put_message(message(body=b"%d-%d" % (n, i) * 100, queue_id=n % 4)).status)

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(statuses, [PutMessageStatus.PUT_OK] * 100)
        self.assertGreater(len(s.commit_log.mapped_file_queue.files), 3)
        self.assertGreaterEqual(flusher.flushed, s.get_max_phy_offset() - 1)
        driver.stop()
        self.assertIsNone(gc.native)
        self.assertEqual(flusher.running, 0)
        self.assertIsNone(s.commit_log.mapped_file_queue.on_create)
        # the Python bookkeeping followed the flusher
        end = s.get_max_phy_offset()
        self.assertEqual(s.commit_log.flushed_where, end)
        self.assertGreater(s.checkpoint.physic_msg_timestamp, 0)
        for f in s.commit_log.mapped_file_queue.files[:-1]:
            self.assertEqual(f.flushed_position, f.file_size)
        s.shutdown()

    def test_checkpoint_timestamp_never_leads_the_disk(self) -> None:
        s = open_store(temp_root(self), Clock(), flush_disk_type=FlushDiskType.SYNC_FLUSH)
        self.addCleanup(s.shutdown)
        s.attach_sync_flusher()
        flusher = s.group_commit_service.native
        r1 = s.async_put_message(message())
        self.assertTrue(flusher.wait(r1.append_result.wrote_offset + r1.append_result.wrote_bytes, 5.0, True))
        s.flush_manager.native_flushed(flusher.flushed)  # takes the probe
        s.flush_manager.native_flushed(flusher.flushed)  # the probe's offset is covered: its timestamp is used
        first = s.checkpoint.physic_msg_timestamp
        self.assertEqual(first, r1.append_result.store_timestamp)
        s.now = lambda: 2_000_000_000.0
        r2 = s.async_put_message(message())
        # a flushed offset short of the second record: its timestamp is not taken
        s.flush_manager.native_flushed(r2.append_result.wrote_offset)
        self.assertEqual(s.checkpoint.physic_msg_timestamp, first)
        self.assertTrue(flusher.wait(r2.append_result.wrote_offset + r2.append_result.wrote_bytes, 5.0, True))
        s.flush_manager.native_flushed(flusher.flushed)
        s.flush_manager.native_flushed(flusher.flushed)
        self.assertEqual(s.checkpoint.physic_msg_timestamp, 2_000_000_000_000)
        s.detach_sync_flusher()

    def test_without_the_flusher(self) -> None:
        s = open_store(temp_root(self), Clock(), flush_disk_type=FlushDiskType.SYNC_FLUSH)
        self.addCleanup(s.shutdown)
        s.sync_flusher_class = None
        s.attach_sync_flusher()
        self.assertIsNone(s.group_commit_service.native)
