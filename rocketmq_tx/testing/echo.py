# -*- test-case-name: rocketmq_tx.net.test.test_protocol -*-
"""
A remoting echo server for interop tests and diagnostics (``twistd -n rocketmq-echo``).

It implements the same contract as the Java ``EchoServer`` in compat-tests:

* 9001 ECHO: SUCCESS with the request's ext fields and body, remark ``echo``;
* 9002 ONEWAY_SINK: counted, never answered;
* 9003 SINK_COUNT: SUCCESS with ext field ``count``.

Every other code gets REQUEST_CODE_NOT_SUPPORTED, as from a Java server.
"""

from __future__ import annotations

from typing import Any

from twisted.application import service
from twisted.internet.endpoints import serverFromString
from twisted.python import usage
from zope.interface import implementer

from rocketmq_tx.net.dispatch import IRemotingContext, IRequestProcessor, ProcessorTable
from rocketmq_tx.net.server import RemotingServerFactory
from rocketmq_tx.net.service import ListeningService
from rocketmq_tx.remoting import DEFAULT_MAX_FRAME_LENGTH, RemotingCommand, ResponseCode

__all__ = ["ECHO", "ONEWAY_SINK", "SINK_COUNT", "EchoProcessor", "echo_table", "Options", "makeService"]

ECHO = 9001
ONEWAY_SINK = 9002
SINK_COUNT = 9003


@implementer(IRequestProcessor)
class EchoProcessor:
    """Answers ECHO, counts ONEWAY_SINK, reports the count on SINK_COUNT."""

    def __init__(self) -> None:
        self.sunk = 0

    def process_request(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand | None:
        if request.code == ECHO:
            return request.make_response(ResponseCode.SUCCESS, "echo", request.ext_fields, request.body)
        if request.code == ONEWAY_SINK:
            self.sunk += 1
            return None
        return request.make_response(ResponseCode.SUCCESS, ext_fields={"count": str(self.sunk)})

    def reject_request(self) -> bool:
        return False


def echo_table() -> ProcessorTable:
    """The processor table of the echo server."""
    processor = EchoProcessor()
    return ProcessorTable({ECHO: processor, ONEWAY_SINK: processor, SINK_COUNT: processor})


class Options(usage.Options):
    """``twistd rocketmq-echo`` options."""

    synopsis = "[--listen ENDPOINT]"
    optParameters = [
        ["listen", "l", "tcp:9001:interface=127.0.0.1", "Endpoint description to listen on (port 0 = any)."],
        ["max-frame-length", None, DEFAULT_MAX_FRAME_LENGTH, "Largest accepted frame in bytes.", int],
    ]

    def postOptions(self) -> None:
        if self["max-frame-length"] < 1024:
            raise usage.UsageError("--max-frame-length must be at least 1024")


def makeService(options: Options, reactor: Any = None) -> service.MultiService:
    """The echo server as a service tree."""
    if reactor is None:
        from twisted.internet import reactor  # imported late so twistd can choose the reactor
    factory = RemotingServerFactory(echo_table(), reactor, max_frame_length=options["max-frame-length"])
    top = service.MultiService()
    listening = ListeningService("rocketmq-echo", serverFromString(reactor, options["listen"]), factory, reactor)
    listening.setServiceParent(top)
    return top
