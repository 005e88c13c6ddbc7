# -*- test-case-name: rocketmq_tx.net.test.test_tls -*-
"""
The server's TLS context, built from Java's ``tls.server.*`` settings, and rebuilt when
its files change (:class:`ReloadableServerTLS`).

The files are polled and content-hashed; Java's rule: a changed trust file reloads at
once, a certificate and key reload once both have changed. A pair that does not load or
does not match is refused with one log line and the last good context stays. Only new
connections see a new context.

The context is stdlib ``ssl``'s (for :class:`~rocketmq_tx.net.tls.memorybio.MemoryBioTLSProtocol`)
except in the one configuration stdlib ``ssl`` cannot express: a client certificate asked
for (``tls.server.need.client.auth`` optional/require) but not verified
(``tls.server.authClient`` false), Java's insecure trust manager; that one is pyOpenSSL's,
for Twisted's ``TLSMemoryBIOProtocol``.
"""

from __future__ import annotations

import hashlib
import os
import ssl
import tempfile

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed448, ed25519, rsa
from OpenSSL import SSL, crypto
from twisted.internet import interfaces
from twisted.internet.interfaces import IReactorTime
from twisted.internet.task import LoopingCall
from twisted.logger import Logger
from zope.interface import implementer

from rocketmq_tx.config import ConfigError
from rocketmq_tx.tlsconfig import PemMaterial, TlsSettings, load_pem_material, self_signed_pem

__all__ = ["ReloadableServerTLS", "split_pem"]

log = Logger()


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
    if not split_pem(material.cert_chain):
        raise ConfigError("no certificate in tls.server.certPath")
    _load_cert_chain(ctx, material)
    # Test mode: Java asks for a client certificate and ignores it; Java clients in test
    # mode send none, so not asking serves the same clients.
    mode = "none" if settings["tls.test.mode.enable"] else settings.need_client_auth
    if mode != "none":  # authClient is on here (see _unverified_client_certs)
        ctx.verify_mode = ssl.CERT_REQUIRED if mode == "require" else ssl.CERT_OPTIONAL
        trusted = b"".join(split_pem(material.trusted))
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


#: The private keys pyOpenSSL's ``Context.use_privatekey`` takes.
_PYOPENSSL_KEY_TYPES = (dsa.DSAPrivateKey, ec.EllipticCurvePrivateKey, ed25519.Ed25519PrivateKey,
                        ed448.Ed448PrivateKey, rsa.RSAPrivateKey)


def _pyopenssl_server_context(settings: TlsSettings, material: PemMaterial) -> SSL.Context:
    ctx = SSL.Context(SSL.TLS_METHOD)
    ctx.set_min_proto_version(SSL.TLS1_2_VERSION)
    ctx.set_options(SSL.OP_NO_COMPRESSION)
    certs = [x509.load_pem_x509_certificate(pem) for pem in split_pem(material.cert_chain)]
    if not certs:
        raise ConfigError("no certificate in tls.server.certPath")
    ctx.use_certificate(certs[0])
    for extra in certs[1:]:
        ctx.add_extra_chain_cert(extra)
    key = serialization.load_pem_private_key(material.key, None)
    if not isinstance(key, _PYOPENSSL_KEY_TYPES):
        raise TypeError("Unsupported key type")  # pyOpenSSL's own refusal (use_privatekey's)
    ctx.use_privatekey(key)
    ctx.check_privatekey()
    # Only for _unverified_client_certs: Java's insecure trust manager with
    # ClientAuth.OPTIONAL or REQUIRE.
    flags = SSL.VERIFY_PEER | (SSL.VERIFY_FAIL_IF_NO_PEER_CERT if settings.need_client_auth == "require" else 0)
    ctx.set_verify(flags, _accept_any)
    # A session id context is required once client certificates are requested.
    ctx.set_session_id(b"rocketmq-tx")
    return ctx


def split_pem(data: bytes) -> list[bytes]:
    """The PEM certificates in *data*, each as its own PEM block."""
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
