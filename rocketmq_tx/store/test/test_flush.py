"""SYNC_FLUSH group commit and ASYNC_FLUSH service."""

from __future__ import annotations

import threading
from concurrent.futures import TimeoutError as FutureTimeout

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.store import FlushDiskType, PutMessageStatus, StoreDriver
from rocketmq_tx.store.flush import FlushRealTimeService, GroupCommitRequest, GroupCommitService
from rocketmq_tx.store.test.util import Clock, message, open_store, temp_root


class GroupCommitTests(SynchronousTestCase):
    def test_one_flush_completes_many(self) -> None:
        flushed = [0]
        calls = []

        flushed[0] = 300

        def flush() -> int:
            calls.append(1)
            return flushed[0]

        clock = Clock()
        gc = GroupCommitService(flush, clock, 5000)
        futures = [gc.put_request(o) for o in (100, 200, 300)]
        self.assertEqual(gc.pending(), 3)
        self.assertEqual(gc.commit(), 3)
        self.assertEqual(len(calls), 1)
        self.assertEqual([f.result(0) for f in futures], [PutMessageStatus.PUT_OK] * 3)
        # a batch completes only when its highest offset is on disk
        late = gc.put_request(400)
        self.assertIsNot(late, futures[0])
        self.assertEqual(gc.commit(), 0)
        self.assertFalse(late.done())
        self.assertEqual(gc.pending(), 1)
        clock.advance(4.9)
        newer = gc.put_request(350)
        clock.advance(0.1)
        flushed[0] = 350
        self.assertEqual(gc.commit(), 2)
        self.assertEqual(late.result(0), PutMessageStatus.FLUSH_DISK_TIMEOUT)
        self.assertEqual(newer.result(0), PutMessageStatus.PUT_OK)

    def test_batch_future(self) -> None:
        """The shared future: waiters in many threads, callbacks before and after completion."""
        req = GroupCommitRequest(10, 0.0)
        self.assertFalse(req.done())
        self.assertRaises(FutureTimeout, req.result, 0.01)
        seen = []
        req.add_done_callback(lambda r: seen.append(("early", r.result(0))))
        req.add_done_callback(lambda r: 1 / 0)  # logged, and the others still run
        req.add_done_callback(lambda r: seen.append(("second", r.result(0))))
        results = []
        started = threading.Barrier(9)

        def wait() -> None:
            started.wait()
            results.append(req.result(10))
        threads = [threading.Thread(target=wait) for _ in range(8)]
        for t in threads:
            t.start()
        started.wait()
        with self.assertLogs("rocketmq_tx.store", "ERROR") as logged:
            req.set_result(PutMessageStatus.PUT_OK)
        self.assertIn("ZeroDivisionError", logged.output[0])
        for t in threads:
            t.join(10)
        self.assertEqual(results, [PutMessageStatus.PUT_OK] * 8)
        self.assertEqual(seen, [("early", PutMessageStatus.PUT_OK), ("second", PutMessageStatus.PUT_OK)])
        req.add_done_callback(lambda r: seen.append(("late", r.result())))
        self.assertEqual(seen[-1], ("late", PutMessageStatus.PUT_OK))
        self.assertTrue(req.done())

    def test_flush_failure_times_out(self) -> None:
        def flush() -> int:
            raise OSError(5, "EIO")

        clock = Clock()
        gc = GroupCommitService(flush, clock, 1000)
        f = gc.put_request(10)
        gc.commit()
        self.assertFalse(f.done())
        clock.advance(1)
        gc.commit()
        self.assertEqual(f.result(0), PutMessageStatus.FLUSH_DISK_TIMEOUT)

    def test_async_service_least_pages(self) -> None:
        seen = []
        svc = FlushRealTimeService(seen.append, 4, 10_000)
        svc.run_once(100.0)
        svc.run_once(100.5)
        svc.run_once(110.0)
        self.assertEqual(seen, [0, 4, 0])


class SyncFlushStoreTests(SynchronousTestCase):
    def test_sync_put_without_driver(self) -> None:
        s = open_store(temp_root(self), flush_disk_type=FlushDiskType.SYNC_FLUSH)
        self.addCleanup(s.shutdown)
        r = s.put_message(message())
        self.assertEqual(r.status, PutMessageStatus.PUT_OK)
        self.assertGreaterEqual(s.commit_log.flushed_where, r.append_result.wrote_offset + r.append_result.wrote_bytes)

    def test_async_put_future(self) -> None:
        s = open_store(temp_root(self), flush_disk_type=FlushDiskType.SYNC_FLUSH)
        self.addCleanup(s.shutdown)
        results = [s.async_put_message(message(body=b"%d" % i)) for i in range(10)]
        self.assertTrue(all(r.flush_future is not None and not r.flush_future.done() for r in results))
        self.assertEqual(s.group_commit_service.commit(), 10)
        self.assertEqual({r.flush_future.result(0) for r in results}, {PutMessageStatus.PUT_OK})

    def test_driver_threads(self) -> None:
        import time
        s = open_store(temp_root(self), Clock(), flush_disk_type=FlushDiskType.SYNC_FLUSH)
        s.now = time.time
        driver = StoreDriver(s)
        driver.start()
        statuses = []

        def writer(n: int) -> None:
            for i in range(20):
                statuses.append(s.put_message(message(body=b"%d-%d" % (n, i), queue_id=n % 4)).status)

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        driver.stop()
        self.assertEqual(statuses, [PutMessageStatus.PUT_OK] * 160)
        self.assertLess(s.group_commit_service.commits, 160)
        s.shutdown()

    def test_no_wait(self) -> None:
        s = open_store(temp_root(self), flush_disk_type=FlushDiskType.SYNC_FLUSH)
        self.addCleanup(s.shutdown)
        m = message()
        m.wait_store_msg_ok = False
        r = s.put_message(m)
        self.assertEqual(r.status, PutMessageStatus.PUT_OK)
        self.assertIsNone(r.flush_future)

    def test_async_flush_store(self) -> None:
        s = open_store(temp_root(self))
        self.addCleanup(s.shutdown)
        s.put_message(message(body=b"x" * 100))
        s.flush_commit_log_service.run_once(s.now())  # first call is thorough
        self.assertEqual(s.commit_log.flushed_where, s.commit_log.get_max_offset())
        s.put_message(message(body=b"x" * 100))
        s.flush_commit_log_service.run_once(s.now() + 1)  # < 4 pages dirty: nothing
        self.assertLess(s.commit_log.flushed_where, s.commit_log.get_max_offset())
        self.assertGreater(s.checkpoint.physic_msg_timestamp, 0)
