# -*- test-case-name: rocketmq_tx.store.test.test_native_append -*-
"""
The put's common case in one call of the C accelerator (``_speedups.append_message``): the
record, its ConsumeQueue entry and its index entries, written by C and only the positions
moved (docs/architecture.md, "The C accelerator").

:class:`NativeAppender` owns what that call needs besides the message: the current CommitLog,
ConsumeQueue and index files, the CommitLog file's descriptor under SYNC_FLUSH, the store
host's packed address and the ConsumeQueues by queue key, so that the store's put path hands
it the message and what it computed for it. Its Python twin is the store's general path
(:meth:`DefaultMessageStore._append_general <rocketmq_tx.store.store.DefaultMessageStore>`),
which every put the call declines takes; the bytes are the same either way
(``store/test/test_native_append.py``).
"""

from __future__ import annotations

from collections.abc import Callable

from rocketmq_tx.common.messagecodec import pack_host
from rocketmq_tx.common.native import body_crc
from rocketmq_tx.store.commitlog import CommitLog, MessageExtBrokerInner
from rocketmq_tx.store.config import MessageStoreConfig
from rocketmq_tx.store.consumequeue import ConsumeQueue
from rocketmq_tx.store.index import IndexService
from rocketmq_tx.store.pagewarmer import NOT_ZEROING, PageWarmer

__all__ = ["NativeAppender", "CommitLogWriteError"]

#: a CommitLog record's bytes besides its body, topic and properties, at most (124 with IPv6 hosts)
RECORD_OVERHEAD_MAX = 128


class CommitLogWriteError(OSError):
    """The C call's ``pwrite`` of the record failed (SYNC_FLUSH); nothing was written or moved."""


class NativeAppender:
    """
    The one-call append, for a store's put path under its put lock.

    :param native: ``_speedups.append_message``.
    :param config: the store's settings, live (``messageIndexEnable`` may change while it runs).
    :param queues: the store's ConsumeQueue table (topic -> queue id -> queue), read on a miss.
    :param max_record: the largest record the call may write (larger ones take the general path).
    :param by_fd: write the record with ``pwrite`` on the CommitLog file's descriptor instead of
        through its mapping (SYNC_FLUSH; see docs/architecture.md).
    :ivar store_host_bytes: the packed address written as STOREHOSTADDRESS when a message has
        none of its own.
    """

    __slots__ = ("native", "store_host_bytes", "_config", "_cl_files", "_queues", "_table", "_index", "_warmer",
                 "_max_record", "_by_fd")

    def __init__(self, native: Callable, config: MessageStoreConfig, commit_log: CommitLog,
                 queues: dict[str, dict[int, ConsumeQueue]], index_service: IndexService, page_warmer: PageWarmer,
                 store_host_bytes: bytes, max_record: int, by_fd: bool) -> None:
        self.native = native
        self._config = config
        self.store_host_bytes = store_host_bytes
        # the MappedFileQueue: its file list is replaced, never changed in place, so it is
        # read at every call
        self._cl_files = commit_log.mapped_file_queue
        #: "topic-queueId" (the store's topic_queue_table key) -> ConsumeQueue, one lookup a put
        self._queues: dict[str, ConsumeQueue] = {}
        self._table = queues
        self._index = index_service
        self._warmer = page_warmer
        self._max_record = max_record
        self._by_fd = by_fd

    def forget_queues(self) -> None:
        """Drop the cached ConsumeQueues: the store calls this whenever it removes one."""
        self._queues.clear()

    def append(self, msg: MessageExtBrokerInner, key: str, queue_offset: int, store_ts: int,
               topic_bytes: bytes, keys: str, uniq: str | None, tags: str | None):
        """
        Append *msg* (a NOT_TYPE or COMMIT message outside SCHEDULE_TOPIC_XXXX) at
        *queue_offset* of its queue *key*, when the current CommitLog, ConsumeQueue and index
        files all have room and the queue is dense.

        :return: ``(physical offset, size, tags code)``, or ``None`` with nothing written: the
            store's general path handles it (a queue or file to create or roll over, a gap).
        :raises CommitLogWriteError: the ``pwrite`` failed; nothing was moved.
        """
        cq = self._queues.get(key)
        if cq is None:
            queues = self._table.get(msg.topic)
            cq = queues.get(msg.queue_id) if queues is not None else None
            if cq is None:  # the general path creates it
                return None
            self._queues[key] = cq
        cq_files = cq.mapped_file_queue.files
        cl_files = self._cl_files.files
        if not cq_files or not cl_files:
            return None
        index = self._index
        if self._config.message_index_enable:
            index_files = index.files
            if not index_files:
                return None
            xf = index_files[-1]
        else:
            xf = None
        clf = cl_files[-1]
        warmer = self._warmer
        if warmer.zero_from != NOT_ZEROING:
            warmer.clear_for(clf, len(msg.body) + len(msg.properties) + len(topic_bytes) + RECORD_OVERHEAD_MAX)
        try:
            placed = self.native(
                msg, clf, cq_files[-1], cq, xf, queue_offset, store_ts, topic_bytes, pack_host(*msg.born_host),
                self.store_host_bytes if msg.store_host is None else pack_host(*msg.store_host), keys, uniq, tags,
                index.index_tags, body_crc(msg.body) & 0x7FFFFFFF, self._max_record, clf.fd if self._by_fd else -1)
        except OSError as e:
            raise CommitLogWriteError(*e.args) from e
        if placed is not None and placed[0] + placed[1] > warmer.mark:
            warmer.note_append(clf, clf.wrote_position)
        return placed
