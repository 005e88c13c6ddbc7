# -*- test-case-name: rocketmq_tx.store.test.test_store,rocketmq_tx.store.test.test_recovery -*-
"""
The CommitLog (Java ``CommitLog``): every message of every topic, appended as Java's record
(protocol notes §5.2) to a :class:`MappedFileQueue`, a BLANK filler ending each file.

This module appends, reads and recovers; :class:`~rocketmq_tx.store.store.DefaultMessageStore`
does the locking, the queue-offset table and the dispatch to the ConsumeQueue and the index.
"""

from __future__ import annotations

import logging
import struct
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import cast

from rocketmq_tx.common._batch import iter_batch_entries
from rocketmq_tx.common.errors import MessageFormatError
from rocketmq_tx.common.message import KEY_SEPARATOR, MessageConst, string_to_properties
from rocketmq_tx.common.messagecodec import (
    calc_record_size,
    decode_message,
    encode_record,
    java_string_hash,
    pack_host,
)
from rocketmq_tx.common.msgid import create_offset_msg_id
from rocketmq_tx.common.native import speedups
from rocketmq_tx.common.sysflag import BLANK_MAGIC_CODE, MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2, MessageSysFlag
from rocketmq_tx.store.formats import BLANK_HEAD, END_FILE_MIN_BLANK_LENGTH
from rocketmq_tx.store.mappedfile import MappedFile, MappedFileQueue

__all__ = [
    "RMQ_SYS_SCHEDULE_TOPIC",
    "MessageExtBrokerInner",
    "MessageExtBatch",
    "DispatchRequest",
    "CommitLog",
    "check_message_and_return_size",
    "tags_code_of",
]

log = logging.getLogger("rocketmq_tx.store")

RMQ_SYS_SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
_TX_MASK = MessageSysFlag.TRANSACTION_MASK
_PREPARED = MessageSysFlag.TRANSACTION_PREPARED_TYPE
_ROLLBACK = MessageSysFlag.TRANSACTION_ROLLBACK_TYPE
_INT = struct.Struct(">i")
_SHORT = struct.Struct(">h")


@dataclass(slots=True)
class MessageExtBrokerInner:
    """
    One message as the broker hands it to the store (Java ``MessageExtBrokerInner``).

    :ivar properties: the properties string as UTF-8 bytes, exactly as received.
    :ivar born_host: ``(ip, port)``.
    :ivar store_host: ``(ip, port)``; ``None`` takes the store's configured address.
    :ivar tags_code: ``None`` computes it from ``TAGS`` at dispatch.
    :ivar property_map: the parsed properties if the caller already has them.
    """

    topic: str
    body: bytes
    properties: bytes = b""
    queue_id: int = 0
    flag: int = 0
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: tuple[str, int] = ("127.0.0.1", 0)
    store_host: tuple[str, int] | None = None
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    tags_code: int | None = None
    property_map: dict | None = None
    wait_store_msg_ok: bool = True

    def get_properties(self) -> dict:
        if self.property_map is None:
            self.property_map = string_to_properties(self.properties.decode("utf-8", "replace")) \
                if self.properties else {}
        return self.property_map


@dataclass(slots=True)
class MessageExtBatch:
    """
    A SEND_BATCH_MESSAGE as the broker hands it to the store (Java ``MessageExtBatch``):
    *body* is the batch encoding (protocol notes §5.6) and *properties* the batch-level
    properties string appended to each inner message's own.
    """

    topic: str
    body: bytes
    properties: bytes = b""
    queue_id: int = 0
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: tuple[str, int] = ("127.0.0.1", 0)
    store_host: tuple[str, int] | None = None
    reconsume_times: int = 0
    wait_store_msg_ok: bool = True


@dataclass(slots=True)
class DispatchRequest:
    """What the ConsumeQueue and the index need from one record (Java ``DispatchRequest``)."""

    topic: str
    queue_id: int
    commit_log_offset: int
    msg_size: int
    tags_code: int
    store_timestamp: int
    consume_queue_offset: int
    keys: str = ""
    uniq_key: str | None = None
    sys_flag: int = 0
    prepared_transaction_offset: int = 0
    success: bool = True
    properties: dict = field(default_factory=dict)
    tags: str | None = None


def _get_property(properties: bytes, name: bytes) -> str | None:
    """
    One property straight from a properties string (*name* ends with 0x01), without parsing
    the rest; the last occurrence wins and an empty value counts as absent, as in Java.
    """
    if properties.__class__ is not bytes or name.__class__ is not bytes:
        if not (isinstance(properties, bytes) and isinstance(name, bytes)):  # as the C version
            raise TypeError("get_property(properties: bytes, name: bytes)")
    i = properties.rfind(name)
    while i != -1:
        if i == 0 or properties[i - 1] == 2:
            start = i + len(name)
            end = properties.find(b"\x02", start)
            if end == -1:
                end = len(properties)
            return properties[start:end].decode("utf-8", "replace") if end > start else None
        i = properties.rfind(name, 0, i)
    return None


get_property: Callable[[bytes, bytes], str | None] = speedups.get_property if speedups else _get_property


def tags_code_of(topic: str, properties: dict, store_timestamp: int, delay_levels: dict[int, int]) -> int:
    """
    ConsumeQueue tagsCode (protocol notes §5.7): the Java hash of TAGS, or for
    SCHEDULE_TOPIC_XXXX the deliver time of the delay level.
    """
    if topic == RMQ_SYS_SCHEDULE_TOPIC:
        level_text = properties.get(MessageConst.PROPERTY_DELAY_TIME_LEVEL)
        if level_text is not None:
            try:
                level = int(level_text)
            except ValueError:
                level = 0
            max_level = max(delay_levels) if delay_levels else 0
            level = min(level, max_level)
            if level > 0:
                delay = delay_levels.get(level)
                return store_timestamp + (delay if delay is not None else 1000)
    tags = properties.get(MessageConst.PROPERTY_TAGS)
    return _tags_hash(tags) if tags else 0


@lru_cache(maxsize=4096)
def _tags_hash(tags: str) -> int:
    return java_string_hash(tags)


def check_message_and_return_size(buf, offset: int, *, check_crc: bool,
                                  delay_levels: dict[int, int]) -> tuple[DispatchRequest | None, int]:
    """
    Parse the record at *offset* of a CommitLog file buffer (Java
    ``checkMessageAndReturnSize``).

    :return: ``(request, size)``: a valid record gives its request and size; the BLANK filler
        gives ``(None, 0)`` (go to the next file); anything else (zeros, torn or corrupt data)
        gives ``(None, -1)``.
    """
    if len(buf) - offset < 8:
        return None, -1
    total, magic = BLANK_HEAD.unpack_from(buf, offset)
    if magic == BLANK_MAGIC_CODE:
        return None, 0
    if magic != MESSAGE_MAGIC_CODE and magic != MESSAGE_MAGIC_CODE_V2:
        return None, -1
    if total <= 0 or total > len(buf) - offset:
        return None, -1
    try:
        msg, _end = decode_message(buf, offset, read_body=False, check_crc=check_crc)
    except MessageFormatError as e:
        log.warning("CommitLog record at file position %d is invalid: %s", offset, e)
        return None, -1
    if not msg.topic or not _tail_written(buf, offset, total, msg.sys_flag, len(msg.topic.encode())):
        return None, -1
    props = msg.properties
    req = DispatchRequest(
        topic=msg.topic,
        queue_id=msg.queue_id,
        commit_log_offset=msg.commit_log_offset,
        msg_size=total,
        tags_code=tags_code_of(msg.topic, props, msg.store_timestamp, delay_levels),
        store_timestamp=msg.store_timestamp,
        consume_queue_offset=msg.queue_offset,
        keys=props.get(MessageConst.PROPERTY_KEYS, ""),
        uniq_key=props.get(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX),
        sys_flag=msg.sys_flag,
        prepared_transaction_offset=msg.prepared_transaction_offset,
        properties=props,
        tags=props.get(MessageConst.PROPERTY_TAGS),
    )
    return req, total


def _tail_written(buf, offset: int, total: int, sys_flag: int, topic_length: int) -> bool:
    """
    A torn write leaves zeros at the end of a record, which BODYCRC does not cover: the last
    byte of a real record's properties (or, without properties, of its topic) is never 0.
    """
    fixed = calc_record_size(0, 0, 0, sys_flag) - 3  # up to and including BODYLENGTH
    body_length = _INT.unpack_from(buf, offset + fixed - 4)[0]
    props_length = total - calc_record_size(body_length, topic_length, 0, sys_flag)
    end = offset + total
    if props_length > 0:
        return buf[end - 1] != 0
    return buf[end - 3] != 0


_HEAD = struct.Struct(">iiiiiqqi")  # TOTALSIZE .. SYSFLAG
_FIXED = {flags: calc_record_size(0, 0, 0, flags) - 3 for flags in (0, 0x10, 0x20, 0x30)}


#: What recovery needs from a valid record, read without decoding its properties:
#: ``(topic, queue_id, commit_log_offset, size, sys_flag, file, position_in_file)``. A
#: plain tuple, because recovery makes one per record.
RecordInfo = tuple[str, int, int, int, int, MappedFile, int]

_BLANK = (0, None, 0, 0, 0)
_INVALID = (-1, None, 0, 0, 0)


#: BODY's start within a record by ``sysFlag & 0x30`` (IPv4/IPv6 born and store hosts), as a tuple
#: indexed by ``(sysFlag & 0x30) >> 4`` for the recovery loop.
_FIXED_BY_HOSTS = tuple(_FIXED[f] for f in (0, 0x10, 0x20, 0x30))


def _validate_record(buf, offset: int, check_crc: bool,
                     _topics: dict[bytes, str]) -> tuple[int, str | None, int, int, int]:
    """
    Structural check of the record at *offset* (the fast path of recovery): lengths agree with
    TOTALSIZE, the magic is known, the last byte is written, and optionally BODYCRC.

    It runs once per record of every file recovery scans, so it reads each field once and
    keeps the decoded topic names (few, and repeated) in *_topics* (cleared past 4096).

    :return: ``(size, topic, queue_id, physical_offset, sys_flag)`` for a valid record,
        ``(0, None, ...)`` for the BLANK filler, ``(-1, None, ...)`` otherwise.
    """
    avail = len(buf) - offset
    if avail < _HEAD.size or offset < 0:  # unpack_from would count a negative offset from the end
        if offset >= 0 and avail >= 8 and BLANK_HEAD.unpack_from(buf, offset)[1] == BLANK_MAGIC_CODE:
            return _BLANK
        return _INVALID
    total, magic, crc, queue_id, _flag, _qoff, phys, sys_flag = _HEAD.unpack_from(buf, offset)
    if magic == MESSAGE_MAGIC_CODE:
        width = 1
    elif magic == MESSAGE_MAGIC_CODE_V2:
        width = 2
    elif magic == BLANK_MAGIC_CODE:
        return _BLANK
    else:
        return _INVALID
    if total < _HEAD.size or total > avail:
        return _INVALID
    fixed = _FIXED_BY_HOSTS[(sys_flag & 0x30) >> 4]
    end = offset + total
    if total < fixed + width + 2:
        return _INVALID
    body_start = offset + fixed
    body_length = _INT.unpack_from(buf, body_start - 4)[0]
    body_end = body_start + body_length
    if body_length < 0 or body_end + width + 2 > end:
        return _INVALID
    topic_length = buf[body_end] if width == 1 else _SHORT.unpack_from(buf, body_end)[0]
    if topic_length <= 0 or (width == 1 and topic_length > 127):
        return _INVALID
    topic_end = body_end + width + topic_length
    if topic_end + 2 > end:
        return _INVALID
    props_length = _SHORT.unpack_from(buf, topic_end)[0]
    if props_length < 0 or topic_end + 2 + props_length != end:
        return _INVALID
    if (buf[end - 1] if props_length else buf[topic_end - 1]) == 0:
        return _INVALID
    if check_crc and zlib.crc32(buf[body_start:body_end]) & 0x7FFFFFFF != crc:
        return _INVALID
    raw = buf[body_end + width:topic_end]
    if raw.__class__ is not bytes:  # a bytearray's slice is no dict key; the C version keys by bytes
        raw = bytes(raw)
    topic = _topics.get(raw)
    if topic is None:
        topic = _topics[raw] = str(raw, "utf-8", "replace")
        if len(_topics) > 4096:
            _topics.clear()
    return total, topic, queue_id, phys, sys_flag


validate_record: Callable[[object, int, bool, dict], tuple[int, str | None, int, int, int]] = \
    speedups.validate_record if speedups else _validate_record


def iter_batch(body: bytes, batch_properties: bytes) -> Iterator[tuple[int, bytes, bytes]]:
    """
    Split a batch body (:func:`~rocketmq_tx.common._batch.iter_batch_entries`) into ``(flag,
    body, properties)``, the batch-level properties appended to each message's own with a
    0x02 separator in between when needed.

    :raises MessageFormatError: for a malformed batch.
    """
    # iter_batch_entries yields slices of *body*, so bytes here (its Buffer is not generic)
    entries = cast("Iterator[tuple[int, bytes, bytes]]", iter_batch_entries(body))
    for flag, entry_body, props in entries:
        if batch_properties:
            if props and not props.endswith(b"\x02"):
                props = props + b"\x02" + batch_properties
            else:
                props = props + batch_properties
        yield flag, entry_body, props


class CommitLog:
    """
    Appends and reads records; recovery finds the valid end after a restart.

    :ivar mapped_file_queue: the files.
    :ivar confirm_offset: not used by a single master; kept for the 5.x checkpoint field.
    """

    def __init__(self, store_path: str, mapped_file_size: int) -> None:
        self.mapped_file_queue = MappedFileQueue(store_path, mapped_file_size)
        self.mapped_file_size = mapped_file_size

    def load(self) -> bool:
        return self.mapped_file_queue.load()

    # -- offsets

    def get_min_offset(self) -> int:
        f = self.mapped_file_queue.first()
        return f.file_from_offset if f is not None else 0

    def get_max_offset(self) -> int:
        return self.mapped_file_queue.get_max_offset()

    def roll_next_file(self, offset: int) -> int:
        size = self.mapped_file_size
        return offset + size - offset % size

    # -- append

    def file_for_append(self) -> MappedFile:
        """The file to append to; raises ``OSError`` if a new one cannot be created."""
        f = self.mapped_file_queue.get_last_mapped_file(0, True)
        assert f is not None
        return f

    def reserve(self, size: int) -> tuple[MappedFile, int]:
        """
        The file and physical offset where *size* bytes will be appended, ending the current
        file with a BLANK filler first if they do not fit. Nothing of the record is written.

        :raises OSError: when a new file cannot be created.
        """
        f = self.file_for_append()
        free = f.file_size - f.wrote_position
        if size + END_FILE_MIN_BLANK_LENGTH > free:
            if free >= 8:
                f.write_at(f.wrote_position, BLANK_HEAD.pack(free, BLANK_MAGIC_CODE))
            f.wrote_position = f.file_size
            f = self.file_for_append()
        return f, f.file_from_offset + f.wrote_position

    def append_records(self, make: Callable[[int], bytes], size: int) -> tuple[MappedFile, int]:
        """
        Place *size* bytes, ending the current file with a BLANK filler if they do not fit.
        *make(physical_offset)* returns the encoded bytes.

        :return: the file and the physical offset written at.
        :raises OSError: when a new file cannot be created (nothing of the record is written).
        """
        f = self.file_for_append()
        free = f.file_size - f.wrote_position
        if size + END_FILE_MIN_BLANK_LENGTH > free:
            if free >= 8:
                f.write_at(f.wrote_position, BLANK_HEAD.pack(free, BLANK_MAGIC_CODE))
            f.wrote_position = f.file_size
            f = self.file_for_append()
        phys = f.file_from_offset + f.wrote_position
        data = make(phys)
        f.append_record(data)
        return f, phys

    def append_data(self, start_offset: int, data: bytes) -> bool:
        """
        A slave's append of raw bytes its master sent (Java ``CommitLog.appendData``): written
        verbatim at *start_offset*, which must be the log's end (or, for an empty log, a file
        start), within one file. The master's BLANK filler arrives as bytes like any other, so
        the files roll exactly where the master's did.

        :return: ``False`` (nothing written) when the bytes do not continue the log or do not
            fit in the file.
        :raises OSError: when a new file cannot be created.
        """
        q = self.mapped_file_queue
        size = self.mapped_file_size
        if q.last() is None:
            if start_offset < 0 or start_offset % size:
                log.error("HA append at %d: an empty CommitLog starts only at a file boundary", start_offset)
                return False
        elif start_offset != q.get_max_offset():
            log.error("HA append at %d, but the CommitLog ends at %d", start_offset, q.get_max_offset())
            return False
        if not data:
            return True
        pos = start_offset % size
        if pos + len(data) > size:
            log.error("HA append of %d bytes at %d crosses the end of a file", len(data), start_offset)
            return False
        f = q.get_last_mapped_file(start_offset, True)
        assert f is not None and f.file_from_offset + f.wrote_position == start_offset
        f.write_at(pos, data)
        f.wrote_position = pos + len(data)
        return True

    def get_data(self, offset: int, max_size: int) -> bytes | None:
        """
        At most *max_size* bytes from *offset* to the end of what its file holds (Java
        ``getData``, for the HA master): never across a file's end. ``None`` when nothing
        is there yet (or the file is gone).
        """
        f = self.mapped_file_queue.find_mapped_file_by_offset(offset, offset == 0)
        if f is None:
            return None
        pos = offset - f.file_from_offset
        if pos < 0 or pos >= f.wrote_position:
            return None
        return f.read(pos, min(max_size, f.wrote_position - pos))

    # -- reading

    def get_message(self, offset: int, size: int) -> bytes | None:
        """The *size* bytes at physical *offset*, or ``None`` if that file is gone."""
        f = self.mapped_file_queue.find_mapped_file_by_offset(offset, offset == 0)
        if f is None:
            return None
        pos = offset - f.file_from_offset
        if pos < 0 or pos + size > f.wrote_position:
            return None
        return f.read(pos, size)

    def get_record(self, offset: int) -> bytes | None:
        """
        The record at physical *offset*, its length read from its TOTALSIZE (one file lookup
        for both reads: END_TRANSACTION reads its half message this way), or ``None`` if that
        file is gone or the length is not a record's.
        """
        f = self.mapped_file_queue.find_mapped_file_by_offset(offset, offset == 0)
        if f is None:
            return None
        pos = offset - f.file_from_offset
        if pos < 0 or pos + 4 > f.wrote_position:
            return None
        head = f.read(pos, 4)
        if head is None:
            return None
        size = int.from_bytes(head, "big", signed=True)
        if size <= 0 or pos + size > f.wrote_position:
            return None
        return f.read(pos, size)

    def pickup_store_timestamp(self, offset: int, size: int) -> int:
        data = self.get_message(offset, size)
        if data is None or len(data) < 64:
            return -1
        try:
            msg, _ = decode_message(data, 0, read_body=False)
        except MessageFormatError:
            return -1
        return msg.store_timestamp

    # -- recovery

    def scan(self, start: MappedFile, *, check_crc: bool) -> Iterator[tuple[RecordInfo | None, int]]:
        """
        Walk records from the beginning of *start* through the following files. Yields
        ``(info, end_offset)`` per valid record and finally ``(None, valid_end)``.
        """
        files = self.mapped_file_queue.files
        index = files.index(start)
        end = start.file_from_offset
        validate = validate_record
        topics: dict[bytes, str] = {}
        while index < len(files):
            f = files[index]
            pos = 0
            buf = f.mm
            base = f.file_from_offset
            while True:
                size, topic, queue_id, phys, sys_flag = validate(buf, pos, check_crc, topics)
                if size > 0:
                    assert topic is not None  # a valid record has one
                    if phys != base + pos:
                        log.warning("record at %d claims offset %d; treating it as the end of the log",
                                    base + pos, phys)
                        yield None, base + pos
                        return
                    yield (topic, queue_id, phys, size, sys_flag, f, pos), base + pos + size
                    pos += size
                    end = base + pos
                elif size == 0:  # BLANK: the next file
                    index += 1
                    end = files[index].file_from_offset if index < len(files) else f.file_tail_offset
                    break
                else:
                    if pos < f.file_size and any(buf[pos:pos + 8]):
                        log.warning("CommitLog %s: invalid record at position %d; the log ends there",
                                    f.file_name, pos)
                    yield None, base + pos
                    return
        yield None, end

    def dispatch_request(self, info: RecordInfo, delay_levels: dict[int, int]) -> DispatchRequest | None:
        """The full request for a record found by :meth:`scan` (decodes its properties)."""
        req, _ = check_message_and_return_size(info[5].mm, info[6], check_crc=False,
                                               delay_levels=delay_levels)
        return req

    def first_store_timestamp_of(self, f: MappedFile) -> int:
        """Store time of a file's first record; 0 when it has none (Java ``isMappedFileMatchedRecover``)."""
        if len(f.mm) < 8:
            return 0
        total, magic = BLANK_HEAD.unpack_from(f.mm, 0)
        if magic != MESSAGE_MAGIC_CODE and magic != MESSAGE_MAGIC_CODE_V2:
            return 0
        try:
            # an mmap is a buffer, which messagecodec.Buffer (bytes | bytearray | memoryview) leaves out
            msg, _ = decode_message(f.mm, 0, read_body=False)  # type: ignore[arg-type]
        except MessageFormatError:
            return 0
        return msg.store_timestamp

    def set_end(self, offset: int) -> None:
        """Make *offset* the end of the log: positions set, the rest zeroed, later files deleted."""
        queue = self.mapped_file_queue
        queue.truncate_dirty_files(offset)
        queue.flushed_where = offset
        last = queue.last()
        if last is not None and offset == last.file_tail_offset:
            last.wrote_position = last.flushed_position = last.file_size

    def flush(self, least_pages: int = 0) -> bool:
        return self.mapped_file_queue.flush(least_pages)

    @property
    def flushed_where(self) -> int:
        return self.mapped_file_queue.flushed_where

    def close(self) -> None:
        self.mapped_file_queue.close()


def _encode_inner(msg: MessageExtBrokerInner, *, queue_offset: int, phys: int, store_timestamp: int,
                  store_host: bytes, properties: bytes) -> bytes:
    return encode_record(
        topic=msg.topic.encode(),
        body=msg.body,
        properties=properties,
        queue_id=msg.queue_id,
        flag=msg.flag,
        queue_offset=queue_offset,
        commit_log_offset=phys,
        sys_flag=msg.sys_flag,
        born_timestamp=msg.born_timestamp,
        born_host=pack_host(*msg.born_host),
        store_timestamp=store_timestamp,
        store_host=store_host,
        reconsume_times=msg.reconsume_times,
        prepared_transaction_offset=msg.prepared_transaction_offset,
    )


if speedups:
    _encode_positional = speedups.encode_record

    def encode_inner(msg: MessageExtBrokerInner, *, queue_offset: int, phys: int, store_timestamp: int,
                     store_host: bytes, properties: bytes) -> bytes:
        """One CommitLog record for *msg* (the C encoder, positional)."""
        return _encode_positional(msg.topic.encode(), msg.body, properties, msg.queue_id, msg.flag, queue_offset,
                                  phys, msg.sys_flag, msg.born_timestamp, pack_host(*msg.born_host),
                                  store_timestamp, store_host, msg.reconsume_times,
                                  msg.prepared_transaction_offset, None)
else:
    encode_inner = _encode_inner


def offset_msg_id(store_host: tuple[str, int], phys: int) -> str:
    return create_offset_msg_id(store_host[0], store_host[1], phys)


def keys_of(keys: str) -> list[str]:
    return [k for k in keys.split(KEY_SEPARATOR) if k]
