# -*- test-case-name: rocketmq_tx.net.test.test_tls -*-
"""
TLS settings with Java's ``tls.*`` names, and the PEM material they point to.

Twisted-free (the blocking client uses it with the stdlib ``ssl`` module; the Twisted
side in :mod:`rocketmq_tx.net.tls` with pyOpenSSL). Semantics follow Java's
``TlsSystemConfig`` / ``TlsHelper``:

* ``tls.test.mode.enable`` (default true, as in Java): a server presents a self-signed
  certificate made at start and asks for, but does not require, a client certificate; a
  client trusts any server and presents no certificate. Set it to false to use the
  configured files.
* ``tls.server.authClient`` / ``tls.client.authServer`` false: the peer's certificate is
  accepted without verification (Java's insecure trust manager).
* A key may be PKCS#8 (what Java uses), PKCS#1 or SEC1, encrypted with
  ``tls.*.keyPassword``.

Where Java's client with ``authServer`` verifies only the chain, ours also checks the
host name (an IP SAN for ``ip:port`` addresses), unless ``tls.client.verifyHostname``
(rocketmq-tx key) is false.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass

from rocketmq_tx.config import ConfigError, Setting, Settings, read_properties_file

__all__ = ["TlsMode", "TlsSettings", "PemMaterial", "load_pem_material", "self_signed_pem", "TLS_HANDSHAKE_BYTE"]

#: A TLS record starts with content type 22 (handshake); a RocketMQ frame starts with a
#: length below 16 MiB, whose first byte is 0.
TLS_HANDSHAKE_BYTE = 0x16


class TlsMode:
    """``tls.server.mode`` values."""

    DISABLED = "disabled"
    PERMISSIVE = "permissive"
    ENFORCING = "enforcing"

    @staticmethod
    def parse(text: str) -> str:
        """Java maps anything unrecognised to permissive."""
        value = text.strip().lower()
        return value if value in (TlsMode.DISABLED, TlsMode.ENFORCING) else TlsMode.PERMISSIVE


class TlsSettings(Settings):
    """Every ``tls.*`` key with Java's defaults (plus rocketmq-tx's reload interval)."""

    SPEC = (
        Setting("tls.server.mode", TlsMode.PERMISSIVE, str, "disabled / permissive / enforcing"),
        Setting("tls.enable", False, bool, "clients (and a broker's outbound calls) use TLS"),
        Setting("tls.config.file", "/etc/rocketmq/tls.properties", str, "a properties file with the keys below"),
        Setting("tls.test.mode.enable", True, bool, "self-signed server certificate, no verification"),
        Setting("tls.server.need.client.auth", "none", str, "none / optional / require"),
        Setting("tls.server.keyPath", "", str),
        Setting("tls.server.keyPassword", "", str),
        Setting("tls.server.certPath", "", str),
        Setting("tls.server.authClient", False, bool, "verify client certificates against trustCertPath"),
        Setting("tls.server.trustCertPath", "", str),
        Setting("tls.client.keyPath", "", str),
        Setting("tls.client.keyPassword", "", str),
        Setting("tls.client.certPath", "", str),
        Setting("tls.client.authServer", False, bool, "verify the server certificate (and host name)"),
        Setting("tls.client.trustCertPath", "", str),
        Setting("tls.client.verifyHostname", True, bool, "tx: with authServer, also check the host name"),
        Setting("tls.watch.interval", 500, int, "tx: ms between checks of the certificate files"),
    )

    @property
    def mode(self) -> str:
        return TlsMode.parse(self["tls.server.mode"])

    @property
    def need_client_auth(self) -> str:
        value = self["tls.server.need.client.auth"].strip().lower()
        if value not in ("none", "optional", "require"):
            raise ConfigError(f"tls.server.need.client.auth: expected none, optional or require, got {value!r}")
        return value

    @classmethod
    def from_sources(cls, *sources: Mapping[str, str]) -> TlsSettings:
        """
        Apply each mapping in turn (later ones win), then the ``tls.config.file`` if it
        exists, which overrides everything but ``tls.server.mode`` and ``tls.enable``, as in
        Java.

        :raises ConfigError: a value does not parse or the file cannot be read.
        """
        settings = cls()
        for source in sources:
            settings.update_from_properties({k: v for k, v in source.items() if k.startswith("tls.")})
        path = settings["tls.config.file"]
        if path and os.path.exists(path):
            from_file = read_properties_file(path)
            settings.update_from_properties({k: v for k, v in from_file.items()
                                             if k.startswith("tls.") and k not in ("tls.server.mode", "tls.enable")})
        settings.need_client_auth  # validate early  # noqa: B018
        return settings


@dataclass(frozen=True, slots=True)
class PemMaterial:
    """A certificate chain and its private key (both PEM, key unencrypted), and trusted CAs."""

    cert_chain: bytes
    key: bytes
    trusted: bytes


def _read(path: str, what: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise ConfigError(f"cannot read {what} {path}: {e}") from None


def load_pem_material(cert_path: str, key_path: str, key_password: str, trust_path: str) -> PemMaterial:
    """
    Read and check a certificate/key pair: the key is decrypted and re-encoded as
    unencrypted PKCS#8, and must belong to the first certificate.

    :raises ConfigError: a file is unreadable, not PEM, the password is wrong, or the key
        does not match the certificate.
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    chain = _read(cert_path, "certificate") if cert_path else b""
    key_pem = b""
    if key_path:
        raw = _read(key_path, "private key")
        try:
            key = serialization.load_pem_private_key(raw, key_password.encode() if key_password else None)
        except (ValueError, TypeError) as e:
            raise ConfigError(f"cannot load private key {key_path}: {e}") from None
        key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
        if chain:
            try:
                leaf = x509.load_pem_x509_certificate(chain)
            except ValueError as e:
                raise ConfigError(f"cannot load certificate {cert_path}: {e}") from None
            public = serialization.PublicFormat.SubjectPublicKeyInfo
            if (leaf.public_key().public_bytes(serialization.Encoding.DER, public)
                    != key.public_key().public_bytes(serialization.Encoding.DER, public)):
                raise ConfigError(f"private key {key_path} does not match certificate {cert_path}")
    trusted = _read(trust_path, "trusted certificates") if trust_path else b""
    if trusted:
        try:
            x509.load_pem_x509_certificates(trusted)
        except ValueError as e:
            raise ConfigError(f"cannot load trusted certificates {trust_path}: {e}") from None
    return PemMaterial(chain, key_pem, trusted)


def self_signed_pem(common_name: str = "localhost") -> PemMaterial:
    """A fresh self-signed certificate (EC P-256, SANs localhost and 127.0.0.1), like Netty's test mode."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=365))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                    x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .sign(key, hashes.SHA256())
    )
    return PemMaterial(cert.public_bytes(serialization.Encoding.PEM),
                       key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                         serialization.NoEncryption()), b"")
