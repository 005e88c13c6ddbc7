# -*- test-case-name: rocketmq_tx.store.test.test_flush -*-
"""
Flushing without a scheduler of its own.

* :class:`GroupCommitService` (SYNC_FLUSH, Java ``GroupCommitService``): each acknowledged put
  registers the CommitLog offset it needs on disk and gets a
  :class:`concurrent.futures.Future`; one :meth:`GroupCommitService.commit` call does a single
  flush and completes every request it covered. Requests still uncovered after
  ``syncFlushTimeout`` complete as FLUSH_DISK_TIMEOUT.
* :class:`FlushRealTimeService` (ASYNC_FLUSH, Java ``FlushRealTimeService``): a ``run_once``
  the broker calls every ``flushIntervalCommitLog`` ms.
* :class:`StoreDriver`: a small stdlib-threading driver running all of the store's periodic
  work, for standalone use and tests. The Twisted broker drives the same methods itself.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future
from typing import TYPE_CHECKING, Callable

from rocketmq_tx.store.status import PutMessageStatus

if TYPE_CHECKING:
    from rocketmq_tx.store.store import DefaultMessageStore

__all__ = ["GroupCommitRequest", "GroupCommitService", "FlushRealTimeService", "StoreDriver"]

log = logging.getLogger("rocketmq_tx.store")


class GroupCommitRequest:
    __slots__ = ("next_offset", "deadline", "future")

    def __init__(self, next_offset: int, deadline: float) -> None:
        self.next_offset = next_offset
        self.deadline = deadline
        self.future: Future[PutMessageStatus] = Future()


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
        self._cond = threading.Condition()
        self._requests: list[GroupCommitRequest] = []
        #: set by a driver thread that calls :meth:`commit` in a loop
        self.has_driver = False
        self.commits = 0

    def put_request(self, next_offset: int) -> "Future[PutMessageStatus]":
        req = GroupCommitRequest(next_offset, self._now() + self.timeout)
        with self._cond:
            self._requests.append(req)
            self._cond.notify()
        return req.future

    def pending(self) -> int:
        with self._cond:
            return len(self._requests)

    def wait_for_requests(self, timeout: float) -> bool:
        with self._cond:
            if not self._requests:
                self._cond.wait(timeout)
            return bool(self._requests)

    def wakeup(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def commit(self) -> int:
        """One flush for every pending request; return how many completed."""
        with self._cond:
            requests = self._requests
            self._requests = []
        if not requests:
            return 0
        try:
            flushed = self._flush()
        except Exception:
            log.exception("group commit flush failed")
            flushed = -1
        self.commits += 1
        now = self._now()
        remaining = []
        done = 0
        for req in requests:
            if flushed >= req.next_offset:
                req.future.set_result(PutMessageStatus.PUT_OK)
                done += 1
            elif now >= req.deadline:
                log.error("sync flush of offset %d timed out", req.next_offset)
                req.future.set_result(PutMessageStatus.FLUSH_DISK_TIMEOUT)
                done += 1
            else:
                remaining.append(req)
        if remaining:
            with self._cond:
                self._requests = remaining + self._requests
        return done

    def fail_all(self, status: PutMessageStatus = PutMessageStatus.FLUSH_DISK_TIMEOUT) -> None:
        with self._cond:
            requests, self._requests = self._requests, []
        for req in requests:
            req.future.set_result(status)


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


class StoreDriver:
    """
    Runs a store's periodic work in daemon threads: group commit (SYNC_FLUSH) or the
    real-time flush (ASYNC_FLUSH), ConsumeQueue flush and clean-up.
    """

    def __init__(self, store: "DefaultMessageStore", clean: bool = True) -> None:
        self.store = store
        self.clean = clean
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        store = self.store
        gc = store.group_commit_service
        if gc is not None:
            gc.has_driver = True
            self._spawn("group-commit", self._group_commit_loop)
        else:
            self._spawn("flush-commitlog", self._periodic(store.config.flush_interval_commit_log / 1000.0,
                                                           store.flush_commit_log_service.run_once))
        self._spawn("flush-cq", self._periodic(store.config.flush_interval_consume_queue / 1000.0,
                                               store.flush_consume_queue))
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
        gc = self.store.group_commit_service
        if gc is not None:
            gc.wakeup()
        for t in self._threads:
            t.join(5)
        if gc is not None:
            gc.has_driver = False
            gc.commit()
        self._threads = []
