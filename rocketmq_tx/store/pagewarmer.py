# -*- test-case-name: rocketmq_tx.store.test.test_mappedfile -*-
"""
The CommitLog's :class:`PageWarmer`: its pages prepared just ahead of the appends, from a
driver thread (see the class).
"""

from __future__ import annotations

import logging
import os
import threading

from rocketmq_tx.common.native import speedups
from rocketmq_tx.store.formats import END_FILE_MIN_BLANK_LENGTH
from rocketmq_tx.store.mappedfile import OS_PAGE_SIZE, MappedFile

__all__ = ["NOT_ZEROING", "PageWarmer"]

log = logging.getLogger("rocketmq_tx.store")

#: :attr:`PageWarmer.zero_from` while no zeroing runs
NOT_ZEROING = 1 << 62


class PageWarmer:
    """
    Prepares the CommitLog's pages just ahead of its write position from another thread, so
    the appending thread does not pay for it (Java's AllocateMappedFileService, with
    ``warmMapedFileEnable``, pre-touches whole files for the same reason).

    The put path calls :meth:`note_append` (one comparison per put; a request every
    :attr:`window` bytes); a driver thread calls :meth:`run_once` in a loop
    (:class:`~rocketmq_tx.store.flush.StoreDriver`). The work runs in the C accelerator with
    the GIL released; without it, or on a kernel without the call it needs, the warmer stays
    off. One of two modes:

    * populating (ASYNC_FLUSH): ``MADV_POPULATE_WRITE``. A first write into a page of the
      mapping costs a fault that zeroes the page, about a seventh of an append's time.
      Nothing is written, so a page being appended to concurrently is never touched.
    * ``zero`` (SYNC_FLUSH, whose appends use pwrite): writes zeros ahead and waits for their
      write-back (``_speedups.zero_fill``), so the file's extents are already *written* when
      the records arrive and a group commit's fdatasync is one data write and a cache flush,
      not also a journal commit converting unwritten extents (the C flusher alone, 64 writes
      in flight: 0.55-0.78 of raw fdatasync'd write bandwidth before, 1.0-1.4 after). Populating
      for writing would dirty the window, and the next group commit would write it while its
      puts wait. Zeros can overwrite records, so this mode takes the put lock to claim each
      chunk beyond the write position, and the put path waits (:meth:`wait_clear`) in the
      rare case that it reaches a claimed chunk (:attr:`zero_from`).
    """

    def __init__(self, window: int = 8 << 20, zero: bool = False, put_lock: threading.Lock | None = None,
                 margin: int = 1 << 20, chunk: int = 1 << 20) -> None:
        if zero and put_lock is None:
            raise ValueError("zeroing ahead needs the put lock")
        self.window = window
        #: write zeros instead of populating (needs *put_lock*, which every CommitLog append holds)
        self.zero = zero
        self._put_lock = put_lock
        #: zeroing starts at least this far past the write position, in chunks of this size
        self.margin = margin
        self.chunk = chunk
        self.enabled = speedups is not None and (not self.zero or hasattr(speedups, "zero_fill"))
        #: the physical offset whose crossing asks for the next window
        self.mark = 0
        #: the physical offset where the chunk being zeroed starts (:data:`NOT_ZEROING`: none);
        #: set and read under the put lock
        self.zero_from = NOT_ZEROING
        self._cond = threading.Condition(threading.Lock())
        self._job: tuple[MappedFile, int, int] | None = None
        #: the physical offset the last request reached
        self._requested_to = 0
        #: bytes populated (or zeroed) so far
        self.warmed = 0

    def note_append(self, f: MappedFile, end_pos: int) -> None:
        """After an append to *f* ending at *end_pos* (call under the put lock)."""
        if f.file_from_offset + end_pos <= self.mark or not self.enabled:
            return
        self.mark = f.file_from_offset + end_pos + self.window
        # from where the last request of this file ended: each page is populated once
        start = max(end_pos, self._requested_to - f.file_from_offset)
        end = min(f.file_size, end_pos + 2 * self.window)
        self._requested_to = f.file_from_offset + end
        if start >= end:
            return
        with self._cond:
            pending = self._job
            if pending is not None and pending[0] is f:  # not run yet: extend it
                start = min(start, pending[1])
            self._job = (f, start, end)
            self._cond.notify()

    def run_once(self, timeout: float) -> None:
        """Warm the latest requested range, waiting up to *timeout* for a request."""
        with self._cond:
            if self._job is None:
                self._cond.wait(timeout)
            job, self._job = self._job, None
        if job is None:
            return
        assert speedups is not None  # jobs are queued only while enabled
        f, start, end = job
        if self.zero:
            self._zero(f, start, end)
            return
        try:
            err = speedups.populate(f.mm, start, end)
        except (ValueError, BufferError):  # the file was closed meanwhile
            return
        if err:
            self._fail(err)
            return
        self.warmed += end - start

    def _zero(self, f: MappedFile, start: int, end: int) -> None:
        assert speedups is not None and self._put_lock is not None
        page = OS_PAGE_SIZE
        at = start
        while at < end:
            with self._put_lock:
                if not f.is_available():
                    return
                # never where an append may land before the chunk is done: the put path
                # waits only if it comes within a chunk of here
                at = max(at, -(-(f.wrote_position + self.margin) // page) * page)
                stop = min(end, at + self.chunk)
                if at >= stop:
                    return
                # a descriptor of its own: closing the file meanwhile cannot redirect the zeros
                fd = os.dup(f.fd)
                self.zero_from = f.file_from_offset + at
            try:
                err = speedups.zero_fill(fd, at, stop)
            finally:
                os.close(fd)
                with self._cond:
                    self.zero_from = NOT_ZEROING
                    self._cond.notify_all()
            if err:
                self._fail(err)
                return
            self.warmed += stop - at
            at = stop

    def clear_for(self, last: MappedFile | None, size: int) -> None:
        """
        Under the put lock, before *size* bytes go at the end of *last* (the CommitLog's last
        file, ``None`` before the first): wait while a chunk where they, or a BLANK filler
        ending *last*, may land is being zeroed.
        """
        if self.zero_from == NOT_ZEROING:  # the common case
            return
        if last is None or last.file_from_offset + last.wrote_position + size + END_FILE_MIN_BLANK_LENGTH \
                > self.zero_from:
            self.wait_clear()

    def wait_clear(self) -> None:
        """Under the put lock, when an append may reach :attr:`zero_from`: wait for that chunk."""
        with self._cond:
            while self.zero_from != NOT_ZEROING:
                self._cond.wait()

    def _fail(self, err: int) -> None:
        how = "zeroing ahead" if self.zero else "madvise(MADV_POPULATE_WRITE)"
        log.info("page warming is off: %s failed (%s)", how, os.strerror(err))
        self.enabled = False

    def wakeup(self) -> None:
        with self._cond:
            self._cond.notify_all()
