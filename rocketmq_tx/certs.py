# -*- test-case-name: rocketmq_tx.net.test.test_tls -*-
"""
Make a local CA and certificates for a TLS-secured deployment or for tests:

    python -m rocketmq_tx.certs OUTDIR [--host 127.0.0.1 --host broker.example] [--password secret]

writes ``ca.pem``, ``server.pem`` / ``server.key``, ``client.pem`` / ``client.key``
(PKCS#8 keys, as Java expects; encrypted when ``--password`` is given). Certificates carry
the given host names and IPs as SANs (clients check them).
"""

from __future__ import annotations

import argparse
import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["Issued", "make_ca", "issue", "write_pki"]


@dataclass(frozen=True)
class Issued:
    """A certificate and its key."""

    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    @property
    def serial(self) -> int:
        return self.cert.serial_number

    def cert_pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    def key_pem(self, password: str | None = None) -> bytes:
        encryption = (serialization.BestAvailableEncryption(password.encode()) if password
                      else serialization.NoEncryption())
        return self.key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def make_ca(cn: str = "rocketmq-tx local CA", days: int = 3650) -> Issued:
    """A self-signed CA."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(_name(cn)).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
            .sign(key, hashes.SHA256()))
    return Issued(cert, key)


def issue(ca: Issued, cn: str, hosts: list[str], *, client: bool = False, days: int = 825,
          not_after: datetime.datetime | None = None) -> Issued:
    """A leaf certificate signed by *ca* for *hosts* (DNS names or IPs)."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    sans: list[x509.GeneralName] = []
    for host in hosts:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            sans.append(x509.DNSName(host))
    usage = ExtendedKeyUsageOID.CLIENT_AUTH if client else ExtendedKeyUsageOID.SERVER_AUTH
    builder = (x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(ca.cert.subject)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(not_after or now + datetime.timedelta(days=days))
               .add_extension(x509.ExtendedKeyUsage([usage]), critical=False))
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return Issued(builder.sign(ca.key, hashes.SHA256()), key)


def _write(path: Path, data: bytes) -> None:
    # Written whole then renamed: a watching server never sees half a file.
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def write_pki(outdir: str | os.PathLike[str], hosts: list[str] | None = None, password: str | None = None,
              ca: Issued | None = None) -> dict[str, Issued]:
    """Write ca.pem, server.pem/.key and client.pem/.key into *outdir*; returns what was issued."""
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    hosts = hosts or ["127.0.0.1", "localhost"]
    ca = ca or make_ca()
    server = issue(ca, "rocketmq-tx server", hosts)
    client = issue(ca, "rocketmq-tx client", [], client=True)
    _write(out / "ca.pem", ca.cert_pem())
    _write(out / "server.pem", server.cert_pem())
    _write(out / "server.key", server.key_pem(password))
    _write(out / "client.pem", client.cert_pem())
    _write(out / "client.key", client.key_pem(password))
    return {"ca": ca, "server": server, "client": client}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir")
    parser.add_argument("--host", action="append", help="host name or IP for the server certificate (repeatable)")
    parser.add_argument("--password", help="encrypt the private keys with this password")
    args = parser.parse_args()
    issued = write_pki(args.outdir, args.host, args.password)
    for name, item in issued.items():
        print(f"{name}: serial {item.serial:x}")


if __name__ == "__main__":
    main()
