# -*- test-case-name: rocketmq_tx.net.test.test_client -*-
"""The server side: a factory of :class:`RemotingProtocol` sharing one processor table."""

from __future__ import annotations

from collections.abc import Callable

from twisted.internet.interfaces import IAddress, IReactorTime
from twisted.internet.protocol import Factory

from rocketmq_tx.net.dispatch import ProcessorTable
from rocketmq_tx.net.protocol import DEFAULT_IDLE_TIMEOUT, RemotingProtocol
from rocketmq_tx.remoting import DEFAULT_MAX_FRAME_LENGTH

__all__ = ["RemotingServerFactory"]


class RemotingServerFactory(Factory):
    """
    Builds one :class:`RemotingProtocol` per accepted connection; listen with an endpoint.

    :param on_connection_lost: called with each connection that closes (a name server
        forgets the broker registered over it).
    :ivar connections: the live connections (a broker calls its clients through these).
    """

    noisy = False

    def __init__(
        self,
        processors: ProcessorTable,
        clock: IReactorTime,
        *,
        max_frame_length: int = DEFAULT_MAX_FRAME_LENGTH,
        idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
        on_connection_lost: Callable[[RemotingProtocol], object] | None = None,
    ) -> None:
        self.on_connection_lost = on_connection_lost
        self.processors = processors
        self.clock = clock
        self.max_frame_length = max_frame_length
        self.idle_timeout = idle_timeout
        self.connections: set[RemotingProtocol] = set()

    def buildProtocol(self, addr: IAddress | None) -> RemotingProtocol:
        proto = RemotingProtocol(
            self.clock,
            self.processors,
            max_frame_length=self.max_frame_length,
            idle_timeout=self.idle_timeout,
        )
        proto.factory = self
        self.connections.add(proto)
        proto.on_close.addCallback(self._closed)
        return proto

    def _closed(self, proto: RemotingProtocol) -> RemotingProtocol:
        self.connections.discard(proto)
        if self.on_connection_lost is not None:
            self.on_connection_lost(proto)
        return proto
