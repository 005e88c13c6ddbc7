"""Tests for RemotingProtocol and the processor table, in memory with a fake clock."""

from __future__ import annotations

from twisted.internet.abstract import FileDescriptor
from twisted.internet.address import IPv4Address
from twisted.internet.defer import Deferred
from twisted.internet.protocol import Factory, Protocol
from twisted.internet.task import Clock
from twisted.internet.testing import MemoryReactor, StringTransport
from twisted.logger import capturedLogs
from twisted.protocols.policies import ProtocolWrapper, WrappingFactory
from twisted.trial.unittest import SynchronousTestCase
from zope.interface import implementer
from zope.interface.verify import verifyObject

from rocketmq_tx.net.dispatch import IRemotingContext, IRequestProcessor, ProcessorTable
from rocketmq_tx.net.protocol import RemotingProtocol, flush_late_answers
from rocketmq_tx.net.tls import TlsModeFactory
from rocketmq_tx.net.transport import ImmediateWrite
from rocketmq_tx.remoting import (
    FrameDecoder,
    RemotingCommand,
    RemotingCommandError,
    RemotingConnectError,
    RemotingTimeoutError,
    ResponseCode,
    SerializeType,
    encode_command,
)
from rocketmq_tx.testing.echo import ECHO, ONEWAY_SINK, SINK_COUNT, EchoProcessor, echo_table
from rocketmq_tx.testing.loopback import connect
from rocketmq_tx.tlsconfig import TlsMode


@implementer(IRequestProcessor)
class Scripted:
    """A processor whose behaviour each test chooses."""

    def __init__(self, behaviour, reject: bool = False) -> None:  # type: ignore[no-untyped-def]
        self.behaviour = behaviour
        self.reject = reject
        self.seen: list[RemotingCommand] = []

    def process_request(self, ctx, request):  # type: ignore[no-untyped-def]
        self.seen.append(request)
        return self.behaviour(ctx, request)

    def reject_request(self) -> bool:
        return self.reject


def pair(server_table: ProcessorTable | None = None, client_table: ProcessorTable | None = None,
         clock: Clock | None = None):  # type: ignore[no-untyped-def]
    clock = clock or Clock()
    client = RemotingProtocol(clock, client_table)
    server = RemotingProtocol(clock, server_table if server_table is not None else echo_table())
    pump = connect(client, server)
    return client, server, pump, clock


class RequestResponseTests(SynchronousTestCase):
    """Requests in, responses out."""

    def test_interfaces(self) -> None:
        """The protocol is a processor context; the echo processor a processor."""
        client, server, pump, clock = pair()
        verifyObject(IRemotingContext, server)
        verifyObject(IRequestProcessor, EchoProcessor())

    def test_echo_both_serializations(self) -> None:
        """Responses match their requests and mirror the request's serialization."""
        client, server, pump, clock = pair()
        for kind in SerializeType:
            d = client.send_request(RemotingCommand.request(ECHO, {"k": "v"}, b"body", serialize_type=kind), 3)
            pump.flush(chunk=7)
            response = self.successResultOf(d)
            self.assertEqual((response.code, response.remark, response.ext_fields, response.body),
                             (0, "echo", {"k": "v"}, b"body"))
            self.assertEqual(response.serialize_type, kind)
            self.assertTrue(response.is_response)
        self.assertEqual(client.pending_requests, 0)

    def test_out_of_order_responses(self) -> None:
        """Responses are matched by opaque, not by order."""
        later: Deferred = Deferred()
        table = ProcessorTable({1: Scripted(lambda ctx, r: later),
                                2: Scripted(lambda ctx, r: r.make_response(remark="two"))})
        client, server, pump, clock = pair(table)
        d1 = client.send_request(RemotingCommand.request(1), 3)
        d2 = client.send_request(RemotingCommand.request(2), 3)
        pump.flush()
        self.assertEqual(self.successResultOf(d2).remark, "two")
        self.assertNoResult(d1)
        later.callback(RemotingCommand(code=0, remark="one"))
        pump.flush()
        self.assertEqual(self.successResultOf(d1).remark, "one")

    def test_unknown_code(self) -> None:
        """A code without processor gets 3 and Java's remark."""
        client, server, pump, clock = pair()
        d = client.send_request(RemotingCommand.request(7777), 3)
        pump.flush()
        response = self.successResultOf(d)
        self.assertEqual((response.code, response.remark), (ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                                                            " request type 7777 not supported"))

    def test_default_processor(self) -> None:
        """Codes without their own processor go to the default one when there is one."""
        default = Scripted(lambda ctx, r: r.make_response(remark="default"))
        client, server, pump, clock = pair(ProcessorTable(default=default))
        d = client.send_request(RemotingCommand.request(55), 3)
        pump.flush()
        self.assertEqual(self.successResultOf(d).remark, "default")

    def test_processor_exception(self) -> None:
        """An exception becomes SYSTEM_ERROR with a short remark; the traceback stays in the log."""
        def boom(ctx, request):  # type: ignore[no-untyped-def]
            raise KeyError("secret-detail")

        client, server, pump, clock = pair(ProcessorTable({1: Scripted(boom)}))
        d = client.send_request(RemotingCommand.request(1), 3)
        pump.flush()
        response = self.successResultOf(d)
        self.assertEqual(response.code, ResponseCode.SYSTEM_ERROR)
        self.assertEqual(response.remark, "KeyError: 'secret-detail'")
        self.assertNotIn("Traceback", response.remark)
        self.assertEqual(len(self.flushLoggedErrors(KeyError)), 1)

    def test_command_error_remark(self) -> None:
        """A header error's message is the remark, as Java's RemotingCommandException."""
        def bad_header(ctx, request):  # type: ignore[no-untyped-def]
            raise RemotingCommandError("the custom field <topic> is null")

        client, server, pump, clock = pair(ProcessorTable({1: Scripted(bad_header)}))
        d = client.send_request(RemotingCommand.request(1), 3)
        pump.flush()
        self.assertEqual(self.successResultOf(d).remark, "the custom field <topic> is null")

    def test_rejected(self) -> None:
        """A processor under flow control answers SYSTEM_BUSY."""
        processor = Scripted(lambda ctx, r: r.make_response(), reject=True)
        client, server, pump, clock = pair(ProcessorTable({1: processor}))
        d = client.send_request(RemotingCommand.request(1), 3)
        pump.flush()
        self.assertEqual(self.successResultOf(d).code, ResponseCode.SYSTEM_BUSY)
        self.assertEqual(processor.seen, [])

    def test_oneway_never_answered(self) -> None:
        """Oneway requests are processed and get no response, even on error."""
        client, server, pump, clock = pair()
        client.send_oneway(RemotingCommand.request(ONEWAY_SINK))
        client.send_oneway(RemotingCommand.request(7777))
        pump.flush()
        self.assertEqual(pump.client_transport.value(), b"")
        self.assertEqual(pump.server_transport.value(), b"")
        d = client.send_request(RemotingCommand.request(SINK_COUNT), 3)
        pump.flush()
        self.assertEqual(self.successResultOf(d).ext_fields, {"count": "1"})

    def test_tcp_nodelay(self) -> None:
        """Both sides turn Nagle off, like Netty's TCP_NODELAY."""
        client, server, pump, clock = pair()
        self.assertTrue(pump.client_transport.tcp_no_delay)
        self.assertTrue(pump.server_transport.tcp_no_delay)

    def test_server_to_client_request(self) -> None:
        """A request from the server side reaches the client's processor table."""
        notified = Scripted(lambda ctx, r: r.make_response(remark=f"client got {r.ext_fields['consumerGroup']}"))
        client, server, pump, clock = pair(client_table=ProcessorTable({40: notified}))
        d = server.send_request(RemotingCommand.request(40, {"consumerGroup": "g"}), 3)
        pump.flush()
        self.assertEqual(self.successResultOf(d).remark, "client got g")


class FailureTests(SynchronousTestCase):
    """Timeouts, lost connections and bad peers."""

    def test_timeout(self) -> None:
        """No answer within the timeout fails the request; a late answer is dropped."""
        held: Deferred = Deferred()
        client, server, pump, clock = pair(ProcessorTable({1: Scripted(lambda ctx, r: held)}))
        d = client.send_request(RemotingCommand.request(1), 3)
        pump.flush()
        clock.advance(2.9)
        self.assertNoResult(d)
        clock.advance(0.2)
        failure = self.failureResultOf(d, RemotingTimeoutError)
        self.assertIn("timeout 3000ms", str(failure.value))
        held.callback(RemotingCommand(code=0))
        pump.flush()
        self.assertEqual(client.pending_requests, 0)

    def test_connection_lost_fails_pending(self) -> None:
        """Pending requests fail with RemotingConnectError when the connection goes."""
        client, server, pump, clock = pair(ProcessorTable({1: Scripted(lambda ctx, r: Deferred())}))
        d = client.send_request(RemotingCommand.request(1), 3)
        pump.flush()
        pump.server_transport.loseConnection()
        pump.flush()
        self.failureResultOf(d, RemotingConnectError)
        self.assertEqual(clock.getDelayedCalls(), [])
        self.failureResultOf(client.send_request(RemotingCommand.request(1), 3), RemotingConnectError)

    def test_malformed_frame_closes_only_that_connection(self) -> None:
        """Garbage aborts the sender's connection; another connection keeps working."""
        clock = Clock()
        table = echo_table()
        bad_client, bad_server, bad_pump, _ = pair(table, clock=clock)
        good_client, good_server, good_pump, _ = pair(table, clock=clock)
        bad_server.dataReceived(b"\x7f\xff\xff\xff garbage")
        self.assertTrue(bad_pump.server_transport.aborted)
        self.assertFalse(good_pump.server_transport.disconnecting)
        d = good_client.send_request(RemotingCommand.request(ECHO, body=b"still fine"), 3)
        good_pump.flush()
        self.assertEqual(self.successResultOf(d).body, b"still fine")

    def test_idle_timeout(self) -> None:
        """A connection silent for 120 s is closed; traffic resets the timer."""
        client, server, pump, clock = pair()
        clock.advance(100)
        server.dataReceived(encode_command(RemotingCommand.request(ONEWAY_SINK)))
        clock.advance(100)
        self.assertFalse(pump.server_transport.disconnecting)
        clock.advance(21)
        self.assertTrue(pump.server_transport.disconnecting)

    def test_response_after_disconnect_not_written(self) -> None:
        """A processor finishing after the peer left writes nothing and raises nothing."""
        held: Deferred = Deferred()
        client, server, pump, clock = pair(ProcessorTable({1: Scripted(lambda ctx, r: held)}))
        client.send_request(RemotingCommand.request(1), 3).addErrback(lambda f: None)
        pump.flush()
        pump.client_transport.loseConnection()
        pump.flush()
        held.callback(RemotingCommand(code=0))
        self.assertEqual(pump.server_transport.value(), b"")


class BadStreamTests(SynchronousTestCase):
    """Good frames before bad bytes are answered; an answer that cannot be encoded closes."""

    def setUp(self) -> None:
        self.transport = StringTransport()
        self.server = RemotingProtocol(Clock(), echo_table())
        self.server.makeConnection(self.transport)

    def request(self, opaque: int, body: bytes = b"") -> bytes:
        cmd = RemotingCommand.request(ECHO, {"n": str(opaque)}, body)
        cmd.opaque = opaque
        return encode_command(cmd)

    def warnings(self, events: list) -> list:
        return [e for e in events if e.get("log_level") is not None and e["log_level"].name in ("warn", "error")]

    def test_good_frames_then_garbage_in_one_read(self) -> None:
        """
        Both requests are answered, then the connection closes (not aborted: the answers
        leave first), one log line.
        """
        with capturedLogs() as events:
            self.server.dataReceived(self.request(1) + self.request(2) + b"\x7f\xff\xff\xff garbage")
            self.server.dataReceived(self.request(3))  # after the bad bytes: not read
        answers = FrameDecoder().feed(self.transport.value())
        self.assertEqual([(a.opaque, a.remark, a.is_response) for a in answers], [(1, "echo", True), (2, "echo", True)])
        self.assertTrue(self.transport.disconnecting)
        self.assertFalse(self.transport.disconnected)
        [line] = self.warnings(events)
        self.assertIn("closing connection from", line["log_format"])
        self.assertIn("exceeds the maximum", str(line["error"]))

    def test_garbage_alone_aborts(self) -> None:
        """With nothing to answer the connection is aborted at once, as before."""
        with capturedLogs() as events:
            self.server.dataReceived(b"\x7f\xff\xff\xff")
        self.assertEqual(self.transport.value(), b"")
        self.assertTrue(self.transport.disconnected)
        self.assertEqual(len(self.warnings(events)), 1)

    def test_garbage_after_a_deferred_answer_aborts(self) -> None:
        """A processor still working when the bad bytes arrive answers nobody: the connection is gone."""
        held: Deferred = Deferred()
        self.server.processors = ProcessorTable({1: Scripted(lambda ctx, r: held)})
        self.server.dataReceived(encode_command(RemotingCommand.request(1)) + b"\xff\xff\xff\xff")
        self.assertTrue(self.transport.disconnected)
        self.server.connectionLost(None)
        held.callback(RemotingCommand(code=0))
        self.assertEqual(self.transport.value(), b"")

    def test_unencodable_response_closes(self) -> None:
        """An answer larger than a frame is not sent; the connection closes so the peer is not left waiting."""
        self.server.processors = ProcessorTable({1: Scripted(lambda ctx, r: r.make_response(body=b"x" * 64))})
        self.server._max_frame_length = 64  # the answer is bigger than a frame may be
        with capturedLogs() as events:
            self.server.dataReceived(encode_command(RemotingCommand.request(1)))
        self.assertEqual(self.transport.value(), b"")
        self.assertTrue(self.transport.disconnecting)
        [line] = self.warnings(events)
        self.assertIn("cannot encode response to code {code}, closing connection", line["log_format"])

    def test_unencodable_deferred_response_closes(self) -> None:
        """The same for an answer that comes later."""
        held: Deferred = Deferred()
        self.server.processors = ProcessorTable({1: Scripted(lambda ctx, r: held)})
        self.server.dataReceived(encode_command(RemotingCommand.request(1)))
        self.assertFalse(self.transport.disconnecting)
        with capturedLogs():
            held.callback(RemotingCommand(code=0, ext_fields={"k": "v" * (1 << 24)}))
        self.assertEqual(self.transport.value(), b"")
        self.assertTrue(self.transport.disconnecting)


class _Socket(ImmediateWrite, FileDescriptor):
    """Our server transport on a socket that accepts everything: what reaches writeSomeData was sent."""

    def __init__(self, reactor: MemoryReactor) -> None:
        super().__init__(reactor)
        self.sent: list[bytes] = []
        self.connected = 1

    def writeSomeData(self, data: bytes) -> int:
        self.sent.append(bytes(data))
        return len(data)

    def getPeer(self) -> IPv4Address:
        return IPv4Address("TCP", "127.0.0.1", 40000)

    def getHost(self) -> IPv4Address:
        return IPv4Address("TCP", "127.0.0.1", 10911)


class WriteNowTests(SynchronousTestCase):
    """Responses leave in the reactor turn that read their requests."""

    def setUp(self) -> None:
        self.reactor = MemoryReactor()
        self.socket = _Socket(self.reactor)
        self.clock = Clock()
        self.server = RemotingProtocol(self.clock, echo_table())
        self.server.makeConnection(self.socket)

    def _held_requests(self, n: int) -> list[Deferred]:
        """*n* requests read in one go, each answered later by firing its Deferred."""
        held: list[Deferred] = [Deferred() for _ in range(n)]
        self.server.processors = ProcessorTable({1: Scripted(lambda ctx, r: held[int(r.ext_fields["i"])])})
        requests = [RemotingCommand.request(1, {"i": str(i)}) for i in range(n)]
        self.server.dataReceived(b"".join(encode_command(r) for r in requests))
        self.assertEqual(self.socket.sent, [])
        return held

    def test_late_answers_flushed_together(self) -> None:
        """Answers fired after their read (a slave's ack) leave in one send when flush_late_answers runs."""
        held = self._held_requests(3)
        for d in held:
            d.callback(RemotingCommand(code=0))
        self.assertEqual(self.socket.sent, [])  # buffered: the firing side decides when
        flush_late_answers()
        self.assertEqual(len(self.socket.sent), 1)
        self.assertEqual(len(FrameDecoder().feed(self.socket.sent[0])), 3)
        self.assertNotIn(self.socket, self.reactor.getWriters())

    def test_late_answers_flushed_next_turn(self) -> None:
        """Without a flush_late_answers call, the clock's next turn sends them."""
        held = self._held_requests(2)
        for d in held:
            d.callback(RemotingCommand(code=0))
        self.assertEqual(self.socket.sent, [])
        self.clock.advance(0)
        self.assertEqual(len(self.socket.sent), 1)
        flush_late_answers()  # nothing left: no second send
        self.assertEqual(len(self.socket.sent), 1)

    def test_answered_in_the_same_turn(self) -> None:
        requests = [RemotingCommand.request(ECHO, {"n": str(i)}) for i in range(3)]
        for i, r in enumerate(requests):
            r.opaque = i
        self.server.dataReceived(b"".join(encode_command(r) for r in requests))
        # one send for the three answers, and no writable-event registration left behind
        self.assertEqual(len(self.socket.sent), 1)
        self.assertNotIn(self.socket, self.reactor.getWriters())
        self.assertEqual(self.socket.sent[0].count(b"echo"), 3)

    def test_oneway_sends_nothing(self) -> None:
        self.server.dataReceived(encode_command(RemotingCommand(code=ONEWAY_SINK, flag=2)))
        self.assertEqual(self.socket.sent, [])

    def test_not_through_a_wrapper(self) -> None:
        """Behind a TLS layer (a wrapper), the TLS mode protocol flushes once per read instead."""
        wrapper = ProtocolWrapper(WrappingFactory(Factory()), RemotingProtocol(Clock(), echo_table()))
        wrapper.makeConnection(_Socket(self.reactor))
        self.assertIsNone(wrapper.wrappedProtocol._flush_now)

    def test_closing_socket_left_to_the_reactor(self) -> None:
        """A socket asked to close keeps its data for the reactor's doWrite, which closes it after."""
        self.socket.disconnecting = True
        self.server.dataReceived(encode_command(RemotingCommand.request(ECHO)))
        self.assertEqual(self.socket.sent, [])
        self.assertIn(self.socket, self.reactor.getWriters())


class _TwoWrites(Protocol):
    """Stands in for the TLS layer: two records read, two ciphertext writes."""

    def dataReceived(self, data: bytes) -> None:
        self.transport.write(b"record-1;")
        self.transport.write(b"record-2;")


class TlsModeWriteNowTests(SynchronousTestCase):
    def test_once_per_read(self) -> None:
        """In TLS mode the TLS mode protocol sends everything one read produced in one go."""
        reactor = MemoryReactor()
        sock = _Socket(reactor)
        factory = TlsModeFactory(Factory.forProtocol(Protocol), TlsMode.PERMISSIVE, None, Clock())
        factory.tls_factory = Factory.forProtocol(_TwoWrites)
        proto = factory.buildProtocol(None)
        proto.makeConnection(sock)
        proto.dataReceived(b"\x16\x03\x01 a TLS hello")
        self.assertEqual(sock.sent, [b"record-1;record-2;"])
        self.assertNotIn(sock, reactor.getWriters())
