# -*- test-case-name: rocketmq_tx.net.test.test_tls -*-
"""The client side of a TLS connection: :func:`client_creator`, from Java's ``tls.client.*`` settings."""

from __future__ import annotations

from twisted.internet import interfaces
from twisted.internet import ssl as twisted_ssl

from rocketmq_tx.net.tls.context import split_pem
from rocketmq_tx.tlsconfig import TlsSettings, load_pem_material

__all__ = ["client_creator"]


def client_creator(settings: TlsSettings, host: str) -> interfaces.IOpenSSLClientConnectionCreator:
    """
    The client side of a connection to *host*: Java's test mode trusts anything; with
    ``tls.client.authServer`` the chain is verified against ``tls.client.trustCertPath``
    (the system store when empty) and, unless ``tls.client.verifyHostname`` is false, the
    host name or IP too.

    :raises ConfigError: the configured files do not load.
    """
    # CertificateOptions provides the interface; zope's implementer is no base class to mypy,
    # hence the "type: ignore"s.
    s = settings
    if s["tls.test.mode.enable"]:
        return twisted_ssl.CertificateOptions(
            verify=False, raiseMinimumTo=twisted_ssl.TLSVersion.TLSv1_2)
    material = load_pem_material(s["tls.client.certPath"], s["tls.client.keyPath"], s["tls.client.keyPassword"],
                                 s["tls.client.trustCertPath"])
    client_cert = (twisted_ssl.PrivateCertificate.loadPEM(material.cert_chain + material.key)
                   if material.cert_chain and material.key else None)
    if not s["tls.client.authServer"]:
        kwargs = {}
        if client_cert is not None:
            kwargs = {"privateKey": client_cert.privateKey.original, "certificate": client_cert.original}
        return twisted_ssl.CertificateOptions(
            verify=False, raiseMinimumTo=twisted_ssl.TLSVersion.TLSv1_2, **kwargs)
    roots = [twisted_ssl.Certificate.loadPEM(pem) for pem in split_pem(material.trusted)]
    trust = twisted_ssl.trustRootFromCertificates(roots) if roots else twisted_ssl.platformTrust()
    if s["tls.client.verifyHostname"]:
        return twisted_ssl.optionsForClientTLS(host, trustRoot=trust, clientCertificate=client_cert)
    kwargs = {}
    if client_cert is not None:
        kwargs = {"privateKey": client_cert.privateKey.original, "certificate": client_cert.original}
    return twisted_ssl.CertificateOptions(
        verify=True, caCerts=[r.original for r in roots], raiseMinimumTo=twisted_ssl.TLSVersion.TLSv1_2, **kwargs)
