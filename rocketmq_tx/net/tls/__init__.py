"""
TLS for the Twisted servers and client, configured with Java's ``tls.*`` settings
(:class:`rocketmq_tx.tlsconfig.TlsSettings`). One concern per module:

* :mod:`.context`: :class:`ReloadableServerTLS`, the server's TLS context, built from the
  settings and rebuilt when its files change (Java's reload rule).
* :mod:`.memorybio`: :class:`MemoryBioTLSProtocol`, the server end of a TLS connection on
  stdlib ``ssl`` memory BIOs (pyOpenSSL's ``TLSMemoryBIOProtocol`` only where a client
  certificate is asked for but not verified).
* :mod:`.mode`: :class:`TlsModeFactory`, Java's ``tls.server.mode`` rules on each
  connection's first byte, and the handshake timeout.
* :mod:`.client`: :func:`client_creator`, the client side's connection creator.

The names are re-exported here: ``from rocketmq_tx.net.tls import ...`` is the import to use.
"""

from rocketmq_tx.net.tls.client import client_creator
from rocketmq_tx.net.tls.context import ReloadableServerTLS
from rocketmq_tx.net.tls.memorybio import MemoryBioTLSProtocol
from rocketmq_tx.net.tls.mode import DEFAULT_HANDSHAKE_TIMEOUT, TlsModeFactory

__all__ = [
    "ReloadableServerTLS", "TlsModeFactory", "MemoryBioTLSProtocol", "client_creator", "DEFAULT_HANDSHAKE_TIMEOUT",
]
