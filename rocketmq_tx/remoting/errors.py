# -*- test-case-name: rocketmq_tx.remoting.test.test_framing -*-
"""
The error hierarchy of the remoting layer.

Plain exceptions only: this package must stay importable without Twisted, so the
Twisted layer raises or wraps these rather than the other way round.
"""

from __future__ import annotations

from rocketmq_tx.common.errors import RocketMQError

__all__ = [
    "RocketMQError",
    "RemotingError",
    "LocalProtocolError",
    "RemoteProtocolError",
    "FrameTooLong",
    "RemotingTimeoutError",
    "RemotingConnectError",
    "RemotingCommandError",
    "MQBrokerError",
]


class RemotingError(RocketMQError):
    """Something went wrong moving commands over a connection."""


class LocalProtocolError(RemotingError):
    """We were asked to build a frame the protocol cannot carry (our bug or the caller's)."""


class RemoteProtocolError(RemotingError):
    """The peer sent bytes that are not a valid frame; the connection must be closed."""


class FrameTooLong(RemoteProtocolError):
    """A frame's declared length exceeds the configured maximum."""


class RemotingTimeoutError(RemotingError):
    """No response arrived within the request's timeout."""


class RemotingConnectError(RemotingError):
    """The connection could not be established or was lost before the response."""


class RemotingCommandError(RocketMQError):
    """
    A command is well framed but its custom header is not usable (a required field is
    missing or unparsable). Java raises ``RemotingCommandException`` here; servers
    turn it into a SYSTEM_ERROR response with the message as remark.
    """


class MQBrokerError(RocketMQError):
    """
    A server answered with a response code other than the one the caller needed.

    :ivar code: the response code (an ``int``; a known one compares equal to its enum).
    :ivar remark: the server's remark, or ``None``.
    """

    def __init__(self, code: int, remark: str | None) -> None:
        super().__init__(code, remark)
        self.code = code
        self.remark = remark

    def __str__(self) -> str:
        return f"CODE: {self.code} DESC: {self.remark}"
