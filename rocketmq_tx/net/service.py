# -*- test-case-name: rocketmq_tx.namesrv.test.test_service -*-
"""A listening service that says where it listens (port 0 is useful in tests)."""

from __future__ import annotations

from twisted.application.service import Service
from twisted.internet.address import IPv4Address, IPv6Address
from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IListeningPort, IReactorCore, IStreamServerEndpoint
from twisted.internet.protocol import Factory
from twisted.logger import Logger
from twisted.python.failure import Failure

__all__ = ["ListeningService", "tcp_address"]

log = Logger()


class ListeningService(Service):
    """
    Listens on *endpoint* while running and logs ``<name> listening on <host>:<port>``,
    a line process supervisors and tests can wait for. Given the *reactor*, a failure to
    listen stops it (a daemon that cannot bind exits rather than idling).

    :ivar port: the listening port once started, else ``None``.
    """

    def __init__(self, label: str, endpoint: IStreamServerEndpoint, factory: Factory,
                 reactor: IReactorCore | None = None) -> None:
        self.label = label
        self.reactor = reactor
        self.endpoint = endpoint
        self.factory = factory
        self.port: IListeningPort | None = None
        self._listening: Deferred | None = None

    def startService(self) -> None:
        super().startService()
        self._listening = self.endpoint.listen(self.factory)
        self._listening.addCallbacks(self._listened, self._failed)

    def _listened(self, port: IListeningPort) -> IListeningPort:
        self.port = port
        address = tcp_address(port)
        log.info("{label} listening on {host}:{port}", label=self.label, host=address.host, port=address.port)
        return port

    def _failed(self, failure: Failure) -> None:
        log.failure("{label} cannot listen", failure, label=self.label)
        if self.reactor is not None:
            # A server that cannot bind is useless: stop instead of running half-configured.
            self.reactor.callWhenRunning(self.reactor.stop)
        return None

    def stopService(self) -> Deferred | None:
        super().stopService()
        if self._listening is None:
            return None
        listening, self._listening = self._listening, None

        def stop(port: IListeningPort | None) -> object:
            return port.stopListening() if port is not None else None

        return listening.addCallback(stop)


def tcp_address(port: IListeningPort) -> IPv4Address | IPv6Address:
    """The address a TCP listening *port* is bound to (its actual port when 0 was asked for)."""
    address = port.getHost()
    assert isinstance(address, (IPv4Address, IPv6Address)), address
    return address
