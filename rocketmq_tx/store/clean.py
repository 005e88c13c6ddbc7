# -*- test-case-name: rocketmq_tx.store.test.test_expiry -*-
"""
Clean-up (Java ``DefaultMessageStore.CleanCommitLogService`` and ``CleanConsumeQueueService``):
CommitLog files past ``fileReservedTime`` or beyond ``diskMaxUsedSpaceRatio``, then the
ConsumeQueue and index files that only point below the CommitLog's new start; and the
ConsumeQueues the broker's admin requests drop (``cleanUnusedTopic``,
``cleanExpiredConsumerQueue``). Nothing here schedules itself: the broker (or
:class:`~rocketmq_tx.store.flush.StoreDriver`) calls :meth:`CleanService.delete_expired`.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from rocketmq_tx.store.commitlog import RMQ_SYS_SCHEDULE_TOPIC
from rocketmq_tx.store.timer.hook import TIMER_TOPIC

if TYPE_CHECKING:
    from rocketmq_tx.store.store import DefaultMessageStore

__all__ = ["disk_partition_used_percent", "CleanService", "disk_used_ratio"]

log = logging.getLogger("rocketmq_tx.store")

#: Java ``TopicValidator.RMQ_SYS_TRANS_OP_HALF_TOPIC``: kept by ``cleanUnusedTopic``
RMQ_SYS_TRANS_OP_HALF_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
#: Java ``MixAll.LMQ_PREFIX``: light message queues, kept by ``cleanUnusedTopic``
LMQ_PREFIX = "%LMQ%"
#: how many ``delete_expired`` calls delete regardless of the hour after a manual request (Java's 20)
MANUAL_DELETE_TIMES = 20


def _disk_space(path: str) -> tuple[int, int, int] | None:
    """*path*'s file system as (total, free, available to us) bytes; ``None`` if unknown.
    Free counts the blocks reserved for root, as Java's ``File.getFreeSpace`` (f_bfree)."""
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    total = st.f_blocks * st.f_frsize
    if total <= 0:
        return None
    return total, st.f_bfree * st.f_frsize, st.f_bavail * st.f_frsize


def disk_used_ratio(path: str) -> float:
    """Java ``UtilAll.getDiskPartitionSpaceUsedPercent``: used fraction of *path*'s disk, -1 if unknown."""
    space = _disk_space(path)
    if space is None:
        return -1.0
    total, free, _ = space
    return (total - free) / total


def disk_partition_used_percent(path: str) -> float:
    """
    Java 4.9.8 / 5.x ``UtilAll.getDiskPartitionSpaceUsedPercent`` as the runtime info shows it:
    used / (used + available to us), rounded up to hundredths; -1 if *path* does not exist.
    """
    space = _disk_space(path)
    if space is None:
        return -1.0
    total, free, available = space
    used = total - free
    entire = used + available
    if entire <= 0:
        return -1.0
    # integer arithmetic, as Java's: the percentage rounded up, then as a fraction
    return (used * 100 // entire + (1 if used * 100 % entire else 0)) / 100.0


class CleanService:
    """
    The clean-up of one :class:`~rocketmq_tx.store.store.DefaultMessageStore`.

    :param disk_used_ratio: returns the used fraction of the CommitLog's disk (for tests).
    :ivar manual_delete: ``delete_expired`` calls left that delete at any hour
        (:meth:`execute_delete_files_manually`).
    """

    def __init__(self, store: DefaultMessageStore, disk_used_ratio: Callable[[str], float] = disk_used_ratio) -> None:
        self.store = store
        self.disk_used_ratio = disk_used_ratio
        self.manual_delete = 0
        self._last_physical_min_offset = 0

    def delete_expired(self, now: float | None = None) -> int:
        """
        Java ``CleanCommitLogService`` + ``CleanConsumeQueueService``: delete CommitLog files
        older than ``fileReservedTime`` hours when the hour is in ``deleteWhen`` or the disk is
        fuller than ``diskMaxUsedSpaceRatio`` (above 85 % even unexpired files go), then the
        ConsumeQueue and index files that only point below the new minimum.

        :return: the number of CommitLog files deleted.
        """
        store = self.store
        now = store.now() if now is None else now
        cfg = store.config
        hour = time.localtime(now).tm_hour
        time_up = hour in cfg.delete_hours()
        ratio = self.disk_used_ratio(cfg.store_path_commit_log)
        # -1 (unknown, e.g. no CommitLog directory yet) is not "full", as in Java.
        space_full = ratio > cfg.disk_max_used_space_ratio / 100.0
        clean_immediately = ratio > 0.85
        manual = self.manual_delete > 0
        deleted = 0
        if time_up or space_full or manual:
            if manual:
                self.manual_delete -= 1
            if space_full:
                log.warning("disk use %.0f%% is above diskMaxUsedSpaceRatio %d%%; cleaning",
                            ratio * 100, cfg.disk_max_used_space_ratio)
            deleted = store.commit_log.mapped_file_queue.delete_expired_file_by_time(
                cfg.file_reserved_time * 3600, now, clean_immediately)
        self.delete_expired_logics()
        return deleted

    def execute_delete_files_manually(self) -> None:
        """Java ``executeDeleteFilesManually``: the next calls delete expired files at any hour."""
        self.manual_delete = MANUAL_DELETE_TIMES

    def delete_expired_logics(self) -> None:
        """ConsumeQueue and index files that only point below the CommitLog's first byte."""
        store = self.store
        min_offset = store.commit_log.get_min_offset()
        if min_offset <= self._last_physical_min_offset:
            return
        self._last_physical_min_offset = min_offset
        for queues in list(store.consume_queue_table.values()):
            for cq in list(queues.values()):
                cq.delete_expired_file(min_offset)
        store.index_service.delete_expired_file(min_offset)

    def clean_unused_topic(self, keep: Iterable[str], only: str | None = None) -> int:
        """
        Java ``DefaultMessageStore.cleanUnusedTopic``: destroy the ConsumeQueues of topics not
        in *keep* (the schedule, transaction-op and LMQ topics always stay); *only* limits it to
        one topic, which may be an LMQ one. Call under the store's put lock.

        :return: the number of queues destroyed.
        """
        store = self.store
        keep = set(keep)
        removed = 0
        for topic in list(store.consume_queue_table):
            if only is not None and topic != only:
                continue
            # the timer topic too: Java keeps it in its topic table, ours has no entry for it
            if topic in keep or topic in (RMQ_SYS_SCHEDULE_TOPIC, RMQ_SYS_TRANS_OP_HALF_TOPIC, TIMER_TOPIC):
                continue
            if only is None and topic.startswith(LMQ_PREFIX):
                continue
            queues = store.consume_queue_table.pop(topic)
            for qid, cq in queues.items():
                cq.destroy()
                store.topic_queue_table.pop(f"{topic}-{qid}", None)
                removed += 1
        return removed

    def clean_expired_consume_queue(self) -> int:
        """
        Java ``cleanExpiredConsumerQueue``: destroy the ConsumeQueues whose last entry points
        below the CommitLog's first byte (their messages are all gone). Call under the store's
        put lock.

        :return: the number of queues destroyed.
        """
        store = self.store
        min_phy = store.commit_log.get_min_offset()
        removed = 0
        for topic in list(store.consume_queue_table):
            if topic == RMQ_SYS_SCHEDULE_TOPIC:
                continue
            queues = store.consume_queue_table[topic]
            for qid, cq in list(queues.items()):
                last = cq.get_max_offset_in_queue() - 1
                entry = cq.get_entry(last) if last >= cq.get_min_offset_in_queue() else None
                if entry is None:
                    continue  # Java: "maxCLOffsetInConsumeQueue == -1", left alone
                if entry[0] + entry[1] < min_phy:
                    store.topic_queue_table.pop(f"{topic}-{qid}", None)
                    cq.destroy()
                    del queues[qid]
                    removed += 1
            if not queues:
                del store.consume_queue_table[topic]
        return removed
