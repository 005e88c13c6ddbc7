# -*- test-case-name: rocketmq_tx.net.test.test_client -*-
"""
:class:`RemotingClient`: requests to many addresses over one pooled connection each,
the Twisted counterpart of Java's ``NettyRemotingClient``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from twisted.internet.defer import Deferred, fail, gatherResults, succeed
from twisted.internet.endpoints import HostnameEndpoint, connectProtocol, wrapClientTLS
from twisted.internet.interfaces import IDelayedCall, IReactorTCP, IReactorTime, IStreamClientEndpoint
from twisted.logger import Logger
from twisted.python.failure import Failure

from rocketmq_tx.net.dispatch import ProcessorTable
from rocketmq_tx.net.protocol import DEFAULT_IDLE_TIMEOUT, RemotingProtocol
from rocketmq_tx.remoting import (
    DEFAULT_MAX_FRAME_LENGTH,
    OpaqueSequence,
    RemotingCommand,
    RemotingConnectError,
    split_address,
)
from rocketmq_tx.tlsconfig import TlsSettings

__all__ = ["RemotingClient", "DEFAULT_TIMEOUT"]

#: Java's ``mqClientApiTimeout`` default, in seconds.
DEFAULT_TIMEOUT = 3.0
#: Java's ``com.rocketmq.remoting.client.connect.timeout`` default, in seconds.
DEFAULT_CONNECT_TIMEOUT = 3.0

log = Logger()


def _abort_if_open(proto: RemotingProtocol) -> None:
    if proto.connected:
        proto.transport.abortConnection()


def _cancel_timer(result: object, timer: IDelayedCall) -> object:
    if timer.active():
        timer.cancel()
    return result


class RemotingClient:
    """
    :param reactor: provides TCP and time (a ``MemoryReactorClock`` in tests).
    :param processors: handlers for requests the servers send us (a broker's
        NOTIFY_CONSUMER_IDS_CHANGED, CHECK_TRANSACTION_STATE, ...).
    :param connector: for tests: ``connector(addr)`` returns a Deferred of a connected
        :class:`RemotingProtocol`; the default connects over TCP.
    :param tls: connect with TLS using these settings (Java's ``setUseTLS(true)``).
    :param rpc_hook: ``hook(addr, request)`` run on every request (oneway included) right
        before it is written, Java's ``RPCHook.doBeforeRequest``; e.g. an
        :class:`~rocketmq_tx.acl.AclClientRPCHook` that signs it.
    """

    def __init__(
        self,
        reactor: IReactorTCP,
        processors: ProcessorTable | None = None,
        *,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        max_frame_length: int = DEFAULT_MAX_FRAME_LENGTH,
        idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
        connector: Callable[[str], Deferred] | None = None,
        tls: TlsSettings | None = None,
        rpc_hook: Callable[[str, RemotingCommand], None] | None = None,
    ) -> None:
        self.reactor = reactor
        self.rpc_hook = rpc_hook
        # the reactors this runs on provide both (the global one, MemoryReactorClock)
        self.clock = cast(IReactorTime, reactor)
        self.processors = processors if processors is not None else ProcessorTable()
        self.connect_timeout = connect_timeout
        self.max_frame_length = max_frame_length
        self.idle_timeout = idle_timeout
        self.tls = tls
        self._opaques = OpaqueSequence()
        self._connector = connector or self._connect_tcp
        self._connections: dict[str, RemotingProtocol] = {}
        self._connecting: dict[str, list[Deferred]] = {}
        self._closed = False

    def _new_protocol(self) -> RemotingProtocol:
        return RemotingProtocol(
            self.clock,
            self.processors,
            opaques=self._opaques,
            max_frame_length=self.max_frame_length,
            idle_timeout=self.idle_timeout,
        )

    def _connect_tcp(self, addr: str) -> Deferred:
        host, port = split_address(addr)
        endpoint: IStreamClientEndpoint = HostnameEndpoint(
            self.reactor, host, port, timeout=self.connect_timeout)
        if self.tls is not None:
            from rocketmq_tx.net.tls import client_creator

            endpoint = wrapClientTLS(client_creator(self.tls, host), endpoint)
        return connectProtocol(endpoint, self._new_protocol())

    def connection(self, addr: str) -> Deferred:
        """Fire with a connected protocol to *addr*, reusing the pooled one."""
        if self._closed:
            return fail(RemotingConnectError("client is closed"))
        proto = self._connections.get(addr)
        if proto is not None and proto.connected:
            return succeed(proto)
        waiters = self._connecting.get(addr)
        d: Deferred = Deferred()
        if waiters is not None:
            waiters.append(d)
            return d
        self._connecting[addr] = [d]
        self._connector(addr).addCallbacks(self._connected, self._connect_failed,
                                           callbackArgs=(addr,), errbackArgs=(addr,))
        return d

    def _connected(self, proto: RemotingProtocol, addr: str) -> None:
        waiters = self._connecting.pop(addr, [])
        if self._closed:
            proto.transport.loseConnection()
            for d in waiters:
                d.errback(RemotingConnectError("client is closed"))
            return
        self._connections[addr] = proto
        proto.on_close.addCallback(self._forget, addr)
        for d in waiters:
            d.callback(proto)

    def _connect_failed(self, failure: Failure, addr: str) -> None:
        waiters = self._connecting.pop(addr, [])
        error = RemotingConnectError(f"connect to {addr} failed: {failure.getErrorMessage()}")
        for d in waiters:
            d.errback(error)

    def _forget(self, proto: RemotingProtocol, addr: str) -> RemotingProtocol:
        if self._connections.get(addr) is proto:
            del self._connections[addr]
        return proto

    def invoke(self, addr: str, request: RemotingCommand, timeout: float = DEFAULT_TIMEOUT) -> Deferred:
        """
        Send *request* to *addr*; fire with the response command (whatever its code).

        Fails with RemotingConnectError, RemotingTimeoutError or LocalProtocolError.
        """
        return self.connection(addr).addCallback(self._send_request, addr, request, timeout)

    def _send_request(self, proto: RemotingProtocol, addr: str, request: RemotingCommand,
                      timeout: float) -> Deferred:
        if self.rpc_hook is not None:
            self.rpc_hook(addr, request)
        return proto.send_request(request, timeout)

    def invoke_async(
        self,
        addr: str,
        request: RemotingCommand,
        callback: Callable[[RemotingCommand | Failure], None],
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        """Java's ``invokeAsync``: *callback* gets the response or the failure, once."""
        self.invoke(addr, request, timeout).addBoth(callback)

    def invoke_oneway(self, addr: str, request: RemotingCommand) -> Deferred:
        """Send *request* as oneway; fires with ``None`` once it is written."""
        return self.connection(addr).addCallback(self._send_oneway, addr, request)

    def _send_oneway(self, proto: RemotingProtocol, addr: str, request: RemotingCommand) -> None:
        if self.rpc_hook is not None:
            self.rpc_hook(addr, request)
        proto.send_oneway(request)

    def close(self, grace: float = 2.0) -> Deferred:
        """
        Close every connection; fires when all are gone. A connection still open after
        *grace* seconds is aborted (a TLS peer may never answer our close_notify).
        """
        self._closed = True
        closing = []
        for proto in list(self._connections.values()):
            closing.append(proto.on_close)
            proto.transport.loseConnection()
            timer = self.clock.callLater(grace, _abort_if_open, proto)
            proto.on_close.addBoth(_cancel_timer, timer)
        self._connections.clear()
        return gatherResults(closing).addCallback(lambda _: None)
