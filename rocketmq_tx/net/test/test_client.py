"""Tests for RemotingClient: pooling, failures, and real TCP against the echo server."""

from __future__ import annotations

from twisted.internet import defer
from twisted.internet.defer import Deferred
from twisted.internet.endpoints import TCP4ServerEndpoint
from twisted.internet.testing import MemoryReactorClock
from twisted.trial.unittest import SynchronousTestCase, TestCase

from rocketmq_tx.net.client import RemotingClient
from rocketmq_tx.net.protocol import RemotingProtocol
from rocketmq_tx.net.server import RemotingServerFactory
from rocketmq_tx.remoting import (
    RemotingCommand,
    RemotingConnectError,
    RemotingTimeoutError,
    SerializeType,
    split_address,
)
from rocketmq_tx.testing.echo import ECHO, ONEWAY_SINK, SINK_COUNT, echo_table
from rocketmq_tx.testing.loopback import connect


class PooledClientTests(SynchronousTestCase):
    """The pool, driven through an in-memory connector."""

    def setUp(self) -> None:
        self.reactor = MemoryReactorClock()
        self.connects: list[tuple[str, Deferred]] = []
        self.client = RemotingClient(self.reactor, connector=self._connector)
        self.pumps = []

    def _connector(self, addr: str) -> Deferred:
        d: Deferred = Deferred()
        self.connects.append((addr, d))
        return d

    def _accept(self, index: int = -1) -> None:
        addr, d = self.connects[index]
        proto = self.client._new_protocol()
        server = RemotingProtocol(self.reactor, echo_table())
        self.pumps.append(connect(proto, server))
        d.callback(proto)

    def test_one_connection_per_address(self) -> None:
        """Concurrent requests to one address share one connection attempt and connection."""
        d1 = self.client.invoke("127.0.0.1:9876", RemotingCommand.request(ECHO, body=b"1"))
        d2 = self.client.invoke("127.0.0.1:9876", RemotingCommand.request(ECHO, body=b"2"))
        self.assertEqual(len(self.connects), 1)
        self._accept()
        self.pumps[0].flush()
        self.assertEqual([self.successResultOf(d).body for d in (d1, d2)], [b"1", b"2"])
        d3 = self.client.invoke("127.0.0.1:9876", RemotingCommand.request(ECHO, body=b"3"))
        self.pumps[0].flush()
        self.assertEqual(self.successResultOf(d3).body, b"3")
        self.assertEqual(len(self.connects), 1)

    def test_reconnect_after_close(self) -> None:
        """A closed connection leaves the pool; the next request connects again."""
        self.client.invoke("a:1", RemotingCommand.request(ECHO))
        self._accept()
        self.pumps[0].flush()
        self.pumps[0].server_transport.loseConnection()
        self.pumps[0].flush()
        self.client.invoke("a:1", RemotingCommand.request(ECHO))
        self.assertEqual(len(self.connects), 2)

    def test_connect_failure(self) -> None:
        """Every waiter gets RemotingConnectError when connecting fails."""
        d1 = self.client.invoke("a:1", RemotingCommand.request(ECHO))
        d2 = self.client.invoke_oneway("a:1", RemotingCommand.request(ONEWAY_SINK))
        self.connects[0][1].errback(ConnectionRefusedError("refused"))
        self.failureResultOf(d1, RemotingConnectError)
        self.failureResultOf(d2, RemotingConnectError)

    def test_timeout_on_clock(self) -> None:
        """The per-request timeout runs on the injected clock."""
        d = self.client.invoke("a:1", RemotingCommand.request(ONEWAY_SINK), timeout=1.5)  # never answered
        self._accept()
        self.pumps[0].flush()
        self.reactor.advance(1.6)
        self.failureResultOf(d, RemotingTimeoutError)

    def test_async_callback(self) -> None:
        """invoke_async hands the response to the callback."""
        got: list[object] = []
        self.client.invoke_async("a:1", RemotingCommand.request(ECHO, body=b"cb"), got.append)
        self._accept()
        self.pumps[0].flush()
        self.assertEqual([r.body for r in got], [b"cb"])

    def test_close(self) -> None:
        """close() drops every connection and refuses new requests."""
        self.client.invoke("a:1", RemotingCommand.request(ECHO))
        self._accept()
        self.pumps[0].flush()
        d = self.client.close()
        self.pumps[0].flush()
        self.successResultOf(d)
        self.failureResultOf(self.client.invoke("a:1", RemotingCommand.request(ECHO)), RemotingConnectError)

    def test_split_address(self) -> None:
        """host:port, including IPv6 forms."""
        self.assertEqual(split_address("127.0.0.1:9876"), ("127.0.0.1", 9876))
        self.assertEqual(split_address("[::1]:10911"), ("::1", 10911))
        self.assertRaises(ValueError, split_address, "nohost")


class RealTCPTests(TestCase):
    """The client and the server over real loopback TCP."""

    @defer.inlineCallbacks
    def setUp(self):  # type: ignore[no-untyped-def]
        from twisted.internet import reactor

        self.factory = RemotingServerFactory(echo_table(), reactor)
        self.port = yield TCP4ServerEndpoint(reactor, 0, interface="127.0.0.1").listen(self.factory)
        self.addr = f"127.0.0.1:{self.port.getHost().port}"
        self.client = RemotingClient(reactor)

    @defer.inlineCallbacks
    def tearDown(self):  # type: ignore[no-untyped-def]
        yield self.client.close()
        closing = [p.on_close for p in self.factory.connections]
        for p in list(self.factory.connections):
            p.transport.loseConnection()
        yield defer.gatherResults(closing)
        yield self.port.stopListening()

    @defer.inlineCallbacks
    def test_echo_big_bodies(self):  # type: ignore[no-untyped-def]
        """Bodies up to 16 MiB minus headroom round-trip in both serializations."""
        body = bytes(range(256)) * (((16 << 20) - (64 << 10)) // 256)
        for kind in SerializeType:
            response = yield self.client.invoke(self.addr, RemotingCommand.request(ECHO, {"k": "v"}, body,
                                                                                  serialize_type=kind), timeout=30)
            self.assertEqual(response.body, body)
            self.assertEqual(response.serialize_type, kind)

    @defer.inlineCallbacks
    def test_many_in_flight(self):  # type: ignore[no-untyped-def]
        """Hundreds of concurrent requests on one connection all come back right."""
        responses = yield defer.gatherResults([
            self.client.invoke(self.addr, RemotingCommand.request(ECHO, {"i": str(i)})) for i in range(500)
        ])
        self.assertEqual([r.ext_fields["i"] for r in responses], [str(i) for i in range(500)])
        self.client.invoke_oneway(self.addr, RemotingCommand.request(ONEWAY_SINK))
        count = yield self.client.invoke(self.addr, RemotingCommand.request(SINK_COUNT))
        self.assertEqual(count.ext_fields, {"count": "1"})

    @defer.inlineCallbacks
    def test_connect_refused(self):  # type: ignore[no-untyped-def]
        """A closed port is a RemotingConnectError."""
        from twisted.internet import reactor

        port = yield TCP4ServerEndpoint(reactor, 0, interface="127.0.0.1").listen(self.factory)
        addr = f"127.0.0.1:{port.getHost().port}"
        yield port.stopListening()
        with self.assertRaises(RemotingConnectError):
            yield self.client.invoke(addr, RemotingCommand.request(ECHO))
