"""Disk full, read-only directories and failed writes: error statuses, no half records."""

from __future__ import annotations

import errno
import logging
import os
import resource
import signal

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.common.test.test_native import _require_native
from rocketmq_tx.store import FlushDiskType, PutMessageStatus, mappedfile
from rocketmq_tx.store.test.test_recovery import read_all
from rocketmq_tx.store.test.util import Clock, message, open_store, temp_root


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


class FaultTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.root = temp_root(self)
        self.clock = Clock()
        self.store = open_store(self.root, self.clock)
        self.log = _Capture()
        logging.getLogger("rocketmq_tx.store").addHandler(self.log)
        self.addCleanup(logging.getLogger("rocketmq_tx.store").removeHandler, self.log)

    def fail_fallocate(self, err: int = errno.ENOSPC) -> None:
        def fallocate(fd: int, offset: int, length: int) -> None:
            raise OSError(err, os.strerror(err))
        self.fallocate_patch = self.patch(mappedfile.os, "posix_fallocate", fallocate)

    def fill_first_file(self) -> int:
        n = 0
        while self.store.commit_log.get_max_offset() < 60 * 1024:
            self.assertTrue(self.store.put_message(message(body=b"y" * 1000, queue_id=1)).is_ok())
            n += 1
        return n

    def test_disk_full_on_new_commitlog_file(self) -> None:
        n = self.fill_first_file()
        self.fail_fallocate()
        statuses = [self.store.put_message(message(body=b"y" * 1000, queue_id=1)).status for _ in range(10)]
        self.assertIn(PutMessageStatus.CREATE_MAPEDFILE_FAILED, statuses)
        ok = statuses.count(PutMessageStatus.PUT_OK)
        self.assertTrue(any("cannot create a mapped file" in line and "No space" in line for line in self.log.lines))
        self.assertEqual(len(os.listdir(os.path.join(self.root, "commitlog"))), 1)
        self.fallocate_patch.restore()
        r = self.store.put_message(message(body=b"after", queue_id=1))
        self.assertEqual(r.status, PutMessageStatus.PUT_OK)
        self.assertEqual(r.append_result.logics_offset, n + ok)
        self.store.simulate_crash()
        self.store = open_store(self.root, self.clock)
        got = read_all(self.store, "TopicTest", 1)
        self.assertEqual(len(got), n + ok + 1)
        self.assertEqual(got[-1].body, b"after")
        self.store.shutdown()

    def test_disk_full_on_new_consume_queue(self) -> None:
        self.store.put_message(message())
        before = self.store.commit_log.get_max_offset()
        self.fail_fallocate()
        r = self.store.put_message(message(topic="NewTopic"))
        self.assertEqual(r.status, PutMessageStatus.CREATE_MAPEDFILE_FAILED)
        self.assertEqual(self.store.commit_log.get_max_offset(), before)
        self.store.shutdown()

    def test_read_only_directory(self) -> None:
        self.fill_first_file()
        real_open = os.open

        def ro_open(path, flags, mode=0o777, *a, **kw):
            if flags & os.O_CREAT and not os.path.exists(path):
                raise OSError(errno.EROFS, os.strerror(errno.EROFS), path)
            return real_open(path, flags, mode, *a, **kw)

        self.patch(mappedfile.os, "open", ro_open)
        statuses = {self.store.put_message(message(body=b"y" * 1000)).status for _ in range(10)}
        self.assertIn(PutMessageStatus.CREATE_MAPEDFILE_FAILED, statuses)
        self.assertTrue(any("Read-only" in line for line in self.log.lines))
        self.store.shutdown()

    def test_flush_failure(self) -> None:
        root = temp_root(self)
        s = open_store(root, self.clock, flush_disk_type=FlushDiskType.SYNC_FLUSH, sync_flush_timeout=0)
        self.store.shutdown()
        self.store = s
        real = mappedfile.MappedFile.flush

        def broken(self_, least):  # msync fails with EIO: the flushed position does not move
            return self_.flushed_position
        self.patch(mappedfile.MappedFile, "flush", broken)
        r = s.put_message(message())
        self.assertEqual(r.status, PutMessageStatus.FLUSH_DISK_TIMEOUT)
        self.patch(mappedfile.MappedFile, "flush", real)
        self.assertEqual(s.put_message(message()).status, PutMessageStatus.PUT_OK)
        s.shutdown()

    def test_failed_commitlog_write(self) -> None:
        """SYNC_FLUSH's one-call append writes with pwrite: a failed write is UNKNOWN_ERROR, with nothing kept."""
        _require_native(self)
        s = open_store(temp_root(self), self.clock, flush_disk_type=FlushDiskType.SYNC_FLUSH)
        self.store.shutdown()
        self.store = s
        self.assertTrue(s.put_message(message(body=b"a" * 100)).is_ok())
        clf = s.commit_log.mapped_file_queue.last()
        wrote, max_offset = clf.wrote_position, s.get_max_offset_in_queue("TopicTest", 0)
        good_fd = clf.fd
        read_only = os.open(clf.path, os.O_RDONLY)
        self.addCleanup(os.close, read_only)
        clf.fd = read_only  # pwrite: EBADF
        r = s.put_message(message(body=b"b" * 100))
        clf.fd = good_fd
        self.assertEqual(r.status, PutMessageStatus.UNKNOWN_ERROR)
        self.assertTrue(any("writing the CommitLog failed" in line for line in self.log.lines), self.log.lines)
        self.assertEqual((clf.wrote_position, s.get_max_offset_in_queue("TopicTest", 0)), (wrote, max_offset))
        r = s.put_message(message(body=b"c" * 100))
        self.assertTrue(r.is_ok())
        self.assertEqual(r.append_result.wrote_offset, wrote)
        got = s.get_message("g", "TopicTest", 0, 0, 10)
        self.assertEqual([bytes(m).count(b"a" * 100) + 2 * bytes(m).count(b"c" * 100) for m in got.message_buffers],
                         [1, 2])
        s.shutdown()

    def test_short_commitlog_write(self) -> None:
        """
        SYNC_FLUSH's pwrite writes part of a record and then fails (the file size limit here,
        a full disk in life): UNKNOWN_ERROR, the part zeroed, so neither the next put nor
        recovery after a crash finds half a record.
        """
        _require_native(self)
        s = open_store(temp_root(self), self.clock, flush_disk_type=FlushDiskType.SYNC_FLUSH)
        self.store.shutdown()
        self.store = s
        self.assertTrue(s.put_message(message(body=b"a" * 100)).is_ok())
        clf = s.commit_log.mapped_file_queue.last()
        wrote, max_offset = clf.wrote_position, s.get_max_offset_in_queue("TopicTest", 0)
        soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        try:
            resource.setrlimit(resource.RLIMIT_FSIZE, (wrote + 50, hard))
            r = s.put_message(message(body=b"b" * 1000))
        finally:
            resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
            signal.signal(signal.SIGXFSZ, handler)
        self.assertEqual(r.status, PutMessageStatus.UNKNOWN_ERROR)
        self.assertEqual((clf.wrote_position, s.get_max_offset_in_queue("TopicTest", 0)), (wrote, max_offset))
        self.assertEqual(os.pread(clf.fd, 1200, wrote), bytes(1200))
        s.simulate_crash()
        self.store = s = open_store(s.config.store_path_root_dir, self.clock, flush_disk_type=FlushDiskType.SYNC_FLUSH)
        self.assertEqual([m.body for m in read_all(s, "TopicTest", 0)], [b"a" * 100])
        r = s.put_message(message(body=b"c" * 100))
        self.assertEqual((r.status, r.append_result.wrote_offset), (PutMessageStatus.PUT_OK, wrote))
        s.shutdown()
