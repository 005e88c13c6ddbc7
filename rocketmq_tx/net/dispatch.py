# -*- test-case-name: rocketmq_tx.net.test.test_dispatch -*-
"""
Request dispatch: one explicit code-to-processor table per server, like Java's
``registerProcessor`` calls, and the one place where a processor's outcome becomes a
response (Java's ``NettyRemotingAbstract.processRequestCommand``).
"""

from __future__ import annotations

from typing import Mapping

from twisted.internet.defer import Deferred
from twisted.logger import Logger
from twisted.python.failure import Failure
from zope.interface import Attribute, Interface

from rocketmq_tx.remoting import RemotingCommand, RemotingCommandError, ResponseCode

__all__ = ["IRequestProcessor", "IRemotingContext", "ProcessorTable"]

log = Logger()

#: Java's remark for SYSTEM_BUSY from a processor that rejects requests.
REJECT_REMARK = "[REJECTREQUEST]system busy, start flow control for a while"


class IRemotingContext(Interface):
    """What a processor may know and do about the connection a request came on."""

    peer = Attribute("The peer's address, ``host:port``.")

    def send_request(request: RemotingCommand, timeout: float) -> Deferred:
        """Send a request to the peer (server-to-client calls); fires with the response."""

    def send_oneway(request: RemotingCommand) -> None:
        """Send a oneway request to the peer."""


class IRequestProcessor(Interface):
    """Handles the requests of the codes it is registered for."""

    def process_request(ctx: IRemotingContext, request: RemotingCommand) -> object:
        """
        Return the response, ``None`` for no response, or a Deferred of either.
        The dispatcher copies the opaque and sets the response flag.
        """

    def reject_request() -> bool:
        """``True`` to answer SYSTEM_BUSY instead of processing (flow control)."""


class ProcessorTable:
    """
    Code to processor, with an optional default processor for every other code.

    :ivar default: the processor for codes not registered, or ``None`` (unknown codes
        then get REQUEST_CODE_NOT_SUPPORTED with Java's remark).
    """

    def __init__(
        self,
        processors: Mapping[int, IRequestProcessor] | None = None,
        default: IRequestProcessor | None = None,
    ) -> None:
        self._processors: dict[int, IRequestProcessor] = dict(processors or {})
        self.default = default

    def register(self, code: int, processor: IRequestProcessor) -> None:
        """Route requests with *code* to *processor*."""
        self._processors[int(code)] = processor

    def codes(self) -> frozenset[int]:
        """Every explicitly registered code."""
        return frozenset(self._processors)

    def lookup(self, code: int) -> IRequestProcessor | None:
        """The processor for *code*, else the default, else ``None``."""
        return self._processors.get(code, self.default)

    def dispatch(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand | Deferred | None:
        """
        Run *request* through its processor: returns the response to send, ``None`` for
        none, or a Deferred of either when the processor answers later.

        Never fails: a processor exception becomes SYSTEM_ERROR with a short remark (the
        traceback is logged, not sent). Synchronous processors cost no Deferred, which
        matters on the per-message path.
        """
        processor = self._processors.get(request.code, self.default)
        if processor is None:
            return request.make_unsupported_response()
        if processor.reject_request():
            return request.make_response(ResponseCode.SYSTEM_BUSY, REJECT_REMARK)
        try:
            result = processor.process_request(ctx, request)
        except Exception:
            return self._failed(Failure(), ctx, request)
        if isinstance(result, Deferred):
            return result.addErrback(self._failed, ctx, request)
        return result

    def _failed(self, failure: Failure, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        if failure.check(RemotingCommandError):
            remark = str(failure.value)
        else:
            log.failure(
                "processor failed on request code {code} from {peer}",
                failure, code=request.code, peer=ctx.peer,
            )
            # Java sends RemotingHelper.exceptionSimpleDesc: the class and a message.
            remark = f"{type(failure.value).__name__}: {failure.getErrorMessage()}"[:512]
        return request.make_response(ResponseCode.SYSTEM_ERROR, remark)
