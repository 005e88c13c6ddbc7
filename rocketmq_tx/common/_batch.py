# -*- test-case-name: rocketmq_tx.common.test.test_batch -*-
"""
SEND_BATCH_MESSAGE bodies (protocol notes §5.6; Java ``MessageDecoder.encodeMessages`` and
``decodeMessages``). Re-exported by :mod:`rocketmq_tx.common.messagecodec`.

:func:`iter_batch_entries` is the one parser of the format: :func:`decode_batch` (clients,
tests) and the store's batch put (``rocketmq_tx.store.commitlog.iter_batch``) both use it.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator

from rocketmq_tx.common.errors import MessageFormatError
from rocketmq_tx.common.message import (
    MAX_PROPERTIES_LENGTH,
    Message,
    properties_to_string,
    string_to_properties,
)

__all__ = ["encode_batch", "decode_batch", "iter_batch_entries"]

Buffer = bytes | bytearray | memoryview

_SHORT = struct.Struct(">h")
_BATCH_HEAD = struct.Struct(">iiiii")  # TOTALSIZE MAGICCODE BODYCRC FLAG BODYLENGTH
_BATCH_OVERHEAD = _BATCH_HEAD.size + 2


def encode_batch(messages: Iterable[Message]) -> bytes:
    """
    Encode the body of a SEND_BATCH_MESSAGE request (Java ``MessageDecoder.encodeMessages``):
    per message TOTALSIZE, MAGICCODE 0, BODYCRC 0, FLAG, BODYLENGTH, BODY, PROPERTIESLENGTH
    (``int16``), PROPERTIES. Topics are not included; the request header carries the topic.

    :raises MessageFormatError: if a message's properties exceed 32767 bytes.
    """
    parts: list[Buffer] = []
    for msg in messages:
        properties = properties_to_string(msg.properties).encode()
        properties_length = len(properties)
        if properties_length > MAX_PROPERTIES_LENGTH:
            raise MessageFormatError(
                f"properties are {properties_length} bytes long; at most 32767 fit")
        body_length = len(msg.body)
        try:
            head = _BATCH_HEAD.pack(
                _BATCH_OVERHEAD + body_length + properties_length, 0, 0, msg.flag, body_length)
        except struct.error as e:
            raise MessageFormatError(f"a batch field is out of range: {e}") from None
        parts += (head, msg.body, _SHORT.pack(properties_length), properties)
    return b"".join(parts)


def iter_batch_entries(body: Buffer) -> Iterator[tuple[int, Buffer, Buffer]]:
    """
    The entries of a SEND_BATCH_MESSAGE body written by :func:`encode_batch` or a Java/Go/C++
    client, as ``(flag, body, properties)``: slices of *body*, the properties the raw
    ``name 0x01 value 0x02`` bytes.

    MAGICCODE and BODYCRC are ignored, as Java ignores them; TOTALSIZE must agree with the
    lengths inside.

    :raises MessageFormatError: for a truncated or inconsistent entry (once the entries
        before it have been yielded).
    """
    pos = 0
    size = len(body)
    while pos < size:
        if size - pos < _BATCH_OVERHEAD:
            raise MessageFormatError(f"batch entry at offset {pos} is truncated")
        total, _magic, _crc, flag, body_length = _BATCH_HEAD.unpack_from(body, pos)
        body_start = pos + _BATCH_HEAD.size
        body_end = body_start + body_length
        if body_length < 0 or body_end + 2 > size:
            raise MessageFormatError(f"batch entry at offset {pos}: bad BODYLENGTH {body_length}")
        properties_length = _SHORT.unpack_from(body, body_end)[0]
        end = body_end + 2 + properties_length
        if properties_length < 0 or end > size:
            raise MessageFormatError(
                f"batch entry at offset {pos}: bad PROPERTIESLENGTH {properties_length}")
        if total != end - pos:
            raise MessageFormatError(
                f"batch entry at offset {pos}: TOTALSIZE {total} but the fields take {end - pos}")
        yield flag, body[body_start:body_end], body[body_end + 2 : end]
        pos = end


def decode_batch(body: Buffer, topic: str = "") -> list[Message]:
    """
    Decode a SEND_BATCH_MESSAGE body (:func:`iter_batch_entries`) into messages.

    :param topic: stored in every returned message (the batch itself carries no topic).
    :raises MessageFormatError: for a truncated or inconsistent entry.
    """
    return [
        Message(topic, bytes(entry_body), flag,
                string_to_properties(str(properties, "utf-8", "replace")) if properties else {})
        for flag, entry_body, properties in iter_batch_entries(body)
    ]
