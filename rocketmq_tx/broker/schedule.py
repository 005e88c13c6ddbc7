# -*- test-case-name: rocketmq_tx.broker.test.test_schedule -*-
"""
Delay-level scheduling (Java 4.9 ``ScheduleMessageService``).

The store rewrites a message carrying ``DELAY`` to ``SCHEDULE_TOPIC_XXXX`` queue ``level - 1``
with ``REAL_TOPIC``/``REAL_QID`` properties; its ConsumeQueue tagsCode is the deliver time in
ms. This service walks each level's queue and, once an entry is due, writes the message back
to its real topic and queue.

Synchronous and timer-free (no Twisted here): the broker calls :meth:`deliver_due` about every
100 ms and writes :meth:`snapshot` (in a thread) every ``flushDelayOffsetInterval`` (10 s)
and at shutdown. Java runs it on the master only. It needs a
:class:`~rocketmq_tx.store.store.DefaultMessageStore` that is already loaded (it reads the
ConsumeQueues directly, as Java does). Not thread-safe: call it from one thread (the reactor's).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rocketmq_tx.common.message import MessageConst, MessageExt, properties_to_string
from rocketmq_tx.common.messagecodec import java_string_hash
from rocketmq_tx.store.commitlog import RMQ_SYS_SCHEDULE_TOPIC, MessageExtBrokerInner
from rocketmq_tx.store.configfile import ConfigFile
from rocketmq_tx.store.consumequeue import FILLER_SIZE
from rocketmq_tx.store.formats import CQ_ENTRY, CQ_STORE_UNIT_SIZE
from rocketmq_tx.store.status import PutMessageStatus

if TYPE_CHECKING:
    from rocketmq_tx.store.store import DefaultMessageStore

__all__ = ["ScheduleMessageService", "RMQ_SYS_TRANS_HALF_TOPIC", "delay_offset_path"]

log = logging.getLogger("rocketmq_tx.broker.schedule")

RMQ_SYS_TRANS_HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
#: Java's key prefix in the broker runtime info (``RunningStats.scheduleMessageOffset``).
RUNTIME_KEY_PREFIX = "scheduleMessageOffset_"


def delay_offset_path(store_root: str) -> str:
    """Java ``StorePathConfigHelper.getDelayOffsetStorePath``: ``<root>/config/delayOffset.json``."""
    return os.path.join(store_root, "config", "delayOffset.json")


class ScheduleMessageService:
    """
    :param store: a loaded ``DefaultMessageStore``.
    :param config_path: where ``delayOffset.json`` lives (see :func:`delay_offset_path`).
    :param now_ms: clock in ms; defaults to the store's clock so both agree.
    :param batch_size: most entries handled per level per :meth:`deliver_due` call, so one call
        cannot hold the reactor for long after a backlog (Java handles one ConsumeQueue file per
        100 ms timer run).
    """

    def __init__(self, store: DefaultMessageStore, config_path: str, now_ms: Callable[[], int] | None = None,
                 batch_size: int = 1000) -> None:
        self.store = store
        self.delay_level_table: dict[int, int] = store.config.delay_levels()
        self.max_delay_level = max(self.delay_level_table) if self.delay_level_table else 0
        #: level -> next ConsumeQueue offset to deliver in SCHEDULE_TOPIC_XXXX queue level - 1.
        #: Like Java, a level only gets an entry once its offset has moved (or was loaded).
        self.offset_table: dict[int, int] = {}
        self.batch_size = batch_size
        self._file = ConfigFile(config_path)
        self._now_ms: Callable[[], int] = now_ms if now_ms is not None else store.now_ms
        # level -> (offset, tagsCode) of the first entry found not yet due. Entries of a level
        # are due in queue order, so while the level's offset is unchanged nothing behind the
        # head can be due either: a tick then costs one dict lookup per level.
        self._head: dict[int, tuple[int, int]] = {}

    # ------------------------------------------------------------------ persistence

    def encode(self, pretty: bool = False) -> str:
        """
        The offset table as fastjson 1.2.69 writes ``DelayOffsetSerializeWrapper`` (4.9.8):
        integer keys unquoted, ascending (``ConcurrentHashMap`` order for small Integer keys).
        fastjson's pretty mode puts no line break before a non-String map key, hence
        ``{1:0,2:5\\n\\t}`` (fastjson ``MapSerializer``; matches a file a 4.9.7 broker wrote).
        """
        entries = ",".join(f"{level}:{offset}" for level, offset in sorted(self.offset_table.items()))
        if not pretty:
            return '{"offsetTable":{' + entries + "}}"
        return '{\n\t"offsetTable":{' + entries + ("\n\t}" if entries else "}") + "\n}"

    def offset_table_json(self) -> str:
        """GET_ALL_DELAY_OFFSET (45) body text: Java ``ScheduleMessageService.encode()`` (compact)."""
        return self.encode(pretty=False)

    def decode(self, data: Any) -> None:
        """Merge a parsed ``delayOffset.json`` into the table (Java ``putAll``)."""
        if not isinstance(data, dict):
            raise ValueError("delayOffset.json is not a JSON object")
        table = data.get("offsetTable") or {}
        if not isinstance(table, dict):
            raise ValueError("delayOffset.json offsetTable is not an object")
        for level, offset in table.items():
            self.offset_table[int(level)] = int(offset)

    def load(self) -> bool:
        """
        Read ``delayOffset.json`` (falling back to ``.bak``), then clamp each offset into its
        queue's [min, max] (Java ``correctDelayOffset``). A missing file is an empty table.

        :return: ``False`` when a file exists but neither it nor its ``.bak`` can be used.
        """
        data = self._file.load()
        if data is None:
            for path in (self._file.path, self._file.bak_path):
                if _has_content(path):
                    log.error("cannot load %s nor its .bak", self._file.path)
                    return False
        else:
            try:
                self.decode(data)
            except (ValueError, TypeError) as e:
                log.error("bad %s: %s", self._file.path, e)
                return False
        self._head.clear()
        self.correct_delay_offset()
        return True

    def correct_delay_offset(self) -> None:
        """Java ``correctDelayOffset``: an offset outside its queue is moved to the nearest end."""
        for level in self.delay_level_table:
            cq = self.store.find_consume_queue(RMQ_SYS_SCHEDULE_TOPIC, level - 1, create=False)
            current = self.offset_table.get(level)
            if current is None or cq is None:
                continue
            lo, hi = cq.get_min_offset_in_queue(), cq.get_max_offset_in_queue()
            corrected = min(max(current, lo), hi)
            if corrected != current:
                log.error("delay level %d: offset %d outside schedule queue [%d, %d]; corrected to %d",
                          level, current, lo, hi, corrected)
                self.offset_table[level] = corrected

    @property
    def file(self) -> ConfigFile:
        return self._file

    def snapshot(self) -> str:
        """What :meth:`persist` writes (a few levels: cheap enough to take on any thread)."""
        return self.encode(pretty=True)

    def persist(self) -> bool:
        """Write ``delayOffset.json`` pretty-printed, as Java's ``ConfigManager.persist``."""
        return self._file.persist(self.snapshot())

    # ------------------------------------------------------------------ delivery

    def compute_deliver_timestamp(self, level: int, store_timestamp: int) -> int:
        """Java ``computeDeliverTimestamp`` (unknown level: one second)."""
        delay = self.delay_level_table.get(level)
        return store_timestamp + (delay if delay is not None else 1000)

    def deliver_due(self, now_ms: int | None = None) -> int:
        """
        Deliver every due entry of every level, in queue order within a level.

        :return: how many messages were written back to their real topic.
        """
        now = self._now_ms() if now_ms is None else now_ms
        delivered = 0
        for level, delay in self.delay_level_table.items():
            delivered += self._deliver_level(level, delay, now)
        return delivered

    def next_due_ms(self, now_ms: int | None = None) -> int | None:
        """
        The earliest deliver time among the entries waiting now (``now`` if some are due), or
        ``None`` if every level is drained. A message put later may be due earlier (a short
        level), so a broker sleeping until this time must still wake up after puts.
        """
        now = self._now_ms() if now_ms is None else now_ms
        earliest: int | None = None
        for level, delay in self.delay_level_table.items():
            offset = self.offset_table.get(level, 0)
            head = self._head.get(level)
            if head is None or head[0] != offset:
                cq = self.store.find_consume_queue(RMQ_SYS_SCHEDULE_TOPIC, level - 1, create=False)
                if cq is None or offset >= cq.get_max_offset_in_queue():
                    continue
                entry = cq.get_entry(offset) if offset >= cq.get_min_offset_in_queue() else None
                if entry is None or (entry[0] == 0 and entry[1] == FILLER_SIZE):
                    return now  # needs a deliver_due pass to sort out
                head = (offset, entry[2])
                self._head[level] = head
            due = _correct_deliver_timestamp(now, head[1], delay)
            earliest = due if earliest is None else min(earliest, due)
        if earliest is not None and earliest < now:
            return now
        return earliest

    def _deliver_level(self, level: int, delay: int, now: int) -> int:
        """Java ``DeliverDelayedMessageTimerTask.executeOnTimeup`` for one level."""
        offset = self.offset_table.get(level, 0)
        head = self._head.get(level)
        if head is not None and head[0] == offset and _correct_deliver_timestamp(now, head[1], delay) > now:
            return 0
        cq = self.store.find_consume_queue(RMQ_SYS_SCHEDULE_TOPIC, level - 1, create=False)
        if cq is None:
            return 0
        delivered = 0
        while delivered < self.batch_size:
            lo, hi = cq.get_min_offset_in_queue(), cq.get_max_offset_in_queue()
            if offset < lo or offset > hi:
                # files expired under us, or the queue was truncated: Java resets the same way
                log.error("delay level %d: offset %d outside schedule queue [%d, %d]; reset",
                          level, offset, lo, hi)
                offset = lo if offset < lo else hi
                self.offset_table[level] = offset
                self._head.pop(level, None)
            if offset >= hi:
                return delivered
            buf = cq.get_index_buffer(offset, (self.batch_size - delivered) * CQ_STORE_UNIT_SIZE)
            if buf is None:
                return delivered  # Java also just retries 100 ms later
            data = buf[0]
            for pos in range(0, len(data) - CQ_STORE_UNIT_SIZE + 1, CQ_STORE_UNIT_SIZE):
                phy, size, tags_code = CQ_ENTRY.unpack_from(data, pos)
                if not (phy == 0 and size == FILLER_SIZE):
                    if _correct_deliver_timestamp(now, tags_code, delay) > now:
                        self._head[level] = (offset, tags_code)
                        return delivered
                    outcome = self._deliver_one(level, offset, phy, size)
                    if outcome is None:
                        return delivered  # put failed: retry this entry next tick
                    delivered += outcome
                offset += 1
                self.offset_table[level] = offset
                if delivered >= self.batch_size:
                    break
        return delivered

    def _deliver_one(self, level: int, offset: int, phy: int, size: int) -> int | None:
        """1 if delivered, 0 if the entry was skipped, ``None`` if the put failed."""
        msg = self.store.look_message_by_offset(phy, size)
        if msg is None:
            # Java skips an unreadable record (e.g. CommitLog file already deleted)
            log.warning("delay level %d offset %d: no message at CommitLog offset %d; skipped", level, offset, phy)
            return 0
        inner = message_timeup(msg)
        if inner is None:
            # Java throws here and retries the same entry forever; skipping keeps the level moving
            log.error("delay level %d offset %d: message %s has no usable REAL_TOPIC/REAL_QID; skipped",
                      level, offset, msg.offset_msg_id)
            return 0
        if inner.topic == RMQ_SYS_TRANS_HALF_TOPIC:
            log.error("[BUG] delay level %d offset %d: real topic is %s; message discarded",
                      level, offset, inner.topic)
            return 0
        result = self.store.put_message(inner)
        if result is not None and result.status in (PutMessageStatus.MESSAGE_ILLEGAL,
                                                    PutMessageStatus.PROPERTIES_SIZE_EXCEEDED):
            # The same put fails the same way every time (an illegal REAL_TOPIC, say): retrying
            # would stall the level behind it forever.
            log.error("delay level %d offset %d: the store refuses the message for %r (%s); skipped", level,
                      offset, inner.topic[:200], result.status.name)
            return 0
        if result is None or result.status is not PutMessageStatus.PUT_OK:
            log.warning("delay level %d offset %d: put to %s failed (%s); retrying later", level, offset,
                        inner.topic, None if result is None else result.status.name)
            return None
        return 1

    # ------------------------------------------------------------------ stats

    def runtime_info(self) -> dict[str, str]:
        """Java ``buildRunningStats``: ``scheduleMessageOffset_<level>`` = ``"offset,maxOffset"``."""
        info = {}
        for level, offset in sorted(self.offset_table.items()):
            max_offset = self.store.get_max_offset_in_queue(RMQ_SYS_SCHEDULE_TOPIC, level - 1)
            info[f"{RUNTIME_KEY_PREFIX}{level}"] = f"{offset},{max_offset}"
        return info


def message_timeup(msg: MessageExt) -> MessageExtBrokerInner | None:
    """
    Java ``messageTimeup``: the scheduled record rebuilt for its real topic and queue.

    Java serialises the properties *before* it removes ``DELAY`` (and sets ``WAIT=false``)
    on the shared map, so the record it stores still carries ``DELAY``, ``REAL_TOPIC``,
    ``REAL_QID`` and the original ``WAIT``; only the in-memory map loses ``DELAY``, which is
    what stops the store from scheduling the message again. Both are reproduced here:
    ``properties`` keeps the bytes, ``property_map`` is the cleared map the store consults.

    :return: ``None`` if REAL_TOPIC or REAL_QID is missing or malformed.
    """
    props = dict(msg.properties)
    properties_text = properties_to_string(props)
    real_topic = props.get(MessageConst.PROPERTY_REAL_TOPIC)
    try:
        queue_id = int(props.get(MessageConst.PROPERTY_REAL_QUEUE_ID, ""))
    except ValueError:
        return None
    if not real_topic:
        return None
    tags = props.get(MessageConst.PROPERTY_TAGS)
    props.pop(MessageConst.PROPERTY_DELAY_TIME_LEVEL, None)
    props[MessageConst.PROPERTY_WAIT_STORE_MSG_OK] = "false"
    return MessageExtBrokerInner(
        topic=real_topic,
        body=msg.body,
        properties=properties_text.encode("utf-8"),
        queue_id=queue_id,
        flag=msg.flag,
        sys_flag=msg.sys_flag,
        born_timestamp=msg.born_timestamp,
        born_host=msg.born_host,
        store_host=msg.store_host,
        reconsume_times=msg.reconsume_times,
        tags_code=java_string_hash(tags) if tags else 0,
        property_map=props,
        # not waiting for the flush: a timeout would make the service deliver it twice
        wait_store_msg_ok=False,
    )


def _correct_deliver_timestamp(now: int, deliver_timestamp: int, delay: int) -> int:
    """Java ``correctDeliverTimestamp``: a deliver time beyond now + delay (clock moved back) is now."""
    return now if deliver_timestamp > now + delay else deliver_timestamp


def _has_content(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            return bool(fh.read().strip())
    except OSError:
        return False
