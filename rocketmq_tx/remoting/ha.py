# -*- test-case-name: rocketmq_tx.remoting.test.test_ha -*-
"""
The byte framing of master-slave replication (Java 4.9 ``HAService``/``HAConnection``), sans IO.

It is not the remoting protocol: a slave connects to the master's HA port and writes its
CommitLog max offset, 8 bytes big-endian, now and then; the master writes frames of an 8-byte
physical offset, a 4-byte body size and that many raw CommitLog bytes (size 0: a heartbeat).
"""

from __future__ import annotations

import struct

__all__ = ["REPORT_SIZE", "FRAME_HEADER_SIZE", "encode_report", "encode_frame_header", "ReportDecoder",
           "FrameDecoder", "HAProtocolError"]

_REPORT = struct.Struct(">q")
_HEADER = struct.Struct(">qi")
REPORT_SIZE = _REPORT.size  # 8
FRAME_HEADER_SIZE = _HEADER.size  # 12


class HAProtocolError(Exception):
    """The peer sent something no Java peer sends; the connection must be dropped."""


def encode_report(offset: int) -> bytes:
    """A slave's offset report."""
    return _REPORT.pack(offset)


def encode_frame_header(offset: int, size: int) -> bytes:
    """The 12 bytes before a master's batch of *size* bytes taken at *offset*."""
    return _HEADER.pack(offset, size)


class ReportDecoder:
    """
    The master's reading of a slave's reports: only the newest complete one matters (Java's
    ReadSocketService reads the last whole 8 bytes of what arrived and skips the others).
    """

    def __init__(self) -> None:
        self._buf = b""

    def feed(self, data: bytes) -> int | None:
        """The newest complete report in *data* (and what came before), or ``None``."""
        buf = self._buf + data
        whole = len(buf) - len(buf) % REPORT_SIZE
        self._buf = buf[whole:]
        if not whole:
            return None
        value: int = _REPORT.unpack_from(buf, whole - REPORT_SIZE)[0]
        return value


class FrameDecoder:
    """
    The slave's reading of the master's frames: ``(offset, body)`` for each complete one.

    :param max_body: the largest body accepted (a Java master sends at most its
        ``haTransferBatchSize``, 32 KiB by default; the slave's read buffer is 4 MiB).
    """

    def __init__(self, max_body: int = 4 * 1024 * 1024 - FRAME_HEADER_SIZE) -> None:
        self.max_body = max_body
        self._buf = bytearray()
        self._need: tuple[int, int] | None = None  # (offset, size) of the frame being read

    def feed(self, data: bytes) -> list[tuple[int, bytes]]:
        """
        :raises HAProtocolError: a negative or oversized body size, or a negative offset.
        """
        buf = self._buf
        buf += data
        pos = 0
        out: list[tuple[int, bytes]] = []
        try:
            while True:
                if self._need is None:
                    if len(buf) - pos < FRAME_HEADER_SIZE:
                        return out
                    offset, size = _HEADER.unpack_from(buf, pos)
                    if size < 0 or size > self.max_body:
                        raise HAProtocolError(f"HA frame body size {size} out of range 0..{self.max_body}")
                    if offset < 0:
                        raise HAProtocolError(f"HA frame offset {offset} is negative")
                    pos += FRAME_HEADER_SIZE
                    self._need = (offset, size)
                offset, size = self._need
                if len(buf) - pos < size:
                    return out
                out.append((offset, bytes(buf[pos:pos + size])))
                pos += size
                self._need = None
        finally:
            # one move per feed, whatever the number of frames: linear in the bytes received
            del buf[:pos]

    @property
    def buffered(self) -> int:
        return len(self._buf)
