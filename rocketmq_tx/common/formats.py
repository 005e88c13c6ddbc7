# -*- test-case-name: rocketmq_tx.common.test.test_formats -*-
"""
The message formats declared once with ``construct``: the specification, a test oracle for
:mod:`rocketmq_tx.common.messagecodec`, and a parser for debugging tools.

Too slow for the per-message path (see the construct notes); use ``messagecodec`` there.

Parsing yields ``construct`` containers whose field names match
:class:`~rocketmq_tx.common.message.MessageExt`. Every declaration ends in ``Terminated``
inside its length prefix, so a TOTALSIZE that disagrees with the fields is an error rather than
silently ignored bytes. Expressions use ``this`` (no lambdas) so ``.compile()`` works; note
that compiled parsers skip some short-read checks, so use the interpreted ones on untrusted
input.
"""

from __future__ import annotations

import socket
from typing import Any

from construct import (
    Adapter,
    Bytes,
    Const,
    Default,
    Error,
    GreedyBytes,
    GreedyRange,
    IfThenElse,
    Int8sb,
    Int16sb,
    Int32sb,
    Int64sb,
    PascalString,
    Prefixed,
    Struct,
    Switch,
    Terminated,
    this,
)

from rocketmq_tx.common.sysflag import (
    BLANK_MAGIC_CODE,
    MESSAGE_MAGIC_CODE,
    MESSAGE_MAGIC_CODE_V2,
    MessageSysFlag,
)

__all__ = [
    "IPv4Address",
    "IPv6Address",
    "HostV4",
    "HostV6",
    "MessageRecord",
    "MessageRecords",
    "BlankRecord",
    "BatchMessageEntry",
    "BatchMessageBody",
]


class _IPAddress(Adapter):
    """
    IP bytes shown as literal text.
    """

    def __init__(self, family: int, size: int) -> None:
        super().__init__(Bytes(size))
        self._family = family

    def _decode(self, obj: bytes, context: Any, path: str) -> str:
        return socket.inet_ntop(self._family, obj)

    def _encode(self, obj: str, context: Any, path: str) -> bytes:
        return socket.inet_pton(self._family, obj)


#: 4 address bytes as dotted text.
IPv4Address = _IPAddress(socket.AF_INET, 4)
#: 16 address bytes as IPv6 text.
IPv6Address = _IPAddress(socket.AF_INET6, 16)

#: A socket address as Java writes it: IP bytes, then the port as an ``int``.
HostV4 = Struct("host" / IPv4Address, "port" / Int32sb)
HostV6 = Struct("host" / IPv6Address, "port" / Int32sb)

#: One CommitLog record (protocol notes §5.2); also one record of a pull/query/view body.
#: TOTALSIZE counts itself. The topic length is a signed byte under the V1 magic and a
#: ``short`` under V2; any other magic fails. Hosts are 20 bytes instead of 8 when their
#: IPv6 bit is set in SYSFLAG. BODYCRC is not checked here.
MessageRecord = Prefixed(
    Int32sb,
    Struct(
        "magic_code" / Int32sb,
        "body_crc" / Int32sb,
        "queue_id" / Int32sb,
        "flag" / Int32sb,
        "queue_offset" / Int64sb,
        "commit_log_offset" / Int64sb,
        "sys_flag" / Int32sb,
        "born_timestamp" / Int64sb,
        "born_host" / IfThenElse(this.sys_flag & MessageSysFlag.BORNHOST_V6_FLAG, HostV6, HostV4),
        "store_timestamp" / Int64sb,
        "store_host"
        / IfThenElse(this.sys_flag & MessageSysFlag.STOREHOSTADDRESS_V6_FLAG, HostV6, HostV4),
        "reconsume_times" / Int32sb,
        "prepared_transaction_offset" / Int64sb,
        "body" / Prefixed(Int32sb, GreedyBytes),
        "topic"
        / Switch(
            this.magic_code,
            {
                MESSAGE_MAGIC_CODE: PascalString(Int8sb, "utf8"),
                MESSAGE_MAGIC_CODE_V2: PascalString(Int16sb, "utf8"),
            },
            default=Error,
        ),
        "properties" / PascalString(Int16sb, "utf8"),
        Terminated,
    ),
    includelength=True,
)

#: Records laid end to end (pull/query/view response bodies), with nothing left over.
MessageRecords = Struct("records" / GreedyRange(MessageRecord), Terminated)

#: The filler at the end of a CommitLog file: TOTALSIZE is the rest of the file.
BlankRecord = Struct("total_size" / Int32sb, "magic_code" / Const(BLANK_MAGIC_CODE, Int32sb))

#: One message of a SEND_BATCH_MESSAGE body (protocol notes §5.6). Writers put 0 in
#: MAGICCODE and BODYCRC; readers ignore both.
BatchMessageEntry = Prefixed(
    Int32sb,
    Struct(
        "magic_code" / Default(Int32sb, 0),
        "body_crc" / Default(Int32sb, 0),
        "flag" / Int32sb,
        "body" / Prefixed(Int32sb, GreedyBytes),
        "properties" / PascalString(Int16sb, "utf8"),
        Terminated,
    ),
    includelength=True,
)

#: A whole SEND_BATCH_MESSAGE body.
BatchMessageBody = Struct("messages" / GreedyRange(BatchMessageEntry), Terminated)
