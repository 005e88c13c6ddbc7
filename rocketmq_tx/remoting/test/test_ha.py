"""The HA byte framing (Java 4.9 HAService/HAConnection): reports and frames, split anywhere."""

from __future__ import annotations

import random

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.remoting.ha import (
    FrameDecoder,
    HAProtocolError,
    ReportDecoder,
    encode_frame_header,
    encode_report,
)


class ReportTests(SynchronousTestCase):
    def test_bytes(self) -> None:
        """8 bytes, big-endian, as Java's ByteBuffer.putLong."""
        self.assertEqual(encode_report(0x0102030405060708), bytes(range(1, 9)))
        self.assertEqual(encode_frame_header(1 << 32, 7), b"\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x07")

    def test_newest_whole_report_wins(self) -> None:
        """Like Java's ReadSocketService: the last complete 8 bytes; partial ones wait."""
        d = ReportDecoder()
        self.assertIsNone(d.feed(encode_report(5)[:3]))
        self.assertEqual(d.feed(encode_report(5)[3:] + encode_report(9) + encode_report(12)[:4]), 9)
        self.assertEqual(d.feed(encode_report(12)[4:]), 12)
        self.assertIsNone(d.feed(b""))


class FrameTests(SynchronousTestCase):
    def test_split_anywhere(self) -> None:
        """Frames cut at random points come out whole and in order, heartbeats included."""
        rnd = random.Random(7)
        frames = [(i * 1000, bytes([i % 256]) * rnd.randrange(0, 3000)) for i in range(50)]
        wire = b"".join(encode_frame_header(o, len(b)) + b for o, b in frames)
        d = FrameDecoder()
        got = []
        pos = 0
        while pos < len(wire):
            n = rnd.randrange(1, 5000)
            got += d.feed(wire[pos:pos + n])
            pos += n
        self.assertEqual(got, frames)
        self.assertEqual(d.buffered, 0)

    def test_refused(self) -> None:
        """A negative or oversized size, or a negative offset: no Java master sends it."""
        self.assertRaises(HAProtocolError, FrameDecoder(1024).feed, encode_frame_header(0, 1025))
        self.assertRaises(HAProtocolError, FrameDecoder().feed, encode_frame_header(0, -1))
        self.assertRaises(HAProtocolError, FrameDecoder().feed, encode_frame_header(-8, 0))
