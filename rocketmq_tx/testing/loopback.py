"""
In-memory connections between two protocols, for unit tests without sockets
(in the spirit of Twisted's ``iosim``): bytes move only when :meth:`Pump.flush` runs.
"""

from __future__ import annotations

from twisted.internet.address import IPv4Address
from twisted.internet.protocol import Protocol
from twisted.internet.testing import StringTransport

__all__ = ["Pump", "connect", "NoDelayTransport"]


class NoDelayTransport(StringTransport):
    """A StringTransport that records TCP_NODELAY and tells abort from a clean close."""

    def __init__(self, peer: IPv4Address) -> None:
        super().__init__(peerAddress=peer)
        self.tcp_no_delay = False
        self.aborted = False

    def setTcpNoDelay(self, enabled: bool) -> None:
        self.tcp_no_delay = enabled

    def abortConnection(self) -> None:
        self.aborted = True
        self.loseConnection()


class Pump:
    """Moves bytes between a client and a server protocol until both are quiet."""

    def __init__(self, client: Protocol, server: Protocol, client_transport: NoDelayTransport,
                 server_transport: NoDelayTransport) -> None:
        self.client, self.server = client, server
        self.client_transport, self.server_transport = client_transport, server_transport
        self._closed = False

    def flush(self, chunk: int | None = None) -> None:
        """Deliver everything written so far (in *chunk*-byte pieces if given), repeatedly."""
        while not self._closed:
            moved = self._move(self.client_transport, self.server, chunk)
            moved |= self._move(self.server_transport, self.client, chunk)
            if self.client_transport.disconnecting or self.server_transport.disconnecting:
                self._close()
                return
            if not moved:
                return

    @staticmethod
    def _move(transport: StringTransport, to: Protocol, chunk: int | None) -> bool:
        data = transport.value()
        if not data:
            return False
        transport.clear()
        step = chunk or len(data)
        for i in range(0, len(data), step):
            to.dataReceived(data[i : i + step])
        return True

    def _close(self) -> None:
        from twisted.internet.error import ConnectionDone
        from twisted.python.failure import Failure

        self._closed = True
        self.client.connectionLost(Failure(ConnectionDone()))
        self.server.connectionLost(Failure(ConnectionDone()))


def connect(client: Protocol, server: Protocol, client_port: int = 50000) -> Pump:
    """Make *client* and *server* connected to each other; returns the pump."""
    client_transport = NoDelayTransport(IPv4Address("TCP", "127.0.0.1", 9876))
    server_transport = NoDelayTransport(IPv4Address("TCP", "127.0.0.1", client_port))
    client.makeConnection(client_transport)
    server.makeConnection(server_transport)
    return Pump(client, server, client_transport, server_transport)
