# -*- test-case-name: rocketmq_tx.client.test.test_producer -*-
"""
An in-memory network between a :class:`~rocketmq_tx.net.client.RemotingClient` and a
:class:`~rocketmq_tx.testing.fakebroker.FakeCluster`: every address gets a real
:class:`~rocketmq_tx.net.protocol.RemotingProtocol` pair joined by a loopback pump, so
frames go through the codec; bytes move only when :meth:`FakeNetwork.flush` runs.
"""

from __future__ import annotations

from twisted.internet.defer import Deferred, fail, succeed
from twisted.internet.task import deferLater
from twisted.internet.testing import MemoryReactorClock
from zope.interface import implementer

from rocketmq_tx.net.client import RemotingClient
from rocketmq_tx.net.dispatch import IRemotingContext, IRequestProcessor, ProcessorTable
from rocketmq_tx.net.protocol import RemotingProtocol
from rocketmq_tx.remoting import RemotingCommand, RemotingConnectError, RequestCode, ResponseCode
from rocketmq_tx.testing.fakebroker import FakeCluster
from rocketmq_tx.testing.loopback import Pump, connect

__all__ = ["FakeNetwork"]

_SUSPEND = 0x2


@implementer(IRequestProcessor)
class _Holding:
    """The cluster's answers, except that a suspended pull finding nothing waits on the clock."""

    def __init__(self, net: FakeNetwork, addr: str) -> None:
        self.net, self.addr = net, addr

    def process_request(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand | Deferred | None:
        response = self.net.cluster.handle(self.addr, request)
        if (request.code == RequestCode.PULL_MESSAGE and response is not None
                and response.code == ResponseCode.PULL_NOT_FOUND
                and int(request.ext_fields.get("sysFlag", "0")) & _SUSPEND):
            return deferLater(self.net.reactor,
                              self.net.hold, self.net.cluster.handle, self.addr, request)
        return response

    def reject_request(self) -> bool:
        return False


class FakeNetwork:
    """
    :ivar client: a RemotingClient whose connections lead to *cluster*.
    :ivar chunk: deliver bytes in pieces of this size (partial frames), or all at once.
    """

    def __init__(self, cluster: FakeCluster, reactor: MemoryReactorClock | None = None,
                 chunk: int | None = None) -> None:
        self.cluster = cluster
        self.reactor = reactor or MemoryReactorClock()
        self.chunk = chunk
        self.pumps: dict[str, Pump] = {}
        #: address -> the server side of its current connection (to send broker-to-client requests)
        self.servers: dict[str, RemotingProtocol] = {}
        #: seconds a suspended pull that found nothing is held (a broker's short polling)
        self.hold = 1.0
        self.client = RemotingClient(self.reactor, ProcessorTable(), connector=self._connect)

    def _connect(self, addr: str) -> Deferred:
        if addr in self.cluster.down:
            return fail(RemotingConnectError(f"connection refused: {addr}"))
        proto = self.client._new_protocol()
        server = RemotingProtocol(self.reactor, ProcessorTable(default=_Holding(self, addr)))
        self.servers[addr] = server
        self.pumps[addr] = connect(proto, server)
        return succeed(proto)

    def flush(self) -> None:
        """Move bytes both ways on every connection until all are quiet."""
        while True:
            busy = [p for p in list(self.pumps.values())
                    if not p._closed and (p.client_transport.value() or p.server_transport.value()
                                          or p.client_transport.disconnecting or p.server_transport.disconnecting)]
            if not busy:
                return
            for pump in busy:
                pump.flush(self.chunk)

    def kill(self, addr: str) -> None:
        """Close the connection to *addr* from the server side and refuse new ones."""
        self.cluster.down.add(addr)
        pump = self.pumps.get(addr)
        if pump is not None and not pump._closed:
            pump.server_transport.loseConnection()
            pump.flush()

    def advance(self, seconds: float) -> None:
        """Advance the clock, then deliver what the timers sent."""
        self.flush()
        self.reactor.advance(seconds)
        self.flush()
