"""
ServerEndpoint and ImmediateWrite on real loopback sockets: a response leaves in the
reactor turn that handled its request, not on the next writable event.

Each test's processor schedules ``callLater(0, peek)`` while it handles the request: the
reactor runs that call after the current turn and before its next poll, so what the client
socket can read then left in the turn that handled the request.
"""

from __future__ import annotations

import socket
import ssl

from twisted.internet import defer, threads
from twisted.internet.abstract import FileDescriptor
from twisted.internet.endpoints import TCP4ServerEndpoint
from twisted.internet.testing import MemoryReactor
from twisted.trial.unittest import SynchronousTestCase, TestCase
from zope.interface import implementer

from rocketmq_tx.net.dispatch import IRequestProcessor, ProcessorTable
from rocketmq_tx.net.server import RemotingServerFactory
from rocketmq_tx.net.tls import ReloadableServerTLS, TlsModeFactory
from rocketmq_tx.net.transport import ImmediateWritePort, ImmediateWriteServer, ServerEndpoint, write_now
from rocketmq_tx.remoting import FrameDecoder, RemotingCommand, ResponseCode, encode_command
from rocketmq_tx.tlsconfig import TlsMode, TlsSettings

ECHO = 9001


@implementer(IRequestProcessor)
class _PeekingEcho:
    """Echoes, and looks at the client's socket once the turn that answered has ended."""

    def __init__(self, reactor, client_socket) -> None:  # type: ignore[no-untyped-def]
        self.reactor = reactor
        self.client_socket = client_socket
        self.peeked: defer.Deferred = defer.Deferred()
        self.transports: list[object] = []

    def process_request(self, ctx, request):  # type: ignore[no-untyped-def]
        self.transports.append(ctx.transport)
        self.reactor.callLater(0, self._peek)
        return request.make_response(ResponseCode.SUCCESS, "echo", body=request.body)

    def _peek(self) -> None:
        try:
            data = self.client_socket().recv(1 << 16, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except BlockingIOError:
            data = b""
        self.peeked.callback(data)

    def reject_request(self) -> bool:
        return False


def _request() -> bytes:
    request = RemotingCommand.request(ECHO, body=b"ping")
    request.opaque = 7
    return encode_command(request)


class PlaintextTests(TestCase):
    """Plaintext: RemotingProtocol flushes once per read."""

    @defer.inlineCallbacks
    def answer_visible_after_turn(self, endpoint_of) -> defer.Deferred:  # type: ignore[no-untyped-def]
        from twisted.internet import reactor

        client = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.addCleanup(client.close)
        processor = _PeekingEcho(reactor, lambda: client)
        factory = RemotingServerFactory(ProcessorTable({ECHO: processor}), reactor)
        port = yield endpoint_of(reactor).listen(factory)
        self.addCleanup(port.stopListening)
        self.addCleanup(lambda: [p.transport.loseConnection() for p in list(factory.connections)])
        # The kernel completes the connection from the backlog; the reactor accepts it in a
        # later turn and reads the request with it.
        client.connect(("127.0.0.1", port.getHost().port))
        client.sendall(_request())
        data = yield processor.peeked
        return data, processor

    @defer.inlineCallbacks
    def test_answer_leaves_in_the_same_turn(self):  # type: ignore[no-untyped-def]
        data, processor = yield self.answer_visible_after_turn(
            lambda reactor: ServerEndpoint(reactor, 0, interface="127.0.0.1"))
        self.assertIsInstance(processor.transports[0], ImmediateWriteServer)
        [response] = FrameDecoder().feed(data)
        self.assertEqual((response.opaque, response.code, response.remark, response.body), (7, 0, "echo", b"ping"))

    @defer.inlineCallbacks
    def test_twisted_port_waits_a_turn(self):  # type: ignore[no-untyped-def]
        """The control: Twisted's own transport sends on the next writable event."""
        data, processor = yield self.answer_visible_after_turn(
            lambda reactor: TCP4ServerEndpoint(reactor, 0, interface="127.0.0.1"))
        self.assertNotIsInstance(processor.transports[0], ImmediateWriteServer)
        self.assertEqual(data, b"")


class TlsTests(TestCase):
    """TLS (stdlib memory BIOs): the TLS mode protocol flushes once per read."""

    @defer.inlineCallbacks
    def test_answer_leaves_in_the_same_turn(self):  # type: ignore[no-untyped-def]
        from twisted.internet import reactor

        raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.addCleanup(raw.close)
        processor = _PeekingEcho(reactor, lambda: raw)
        app = RemotingServerFactory(ProcessorTable({ECHO: processor}), reactor)
        tls = ReloadableServerTLS(TlsSettings({"tls.server.mode": TlsMode.ENFORCING}))  # test mode: self-signed
        factory = TlsModeFactory(app, TlsMode.ENFORCING, tls, reactor)
        port = yield ServerEndpoint(reactor, 0, interface="127.0.0.1").listen(factory)
        self.addCleanup(port.stopListening)
        self.addCleanup(lambda: [p.transport.loseConnection() for p in list(app.connections)])
        raw.connect(("127.0.0.1", port.getHost().port))

        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        # TLS 1.2: no session tickets after the handshake that the peek could mistake for the answer.
        context.maximum_version = ssl.TLSVersion.TLSv1_2
        incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        tls_client = context.wrap_bio(incoming, outgoing)

        def handshake() -> None:
            # In a thread, blocking: the reactor serves the other end meanwhile.
            while True:
                try:
                    tls_client.do_handshake()
                except ssl.SSLWantReadError:
                    raw.sendall(outgoing.read())
                    chunk = raw.recv(1 << 16)
                    if not chunk:
                        raise ConnectionError("closed during the handshake") from None
                    incoming.write(chunk)
                else:
                    raw.sendall(outgoing.read())
                    return

        yield threads.deferToThread(handshake)
        tls_client.write(_request())
        raw.sendall(outgoing.read())
        data = yield processor.peeked
        self.assertTrue(data, "no ciphertext left in the turn that handled the request")
        incoming.write(raw.recv(1 << 16))
        [response] = FrameDecoder().feed(tls_client.read(1 << 16))
        self.assertEqual((response.opaque, response.body), (7, b"ping"))


class ServerEndpointTests(SynchronousTestCase):
    def test_other_reactors_listen_their_way(self) -> None:
        """A reactor without PosixReactorBase (here a memory reactor) gets listenTCP."""
        reactor = MemoryReactor()
        factory = RemotingServerFactory(ProcessorTable(), reactor)
        d = ServerEndpoint(reactor, 10911, backlog=7, interface="::1").listen(factory)
        self.successResultOf(d)
        self.assertEqual(reactor.tcpServers, [(10911, factory, 7, "::1")])

    def test_port_builds_our_transport(self) -> None:
        self.assertIs(ImmediateWritePort.transport, ImmediateWriteServer)


class _Sock(FileDescriptor):
    """A socket that accepts everything: what reaches writeSomeData was sent."""

    def __init__(self, reactor: MemoryReactor) -> None:
        super().__init__(reactor)
        self.sent: list[bytes] = []
        self.connected = 1

    def writeSomeData(self, data: bytes) -> int:
        self.sent.append(bytes(data))
        return len(data)


class WriteNowTests(SynchronousTestCase):
    def test_sends_buffered_data(self) -> None:
        reactor = MemoryReactor()
        sock = _Sock(reactor)
        sock.write(b"report")
        self.assertEqual(sock.sent, [])
        write_now(sock)
        self.assertEqual(sock.sent, [b"report"])
        self.assertNotIn(sock, reactor.getWriters())

    def test_closing_or_fake_left_alone(self) -> None:
        reactor = MemoryReactor()
        sock = _Sock(reactor)
        sock.write(b"x")
        sock.disconnecting = True
        write_now(sock)
        self.assertEqual(sock.sent, [])
        write_now(object())  # no socket: nothing to do
