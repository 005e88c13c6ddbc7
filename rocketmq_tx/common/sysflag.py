# -*- test-case-name: rocketmq_tx.common.test.test_messagecodec -*-
"""
Magic codes and ``sysFlag`` bits of the message record (Java ``MessageSysFlag``,
``MessageDecoder`` and 5.x ``MessageVersion``).

The values are part of the CommitLog and wire formats and must never change.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Final

__all__ = [
    "MESSAGE_MAGIC_CODE",
    "MESSAGE_MAGIC_CODE_V2",
    "BLANK_MAGIC_CODE",
    "MessageSysFlag",
    "CompressionType",
    "COMPRESS_MSG_BODY_OVER_HOWMUCH",
    "DEFAULT_COMPRESS_LEVEL",
    "get_transaction_value",
    "reset_transaction_value",
    "get_compression_type",
    "clear_compressed_flag",
]

#: Magic of a normal record (0xDAA320A7 read as a Java ``int``); 1-byte topic length.
MESSAGE_MAGIC_CODE: Final = -626843481
#: Magic of a 5.x record with a 2-byte topic length (0xDAA320AB); only for topics > 127 bytes.
MESSAGE_MAGIC_CODE_V2: Final = -626843477
#: Magic of the filler written at the end of a CommitLog file (0xCBD43194).
BLANK_MAGIC_CODE: Final = -875286124

#: Producers compress bodies at least this long (Java ``compressMsgBodyOverHowmuch``).
COMPRESS_MSG_BODY_OVER_HOWMUCH: Final = 4096
#: Java's default ``rocketmq.message.compressLevel``.
DEFAULT_COMPRESS_LEVEL: Final = 5


class MessageSysFlag:
    """
    Bits of the ``SYSFLAG`` field. Plain ``int`` class attributes so they cost nothing on the hot
    path; combine them with ``|`` and test them with ``&``.

    Bits 0x100-0x400 hold a :class:`CompressionType` (4.9.4+ and 5.x).
    """

    COMPRESSED_FLAG: Final = 0x1
    MULTI_TAGS_FLAG: Final = 0x2
    TRANSACTION_NOT_TYPE: Final = 0x0
    TRANSACTION_PREPARED_TYPE: Final = 0x4
    TRANSACTION_COMMIT_TYPE: Final = 0x8
    TRANSACTION_ROLLBACK_TYPE: Final = 0xC
    #: Mask of the two transaction bits (equal to ``TRANSACTION_ROLLBACK_TYPE``, as in Java).
    TRANSACTION_MASK: Final = 0xC
    BORNHOST_V6_FLAG: Final = 0x10
    STOREHOSTADDRESS_V6_FLAG: Final = 0x20
    NEED_UNWRAP_FLAG: Final = 0x40
    INNER_BATCH_FLAG: Final = 0x80
    COMPRESSION_LZ4_TYPE: Final = 0x100
    COMPRESSION_ZSTD_TYPE: Final = 0x200
    COMPRESSION_ZLIB_TYPE: Final = 0x300
    COMPRESSION_TYPE_MASK: Final = 0x700


class CompressionType(IntEnum):
    """
    Value of ``(sysFlag & 0x700) >> 8``. Java writers older than 4.9.4 leave it 0, which also
    means zlib.
    """

    ZLIB_LEGACY = 0
    LZ4 = 1
    ZSTD = 2
    ZLIB = 3


def get_transaction_value(sys_flag: int) -> int:
    """
    :return: the transaction type bits of *sys_flag* (one of the ``TRANSACTION_*`` values).
    """
    return sys_flag & MessageSysFlag.TRANSACTION_MASK


def reset_transaction_value(sys_flag: int, transaction_type: int) -> int:
    """
    :return: *sys_flag* with its transaction bits replaced by *transaction_type*.
    """
    return (sys_flag & ~MessageSysFlag.TRANSACTION_MASK) | transaction_type


def get_compression_type(sys_flag: int) -> int:
    """
    :return: the compression type number (see :class:`CompressionType`) stored in *sys_flag*;
        meaningful only when ``COMPRESSED_FLAG`` is set. Unknown numbers (4-7) are returned
        as they are.
    """
    return (sys_flag & MessageSysFlag.COMPRESSION_TYPE_MASK) >> 8


def clear_compressed_flag(sys_flag: int) -> int:
    """
    :return: *sys_flag* without ``COMPRESSED_FLAG``. Like Java, the compression type bits are
        left alone; they mean nothing once bit 0 is clear.
    """
    return sys_flag & ~MessageSysFlag.COMPRESSED_FLAG
