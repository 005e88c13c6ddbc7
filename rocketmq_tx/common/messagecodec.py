# -*- test-case-name: rocketmq_tx.common.test.test_messagecodec -*-
"""
Fast encoder and decoder of the binary message formats (Java ``MessageDecoder`` and
``CommitLog.MessageExtEncoder``).

One CommitLog record (protocol notes §5.2) is also the unit of PULL_MESSAGE, QUERY_MESSAGE,
VIEW_MESSAGE_BY_ID and CHECK_TRANSACTION_STATE bodies, which are records laid end to end.
SEND_BATCH_MESSAGE bodies use a shorter per-message layout (§5.6).

This module is the hot path: it uses precompiled :class:`struct.Struct` objects and no
``construct``. :mod:`rocketmq_tx.common.formats` declares the same layouts with ``construct``
as the specification, and the tests check that the two agree.

Every malformed or truncated input raises :class:`MessageFormatError`; the decoder checks each
length against ``TOTALSIZE`` and the buffer before it slices, so no ``IndexError`` or
``struct.error`` escapes.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Iterable
from socket import AF_INET6, inet_ntoa, inet_ntop
from typing import Final

from rocketmq_tx.common._batch import decode_batch, encode_batch
from rocketmq_tx.common._compression import compress_body, decompress_body, inflate
from rocketmq_tx.common.errors import MessageFormatError
from rocketmq_tx.common.message import (
    MAX_PROPERTIES_LENGTH,
    MessageExt,
    properties_to_string,
    string_to_properties,
)
from rocketmq_tx.common.msgid import (
    UniqueKeyGenerator,
    create_offset_msg_id,
    decode_offset_msg_id,
    pack_host,
    unique_key_time,
    unpack_host,
)
from rocketmq_tx.common.native import speedups
from rocketmq_tx.common.sysflag import (
    BLANK_MAGIC_CODE,
    MESSAGE_MAGIC_CODE,
    MESSAGE_MAGIC_CODE_V2,
    MessageSysFlag,
)

__all__ = [
    "MESSAGE_MAGIC_CODE_POSITION",
    "BODY_CRC_POSITION",
    "QUEUE_ID_POSITION",
    "MESSAGE_FLAG_POSITION",
    "QUEUE_OFFSET_POSITION",
    "PHY_POS_POSITION",
    "SYSFLAG_POSITION",
    "BORN_TIMESTAMP_POSITION",
    "BORN_HOST_POSITION",
    "MAX_PROPERTIES_LENGTH",
    "store_timestamp_position",
    "calc_record_size",
    "encode_record",
    "encode_message",
    "patch_record",
    "peek_record",
    "decode_message",
    "decode_messages",
    "java_string_hash",
    "tags_code",
    # re-exported from _batch and _compression
    "encode_batch",
    "decode_batch",
    "compress_body",
    "decompress_body",
    # re-exported from msgid
    "pack_host",
    "unpack_host",
    "create_offset_msg_id",
    "decode_offset_msg_id",
    "UniqueKeyGenerator",
    "unique_key_time",
]

Buffer = bytes | bytearray | memoryview

MESSAGE_MAGIC_CODE_POSITION: Final = 4
BODY_CRC_POSITION: Final = 8
QUEUE_ID_POSITION: Final = 12
MESSAGE_FLAG_POSITION: Final = 16
QUEUE_OFFSET_POSITION: Final = 20
PHY_POS_POSITION: Final = 28
SYSFLAG_POSITION: Final = 36
BORN_TIMESTAMP_POSITION: Final = 40
BORN_HOST_POSITION: Final = 48
_MAX_TOPIC_LENGTH_V1: Final = 0x7F
_MAX_TOPIC_LENGTH_V2: Final = 0x7FFF

_BORN_V6 = MessageSysFlag.BORNHOST_V6_FLAG
_STORE_V6 = MessageSysFlag.STOREHOSTADDRESS_V6_FLAG
_HOST_FLAGS = _BORN_V6 | _STORE_V6
_COMPRESSED = MessageSysFlag.COMPRESSED_FLAG

# TOTALSIZE MAGICCODE BODYCRC QUEUEID FLAG QUEUEOFFSET PHYSICALOFFSET SYSFLAG BORNTIMESTAMP
_PREFIX = struct.Struct(">iiiiiqqiq")


def _host_width(sys_flag: int, bit: int) -> int:
    return 16 if sys_flag & bit else 4


# Everything up to and including BODYLENGTH, one layout per combination of the IPv6 bits.
# The encoder takes hosts already packed (IP + port); the decoder splits IP from port.
_ENCODE_HEAD = {
    flags: struct.Struct(
        f">iiiiiqqiq{_host_width(flags, _BORN_V6) + 4}sq{_host_width(flags, _STORE_V6) + 4}siqi"
    )
    for flags in (0, _BORN_V6, _STORE_V6, _HOST_FLAGS)
}
_DECODE_TAIL = {
    flags: struct.Struct(
        f">{_host_width(flags, _BORN_V6)}siq{_host_width(flags, _STORE_V6)}siiqi"
    )
    for flags in (0, _BORN_V6, _STORE_V6, _HOST_FLAGS)
}
_FIXED_SIZE = {flags: s.size for flags, s in _ENCODE_HEAD.items()}
_SHORT = struct.Struct(">h")
_LONG = struct.Struct(">q")
_INT = struct.Struct(">i")
_MAGIC_PEEK = struct.Struct(">ii")


def store_timestamp_position(sys_flag: int) -> int:
    """
    :return: offset of STORETIMESTAMP within a record, which moves by 12 bytes when the born
        host is IPv6.
    """
    return 68 if sys_flag & _BORN_V6 else 56


def calc_record_size(
    body_length: int, topic_length: int, properties_length: int, sys_flag: int = 0
) -> int:
    """
    Size of the record :func:`encode_record` would produce (Java ``calMsgLength``), so a store
    can check that it fits before encoding.

    :param topic_length: the topic's UTF-8 length; above 127 the V2 layout adds a byte.
    :param sys_flag: only the IPv6 bits matter.
    """
    topic_width = 1 if topic_length <= _MAX_TOPIC_LENGTH_V1 else 2
    return (
        _FIXED_SIZE[sys_flag & _HOST_FLAGS]
        + body_length
        + topic_width
        + topic_length
        + 2
        + properties_length
    )


def encode_record(
    *,
    topic: bytes,
    body: Buffer,
    properties: bytes,
    queue_id: int,
    flag: int,
    queue_offset: int,
    commit_log_offset: int,
    sys_flag: int,
    born_timestamp: int,
    born_host: bytes,
    store_timestamp: int,
    store_host: bytes,
    reconsume_times: int = 0,
    prepared_transaction_offset: int = 0,
    body_crc: int | None = None,
) -> bytes:
    """
    Encode one CommitLog record from already-encoded pieces.

    The IPv6 bits of *sys_flag* are set from the host lengths. The magic is V1 unless the
    topic is longer than 127 bytes, which needs V2 and its 2-byte topic length (5.x readers
    only; 4.9 topics cannot be that long).

    :param topic: UTF-8 topic.
    :param body: the body as it is to be stored (already compressed if *sys_flag* says so).
    :param properties: UTF-8 properties string (see
        :func:`~rocketmq_tx.common.message.properties_to_string`).
    :param born_host: packed address from :func:`pack_host` (8 or 20 bytes).
    :param store_host: likewise.
    :param body_crc: ``None`` computes ``CRC32(body) & 0x7FFFFFFF``.
    :raises MessageFormatError: when a length or a number does not fit the format.
    """
    sys_flag &= ~_HOST_FLAGS
    if len(born_host) == 20:
        sys_flag |= _BORN_V6
    elif len(born_host) != 8:
        raise MessageFormatError(f"packed born host must have 8 or 20 bytes, not {len(born_host)}")
    if len(store_host) == 20:
        sys_flag |= _STORE_V6
    elif len(store_host) != 8:
        raise MessageFormatError(f"packed store host must have 8 or 20 bytes, not {len(store_host)}")
    topic_length = len(topic)
    if topic_length <= _MAX_TOPIC_LENGTH_V1:
        magic = MESSAGE_MAGIC_CODE
        topic_prefix = bytes((topic_length,))
    elif topic_length <= _MAX_TOPIC_LENGTH_V2:
        magic = MESSAGE_MAGIC_CODE_V2
        topic_prefix = _SHORT.pack(topic_length)
    else:
        raise MessageFormatError(f"topic is {topic_length} bytes long; at most 32767 fit")
    properties_length = len(properties)
    if properties_length > MAX_PROPERTIES_LENGTH:
        raise MessageFormatError(
            f"properties are {properties_length} bytes long; at most 32767 fit"
        )
    if body_crc is None:
        body_crc = zlib.crc32(body) & 0x7FFFFFFF
    head_struct = _ENCODE_HEAD[sys_flag & _HOST_FLAGS]
    body_length = len(body)
    total = head_struct.size + body_length + len(topic_prefix) + topic_length + 2 + properties_length
    try:
        head = head_struct.pack(
            total, magic, body_crc, queue_id, flag, queue_offset, commit_log_offset, sys_flag,
            born_timestamp, born_host, store_timestamp, store_host, reconsume_times,
            prepared_transaction_offset, body_length,
        )
    except struct.error as e:
        raise MessageFormatError(f"a record field is out of range: {e}") from None
    return b"".join((head, body, topic_prefix, topic, _SHORT.pack(properties_length), properties))


def encode_message(msg: MessageExt) -> bytes:
    """
    Encode *msg* as a CommitLog record, byte for byte as Java's broker would.

    ``msg.body`` is written as it is, so a compressed message must already carry the
    compressed body and ``COMPRESSED_FLAG``. BODYCRC is computed; ``msg.body_crc`` and
    ``msg.store_size`` are ignored.

    :raises MessageFormatError: if the message does not fit the format (properties longer
        than 32767 bytes, host names instead of IP literals, numbers out of range).
    """
    born_ip, born_port = msg.born_host
    store_ip, store_port = msg.store_host
    return encode_record(
        topic=msg.topic.encode(),
        body=msg.body,
        properties=properties_to_string(msg.properties).encode(),
        queue_id=msg.queue_id,
        flag=msg.flag,
        queue_offset=msg.queue_offset,
        commit_log_offset=msg.commit_log_offset,
        sys_flag=msg.sys_flag,
        born_timestamp=msg.born_timestamp,
        born_host=pack_host(born_ip, born_port),
        store_timestamp=msg.store_timestamp,
        store_host=pack_host(store_ip, store_port),
        reconsume_times=msg.reconsume_times,
        prepared_transaction_offset=msg.prepared_transaction_offset,
    )


def patch_record(
    buf: bytearray | memoryview,
    offset: int = 0,
    *,
    queue_offset: int | None = None,
    commit_log_offset: int | None = None,
    store_timestamp: int | None = None,
) -> None:
    """
    Overwrite the fields a store only knows at append time in an encoded record, in place.

    :param buf: writable buffer holding the record at *offset*.
    :raises MessageFormatError: if the record does not fit in *buf* or a value is out of range.
    """
    try:
        if queue_offset is not None:
            _LONG.pack_into(buf, offset + QUEUE_OFFSET_POSITION, queue_offset)
        if commit_log_offset is not None:
            _LONG.pack_into(buf, offset + PHY_POS_POSITION, commit_log_offset)
        if store_timestamp is not None:
            sys_flag = _INT.unpack_from(buf, offset + SYSFLAG_POSITION)[0]
            _LONG.pack_into(buf, offset + store_timestamp_position(sys_flag), store_timestamp)
    except struct.error as e:
        raise MessageFormatError(f"cannot patch record at {offset}: {e}") from None


def peek_record(buf: Buffer, offset: int = 0) -> tuple[int, int]:
    """
    Read TOTALSIZE and MAGICCODE without decoding, e.g. to spot the BLANK filler at the end of
    a CommitLog file (``total_size`` is then the number of bytes to skip).

    :return: ``(total_size, magic_code)``.
    :raises MessageFormatError: if fewer than 8 bytes remain.
    """
    if offset < 0 or len(buf) - offset < 8:
        raise MessageFormatError(f"need 8 bytes at offset {offset} to read a record header")
    total_size, magic = _MAGIC_PEEK.unpack_from(buf, offset)
    return total_size, magic


def _truncated(offset: int, what: str) -> MessageFormatError:
    return MessageFormatError(f"record at offset {offset}: {what}")


def decode_message(
    buf: Buffer,
    offset: int = 0,
    *,
    read_body: bool = True,
    decompress_body: bool = True,
    check_crc: bool = False,
) -> tuple[MessageExt, int]:
    """
    Decode the record that starts at *offset* in *buf* (Java ``MessageDecoder.decode``).

    Accepts V1 and V2 magic and IPv6 hosts. Unlike Java, which reads field by field and
    ignores TOTALSIZE, the fields must end exactly where TOTALSIZE says, so corruption is
    reported rather than decoded into garbage.

    :param buf: bytes, bytearray, memoryview or mmap.
    :param read_body: if false, ``body`` is ``b""`` and no bytes are copied for it.
    :param decompress_body: decompress a body whose ``COMPRESSED_FLAG`` is set. ``sys_flag``
        keeps the flag, as in Java, so re-encode such a message only after decoding with
        ``decompress_body=False``.
    :param check_crc: verify BODYCRC against the stored (compressed) body.
    :return: the message and the offset just past the record.
    :raises MessageFormatError: for a truncated or malformed record, a BLANK or unknown magic,
        a CRC mismatch or a body that cannot be decompressed
        (:class:`UnsupportedCompressionError` for LZ4/ZSTD without their libraries).
    """
    available = len(buf) - offset
    if offset < 0 or available < _PREFIX.size:
        raise _truncated(offset, f"only {max(available, 0)} bytes left, a record needs more")
    (total, magic, body_crc, queue_id, flag, queue_offset, commit_log_offset, sys_flag,
     born_timestamp) = _PREFIX.unpack_from(buf, offset)
    if magic == MESSAGE_MAGIC_CODE:
        topic_width = 1
    elif magic == MESSAGE_MAGIC_CODE_V2:
        topic_width = 2
    elif magic == BLANK_MAGIC_CODE:
        raise _truncated(offset, "BLANK filler (end of a CommitLog file), not a message")
    else:
        raise _truncated(offset, f"unknown magic code {magic & 0xFFFFFFFF:#010x}")
    host_flags = sys_flag & _HOST_FLAGS
    fixed = _FIXED_SIZE[host_flags]
    if total < fixed + topic_width + 2:
        raise _truncated(offset, f"TOTALSIZE {total} is below the {fixed + topic_width + 2}-byte minimum")
    if total > available:
        raise _truncated(offset, f"TOTALSIZE {total} but only {available} bytes left")
    end = offset + total
    (born_ip, born_port, store_timestamp, store_ip, store_port, reconsume_times,
     prepared_transaction_offset, body_length) = _DECODE_TAIL[host_flags].unpack_from(
        buf, offset + _PREFIX.size)
    body_start = offset + fixed
    body_end = body_start + body_length
    if body_length < 0 or body_end + topic_width + 2 > end:
        raise _truncated(offset, f"BODYLENGTH {body_length} does not fit in TOTALSIZE {total}")
    if topic_width == 1:
        topic_length = buf[body_end]
        if topic_length > _MAX_TOPIC_LENGTH_V1:  # a Java byte: negative
            raise _truncated(offset, f"negative TOPICLENGTH {topic_length - 256}")
    else:
        topic_length = _SHORT.unpack_from(buf, body_end)[0]
    topic_start = body_end + topic_width
    topic_end = topic_start + topic_length
    if topic_length < 0 or topic_end + 2 > end:
        raise _truncated(offset, f"TOPICLENGTH {topic_length} does not fit in TOTALSIZE {total}")
    properties_length = _SHORT.unpack_from(buf, topic_end)[0]
    properties_start = topic_end + 2
    if properties_length < 0 or properties_start + properties_length != end:
        raise _truncated(
            offset, f"PROPERTIESLENGTH {properties_length} disagrees with TOTALSIZE {total}")

    if read_body or check_crc:
        raw = bytes(buf[body_start:body_end])
        if check_crc and zlib.crc32(raw) & 0x7FFFFFFF != body_crc:
            raise _truncated(offset, "BODYCRC does not match the body")
        if not read_body:
            body = b""
        elif decompress_body and sys_flag & _COMPRESSED:
            body = inflate(raw, sys_flag)
        else:
            body = raw
    else:
        body = b""
    topic = str(buf[topic_start:topic_end], "utf-8", "replace")
    if properties_length:
        properties = string_to_properties(str(buf[properties_start:end], "utf-8", "replace"))
    else:
        properties = {}
    if host_flags & _BORN_V6:
        born_host = (inet_ntop(AF_INET6, born_ip), born_port)
    else:
        born_host = (inet_ntoa(born_ip), born_port)
    if host_flags & _STORE_V6:
        store_host = (inet_ntop(AF_INET6, store_ip), store_port)
    else:
        store_host = (inet_ntoa(store_ip), store_port)
    # Positional, in field order: keyword arguments cost noticeably on this path.
    msg = MessageExt(
        topic, body, flag, properties, None, queue_id, total, queue_offset, sys_flag,
        born_timestamp, born_host, store_timestamp, store_host, commit_log_offset, body_crc,
        reconsume_times, prepared_transaction_offset,
    )
    return msg, end


def decode_messages(
    buf: Buffer,
    *,
    read_body: bool = True,
    decompress_body: bool = True,
    check_crc: bool = False,
) -> list[MessageExt]:
    """
    Decode records laid end to end, as in PULL_MESSAGE, QUERY_MESSAGE and VIEW_MESSAGE_BY_ID
    bodies (Java ``MessageDecoder.decodes``). Java silently drops a bad tail; this raises.

    :raises MessageFormatError: as :func:`decode_message`, for any record.
    """
    messages = []
    offset = 0
    size = len(buf)
    while offset < size:
        msg, offset = decode_message(
            buf, offset, read_body=read_body, decompress_body=decompress_body, check_crc=check_crc
        )
        messages.append(msg)
    return messages


def _java_string_hash(text: str) -> int:
    """
    Java ``String.hashCode()``: ``h = 31*h + c`` over UTF-16 code units, as a signed 32-bit
    ``int``. Characters outside the BMP count as two surrogate units.
    """
    if not isinstance(text, str):  # the C version's TypeError (not text.isascii's AttributeError)
        raise TypeError("java_string_hash() needs a str")
    if text.isascii():
        units: Iterable[int] = text.encode("ascii")
    else:
        data = text.encode("utf-16-be", "surrogatepass")
        units = struct.unpack(f">{len(data) // 2}H", data)
    h = 0
    for unit in units:
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - 0x100000000 if h & 0x80000000 else h


java_string_hash: Callable[[str], int] = speedups.java_string_hash if speedups else _java_string_hash


def tags_code(tags: str | None) -> int:
    """
    The ConsumeQueue tagsCode of a message (Java ``tagsString2tagsCode``): the Java hash of the
    ``TAGS`` value, 0 when there is none. (Delayed messages use a timestamp instead; that is the
    store's business.)
    """
    if not tags:
        return 0
    return java_string_hash(tags)


