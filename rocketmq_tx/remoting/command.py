# -*- test-case-name: rocketmq_tx.remoting.test.test_serialization,rocketmq_tx.remoting.test.test_framing -*-
"""
:class:`RemotingCommand`, the one message type of the RocketMQ remoting protocol.

A command is a request or a response (flag bit 0), possibly oneway (flag bit 1), with a
custom header carried as ``extFields`` (a string-to-string map) and an opaque body.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from rocketmq_tx.remoting.codes import LanguageCode, ResponseCode, SerializeType

__all__ = [
    "RemotingCommand",
    "split_address",
    "RPC_TYPE_RESPONSE",
    "RPC_ONEWAY",
    "DEFAULT_VERSION",
]

#: Flag bit 0: the command is a response.
RPC_TYPE_RESPONSE = 1
#: Flag bit 1: the request expects no response.
RPC_ONEWAY = 2

#: ``MQVersion.Version.V4_9_8.ordinal()``. At 401 (V4_9_4) or above a Java name server
#: answers routes in standard JSON, and at 121 or above a broker honours a client's
#: maxReconsumeTimes, so we present ourselves as 4.9.8.
DEFAULT_VERSION = 409


@dataclass(slots=True, eq=True)
class RemotingCommand:
    """
    One remoting command.

    :ivar code: request code (requests) or response code (responses); an ``int``.
    :ivar language: the sender's ``LanguageCode`` (an unknown number stays an ``int``).
    :ivar version: the sender's ``MQVersion`` ordinal.
    :ivar opaque: request id; a response carries its request's opaque.
    :ivar flag: bit 0 response, bit 1 oneway.
    :ivar remark: free text, the error description in responses; ``None`` when absent.
    :ivar ext_fields: the custom header, every value a string.
    :ivar body: the payload (``b""`` when absent).
    :ivar serialize_type: the header encoding used (decoded) or to use (encoded).
    """

    code: int
    language: int = LanguageCode.PYTHON
    version: int = DEFAULT_VERSION
    opaque: int = 0
    flag: int = 0
    remark: str | None = None
    ext_fields: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    serialize_type: SerializeType = SerializeType.JSON

    @property
    def is_response(self) -> bool:
        """``True`` for a response."""
        return bool(self.flag & RPC_TYPE_RESPONSE)

    @property
    def is_oneway(self) -> bool:
        """``True`` for a request that must not be answered."""
        return bool(self.flag & RPC_ONEWAY)

    @classmethod
    def request(
        cls,
        code: int,
        ext_fields: Mapping[str, str] | None = None,
        body: bytes = b"",
        *,
        oneway: bool = False,
        serialize_type: SerializeType = SerializeType.JSON,
        version: int = DEFAULT_VERSION,
    ) -> RemotingCommand:
        """Build a request; the opaque is assigned when it is sent."""
        return cls(
            code=code,
            version=version,
            flag=RPC_ONEWAY if oneway else 0,
            ext_fields=dict(ext_fields) if ext_fields else {},
            body=body,
            serialize_type=serialize_type,
        )

    def make_response(
        self,
        code: int = ResponseCode.SUCCESS,
        remark: str | None = None,
        ext_fields: Mapping[str, str] | None = None,
        body: bytes = b"",
        *,
        serialize_type: SerializeType | None = None,
    ) -> RemotingCommand:
        """
        Build the response to this request: same opaque, response flag set and, unless
        told otherwise, the request's serialization (what Java 4.9.4+ servers do).
        """
        # positional, in field order: one per request answered
        return RemotingCommand(code, LanguageCode.PYTHON, DEFAULT_VERSION, self.opaque, RPC_TYPE_RESPONSE, remark,
                               dict(ext_fields) if ext_fields else {}, body,
                               self.serialize_type if serialize_type is None else serialize_type)

    def make_unsupported_response(self) -> RemotingCommand:
        """REQUEST_CODE_NOT_SUPPORTED with Java's remark text (leading space included)."""
        return self.make_response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f" request type {self.code} not supported")


def split_address(addr: str) -> tuple[str, int]:
    """``"host:port"`` (IPv6 as ``[::1]:10911`` or ``::1:10911``) to ``(host, port)``.

    :raises ValueError: no port.
    """
    host, sep, port = addr.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"not a host:port address: {addr!r}")
    return host.strip("[]"), int(port)
