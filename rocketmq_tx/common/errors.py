# -*- test-case-name: rocketmq_tx.common.test.test_messagecodec -*-
"""
Exceptions shared by every layer.

``common`` is the lowest layer, so the root of the project's error hierarchy lives here and the
remoting, store and client packages derive their own errors from it.
"""

from __future__ import annotations

__all__ = ["RocketMQError", "MessageFormatError", "UnsupportedCompressionError"]


class RocketMQError(Exception):
    """
    Root of every exception raised on purpose by ``rocketmq_tx``.
    """


class MessageFormatError(RocketMQError, ValueError):
    """
    Bytes that should hold a message (a CommitLog record, a batch entry, a message id) are
    truncated or malformed, or a value cannot be represented in the binary format (for example a
    properties string longer than 32767 bytes).

    When reading a CommitLog this means corruption; when reading a network body it means the peer
    sent garbage and the body should be rejected.
    """


class UnsupportedCompressionError(MessageFormatError):
    """
    A message body is compressed with an algorithm this installation cannot decompress.

    Java producers use zlib unless ``rocketmq.message.compressType`` is set to ``LZ4`` or ``ZSTD``.
    Install the ``lz4`` or ``zstandard`` package to read those bodies, or decode with
    ``decompress_body=False`` to get the compressed bytes.
    """
