# -*- test-case-name: rocketmq_tx.net.test.test_tls -*-
"""
TLS for the Twisted servers and client, configured with Java's ``tls.*`` settings
(:class:`rocketmq_tx.tlsconfig.TlsSettings`).

* :class:`ReloadableServerTLS` builds the server's TLS context and rebuilds it when the
  files change (polled, content-hashed; Java's rule: a changed trust file reloads at
  once, a certificate and key reload once both have changed). A pair that does not load
  or does not match is refused with one log line and the last good context stays. Only
  new connections see a new context.
* :class:`MemoryBioTLSProtocol` runs a server connection's TLS on the stdlib ``ssl``
  module's memory BIOs. It costs a fraction of pyOpenSSL with Twisted's
  ``TLSMemoryBIOProtocol`` per request (the broker's CPU per 1 KiB send with TLS over
  plaintext: +49 µs with pyOpenSSL, +25 µs with this; ``docs/benchmarks.md``). pyOpenSSL
  stays for the one configuration stdlib ``ssl`` cannot express: a client certificate
  asked for (``tls.server.need.client.auth`` optional/require) but not verified
  (``tls.server.authClient`` false), Java's insecure trust manager.
* :class:`TlsModeFactory` sits in front of a server factory and looks at each
  connection's first byte, as Java's ``TlsModeHandler``: 0x16 starts a TLS handshake
  (closed when the mode is disabled), anything else is plaintext (closed when enforcing).
  A handshake that does not finish in time, or fails, closes that connection only, with
  one log line.
* :func:`client_creator` gives the client side's connection creator.
"""

from __future__ import annotations

import hashlib
import os
import ssl
import tempfile

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from OpenSSL import SSL, crypto
from twisted.internet import interfaces
from twisted.internet import ssl as twisted_ssl
from twisted.internet.abstract import FileDescriptor
from twisted.internet.interfaces import IReactorTime, ITransport
from twisted.internet.protocol import Factory, Protocol
from twisted.internet.task import LoopingCall
from twisted.logger import Logger
from twisted.protocols.tls import TLSMemoryBIOFactory, TLSMemoryBIOProtocol
from twisted.python.failure import Failure
from zope.interface import implementer

from rocketmq_tx.config import ConfigError
from rocketmq_tx.net.protocol import write_now
from rocketmq_tx.tlsconfig import TLS_HANDSHAKE_BYTE, PemMaterial, TlsMode, TlsSettings, load_pem_material, self_signed_pem

__all__ = ["ReloadableServerTLS", "TlsModeFactory", "MemoryBioTLSProtocol", "client_creator", "DEFAULT_HANDSHAKE_TIMEOUT"]

log = Logger()

#: Seconds a peer has to finish its TLS handshake.
DEFAULT_HANDSHAKE_TIMEOUT = 10.0


def _accept_any(conn: SSL.Connection, cert: crypto.X509, errno: int, depth: int, ok: int) -> bool:
    # Java's InsecureTrustManager: a certificate is asked for but not judged.
    return True


def _unverified_client_certs(settings: TlsSettings) -> bool:
    """A client certificate is asked for and taken unverified: pyOpenSSL's verify callback only."""
    return (not settings["tls.test.mode.enable"] and not settings["tls.server.authClient"]
            and settings.need_client_auth != "none")


def _stdlib_server_context(settings: TlsSettings, material: PemMaterial) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.options |= ssl.OP_NO_COMPRESSION
    if not _split_pem(material.cert_chain):
        raise ConfigError("no certificate in tls.server.certPath")
    _load_cert_chain(ctx, material)
    # Test mode: Java asks for a client certificate and ignores it; Java clients in test
    # mode send none, so not asking serves the same clients.
    mode = "none" if settings["tls.test.mode.enable"] else settings.need_client_auth
    if mode != "none":  # authClient is on here (see _unverified_client_certs)
        ctx.verify_mode = ssl.CERT_REQUIRED if mode == "require" else ssl.CERT_OPTIONAL
        trusted = b"".join(_split_pem(material.trusted))
        if trusted:
            ctx.load_verify_locations(cadata=trusted.decode("ascii"))
    return ctx


def _load_cert_chain(ctx: ssl.SSLContext, material: PemMaterial, memfd: bool = hasattr(os, "memfd_create")) -> None:
    # stdlib ssl reads a certificate and key only from a file: an anonymous memory file
    # where Linux has one, else a private temporary file with the key re-encrypted under a
    # one-time password, so that the key never reaches a disk unencrypted.
    if memfd:
        fd = os.memfd_create("rocketmq-tx-tls", os.MFD_CLOEXEC)
        try:
            os.write(fd, material.cert_chain + b"\n" + material.key)
            ctx.load_cert_chain(f"/proc/self/fd/{fd}")
        finally:
            os.close(fd)
        return
    password = os.urandom(24).hex().encode()
    key = serialization.load_pem_private_key(material.key, None).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.BestAvailableEncryption(password))
    fd, path = tempfile.mkstemp(prefix="rocketmq-tx-tls-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(material.cert_chain + b"\n" + key)
        ctx.load_cert_chain(path, password=password)
    finally:
        os.unlink(path)


def _pyopenssl_server_context(settings: TlsSettings, material: PemMaterial) -> SSL.Context:
    ctx = SSL.Context(SSL.TLS_METHOD)
    ctx.set_min_proto_version(SSL.TLS1_2_VERSION)
    ctx.set_options(SSL.OP_NO_COMPRESSION)
    certs = [x509.load_pem_x509_certificate(pem) for pem in _split_pem(material.cert_chain)]
    if not certs:
        raise ConfigError("no certificate in tls.server.certPath")
    ctx.use_certificate(certs[0])
    for extra in certs[1:]:
        ctx.add_extra_chain_cert(extra)
    ctx.use_privatekey(serialization.load_pem_private_key(material.key, None))
    ctx.check_privatekey()
    # Only for _unverified_client_certs: Java's insecure trust manager with
    # ClientAuth.OPTIONAL or REQUIRE.
    flags = SSL.VERIFY_PEER | (SSL.VERIFY_FAIL_IF_NO_PEER_CERT if settings.need_client_auth == "require" else 0)
    ctx.set_verify(flags, _accept_any)
    # A session id context is required once client certificates are requested.
    ctx.set_session_id(b"rocketmq-tx")
    return ctx


def _split_pem(data: bytes) -> list[bytes]:
    marker = b"-----END CERTIFICATE-----"
    return [part.strip() + b"\n" + marker + b"\n" for part in data.split(marker) if b"-----BEGIN" in part]


def _digest(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None  # missing or unreadable: keep what we have (5.x does the same)


@implementer(interfaces.IOpenSSLServerConnectionCreator)
class ReloadableServerTLS:
    """
    The server's TLS context, swappable while connections come and go.

    :ivar generation: bumped on every successful (re)load.
    :ivar uses_pyopenssl: the context is pyOpenSSL's (for Twisted's ``TLSMemoryBIOProtocol``,
        through :meth:`serverConnectionForTLS`); otherwise stdlib ``ssl``'s (for
        :class:`MemoryBioTLSProtocol`, through :meth:`server_object`). Fixed by the settings.
    :raises ConfigError: at construction, when the initial material does not load.
    """

    def __init__(self, settings: TlsSettings) -> None:
        self.settings = settings
        self.generation = 0
        self._paths = {
            "cert": settings["tls.server.certPath"],
            "key": settings["tls.server.keyPath"],
            "trust": settings["tls.server.trustCertPath"],
        }
        self._hashes = {k: _digest(p) for k, p in self._paths.items() if p}
        self._cert_changed = self._key_changed = False
        self.uses_pyopenssl = _unverified_client_certs(settings)
        self._context: SSL.Context | ssl.SSLContext = self._build()
        self.generation = 1

    def _build(self) -> SSL.Context | ssl.SSLContext:
        s = self.settings
        if s["tls.test.mode.enable"]:
            material = self_signed_pem()
        else:
            material = load_pem_material(s["tls.server.certPath"], s["tls.server.keyPath"],
                                         s["tls.server.keyPassword"], s["tls.server.trustCertPath"])
        try:
            if self.uses_pyopenssl:
                return _pyopenssl_server_context(s, material)
            return _stdlib_server_context(s, material)
        except (SSL.Error, crypto.Error, ssl.SSLError, ValueError) as e:
            raise ConfigError(f"cannot build the TLS server context: {e}") from None

    def serverConnectionForTLS(self, tlsProtocol: object) -> SSL.Connection:
        assert isinstance(self._context, SSL.Context)
        return SSL.Connection(self._context, None)

    def server_object(self, incoming: ssl.MemoryBIO, outgoing: ssl.MemoryBIO) -> ssl.SSLObject:
        """The server end of one new connection, in the context now in service."""
        assert isinstance(self._context, ssl.SSLContext)
        return self._context.wrap_bio(incoming, outgoing, server_side=True)

    def check(self) -> bool:
        """
        Look at the files once; reload when Java's rule says so. Returns ``True`` when a
        new context is in service.
        """
        if self.settings["tls.test.mode.enable"]:
            return False
        trust_changed = False
        for what, path in self._paths.items():
            if not path:
                continue
            digest = _digest(path)
            if digest is None or digest == self._hashes.get(what):
                continue
            self._hashes[what] = digest
            if what == "trust":
                trust_changed = True
            elif what == "cert":
                self._cert_changed = True
            else:
                self._key_changed = True
        if not (trust_changed or (self._cert_changed and self._key_changed)):
            return False
        self._cert_changed = self._key_changed = False
        try:
            context = self._build()
        except ConfigError as e:
            log.error("TLS reload refused, keeping the current certificate: {error}", error=e)
            return False
        self._context = context
        self.generation += 1
        log.info("TLS context reloaded (generation {generation})", generation=self.generation)
        return True

    def watch(self, clock: IReactorTime) -> LoopingCall:
        """A started LoopingCall that calls :meth:`check` every ``tls.watch.interval`` ms."""
        call = LoopingCall(self.check)
        call.clock = clock
        call.start(self.settings["tls.watch.interval"] / 1000.0, now=False)
        return call


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

    def __init__(self, tls: ReloadableServerTLS, app: Protocol) -> None:
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

    def writeSequence(self, data: list[bytes]) -> None:
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

    def getPeer(self) -> object:
        return self.transport.getPeer()

    def getHost(self) -> object:
        return self.transport.getHost()

    def setTcpNoDelay(self, enabled: bool) -> None:
        self.transport.setTcpNoDelay(enabled)

    def connectionLost(self, reason: Failure = None) -> None:  # type: ignore[assignment]
        self._closed = True
        self.connected = False
        self.app.connectionLost(reason)


class _MemoryBioTLSFactory:
    """Builds a :class:`MemoryBioTLSProtocol` around each connection's application protocol."""

    def __init__(self, tls: ReloadableServerTLS, app_factory: Factory) -> None:
        self.tls = tls
        self.app_factory = app_factory

    def buildProtocol(self, addr: object) -> MemoryBioTLSProtocol | None:
        app = self.app_factory.buildProtocol(addr)
        return MemoryBioTLSProtocol(self.tls, app) if app is not None else None


class _TlsModeProtocol(Protocol):
    """Owns the socket; decides on the first byte, then forwards everything to the chosen protocol."""

    def __init__(self, factory: TlsModeFactory, addr: object) -> None:
        self.factory = factory
        self.addr = addr
        self.inner: Protocol | None = None
        self._timer = None
        self._tls = False

    def connectionMade(self) -> None:
        self.peer = f"{getattr(self.transport.getPeer(), 'host', '?')}:{getattr(self.transport.getPeer(), 'port', '?')}"

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
        if self._tls and isinstance(self.transport, FileDescriptor):
            # Once per read, after the TLS layer has passed every record of it up: the
            # application protocol cannot tell when that is (see RemotingProtocol).
            write_now(self.transport)
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

    def connectionLost(self, reason: Failure = None) -> None:  # type: ignore[assignment]
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
        self.tls_factory: TLSMemoryBIOFactory | _MemoryBioTLSFactory | None = None
        if creator is not None and creator.uses_pyopenssl:
            self.tls_factory = TLSMemoryBIOFactory(creator, False, app_factory, clock=clock)
            # Twisted's default (BufferingTLSTransport) holds every write until the next
            # reactor turn to merge small ones; a response here is already one write of a
            # whole frame, so that only adds a turn to every TLS round trip.
            self.tls_factory.protocol = TLSMemoryBIOProtocol
        elif creator is not None:
            self.tls_factory = _MemoryBioTLSFactory(creator, app_factory)

    def buildProtocol(self, addr: object) -> _TlsModeProtocol:
        return _TlsModeProtocol(self, addr)

    def startFactory(self) -> None:
        self.app_factory.doStart()

    def stopFactory(self) -> None:
        self.app_factory.doStop()


def client_creator(settings: TlsSettings, host: str) -> interfaces.IOpenSSLClientConnectionCreator:
    """
    The client side of a connection to *host*: Java's test mode trusts anything; with
    ``tls.client.authServer`` the chain is verified against ``tls.client.trustCertPath``
    (the system store when empty) and, unless ``tls.client.verifyHostname`` is false, the
    host name or IP too.

    :raises ConfigError: the configured files do not load.
    """
    s = settings
    if s["tls.test.mode.enable"]:
        return twisted_ssl.CertificateOptions(verify=False, raiseMinimumTo=twisted_ssl.TLSVersion.TLSv1_2)
    material = load_pem_material(s["tls.client.certPath"], s["tls.client.keyPath"], s["tls.client.keyPassword"],
                                 s["tls.client.trustCertPath"])
    client_cert = (twisted_ssl.PrivateCertificate.loadPEM(material.cert_chain + material.key)
                   if material.cert_chain and material.key else None)
    if not s["tls.client.authServer"]:
        kwargs = {}
        if client_cert is not None:
            kwargs = {"privateKey": client_cert.privateKey.original, "certificate": client_cert.original}
        return twisted_ssl.CertificateOptions(verify=False, raiseMinimumTo=twisted_ssl.TLSVersion.TLSv1_2, **kwargs)
    roots = [twisted_ssl.Certificate.loadPEM(pem) for pem in _split_pem(material.trusted)]
    trust = twisted_ssl.trustRootFromCertificates(roots) if roots else twisted_ssl.platformTrust()
    if s["tls.client.verifyHostname"]:
        return twisted_ssl.optionsForClientTLS(host, trustRoot=trust, clientCertificate=client_cert)
    kwargs = {}
    if client_cert is not None:
        kwargs = {"privateKey": client_cert.privateKey.original, "certificate": client_cert.original}
    return twisted_ssl.CertificateOptions(verify=True, caCerts=[r.original for r in roots], raiseMinimumTo=twisted_ssl.TLSVersion.TLSv1_2,
                                  **kwargs)


