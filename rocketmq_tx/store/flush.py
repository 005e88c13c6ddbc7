# -*- test-case-name: rocketmq_tx.store.test.test_flush -*-
"""
Flushing without a scheduler of its own.

* :class:`GroupCommitService` (SYNC_FLUSH, Java ``GroupCommitService``): each acknowledged put
  registers the CommitLog offset it needs on disk and gets the future of the batch it joins
  (:class:`GroupCommitRequest`); one
  :meth:`GroupCommitService.commit` call takes the batch, does a single flush and completes it.
  A batch still not on disk ``syncFlushTimeout`` after its first put completes as
  FLUSH_DISK_TIMEOUT. While a :class:`StoreDriver` runs it, the fdatasync itself moves to the
  C accelerator's ``SyncFlusher``, a thread without the GIL that starts syncing as soon as a
  put asks for it; the Python side then only waits and completes the batches.
* :class:`FlushRealTimeService` (ASYNC_FLUSH, Java ``FlushRealTimeService``): a ``run_once``
  the broker calls every ``flushIntervalCommitLog`` ms.
* :class:`FlushManager`: a store's flushes, the CommitLog's by one of the two services above,
  the ConsumeQueues', the index's and the checkpoint's.
* :class:`StoreDriver`: a small stdlib-threading driver running all of the store's periodic
  work (and the CommitLog's :class:`~rocketmq_tx.store.pagewarmer.PageWarmer`), used by the
  broker and for standalone use and tests.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING

from rocketmq_tx.store.config import FlushDiskType
from rocketmq_tx.store.status import PutMessageStatus

if TYPE_CHECKING:
    from rocketmq_tx.store.store import DefaultMessageStore

__all__ = ["GroupCommitRequest", "GroupCommitService", "FlushRealTimeService", "FlushManager", "StoreDriver"]

log = logging.getLogger("rocketmq_tx.store")


class GroupCommitRequest:
    """
    The puts waiting for one group commit, and their shared future. One commit covers them
    all (it flushes everything written when it takes the batch), so one completion answers
    every waiter, and a put costs no future of its own.

    It answers the part of :class:`concurrent.futures.Future` the store and the broker use
    (:meth:`result`, :meth:`done`, :meth:`add_done_callback`), with less machinery: a
    waiting thread blocks on a lock of its own that the completion releases, instead of a
    shared condition that 64 woken writers would then queue for one by one.

    :ivar next_offset: the highest CommitLog offset a put of the batch needs on disk.
    :ivar deadline: ``syncFlushTimeout`` after the batch's first put.
    :ivar count: puts in the batch.
    """

    __slots__ = ("next_offset", "deadline", "count", "_status", "_waiters", "_callbacks", "_native", "epoch")

    _callbacks_lock = threading.Lock()

    def __init__(self, next_offset: int, deadline: float) -> None:
        self.next_offset = next_offset
        self.deadline = deadline
        self.count = 1
        self._status: PutMessageStatus | None = None
        self._waiters: list = []
        self._callbacks: list[Callable[[GroupCommitRequest], object]] = []
        #: the SyncFlusher syncing this batch, if any: a waiter can see its progress directly
        self._native = None
        #: the flusher's count of syncs begun when the batch opened
        self.epoch = 0

    def done(self) -> bool:
        return self._status is not None

    def result(self, timeout: float | None = None, offset: int | None = None) -> PutMessageStatus:
        """
        The batch's status; raises ``concurrent.futures.TimeoutError`` after *timeout*.

        :param offset: the caller's own end offset, when it knows it: with the C flusher it
            is done once that is on disk, without waiting for the batch's later puts.
        """
        status = self._status
        if status is not None:
            return status
        native = self._native
        # On disk is on disk: the waiter need not wait for the group commit thread's word.
        # Anything else (a failing disk, a timeout) is for that thread to decide, below.
        if native is not None and native.wait(self.next_offset if offset is None else offset,
                                              1.0 if timeout is None else timeout, True):
            return PutMessageStatus.PUT_OK
        waiter = threading.Lock()
        waiter.acquire()
        # Registered before the second look: set_result writes the status before it releases
        # the waiters, so either this look sees the status or the release reaches the waiter.
        self._waiters.append(waiter)
        if self._status is None and not waiter.acquire(timeout=-1 if timeout is None else timeout):
            if self._status is None:
                raise FutureTimeout()
        status = self._status
        assert status is not None
        return status

    def add_done_callback(self, fn: Callable[[GroupCommitRequest], object]) -> None:
        """Call *fn(self)* once done: from the completing thread, or at once if done already."""
        with self._callbacks_lock:
            if self._status is None:
                self._callbacks.append(fn)
                return
        fn(self)

    def set_result(self, status: PutMessageStatus) -> None:
        with self._callbacks_lock:
            self._status = status
            callbacks, self._callbacks = self._callbacks, []
        waiters = self._waiters
        while waiters:
            waiters.pop().release()
        for fn in callbacks:
            try:
                fn(self)
            except Exception:
                log.exception("group commit callback %r failed", fn)


class GroupCommitService:
    """
    :param flush: flushes everything written so far and returns the flushed offset.
    :param now: clock in seconds.
    :param timeout_ms: ``syncFlushTimeout``.
    """

    def __init__(self, flush: Callable[[], int], now: Callable[[], float], timeout_ms: int) -> None:
        self._flush = flush
        self._now = now
        self.timeout = timeout_ms / 1000.0
        self._cond = threading.Condition(threading.Lock())
        #: the batch new puts join; a commit takes it
        self._batch: GroupCommitRequest | None = None
        #: batches a commit took but could not complete (a failed flush), oldest first
        self._waiting: list[GroupCommitRequest] = []
        #: set by a driver thread that calls :meth:`commit` in a loop
        self.has_driver = False
        self.commits = 0
        #: the C accelerator's SyncFlusher while attached (:meth:`attach_native`)
        self.native = None
        self._on_native_flushed: Callable[[int], object] | None = None
        self._native_error = 0
        #: when the commit in progress took its batches (0.0: none in progress); read by
        #: other threads, written only by the committing one
        self.busy_since = 0.0

    def attach_native(self, flusher, on_flushed: Callable[[int], object]) -> None:
        """
        Let *flusher* (a started ``_speedups.SyncFlusher``) do the syncing: puts request
        their offsets from it, and :meth:`commit` waits for it instead of flushing, then
        reports each new flushed offset to *on_flushed*.
        """
        with self._cond:
            self.native = flusher
            self._on_native_flushed = on_flushed

    def detach_native(self):
        """Back to flushing from Python; returns the flusher (not stopped)."""
        with self._cond:
            flusher, self.native = self.native, None
            self._on_native_flushed = None
            for batch in self._waiting:
                batch._native = None
            if self._batch is not None:
                self._batch._native = None
        return flusher

    def put_request(self, next_offset: int) -> GroupCommitRequest:
        """Wait for *next_offset* to be on disk: the future of the batch the put joins."""
        with self._cond:
            batch = self._batch
            native = self.native
            if batch is not None and native is not None and batch.epoch != native.begun:
                # a sync began since the batch opened, and may cover it: later puts, which it
                # cannot cover, start a batch of their own instead of holding its waiters up
                self._waiting.append(batch)
                batch = self._batch = None
            if batch is None:
                batch = self._batch = GroupCommitRequest(next_offset, self._now() + self.timeout)
                if native is not None:
                    batch._native = native
                    batch.epoch = native.begun
                self._cond.notify()
            else:
                if next_offset > batch.next_offset:
                    batch.next_offset = next_offset
                batch.count += 1
                native = batch._native
        if native is not None:
            native.request(next_offset)
        return batch

    def flush_soon(self, offset: int) -> None:
        """A put that does not wait (``WAIT=false``): sync it without holding anyone up."""
        native = self.native
        if native is not None:
            native.request(offset)
        else:
            self.wakeup()

    def pending(self) -> int:
        with self._cond:
            return sum(b.count for b in self._waiting) + (self._batch.count if self._batch else 0)

    def wait_for_requests(self, timeout: float) -> bool:
        with self._cond:
            if self._batch is None:
                self._cond.wait(timeout)
            return self._batch is not None or bool(self._waiting)

    def wakeup(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def commit(self) -> int:
        """One flush for every pending put; return how many completed."""
        with self._cond:
            batches = self._waiting
            if self._batch is not None:
                batches.append(self._batch)
            self._batch = None
            self._waiting = []
        if not batches:
            return 0
        self.busy_since = self._now()
        try:
            return self._commit(batches)
        finally:
            self.busy_since = 0.0

    def _commit(self, batches: list[GroupCommitRequest]) -> int:
        native, on_flushed = self.native, self._on_native_flushed
        if native is not None and on_flushed is not None:
            # the C thread is already syncing: wait (without the GIL) until it passes the
            # oldest batch, then complete every batch it covers
            native.wait(min(b.next_offset for b in batches), self.timeout, True)
            flushed = native.flushed
            error = native.error
            if error != self._native_error:
                self._native_error = error
                if error:
                    log.error("group commit flush failed: %s", os.strerror(error))
            on_flushed(flushed)
        else:
            try:
                flushed = self._flush()
            except Exception:
                log.exception("group commit flush failed")
                flushed = -1
        self.commits += 1
        now = self._now()
        remaining = []
        done = 0
        for batch in batches:
            if flushed >= batch.next_offset:
                batch.set_result(PutMessageStatus.PUT_OK)
                done += batch.count
            elif now >= batch.deadline:
                log.error("sync flush of offset %d timed out (%d puts)", batch.next_offset, batch.count)
                batch.set_result(PutMessageStatus.FLUSH_DISK_TIMEOUT)
                done += batch.count
            else:
                remaining.append(batch)
        if remaining:
            with self._cond:
                self._waiting = remaining + self._waiting
        return done

    def fail_all(self, status: PutMessageStatus = PutMessageStatus.FLUSH_DISK_TIMEOUT) -> None:
        with self._cond:
            batches = self._waiting
            if self._batch is not None:
                batches.append(self._batch)
            self._batch = None
            self._waiting = []
        for batch in batches:
            batch.set_result(status)


class FlushRealTimeService:
    """ASYNC_FLUSH: flush when enough pages are dirty, fully at least every thorough interval."""

    def __init__(self, flush: Callable[[int], object], least_pages: int, thorough_interval_ms: int) -> None:
        self._flush = flush
        self.least_pages = least_pages
        self.thorough_interval = thorough_interval_ms / 1000.0
        self.last_thorough = 0.0

    def run_once(self, now: float) -> None:
        least = self.least_pages
        if now >= self.last_thorough + self.thorough_interval:
            self.last_thorough = now
            least = 0
        self._flush(least)


#: SYNC_FLUSH with the C flusher: unflushed bytes that start a sync before anyone waits for
#: one (a waiter starts it at once). About 27 of the bench's 1 KiB messages; bench/store.py
#: measured 16-64 KiB, and 32-48 KiB did best with 64 puts in flight.
SYNC_FLUSH_HOLD = 32 << 10


class FlushManager:
    """
    The flushes of one :class:`~rocketmq_tx.store.store.DefaultMessageStore` (Java 5's
    ``CommitLog.DefaultFlushManager`` and the store's ``FlushConsumeQueueService``): the
    CommitLog's, by the periodic :class:`FlushRealTimeService` or SYNC_FLUSH's
    :class:`GroupCommitService` (with the C ``SyncFlusher`` while a driver runs), and the
    ConsumeQueues', the index's and the checkpoint's. The store's flush methods call it.

    :ivar group_commit_service: SYNC_FLUSH's, else ``None``.
    :ivar flush_commit_log_service: ASYNC_FLUSH's periodic flush.
    """

    def __init__(self, store: DefaultMessageStore) -> None:
        self.store = store
        cfg = store.config
        self._lock = threading.Lock()
        self.group_commit_service: GroupCommitService | None = None
        if cfg.flush_disk_type is FlushDiskType.SYNC_FLUSH:
            self.group_commit_service = GroupCommitService(self._flush_all_commit_log, store.now,
                                                           cfg.sync_flush_timeout)
        self.flush_commit_log_service = FlushRealTimeService(
            self.flush_commit_log, cfg.flush_commit_log_least_pages, cfg.flush_commit_log_thorough_interval)
        self._last_cq_thorough = 0.0
        self._flush_probe = (0, 0)
        #: when the CommitLog flush in progress began (0.0: none)
        self._flush_began = 0.0

    def busy_since(self) -> float:
        """When the CommitLog flush or group commit in progress began (the earlier of the two,
        seconds on the store's clock); 0.0 when neither is running."""
        gc = self.group_commit_service
        began = [t for t in (self._flush_began, gc.busy_since if gc is not None else 0.0) if t]
        return min(began) if began else 0.0

    # -- the CommitLog

    def _flush_all_commit_log(self) -> int:
        return self.flush_commit_log(0)

    def flush_commit_log(self, least_pages: int = 0) -> int:
        """Flush the CommitLog if *least_pages* dirty pages (0 = any); return the flushed offset."""
        commit_log = self.store.commit_log
        with self._lock:
            self._flush_began = self.store.now()
            try:
                commit_log.flush(least_pages)
            finally:
                self._flush_began = 0.0
            ts = commit_log.mapped_file_queue.store_timestamp
            checkpoint = self.store.checkpoint
            if ts and checkpoint is not None:
                checkpoint.physic_msg_timestamp = ts
            return commit_log.flushed_where

    def attach_sync_flusher(self, flusher_class) -> None:
        """
        SYNC_FLUSH with the C accelerator: start a *flusher_class* (``_speedups.SyncFlusher``)
        thread and hand it the group commit's fdatasync.
        """
        gc = self.group_commit_service
        if gc is None or flusher_class is None or gc.native is not None:
            return
        store = self.store
        with store.put_lock:
            queue = store.commit_log.mapped_file_queue
            flusher = flusher_class(queue.flushed_where, SYNC_FLUSH_HOLD)
            for f in queue.files:
                if f.file_tail_offset > queue.flushed_where:
                    flusher.add_file(f.fd, f.file_from_offset, f.file_tail_offset)
            queue.on_create = lambda f: flusher.add_file(f.fd, f.file_from_offset, f.file_tail_offset)
            self._flush_probe = self._timestamp_probe()
            flusher.start()
            gc.attach_native(flusher, self.native_flushed)

    def detach_sync_flusher(self) -> None:
        """Stop the C flusher (after it syncs what was asked of it); Python flushes again."""
        gc = self.group_commit_service
        if gc is None or gc.native is None:
            return
        store = self.store
        with store.put_lock:
            store.commit_log.mapped_file_queue.on_create = None
            flusher = gc.detach_native()
        flusher.stop()
        self.native_flushed(flusher.flushed)

    def _timestamp_probe(self) -> tuple[int, int]:
        # the timestamp first: the record that set it ends at or before the offset read next
        commit_log = self.store.commit_log
        last = commit_log.mapped_file_queue.last()
        ts = last.store_timestamp if last is not None else 0
        return ts, commit_log.get_max_offset()

    def native_flushed(self, flushed: int) -> None:
        """The C flusher synced up to *flushed*: the Python bookkeeping a flush would do."""
        with self._lock:
            self.store.commit_log.mapped_file_queue.mark_flushed(flushed)
            # the checkpoint's physical timestamp may lag (recovery then starts earlier) but
            # never lead the disk: it moves only to a timestamp read before a covered offset
            ts, end = self._flush_probe
            checkpoint = self.store.checkpoint
            if ts and flushed >= end and checkpoint is not None:
                checkpoint.physic_msg_timestamp = ts
                self._flush_probe = self._timestamp_probe()
            elif not ts:
                self._flush_probe = self._timestamp_probe()

    # -- the ConsumeQueues, the index and the checkpoint

    def flush_consume_queue(self, now: float, thorough: bool = False) -> None:
        """
        Java ``FlushConsumeQueueService.doFlush``: flush ConsumeQueues with at least
        ``flushConsumeQueueLeastPages`` dirty pages (all at least every thorough interval), the
        index, and the checkpoint.
        """
        store = self.store
        cfg = store.config
        least = cfg.flush_consume_queue_least_pages
        if thorough or now >= self._last_cq_thorough + cfg.flush_consume_queue_thorough_interval / 1000:
            self._last_cq_thorough = now
            least = 0
        logics_ts = store.last_dispatch_timestamp
        for queues in list(store.consume_queue_table.values()):
            for cq in list(queues.values()):
                cq.flush(least)
        cp = store.checkpoint
        if cp is None:
            return
        if cfg.message_index_enable:
            ts = store.index_service.flush()
            if ts:
                cp.index_msg_timestamp = ts
        if logics_ts:
            cp.logics_msg_timestamp = logics_ts
        cp.flush()


class StoreDriver:
    """
    Runs a store's periodic work in daemon threads: group commit (SYNC_FLUSH) or the
    real-time flush (ASYNC_FLUSH), ConsumeQueue flush and clean-up.
    """

    def __init__(self, store: DefaultMessageStore, clean: bool = True) -> None:
        self.store = store
        self.clean = clean
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        store = self.store
        gc = store.group_commit_service
        if gc is not None:
            gc.has_driver = True
            store.attach_sync_flusher()
            self._spawn("group-commit", self._group_commit_loop)
        else:
            self._spawn("flush-commitlog", self._periodic(store.config.flush_interval_commit_log / 1000.0,
                                                           store.flush_commit_log_service.run_once))
        self._spawn("flush-cq", self._periodic(store.config.flush_interval_consume_queue / 1000.0,
                                               store.flush_consume_queue))
        if store.page_warmer.enabled:
            self._spawn("warm", self._warm_loop)
        if self.clean:
            self._spawn("clean", self._periodic(store.config.clean_resource_interval / 1000.0,
                                                store.delete_expired))

    def _spawn(self, name: str, target: Callable[[], None]) -> None:
        t = threading.Thread(target=target, name=f"store-{name}", daemon=True)
        t.start()
        self._threads.append(t)

    def _group_commit_loop(self) -> None:
        gc = self.store.group_commit_service
        assert gc is not None
        while not self._stop.is_set():
            gc.wait_for_requests(0.01)
            try:
                gc.commit()
            except Exception:
                log.exception("group commit failed")

    def _warm_loop(self) -> None:
        warmer = self.store.page_warmer
        while not self._stop.is_set():
            try:
                warmer.run_once(0.5)
            except Exception:
                log.exception("page warming failed")
                return

    def _periodic(self, interval: float, fn: Callable[[float], object]) -> Callable[[], None]:
        def loop() -> None:
            while not self._stop.wait(interval):
                try:
                    fn(self.store.now())
                except Exception:
                    log.exception("store task %s failed", fn)
        return loop

    def stop(self) -> None:
        self._stop.set()
        self.store.page_warmer.wakeup()
        gc = self.store.group_commit_service
        if gc is not None:
            gc.wakeup()
        for t in self._threads:
            t.join(5)
        if gc is not None:
            self.store.detach_sync_flusher()
            gc.has_driver = False
            gc.commit()
        self._threads = []
