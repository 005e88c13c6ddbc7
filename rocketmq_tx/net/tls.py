# -*- test-case-name: rocketmq_tx.net.test.test_tls -*-
"""
TLS for the Twisted servers and client, configured with Java's ``tls.*`` settings
(:class:`rocketmq_tx.tlsconfig.TlsSettings`).

* :class:`ReloadableServerTLS` builds the server's OpenSSL context and rebuilds it when
  the files change (polled, content-hashed; Java's rule: a changed trust file reloads at
  once, a certificate and key reload once both have changed). A pair that does not load
  or does not match is refused with one log line and the last good context stays. Only
  new connections see a new context.
* :class:`TlsModeFactory` sits in front of a server factory and looks at each
  connection's first byte, as Java's ``TlsModeHandler``: 0x16 starts a TLS handshake
  (closed when the mode is disabled), anything else is plaintext (closed when enforcing).
  A handshake that does not finish in time, or fails, closes that connection only, with
  one log line.
* :func:`client_creator` gives the client side's connection creator.
"""

from __future__ import annotations

import hashlib


from cryptography import x509
from cryptography.hazmat.primitives import serialization
from OpenSSL import SSL, crypto
from twisted.internet import interfaces, ssl
from twisted.internet.abstract import FileDescriptor
from twisted.internet.interfaces import IReactorTime
from twisted.internet.protocol import Factory, Protocol
from twisted.internet.task import LoopingCall
from twisted.logger import Logger
from twisted.protocols.tls import TLSMemoryBIOFactory, TLSMemoryBIOProtocol
from twisted.python.failure import Failure
from zope.interface import implementer

from rocketmq_tx.config import ConfigError
from rocketmq_tx.net.protocol import write_now
from rocketmq_tx.tlsconfig import TLS_HANDSHAKE_BYTE, PemMaterial, TlsMode, TlsSettings, load_pem_material, self_signed_pem

__all__ = ["ReloadableServerTLS", "TlsModeFactory", "client_creator", "DEFAULT_HANDSHAKE_TIMEOUT"]

log = Logger()

#: Seconds a peer has to finish its TLS handshake.
DEFAULT_HANDSHAKE_TIMEOUT = 10.0


def _accept_any(conn: SSL.Connection, cert: crypto.X509, errno: int, depth: int, ok: int) -> bool:
    # Java's InsecureTrustManager: a certificate is asked for but not judged.
    return True


def _verified(conn: SSL.Connection, cert: crypto.X509, errno: int, depth: int, ok: int) -> bool:
    return bool(ok)


def _server_context(settings: TlsSettings, material: PemMaterial) -> SSL.Context:
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
    if settings["tls.test.mode.enable"]:
        ctx.set_verify(SSL.VERIFY_PEER, _accept_any)  # Java: ClientAuth.OPTIONAL, insecure trust
        return ctx
    mode = settings.need_client_auth
    if mode == "none":
        ctx.set_verify(SSL.VERIFY_NONE, _accept_any)
        return ctx
    flags = SSL.VERIFY_PEER | (SSL.VERIFY_FAIL_IF_NO_PEER_CERT if mode == "require" else 0)
    if settings["tls.server.authClient"]:
        store = ctx.get_cert_store()
        for pem in _split_pem(material.trusted):
            store.add_cert(crypto.X509.from_cryptography(x509.load_pem_x509_certificate(pem)))
        ctx.set_verify(flags, _verified)
    else:
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
        self._context = self._build()
        self.generation = 1

    def _build(self) -> SSL.Context:
        s = self.settings
        if s["tls.test.mode.enable"]:
            material = self_signed_pem()
        else:
            material = load_pem_material(s["tls.server.certPath"], s["tls.server.keyPath"],
                                         s["tls.server.keyPassword"], s["tls.server.trustCertPath"])
        try:
            return _server_context(s, material)
        except (SSL.Error, crypto.Error, ValueError) as e:
            raise ConfigError(f"cannot build the TLS server context: {e}") from None

    def serverConnectionForTLS(self, tlsProtocol: object) -> SSL.Connection:
        return SSL.Connection(self._context, None)

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
        self.tls_factory = (TLSMemoryBIOFactory(creator, False, app_factory, clock=clock)
                            if creator is not None else None)
        if self.tls_factory is not None:
            # Twisted's default (BufferingTLSTransport) holds every write until the next
            # reactor turn to merge small ones; a response here is already one write of a
            # whole frame, so that only adds a turn to every TLS round trip.
            self.tls_factory.protocol = TLSMemoryBIOProtocol

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
        return ssl.CertificateOptions(verify=False, raiseMinimumTo=ssl.TLSVersion.TLSv1_2)
    material = load_pem_material(s["tls.client.certPath"], s["tls.client.keyPath"], s["tls.client.keyPassword"],
                                 s["tls.client.trustCertPath"])
    client_cert = (ssl.PrivateCertificate.loadPEM(material.cert_chain + material.key)
                   if material.cert_chain and material.key else None)
    if not s["tls.client.authServer"]:
        kwargs = {}
        if client_cert is not None:
            kwargs = {"privateKey": client_cert.privateKey.original, "certificate": client_cert.original}
        return ssl.CertificateOptions(verify=False, raiseMinimumTo=ssl.TLSVersion.TLSv1_2, **kwargs)
    roots = [ssl.Certificate.loadPEM(pem) for pem in _split_pem(material.trusted)]
    trust = ssl.trustRootFromCertificates(roots) if roots else ssl.platformTrust()
    if s["tls.client.verifyHostname"]:
        return ssl.optionsForClientTLS(host, trustRoot=trust, clientCertificate=client_cert)
    kwargs = {}
    if client_cert is not None:
        kwargs = {"privateKey": client_cert.privateKey.original, "certificate": client_cert.original}
    return ssl.CertificateOptions(verify=True, caCerts=[r.original for r in roots], raiseMinimumTo=ssl.TLSVersion.TLSv1_2,
                                  **kwargs)


