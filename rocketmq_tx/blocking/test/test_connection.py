"""Tests for the blocking client against a scripted fake server on a socket pair."""

from __future__ import annotations

import pickle
import socket
import threading
from collections.abc import Callable

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.blocking import BlockingConnection, BlockingRemotingClient
from rocketmq_tx.remoting import (
    FrameDecoder,
    RemotingCommand,
    RemotingConnectError,
    RemotingTimeoutError,
    ResponseCode,
    SerializeType,
    encode_command,
)

Script = Callable[[socket.socket, RemotingCommand], None]


class FakeServer:
    """Reads frames on one end of a socket pair and runs *script* for each request."""

    def __init__(self, script: Script) -> None:
        self.client_sock, self.server_sock = socket.socketpair()
        self.script = script
        self.seen: list[RemotingCommand] = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        decoder = FrameDecoder()
        while True:
            try:
                data = self.server_sock.recv(65536)
            except OSError:
                return
            if not data:
                return
            for cmd in decoder.feed(data):
                self.seen.append(cmd)
                try:
                    self.script(self.server_sock, cmd)
                except OSError:
                    return  # the client hung up while the script was answering

    def factory(self, host: str, port: int, timeout: float) -> socket.socket:
        return self.client_sock

    def close(self) -> None:
        self.server_sock.close()
        self.thread.join(5)


def echo(sock: socket.socket, cmd: RemotingCommand) -> None:
    if not cmd.is_response and not cmd.is_oneway:
        sock.sendall(encode_command(cmd.make_response(remark="echo", ext_fields=cmd.ext_fields, body=cmd.body)))


class BlockingConnectionTests(SynchronousTestCase):
    """Request/response matching, timeouts, server requests and failures."""

    def connection(self, script: Script, **kwargs) -> tuple[BlockingConnection, FakeServer]:  # type: ignore[no-untyped-def]
        server = FakeServer(script)
        conn = BlockingConnection("127.0.0.1:9876", socket_factory=server.factory, **kwargs)
        self.addCleanup(server.close)
        self.addCleanup(conn.close)
        return conn, server

    def test_echo(self) -> None:
        """A request gets its response, in either serialization, large bodies included."""
        conn, server = self.connection(echo)
        for kind in SerializeType:
            body = b"z" * 3_000_000
            response = conn.invoke(RemotingCommand.request(1, {"a": "b"}, body, serialize_type=kind), timeout=10)
            self.assertEqual((response.remark, response.ext_fields, response.body), ("echo", {"a": "b"}, body))

    def test_late_response_dropped(self) -> None:
        """After a timeout, the late response to that request is skipped, not returned to the next one."""
        held: list[RemotingCommand] = []

        def slow_first(sock: socket.socket, cmd: RemotingCommand) -> None:
            if cmd.code == 1:
                held.append(cmd)
                return
            for old in held:  # answer the timed-out request first, then this one
                sock.sendall(encode_command(old.make_response(remark="late")))
            held.clear()
            sock.sendall(encode_command(cmd.make_response(remark="current")))

        conn, server = self.connection(slow_first)
        self.assertRaises(RemotingTimeoutError, conn.invoke, RemotingCommand.request(1), 0.2)
        self.assertEqual(conn.invoke(RemotingCommand.request(2), 3).remark, "current")

    def test_server_request_handled(self) -> None:
        """A request from the server while we wait goes to the registered handler."""
        answers: list[RemotingCommand] = []

        def ask_first(sock: socket.socket, cmd: RemotingCommand) -> None:
            if cmd.is_response:
                answers.append(cmd)
                sock.sendall(encode_command(RemotingCommand(code=0, opaque=pending[0].opaque, flag=1, remark="done")))
                return
            pending[:] = [cmd]
            sock.sendall(encode_command(RemotingCommand(code=40, opaque=1000, ext_fields={"consumerGroup": "g"})))

        pending: list[RemotingCommand] = []
        conn, server = self.connection(ask_first, handlers={40: lambda r: r.make_response(remark="notified")})
        self.assertEqual(conn.invoke(RemotingCommand.request(5), 3).remark, "done")
        self.assertEqual([(a.opaque, a.code, a.remark) for a in answers],
                         [(1000, 0, "notified")])

    def test_unhandled_server_request(self) -> None:
        """Without a handler the server's request gets REQUEST_CODE_NOT_SUPPORTED."""
        replies: list[RemotingCommand] = []

        def ask(sock: socket.socket, cmd: RemotingCommand) -> None:
            if cmd.is_response:
                replies.append(cmd)
                sock.sendall(encode_command(RemotingCommand(code=0, opaque=first[0].opaque, flag=1)))
            else:
                first.append(cmd)
                sock.sendall(encode_command(RemotingCommand(code=77, opaque=9)))

        first: list[RemotingCommand] = []
        conn, server = self.connection(ask)
        conn.invoke(RemotingCommand.request(5), 3)
        self.assertEqual((replies[0].code, replies[0].remark),
                         (ResponseCode.REQUEST_CODE_NOT_SUPPORTED, " request type 77 not supported"))

    def test_oneway(self) -> None:
        """Oneway requests carry the flag and read nothing back."""
        conn, server = self.connection(echo)
        conn.invoke_oneway(RemotingCommand.request(9))
        conn.invoke(RemotingCommand.request(1), 3)
        self.assertTrue(server.seen[0].is_oneway)

    def test_peer_closes(self) -> None:
        """The server going away is a RemotingConnectError, and the socket is dropped."""
        conn, server = self.connection(lambda sock, cmd: sock.close())
        self.assertRaises(RemotingConnectError, conn.invoke, RemotingCommand.request(1), 3)
        self.assertFalse(conn.is_open)

    def test_garbage_from_server(self) -> None:
        """A malformed frame from the server closes the connection with a clear error."""
        conn, server = self.connection(lambda sock, cmd: sock.sendall(b"\x7f\xff\xff\xffjunk"))
        e = self.assertRaises(RemotingConnectError, conn.invoke, RemotingCommand.request(1), 3)
        self.assertIn("protocol error", str(e))

    def test_response_then_garbage(self) -> None:
        """A response followed by garbage in one read is returned; the broken stream is closed."""
        def answer_then_junk(sock: socket.socket, cmd: RemotingCommand) -> None:
            sock.sendall(encode_command(cmd.make_response(remark="ok")) + b"\x7f\xff\xff\xffjunk")

        conn, server = self.connection(answer_then_junk)
        self.assertEqual(conn.invoke(RemotingCommand.request(1), 3).remark, "ok")
        self.assertFalse(conn.is_open)

    def test_other_frames_then_garbage(self) -> None:
        """Without our response before the garbage, the error comes at once, not after the timeout."""
        def late_then_junk(sock: socket.socket, cmd: RemotingCommand) -> None:
            late = RemotingCommand(code=0, opaque=cmd.opaque + 1000, flag=1)
            sock.sendall(encode_command(late) + b"\x7f\xff\xff\xffjunk")

        conn, server = self.connection(late_then_junk)
        e = self.assertRaises(RemotingConnectError, conn.invoke, RemotingCommand.request(1), 30)
        self.assertIn("protocol error", str(e))
        self.assertFalse(conn.is_open)

    def test_connect_refused(self) -> None:
        """Nothing listening: RemotingConnectError."""
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        probe.close()
        with BlockingConnection(f"127.0.0.1:{port}", connect_timeout=1) as conn:
            self.assertRaises(RemotingConnectError, conn.invoke, RemotingCommand.request(1), 1)


class BlockingClientTests(SynchronousTestCase):
    """The per-address pool."""

    def test_pickles_without_connections(self) -> None:
        """The client's configuration pickles (PySpark ships it); connections do not travel."""
        client = BlockingRemotingClient(connect_timeout=1.5)
        client.connection("127.0.0.1:1")
        copy = pickle.loads(pickle.dumps(client))
        self.assertEqual(copy.connect_timeout, 1.5)
        self.assertEqual(copy._connections, {})

    def test_pool(self) -> None:
        """One connection object per address."""
        client = BlockingRemotingClient()
        self.assertIs(client.connection("a:1"), client.connection("a:1"))
        self.assertIsNot(client.connection("a:1"), client.connection("a:2"))
        client.close()
