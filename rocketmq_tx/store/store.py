# -*- test-case-name: rocketmq_tx.store.test.test_store -*-
"""
DefaultMessageStore (Java ``DefaultMessageStore``): CommitLog, ConsumeQueues, index and
checkpoint behind one synchronous API.

Puts are serialised by one lock; each put appends the record and dispatches it to its
ConsumeQueue and the index before returning, so a read right after a put sees the message.
Nothing here schedules itself: flushing, group commit and clean-up are methods the broker (or
:class:`~rocketmq_tx.store.flush.StoreDriver`) calls.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import threading
import time
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Callable, Optional, Protocol

from rocketmq_tx.common.errors import MessageFormatError
from rocketmq_tx.common.message import MessageConst, MessageExt, properties_to_string
from rocketmq_tx.common.messagecodec import decode_message, java_string_hash, pack_host
from rocketmq_tx.common.native import body_crc, speedups
from rocketmq_tx.common.sysflag import MessageSysFlag
from rocketmq_tx.common.validators import is_store_name_safe
from rocketmq_tx.store.checkpoint import StoreCheckpoint
from rocketmq_tx.store.commitlog import (
    RMQ_SYS_SCHEDULE_TOPIC,
    CommitLog,
    DispatchRequest,
    MessageExtBatch,
    MessageExtBrokerInner,
    _tags_hash,
    encode_inner,
    get_property,
    iter_batch,
    offset_msg_id,
    tags_code_of,
)
from rocketmq_tx.store.config import BrokerRole, FlushDiskType, MessageStoreConfig
from rocketmq_tx.store.consumequeue import FILLER_SIZE, ConsumeQueue
from rocketmq_tx.store.flush import FlushRealTimeService, GroupCommitService
from rocketmq_tx.store.formats import CQ_ENTRY, CQ_STORE_UNIT_SIZE, END_FILE_MIN_BLANK_LENGTH
from rocketmq_tx.store.index import IndexService
from rocketmq_tx.store.mappedfile import NOT_ZEROING, PageWarmer
from rocketmq_tx.store.status import (
    AppendMessageResult,
    AppendMessageStatus,
    GetMessageResult,
    GetMessageStatus,
    PutMessageResult,
    PutMessageStatus,
)

__all__ = ["DefaultMessageStore", "MessageFilter", "TagsFilter", "QueryMessageResult"]

log = logging.getLogger("rocketmq_tx.store")

_TX_MASK = MessageSysFlag.TRANSACTION_MASK
_NOT_TYPE = MessageSysFlag.TRANSACTION_NOT_TYPE
_COMMIT = MessageSysFlag.TRANSACTION_COMMIT_TYPE
_MAX_TOPIC = 127
_MAX_PROPS = 0x7FFF
#: SYNC_FLUSH with the C flusher: unflushed bytes that start a sync before anyone waits for
#: one (a waiter starts it at once). About 27 of the bench's 1 KiB messages; bench/store.py
#: measured 16-64 KiB, and 32-48 KiB did best with 64 puts in flight.
SYNC_FLUSH_HOLD = 32 << 10
#: a CommitLog record's bytes besides its body, topic and properties, at most (124 with IPv6 hosts)
_RECORD_OVERHEAD_MAX = 128


class MessageFilter(Protocol):
    def is_matched_by_consume_queue(self, tags_code: int) -> bool: ...


class TagsFilter:
    """Subscription by tag hash codes (``None`` = every tag, Java's ``*``)."""

    def __init__(self, tags: Optional[list[str]] = None) -> None:
        self.codes = None if tags is None else {java_string_hash(t) for t in tags}

    def is_matched_by_consume_queue(self, tags_code: int) -> bool:
        return self.codes is None or tags_code in self.codes


@dataclass
class QueryMessageResult:
    """Java ``QueryMessageResult``: records found by key."""

    message_buffers: list = field(default_factory=list)
    index_last_update_timestamp: int = 0
    index_last_update_phyoffset: int = 0
    buffer_total_size: int = 0


def _total_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 8 << 30


def disk_used_ratio(path: str) -> float:
    """Java ``UtilAll.getDiskPartitionSpaceUsedPercent``: used fraction of *path*'s disk, -1 if unknown."""
    try:
        st = os.statvfs(path)
    except OSError:
        return -1.0
    total = st.f_blocks * st.f_frsize
    if total <= 0:
        return -1.0
    # Java's File.getFreeSpace counts the blocks reserved for root as free (f_bfree).
    free = st.f_bfree * st.f_frsize
    return (total - free) / total


class DefaultMessageStore:
    """
    :param config: the settings.
    :param now: clock in seconds (``time.time`` by default); store timestamps are
        ``int(now() * 1000)``.
    :param disk_used_ratio: returns the used fraction of the CommitLog's disk (for tests).
    """

    def __init__(self, config: MessageStoreConfig, now: Callable[[], float] = time.time,
                 disk_used_ratio: Callable[[str], float] = disk_used_ratio) -> None:
        self.config = config
        self.now = now
        self._disk_used_ratio = disk_used_ratio
        self.commit_log = CommitLog(config.store_path_commit_log, config.mapped_file_size_commit_log)
        self.consume_queue_table: dict[str, dict[int, ConsumeQueue]] = {}
        self.topic_queue_table: dict[str, int] = {}
        self.index_service = IndexService(config.store_path_index, config.max_hash_slot_num,
                                          config.max_index_num, self.now_ms, config.index_tags)
        self.checkpoint: Optional[StoreCheckpoint] = None
        self.delay_levels = config.delay_levels()
        self.max_delay_level = max(self.delay_levels) if self.delay_levels else 0
        self.put_lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._store_host = config.store_host
        self._store_host_bytes = pack_host(*config.store_host)
        self._total_memory = _total_memory()
        self.last_exit_ok = True
        self.shutdown_flag = True
        self.writeable = True
        self.last_dispatch_timestamp = 0
        self._lock_fd = -1
        self.group_commit_service: Optional[GroupCommitService] = None
        if config.flush_disk_type is FlushDiskType.SYNC_FLUSH:
            self.group_commit_service = GroupCommitService(self._flush_all_commit_log, now,
                                                           config.sync_flush_timeout)
        self.flush_commit_log_service = FlushRealTimeService(
            self.flush_commit_log, config.flush_commit_log_least_pages,
            config.flush_commit_log_thorough_interval)
        self._last_cq_thorough = 0.0
        #: Java's MessageArrivingListener: called with (topic, queue id, new max offset,
        #: tags code) for each entry added to a ConsumeQueue; the broker wakes long polls.
        #: It runs under the put lock, so it must only record the event.
        self.message_arriving_listener: Optional[Callable[[str, int, int, int], None]] = None
        self._last_physical_min_offset = 0
        self._manual_delete = 0
        #: the one-call append of the C accelerator (None: every put takes the general path)
        self.append_message_native = speedups.append_message if speedups else None
        #: the C accelerator's group commit flusher, which a StoreDriver runs with SYNC_FLUSH
        #: (None: the group commit thread calls fdatasync itself)
        self.sync_flusher_class = speedups.SyncFlusher if speedups else None
        self._flush_probe = (0, 0)
        self._max_record = config.max_message_size + 64 * 1024
        sync = config.flush_disk_type is FlushDiskType.SYNC_FLUSH
        #: SYNC_FLUSH appends with pwrite, not through the mapping (_speedups.write_record_fd)
        self._write_by_fd = sync
        #: prepares CommitLog pages ahead of the appends, when a driver thread runs it: faults
        #: them in (ASYNC_FLUSH), or zeroes them on disk (SYNC_FLUSH; see PageWarmer)
        self.page_warmer = PageWarmer(zero=sync, put_lock=self.put_lock)

    def now_ms(self) -> int:
        return int(self.now() * 1000)

    def set_store_host(self, host: str, port: int) -> None:
        """The address written as STOREHOSTADDRESS (a broker on port 0 knows it after binding)."""
        self.config.store_host = (host, port)
        self._store_host = (host, port)
        self._store_host_bytes = pack_host(host, port)

    # ------------------------------------------------------------------ lifecycle

    def load(self) -> bool:
        """
        Map the files and recover (Java ``load``): a clean previous shutdown (no ``abort`` file)
        trusts the checkpoint, otherwise the CommitLog is re-validated from the checkpoint on.

        :return: ``False`` if the store cannot be used (e.g. a file of the wrong size).
        """
        cfg = self.config
        os.makedirs(cfg.store_path_root_dir, exist_ok=True)
        self.last_exit_ok = not os.path.exists(cfg.abort_file)
        if not self.commit_log.load():
            return False
        if not self._load_consume_queues():
            return False
        self.checkpoint = StoreCheckpoint(cfg.store_checkpoint)
        if cfg.message_index_enable:
            self.index_service.load(self.last_exit_ok, self.checkpoint.index_msg_timestamp)
        self.recover(self.last_exit_ok)
        return True

    def _load_consume_queues(self) -> bool:
        root = self.config.store_path_consume_queue
        if not os.path.isdir(root):
            return True
        for topic in os.listdir(root):
            tdir = os.path.join(root, topic)
            if not os.path.isdir(tdir):
                continue
            for qid in os.listdir(tdir):
                if not qid.lstrip("-").isdigit():
                    continue
                cq = ConsumeQueue(topic, int(qid), root, self.config.mapped_file_size_consume_queue)
                if not cq.load():
                    return False
                self.consume_queue_table.setdefault(topic, {})[int(qid)] = cq
        return True

    def start(self) -> None:
        """Take the directory lock and create the ``abort`` marker (Java ``start``)."""
        cfg = self.config
        fd = os.open(os.path.join(cfg.store_path_root_dir, "lock"), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise RuntimeError(f"store {cfg.store_path_root_dir} is locked by another process") from None
        self._lock_fd = fd
        with open(cfg.abort_file, "w"):
            pass
        self.shutdown_flag = False

    def shutdown(self) -> None:
        """Flush everything, write the checkpoint and remove the ``abort`` marker."""
        self.detach_sync_flusher()
        if self.group_commit_service is not None:
            self.group_commit_service.commit()
            self.group_commit_service.fail_all()
        was_running = not self.shutdown_flag
        self.shutdown_flag = True
        try:
            self.flush_commit_log(0)
            self.flush_consume_queue(self.now(), thorough=True)
        except OSError as e:
            log.error("flush at shutdown failed: %s", e)
            self.writeable = False
        if self.checkpoint is not None:
            try:
                self.checkpoint.shutdown()
            except OSError as e:
                log.error("checkpoint write at shutdown failed: %s", e)
                self.writeable = False
        with self.put_lock:  # the page warmer takes a file's descriptor under it
            self.commit_log.close()
        for queues in self.consume_queue_table.values():
            for cq in queues.values():
                cq.close()
        self.index_service.close()
        if was_running and self.writeable:
            try:
                os.unlink(self.config.abort_file)
            except FileNotFoundError:
                pass
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1

    def destroy(self) -> None:
        """Delete every file of the store (Java ``destroy``); the store must be shut down."""
        shutil.rmtree(self.config.store_path_root_dir, ignore_errors=True)

    # ------------------------------------------------------------------ recovery

    def recover(self, last_exit_ok: bool) -> None:
        max_phy_in_cq = -1
        repaired_min = None
        for queues in self.consume_queue_table.values():
            for cq in queues.values():
                cq.recover()
                if not last_exit_ok and self._repair_cq_tail(cq):
                    m = max(cq.max_physic_offset, 0)
                    repaired_min = m if repaired_min is None else min(repaired_min, m)
                max_phy_in_cq = max(max_phy_in_cq, cq.max_physic_offset)
        files = self.commit_log.mapped_file_queue.files
        cl = self.commit_log
        if not files:
            cl.mapped_file_queue.flushed_where = 0
            self._destroy_logics()
        else:
            check_crc = self.config.check_crc_on_recover
            if last_exit_ok:
                start = files[max(0, len(files) - 3)]
                end = start.file_from_offset
                for _info, end in cl.scan(start, check_crc=check_crc):
                    pass
                self._truncate(end, max_phy_in_cq)
                # dispatch what the ConsumeQueues lack (Java's ReputMessageService)
                reput_from = max(cl.get_min_offset(), max_phy_in_cq if max_phy_in_cq > 0 else 0)
                if repaired_min is not None:
                    reput_from = max(cl.get_min_offset(), min(reput_from, repaired_min))
                self._redispatch(reput_from)
            else:
                start = self._abnormal_start_file(files)
                if repaired_min is not None and repaired_min < start.file_from_offset:
                    start = cl.mapped_file_queue.find_mapped_file_by_offset(repaired_min, True) or start
                end = self._replay(start, check_crc)
                self._truncate(end, max_phy_in_cq)
        self._recover_topic_queue_table()

    def _repair_cq_tail(self, cq: ConsumeQueue) -> bool:
        """
        After a crash, check the newest ConsumeQueue entries against the records they point
        to; drop torn ones (the re-dispatch rebuilds them). Java does not check this.
        """
        repaired = False
        for _ in range(4):
            n = cq.get_max_offset_in_queue()
            if n <= cq.get_min_offset_in_queue():
                break
            entry = cq.get_entry(n - 1)
            if entry is None or (entry[0] == 0 and entry[1] == FILLER_SIZE):
                break
            phy, size, _ = entry
            head = self.commit_log.get_message(phy, 36) if phy >= 0 and size > 36 else None
            if head is not None:
                total = int.from_bytes(head[0:4], "big", signed=True)
                qid = int.from_bytes(head[12:16], "big", signed=True)
                qoff = int.from_bytes(head[20:28], "big", signed=True)
                pos = int.from_bytes(head[28:36], "big", signed=True)
                if (total, qid, qoff, pos) == (size, cq.queue_id, n - 1, phy):
                    break
                if total == 0:  # the record itself is torn: the CommitLog truncation handles it
                    break
            elif phy + size > self.commit_log.get_max_offset():
                break
            log.warning("ConsumeQueue %s-%d: entry %d does not match its record; dropped",
                        cq.topic, cq.queue_id, n - 1)
            cq.drop_last_entry()
            repaired = True
        return repaired

    def _abnormal_start_file(self, files):
        cp = self.checkpoint
        assert cp is not None
        limit = cp.get_min_timestamp_index() if self.config.message_index_safe else cp.get_min_timestamp()
        for f in reversed(files):
            ts = self.commit_log.first_store_timestamp_of(f)
            if ts and ts <= limit:
                log.info("abnormal recovery starts at CommitLog file %s", f.file_name)
                return f
        return files[0]

    def _truncate(self, end: int, max_phy_in_cq: int) -> None:
        cl = self.commit_log
        cl.set_end(end)
        for queues in self.consume_queue_table.values():
            for cq in queues.values():
                if cq.max_physic_offset >= end or max_phy_in_cq >= end:
                    cq.truncate_dirty_logic_files(end)

    def _redispatch(self, from_offset: int) -> None:
        cl = self.commit_log
        f = cl.mapped_file_queue.find_mapped_file_by_offset(from_offset)
        if f is None:
            return
        for info, _end in cl.scan(f, check_crc=False):
            if info is not None and info[2] >= from_offset:
                self._redispatch_one(info)

    def _replay(self, start, check_crc: bool) -> int:
        """
        Abnormal recovery's scan from *start*: validate every record and dispatch those whose
        ConsumeQueue or index entries are missing; returns the end of the valid log.

        A record is skipped without a closer look when it lies below where its queue and the
        index stood before the scan: dispatching only moves those marks forward, so such a
        record never needs it. This check runs per record, so it uses local caches.
        """
        table = self.consume_queue_table
        index_files = self.index_service.files
        index_end = (index_files[-1].end_phy_offset if index_files else -1) \
            if self.config.message_index_enable else None
        queue_ends: dict[tuple[str, int], int] = {}
        end = start.file_from_offset
        for info, end in self.commit_log.scan(start, check_crc=check_crc):
            if info is None:
                continue
            topic, queue_id, phys, size, sys_flag = info[:5]
            if index_end is not None and phys >= index_end:
                self._redispatch_one(info)
                continue
            tx = sys_flag & _TX_MASK
            if tx == _NOT_TYPE or tx == _COMMIT:
                key = (topic, queue_id)
                queue_end = queue_ends.get(key)
                if queue_end is None:
                    queues = table.get(topic)
                    cq = queues.get(queue_id) if queues is not None else None
                    queue_end = queue_ends[key] = cq.max_physic_offset if cq is not None else -1
                if phys + size > queue_end:
                    self._redispatch_one(info)
        return end

    def _redispatch_one(self, info) -> None:
        """Dispatch a recovered record unless its ConsumeQueue entry and index entries exist."""
        topic, queue_id, phys, size, sys_flag = info[:5]
        need = False
        tx = sys_flag & _TX_MASK
        if tx == _NOT_TYPE or tx == _COMMIT:
            queues = self.consume_queue_table.get(topic)
            cq = queues.get(queue_id) if queues is not None else None
            need = cq is None or phys + size > cq.max_physic_offset
        if not need and self.config.message_index_enable:
            files = self.index_service.files
            need = not files or phys >= files[-1].end_phy_offset
        if need:
            req = self.commit_log.dispatch_request(info, self.delay_levels)
            if req is not None:
                try:
                    self._dispatch(req)
                except MessageFormatError as e:
                    # A record under a name no put accepts (a store written by another
                    # program): it stays in the CommitLog, readable by offset, in no queue.
                    log.warning("recovery: record at %d not dispatched: %s", phys, e)

    def _recover_topic_queue_table(self) -> None:
        table = {}
        min_phy = self.commit_log.get_min_offset()
        for topic, queues in self.consume_queue_table.items():
            for qid, cq in queues.items():
                table[f"{topic}-{qid}"] = cq.get_max_offset_in_queue()
                cq.correct_min_offset(min_phy)
        self.topic_queue_table = table

    def _destroy_logics(self) -> None:
        for queues in self.consume_queue_table.values():
            for cq in queues.values():
                cq.destroy()
        self.consume_queue_table.clear()

    # ------------------------------------------------------------------ dispatch

    def find_consume_queue(self, topic: str, queue_id: int, create: bool = True) -> Optional[ConsumeQueue]:
        """
        The queue, created (with its directory) when *create*.

        :raises MessageFormatError: creating it under a name that is no legal topic name
            (only ``^[%|a-zA-Z0-9_-]+$``: nothing it names can leave the store's directory).
        """
        queues = self.consume_queue_table.get(topic)
        if queues is None:
            if not create:
                return None
            if not is_store_name_safe(topic):
                raise MessageFormatError(f"illegal topic name {topic[:200]!r}: no ConsumeQueue is created for it")
            queues = self.consume_queue_table.setdefault(topic, {})
        cq = queues.get(queue_id)
        if cq is None and create:
            cq = ConsumeQueue(topic, queue_id, self.config.store_path_consume_queue,
                              self.config.mapped_file_size_consume_queue)
            queues[queue_id] = cq
        return cq

    def _dispatch(self, req: DispatchRequest) -> None:
        """Java ``doDispatch``: ConsumeQueue (NOT_TYPE and COMMIT only) and index."""
        self._dispatch_fields(req.topic, req.queue_id, req.commit_log_offset, req.msg_size, req.tags_code,
                              req.store_timestamp, req.consume_queue_offset, req.keys, req.uniq_key,
                              req.sys_flag, req.tags)

    def _dispatch_fields(self, topic: str, queue_id: int, phys: int, size: int, tags_code: int,
                         store_timestamp: int, queue_offset: int, keys: str, uniq_key: Optional[str],
                         sys_flag: int, tags: Optional[str]) -> None:
        tx = sys_flag & _TX_MASK
        if tx == _NOT_TYPE or tx == _COMMIT:
            queues = self.consume_queue_table.get(topic)
            cq = queues.get(queue_id) if queues is not None else None
            if cq is None:
                cq = self.find_consume_queue(topic, queue_id)
                assert cq is not None
            cq.put_message_position_info(phys, size, tags_code, queue_offset)
            self.last_dispatch_timestamp = store_timestamp
            listener = self.message_arriving_listener
            if listener is not None:
                listener(topic, queue_id, queue_offset + 1, tags_code)
        if self.config.message_index_enable:
            self.index_service.build_index(topic, phys, store_timestamp, sys_flag, keys, uniq_key, tags)

    dispatch = _dispatch

    # ------------------------------------------------------------------ put

    def _check_store_status(self) -> Optional[PutMessageStatus]:
        if self.shutdown_flag:
            log.warning("message store is shut down; put refused")
            return PutMessageStatus.SERVICE_NOT_AVAILABLE
        if self.config.broker_role is BrokerRole.SLAVE:
            return PutMessageStatus.SERVICE_NOT_AVAILABLE
        if not self.writeable:
            log.warning("message store is not writeable; put refused")
            return PutMessageStatus.SERVICE_NOT_AVAILABLE
        return None

    def _schedule_rewrite(self, msg: MessageExtBrokerInner) -> None:
        """Java 4.9 ``CommitLog.putMessage``: a DELAY message goes to SCHEDULE_TOPIC_XXXX."""
        if b"DELAY\x01" not in msg.properties:
            return
        props = msg.get_properties()
        try:
            level = int(props.get(MessageConst.PROPERTY_DELAY_TIME_LEVEL, "0"))
        except ValueError:
            return
        if level <= 0:
            return
        if level > self.max_delay_level:
            level = self.max_delay_level
            props[MessageConst.PROPERTY_DELAY_TIME_LEVEL] = str(level)
        props[MessageConst.PROPERTY_REAL_TOPIC] = msg.topic
        props[MessageConst.PROPERTY_REAL_QUEUE_ID] = str(msg.queue_id)
        msg.topic = RMQ_SYS_SCHEDULE_TOPIC
        msg.queue_id = level - 1
        msg.properties = properties_to_string(props).encode()

    def put_message(self, msg: MessageExtBrokerInner) -> PutMessageResult:
        """
        Append one message. With SYNC_FLUSH and ``wait_store_msg_ok`` this waits until the
        record is on disk (or ``syncFlushTimeout`` passes).
        """
        result = self.async_put_message(msg)
        return result if result.flush_future is None else self._wait_flush(result)

    def put_messages(self, batch: MessageExtBatch) -> PutMessageResult:
        """Append a batch (one record per inner message, consecutive queue offsets)."""
        return self._wait_flush(self.async_put_messages(batch))

    def _wait_flush(self, result: PutMessageResult) -> PutMessageResult:
        fut = result.flush_future
        if fut is None:
            return result
        gc = self.group_commit_service
        assert gc is not None
        if not gc.has_driver:
            gc.commit()
        append = result.append_result
        try:
            # this put's own end: on disk, it need not wait for the rest of its batch
            result.status = fut.result(self.config.sync_flush_timeout / 1000.0 + 0.5,
                                       append.wrote_offset + append.wrote_bytes)
        except FutureTimeout:
            result.status = PutMessageStatus.FLUSH_DISK_TIMEOUT
        result.flush_future = None
        if result.status is not PutMessageStatus.PUT_OK:
            log.error("put: flush to disk timed out (syncFlushTimeout %d ms)", self.config.sync_flush_timeout)
        return result

    def async_put_message(self, msg: MessageExtBrokerInner) -> PutMessageResult:
        """
        Append one message without waiting for the disk: with SYNC_FLUSH the result carries a
        ``flush_future`` resolving to PUT_OK or FLUSH_DISK_TIMEOUT.
        """
        if self.shutdown_flag or not self.writeable or self.config.broker_role is BrokerRole.SLAVE:
            bad = self._check_store_status()
            assert bad is not None
            return PutMessageResult(bad)
        topic_bytes = msg.topic.encode()
        if len(topic_bytes) > _MAX_TOPIC or not topic_bytes:
            log.warning("put message: topic length %d is illegal", len(topic_bytes))
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL)
        if len(msg.properties) > _MAX_PROPS:
            log.warning("put message: properties length %d exceeds 32767", len(msg.properties))
            return PutMessageResult(PutMessageStatus.PROPERTIES_SIZE_EXCEEDED)
        if len(msg.body) > self.config.max_message_size:
            log.warning("put message: body of %d bytes exceeds maxMessageSize", len(msg.body))
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL,
                                    AppendMessageResult(AppendMessageStatus.MESSAGE_SIZE_EXCEEDED))
        tx = msg.sys_flag & _TX_MASK
        if b"DELAY\x01" in msg.properties and self.config.handle_schedule_message \
                and (tx == _NOT_TYPE or tx == _COMMIT):
            self._schedule_rewrite(msg)
            if len(msg.properties) > _MAX_PROPS:
                return PutMessageResult(PutMessageStatus.PROPERTIES_SIZE_EXCEEDED)
        pm = msg.property_map
        if pm is not None:
            keys = pm.get(MessageConst.PROPERTY_KEYS, "")
            uniq = pm.get(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
            tags = pm.get(MessageConst.PROPERTY_TAGS)
        else:
            raw = msg.properties
            keys = get_property(raw, b"KEYS\x01") or ""
            uniq = get_property(raw, b"UNIQ_KEY\x01")
            tags = get_property(raw, b"TAGS\x01")
        store_host = msg.store_host or self._store_host
        store_host_bytes = self._store_host_bytes if msg.store_host is None else pack_host(*msg.store_host)
        topic = msg.topic
        with self.put_lock:
            store_ts = int(self.now() * 1000)
            key = f"{topic}-{msg.queue_id}"
            counts = tx == _NOT_TYPE or tx == _COMMIT
            queue_offset = self.topic_queue_table.get(key, 0) if counts else 0
            placed = None
            try:
                native = self.append_message_native
                if counts and native is not None and topic != RMQ_SYS_SCHEDULE_TOPIC:
                    # The common case in one C call (inline: this runs for every message). It
                    # writes the record, the ConsumeQueue entry and the index entries and moves
                    # the positions when the current CommitLog, ConsumeQueue and index files all
                    # have room and the queue is dense; None, with nothing written, sends the
                    # put down _append_general, which rolls files over and handles every other
                    # case. The bytes are the same either way (test_native_append.py).
                    files = self.commit_log.mapped_file_queue.files
                    queues = self.consume_queue_table.get(topic)
                    cq = queues.get(msg.queue_id) if queues is not None else None
                    if files and cq is not None and cq.mapped_file_queue.files:
                        index_files = self.index_service.files if self.config.message_index_enable else None
                        if index_files is None or index_files:
                            clf = files[-1]
                            if self.page_warmer.zero_from != NOT_ZEROING:
                                self._clear_of_zeroing(len(msg.body) + len(msg.properties) + len(topic_bytes)
                                                       + _RECORD_OVERHEAD_MAX)
                            try:
                                placed = native(
                                    msg, clf, cq.mapped_file_queue.files[-1], cq,
                                    index_files[-1] if index_files else None, queue_offset, store_ts, topic_bytes,
                                    pack_host(*msg.born_host), store_host_bytes, keys, uniq, tags,
                                    self.index_service.index_tags, body_crc(msg.body) & 0x7FFFFFFF,
                                    self._max_record, clf.fd if self._write_by_fd else -1)
                            except OSError as e:  # the pwrite: nothing was moved
                                log.error("put message: writing the CommitLog failed: %s", e)
                                return PutMessageResult(PutMessageStatus.UNKNOWN_ERROR,
                                                        AppendMessageResult(AppendMessageStatus.UNKNOWN_ERROR))
                            if placed is not None:
                                phys, size, tags_code = placed
                                placed = phys, size
                                if phys + size > self.page_warmer.mark:
                                    self.page_warmer.note_append(clf, clf.wrote_position)
                                self.topic_queue_table[key] = queue_offset + 1
                                self.last_dispatch_timestamp = store_ts
                                listener = self.message_arriving_listener
                                if listener is not None:
                                    listener(topic, msg.queue_id, queue_offset + 1, tags_code)
                if placed is None:
                    placed = self._append_general(msg, topic, key, counts, queue_offset, store_ts, store_host_bytes,
                                                  pm, keys, uniq, tags)
            except OSError as e:
                log.error("put message: cannot create a mapped file: %s", e)
                return PutMessageResult(PutMessageStatus.CREATE_MAPEDFILE_FAILED,
                                        AppendMessageResult(AppendMessageStatus.UNKNOWN_ERROR))
            except MessageFormatError as e:
                log.warning("put message: %s", e)
                return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL)
        if placed.__class__ is PutMessageResult:
            return placed
        phys, size = placed
        result = PutMessageResult(PutMessageStatus.PUT_OK, AppendMessageResult(
            AppendMessageStatus.PUT_OK, phys, size, None, store_ts, queue_offset, 1, 0.0, store_host))
        if self.group_commit_service is None:
            return result
        return self._handle_flush(result, phys + size, msg.wait_store_msg_ok)

    def _append_general(self, msg: MessageExtBrokerInner, topic: str, key: str, counts: bool, queue_offset: int,
                        store_ts: int, store_host_bytes: bytes, pm: Optional[dict], keys: str,
                        uniq: Optional[str], tags: Optional[str]):
        """Any put: ``(phys, size)``, or the error result. Raises OSError and MessageFormatError."""
        if counts:
            cq = self.find_consume_queue(topic, msg.queue_id)
            assert cq is not None
            cq.ensure_writable(queue_offset)
        record = encode_inner(msg, queue_offset=queue_offset, phys=0, store_timestamp=store_ts,
                              store_host=store_host_bytes, properties=msg.properties)
        size = len(record)
        if size > self.config.max_message_size + 64 * 1024:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL,
                                    AppendMessageResult(AppendMessageStatus.MESSAGE_SIZE_EXCEEDED))
        self._clear_of_zeroing(size)
        f, phys = self.commit_log.reserve(size)
        f.append_record(record, phys)
        f.store_timestamp = store_ts
        if counts:
            self.topic_queue_table[key] = queue_offset + 1
        tags_code = msg.tags_code
        if topic == RMQ_SYS_SCHEDULE_TOPIC:
            level = pm.get(MessageConst.PROPERTY_DELAY_TIME_LEVEL) if pm is not None \
                else get_property(msg.properties, b"DELAY\x01")
            tags_code = tags_code_of(topic, {MessageConst.PROPERTY_DELAY_TIME_LEVEL: level,
                                             MessageConst.PROPERTY_TAGS: tags} if level else
                                     {MessageConst.PROPERTY_TAGS: tags} if tags else {},
                                     store_ts, self.delay_levels)
        elif tags_code is None:
            tags_code = _tags_hash(tags) if tags else 0
        self._dispatch_fields(topic, msg.queue_id, phys, size, tags_code, store_ts, queue_offset, keys, uniq,
                              msg.sys_flag, tags)
        return phys, size

    def async_put_messages(self, batch: MessageExtBatch) -> PutMessageResult:
        bad = self._check_store_status()
        if bad is not None:
            return PutMessageResult(bad)
        topic_bytes = batch.topic.encode()
        if len(topic_bytes) > _MAX_TOPIC or not topic_bytes:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL)
        if batch.sys_flag & _TX_MASK != _NOT_TYPE:
            log.warning("put messages: a batch cannot be transactional")
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL)
        if len(batch.body) > self.config.max_message_size:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL,
                                    AppendMessageResult(AppendMessageStatus.MESSAGE_SIZE_EXCEEDED))
        try:
            items = list(iter_batch(batch.body, batch.properties))
        except MessageFormatError as e:
            log.warning("put messages: malformed batch: %s", e)
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL)
        if not items:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL)
        inners = []
        for flag, body, props in items:
            if len(props) > _MAX_PROPS:
                return PutMessageResult(PutMessageStatus.PROPERTIES_SIZE_EXCEEDED)
            inners.append(MessageExtBrokerInner(
                batch.topic, body, props, batch.queue_id, flag, batch.sys_flag, batch.born_timestamp,
                batch.born_host, batch.store_host, batch.reconsume_times))
        store_host = batch.store_host or self._store_host
        store_host_bytes = pack_host(*store_host)
        with self.put_lock:
            store_ts = self.now_ms()
            key = f"{batch.topic}-{batch.queue_id}"
            first_queue_offset = queue_offset = self.topic_queue_table.get(key, 0)
            try:
                cq = self.find_consume_queue(batch.topic, batch.queue_id)
                assert cq is not None
                cq.ensure_writable(queue_offset)
                records = [encode_inner(m, queue_offset=queue_offset + i, phys=0, store_timestamp=store_ts,
                                        store_host=store_host_bytes, properties=m.properties)
                           for i, m in enumerate(inners)]
                total = sum(len(r) for r in records)
                if total > self.config.max_message_size + 64 * 1024:
                    return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL,
                                            AppendMessageResult(AppendMessageStatus.MESSAGE_SIZE_EXCEEDED))

                def make(phys: int) -> bytes:
                    out = []
                    p = phys
                    for r in records:
                        out.append(_with_phys(r, p))
                        p += len(r)
                    return b"".join(out)
                self._clear_of_zeroing(total)
                f, phys = self.commit_log.append_records(make, total)
            except OSError as e:
                log.error("put messages: cannot create a mapped file: %s", e)
                return PutMessageResult(PutMessageStatus.CREATE_MAPEDFILE_FAILED,
                                        AppendMessageResult(AppendMessageStatus.UNKNOWN_ERROR))
            except MessageFormatError as e:
                log.warning("put messages: %s", e)
                return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL)
            f.store_timestamp = store_ts
            self.topic_queue_table[key] = queue_offset + len(records)
            ids = []
            p = phys
            for m, r in zip(inners, records):
                props = m.get_properties()
                self._dispatch(DispatchRequest(
                    m.topic, m.queue_id, p, len(r),
                    tags_code_of(m.topic, props, store_ts, self.delay_levels), store_ts, queue_offset,
                    props.get(MessageConst.PROPERTY_KEYS, ""),
                    props.get(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX), m.sys_flag, 0,
                    tags=props.get(MessageConst.PROPERTY_TAGS)))
                ids.append(offset_msg_id(store_host, p))
                queue_offset += 1
                p += len(r)
        append = AppendMessageResult(AppendMessageStatus.PUT_OK, phys, total, ",".join(ids), store_ts,
                                     first_queue_offset, len(records))
        return self._handle_flush(PutMessageResult(PutMessageStatus.PUT_OK, append), phys + total,
                                  batch.wait_store_msg_ok)

    def _clear_of_zeroing(self, size: int) -> None:
        """
        Under the put lock, before *size* bytes go at the CommitLog's end: wait while the
        page warmer writes zeros where they (or a BLANK filler) may land.
        """
        warmer = self.page_warmer
        if warmer.zero_from == NOT_ZEROING:  # the common case; the native path checks it inline
            return
        last = self.commit_log.mapped_file_queue.last()
        if last is None or last.file_from_offset + last.wrote_position + size + END_FILE_MIN_BLANK_LENGTH \
                > warmer.zero_from:
            warmer.wait_clear()

    def _handle_flush(self, result: PutMessageResult, end_offset: int, wait: bool) -> PutMessageResult:
        gc = self.group_commit_service
        if gc is not None:
            if wait:
                result.flush_future = gc.put_request(end_offset)
            else:
                gc.flush_soon(end_offset)
        return result

    def attach_sync_flusher(self) -> None:
        """
        SYNC_FLUSH with the C accelerator: start its flusher thread and hand it the group
        commit's fdatasync (:class:`~rocketmq_tx.store.flush.StoreDriver` does this).
        """
        gc, cls = self.group_commit_service, self.sync_flusher_class
        if gc is None or cls is None or gc.native is not None:
            return
        with self.put_lock:
            queue = self.commit_log.mapped_file_queue
            flusher = cls(queue.flushed_where, SYNC_FLUSH_HOLD)
            for f in queue.files:
                if f.file_tail_offset > queue.flushed_where:
                    flusher.add_file(f.fd, f.file_from_offset, f.file_tail_offset)
            queue.on_create = lambda f: flusher.add_file(f.fd, f.file_from_offset, f.file_tail_offset)
            self._flush_probe = self._timestamp_probe()
            flusher.start()
            gc.attach_native(flusher, self._native_flushed)

    def detach_sync_flusher(self) -> None:
        """Stop the C flusher (after it syncs what was asked of it); Python flushes again."""
        gc = self.group_commit_service
        if gc is None or gc.native is None:
            return
        with self.put_lock:
            self.commit_log.mapped_file_queue.on_create = None
            flusher = gc.detach_native()
        flusher.stop()
        self._native_flushed(flusher.flushed)

    def _timestamp_probe(self) -> tuple[int, int]:
        # the timestamp first: the record that set it ends at or before the offset read next
        last = self.commit_log.mapped_file_queue.last()
        ts = last.store_timestamp if last is not None else 0
        return ts, self.commit_log.get_max_offset()

    def _native_flushed(self, flushed: int) -> None:
        """The C flusher synced up to *flushed*: the Python bookkeeping a flush would do."""
        with self._flush_lock:
            self.commit_log.mapped_file_queue.mark_flushed(flushed)
            # the checkpoint's physical timestamp may lag (recovery then starts earlier) but
            # never lead the disk: it moves only to a timestamp read before a covered offset
            ts, end = self._flush_probe
            if ts and flushed >= end and self.checkpoint is not None:
                self.checkpoint.physic_msg_timestamp = ts
                self._flush_probe = self._timestamp_probe()
            elif not ts:
                self._flush_probe = self._timestamp_probe()

    # ------------------------------------------------------------------ flush

    def _flush_all_commit_log(self) -> int:
        with self._flush_lock:
            self.commit_log.flush(0)
            self._update_physic_timestamp()
            return self.commit_log.flushed_where

    def flush_commit_log(self, least_pages: int = 0) -> int:
        """Flush the CommitLog if *least_pages* dirty pages (0 = any); return the flushed offset."""
        with self._flush_lock:
            self.commit_log.flush(least_pages)
            self._update_physic_timestamp()
            return self.commit_log.flushed_where

    def _update_physic_timestamp(self) -> None:
        ts = self.commit_log.mapped_file_queue.store_timestamp
        if ts and self.checkpoint is not None:
            self.checkpoint.physic_msg_timestamp = ts

    def flush(self) -> int:
        """Flush the CommitLog fully (Java ``DefaultMessageStore.flush``)."""
        return self.flush_commit_log(0)

    def flush_consume_queue(self, now: Optional[float] = None, thorough: bool = False) -> None:
        """
        Java ``FlushConsumeQueueService.doFlush``: flush ConsumeQueues with at least
        ``flushConsumeQueueLeastPages`` dirty pages (all at least every thorough interval), the
        index, and the checkpoint.
        """
        now = self.now() if now is None else now
        least = self.config.flush_consume_queue_least_pages
        if thorough or now >= self._last_cq_thorough + self.config.flush_consume_queue_thorough_interval / 1000:
            self._last_cq_thorough = now
            least = 0
        logics_ts = self.last_dispatch_timestamp
        for queues in list(self.consume_queue_table.values()):
            for cq in list(queues.values()):
                cq.flush(least)
        cp = self.checkpoint
        if cp is None:
            return
        if self.config.message_index_enable:
            ts = self.index_service.flush()
            if ts:
                cp.index_msg_timestamp = ts
        if logics_ts:
            cp.logics_msg_timestamp = logics_ts
        cp.flush()

    # ------------------------------------------------------------------ get

    def get_message(self, group: str, topic: str, queue_id: int, offset: int, max_msg_nums: int,
                    message_filter: Optional[MessageFilter] = None) -> GetMessageResult:
        """Java ``DefaultMessageStore.getMessage``: records of one queue from *offset* on."""
        result = GetMessageResult()
        if self.shutdown_flag and self.checkpoint is None:
            result.status = GetMessageStatus.NO_MATCHED_LOGIC_QUEUE
            result.next_begin_offset = offset
            return result
        cfg = self.config
        max_offset_py = self.commit_log.get_max_offset()
        cq = self.find_consume_queue(topic, queue_id, create=False)
        status = GetMessageStatus.NO_MESSAGE_IN_QUEUE
        next_begin = offset
        min_offset = max_offset = 0
        if cq is None:
            # Java's findConsumeQueue creates the queue on lookup, so a queue that never held a
            # message answers NO_MESSAGE_IN_QUEUE; we say the same without creating files.
            status = GetMessageStatus.NO_MESSAGE_IN_QUEUE
            next_begin = self._correct(offset, 0)
        else:
            min_offset = cq.get_min_offset_in_queue()
            max_offset = cq.get_max_offset_in_queue()
            if max_offset == 0:
                status = GetMessageStatus.NO_MESSAGE_IN_QUEUE
                next_begin = self._correct(offset, 0)
            elif offset < min_offset:
                status = GetMessageStatus.OFFSET_TOO_SMALL
                next_begin = self._correct(offset, min_offset)
            elif offset == max_offset:
                status = GetMessageStatus.OFFSET_OVERFLOW_ONE
                next_begin = self._correct(offset, offset)
            elif offset > max_offset:
                status = GetMessageStatus.OFFSET_OVERFLOW_BADLY
                # 4.9.x corrects to the max offset (5.x to the min offset when it is 0).
                next_begin = self._correct(offset, max_offset)
            else:
                buf = cq.get_index_buffer(offset)
                if buf is None:
                    status = GetMessageStatus.OFFSET_FOUND_NULL
                    next_begin = self._correct(offset, cq.roll_next_file(offset))
                else:
                    data, _ = buf
                    status = GetMessageStatus.NO_MATCHED_MESSAGE
                    next_phy_file_start = -1
                    max_phy_pulling = 0
                    max_filter_bytes = max(16000, max_msg_nums * CQ_STORE_UNIT_SIZE)
                    memory = self._total_memory * cfg.access_message_in_memory_max_ratio // 100
                    limit = min(len(data), max_filter_bytes)
                    i = 0
                    unpack = CQ_ENTRY.unpack_from
                    while i < limit:
                        offset_py, size_py, tags_code = unpack(data, i)
                        if size_py == FILLER_SIZE and offset_py == 0:
                            i += CQ_STORE_UNIT_SIZE
                            continue
                        max_phy_pulling = offset_py
                        if next_phy_file_start != -1 and offset_py < next_phy_file_start:
                            i += CQ_STORE_UNIT_SIZE
                            continue
                        in_disk = max_offset_py - offset_py > memory
                        if self._is_batch_full(size_py, max_msg_nums, result.buffer_total_size,
                                               len(result.message_buffers), in_disk):
                            break
                        if message_filter is not None and \
                                not message_filter.is_matched_by_consume_queue(tags_code):
                            if result.buffer_total_size == 0:
                                status = GetMessageStatus.NO_MATCHED_MESSAGE
                            i += CQ_STORE_UNIT_SIZE
                            continue
                        record = self.commit_log.get_message(offset_py, size_py)
                        if record is None:
                            if result.buffer_total_size == 0:
                                status = GetMessageStatus.MESSAGE_WAS_REMOVING
                            next_phy_file_start = self.commit_log.roll_next_file(offset_py)
                            i += CQ_STORE_UNIT_SIZE
                            continue
                        by_log = getattr(message_filter, "is_matched_by_commit_log", None)
                        if by_log is not None and not by_log(record, None):
                            if result.buffer_total_size == 0:
                                status = GetMessageStatus.NO_MATCHED_MESSAGE
                            i += CQ_STORE_UNIT_SIZE
                            continue
                        result.message_buffers.append(record)
                        result.message_queue_offsets.append(offset + i // CQ_STORE_UNIT_SIZE)
                        result.buffer_total_size += len(record)
                        status = GetMessageStatus.FOUND
                        next_phy_file_start = -1
                        i += CQ_STORE_UNIT_SIZE
                    next_begin = offset + i // CQ_STORE_UNIT_SIZE
                    result.suggest_pulling_from_slave = max_offset_py - max_phy_pulling > memory
        result.status = status
        result.next_begin_offset = next_begin
        result.max_offset = max_offset
        result.min_offset = min_offset
        return result

    def _correct(self, old: int, new: int) -> int:
        if self.config.broker_role is BrokerRole.SLAVE and not self.config.offset_check_in_slave:
            return old
        return new

    def _is_batch_full(self, size_py: int, max_nums: int, buffer_total: int, message_total: int,
                       in_disk: bool) -> bool:
        if buffer_total == 0 or message_total == 0:
            return False
        if max_nums <= message_total:
            return True
        cfg = self.config
        if in_disk:
            return (buffer_total + size_py > cfg.max_transfer_bytes_on_message_in_disk
                    or message_total > cfg.max_transfer_count_on_message_in_disk - 1)
        return (buffer_total + size_py > cfg.max_transfer_bytes_on_message_in_memory
                or message_total > cfg.max_transfer_count_on_message_in_memory - 1)

    # ------------------------------------------------------------------ offsets and lookups

    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int:
        cq = self.find_consume_queue(topic, queue_id, create=False)
        return cq.get_max_offset_in_queue() if cq is not None else 0

    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int:
        # Java's findConsumeQueue creates the queue, so an unused one answers 0, never -1.
        cq = self.find_consume_queue(topic, queue_id, create=False)
        return cq.get_min_offset_in_queue() if cq is not None else 0

    def get_commit_log_offset_in_queue(self, topic: str, queue_id: int, consume_queue_offset: int) -> int:
        cq = self.find_consume_queue(topic, queue_id, create=False)
        if cq is None:
            return 0
        entry = cq.get_entry(consume_queue_offset)
        return entry[0] if entry is not None else 0

    def get_offset_in_queue_by_time(self, topic: str, queue_id: int, timestamp: int) -> int:
        cq = self.find_consume_queue(topic, queue_id, create=False)
        if cq is None:
            return 0
        return cq.get_offset_in_queue_by_time(timestamp, self.commit_log.pickup_store_timestamp,
                                              self.commit_log.get_min_offset())

    def get_earliest_message_time(self, topic: Optional[str] = None, queue_id: int = 0) -> int:
        """
        Store time of the first message of a queue, or (no topic) of the CommitLog; -1 if none
        (Java ``getEarliestMessageTime``).
        """
        if topic is None:
            f = self.commit_log.mapped_file_queue.first()
            if f is None:
                return -1
            ts = self.commit_log.first_store_timestamp_of(f)
            return ts if ts else -1
        cq = self.find_consume_queue(topic, queue_id, create=False)
        if cq is None:
            return -1
        entry = cq.get_entry(cq.get_min_offset_in_queue())
        if entry is None:
            return -1
        return self.commit_log.pickup_store_timestamp(entry[0], entry[1])

    def get_message_store_timestamp(self, topic: str, queue_id: int, consume_queue_offset: int) -> int:
        cq = self.find_consume_queue(topic, queue_id, create=False)
        if cq is None:
            return -1
        entry = cq.get_entry(consume_queue_offset)
        if entry is None:
            return -1
        return self.commit_log.pickup_store_timestamp(entry[0], entry[1])

    def get_max_phy_offset(self) -> int:
        return self.commit_log.get_max_offset()

    def get_min_phy_offset(self) -> int:
        return self.commit_log.get_min_offset()

    def select_one_message_by_offset(self, commit_log_offset: int, size: Optional[int] = None) -> Optional[bytes]:
        """The raw record at a physical offset (size read from the record when not given)."""
        if size is None:
            head = self.commit_log.get_message(commit_log_offset, 4)
            if head is None:
                return None
            size = int.from_bytes(head, "big", signed=True)
            if size <= 0:
                return None
        return self.commit_log.get_message(commit_log_offset, size)

    def look_message_by_offset(self, commit_log_offset: int, size: Optional[int] = None) -> Optional[MessageExt]:
        """The message at a physical offset (from an offsetMsgId), or ``None``."""
        data = self.select_one_message_by_offset(commit_log_offset, size)
        if data is None:
            return None
        try:
            msg, _ = decode_message(data, 0, decompress_body=False)
        except MessageFormatError:
            return None
        return msg

    def query_message(self, topic: str, key: str, max_num: int, begin: int, end: int) -> QueryMessageResult:
        """
        Messages whose key or UNIQ_KEY is *key*, stored within [begin, end] ms (Java
        ``queryMessage``); with ``index_tags``, ``T#<tag>`` finds by tag. Unlike Java, hash
        collisions are filtered out here.
        """
        result = QueryMessageResult()
        max_num = min(max_num, self.config.max_msgs_num_batch)
        offsets, last_ts, last_phy = self.index_service.query_offset(topic, key, max_num, begin, end)
        result.index_last_update_timestamp = last_ts
        result.index_last_update_phyoffset = last_phy
        for phy in offsets:
            data = self.select_one_message_by_offset(phy)
            if data is None:
                continue
            try:
                msg, _ = decode_message(data, 0, read_body=False)
            except MessageFormatError:
                continue
            if msg.topic != topic:
                continue
            if key != msg.properties.get(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX) and \
                    key not in msg.keys and not (self.config.index_tags and key == f"T#{msg.tags}"):
                continue
            result.message_buffers.append(data)
            result.buffer_total_size += len(data)
        return result

    # ------------------------------------------------------------------ expiry

    def delete_expired(self, now: Optional[float] = None) -> int:
        """
        Java ``CleanCommitLogService`` + ``CleanConsumeQueueService``: delete CommitLog files
        older than ``fileReservedTime`` hours when the hour is in ``deleteWhen`` or the disk is
        fuller than ``diskMaxUsedSpaceRatio`` (above 85 % even unexpired files go), then the
        ConsumeQueue and index files that only point below the new minimum.

        :return: the number of CommitLog files deleted.
        """
        now = self.now() if now is None else now
        cfg = self.config
        hour = time.localtime(now).tm_hour
        time_up = hour in cfg.delete_hours()
        ratio = self._disk_used_ratio(cfg.store_path_commit_log)
        # -1 (unknown, e.g. no CommitLog directory yet) is not "full", as in Java.
        space_full = ratio > cfg.disk_max_used_space_ratio / 100.0
        clean_immediately = ratio > 0.85
        manual = self._manual_delete > 0
        deleted = 0
        if time_up or space_full or manual:
            if manual:
                self._manual_delete -= 1
            if space_full:
                log.warning("disk use %.0f%% is above diskMaxUsedSpaceRatio %d%%; cleaning",
                            ratio * 100, cfg.disk_max_used_space_ratio)
            deleted = self.commit_log.mapped_file_queue.delete_expired_file_by_time(
                cfg.file_reserved_time * 3600, now, clean_immediately)
        self.delete_expired_logics()
        return deleted

    def execute_delete_files_manually(self) -> None:
        self._manual_delete = 20

    def delete_expired_logics(self) -> None:
        min_offset = self.commit_log.get_min_offset()
        if min_offset <= self._last_physical_min_offset:
            return
        self._last_physical_min_offset = min_offset
        for queues in list(self.consume_queue_table.values()):
            for cq in list(queues.values()):
                cq.delete_expired_file(min_offset)
        self.index_service.delete_expired_file(min_offset)

    # ------------------------------------------------------------------ misc

    def dispatch_behind_bytes(self) -> int:
        return 0

    def get_running_data_info(self) -> dict:
        return {
            "commitLogMinOffset": self.commit_log.get_min_offset(),
            "commitLogMaxOffset": self.commit_log.get_max_offset(),
            "flushedWhere": self.commit_log.flushed_where,
        }


def _with_phys(record: bytes, phys: int) -> bytes:
    # PHYSICALOFFSET sits at byte 28 of every record.
    return record[:28] + phys.to_bytes(8, "big", signed=True) + record[36:]
