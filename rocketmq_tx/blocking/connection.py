# -*- test-case-name: rocketmq_tx.blocking.test.test_connection -*-
"""
Blocking request/response over one socket per address.

A :class:`BlockingConnection` sends a request and reads frames until the response with
the same opaque arrives or the deadline passes. Late responses to requests that timed
out are dropped. Requests the server sends us (a broker asking its clients something)
go to a handler registered by code; without one they get REQUEST_CODE_NOT_SUPPORTED,
as a Java client without that processor would answer. Such requests are read while a
request waits for its answer, or by :meth:`BlockingConnection.poll` (a client waiting for
its broker's transaction checks). A handler may send requests of its own on the
connection it is serving (:data:`serving`), as a transactional producer answers a check.
"""

from __future__ import annotations

import logging
import select
import socket
import threading
import time
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import Any

from rocketmq_tx.remoting import (
    DEFAULT_MAX_FRAME_LENGTH,
    RPC_ONEWAY,
    RPC_TYPE_RESPONSE,
    FrameDecoder,
    OpaqueSequence,
    RemoteProtocolError,
    RemotingCommand,
    RemotingConnectError,
    RemotingTimeoutError,
    ResponseCode,
    encode_command,
    split_address,
)
from rocketmq_tx.tlsconfig import TlsSettings

__all__ = ["BlockingConnection", "BlockingRemotingClient", "RequestHandler", "serving"]

log = logging.getLogger(__name__)

#: A handler for server-initiated requests: returns the response, or ``None`` for none.
RequestHandler = Callable[[RemotingCommand], "RemotingCommand | None"]

DEFAULT_TIMEOUT = 3.0

#: The connection whose server-initiated request the running handler serves (``None`` outside one).
serving: ContextVar[BlockingConnection | None] = ContextVar("serving", default=None)


class BlockingConnection:
    """
    One TCP connection to *addr* (``host:port``), opened on first use.

    Thread-safe: a lock serialises requests, so share one per thread for parallelism. The
    lock is reentrant, so a handler can send on the connection it serves.

    :param connect_timeout: seconds to establish the connection.
    :param handlers: code to handler for requests the server sends us.
    :param socket_factory: for tests and TLS: ``(host, port, timeout) -> socket``.
    :param rpc_hook: ``hook(addr, request)`` run on every request (oneway included) right
        before it is encoded (Java's ``RPCHook``; an ACL hook signs it).
    """

    def __init__(
        self,
        addr: str,
        *,
        connect_timeout: float = 3.0,
        max_frame_length: int = DEFAULT_MAX_FRAME_LENGTH,
        handlers: Mapping[int, RequestHandler] | None = None,
        socket_factory: Callable[[str, int, float], socket.socket] | None = None,
        opaques: OpaqueSequence | None = None,
        rpc_hook: Callable[[str, RemotingCommand], None] | None = None,
    ) -> None:
        self.addr = addr
        self.rpc_hook = rpc_hook
        self.connect_timeout = connect_timeout
        self.max_frame_length = max_frame_length
        self.handlers = dict(handlers or {})
        self._socket_factory = socket_factory or _tcp_socket
        self._opaques = opaques or OpaqueSequence()
        self._sock: socket.socket | None = None
        self._decoder = FrameDecoder(max_frame_length)
        self._lock = threading.RLock()

    def __enter__(self) -> BlockingConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def is_open(self) -> bool:
        """``True`` while a socket is held."""
        return self._sock is not None

    def _socket(self) -> socket.socket:
        if self._sock is None:
            host, port = split_address(self.addr)
            try:
                self._sock = self._socket_factory(host, port, self.connect_timeout)
            except OSError as e:
                raise RemotingConnectError(f"connect to {self.addr} failed: {e}") from e
            self._decoder = FrameDecoder(self.max_frame_length)
        return self._sock

    def close(self) -> None:
        """Close the socket; the next request opens a new one."""
        sock, self._sock = self._sock, None
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass

    def invoke(self, request: RemotingCommand, timeout: float = DEFAULT_TIMEOUT) -> RemotingCommand:
        """
        Send *request* and return the response (whatever its code).

        :raises RemotingTimeoutError: no response within *timeout* seconds (the
            connection stays open; the late response will be dropped).
        :raises RemotingConnectError: connecting, sending or receiving failed (the
            connection is closed).
        :raises LocalProtocolError: *request* cannot be encoded.
        """
        with self._lock:
            request.opaque = opaque = self._opaques()
            request.flag &= ~(RPC_TYPE_RESPONSE | RPC_ONEWAY)
            if self.rpc_hook is not None:
                self.rpc_hook(self.addr, request)
            frame = encode_command(request, self.max_frame_length)
            deadline = time.monotonic() + timeout
            self._send(frame)
            while True:
                for cmd in self._receive(deadline, timeout):
                    if cmd.flag & RPC_TYPE_RESPONSE:
                        if cmd.opaque == opaque:
                            return cmd
                        log.debug("dropping late response %d from %s", cmd.opaque, self.addr)
                    else:
                        self._serve(cmd)

    def invoke_oneway(self, request: RemotingCommand) -> None:
        """Send *request* with the oneway flag set; nothing is read back."""
        with self._lock:
            request.opaque = self._opaques()
            request.flag = (request.flag & ~RPC_TYPE_RESPONSE) | RPC_ONEWAY
            if self.rpc_hook is not None:
                self.rpc_hook(self.addr, request)
            self._send(encode_command(request, self.max_frame_length))

    def poll(self, timeout: float) -> int:
        """
        Wait up to *timeout* seconds for what the server sends unasked, serve the requests
        among it (late responses are dropped) and return how many were served; returns
        as soon as something was read. A closed connection serves nothing.

        :raises RemotingConnectError: the connection failed while reading (it is closed).
        """
        with self._lock:
            if self._sock is None:
                return 0
            try:
                commands = self._receive(time.monotonic() + timeout, timeout)
            except RemotingTimeoutError:
                return 0
            served = 0
            for cmd in commands:
                if cmd.flag & RPC_TYPE_RESPONSE:
                    log.debug("dropping late response %d from %s", cmd.opaque, self.addr)
                else:
                    self._serve(cmd)
                    served += 1
            return served

    def fileno(self) -> int:
        """The socket's descriptor, -1 when closed (for ``select``)."""
        return self._sock.fileno() if self._sock is not None else -1

    def _send(self, frame: bytes) -> None:
        sock = self._socket()
        try:
            sock.settimeout(None)
            sock.sendall(frame)
        except OSError as e:
            self.close()
            raise RemotingConnectError(f"send to {self.addr} failed: {e}") from e

    def _receive(self, deadline: float, timeout: float) -> list[RemotingCommand]:
        sock = self._sock
        if sock is None:  # closed by a protocol error after the frames before it: no answer can come
            raise RemotingConnectError(f"connection to {self.addr} closed after a protocol error")
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise RemotingTimeoutError(f"wait response on {self.addr} timeout {int(timeout * 1000)}ms")
        try:
            sock.settimeout(remaining)
            data = sock.recv(262144)
        except TimeoutError:
            raise RemotingTimeoutError(f"wait response on {self.addr} timeout {int(timeout * 1000)}ms") from None
        except OSError as e:
            self.close()
            raise RemotingConnectError(f"receive from {self.addr} failed: {e}") from e
        if not data:
            self.close()
            raise RemotingConnectError(f"connection to {self.addr} closed by peer")
        try:
            commands = self._decoder.feed(data)
        except RemoteProtocolError as e:
            self.close()
            raise RemotingConnectError(f"protocol error from {self.addr}: {e}") from e
        if self._decoder.error is not None:
            # The frames before the bad bytes are good and handed out; the stream is not.
            log.warning("closing connection to %s: %s", self.addr, self._decoder.error)
            self.close()
        return commands

    def _serve(self, request: RemotingCommand) -> None:
        handler = self.handlers.get(request.code)
        if handler is None:
            response: RemotingCommand | None = request.make_unsupported_response()
        else:
            token = serving.set(self)
            try:
                response = handler(request)
            except Exception as e:  # a handler bug must not kill the caller's request
                log.exception("handler for request code %d failed", request.code)
                response = request.make_response(ResponseCode.SYSTEM_ERROR, f"{type(e).__name__}: {e}")
            finally:
                serving.reset(token)
        if response is None or request.flag & RPC_ONEWAY or self._sock is None:
            return
        response.opaque = request.opaque
        response.flag |= RPC_TYPE_RESPONSE
        self._send(encode_command(response, self.max_frame_length))


def _tcp_socket(host: str, port: int, timeout: float) -> socket.socket:
    sock = socket.create_connection((host, port), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


class BlockingRemotingClient:
    """
    A pool of :class:`BlockingConnection`, one per address, with Java's
    ``invokeSync``/``invokeOneway`` shape. Configuration is plain data, so the client
    pickles cleanly (its connections are not carried across).

    :param tls: connect with TLS using these settings (Java's ``-Dtls.enable=true``).
    :param rpc_hook: run on every request before it is encoded (see :class:`BlockingConnection`);
        pickled with the client, so an ACL hook's credentials travel to Spark executors.
    """

    def __init__(self, *, connect_timeout: float = 3.0, max_frame_length: int = DEFAULT_MAX_FRAME_LENGTH,
                 handlers: Mapping[int, RequestHandler] | None = None, tls: TlsSettings | None = None,
                 rpc_hook: Callable[[str, RemotingCommand], None] | None = None) -> None:
        self.connect_timeout = connect_timeout
        self.max_frame_length = max_frame_length
        self.handlers = dict(handlers or {})
        self.tls = tls
        self.rpc_hook = rpc_hook
        self._socket_factory: Callable[[str, int, float], socket.socket] | None = None
        self._connections: dict[str, BlockingConnection] = {}
        self._opaques = OpaqueSequence()

    def __getstate__(self) -> dict[str, object]:
        return {"connect_timeout": self.connect_timeout, "max_frame_length": self.max_frame_length,
                "handlers": self.handlers, "tls": self.tls, "rpc_hook": self.rpc_hook}

    def __setstate__(self, state: dict[str, Any]) -> None:
        type(self).__init__(self, **state)

    def __enter__(self) -> BlockingRemotingClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def connection(self, addr: str) -> BlockingConnection:
        """The pooled connection to *addr*."""
        conn = self._connections.get(addr)
        if conn is None:
            if self.tls is not None and self._socket_factory is None:
                from rocketmq_tx.blocking.tls import tls_socket_factory

                self._socket_factory = tls_socket_factory(self.tls)
            conn = self._connections[addr] = BlockingConnection(
                addr, connect_timeout=self.connect_timeout, max_frame_length=self.max_frame_length,
                handlers=self.handlers, opaques=self._opaques, socket_factory=self._socket_factory,
                rpc_hook=self.rpc_hook,
            )
        return conn

    def invoke(self, addr: str, request: RemotingCommand, timeout: float = DEFAULT_TIMEOUT) -> RemotingCommand:
        """See :meth:`BlockingConnection.invoke`."""
        return self.connection(addr).invoke(request, timeout)

    def invoke_oneway(self, addr: str, request: RemotingCommand) -> None:
        """See :meth:`BlockingConnection.invoke_oneway`."""
        self.connection(addr).invoke_oneway(request)

    def poll(self, timeout: float) -> int:
        """
        Serve what the servers send unasked on the open connections for up to *timeout*
        seconds (see :meth:`BlockingConnection.poll`); how many requests were served.
        A connection that fails is closed and left out.
        """
        deadline = time.monotonic() + timeout
        served = 0
        while True:
            remaining = deadline - time.monotonic()
            conns = [c for c in list(self._connections.values()) if c.is_open]
            if not conns or remaining <= 0:
                if not conns and remaining > 0:
                    time.sleep(remaining)
                return served
            try:
                readable, _, _ = select.select(conns, [], [], remaining)
            except (OSError, ValueError):  # a socket closed under us: look again
                continue
            for conn in readable:
                try:
                    served += conn.poll(0.001)
                except RemotingConnectError as e:
                    log.warning("%s", e)

    def close(self) -> None:
        """Close every connection."""
        for conn in self._connections.values():
            conn.close()
        self._connections.clear()
