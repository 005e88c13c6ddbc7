"""
Tests for compressed bodies: :func:`compress_body`, :func:`decompress_body` and how
:func:`decode_message` applies them.
"""

from __future__ import annotations

import importlib
import sys
import zlib
from collections.abc import Callable

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.common.errors import MessageFormatError, UnsupportedCompressionError
from rocketmq_tx.common.message import MessageExt
from rocketmq_tx.common.messagecodec import (
    compress_body,
    decode_message,
    decompress_body,
    encode_message,
)
from rocketmq_tx.common.sysflag import MessageSysFlag


class CompressionTests(SynchronousTestCase):
    """
    Compressed bodies.
    """

    body = b"RocketMQ " * 1000

    def _compressed_record(self, sys_flag: int) -> tuple[bytes, bytes]:
        stored = compress_body(self.body)
        msg = MessageExt(topic="T", body=stored, sys_flag=sys_flag)
        return encode_message(msg), stored

    def test_compress_level(self) -> None:
        """
        ``compress_body`` is zlib at level 5 by default.
        """
        self.assertEqual(compress_body(self.body), zlib.compress(self.body, 5))
        self.assertEqual(compress_body(self.body, 9), zlib.compress(self.body, 9))

    def test_zlib_round_trip(self) -> None:
        """
        A zlib body (type 3, 0x301) decodes decompressed; BODYCRC covers the stored bytes.
        """
        data, stored = self._compressed_record(0x301)
        msg, _ = decode_message(data, check_crc=True)
        self.assertEqual(msg.body, self.body)
        self.assertEqual(msg.sys_flag, 0x301)  # kept, as in Java
        self.assertEqual(msg.body_crc, zlib.crc32(stored) & 0x7FFFFFFF)
        raw, _ = decode_message(data, decompress_body=False)
        self.assertEqual(raw.body, stored)

    def test_legacy_type(self) -> None:
        """
        Type 0 (writers before 4.9.4 set only bit 0) is zlib too.
        """
        data, _ = self._compressed_record(MessageSysFlag.COMPRESSED_FLAG)
        self.assertEqual(decode_message(data)[0].body, self.body)

    def test_decompress_body(self) -> None:
        """
        ``decompress_body`` honours the flag.
        """
        stored = compress_body(self.body)
        self.assertEqual(decompress_body(stored, 0x301), self.body)
        self.assertIs(decompress_body(stored, 0x300), stored)  # bit 0 clear: untouched

    def test_corrupt_zlib(self) -> None:
        """
        A body that does not inflate raises :class:`MessageFormatError`.
        """
        msg = MessageExt(topic="T", body=b"not zlib", sys_flag=0x301)
        self.assertRaises(MessageFormatError, decode_message, encode_message(msg))
        self.assertRaises(MessageFormatError, decompress_body, b"not zlib", 1)

    def test_unknown_type(self) -> None:
        """
        Types 4-7 are unknown.
        """
        self.assertRaises(UnsupportedCompressionError, decompress_body, b"x", 0x501)

    def _check_missing(self, sys_flag: int, module: str) -> None:
        """Without the library: UnsupportedCompressionError naming it; readable undecompressed."""
        msg = MessageExt(topic="T", body=b"\x04\x22\x4d\x18", sys_flag=sys_flag)
        error = self.assertRaises(UnsupportedCompressionError, decode_message, encode_message(msg))
        self.assertIn(module, str(error))
        self.assertIsInstance(error, MessageFormatError)
        self.assertEqual(decode_message(encode_message(msg), decompress_body=False)[0].body,
                         b"\x04\x22\x4d\x18")

    def _check_installed(self, sys_flag: int, compress: Callable[[bytes], bytes]) -> None:
        """With the library: the body decodes decompressed; a damaged one is MessageFormatError."""
        stored = compress(self.body)
        msg = MessageExt(topic="T", body=stored, sys_flag=sys_flag)
        decoded, _ = decode_message(encode_message(msg), check_crc=True)
        self.assertEqual(decoded.body, self.body)
        self.assertEqual(decompress_body(stored, sys_flag), self.body)
        self.assertRaises(MessageFormatError, decompress_body, b"not compressed at all", sys_flag)

    def test_lz4_and_zstd(self) -> None:
        """
        LZ4 (0x101) and zstd (0x201) bodies need optional libraries: read with them when they
        are installed, and refused with an error that names them when they are not. Each
        branch asserts; ``test_lz4_and_zstd_missing`` covers the second one everywhere.
        """
        def lz4_compress(data: bytes) -> bytes:
            import lz4.frame  # type: ignore[import-not-found]
            return lz4.frame.compress(data)  # type: ignore[no-any-return]

        def zstd_compress(data: bytes) -> bytes:
            import zstandard  # type: ignore[import-not-found]
            return zstandard.ZstdCompressor().compress(data)  # type: ignore[no-any-return]

        checked = []
        for sys_flag, module, compress in ((0x101, "lz4", lz4_compress), (0x201, "zstandard", zstd_compress)):
            try:
                importlib.import_module(module)
            except ImportError:
                self._check_missing(sys_flag, module)
                checked.append((module, "missing"))
            else:
                self._check_installed(sys_flag, compress)
                checked.append((module, "installed"))
        self.assertEqual([m for m, _ in checked], ["lz4", "zstandard"])

    def test_lz4_and_zstd_missing(self) -> None:
        """The libraries made unimportable: the error branch, whatever is installed."""
        saved = {name: sys.modules.get(name) for name in ("lz4", "lz4.frame", "zstandard")}
        try:
            for name in saved:
                sys.modules[name] = None  # type: ignore[assignment]  # import raises ImportError
            for sys_flag, module in ((0x101, "lz4"), (0x201, "zstandard")):
                self._check_missing(sys_flag, module)
        finally:
            for name, module in saved.items():
                if module is None:
                    sys.modules.pop(name, None)
                else:
                    sys.modules[name] = module
