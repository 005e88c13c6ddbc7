# -*- test-case-name: rocketmq_tx.net.test.test_tls -*-
"""TLS for the blocking client with the stdlib ``ssl`` module and Java's ``tls.*`` settings."""

from __future__ import annotations

import socket
import ssl
from collections.abc import Callable

from rocketmq_tx.tlsconfig import TlsSettings

__all__ = ["client_context", "tls_socket_factory"]


def client_context(settings: TlsSettings) -> ssl.SSLContext:
    """
    An ``SSLContext`` like :func:`rocketmq_tx.net.tls.client_creator`: test mode and
    ``authServer=false`` trust anything; otherwise the chain (and, unless
    ``tls.client.verifyHostname`` is false, the host name) is verified.

    :raises OSError: or :class:`ssl.SSLError` when the configured files do not load.
    """
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    s = settings
    if s["tls.test.mode.enable"] or not s["tls.client.authServer"]:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    else:
        if s["tls.client.trustCertPath"]:
            ctx.load_verify_locations(cafile=s["tls.client.trustCertPath"])
        else:
            ctx.load_default_certs()
        ctx.check_hostname = bool(s["tls.client.verifyHostname"])
    if not s["tls.test.mode.enable"] and s["tls.client.certPath"] and s["tls.client.keyPath"]:
        ctx.load_cert_chain(s["tls.client.certPath"], s["tls.client.keyPath"], s["tls.client.keyPassword"] or None)
    return ctx


def tls_socket_factory(settings: TlsSettings) -> Callable[[str, int, float], socket.socket]:
    """A ``socket_factory`` for :class:`~rocketmq_tx.blocking.BlockingConnection` that speaks TLS."""
    ctx = client_context(settings)

    def connect(host: str, port: int, timeout: float) -> socket.socket:
        raw = socket.create_connection((host, port), timeout=timeout)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            return ctx.wrap_socket(raw, server_hostname=host)
        except BaseException:
            raw.close()
            raise

    return connect
