# -*- test-case-name: rocketmq_tx.net.test.test_protocol -*-
"""
:class:`RemotingProtocol`: one connection, either side.

It feeds received bytes to the sans-IO :class:`~rocketmq_tx.remoting.FrameDecoder`,
matches responses to pending requests by opaque, hands requests (including the ones a
broker sends to its clients) to a :class:`~rocketmq_tx.net.dispatch.ProcessorTable`, and
writes responses. A malformed frame closes this connection only, logged once with the
peer address.
"""

from __future__ import annotations

from collections.abc import Callable

from twisted.internet.defer import Deferred, fail
from twisted.internet.interfaces import IDelayedCall, IReactorTime, ITCPTransport
from twisted.internet.protocol import Protocol
from twisted.logger import Logger
from twisted.protocols.policies import TimeoutMixin
from twisted.python.failure import Failure
from zope.interface import implementer

from rocketmq_tx.net.dispatch import IRemotingContext, ProcessorTable
from rocketmq_tx.net.transport import ImmediateWrite
from rocketmq_tx.remoting import (
    DEFAULT_MAX_FRAME_LENGTH,
    RPC_ONEWAY,
    RPC_TYPE_RESPONSE,
    FrameDecoder,
    LocalProtocolError,
    OpaqueSequence,
    RemoteProtocolError,
    RemotingCommand,
    RemotingConnectError,
    RemotingTimeoutError,
    encode_command,
)

__all__ = ["RemotingProtocol", "DEFAULT_IDLE_TIMEOUT", "flush_late_answers"]

#: Java's ``serverChannelMaxIdleTimeSeconds`` / ``clientChannelMaxIdleTimeSeconds``.
DEFAULT_IDLE_TIMEOUT = 120.0

log = Logger()

#: connections holding an answer written after their read (a Deferred's: a SYNC_MASTER put
#: acknowledged by a slave, a long poll): sent by flush_late_answers
_late_answered: set[RemotingProtocol] = set()


def flush_late_answers() -> None:
    """
    Send the late answers now, one write per connection, rather than at each connection's
    next writable event. Whoever fires many answers at once (the HA service, on a slave's
    ack) calls it after them; otherwise the reactor's next turn does.
    """
    late = list(_late_answered)
    _late_answered.clear()
    for proto in late:
        if proto._flush_now is not None and proto.connected:
            proto._flush_now()


@implementer(IRemotingContext)
class RemotingProtocol(Protocol, TimeoutMixin):
    """
    :param clock: the reactor's clock, for request and idle timeouts (``task.Clock`` in tests).
    :param processors: where requests from the peer go; ``None`` answers every request
        with REQUEST_CODE_NOT_SUPPORTED.
    :param opaques: request-id source (a client shares one across its connections).
    :param max_frame_length: larger frames are a protocol error.
    :param idle_timeout: seconds without traffic before the connection is closed
        (``None`` never).
    """

    #: Set by makeConnection; every use below comes after it (connectionMade, or a check
    #: of :attr:`connected`).
    transport: ITCPTransport

    def __init__(
        self,
        clock: IReactorTime,
        processors: ProcessorTable | None = None,
        *,
        opaques: OpaqueSequence | None = None,
        max_frame_length: int = DEFAULT_MAX_FRAME_LENGTH,
        idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
    ) -> None:
        self.clock = clock
        self.processors = processors if processors is not None else ProcessorTable()
        self._opaques = opaques or OpaqueSequence()
        self._max_frame_length = max_frame_length
        self._idle_timeout = idle_timeout
        self._decoder = FrameDecoder(max_frame_length)
        self._pending: dict[int, tuple[Deferred, IDelayedCall]] = {}
        self.peer = "?"
        self.connected = False
        self.on_close: Deferred = Deferred()
        self._flush_now: Callable[[], None] | None = None
        self._answered = False
        self._reading = False

    def callLater(self, period: float, func: Callable[[], object]) -> IDelayedCall:
        """TimeoutMixin schedules through this: on our clock, not the global reactor."""
        return self.clock.callLater(period, func)

    # -- Protocol -------------------------------------------------------------

    def connectionMade(self) -> None:
        self.connected = True
        peer = self.transport.getPeer()
        host = getattr(peer, "host", None)
        self.peer = f"{host}:{peer.port}" if host is not None else str(peer)
        if hasattr(self.transport, "setTcpNoDelay"):
            try:
                self.transport.setTcpNoDelay(True)
            except OSError:
                pass  # not a TCP socket after all (e.g. a UNIX socket in tests)
        # Our own TCP transport, not a TLS layer (a ProtocolWrapper passes attributes of the
        # socket's through, hence isinstance): see _write_answers.
        self._flush_now = self.transport.flush_now if isinstance(self.transport, ImmediateWrite) else None
        self.setTimeout(self._idle_timeout)

    def dataReceived(self, data: bytes) -> None:
        if self._decoder.error is not None:
            return  # closing already: logged once, nothing after the bad bytes is read
        self.resetTimeout()
        try:
            commands = self._decoder.feed(data)
        except RemoteProtocolError as e:
            self._protocol_error(e, answered=False)
            return
        self._answered = False
        self._reading = True
        try:
            for cmd in commands:
                if cmd.flag & RPC_TYPE_RESPONSE:
                    self._response_received(cmd)
                else:
                    self._request_received(cmd)
        finally:
            self._reading = False
        if self._answered:
            self._write_answers()
        # Frames that arrived intact before bad bytes in the same read are answered first.
        if self._decoder.error is not None:
            self._protocol_error(self._decoder.error, self._answered)

    def _protocol_error(self, error: RemoteProtocolError, answered: bool) -> None:
        log.warn("closing connection from {peer}: {error}", peer=self.peer, error=error)
        if answered:
            # Closes once the answers are written (they are, over TCP, by _write_answers).
            self.transport.loseConnection()
        else:
            self.transport.abortConnection()

    def _write_answers(self) -> None:
        """
        Send the responses written while handling one read now, in this reactor turn, as
        Netty's writeAndFlush does (:mod:`rocketmq_tx.net.transport`). Over TLS the TLS layer
        hands us one record at a time, so there the TLS mode protocol does it once per read.
        """
        if self._flush_now is not None and self.connected:
            self._flush_now()

    def connectionLost(self, reason: Failure | None = None) -> None:
        self.connected = False
        self.setTimeout(None)
        _late_answered.discard(self)
        pending, self._pending = self._pending, {}
        for d, timer in pending.values():
            if timer.active():
                timer.cancel()
            d.errback(RemotingConnectError(f"connection to {self.peer} lost"))
        on_close, self.on_close = self.on_close, Deferred()
        on_close.callback(self)

    def timeoutConnection(self) -> None:
        log.info("closing idle connection {peer}", peer=self.peer)
        self.transport.loseConnection()

    # -- requests from the peer -----------------------------------------------

    def _request_received(self, request: RemotingCommand) -> None:
        result = self.processors.dispatch(self, request)
        if request.flag & RPC_ONEWAY:
            return
        # the plain answer first: isinstance(result, Deferred) is ABCMeta's check (an Awaitable)
        if result is None or type(result) is RemotingCommand or not isinstance(result, Deferred):
            self._send_response(result, request)
        else:
            result.addCallback(self._send_response, request)

    def _send_response(self, response: RemotingCommand | None, request: RemotingCommand) -> None:
        if response is None or not self.connected:
            return
        response.opaque = request.opaque
        response.flag |= RPC_TYPE_RESPONSE
        try:
            frame = encode_command(response, self._max_frame_length)
        except LocalProtocolError as e:
            # The peer would wait for this answer until its timeout: close instead, as
            # Java's NettyEncoder does when it cannot encode.
            log.error("cannot encode response to code {code}, closing connection {peer}: {error}",
                      code=request.code, peer=self.peer, error=e)
            self.transport.loseConnection()
            return
        self.transport.write(frame)
        self._answered = True
        if not self._reading and self._flush_now is not None and self not in _late_answered:
            # each connection schedules its own next-turn flush: a set shared by protocols on
            # different clocks (tests) must not leave one waiting on another's clock
            _late_answered.add(self)
            self.clock.callLater(0, self._flush_late)

    def _flush_late(self) -> None:
        if self in _late_answered:  # not yet sent by flush_late_answers
            _late_answered.discard(self)
            if self._flush_now is not None and self.connected:
                self._flush_now()

    # -- requests to the peer ---------------------------------------------------

    def send_request(self, request: RemotingCommand, timeout: float) -> Deferred:
        """
        Send *request* (its opaque is assigned here) and fire with the response.

        Fails with :class:`RemotingTimeoutError` after *timeout* seconds, with
        :class:`RemotingConnectError` if the connection goes first, and with
        :class:`LocalProtocolError` if the request cannot be encoded.
        """
        if not self.connected:
            return fail(RemotingConnectError(f"connection to {self.peer} is closed"))
        opaque = request.opaque = self._opaques()
        request.flag &= ~(RPC_TYPE_RESPONSE | RPC_ONEWAY)
        try:
            frame = encode_command(request, self._max_frame_length)
        except LocalProtocolError as e:
            return fail(e)
        d: Deferred = Deferred()
        timer = self.clock.callLater(timeout, self._timed_out, opaque, timeout)
        self._pending[opaque] = (d, timer)
        self.transport.write(frame)
        return d

    def send_oneway(self, request: RemotingCommand) -> None:
        """
        Send *request* with the oneway flag; nothing comes back.

        :raises RemotingConnectError: the connection is closed.
        :raises LocalProtocolError: the request cannot be encoded.
        """
        if not self.connected:
            raise RemotingConnectError(f"connection to {self.peer} is closed")
        request.opaque = self._opaques()
        request.flag = (request.flag & ~RPC_TYPE_RESPONSE) | RPC_ONEWAY
        self.transport.write(encode_command(request, self._max_frame_length))

    def _response_received(self, response: RemotingCommand) -> None:
        entry = self._pending.pop(response.opaque, None)
        if entry is None:
            # Its request timed out already; Java logs and drops it too.
            log.debug("response {opaque} from {peer} matches no request", opaque=response.opaque, peer=self.peer)
            return
        d, timer = entry
        timer.cancel()
        d.callback(response)

    def _timed_out(self, opaque: int, timeout: float) -> None:
        entry = self._pending.pop(opaque, None)
        if entry is not None:
            entry[0].errback(
                RemotingTimeoutError(f"wait response on {self.peer} timeout {int(timeout * 1000)}ms (opaque {opaque})")
            )

    @property
    def pending_requests(self) -> int:
        """Requests sent and not yet answered."""
        return len(self._pending)
