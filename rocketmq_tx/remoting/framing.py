# -*- test-case-name: rocketmq_tx.remoting.test.test_framing -*-
"""
Frames on a byte stream::

    int32 length (excludes itself) | int8 serializeType, int24 headerLength | header | body

:class:`FrameDecoder` turns bytes into commands and :func:`encode_command` commands into
bytes. Neither does I/O; the Twisted protocol and the blocking client both drive them.

Java's ``NettyDecoder`` compares the whole frame, length field included, with
``com.rocketmq.remoting.frameMaxLength`` (16 MiB), so the largest length value it takes
is 16 MiB - 4; we apply the same rule.
"""

from __future__ import annotations

import struct

from rocketmq_tx.remoting.command import RemotingCommand
from rocketmq_tx.remoting.errors import FrameTooLong, LocalProtocolError, RemoteProtocolError
from rocketmq_tx.remoting.serialization import decode_header, encode_header

__all__ = [
    "DEFAULT_MAX_FRAME_LENGTH",
    "FrameDecoder",
    "encode_command",
    "decode_frame",
]

#: Java's default ``com.rocketmq.remoting.frameMaxLength``.
DEFAULT_MAX_FRAME_LENGTH = 16 * 1024 * 1024

_HEAD = struct.Struct(">II")
_U32 = struct.Struct(">I")
_MAX_HEADER_LENGTH = 0xFFFFFF


def encode_command(cmd: RemotingCommand, max_frame_length: int = DEFAULT_MAX_FRAME_LENGTH) -> bytes:
    """
    One whole frame for *cmd*.

    :raises LocalProtocolError: the header or the frame is larger than the protocol allows.
    """
    header = encode_header(cmd)
    hlen = len(header)
    if hlen > _MAX_HEADER_LENGTH:
        raise LocalProtocolError(f"header of {hlen} bytes exceeds the 24-bit header length")
    length = 4 + hlen + len(cmd.body)
    if length + 4 > max_frame_length:
        raise LocalProtocolError(f"frame of {length + 4} bytes exceeds the maximum of {max_frame_length}")
    return b"".join((_HEAD.pack(length, (int(cmd.serialize_type) << 24) | hlen), header, cmd.body))


def decode_frame(payload: bytes) -> RemotingCommand:
    """
    Decode one frame without its 4-byte length prefix.

    :raises RemoteProtocolError: the header does not fit in the frame or cannot be decoded.
    """
    return _decode_at(payload, 0, len(payload))


def _decode_at(data: bytes, start: int, end: int) -> RemotingCommand:
    # Slicing header and body straight out of the received chunk copies the body once.
    if end - start < 4:
        raise RemoteProtocolError(f"frame of {end - start} bytes has no header-length field")
    (word,) = _U32.unpack_from(data, start)
    hlen = word & _MAX_HEADER_LENGTH
    hend = start + 4 + hlen
    if hend > end:
        raise RemoteProtocolError(f"header length {hlen} exceeds frame length {end - start}")
    return decode_header(word >> 24, data[start + 4 : hend], data[hend:end])


class FrameDecoder:
    """
    Incremental decoder: :meth:`feed` bytes as they arrive, get whole commands back.

    Complete frames are sliced straight out of the incoming chunk; only an incomplete
    tail is buffered, in a ``bytearray`` so that a large frame arriving in many chunks
    costs linear, not quadratic, copying (Twisted's ``Int32StringReceiver`` does the
    latter and caps frames at 99,999 bytes).

    A chunk with good frames before a bad one returns the good commands; the error is
    kept in :attr:`error` and raised by every later call, so the caller can act on what
    arrived intact (answer it) before it closes the connection. A chunk whose first frame
    is bad raises at once.
    """

    def __init__(self, max_frame_length: int = DEFAULT_MAX_FRAME_LENGTH) -> None:
        self.max_frame_length = max_frame_length
        self._buffer = bytearray()
        self._need = 4
        self._error: RemoteProtocolError | None = None

    @property
    def buffered(self) -> int:
        """Bytes held back while waiting for the rest of a frame."""
        return len(self._buffer)

    @property
    def error(self) -> RemoteProtocolError | None:
        """Why the stream is unusable, or ``None`` while it is fine: check it after each feed."""
        return self._error

    def feed(self, data: bytes) -> list[RemotingCommand]:
        """
        Add *data* and return every command it completes, in order.

        When a bad frame follows good ones, the good ones are returned and the error waits
        in :attr:`error`.

        :raises FrameTooLong: the first frame of *data* (or a frame before it) declares more
            than ``max_frame_length``.
        :raises RemoteProtocolError: the first frame cannot be decoded, or the stream broke before.
        """
        if self._error is not None:
            raise self._error
        if self._buffer:
            self._buffer += data
            if len(self._buffer) < self._need:
                return []
            data = bytes(self._buffer)
            self._buffer.clear()
        commands: list[RemotingCommand] = []
        n = len(data)
        off = 0
        limit = self.max_frame_length - 4
        unpack = _U32.unpack_from
        try:
            while n - off >= 4:
                (length,) = unpack(data, off)
                if length > limit:
                    raise FrameTooLong(f"frame length {length} exceeds the maximum of {limit}")
                end = off + 4 + length
                if end > n:
                    self._need = end - off
                    break
                commands.append(_decode_at(data, off + 4, end))
                off = end
            else:
                self._need = 4
        except RemoteProtocolError as e:
            self._error = e
            self._buffer.clear()
            if not commands:
                raise
            return commands
        if off < n:
            self._buffer += data[off:] if off else data
        return commands
