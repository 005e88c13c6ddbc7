"""
The RocketMQ remoting protocol as a sans-IO codec: no sockets, no Twisted.

:mod:`rocketmq_tx.net` drives it with Twisted and :mod:`rocketmq_tx.blocking` with plain
sockets. See ``docs/wire-protocol.md``.
"""

from rocketmq_tx.remoting.codes import (
    LanguageCode,
    RequestCode,
    ResponseCode,
    SerializeType,
    request_code,
    response_code,
)
from rocketmq_tx.remoting.command import DEFAULT_VERSION, RPC_ONEWAY, RPC_TYPE_RESPONSE, RemotingCommand, split_address
from rocketmq_tx.remoting.errors import (
    FrameTooLong,
    LocalProtocolError,
    MQBrokerError,
    RemoteProtocolError,
    RemotingCommandError,
    RemotingConnectError,
    RemotingError,
    RemotingTimeoutError,
    RocketMQError,
)
from rocketmq_tx.remoting.framing import DEFAULT_MAX_FRAME_LENGTH, FrameDecoder, decode_frame, encode_command
from rocketmq_tx.remoting.header import CommandCustomHeader, custom_header, wire
from rocketmq_tx.remoting.opaque import OpaqueSequence

__all__ = [
    "CommandCustomHeader",
    "DEFAULT_MAX_FRAME_LENGTH",
    "DEFAULT_VERSION",
    "FrameDecoder",
    "FrameTooLong",
    "LanguageCode",
    "LocalProtocolError",
    "MQBrokerError",
    "OpaqueSequence",
    "RPC_ONEWAY",
    "RPC_TYPE_RESPONSE",
    "RemoteProtocolError",
    "RemotingCommand",
    "RemotingCommandError",
    "RemotingConnectError",
    "RemotingError",
    "RemotingTimeoutError",
    "RequestCode",
    "ResponseCode",
    "RocketMQError",
    "SerializeType",
    "custom_header",
    "decode_frame",
    "encode_command",
    "request_code",
    "response_code",
    "split_address",
    "wire",
]
