"""MappedFile and MappedFileQueue."""

from __future__ import annotations

import errno
import os
import threading

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.common.native import speedups
from rocketmq_tx.common.test.test_native import _require_native
from rocketmq_tx.store import FlushDiskType, pagewarmer
from rocketmq_tx.store.mappedfile import OS_PAGE_SIZE, MappedFile, MappedFileQueue
from rocketmq_tx.store.pagewarmer import NOT_ZEROING, PageWarmer
from rocketmq_tx.store.test.util import message, open_store, temp_root


class MappedFileTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.dir = temp_root(self)
        os.makedirs(self.dir)

    def test_create_preallocates(self) -> None:
        f = MappedFile(os.path.join(self.dir, "00000000000000004096"), 8192)
        self.addCleanup(f.close)
        self.assertEqual(os.path.getsize(f.path), 8192)
        self.assertEqual(f.file_from_offset, 4096)
        self.assertEqual(os.stat(f.path).st_blocks * 512 >= 8192, True)
        self.assertEqual(f.append(b"abc"), 0)
        self.assertEqual(f.append(b"de"), 3)
        self.assertEqual(f.read(0, 5), b"abcde")
        self.assertEqual(f.wrote_position, 5)

    def test_flush_least_pages(self) -> None:
        f = MappedFile(os.path.join(self.dir, "00000000000000000000"), OS_PAGE_SIZE * 8)
        self.addCleanup(f.close)
        f.append(b"x" * (OS_PAGE_SIZE * 2))
        self.assertEqual(f.flush(4), 0)
        self.assertEqual(f.flush(2), OS_PAGE_SIZE * 2)
        f.append(b"y")
        self.assertEqual(f.flush(0), OS_PAGE_SIZE * 2 + 1)

    def test_read_after_close_is_none(self) -> None:
        f = MappedFile(os.path.join(self.dir, "00000000000000000000"), 4096)
        f.append(b"abc")
        f.close()
        self.assertIsNone(f.read(0, 3))


class MappedFileQueueTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.dir = temp_root(self)

    def fill(self, q: MappedFileQueue, n: int) -> None:
        for _ in range(n):
            f = q.get_last_mapped_file(0)
            f.append(b"\x01" * (f.file_size - f.wrote_position))

    def test_names_and_lookup(self) -> None:
        q = MappedFileQueue(self.dir, 4096)
        self.addCleanup(q.close)
        self.fill(q, 3)
        self.assertEqual(sorted(os.listdir(self.dir)),
                         ["00000000000000000000", "00000000000000004096", "00000000000000008192"])
        self.assertIs(q.find_mapped_file_by_offset(5000), q.files[1])
        self.assertIsNone(q.find_mapped_file_by_offset(20000))
        self.assertEqual(q.get_max_offset(), 3 * 4096)
        q.flush(0)
        self.assertEqual(q.flushed_where, 3 * 4096)

    def test_load_rejects_wrong_size(self) -> None:
        os.makedirs(self.dir)
        with open(os.path.join(self.dir, "00000000000000000000"), "wb") as fh:
            fh.write(b"\0" * 100)
        self.assertFalse(MappedFileQueue(self.dir, 4096).load())

    def test_truncate_zeroes_and_deletes(self) -> None:
        q = MappedFileQueue(self.dir, 4096)
        self.fill(q, 3)
        q.truncate_dirty_files(4096 + 100)
        self.assertEqual(len(q.files), 2)
        self.assertEqual(q.get_max_offset(), 4196)
        self.assertEqual(q.files[1].read(100, 3996), bytes(3996))
        self.assertEqual(q.files[1].read(0, 100), b"\x01" * 100)
        q.close()

    def test_creation_leftover_removed(self) -> None:
        q = MappedFileQueue(self.dir, 4096)
        self.fill(q, 1)
        q.close()
        with open(os.path.join(self.dir, "00000000000000004096.creating"), "wb"):
            pass  # a crash between open() and rename()
        q = MappedFileQueue(self.dir, 4096)
        self.assertTrue(q.load())
        self.assertEqual(os.listdir(self.dir), ["00000000000000000000"])
        q.close()

    def test_delete_expired_by_time(self) -> None:
        q = MappedFileQueue(self.dir, 4096)
        self.fill(q, 3)
        for f in q.files:
            os.utime(f.path, (1000, 1000))
        self.assertEqual(q.delete_expired_file_by_time(3600, 1000 + 3599, False), 0)
        self.assertEqual(q.delete_expired_file_by_time(3600, 1000 + 3600, False), 2)
        self.assertEqual(len(q.files), 1)  # never the last file
        self.assertEqual(q.get_min_offset(), 8192)
        q.close()


class ZeroingWarmerTests(SynchronousTestCase):
    """SYNC_FLUSH's page warmer: zeros written ahead of the appends, never where they land."""

    def setUp(self) -> None:
        self.f = _warmer_file(self)
        # non-zero bytes where zeros would show
        os.pwrite(self.f.fd, b"\xee" * (1 << 20), 0)
        self.lock = threading.Lock()

    def test_zeroes_ahead_beyond_the_margin(self) -> None:
        w = PageWarmer(window=64 * 1024, zero=True, put_lock=self.lock, margin=4096, chunk=16 * 1024)
        self.f.append(b"x" * 100)
        w.note_append(self.f, 100)
        self.f.append(b"y" * 5000)  # the writer moved on before the warmer ran
        w.run_once(0)
        self.assertTrue(w.enabled)
        start = -(-(5100 + 4096) // OS_PAGE_SIZE) * OS_PAGE_SIZE  # past the margin, page-aligned
        end = 100 + 128 * 1024
        self.assertEqual(w.warmed, end - start)
        data = os.pread(self.f.fd, 1 << 20, 0)
        self.assertEqual(data[:5100], b"x" * 100 + b"y" * 5000)
        self.assertEqual(data[5100:start], b"\xee" * (start - 5100))
        self.assertEqual(data[start:end], bytes(end - start))
        self.assertEqual(data[end:], b"\xee" * ((1 << 20) - end))
        self.assertEqual(w.zero_from, NOT_ZEROING)

    def test_zeroing_needs_the_put_lock(self) -> None:
        self.assertRaises(ValueError, PageWarmer, zero=True)

    def test_closed_file_and_writer_past_the_range(self) -> None:
        w = PageWarmer(window=64 * 1024, zero=True, put_lock=self.lock, margin=4096)
        w.note_append(self.f, 0)
        self.f.wrote_position = 200 * 1024  # past the whole request
        w.run_once(0)
        self.assertEqual(w.warmed, 0)
        w.note_append(self.f, 300 * 1024)
        self.f.close()
        w.run_once(0)
        self.assertEqual((w.warmed, w.enabled), (0, True))

    def test_failure_turns_the_warmer_off(self) -> None:
        read_only = os.open(self.f.path, os.O_RDONLY)
        self.addCleanup(os.close, read_only)
        self.assertEqual(speedups.zero_fill(read_only, 0, 10), errno.EBADF)
        self.assertRaises(ValueError, speedups.zero_fill, -1, 0, 10)
        self.assertRaises(ValueError, speedups.zero_fill, read_only, 10, 0)
        w = PageWarmer(window=64 * 1024, zero=True, put_lock=self.lock, margin=0)
        self.f.fd, good = read_only, self.f.fd
        try:
            w.note_append(self.f, 0)
            w.run_once(0)
        finally:
            self.f.fd = good
        self.assertEqual((w.enabled, w.warmed, w.zero_from), (False, 0, NOT_ZEROING))
        self.assertEqual(os.pread(self.f.fd, 16, 4096), b"\xee" * 16)

    def test_put_waits_for_the_chunk_being_zeroed(self) -> None:
        """An append reaching the chunk being zeroed waits for it: the zeros never land on a record."""
        s = open_store(temp_root(self), flush_disk_type=FlushDiskType.SYNC_FLUSH)
        self.addCleanup(s.shutdown)
        w = s.page_warmer
        self.assertTrue(w.zero and w.enabled)
        w.margin = 0
        release = threading.Event()
        real = pagewarmer.speedups

        class Held:
            def __getattr__(self, name):
                return getattr(real, name)

            def zero_fill(self, fd, start, end):
                release.wait(10)
                return real.zero_fill(fd, start, end)
        self.patch(pagewarmer, "speedups", Held())
        for _ in range(2):  # the first creates the files, the second (one call) asks for a window
            self.assertTrue(s.put_message(message(body=b"a" * 100)).is_ok())
        warmer = threading.Thread(target=w.run_once, args=(0,))
        warmer.start()
        while w.zero_from == NOT_ZEROING and warmer.is_alive():  # until the chunk is claimed
            warmer.join(0.001)
        self.assertNotEqual(w.zero_from, NOT_ZEROING)
        results = []
        put = threading.Thread(target=lambda: results.append(s.put_message(message(body=b"b" * 9000))))
        put.start()
        put.join(1.0)
        blocked = put.is_alive()
        release.set()
        put.join(10)
        warmer.join(10)
        self.assertTrue(blocked, "the put did not wait for the zeroing")
        self.assertTrue(results[0].is_ok())
        got = s.get_message("g", "TopicTest", 0, 0, 10)
        self.assertEqual([bytes(m).count(b"b" * 9000) for m in got.message_buffers], [0, 0, 1])


def _resident_pages(f: MappedFile, field: str = "Rss") -> int:
    """
    Pages of *f* that are in memory (mincore through mmap is not in the stdlib: /proc), or
    those counted by another smaps *field* ("Private_Dirty": dirtied through the mapping).
    """
    with open("/proc/self/smaps") as smaps:
        inside = False
        for line in smaps:
            head = line.split(" ", 1)[0]
            if "-" in head and not head.endswith(":"):
                inside = line.rstrip().endswith(f.path)
            elif inside and head == field + ":":
                return int(line.split()[1]) * 1024 // OS_PAGE_SIZE
    return 0


def _warmer_file(test: SynchronousTestCase) -> MappedFile:
    """A 1 MiB CommitLog-style file for the page warmer (which needs the C accelerator)."""
    _require_native(test)
    root = temp_root(test)
    os.makedirs(root, exist_ok=True)
    f = MappedFile(os.path.join(root, "00000000000001048576"), 1 << 20)
    test.addCleanup(f.close)
    return f


class PageWarmerTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.f = _warmer_file(self)

    def test_warms_ahead_without_writing(self) -> None:
        w = PageWarmer(window=64 * 1024)
        self.f.append(b"x" * 100)
        before = _resident_pages(self.f)
        w.note_append(self.f, 100)
        self.assertEqual(w.mark, (1 << 20) + 100 + 64 * 1024)
        w.run_once(0)
        self.assertTrue(w.enabled, "this kernel lacks MADV_POPULATE_WRITE (Linux 5.14+)")
        self.assertEqual(w.warmed, 128 * 1024)
        self.assertGreaterEqual(_resident_pages(self.f) - before, 128 * 1024 // OS_PAGE_SIZE - 1)
        # nothing was written: the file is still zeros after the append
        self.assertEqual(self.f.mm[100:128 * 1024].count(0), 128 * 1024 - 100)
        # below the mark: no new request
        w.note_append(self.f, 200)
        w.run_once(0)
        self.assertEqual(w.warmed, 128 * 1024)
        # past it: from where the last request ended; two requests before a run merge
        w.note_append(self.f, 100 + 64 * 1024 + 1)
        w.note_append(self.f, 100 + 128 * 1024 + 2)
        w.run_once(0)
        self.assertEqual(w.warmed, 256 * 1024 + 2)  # [100, 100 + 256 KiB + 2)

    def test_populating_dirties_the_pages(self) -> None:
        """ASYNC_FLUSH's warmer maps the pages writable (dirty), so the first append takes no fault."""
        w = PageWarmer(window=64 * 1024)
        dirty = _resident_pages(self.f, "Private_Dirty")
        w.note_append(self.f, 128 * 1024)
        w.run_once(0)
        self.assertGreaterEqual(_resident_pages(self.f, "Private_Dirty") - dirty, 128 * 1024 // OS_PAGE_SIZE - 1)

    def test_window_clipped_to_the_file_and_closed_file(self) -> None:
        w = PageWarmer(window=1 << 20)
        w.note_append(self.f, (1 << 20) - 10)
        w.run_once(0)
        self.assertEqual(w.warmed, 10)
        w.note_append(self.f, (1 << 20) - 5 + (2 << 20))  # past the mark again
        self.f.close()
        w.run_once(0)  # a closed file is skipped quietly
        self.assertEqual(w.warmed, 10)
