"""Tests for REGISTER_BROKER's body forms: the compressed one is inflated within a bound."""

from __future__ import annotations

import tracemalloc
import zlib

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.common.route import DataVersion, TopicConfig
from rocketmq_tx.remoting import RemotingCommandError, bodies
from rocketmq_tx.remoting.bodies import MAX_INFLATED_REGISTER_BODY, RegisterBrokerBody
from rocketmq_tx.remoting.formats import RegisterBrokerBodyCompressed

BODY = RegisterBrokerBody(DataVersion(3, 1_700_000_000_000), {"T": TopicConfig("T", 4, 4)}, ["10.0.0.1:9999"])


def inflated(rest: bytes = b"") -> bytes:
    """BODY's inflated compressed form; *rest* is the 5.x tail a 4.9 reader skips."""
    return RegisterBrokerBodyCompressed.build(dict(
        data_version='{"counter":3,"timestamp":1700000000000}', topic_configs=["T 4 4 6 SINGLE_TAG"],
        filter_server_list='["10.0.0.1:9999"]', rest=rest))


class CompressedBodyTests(SynchronousTestCase):
    def test_round_trip(self) -> None:
        for compressed in (False, True):
            self.assertEqual(RegisterBrokerBody.decode(BODY.encode(compressed), compressed), BODY)
        self.assertEqual(zlib.decompress(BODY.encode(True)), inflated())

    def test_attributes_line(self) -> None:
        """5.x's line carries the topic's attributes as a sixth token of JSON, read back; 5.x's
        trailing separator without attributes reads as the 4.9 line."""
        body = RegisterBrokerBody(DataVersion(1, 2), {"F": TopicConfig("F", 2, 2, attributes={"message.type": "FIFO"})})
        raw = zlib.decompress(body.encode(True))
        self.assertIn(b'F 2 2 6 SINGLE_TAG {"message.type":"FIFO"}', raw)
        self.assertEqual(RegisterBrokerBody.decode(body.encode(True), True), body)
        java_5x = RegisterBrokerBodyCompressed.build(dict(
            data_version='{"counter":3,"timestamp":1700000000000}', topic_configs=["T 4 4 6 SINGLE_TAG "],
            filter_server_list='["10.0.0.1:9999"]', rest=b""))
        self.assertEqual(RegisterBrokerBody.decode(zlib.compress(java_5x), True), BODY)

    def test_limit_is_the_largest_frame(self) -> None:
        self.assertEqual(MAX_INFLATED_REGISTER_BODY, 16 * 1024 * 1024)

    def test_bound_is_exact(self) -> None:
        """A stream inflating to exactly the limit decodes; one byte more is refused."""
        self.patch(bodies, "MAX_INFLATED_REGISTER_BODY", 4096)
        fits = inflated(b"\0" * (4096 - len(inflated())))
        self.assertEqual(RegisterBrokerBody.decode(zlib.compress(fits), True), BODY)
        error = self.assertRaises(RemotingCommandError, RegisterBrokerBody.decode, zlib.compress(fits + b"\0"), True)
        self.assertEqual(str(error), "Failed to decode RegisterBrokerBody: compressed body inflates past 4096 bytes")

    def test_bomb_refused_in_bounded_memory_and_work(self) -> None:
        """A ~100 KB stream of 100 MB of zeros costs about the limit, not the 100 MB."""
        self.patch(bodies, "MAX_INFLATED_REGISTER_BODY", 1 << 20)
        bomb = zlib.compress(inflated(b"\0" * (100 << 20)), 9)
        inflated_bytes: list[int] = []
        real_decompressobj = zlib.decompressobj

        class Counting:
            def __init__(self) -> None:
                self.inflater = real_decompressobj()
                self.eof = False

            def decompress(self, data: bytes, max_length: int = 0) -> bytes:
                out = self.inflater.decompress(data, max_length)
                inflated_bytes.append(len(out))
                self.eof = self.inflater.eof
                return out
        self.patch(bodies.zlib, "decompressobj", Counting)
        tracemalloc.start()
        try:
            self.assertRaises(RemotingCommandError, RegisterBrokerBody.decode, bomb, True)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        self.assertLess(peak, 4 << 20)
        # The work: one byte past the limit inflated, not the 100 MB (timed by bench/bounded.py).
        self.assertEqual(sum(inflated_bytes), (1 << 20) + 1)

    def test_damaged_streams(self) -> None:
        """Not zlib, truncated, or inflating to something else: RemotingCommandError as before."""
        whole = zlib.compress(inflated())
        for body in (b"not zlib", whole[:-4], whole[:2], zlib.compress(b"\x00\x00\x00\x05{}")):
            error = self.assertRaises(RemotingCommandError, RegisterBrokerBody.decode, body, True)
            self.assertTrue(str(error).startswith("Failed to decode RegisterBrokerBody: "), error)

    def test_trailing_bytes_after_the_stream_ignored(self) -> None:
        """Bytes after the zlib stream's end are ignored, as zlib.decompress and Java's InflaterInputStream do."""
        self.assertEqual(RegisterBrokerBody.decode(zlib.compress(inflated()) + b"tail", True), BODY)
