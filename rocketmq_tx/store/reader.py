# -*- test-case-name: rocketmq_tx.store.test.test_store -*-
"""
The store's read side (Java ``DefaultMessageStore.getMessage``, the offset lookups and
``queryMessage``): records of a queue for a pull, offsets by queue, time and key, records by
physical offset. Reads run beside the appends without the put lock, as Java's do.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from rocketmq_tx.common.errors import MessageFormatError
from rocketmq_tx.common.message import MessageConst, MessageExt, string_to_properties
from rocketmq_tx.common.messagecodec import MESSAGE_MAGIC_CODE_V2, decode_message, java_string_hash
from rocketmq_tx.common.native import speedups
from rocketmq_tx.common.sysflag import MessageSysFlag
from rocketmq_tx.store.config import BrokerRole
from rocketmq_tx.store.consumequeue import FILLER_SIZE
from rocketmq_tx.store.formats import CQ_ENTRY, CQ_STORE_UNIT_SIZE
from rocketmq_tx.store.status import GetMessageResult, GetMessageStatus

if TYPE_CHECKING:
    from rocketmq_tx.store.mappedfile import MappedFile
    from rocketmq_tx.store.store import DefaultMessageStore

__all__ = ["MessageFilter", "CommitLogFilter", "TagsFilter", "QueryMessageResult", "StoreReader", "record_properties"]


class MessageFilter(Protocol):
    """
    Java ``MessageFilter``: the ConsumeQueue check on the tag hash, and optionally (an
    attribute ``is_matched_by_commit_log``, ``None`` or absent when the filter needs no
    properties) the check on the record's decoded properties, for SQL92 subscriptions.
    """

    def is_matched_by_consume_queue(self, tags_code: int) -> bool: ...


class CommitLogFilter(MessageFilter, Protocol):
    """A filter with Java's second check: the properties of the CommitLog record (with
    ``TAGS``; ``None`` when the record's properties cannot be read)."""

    def is_matched_by_commit_log(self, properties: Mapping[str, str] | None) -> bool: ...


_INT = struct.Struct(">i")
_SHORT = struct.Struct(">h")
_BORN_V6 = MessageSysFlag.BORNHOST_V6_FLAG
_STORE_V6 = MessageSysFlag.STOREHOSTADDRESS_V6_FLAG


def _record_properties(record: bytes) -> dict[str, str] | None:
    """
    The properties of one CommitLog record (Java ``MessageDecoder.decodeProperties``),
    skipping the body and everything else; ``None`` for a record too short or inconsistent.
    """
    try:
        magic = _INT.unpack_from(record, 4)[0]
        sys_flag = _INT.unpack_from(record, 36)[0]
        # BODYLENGTH follows BORNHOST, STORETIMESTAMP, STOREHOST, RECONSUMETIMES, PREPAREDOFFSET.
        at = 48 + (20 if sys_flag & _BORN_V6 else 8) + 8 + (20 if sys_flag & _STORE_V6 else 8) + 12
        body_length = _INT.unpack_from(record, at)[0]
        if body_length < 0:
            return None
        at += 4 + body_length
        if magic == MESSAGE_MAGIC_CODE_V2:
            topic_length = _SHORT.unpack_from(record, at)[0]
            if topic_length < 0:
                return None
            at += 2 + topic_length
        else:
            at += 1 + record[at]
        length = _SHORT.unpack_from(record, at)[0]
    except (struct.error, IndexError):
        return None
    start = at + 2
    if length < 0 or start + length > len(record):
        return None
    return string_to_properties(str(record[start:start + length], "utf-8", "replace")) if length else {}


#: The SQL92 scan reads every candidate record's properties: in C it is about a fifth of the cost.
record_properties: Callable[[bytes], dict[str, str] | None] = \
    speedups.record_properties if speedups else _record_properties


class TagsFilter:
    """Subscription by tag hash codes (``None`` = every tag, Java's ``*``)."""

    def __init__(self, tags: list[str] | None = None) -> None:
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


class StoreReader:
    """The reads of one :class:`~rocketmq_tx.store.store.DefaultMessageStore`, which delegates to it."""

    def __init__(self, store: DefaultMessageStore) -> None:
        self._store = store
        self.config = store.config
        self.commit_log = store.commit_log
        self.index_service = store.index_service
        self._total_memory = _total_memory()

    def get_message(self, group: str, topic: str, queue_id: int, offset: int, max_msg_nums: int,
                    message_filter: MessageFilter | None = None) -> GetMessageResult:
        """Java ``DefaultMessageStore.getMessage``: records of one queue from *offset* on."""
        result = GetMessageResult()
        if self._store.shutdown_flag and self._store.checkpoint is None:
            result.status = GetMessageStatus.NO_MATCHED_LOGIC_QUEUE
            result.next_begin_offset = offset
            return result
        cfg = self.config
        max_offset_py = self.commit_log.get_max_offset()
        cq = self._store.find_consume_queue(topic, queue_id, create=False)
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
                max_filter_bytes = max(16000, max_msg_nums * CQ_STORE_UNIT_SIZE)
                buf = cq.get_index_buffer(offset, max_filter_bytes)
                if buf is None:
                    status = GetMessageStatus.OFFSET_FOUND_NULL
                    next_begin = self._correct(offset, cq.roll_next_file(offset))
                else:
                    data, _ = buf
                    status = GetMessageStatus.NO_MATCHED_MESSAGE
                    next_phy_file_start = -1
                    max_phy_pulling = 0
                    memory = self._total_memory * cfg.access_message_in_memory_max_ratio // 100
                    limit = min(len(data), max_filter_bytes)
                    # SQL92: the properties of each record whose tag hash passed (Java's second check).
                    by_log = getattr(message_filter, "is_matched_by_commit_log", None)
                    i = 0
                    unpack = CQ_ENTRY.unpack_from
                    # The CommitLog file of the last record read: consecutive entries mostly
                    # point into the same one, so the lookup is skipped for them.
                    log_file: MappedFile | None = None
                    log_from = log_end = 0
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
                        record = None
                        if not log_from <= offset_py < log_end or offset_py + size_py > log_end:
                            log_file = self.commit_log.mapped_file_queue.find_mapped_file_by_offset(
                                offset_py, offset_py == 0)
                            if log_file is not None:
                                log_from = log_file.file_from_offset
                                log_end = log_from + log_file.wrote_position
                            else:
                                log_from = log_end = 0
                        if log_file is not None and log_from <= offset_py and offset_py + size_py <= log_end:
                            record = log_file.read(offset_py - log_from, size_py)
                        if record is None:
                            if result.buffer_total_size == 0:
                                status = GetMessageStatus.MESSAGE_WAS_REMOVING
                            next_phy_file_start = self.commit_log.roll_next_file(offset_py)
                            i += CQ_STORE_UNIT_SIZE
                            continue
                        if by_log is not None and not by_log(record_properties(record)):
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

    def properties_in_queue(self, topic: str, queue_id: int, offset: int) -> dict[str, str] | None:
        """The properties of the message at *offset* of a queue (long polling's SQL92 check), or ``None``."""
        cq = self._store.find_consume_queue(topic, queue_id, create=False)
        entry = cq.get_entry(offset) if cq is not None else None
        if entry is None:
            return None
        record = self.commit_log.get_message(entry[0], entry[1])
        return record_properties(record) if record is not None else None

    # -- offsets and lookups

    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int:
        cq = self._store.find_consume_queue(topic, queue_id, create=False)
        return cq.get_max_offset_in_queue() if cq is not None else 0

    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int:
        # Java's findConsumeQueue creates the queue, so an unused one answers 0, never -1.
        cq = self._store.find_consume_queue(topic, queue_id, create=False)
        return cq.get_min_offset_in_queue() if cq is not None else 0

    def get_commit_log_offset_in_queue(self, topic: str, queue_id: int, consume_queue_offset: int) -> int:
        cq = self._store.find_consume_queue(topic, queue_id, create=False)
        if cq is None:
            return 0
        entry = cq.get_entry(consume_queue_offset)
        return entry[0] if entry is not None else 0

    def get_offset_in_queue_by_time(self, topic: str, queue_id: int, timestamp: int) -> int:
        cq = self._store.find_consume_queue(topic, queue_id, create=False)
        if cq is None:
            return 0
        return cq.get_offset_in_queue_by_time(timestamp, self.commit_log.pickup_store_timestamp,
                                              self.commit_log.get_min_offset())

    def get_earliest_message_time(self, topic: str | None = None, queue_id: int = 0) -> int:
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
        cq = self._store.find_consume_queue(topic, queue_id, create=False)
        if cq is None:
            return -1
        entry = cq.get_entry(cq.get_min_offset_in_queue())
        if entry is None:
            return -1
        return self.commit_log.pickup_store_timestamp(entry[0], entry[1])

    def get_message_store_timestamp(self, topic: str, queue_id: int, consume_queue_offset: int) -> int:
        cq = self._store.find_consume_queue(topic, queue_id, create=False)
        if cq is None:
            return -1
        entry = cq.get_entry(consume_queue_offset)
        if entry is None:
            return -1
        return self.commit_log.pickup_store_timestamp(entry[0], entry[1])

    def select_one_message_by_offset(self, commit_log_offset: int, size: int | None = None) -> bytes | None:
        """The raw record at a physical offset (size read from the record when not given)."""
        if size is None:
            return self.commit_log.get_record(commit_log_offset)
        return self.commit_log.get_message(commit_log_offset, size)

    def look_message_by_offset(self, commit_log_offset: int, size: int | None = None) -> MessageExt | None:
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
