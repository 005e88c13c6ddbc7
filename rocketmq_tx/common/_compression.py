# -*- test-case-name: rocketmq_tx.common.test.test_compression -*-
"""
Body compression as Java producers apply it (protocol notes §5.3). Re-exported by
:mod:`rocketmq_tx.common.messagecodec`.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

from rocketmq_tx.common.errors import MessageFormatError, UnsupportedCompressionError
from rocketmq_tx.common.sysflag import DEFAULT_COMPRESS_LEVEL, CompressionType, MessageSysFlag

__all__ = ["compress_body", "decompress_body", "inflate"]

_COMPRESSED = MessageSysFlag.COMPRESSED_FLAG


def compress_body(body: bytes, level: int = DEFAULT_COMPRESS_LEVEL) -> bytes:
    """
    Compress *body* like a Java producer (zlib container, ``Deflater(level)``). The caller
    decides when (Java: bodies of 4096 bytes or more, never batches) and sets
    ``COMPRESSED_FLAG | COMPRESSION_ZLIB_TYPE`` (0x301) in the sysFlag.
    """
    return zlib.compress(body, level)


def decompress_body(body: bytes, sys_flag: int) -> bytes:
    """
    Undo producer compression according to *sys_flag*: *body* is returned unchanged unless
    ``COMPRESSED_FLAG`` is set. Type 0 or 3 is zlib; 1 (LZ4 frame) and 2 (zstd) need the
    optional ``lz4`` / ``zstandard`` packages.

    :raises UnsupportedCompressionError: for LZ4/zstd without their library, or types 4-7.
    :raises MessageFormatError: if the data does not decompress.
    """
    if not sys_flag & _COMPRESSED:
        return body
    return inflate(body, sys_flag)


def inflate(body: bytes, sys_flag: int) -> bytes:
    """
    Decompress *body* with the algorithm named by *sys_flag*'s compression type, without
    looking at ``COMPRESSED_FLAG`` (the decoder has checked it already).

    :raises UnsupportedCompressionError: see :func:`decompress_body`.
    :raises MessageFormatError: if the data does not decompress.
    """
    kind = (sys_flag & MessageSysFlag.COMPRESSION_TYPE_MASK) >> 8
    if kind == CompressionType.ZLIB or kind == CompressionType.ZLIB_LEGACY:
        try:
            return zlib.decompress(body)
        except zlib.error as e:
            raise MessageFormatError(f"zlib-compressed body does not decompress: {e}") from None
    decompress = _optional_decompressor(kind)
    try:
        return decompress(body)
    except Exception as e:  # third-party libraries raise assorted types
        raise MessageFormatError(
            f"{CompressionType(kind).name}-compressed body does not decompress: {e}") from None


def _optional_decompressor(kind: int) -> Callable[[bytes], bytes]:
    if kind == CompressionType.LZ4:
        try:
            import lz4.frame
        except ImportError:
            raise UnsupportedCompressionError(
                "body is LZ4-compressed; install the 'lz4' package to read it") from None
        return lz4.frame.decompress
    if kind == CompressionType.ZSTD:
        try:
            import zstandard
        except ImportError:
            raise UnsupportedCompressionError(
                "body is zstd-compressed; install the 'zstandard' package to read it") from None

        def zstd_decompress(data: bytes) -> bytes:
            # Java's ZstdOutputStream does not record the content size, so stream-decode.
            return zstandard.ZstdDecompressor().decompressobj().decompress(data)

        return zstd_decompress
    raise UnsupportedCompressionError(f"unknown compression type {kind} in sysFlag")
