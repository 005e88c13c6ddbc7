"""
Tests for SEND_BATCH_MESSAGE bodies: :func:`encode_batch` and :func:`decode_batch`.
"""

from __future__ import annotations

import struct

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.common.errors import MessageFormatError
from rocketmq_tx.common.message import Message
from rocketmq_tx.common.messagecodec import decode_batch, encode_batch

# Two messages of a SEND_BATCH_MESSAGE body.
BATCH = bytes.fromhex(
    "0000001b"  # TOTALSIZE 27 = 22 + 2 + 3
    "00000000"  # MAGICCODE 0
    "00000000"  # BODYCRC 0
    "00000001"  # FLAG 1
    "00000002" "6869"  # BODYLENGTH 2, BODY "hi"
    "0003" "610162"  # PROPERTIESLENGTH 3, "a\x01b"
    "00000016"  # TOTALSIZE 22
    "00000000" "00000000"  # MAGICCODE, BODYCRC
    "ffffffff"  # FLAG -1
    "00000000"  # BODYLENGTH 0
    "0000"  # PROPERTIESLENGTH 0
)


class BatchTests(SynchronousTestCase):
    """
    SEND_BATCH_MESSAGE bodies.
    """

    messages = [Message("", b"hi", 1, {"a": "b"}), Message("", b"", -1, {})]

    def test_encode(self) -> None:
        """
        Encoding gives the annotated bytes.
        """
        self.assertEqual(encode_batch(self.messages), BATCH)

    def test_decode(self) -> None:
        """
        Decoding gives the messages back, with the topic supplied by the caller.
        """
        self.assertEqual(decode_batch(BATCH), self.messages)
        self.assertEqual([m.topic for m in decode_batch(BATCH, "T")], ["T", "T"])

    def test_tolerant_reader(self) -> None:
        """
        MAGICCODE and BODYCRC are ignored, and a trailing 0x02 in properties is accepted.
        """
        data = bytearray(BATCH)
        data[4:12] = b"\x12" * 8
        self.assertEqual(decode_batch(bytes(data)), self.messages)
        go_style = encode_batch([Message("", b"", 0, {})])[:-2] + b"\x00\x04a\x01b\x02"
        go_style = struct.pack(">i", 26) + go_style[4:]
        self.assertEqual(decode_batch(go_style)[0].properties, {"a": "b"})

    def test_malformed(self) -> None:
        """
        Truncations and inconsistent lengths raise :class:`MessageFormatError`.
        """
        for size in range(1, len(BATCH)):
            if size == 27:  # a whole first entry
                continue
            self.assertRaises(MessageFormatError, decode_batch, BATCH[:size])
        bad_total = struct.pack(">i", 28) + BATCH[4:]
        self.assertRaises(MessageFormatError, decode_batch, bad_total)
        bad_body = BATCH[:16] + struct.pack(">i", -1) + BATCH[20:]
        self.assertRaises(MessageFormatError, decode_batch, bad_body)
        bad_props = BATCH[:22] + struct.pack(">h", -3) + BATCH[24:]
        self.assertRaises(MessageFormatError, decode_batch, bad_props)

    def test_encode_limits(self) -> None:
        """
        Properties over 32767 bytes and flags outside ``int32`` are refused.
        """
        encode_batch([Message("T", properties={"k": "v" * 32765})])
        self.assertRaises(
            MessageFormatError, encode_batch, [Message("T", properties={"k": "v" * 32766})]
        )
        self.assertRaises(MessageFormatError, encode_batch, [Message("T", flag=2**31)])

    def test_empty(self) -> None:
        """
        No messages, no bytes.
        """
        self.assertEqual(encode_batch([]), b"")
        self.assertEqual(decode_batch(b""), [])
