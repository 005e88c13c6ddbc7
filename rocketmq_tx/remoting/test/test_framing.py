"""Tests for frames: limits, incremental decoding under any chunking, and fuzzed input."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.remoting import (
    FrameDecoder,
    FrameTooLong,
    LocalProtocolError,
    OpaqueSequence,
    RemoteProtocolError,
    RemotingCommand,
    SerializeType,
    decode_frame,
    encode_command,
)
from rocketmq_tx.remoting.formats import Frame
from rocketmq_tx.testing.strategies import commands

# A whole JSON frame: length, type+header length, header, body.
HEADER = b'{"code":0,"flag":1,"language":"JAVA","opaque":9,"serializeTypeCurrentRPC":"JSON","version":409}'
JSON_FRAME = (
    (4 + len(HEADER) + 3).to_bytes(4, "big")  # length: excludes itself
    + bytes([0]) + len(HEADER).to_bytes(3, "big")  # serialize type JSON, header length
    + HEADER
    + b"abc"  # body
)


class FrameTests(SynchronousTestCase):
    """Encoding and decoding single frames."""

    def test_vector(self) -> None:
        """The annotated frame decodes, and the start of the next frame stays buffered."""
        decoder = FrameDecoder()
        [cmd] = decoder.feed(JSON_FRAME + JSON_FRAME[:10])
        self.assertEqual((cmd.code, cmd.flag, cmd.opaque, cmd.body, cmd.is_response), (0, 1, 9, b"abc", True))
        self.assertEqual(decoder.buffered, 10)
        self.assertEqual(len(decoder.feed(JSON_FRAME[10:])), 1)

    def test_one_byte_short(self) -> None:
        """A frame missing its last byte yields nothing until the byte arrives."""
        decoder = FrameDecoder()
        self.assertEqual(decoder.feed(JSON_FRAME[:-1]), [])
        self.assertEqual(len(decoder.feed(JSON_FRAME[-1:])), 1)

    def test_serialize_type_in_high_byte(self) -> None:
        """The type byte is the high byte of the header-length word."""
        frame = encode_command(RemotingCommand(code=1, serialize_type=SerializeType.ROCKETMQ))
        self.assertEqual(frame[4], 1)
        self.assertEqual(int.from_bytes(frame[5:8], "big"), len(frame) - 8)

    def test_frame_at_limit(self) -> None:
        """A frame of exactly the maximum (length field included) passes; one byte more does not."""
        limit = 4096
        cmd = RemotingCommand(code=1)
        overhead = len(encode_command(cmd))
        cmd.body = b"x" * (limit - overhead)
        frame = encode_command(cmd, limit)
        self.assertEqual(len(frame), limit)
        self.assertEqual(FrameDecoder(limit).feed(frame)[0].body, cmd.body)
        cmd.body += b"x"
        self.assertRaises(LocalProtocolError, encode_command, cmd, limit)
        bigger = encode_command(cmd, limit + 1)
        self.assertRaises(FrameTooLong, FrameDecoder(limit).feed, bigger)

    def test_oversized_length_rejected_before_body(self) -> None:
        """A huge declared length fails at once: nothing is buffered waiting for it."""
        decoder = FrameDecoder()
        self.assertRaises(FrameTooLong, decoder.feed, b"\x7f\xff\xff\xff\x00")
        self.assertEqual(decoder.buffered, 0)
        # The stream is dead afterwards.
        self.assertRaises(FrameTooLong, decoder.feed, JSON_FRAME)

    def test_header_length_limit(self) -> None:
        """Headers of 2**24 - 1 bytes fit the 24-bit field; one more does not."""
        cmd = RemotingCommand(code=1, serialize_type=SerializeType.ROCKETMQ)
        base = len(encode_command(cmd)) - 8
        entry_overhead = 2 + 1 + 4
        cmd.ext_fields = {"k": "v" * (0xFFFFFF - base - entry_overhead)}
        frame = encode_command(cmd, 32 << 20)
        self.assertEqual(int.from_bytes(frame[5:8], "big"), 0xFFFFFF)
        self.assertEqual(FrameDecoder(32 << 20).feed(frame)[0].ext_fields, cmd.ext_fields)
        cmd.ext_fields["k"] += "v"
        self.assertRaises(LocalProtocolError, encode_command, cmd, 32 << 20)

    def test_header_longer_than_frame(self) -> None:
        """A header length past the frame's end is a protocol error."""
        frame = bytearray(JSON_FRAME)
        frame[5:8] = (len(HEADER) + 4).to_bytes(3, "big")
        self.assertRaises(RemoteProtocolError, FrameDecoder().feed, bytes(frame))

    def test_unknown_serialize_type(self) -> None:
        """Only types 0 and 1 exist."""
        frame = bytearray(JSON_FRAME)
        frame[4] = 7
        self.assertRaises(RemoteProtocolError, decode_frame, bytes(frame[4:]))

    def test_too_short_for_header_length(self) -> None:
        """A frame shorter than the header-length word is a protocol error."""
        self.assertRaises(RemoteProtocolError, FrameDecoder().feed, b"\x00\x00\x00\x02ab")

    def test_construct_declaration(self) -> None:
        """The construct declaration reads the same frame."""
        parsed = Frame.parse(JSON_FRAME)
        self.assertEqual((parsed.serialize_type, parsed.header, parsed.body), (0, HEADER, b"abc"))
        self.assertEqual(Frame.build(dict(serialize_type=0, header_length=len(HEADER), header=HEADER, body=b"abc")),
                         JSON_FRAME)

    def test_opaque_wraps(self) -> None:
        """Opaques count up and wrap like a Java int."""
        seq = OpaqueSequence(0x7FFFFFFE)
        self.assertEqual([seq(), seq(), seq()], [0x7FFFFFFE, 0x7FFFFFFF, -0x80000000])


class GoodThenBadTests(SynchronousTestCase):
    """Frames that arrive intact before bad bytes in the same chunk still come out."""

    def test_good_frame_then_garbage(self) -> None:
        """The good command is returned, the error waits in ``error`` and is raised by the next feed."""
        decoder = FrameDecoder()
        # JSON_FRAME, then a length field of 2**31 - 1: past any maximum.
        [cmd] = decoder.feed(JSON_FRAME + b"\x7f\xff\xff\xff garbage")
        self.assertEqual((cmd.opaque, cmd.body), (9, b"abc"))
        self.assertIsInstance(decoder.error, FrameTooLong)
        self.assertEqual(decoder.buffered, 0)
        self.assertIs(self.assertRaises(FrameTooLong, decoder.feed, JSON_FRAME), decoder.error)

    def test_good_frames_then_undecodable_header(self) -> None:
        """Two good frames, then a frame whose header is not JSON: two commands, then the error."""
        bad = (4 + 4 + 3).to_bytes(4, "big") + bytes([0]) + (3).to_bytes(3, "big") + b"{{{" + b"xyz"
        decoder = FrameDecoder()
        self.assertEqual(len(decoder.feed(JSON_FRAME + JSON_FRAME + bad + JSON_FRAME)), 2)
        self.assertIsInstance(decoder.error, RemoteProtocolError)

    def test_bad_first_frame_raises_at_once(self) -> None:
        """With nothing good before it, the error is raised by the feed that met it."""
        decoder = FrameDecoder()
        error = self.assertRaises(FrameTooLong, decoder.feed, b"\x7f\xff\xff\xff")
        self.assertIs(decoder.error, error)

    def test_no_error_on_a_good_stream(self) -> None:
        decoder = FrameDecoder()
        decoder.feed(JSON_FRAME + JSON_FRAME[:5])
        self.assertIsNone(decoder.error)

    @settings(max_examples=100, deadline=None)
    @given(st.lists(commands(), min_size=1, max_size=4), st.data())
    def test_any_chunking_then_garbage(self, cmds: list[RemotingCommand], data: st.DataObject) -> None:
        """However a stream of good frames and then a bad length is split, every good command comes out once."""
        stream = b"".join(encode_command(c) for c in cmds) + b"\xff\xff\xff\xff"
        cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=10)))
        decoder = FrameDecoder()
        out: list[RemotingCommand] = []
        prev = 0
        for cut in cuts + [len(stream)]:
            try:
                out += decoder.feed(stream[prev:cut])
            except FrameTooLong:
                break
            prev = cut
        self.assertEqual(out, cmds)
        self.assertIsInstance(decoder.error, FrameTooLong)


class StreamPropertyTests(SynchronousTestCase):
    """Property tests over streams of frames."""

    @settings(max_examples=200, deadline=None)
    @given(st.lists(commands(), min_size=1, max_size=6), st.data())
    def test_any_chunking(self, cmds: list[RemotingCommand], data: st.DataObject) -> None:
        """However a stream of frames is split (down to single bytes), the same commands come out."""
        stream = b"".join(encode_command(c) for c in cmds)
        cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=20)))
        if data.draw(st.booleans()) and len(stream) < 3000:
            cuts = list(range(len(stream)))  # one byte at a time
        decoder = FrameDecoder()
        out: list[RemotingCommand] = []
        prev = 0
        for cut in cuts + [len(stream)]:
            out += decoder.feed(stream[prev:cut])
            prev = cut
        self.assertEqual(out, cmds)
        self.assertEqual(decoder.buffered, 0)

    @settings(max_examples=200, deadline=None)
    @given(commands())
    def test_construct_frame_agrees(self, cmd: RemotingCommand) -> None:
        """Every encoded frame parses with the construct declaration to the same parts."""
        frame = encode_command(cmd)
        parsed = Frame.parse(frame)
        self.assertEqual(parsed.serialize_type, cmd.serialize_type)
        self.assertEqual(parsed.body, cmd.body)
        self.assertEqual(len(parsed.header), parsed.header_length)


class FuzzTests(SynchronousTestCase):
    """Random and mutated input raises only RemoteProtocolError and keeps memory bounded."""

    def _check(self, decoder: FrameDecoder, chunk: bytes) -> bool:
        try:
            decoder.feed(chunk)
        except RemoteProtocolError:
            return False
        except Exception as e:  # pragma: no cover - the failure we look for
            self.fail(f"{type(e).__name__} for input {chunk[:64]!r}: {e}")
        self.assertLessEqual(decoder.buffered, decoder.max_frame_length)
        return True

    def test_mutated_frames(self) -> None:
        """Valid frames with random bytes flipped, inserted or cut."""
        rng = random.Random(20261122)
        seeds = [JSON_FRAME, encode_command(RemotingCommand(code=310, ext_fields={"a": "b", "c": "d"},
                                                            remark="r", body=b"xyz",
                                                            serialize_type=SerializeType.ROCKETMQ))]
        for _ in range(3000):
            frame = bytearray(rng.choice(seeds))
            for _ in range(rng.randint(1, 4)):
                op = rng.randrange(3)
                pos = rng.randrange(len(frame))
                if op == 0:
                    frame[pos] = rng.randrange(256)
                elif op == 1:
                    frame.insert(pos, rng.randrange(256))
                else:
                    del frame[pos]
            decoder = FrameDecoder(1 << 20)
            self._check(decoder, bytes(frame))

    def test_random_bytes(self) -> None:
        """Pure noise, fed in random chunks."""
        rng = random.Random(7)
        for _ in range(300):
            decoder = FrameDecoder(1 << 16)
            for _ in range(10):
                if not self._check(decoder, rng.randbytes(rng.randint(1, 200))):
                    break
