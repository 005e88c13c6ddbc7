# -*- test-case-name: rocketmq_tx.net.test.test_tls -*-
"""
:class:`MemoryBioTLSProtocol`: the server end of a TLS connection on the stdlib ``ssl``
module's memory BIOs. It costs a fraction of pyOpenSSL with Twisted's
``TLSMemoryBIOProtocol`` per request (the broker's CPU per 1 KiB send with TLS over
plaintext: +49 µs with pyOpenSSL, +25 µs with this; ``docs/benchmarks.md``).
"""

from __future__ import annotations

import ssl
from collections.abc import Iterable
from typing import Protocol as TypingProtocol

from twisted.internet.address import IPv4Address, IPv6Address
from twisted.internet.interfaces import IAddress, ITCPTransport, ITransport
from twisted.internet.protocol import Factory, Protocol, connectionDone
from twisted.logger import Logger
from twisted.python.failure import Failure
from zope.interface import implementer

from rocketmq_tx.net.tls.context import ReloadableServerTLS

__all__ = ["MemoryBioTLSProtocol", "MemoryBioTLSFactory"]

log = Logger()


class _Application(TypingProtocol):
    """What this layer needs of the application protocol (what a ``Factory`` builds)."""

    def makeConnection(self, transport: ITransport) -> None: ...

    def dataReceived(self, data: bytes) -> None: ...

    def connectionLost(self, reason: Failure) -> None: ...


@implementer(ITransport)
class MemoryBioTLSProtocol(Protocol):
    """
    The server end of one TLS connection, on stdlib ``ssl`` memory BIOs; the transport
    of the application protocol *app*.

    A read feeds the bytes in and hands each record's plaintext to *app*; an application
    write goes out at once as records. On the common path (whole records) no exception is
    raised: the incoming BIO's ``pending`` says when to stop reading. A failed handshake
    or a bad record closes this connection with one log line.
    """

    #: The socket's, set by makeConnection before anything below runs.
    transport: ITCPTransport

    def __init__(self, tls: ReloadableServerTLS, app: _Application) -> None:
        self._incoming = ssl.MemoryBIO()
        self._outgoing = ssl.MemoryBIO()
        self._tls = tls.server_object(self._incoming, self._outgoing)
        self.app = app
        self.handshake_done = False
        self.disconnecting = False
        self._closed = False  # no more reads or writes: failed, or closed by either end
        self._early: list[bytes] = []  # the application's writes before the handshake ended

    def connectionMade(self) -> None:
        self.app.makeConnection(self)

    def dataReceived(self, data: bytes) -> None:
        if self._closed:
            return
        self._incoming.write(data)
        if not self.handshake_done:
            try:
                self._tls.do_handshake()
            except ssl.SSLWantReadError:
                self._flush()
                return
            except ssl.SSLError as e:
                self._fail(e)
                return
            self.handshake_done = True
            self._flush()
            if self._early:
                early, self._early = self._early, []
                self.write(b"".join(early))
        incoming, read, app = self._incoming, self._tls.read, self.app
        # One record per read (16 KiB of plaintext at most); a partial record left in the
        # BIO is the one case that raises.
        while incoming.pending and not self._closed:
            try:
                plaintext = read(16384)
            except ssl.SSLWantReadError:
                break
            except ssl.SSLZeroReturnError:
                plaintext = b""
            except ssl.SSLError as e:
                self._fail(e)
                return
            if not plaintext:  # the peer's close_notify
                self.loseConnection()
                return
            app.dataReceived(plaintext)
        if self._outgoing.pending:  # a post-handshake message (key update) or an alert
            self._flush()

    def _flush(self) -> None:
        if self._outgoing.pending:
            self.transport.write(self._outgoing.read())

    def _fail(self, error: ssl.SSLError) -> None:
        peer = self.transport.getPeer()
        log.warn("TLS with {peer} failed: {error}", peer=f"{getattr(peer, 'host', peer)}:{getattr(peer, 'port', '?')}",
                 error=error.reason or error)
        self._closed = True
        self._flush()  # the alert, so the peer learns why
        self.transport.loseConnection()

    # -- ITransport, for the application protocol -----------------------------------

    def write(self, data: bytes) -> None:
        if self._closed or self.disconnecting:
            return
        if not self.handshake_done:
            self._early.append(data)
            return
        try:
            self._tls.write(data)
        except ssl.SSLError as e:
            self._fail(e)
            return
        self.transport.write(self._outgoing.read())

    def writeSequence(self, data: Iterable[bytes]) -> None:
        self.write(b"".join(data))

    def loseConnection(self) -> None:
        if self.disconnecting:
            return
        self.disconnecting = True
        if self.handshake_done and not self._closed:
            try:
                self._tls.unwrap()  # queues our close_notify; the peer's is not awaited
            except ssl.SSLError:
                pass
            self._flush()
        self._closed = True
        self.transport.loseConnection()

    def abortConnection(self) -> None:
        self.disconnecting = True
        self._closed = True
        self.transport.abortConnection()

    def getPeer(self) -> IPv4Address | IPv6Address:
        return self.transport.getPeer()

    def getHost(self) -> IPv4Address | IPv6Address:
        return self.transport.getHost()

    def setTcpNoDelay(self, enabled: bool) -> None:
        self.transport.setTcpNoDelay(enabled)

    def connectionLost(self, reason: Failure = connectionDone) -> None:
        self._closed = True
        self.connected = False
        self.app.connectionLost(reason)


class MemoryBioTLSFactory:
    """Builds a :class:`MemoryBioTLSProtocol` around each connection's application protocol."""

    def __init__(self, tls: ReloadableServerTLS, app_factory: Factory) -> None:
        self.tls = tls
        self.app_factory = app_factory

    def buildProtocol(self, addr: IAddress | None) -> MemoryBioTLSProtocol | None:
        app = self.app_factory.buildProtocol(addr)
        return MemoryBioTLSProtocol(self.tls, app) if app is not None else None
