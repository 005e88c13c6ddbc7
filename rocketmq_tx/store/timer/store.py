# -*- test-case-name: rocketmq_tx.store.timer.test.test_store -*-
"""
Java 5.x ``TimerMessageStore``, synchronous and sliced: the broker calls :meth:`enqueue` and
:meth:`dequeue` with a budget on its reactor, and :meth:`flush` (the parts that touch the
disk) in a thread.

Enqueue reads ``rmq_sys_wheel_timer`` queue 0 from :attr:`curr_queue_offset`: a message due
before the wheel's write time (now, rounded down to the precision) is delivered at once
(``TIMER_ENQUEUE_MS`` = Long.MAX_VALUE, as Java marks it); any other gets a TimerLog unit
chained into the wheel slot of its time. A time beyond the roll window
(``timerRollWindowSlot``) is parked at most that far ahead with the roll magic, and when that
slot comes the message is written back to the timer topic (``TIMER_ROLL_TIMES`` + 1) to be
enqueued again.

Dequeue reads the slot at :attr:`curr_read_time_ms` once the write time has passed it: the
slot's units are walked back from its lastPos (the chain of prevPos), then the delete
markers (``TIMER_DEL_UNIQKEY``) are applied and the others delivered in enqueue order to
their real topic and queue. A slot of many units is walked and delivered over several calls;
the read time, and so the checkpoint, moves past a slot only once it is done (a crash in the
middle delivers the slot again: at least once, as Java).

Recovery (Java ``recover``): the TimerLog is checked from the last file of the checkpoint
on, re-linking the wheel's lastPos, cut at the first bad unit; the queue offset resumes after
the message of the last unit (never past the checkpoint's); the read time resumes at the
checkpoint's.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rocketmq_tx.common.message import MessageConst, MessageExt, properties_to_string
from rocketmq_tx.common.messagecodec import java_string_hash
from rocketmq_tx.store.commitlog import MessageExtBrokerInner
from rocketmq_tx.store.consumequeue import FILLER_SIZE
from rocketmq_tx.store.formats import CQ_ENTRY, CQ_STORE_UNIT_SIZE
from rocketmq_tx.store.mappedfile import MappedFile
from rocketmq_tx.store.status import PutMessageStatus
from rocketmq_tx.store.timer.checkpoint import TimerCheckpoint, timer_check_path
from rocketmq_tx.store.timer.formats import (
    BLANK_MAGIC_CODE,
    MAGIC_DEFAULT,
    MAGIC_DELETE,
    MAGIC_ROLL,
    UNIT,
    UNIT_SIZE,
    CheckpointData,
    TimerUnit,
    is_magic_ok,
)
from rocketmq_tx.store.timer.hook import TIMER_TOPIC, java_parse_long
from rocketmq_tx.store.timer.metrics import TimerMetrics, timer_metrics_path
from rocketmq_tx.store.timer.timerlog import TimerLog, timer_log_path
from rocketmq_tx.store.timer.wheel import IGNORE, TimerWheel, timer_wheel_path

if TYPE_CHECKING:
    from rocketmq_tx.store.config import MessageStoreConfig
    from rocketmq_tx.store.store import DefaultMessageStore

__all__ = ["TimerMessageStore", "TIMER_WHEEL_TTL_DAY", "DAY_SECS", "TIMER_BLANK_SLOTS", "LONG_MAX"]

log = logging.getLogger("rocketmq_tx.store.timer")

TIMER_WHEEL_TTL_DAY = 7
DAY_SECS = 24 * 3600
TIMER_BLANK_SLOTS = 60
LONG_MAX = 2**63 - 1
#: tries of a failed put back to the real topic (Java without timerEnableRetryUntilSuccess)
PUT_RETRIES = 3
#: empty wheel slots passed per unit of a dequeue budget
EMPTY_SLOTS_PER_UNIT = 64
_PUT_RETRY = {PutMessageStatus.SERVICE_NOT_AVAILABLE, PutMessageStatus.FLUSH_DISK_TIMEOUT,
              PutMessageStatus.FLUSH_SLAVE_TIMEOUT, PutMessageStatus.OS_PAGECACHE_BUSY,
              PutMessageStatus.CREATE_MAPEDFILE_FAILED, PutMessageStatus.SLAVE_NOT_AVAILABLE,
              PutMessageStatus.UNKNOWN_ERROR}


@dataclass(slots=True)
class _Request:
    """Java ``TimerRequest``: one unit read from a slot."""

    offset_py: int
    size_py: int
    delayed_time: int
    enqueue_time: int
    magic: int


class TimerMessageStore:
    """
    :param store: the loaded message store (its CommitLog and the timer topic's ConsumeQueue).
    :param config: the store settings (``timer*`` keys).
    :param now_ms: the clock.
    """

    def __init__(self, store: DefaultMessageStore, config: MessageStoreConfig,
                 now_ms: Callable[[], int]) -> None:
        self.store = store
        self.config = config
        self.now_ms = now_ms
        self.precision_ms = config.timer_precision_ms
        root = config.store_path_root_dir
        self.slots_total = TIMER_WHEEL_TTL_DAY * DAY_SECS
        roll = config.timer_roll_window_slot
        if roll > self.slots_total - TIMER_BLANK_SLOTS or roll < 2:
            roll = self.slots_total - TIMER_BLANK_SLOTS
        self.timer_roll_window_slots = roll
        self.wheel = TimerWheel(timer_wheel_path(root), self.slots_total, self.precision_ms)
        self.timer_log = TimerLog(timer_log_path(root), config.mapped_file_size_timer_log)
        self.checkpoint = TimerCheckpoint(timer_check_path(root))
        self.metrics = TimerMetrics(timer_metrics_path(root), now_ms)
        self.curr_read_time_ms = 0
        self.curr_write_time_ms = 0
        self.commit_read_time_ms = 0
        self.curr_queue_offset = 0
        self.commit_queue_offset = 0
        self._last_commit = (0, 0)
        self.running = False
        # the slot being dequeued: the chain still to walk, then the requests to deliver
        self._chain_pos: int | None = None
        self._normal: list[_Request] = []
        self._deletes: list[_Request] = []
        self._delete_keys: set[str] = set()
        self._deliver_index = 0
        self._walked = False
        self._put_failures = 0
        self._stalled = False
        self._metrics_written = ""
        self._catch_up_until = 0
        self._slot_num = 0
        self.congest_num = 0
        #: timers put into the wheel and taken out of it (for the TPS of runtime info)
        self.enqueued = 0
        self.dequeued = 0
        self._backlog: collections.deque[int] = collections.deque()
        self._random = random.Random()

    # ------------------------------------------------------------------ lifecycle

    def load(self) -> bool:
        """Java ``load``: the TimerLog files and the metrics, then :meth:`recover`."""
        ok = self.timer_log.load()
        ok = ok and self.metrics.load()
        if ok:
            self.recover()
        return ok

    def _format(self, t: int) -> int:
        return t // self.precision_ms * self.precision_ms

    def recover(self) -> None:
        """Java ``recover`` (see the module docstring)."""
        cp = self.checkpoint.data
        mfq = self.timer_log.mapped_file_queue
        last = mfq.last()
        last_flush = cp.last_timer_log_flush_pos
        if last is not None:
            last_flush -= last.file_size
        process_offset = self._recover_and_revise(max(last_flush, 0), True)
        mfq.flushed_where = process_offset
        queue_offset = self._revise_queue_offset(process_offset)
        curr = cp.last_timer_queue_offset if queue_offset == -1 else queue_offset + 1
        curr = min(curr, cp.master_timer_queue_offset)
        cq = self.store.find_consume_queue(TIMER_TOPIC, 0, create=False)
        if cq is not None:
            lo, hi = cq.get_min_offset_in_queue(), cq.get_max_offset_in_queue()
            if curr < lo:
                log.warning("Timer currQueueOffset:%d is smaller than minOffsetInQueue:%d", curr, lo)
                curr = lo
            elif curr > hi:
                log.warning("Timer currQueueOffset:%d is larger than maxOffsetInQueue:%d", curr, hi)
                curr = hi
        self.curr_queue_offset = curr
        read = cp.last_read_time_ms
        floor = self._format(self.now_ms()) - self.slots_total * self.precision_ms \
            + TIMER_BLANK_SLOTS * self.precision_ms
        self.curr_read_time_ms = max(read, floor)
        min_first = self.wheel.check_phy_pos(self.curr_read_time_ms, process_offset)
        if min_first < process_offset:
            log.warning("Timer recheck because of minFirst:%d processOffset:%d", min_first, process_offset)
            self._recover_and_revise(min_first, False)
        log.info("Timer recover ok currReadTimerMs:%d currQueueOffset:%d checkQueueOffset:%d processOffset:%d",
                 self.curr_read_time_ms, self.curr_queue_offset, cp.last_timer_queue_offset, process_offset)
        self.commit_read_time_ms = self.curr_read_time_ms
        self.commit_queue_offset = self.curr_queue_offset
        # Java then steps through every slot up to now, 7 days of them on a new store. Nothing
        # new can land below the write time (a timer due before it is delivered at once), so
        # only the slots holding something now need a visit: the rest is jumped over.
        #: Java ``getAllCongestNum``: timers in the slots from the read time on
        self.congest_num = self.wheel.get_all_num(self.curr_read_time_ms)
        self._catch_up_until = self._format(self.now_ms())
        self._backlog = collections.deque(
            t for t in self.wheel.slot_times(self.curr_read_time_ms) if t < self._catch_up_until)
        self.prepare_checkpoint()

    def _recover_and_revise(self, begin: int, check: bool) -> int:
        """Java ``recoverAndRevise``: re-link the wheel from the units at and after *begin*'s file."""
        mfq = self.timer_log.mapped_file_queue
        files = mfq.files
        if not files:
            return 0
        index = len(files) - 1
        while index > 0 and begin < files[index].file_from_offset:
            index -= 1
        check_offset = files[index].file_from_offset
        for f in files[index:]:
            end = f.file_size if check else f.wrote_position
            mm = f.mm
            position = 0
            stop = False
            while position + UNIT_SIZE <= end:
                size, _prev, magic, write_time, delay, _off, _sz, _h, _r = UNIT.unpack_from(mm, position)
                if magic == BLANK_MAGIC_CODE:
                    break
                if check and (not is_magic_ok(magic) or size != UNIT_SIZE):
                    stop = True
                    break
                if size == UNIT_SIZE and is_magic_ok(magic):
                    self.wheel.revise_slot(write_time + delay, IGNORE, f.file_from_offset + position, True)
                position += UNIT_SIZE
            check_offset = f.file_from_offset + position
            if stop:
                break
        if check:
            mfq.truncate_dirty_files(check_offset)
        return check_offset

    def _revise_queue_offset(self, process_offset: int) -> int:
        """Java ``reviseQueueOffset``: the timer-topic queue offset of the last unit's message, or -1."""
        if process_offset < UNIT_SIZE:
            return -1
        got = self.timer_log.read_unit(process_offset - UNIT_SIZE)
        if got is None or got[0] != UNIT_SIZE or not is_magic_ok(got[1].magic):
            return -1  # e.g. the end of a file closed by a blank: the checkpoint's offset then
        unit = got[1]
        try:
            msg = self.store.look_message_by_offset(unit.offset_py, unit.size_py)
        except Exception as e:  # a unit pointing at no record
            log.warning("reviseQueueOffset: no message at %d/%d: %s", unit.offset_py, unit.size_py, e)
            return -1
        if msg is None:
            return -1
        cq = self.store.find_consume_queue(TIMER_TOPIC, msg.queue_id, create=False)
        if cq is None:
            return msg.queue_offset
        tmp = msg.queue_offset
        for _ in range(20000):
            if tmp < 0:
                log.warning("reviseQueueOffset: message %d/%d not found in the ConsumeQueue",
                            unit.offset_py, unit.size_py)
                break
            entry = cq.get_entry(tmp)
            if entry is not None and entry[0] == unit.offset_py and entry[1] == unit.size_py:
                return tmp
            tmp -= 1
        return msg.queue_offset

    def start(self) -> None:
        self.maybe_move_write_time()
        self.running = True
        log.info("Timer start ok currReadTimerMs:%d queueOffset:%d", self.curr_read_time_ms, self.curr_queue_offset)

    def shutdown(self) -> None:
        """Checkpoint and close the files (Java ``shutdown``)."""
        if not self.running and self.checkpoint.fd < 0:
            return
        self.running = False
        self.timer_log.flush()  # first, so the checkpoint can claim all of it
        self.prepare_checkpoint()
        self.timer_log.shutdown()
        self.wheel.shutdown()
        self.metrics.persist()
        self.checkpoint.shutdown()

    # ------------------------------------------------------------------ checkpoint

    def maybe_move_write_time(self) -> None:
        now = self._format(self.now_ms())
        if self.curr_write_time_ms < now:
            self.curr_write_time_ms = now

    def prepare_checkpoint(self) -> CheckpointData:
        """Java ``prepareTimerCheckPoint`` (a master: the master offset is ours)."""
        cp = self.checkpoint.data
        cp.last_timer_log_flush_pos = self.timer_log.mapped_file_queue.flushed_where
        cp.last_read_time_ms = self.commit_read_time_ms
        cp.master_timer_queue_offset = self.commit_queue_offset
        if (self.commit_read_time_ms, self.commit_queue_offset) != self._last_commit:
            cp.state_version = 0
            cp.timestamp = self.now_ms()
            cp.counter += 1
            self._last_commit = (self.commit_read_time_ms, self.commit_queue_offset)
        cp.last_timer_queue_offset = min(self.commit_queue_offset, cp.master_timer_queue_offset)
        return dataclasses.replace(cp)

    def flush(self, checkpoint: CheckpointData, metrics_text: str) -> None:
        """
        Java ``TimerFlushService``'s round: TimerLog, wheel, then the checkpoint prepared on the
        reactor before (so it never claims more than is on disk) and the metrics. Thread-safe
        against the reactor's appends (they only write past what is synced).
        """
        self.timer_log.flush()
        self.wheel.flush()
        self.checkpoint.flush(checkpoint)
        if metrics_text != self._metrics_written:  # Java rewrites it every second; unchanged is skipped
            if self.metrics.persist(metrics_text):
                self._metrics_written = metrics_text

    # ------------------------------------------------------------------ enqueue

    def enqueue(self, budget: int) -> int:
        """
        Java ``enqueue``: take up to *budget* new entries of the timer topic. Returns how many
        were taken (0: none waiting).
        """
        if not self.running or self.config.timer_stop_enqueue:
            return 0
        self.maybe_move_write_time()
        cq = self.store.find_consume_queue(TIMER_TOPIC, 0, create=False)
        if cq is None:
            self.commit_queue_offset = self.curr_queue_offset
            return 0
        lo = cq.get_min_offset_in_queue()
        if self.curr_queue_offset < lo:
            log.warning("Timer currQueueOffset:%d is smaller than minOffsetInQueue:%d", self.curr_queue_offset, lo)
            self.curr_queue_offset = lo
        taken = 0
        while taken < budget:
            offset = self.curr_queue_offset
            if offset >= cq.get_max_offset_in_queue():
                break
            buf = cq.get_index_buffer(offset, (budget - taken) * CQ_STORE_UNIT_SIZE)
            if buf is None:
                break
            data = buf[0]
            for pos in range(0, len(data) - CQ_STORE_UNIT_SIZE + 1, CQ_STORE_UNIT_SIZE):
                phy, size, _tags = CQ_ENTRY.unpack_from(data, pos)
                if not (phy == 0 and size == FILLER_SIZE):
                    if not self._enqueue_one(phy, size):
                        self.commit_queue_offset = self.curr_queue_offset
                        return taken  # a put failed: this entry again next time
                self.curr_queue_offset = offset = offset + 1
                taken += 1
                if taken >= budget:
                    break
        self.commit_queue_offset = self.curr_queue_offset
        return taken

    def _enqueue_one(self, phy: int, size: int) -> bool:
        msg = self.store.look_message_by_offset(phy, size)
        if msg is None:
            log.warning("timer: no message at CommitLog offset %d size %d; skipped", phy, size)
            return True
        try:
            delayed = java_parse_long(msg.properties.get(MessageConst.PROPERTY_TIMER_OUT_MS))
        except ValueError:
            # Java throws and retries the entry forever; skipping keeps the queue moving
            log.error("timer: message at %d in %s has no valid TIMER_OUT_MS; skipped", msg.commit_log_offset,
                      TIMER_TOPIC)
            return True
        if delayed < self.curr_write_time_ms:
            # already due: straight to its topic, marked as never enqueued
            msg.properties[MessageConst.PROPERTY_TIMER_ENQUEUE_MS] = str(LONG_MAX)
            return self._put_back(msg, LONG_MAX, False) is not None
        return self._do_enqueue(phy, size, delayed, msg)

    def _do_enqueue(self, offset_py: int, size_py: int, delayed: int, msg: MessageExt) -> bool:
        """Java ``doEnqueue``: append a unit and link it into its slot."""
        write_time = self.curr_write_time_ms
        p = self.precision_ms
        roll = self.timer_roll_window_slots
        magic = MAGIC_DEFAULT
        if delayed - write_time >= roll * p:
            magic |= MAGIC_ROLL
            if delayed - write_time - roll * p < roll // 3 * p:
                delayed = write_time + roll // 2 * p  # leaves time enough for the next roll
            else:
                delayed = write_time + roll * p
        is_delete = MessageConst.PROPERTY_TIMER_DEL_UNIQKEY in msg.properties
        if is_delete:
            magic |= MAGIC_DELETE
        real_topic = msg.properties.get(MessageConst.PROPERTY_REAL_TOPIC)
        slot = self.wheel.get_slot(delayed)
        unit = TimerUnit(slot.last_pos, magic, write_time, delayed - write_time, offset_py, size_py,
                         java_string_hash(real_topic) if real_topic else 0)
        try:
            pos = self.timer_log.append(unit.encode())
        except OSError as e:
            log.error("timer: cannot append to the TimerLog: %s", e)
            return False
        self.wheel.put_slot(delayed, pos if slot.first_pos == -1 else slot.first_pos, pos,
                            slot.num - 1 if is_delete else slot.num + 1, slot.magic)
        self.congest_num += -1 if is_delete else 1
        self.enqueued += 1
        self._add_metric(msg, -1 if is_delete else 1)
        return True

    def _add_metric(self, msg: MessageExt, value: int) -> None:
        topic = msg.properties.get(MessageConst.PROPERTY_REAL_TOPIC)
        if topic is None or msg.properties.get(MessageConst.PROPERTY_TIMER_ENQUEUE_MS) == str(LONG_MAX):
            return
        self.metrics.add_and_get(topic, value)

    def is_reject(self, deliver_ms: int) -> bool:
        """Java ``isReject``: flow control of a crowded slot (``timerCongestNumEachSlot``)."""
        congest = self.wheel.get_num(deliver_ms)
        limit = self.config.timer_congest_num_each_slot
        if congest <= limit:
            return False
        if congest >= limit * 2:
            return True
        return self._random.randrange(1000) > 1000 * (congest - limit) / (limit + 0.1)

    # ------------------------------------------------------------------ dequeue

    def dequeue(self, budget: int) -> int:
        """
        Work on the due slots for about *budget* units (a unit read, a message delivered or
        an empty slot passed). Returns the work done; -1 when the read time has caught up with
        the write time (nothing due).
        """
        if not self.running or self.config.timer_stop_dequeue:
            return -1
        self.maybe_move_write_time()
        done = 0
        # An empty slot costs a few microseconds: they are passed in bulk (a fresh store starts
        # reading 7 days back, as Java's, and catches up through some 600 000 of them).
        empty = 0
        while done < budget:
            if self._chain_pos is None:
                if self.curr_read_time_ms >= self.curr_write_time_ms:
                    return done if done else -1
                slot = self.wheel.get_slot(self.curr_read_time_ms)
                if slot.time_ms == -1 and self.curr_read_time_ms < self._catch_up_until:
                    backlog = self._backlog
                    while backlog and backlog[0] <= self.curr_read_time_ms:
                        backlog.popleft()
                    self.curr_read_time_ms = min(backlog[0], self._catch_up_until) if backlog \
                        else self._catch_up_until
                    self.commit_read_time_ms = self.curr_read_time_ms
                    done += 1
                    continue
                if slot.time_ms == -1:
                    self._move_read_time()
                    empty += 1
                    if empty % EMPTY_SLOTS_PER_UNIT == 0:
                        done += 1
                    continue
                done += 1
                self._chain_pos = slot.last_pos
                self._slot_num = slot.num
                self._normal, self._deletes, self._delete_keys, self._deliver_index = [], [], set(), 0
                self._walked = False
            done += self._walk(budget - done)
            if self._chain_pos != -1:
                continue  # budget spent inside the chain
            if not self._walked:
                self._walked = True
                self._normal.reverse()  # walked newest first; delivered in enqueue order
            done += self._deliver(budget - done)
            if self._stalled:
                self._stalled = False
                return -1  # a put to retry: not before the next tick
            if self._deliver_index < len(self._deletes) + len(self._normal):
                continue
            self._chain_pos = None
            self._normal, self._deletes = [], []
            self.congest_num -= self._slot_num
            self._move_read_time()
        return done

    def _walk(self, budget: int) -> int:
        n = 0
        while self._chain_pos is not None and self._chain_pos != -1 and n < budget:
            got = self.timer_log.read_unit(self._chain_pos)
            n += 1
            if got is None:
                log.warning("timer: slot %d points at TimerLog %d, which is gone", self.curr_read_time_ms,
                            self._chain_pos)
                self._chain_pos = -1
                break
            size, unit = got
            if size != UNIT_SIZE or not is_magic_ok(unit.magic) or unit.prev_pos >= self._chain_pos:
                # a damaged chain (a link must point back): stop here rather than loop
                log.error("timer: bad TimerLog unit at %d in the chain of slot %d; the rest is skipped",
                          self._chain_pos, self.curr_read_time_ms)
                self._chain_pos = -1
                break
            req = _Request(unit.offset_py, unit.size_py, unit.deliver_time_ms, unit.curr_write_time_ms, unit.magic)
            if unit.magic & MAGIC_DELETE and not unit.magic & MAGIC_ROLL:
                self._deletes.append(req)
            else:
                self._normal.append(req)
            self._chain_pos = unit.prev_pos
        return n

    def _deliver(self, budget: int) -> int:
        n = 0
        deletes, normal = self._deletes, self._normal
        while n < budget:
            i = self._deliver_index
            if i >= len(deletes) + len(normal):
                break
            n += 1
            if i < len(deletes):
                req = deletes[i]
                msg = self.store.look_message_by_offset(req.offset_py, req.size_py)
                key = None if msg is None else msg.properties.get(MessageConst.PROPERTY_TIMER_DEL_UNIQKEY)
                if key is not None:
                    self._delete_keys.add(key)
                self._deliver_index += 1
                continue
            req = normal[i - len(deletes)]
            msg = self.store.look_message_by_offset(req.offset_py, req.size_py)
            if msg is None:
                log.warning("timer: no message at CommitLog offset %d; skipped", req.offset_py)
                self._deliver_index += 1
                continue
            roll = bool(req.magic & MAGIC_ROLL)
            uniq = msg.properties.get(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
            real_topic = msg.properties.get(MessageConst.PROPERTY_REAL_TOPIC)
            if uniq is not None and self._delete_keys and f"{real_topic}+{uniq}" in self._delete_keys:
                self._deliver_index += 1
                continue
            self.dequeued += 1
            if self._put_back(msg, req.enqueue_time, roll) is None:
                # Java retries a failed put 3 times, 500 ms apart, then drops the message
                self._put_failures += 1
                if self._put_failures < PUT_RETRIES:
                    self._stalled = True
                    return n
                log.error("timer: message at CommitLog offset %d not delivered after %d tries; dropped",
                          req.offset_py, self._put_failures)
            else:
                self._add_metric(msg, -1)
            self._put_failures = 0
            self._deliver_index += 1
        return n

    def _move_read_time(self) -> None:
        self.curr_read_time_ms += self.precision_ms
        self.commit_read_time_ms = self.curr_read_time_ms

    def _put_back(self, msg: MessageExt, enqueue_time: int, roll: bool) -> PutMessageStatus | None:
        """Java ``convert`` + ``doPut``: ``None`` when the put should be retried."""
        inner = self.convert(msg, enqueue_time, roll)
        if inner is None:
            log.error("timer: message at %d has no usable REAL_TOPIC/REAL_QID; skipped", msg.commit_log_offset)
            return PutMessageStatus.MESSAGE_ILLEGAL
        if not roll and MessageConst.PROPERTY_TIMER_DEL_UNIQKEY in msg.properties:
            return PutMessageStatus.MESSAGE_ILLEGAL  # Java: a delete marker is never put
        result = self.store.put_message(inner)
        status = result.status if result is not None else PutMessageStatus.UNKNOWN_ERROR
        if status in _PUT_RETRY:
            log.warning("timer: put to %s failed (%s); retrying later", inner.topic, status.name)
            return None
        if status is not PutMessageStatus.PUT_OK:
            log.warning("timer: the store refuses the message for %s (%s); skipped", inner.topic, status.name)
        return status

    def convert(self, msg: MessageExt, enqueue_time: int, roll: bool) -> MessageExtBrokerInner | None:
        """
        Java ``convert``/``convertMessage``: the record written back. Java serialises the
        properties before it drops REAL_TOPIC and REAL_QID from the map, so the stored record
        keeps them (and TIMER_OUT_MS); only the map the put hooks see loses them.
        """
        props = dict(msg.properties)
        if enqueue_time != -1:
            props[MessageConst.PROPERTY_TIMER_ENQUEUE_MS] = str(enqueue_time)
        if roll:
            try:
                times = int(props.get(MessageConst.PROPERTY_TIMER_ROLL_TIMES, "0"))
            except ValueError:
                times = 0
            props[MessageConst.PROPERTY_TIMER_ROLL_TIMES] = str(times + 1)
        props[MessageConst.PROPERTY_TIMER_DEQUEUE_MS] = str(self.now_ms())
        text = properties_to_string(props)
        if roll:
            topic, queue_id = msg.topic, msg.queue_id
        else:
            topic = props.pop(MessageConst.PROPERTY_REAL_TOPIC, "")
            try:
                queue_id = int(props.pop(MessageConst.PROPERTY_REAL_QUEUE_ID, ""))
            except ValueError:
                return None
            if not topic:
                return None
        tags = props.get(MessageConst.PROPERTY_TAGS)
        return MessageExtBrokerInner(
            topic=topic, body=msg.body, properties=text.encode("utf-8"), queue_id=queue_id, flag=msg.flag,
            sys_flag=msg.sys_flag, born_timestamp=msg.born_timestamp, born_host=msg.born_host,
            store_host=msg.store_host, reconsume_times=msg.reconsume_times,
            tags_code=java_string_hash(tags) if tags else 0, property_map=props, wait_store_msg_ok=False)

    def delete_expired_timer_log(self) -> int:
        """
        Java's 30-second TimerLog clean-up (``deleteExpiredFileByOffsetForTimerLog``): files,
        never the last, whose last unit points below the CommitLog's first byte.
        """
        min_py = self.store.get_min_phy_offset()
        check = self.timer_log.offset_for_last_unit()

        def max_offset_py(f: MappedFile) -> int | None:
            size, unit = TimerUnit.decode(f.mm, check)
            return unit.offset_py if size == UNIT_SIZE and is_magic_ok(unit.magic) else None
        return self.timer_log.mapped_file_queue.delete_expired_file_by_offset(min_py, UNIT_SIZE, max_offset_py)

    # ------------------------------------------------------------------ status

    def checkpoint_bytes(self) -> bytes:
        """GET_TIMER_CHECK_POINT's body: Java ``TimerCheckpoint.encode`` of the live checkpoint."""
        return self.checkpoint.data.encode()

    def enqueue_behind_messages(self) -> int:
        cq = self.store.find_consume_queue(TIMER_TOPIC, 0, create=False)
        return (cq.get_max_offset_in_queue() if cq is not None else 0) - self.curr_queue_offset

    def dequeue_behind_millis(self) -> int:
        return self.now_ms() - self.curr_read_time_ms
