# -*- test-case-name: rocketmq_tx.net.test.test_dispatch -*-
"""
Request dispatch: one explicit code-to-processor table per server, like Java's
``registerProcessor`` calls, and the one place where a processor's outcome becomes a
response (Java's ``NettyRemotingAbstract.processRequestCommand``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from twisted.internet.defer import Deferred
from twisted.logger import Logger
from twisted.python.failure import Failure
from zope.interface import Attribute, Interface, implementer

from rocketmq_tx.common.seen import FirstSeen
from rocketmq_tx.remoting import RemotingCommand, RemotingCommandError, ResponseCode

__all__ = ["IRequestProcessor", "IRemotingContext", "Handler", "HandlerProcessor", "ProcessorTable", "RefusalLog"]

#: bound once: the observer's clock is read on every request
_monotonic = time.monotonic
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

    def process_request(ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand | Deferred | None:
        """
        Return the response, ``None`` for no response, or a Deferred of either.
        The dispatcher copies the opaque and sets the response flag.
        """

    def reject_request() -> bool:
        """``True`` to answer SYSTEM_BUSY instead of processing (flow control)."""


#: One request code's method: ``handler(ctx, request)`` returns what ``process_request`` does.
Handler = Callable[[IRemotingContext, RemotingCommand], RemotingCommand | Deferred | None]


@implementer(IRequestProcessor)
class HandlerProcessor:
    """
    The one dispatch style of our processors: one method per request code, and
    :attr:`handlers` mapping the codes the processor answers to them (set in ``__init__``).
    :meth:`ProcessorTable.register_handlers` routes those codes to it. A code without a
    handler (only a table's default processor sees one) gets REQUEST_CODE_NOT_SUPPORTED.
    """

    handlers: dict[int, Handler]

    def process_request(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand | Deferred | None:
        handler = self.handlers.get(request.code)
        if handler is None:
            return request.make_unsupported_response()
        return handler(ctx, request)

    def reject_request(self) -> bool:
        return False


#: Answers a client could be puzzled by (unsupported codes, permissions, names and
#: expressions refused): logged once per cause, not per request.
REFUSAL_CODES = frozenset({
    ResponseCode.SYSTEM_ERROR, ResponseCode.SYSTEM_BUSY, ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
    ResponseCode.MESSAGE_ILLEGAL, ResponseCode.NO_PERMISSION, ResponseCode.TOPIC_NOT_EXIST,
    ResponseCode.SUBSCRIPTION_PARSE_FAILED, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
    ResponseCode.INVALID_PARAMETER, ResponseCode.FILTER_DATA_NOT_EXIST,
})


class RefusalLog:
    """
    One warning per cause (request code, response code, remark), naming the first peer
    that met it. The causes remembered are bounded: a peer inventing new remarks (each
    bad name is one) pushes old causes out instead of growing memory.
    """

    MAX_CAUSES = 4096
    #: Remarks can echo a peer's input (a 16 MiB name): the log line and the cause keep this much.
    REMARK_CHARS = 200

    def __init__(self, max_causes: int = MAX_CAUSES) -> None:
        self._seen = FirstSeen(max_causes)

    def note(self, peer: str, request: RemotingCommand, response: RemotingCommand) -> bool:
        """Log *response* if its cause is new; ``True`` when it was logged."""
        remark = (response.remark or "")[:self.REMARK_CHARS]
        if not self._seen.first((request.code, response.code, remark)):
            return False
        if not remark.isprintable():  # a peer's name with a newline must not forge log lines
            remark = remark.encode("unicode_escape").decode("ascii")
        log.warn("refused request code {request_code} from {peer}: response code {response_code}, {remark}",
                 request_code=request.code, peer=peer, response_code=response.code, remark=remark or "(no remark)")
        return True


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
        #: the codes of HandlerProcessors that keep the base dispatch and flow control: their
        #: handlers, called without the processor's two calls in between (every request)
        self._handlers: dict[int, Handler] = {}
        self.default = default
        self.refusals = RefusalLog()
        #: ``hook(ctx, request)`` run before every processor (Java's server RPC hooks'
        #: ``doBeforeRequest``, e.g. the broker's ACL check): ``None`` to go on, or the
        #: response that refuses the request (sent as is, not run by the processor).
        self.before_request: Callable[[IRemotingContext, RemotingCommand], RemotingCommand | None] | None = None
        #: ``observer(request, response, started, later)`` told of every answer (the metrics'
        #: RPC latency): *started* is ``time.monotonic()`` at dispatch, *later* whether the
        #: answer came through a Deferred; ``None`` costs nothing.
        self.observer: Callable[[RemotingCommand, RemotingCommand | None, float, bool], object] | None = None
        #: ``hook(request, deferred)`` told of every request answered later (not at once), with
        #: the Deferred of its answer: the broker counts those still waiting (its runtime info)
        self.on_deferred: Callable[[RemotingCommand, Deferred], object] | None = None

    def register(self, code: int, processor: IRequestProcessor) -> None:
        """Route requests with *code* to *processor*."""
        self._processors[int(code)] = processor
        self._handlers.pop(int(code), None)

    def register_handlers(self, processor: HandlerProcessor) -> None:
        """
        Route every code in *processor*'s :attr:`~HandlerProcessor.handlers` to it.

        :raises ValueError: a code is routed to another processor already.
        """
        for code in processor.handlers:
            other = self._processors.get(int(code))
            if other is not None and other is not processor:
                raise ValueError(f"code {int(code)} is {type(other).__name__}'s already")
            self.register(code, processor)
        kind = type(processor)
        if kind.process_request is HandlerProcessor.process_request and \
                kind.reject_request is HandlerProcessor.reject_request:
            for code, handler in processor.handlers.items():
                self._handlers[int(code)] = handler

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
        observer = self.observer
        if observer is None:
            return self._dispatch(ctx, request)
        started = _monotonic()
        result = self._dispatch(ctx, request)
        # type() first: Deferred is an Awaitable, so isinstance is ABCMeta's slower check
        if type(result) is not RemotingCommand and isinstance(result, Deferred):
            return result.addCallback(self._observed, request, started, observer)
        try:
            observer(request, result, started, False)
        except Exception:
            log.failure("request observer failed")
        return result

    @staticmethod
    def _observed(response: RemotingCommand | None, request: RemotingCommand, started: float,
                  observer: Callable[[RemotingCommand, RemotingCommand | None, float, bool], object]) -> Any:
        try:
            observer(request, response, started, True)
        except Exception:
            log.failure("request observer failed")
        return response

    def _dispatch(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand | Deferred | None:
        handler = self._handlers.get(request.code)
        if handler is None:
            processor = self._processors.get(request.code, self.default)
            if processor is None:
                return self._refused(request.make_unsupported_response(), ctx, request)
            if processor.reject_request():
                return self._refused(request.make_response(ResponseCode.SYSTEM_BUSY, REJECT_REMARK), ctx, request)
            handler = processor.process_request
        if self.before_request is not None:
            try:
                refusal = self.before_request(ctx, request)
            except Exception:
                return self._failed(Failure(), ctx, request)
            if refusal is not None:
                return refusal  # the hook logs its refusals its own way
        try:
            result = handler(ctx, request)
        except Exception:
            return self._failed(Failure(), ctx, request)
        if type(result) is not RemotingCommand and isinstance(result, Deferred):  # type() first, as above
            if self.on_deferred is not None:
                self.on_deferred(request, result)
            return result.addCallbacks(self._refused, self._failed,
                                       callbackArgs=(ctx, request), errbackArgs=(ctx, request))
        if result is not None and result.code:
            self._refused(result, ctx, request)
        return result

    def _refused(self, response: RemotingCommand | None, ctx: IRemotingContext,
                 request: RemotingCommand) -> RemotingCommand | None:
        if response is not None and response.code in REFUSAL_CODES:
            self.refusals.note(getattr(ctx, "peer", "?"), request, response)
        return response

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
        response = request.make_response(ResponseCode.SYSTEM_ERROR, remark)
        self._refused(response, ctx, request)
        return response
