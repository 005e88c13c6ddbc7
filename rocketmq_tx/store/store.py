# -*- test-case-name: rocketmq_tx.store.test.test_store -*-
"""
DefaultMessageStore (Java ``DefaultMessageStore``): CommitLog, ConsumeQueues, index and
checkpoint behind one synchronous API.

Puts are serialised by one lock; each put appends the record and dispatches it to its
ConsumeQueue and the index before returning, so a read right after a put sees the message.
Nothing here schedules itself: flushing, group commit and clean-up are methods the broker (or
:class:`~rocketmq_tx.store.flush.StoreDriver`) calls.

The store composes its parts, as Java's does, and keeps the entry points and the put path:

* :class:`~rocketmq_tx.store.recovery.StoreRecovery`: recovery at load, the replay and the
  re-dispatch, the repair of torn ConsumeQueue tails;
* :class:`~rocketmq_tx.store.clean.CleanService`: file expiry, manual deletion, dropping
  unused and expired ConsumeQueues;
* :class:`~rocketmq_tx.store.appender.NativeAppender`: the put's common case in one C call;
* :class:`~rocketmq_tx.store.reader.StoreReader`: pulls, offset lookups, queries by key;
* :mod:`rocketmq_tx.store.flush`: the group commit, the periodic flush and their driver.

Why ~700 lines remain here: the put path (three entry points sharing one lock, queue-offset
assignment and dispatch) is the store's one critical section and reads best in one place;
what is left besides it is lifecycle and thin delegation to the parts above.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import TimeoutError as FutureTimeout

from rocketmq_tx.common.errors import MessageFormatError
from rocketmq_tx.common.javatext import double_to_string
from rocketmq_tx.common.message import MessageConst, MessageExt, properties_to_string
from rocketmq_tx.common.messagecodec import pack_host
from rocketmq_tx.common.native import speedups
from rocketmq_tx.common.sysflag import BLANK_MAGIC_CODE, MessageSysFlag
from rocketmq_tx.common.validators import is_store_name_safe
from rocketmq_tx.store.appender import CommitLogWriteError, NativeAppender
from rocketmq_tx.store.checkpoint import StoreCheckpoint
from rocketmq_tx.store.clean import CleanService, disk_partition_used_percent, disk_used_ratio
from rocketmq_tx.store.commitlog import (
    RMQ_SYS_SCHEDULE_TOPIC,
    CommitLog,
    DispatchRequest,
    MessageExtBatch,
    MessageExtBrokerInner,
    _tags_hash,
    check_message_and_return_size,
    encode_inner,
    get_property,
    iter_batch,
    offset_msg_id,
    tags_code_of,
)
from rocketmq_tx.store.config import BrokerRole, FlushDiskType, MessageStoreConfig
from rocketmq_tx.store.consumequeue import ConsumeQueue
from rocketmq_tx.store.flush import FlushManager, GroupCommitService
from rocketmq_tx.store.formats import BLANK_HEAD
from rocketmq_tx.store.index import IndexService
from rocketmq_tx.store.pagewarmer import PageWarmer
from rocketmq_tx.store.reader import MessageFilter, QueryMessageResult, StoreReader, TagsFilter
from rocketmq_tx.store.recovery import StoreRecovery
from rocketmq_tx.store.stats import StoreStatsService
from rocketmq_tx.store.status import (
    AppendMessageResult,
    AppendMessageStatus,
    GetMessageResult,
    GetMessageStatus,
    PutMessageResult,
    PutMessageStatus,
)

# MessageFilter, TagsFilter, QueryMessageResult and disk_used_ratio: where callers import them from
__all__ = ["DefaultMessageStore", "MessageFilter", "TagsFilter", "QueryMessageResult", "disk_used_ratio"]

log = logging.getLogger("rocketmq_tx.store")

_TX_MASK = MessageSysFlag.TRANSACTION_MASK
_NOT_TYPE = MessageSysFlag.TRANSACTION_NOT_TYPE
_COMMIT = MessageSysFlag.TRANSACTION_COMMIT_TYPE
_MAX_TOPIC = 127
_MAX_PROPS = 0x7FFF

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
        self.commit_log = CommitLog(config.store_path_commit_log, config.mapped_file_size_commit_log)
        self.consume_queue_table: dict[str, dict[int, ConsumeQueue]] = {}
        self.topic_queue_table: dict[str, int] = {}
        self.index_service = IndexService(config.store_path_index, config.max_hash_slot_num,
                                          config.max_index_num, self.now_ms, config.index_tags)
        self.checkpoint: StoreCheckpoint | None = None
        self.delay_levels = config.delay_levels()
        self.max_delay_level = max(self.delay_levels) if self.delay_levels else 0
        self.put_lock = threading.Lock()
        self._store_host = config.store_host
        self._store_host_bytes = pack_host(*config.store_host)
        self.last_exit_ok = True
        self.shutdown_flag = True
        self.writeable = True
        self.last_dispatch_timestamp = 0
        #: where a slave's dispatch of replicated bytes stands (see :meth:`reput`)
        self.reput_from_offset = 0
        self._lock_fd = -1
        self.flush_manager = FlushManager(self)
        #: SYNC_FLUSH's group commit (None with ASYNC_FLUSH) and ASYNC_FLUSH's periodic flush
        self.group_commit_service: GroupCommitService | None = self.flush_manager.group_commit_service
        self.flush_commit_log_service = self.flush_manager.flush_commit_log_service
        #: Java's MessageArrivingListener: called with (topic, queue id, new max offset,
        #: tags code) for each entry added to a ConsumeQueue; the broker wakes long polls.
        #: It runs under the put lock, so it must only record the event.
        self.message_arriving_listener: Callable[[str, int, int, int], None] | None = None
        #: Java 5.x's timer put hook (``HookUtils.handleScheduleMessage``), set by the broker:
        #: rewrites a message with a delivery time to the timer topic, or returns a refusal.
        #: Called, before the append, for single puts whose properties mention ``TIMER_``.
        self.timer_hook: Callable[[MessageExtBrokerInner], PutMessageStatus | None] | None = None
        #: the C accelerator's group commit flusher, which a StoreDriver runs with SYNC_FLUSH
        #: (None: the group commit thread calls fdatasync itself)
        self.sync_flusher_class = speedups.SyncFlusher if speedups else None
        sync = config.flush_disk_type is FlushDiskType.SYNC_FLUSH
        #: prepares CommitLog pages ahead of the appends, when a driver thread runs it: faults
        #: them in (ASYNC_FLUSH), or zeroes them on disk (SYNC_FLUSH; see PageWarmer)
        self.page_warmer = PageWarmer(zero=sync, put_lock=self.put_lock)
        #: the one-call append of the C accelerator (None: every put takes the general path).
        #: SYNC_FLUSH appends with pwrite, not through the mapping (see NativeAppender).
        self.appender: NativeAppender | None = None
        if speedups is not None:
            self.appender = NativeAppender(speedups.append_message, config, self.commit_log,
                                           self.consume_queue_table, self.index_service, self.page_warmer,
                                           self._store_host_bytes, config.max_message_size + 64 * 1024, sync)
        self.recovery = StoreRecovery(self)
        self.clean_service = CleanService(self, disk_used_ratio)
        self.reader = StoreReader(self)
        #: the runtime info's put and get figures (Java's StoreStatsService); the owner calls
        #: its ``sampling`` every second
        self.store_stats_service = StoreStatsService(self.now_ms)

    def now_ms(self) -> int:
        return int(self.now() * 1000)

    def set_store_host(self, host: str, port: int) -> None:
        """The address written as STOREHOSTADDRESS (a broker on port 0 knows it after binding)."""
        self.config.store_host = (host, port)
        self._store_host = (host, port)
        self._store_host_bytes = pack_host(host, port)
        if self.appender is not None:
            self.appender.store_host_bytes = self._store_host_bytes

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
        self.recovery.recover(self.last_exit_ok)
        # recovery dispatched every complete record: a slave's reput goes on from the end
        self.reput_from_offset = self.commit_log.get_max_offset()
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

    def simulate_crash(self) -> None:
        """
        Stop as a SIGKILL would, for crash tests and the bench: close every file, flushing and
        writing nothing (the page cache keeps what was written) and leaving the ``abort``
        marker, so that the next store on the directory recovers as after a crash. Stop a
        :class:`~rocketmq_tx.store.flush.StoreDriver` running the store first.
        """
        self.shutdown_flag = True
        with self.put_lock:  # the page warmer takes a file's descriptor under it
            self.commit_log.close()
        for queues in self.consume_queue_table.values():
            for cq in queues.values():
                cq.close()
        self.index_service.close()
        if self.checkpoint is not None:
            self.checkpoint.close()
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1

    def destroy(self) -> None:
        """Delete every file of the store (Java ``destroy``); the store must be shut down."""
        shutil.rmtree(self.config.store_path_root_dir, ignore_errors=True)

    def destroy_logics(self) -> None:
        """Destroy every ConsumeQueue (recovery, when the CommitLog has no file left)."""
        self._forget_queues()
        for queues in self.consume_queue_table.values():
            for cq in queues.values():
                cq.destroy()
        self.consume_queue_table.clear()

    def _forget_queues(self) -> None:
        # every removal of a ConsumeQueue goes through here: the appender caches them
        if self.appender is not None:
            self.appender.forget_queues()

    # ------------------------------------------------------------------ dispatch

    def find_consume_queue(self, topic: str, queue_id: int, create: bool = True) -> ConsumeQueue | None:
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

    def dispatch(self, req: DispatchRequest) -> None:
        """Java ``doDispatch``: ConsumeQueue (NOT_TYPE and COMMIT only) and index."""
        self._dispatch_fields(req.topic, req.queue_id, req.commit_log_offset, req.msg_size, req.tags_code,
                              req.store_timestamp, req.consume_queue_offset, req.keys, req.uniq_key,
                              req.sys_flag, req.tags)

    def _dispatch_fields(self, topic: str, queue_id: int, phys: int, size: int, tags_code: int,
                         store_timestamp: int, queue_offset: int, keys: str, uniq_key: str | None,
                         sys_flag: int, tags: str | None) -> None:
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

    # ------------------------------------------------------------------ slave (HA)

    def append_to_commit_log(self, start_offset: int, data: bytes, dispatch: bool = True) -> bool:
        """
        A slave's append of the CommitLog bytes its master pushed (Java
        ``appendToCommitLog``), then the dispatch of every record they complete (Java's
        ReputMessageService on a slave). *data* is one HA batch (32 KiB by default), so the
        work per call is bounded.

        :param dispatch: ``False``: the append only; the caller dispatches later with
            :meth:`dispatch_appended` (the HA client reports the append to its master first,
            as Java's does, whose dispatch runs on another thread).
        :return: ``False`` when the bytes do not continue this log (nothing written).
        """
        if self.shutdown_flag:
            log.warning("message store is shut down; HA append refused")
            return False
        with self.put_lock:
            try:
                if not self.commit_log.append_data(start_offset, data):
                    return False
            except OSError as e:
                log.error("HA append: cannot create a mapped file: %s", e)
                return False
            if dispatch:
                self.reput()
        return True

    def dispatch_appended(self) -> None:
        """Dispatch what :meth:`append_to_commit_log` appended with ``dispatch=False``."""
        if self.shutdown_flag:
            return
        with self.put_lock:
            self.reput()

    def reput(self) -> None:
        """
        Dispatch the complete records between :attr:`reput_from_offset` and the CommitLog's
        end to the ConsumeQueues and the index. A record still partly missing (a batch ends
        inside it) waits for the next append, as does a BLANK filler until its file is whole.
        """
        q = self.commit_log.mapped_file_queue
        # an empty slave's first file is the master's last one, not offset 0
        off = max(self.reput_from_offset, q.get_min_offset())
        end = q.get_max_offset()
        delay_levels = self.delay_levels
        while off < end:
            f = q.find_mapped_file_by_offset(off)
            if f is None:
                break
            pos = off - f.file_from_offset
            avail = f.wrote_position - pos
            full = f.wrote_position >= f.file_size
            if avail < 8:
                if full:
                    off = f.file_tail_offset
                    continue
                break
            total, magic = BLANK_HEAD.unpack_from(f.mm, pos)
            if magic == BLANK_MAGIC_CODE:
                if full:
                    off = f.file_tail_offset
                    continue
                break
            if total > avail:
                break
            req, size = check_message_and_return_size(f.mm, pos, check_crc=False, delay_levels=delay_levels)
            if req is None or size <= 0:
                # Java's slave stops its reput there too (and logs); the HA stream is the
                # master's own bytes, so this means a corrupt transfer or a corrupt master.
                log.error("HA reput: invalid record at CommitLog offset %d; dispatch stops there", off)
                break
            try:
                self.dispatch(req)
            except MessageFormatError as e:
                log.warning("HA reput: record at %d not dispatched: %s", off, e)
            tx = req.sys_flag & _TX_MASK
            if tx == _NOT_TYPE or tx == _COMMIT:
                self.topic_queue_table[f"{req.topic}-{req.queue_id}"] = req.consume_queue_offset + 1
            f.store_timestamp = req.store_timestamp
            off += size
        self.reput_from_offset = off

    # ------------------------------------------------------------------ put

    def _check_store_status(self) -> PutMessageStatus | None:
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
        begin = self.now()
        result = self.async_put_message(msg)
        if result.flush_future is not None:
            result = self._wait_flush(result)
        self.note_put_time(result, int(self.now() * 1000) - int(begin * 1000))
        return result

    def put_messages(self, batch: MessageExtBatch) -> PutMessageResult:
        """Append a batch (one record per inner message, consecutive queue offsets)."""
        begin = self.now()
        result = self._wait_flush(self.async_put_messages(batch))
        self.note_put_time(result, int(self.now() * 1000) - int(begin * 1000))
        return result

    def note_put_time(self, result: PutMessageResult, elapsed_ms: int) -> None:
        """
        Count a finished put in the latency figures (the async puts' owner calls this once
        their flush and replica waits are settled). Java times the puts that reach the
        CommitLog: one refused before it (the store not writable, a bad topic) has no append
        result and is left out.
        """
        if result.append_result is None and result.status is not PutMessageStatus.PUT_OK:
            return
        self.store_stats_service.put_time(elapsed_ms, result.status is PutMessageStatus.PUT_OK)

    def _wait_flush(self, result: PutMessageResult) -> PutMessageResult:
        fut = result.flush_future
        if fut is None:
            return result
        gc = self.group_commit_service
        assert gc is not None
        if not gc.has_driver:
            gc.commit()
        append = result.append_result
        assert append is not None  # a put with a flush future has appended
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
        hook = self.timer_hook
        if hook is not None and b"TIMER_" in msg.properties:
            refused = hook(msg)
            if refused is not None:
                return PutMessageResult(refused)
            if len(msg.properties) > _MAX_PROPS:
                return PutMessageResult(PutMessageStatus.PROPERTIES_SIZE_EXCEEDED)
            topic_bytes = msg.topic.encode()
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
        topic = msg.topic
        with self.put_lock:
            store_ts = int(self.now() * 1000)
            key = f"{topic}-{msg.queue_id}"
            counts = tx == _NOT_TYPE or tx == _COMMIT
            queue_offset = self.topic_queue_table.get(key, 0) if counts else 0
            placed = None
            try:
                appender = self.appender
                if counts and appender is not None and topic != RMQ_SYS_SCHEDULE_TOPIC:
                    # The common case in one C call; None, with nothing written, sends the put
                    # down _append_general, which rolls files over and handles every other case.
                    placed = appender.append(msg, key, queue_offset, store_ts, topic_bytes, keys, uniq, tags)
                    if placed is not None:
                        self.topic_queue_table[key] = queue_offset + 1
                        self.last_dispatch_timestamp = store_ts
                        listener = self.message_arriving_listener
                        if listener is not None:
                            listener(topic, msg.queue_id, queue_offset + 1, placed[2])
                if placed is None:
                    placed = self._append_general(msg, topic, key, counts, queue_offset, store_ts, pm, keys, uniq,
                                                  tags)
            except CommitLogWriteError as e:  # the C call's pwrite: nothing was moved
                log.error("put message: writing the CommitLog failed: %s", e)
                return PutMessageResult(PutMessageStatus.UNKNOWN_ERROR,
                                        AppendMessageResult(AppendMessageStatus.UNKNOWN_ERROR))
            except OSError as e:
                log.error("put message: cannot create a mapped file: %s", e)
                return PutMessageResult(PutMessageStatus.CREATE_MAPEDFILE_FAILED,
                                        AppendMessageResult(AppendMessageStatus.UNKNOWN_ERROR))
            except MessageFormatError as e:
                log.warning("put message: %s", e)
                return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL)
        if placed.__class__ is PutMessageResult:
            return placed
        phys, size, _ = placed
        stats = self.store_stats_service
        stats.put_message_times_total += 1
        stats.put_message_size_total += size
        result = PutMessageResult(PutMessageStatus.PUT_OK, AppendMessageResult(
            AppendMessageStatus.PUT_OK, phys, size, None, store_ts, queue_offset, 1, 0.0, store_host))
        if self.group_commit_service is None:
            return result
        return self._handle_flush(result, phys + size, msg.wait_store_msg_ok)

    def _append_general(self, msg: MessageExtBrokerInner, topic: str, key: str, counts: bool, queue_offset: int,
                        store_ts: int, pm: dict | None, keys: str, uniq: str | None, tags: str | None):
        """
        Any put (the Python twin of :class:`NativeAppender`): ``(phys, size, tags code)``, or
        the error result. Raises OSError and MessageFormatError.
        """
        store_host_bytes = self._store_host_bytes if msg.store_host is None else pack_host(*msg.store_host)
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
        self.page_warmer.clear_for(self.commit_log.mapped_file_queue.last(), size)
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
        return phys, size, tags_code

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
                self.page_warmer.clear_for(self.commit_log.mapped_file_queue.last(), total)
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
            stats = self.store_stats_service
            stats.put_message_times_total += len(records)
            stats.put_message_size_total += total
            ids = []
            p = phys
            for m, r in zip(inners, records):
                properties = m.get_properties()
                self.dispatch(DispatchRequest(
                    m.topic, m.queue_id, p, len(r),
                    tags_code_of(m.topic, properties, store_ts, self.delay_levels), store_ts, queue_offset,
                    properties.get(MessageConst.PROPERTY_KEYS, ""),
                    properties.get(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX), m.sys_flag, 0,
                    tags=properties.get(MessageConst.PROPERTY_TAGS)))
                ids.append(offset_msg_id(store_host, p))
                queue_offset += 1
                p += len(r)
        append = AppendMessageResult(AppendMessageStatus.PUT_OK, phys, total, ",".join(ids), store_ts,
                                     first_queue_offset, len(records))
        return self._handle_flush(PutMessageResult(PutMessageStatus.PUT_OK, append), phys + total,
                                  batch.wait_store_msg_ok)

    def _handle_flush(self, result: PutMessageResult, end_offset: int, wait: bool) -> PutMessageResult:
        gc = self.group_commit_service
        if gc is not None:
            if wait:
                result.flush_future = gc.put_request(end_offset)
            else:
                gc.flush_soon(end_offset)
        return result

    # ------------------------------------------------------------------ flush (FlushManager)

    def attach_sync_flusher(self) -> None:
        """
        SYNC_FLUSH with the C accelerator: start its flusher thread and hand it the group
        commit's fdatasync (:class:`~rocketmq_tx.store.flush.StoreDriver` does this).
        """
        self.flush_manager.attach_sync_flusher(self.sync_flusher_class)

    def detach_sync_flusher(self) -> None:
        """Stop the C flusher (after it syncs what was asked of it); Python flushes again."""
        self.flush_manager.detach_sync_flusher()

    def flush_commit_log(self, least_pages: int = 0) -> int:
        """Flush the CommitLog if *least_pages* dirty pages (0 = any); return the flushed offset."""
        return self.flush_manager.flush_commit_log(least_pages)

    def flush(self) -> int:
        """Flush the CommitLog fully (Java ``DefaultMessageStore.flush``)."""
        return self.flush_manager.flush_commit_log(0)

    def flush_consume_queue(self, now: float | None = None, thorough: bool = False) -> None:
        """ConsumeQueues, index and checkpoint (:meth:`FlushManager.flush_consume_queue`)."""
        self.flush_manager.flush_consume_queue(self.now() if now is None else now, thorough)

    # ------------------------------------------------------------------ reads (StoreReader)

    def get_message(self, group: str, topic: str, queue_id: int, offset: int, max_msg_nums: int,
                    message_filter: MessageFilter | None = None) -> GetMessageResult:
        """Java ``getMessage``: records of one queue from *offset* on (:meth:`StoreReader.get_message`)."""
        begin = self.now()
        result = self.reader.get_message(group, topic, queue_id, offset, max_msg_nums, message_filter)
        found = result.status is GetMessageStatus.FOUND
        self.store_stats_service.get_time(int(self.now() * 1000) - int(begin * 1000), found,
                                          len(result.message_buffers) if found else 0)
        return result

    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int:
        return self.reader.get_max_offset_in_queue(topic, queue_id)

    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int:
        return self.reader.get_min_offset_in_queue(topic, queue_id)

    def get_commit_log_offset_in_queue(self, topic: str, queue_id: int, consume_queue_offset: int) -> int:
        return self.reader.get_commit_log_offset_in_queue(topic, queue_id, consume_queue_offset)

    def get_offset_in_queue_by_time(self, topic: str, queue_id: int, timestamp: int) -> int:
        return self.reader.get_offset_in_queue_by_time(topic, queue_id, timestamp)

    def get_earliest_message_time(self, topic: str | None = None, queue_id: int = 0) -> int:
        return self.reader.get_earliest_message_time(topic, queue_id)

    def get_message_store_timestamp(self, topic: str, queue_id: int, consume_queue_offset: int) -> int:
        return self.reader.get_message_store_timestamp(topic, queue_id, consume_queue_offset)

    def get_max_phy_offset(self) -> int:
        return self.commit_log.get_max_offset()

    def get_min_phy_offset(self) -> int:
        return self.commit_log.get_min_offset()

    def select_one_message_by_offset(self, commit_log_offset: int, size: int | None = None) -> bytes | None:
        return self.reader.select_one_message_by_offset(commit_log_offset, size)

    def look_message_by_offset(self, commit_log_offset: int, size: int | None = None) -> MessageExt | None:
        return self.reader.look_message_by_offset(commit_log_offset, size)

    def query_message(self, topic: str, key: str, max_num: int, begin: int, end: int) -> QueryMessageResult:
        return self.reader.query_message(topic, key, max_num, begin, end)

    # ------------------------------------------------------------------ clean-up (CleanService)

    def delete_expired(self, now: float | None = None) -> int:
        """Expired CommitLog files, then ConsumeQueue and index files (:meth:`CleanService.delete_expired`)."""
        return self.clean_service.delete_expired(now)

    def execute_delete_files_manually(self) -> None:
        self.clean_service.execute_delete_files_manually()

    @property
    def _manual_delete(self) -> int:
        # read by broker/test/test_admin.py, from before the count moved to the CleanService
        return self.clean_service.manual_delete

    def clean_unused_topic(self, keep: Iterable[str], only: str | None = None) -> int:
        """Java ``cleanUnusedTopic`` (:meth:`CleanService.clean_unused_topic`): queues destroyed."""
        with self.put_lock:  # a put must not recreate a queue being destroyed
            self._forget_queues()
            return self.clean_service.clean_unused_topic(keep, only)

    def clean_expired_consume_queue(self) -> int:
        """Java ``cleanExpiredConsumerQueue`` (:meth:`CleanService.clean_expired_consume_queue`)."""
        with self.put_lock:
            self._forget_queues()
            return self.clean_service.clean_expired_consume_queue()

    # ------------------------------------------------------------------ misc

    def dispatch_behind_bytes(self) -> int:
        """Replicated bytes not yet dispatched (a slave's record split by a batch; 0 on a master)."""
        if self.config.broker_role is not BrokerRole.SLAVE:
            return 0
        return max(0, self.commit_log.get_max_offset() - self.reput_from_offset)

    def lock_time_mills(self) -> int:
        """
        Java's ``pageCacheLockTimeMills``: Java answers how long the current put has held the
        CommitLog's put lock. Our appends run on the caller's thread and are done before it
        can ask, so this answers the nearest thing that can be in progress: how long the
        current CommitLog flush (a group commit batch with SYNC_FLUSH, the periodic flush with
        ASYNC_FLUSH) has been running; 0 when none is.
        """
        began = self.flush_manager.busy_since()
        if not began:
            return 0
        return max(0, self.now_ms() - int(began * 1000))

    def remain_how_many_data_to_flush(self) -> int:
        """CommitLog bytes written and not yet flushed (Java ``remainHowManyDataToFlush``)."""
        return max(0, self.commit_log.get_max_offset() - self.commit_log.flushed_where)

    def get_runtime_info(self) -> dict[str, str]:
        """
        Java ``DefaultMessageStore.getRuntimeInfo``: the stats service's figures, the disks'
        used ratios (per CommitLog path and the least of them; the ConsumeQueue directory's)
        and the CommitLog's offsets.
        """
        info = self.store_stats_service.runtime_info()
        least = float("inf")
        for path in self.config.store_path_commit_log.strip().split(";"):
            ratio = disk_partition_used_percent(path)
            info[f"commitLogDiskRatio_{path}"] = double_to_string(ratio)
            least = min(least, ratio)
        info["commitLogDiskRatio"] = double_to_string(least)
        info["consumeQueueDiskRatio"] = double_to_string(
            disk_partition_used_percent(self.config.store_path_consume_queue))
        info["commitLogMinOffset"] = str(self.commit_log.get_min_offset())
        info["commitLogMaxOffset"] = str(self.commit_log.get_max_offset())
        return info

    def get_running_data_info(self) -> dict:
        return {
            "commitLogMinOffset": self.commit_log.get_min_offset(),
            "commitLogMaxOffset": self.commit_log.get_max_offset(),
            "flushedWhere": self.commit_log.flushed_where,
        }


def _with_phys(record: bytes, phys: int) -> bytes:
    # PHYSICALOFFSET sits at byte 28 of every record.
    return record[:28] + phys.to_bytes(8, "big", signed=True) + record[36:]
