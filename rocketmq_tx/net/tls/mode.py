# -*- test-case-name: rocketmq_tx.net.test.test_tls -*-
"""
Java's TLS mode rules (``tls.server.mode``) in front of a server factory
(:class:`TlsModeFactory`), deciding on each connection's first byte as Java's
``TlsModeHandler``: 0x16 starts a TLS handshake (closed when the mode is disabled),
anything else is plaintext (closed when enforcing). A handshake that does not finish in
time, or fails, closes that connection only, with one log line.
"""

from __future__ import annotations

from collections.abc import Callable

from OpenSSL import SSL
from twisted.internet.interfaces import IAddress, IDelayedCall, IReactorTime, ITCPTransport
from twisted.internet.protocol import Factory, Protocol, connectionDone
from twisted.logger import Logger
from twisted.protocols.tls import TLSMemoryBIOFactory, TLSMemoryBIOProtocol
from twisted.python.failure import Failure

from rocketmq_tx.net.tls.context import ReloadableServerTLS
from rocketmq_tx.net.tls.memorybio import MemoryBioTLSFactory, MemoryBioTLSProtocol
from rocketmq_tx.net.transport import ImmediateWrite
from rocketmq_tx.tlsconfig import TLS_HANDSHAKE_BYTE, TlsMode

__all__ = ["TlsModeFactory", "DEFAULT_HANDSHAKE_TIMEOUT"]

log = Logger()

#: Seconds a peer has to finish its TLS handshake.
DEFAULT_HANDSHAKE_TIMEOUT = 10.0


class _TlsModeProtocol(Protocol):
    """Owns the socket; decides on the first byte, then forwards everything to the chosen protocol."""

    #: The socket's, set by makeConnection before anything below runs.
    transport: ITCPTransport

    def __init__(self, factory: TlsModeFactory, addr: IAddress | None) -> None:
        self.factory = factory
        self.addr = addr
        self.inner: Protocol | None = None
        self._timer: IDelayedCall | None = None
        self._tls = False
        self._flush_now: Callable[[], None] | None = None

    def connectionMade(self) -> None:
        peer = self.transport.getPeer()
        self.peer = f"{getattr(peer, 'host', '?')}:{getattr(peer, 'port', '?')}"
        # Our own TCP transport's (rocketmq_tx.net.transport); other transports write as usual.
        self._flush_now = self.transport.flush_now if isinstance(self.transport, ImmediateWrite) else None

    def dataReceived(self, data: bytes) -> None:
        if self.inner is None:
            mode = self.factory.mode
            if data[0] == TLS_HANDSHAKE_BYTE:
                if mode == TlsMode.DISABLED:
                    log.warn("closing {peer}: TLS hello while TLS is disabled", peer=self.peer)
                    self.transport.abortConnection()
                    return
                self._tls = True
                self.inner = self.factory.tls_factory.buildProtocol(self.addr)
                self._timer = self.factory.clock.callLater(self.factory.handshake_timeout, self._handshake_timeout)
            elif mode == TlsMode.ENFORCING:
                log.warn("closing {peer}: plaintext while TLS is enforced", peer=self.peer)
                self.transport.abortConnection()
                return
            else:
                self.inner = self.factory.app_factory.buildProtocol(self.addr)
            if self.inner is None:
                self.transport.loseConnection()
                return
            self.inner.makeConnection(self.transport)
        self.inner.dataReceived(data)
        if self._tls and self._flush_now is not None:
            # Once per read, after the TLS layer has passed every record of it up: the
            # application protocol cannot tell when that is (see RemotingProtocol).
            self._flush_now()
        if self._timer is not None and self._handshake_done():
            self._timer.cancel()
            self._timer = None

    def _handshake_done(self) -> bool:
        if isinstance(self.inner, MemoryBioTLSProtocol):
            return self.inner.handshake_done
        # getHandle() is TLSMemoryBIOProtocol's public way to its OpenSSL connection.
        get_handle = getattr(self.inner, "getHandle", None)
        connection = get_handle() if get_handle is not None else None
        try:
            return connection is not None and connection.get_peer_finished() is not None
        except SSL.Error:
            return False

    def _handshake_timeout(self) -> None:
        self._timer = None
        if not self._handshake_done():
            log.warn("closing {peer}: TLS handshake not finished in {seconds}s", peer=self.peer,
                     seconds=self.factory.handshake_timeout)
            self.transport.abortConnection()

    def connectionLost(self, reason: Failure = connectionDone) -> None:
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self._timer = None
        if self._tls and reason is not None and reason.check(SSL.Error):
            log.warn("TLS with {peer} failed: {error}", peer=self.peer, error=reason.getErrorMessage())
        if self.inner is not None:
            self.inner.connectionLost(reason)


class TlsModeFactory(Factory):
    """
    Wraps *app_factory* with Java's TLS mode rules.

    :param mode: ``tls.server.mode`` (see :class:`rocketmq_tx.tlsconfig.TlsMode`).
    :param creator: the TLS context (ignored when disabled; may be ``None`` then).
    """

    noisy = False

    def __init__(self, app_factory: Factory, mode: str, creator: ReloadableServerTLS | None,
                 clock: IReactorTime, handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT) -> None:
        self.app_factory = app_factory
        self.mode = mode
        self.clock = clock
        self.handshake_timeout = handshake_timeout
        self.tls_factory: TLSMemoryBIOFactory | MemoryBioTLSFactory | None = None
        if creator is not None and creator.uses_pyopenssl:
            # (zope: implementer is no base class, for the creator and the factory)
            self.tls_factory = TLSMemoryBIOFactory(creator, False, app_factory, clock=clock)
            # Twisted's default (BufferingTLSTransport) holds every write until the next
            # reactor turn to merge small ones; a response here is already one write of a
            # whole frame, so that only adds a turn to every TLS round trip.
            self.tls_factory.protocol = TLSMemoryBIOProtocol
        elif creator is not None:
            self.tls_factory = MemoryBioTLSFactory(creator, app_factory)

    def buildProtocol(self, addr: IAddress | None) -> _TlsModeProtocol:
        return _TlsModeProtocol(self, addr)

    def startFactory(self) -> None:
        self.app_factory.doStart()

    def stopFactory(self) -> None:
        self.app_factory.doStop()
