"""TLS modes, mutual TLS, host names and certificate reload, over real loopback sockets."""

from __future__ import annotations

import datetime
import os
import socket
import ssl
import tempfile

from cryptography import x509
from twisted.internet import defer, threads
from twisted.internet.endpoints import TCP4ServerEndpoint
from twisted.logger import capturedLogs
from twisted.trial.unittest import TestCase

from rocketmq_tx.blocking import BlockingRemotingClient
from rocketmq_tx.certs import issue, make_ca, write_pki
from rocketmq_tx.config import ConfigError
from rocketmq_tx.net.client import RemotingClient
from rocketmq_tx.net.server import RemotingServerFactory
from rocketmq_tx.net.tls import ReloadableServerTLS, TlsModeFactory
from rocketmq_tx.net.tls.context import _load_cert_chain
from rocketmq_tx.remoting import RemotingCommand, RemotingConnectError
from rocketmq_tx.testing.echo import ECHO, echo_table
from rocketmq_tx.tlsconfig import TlsSettings, load_pem_material


class TlsServerTests(TestCase):
    """One echo server per test, configured by the test."""

    def setUp(self) -> None:
        self.dir = self.mktemp()
        self.pki = write_pki(self.dir)
        self.clients: list[RemotingClient] = []

    def path(self, name: str) -> str:
        return os.path.join(self.dir, name)

    def server_settings(self, **extra: str) -> TlsSettings:
        return TlsSettings.from_sources({
            "tls.config.file": "", "tls.test.mode.enable": "false",
            "tls.server.certPath": self.path("server.pem"), "tls.server.keyPath": self.path("server.key"),
            "tls.server.trustCertPath": self.path("ca.pem"), **extra})

    def client_settings(self, cert: bool = False, **extra: str) -> TlsSettings:
        values = {"tls.config.file": "", "tls.test.mode.enable": "false", "tls.client.authServer": "true",
                  "tls.client.trustCertPath": self.path("ca.pem"), **extra}
        if cert:
            values.update({"tls.client.certPath": self.path("client.pem"),
                           "tls.client.keyPath": self.path("client.key")})
        return TlsSettings.from_sources(values)

    def stranger_settings(self) -> TlsSettings:
        """A client whose certificate comes from another CA."""
        other = self.mktemp()
        write_pki(other)
        return self.client_settings(**{"tls.client.certPath": os.path.join(other, "client.pem"),
                                       "tls.client.keyPath": os.path.join(other, "client.key")})

    @defer.inlineCallbacks
    def serve(self, mode: str, settings: TlsSettings | None = None, handshake_timeout: float = 10.0):  # type: ignore[no-untyped-def]
        from twisted.internet import reactor

        self.tls = ReloadableServerTLS(settings or self.server_settings()) if mode != "disabled" else None
        app = RemotingServerFactory(echo_table(), reactor)
        factory = TlsModeFactory(app, mode, self.tls, reactor, handshake_timeout)
        port = yield TCP4ServerEndpoint(reactor, 0, interface="127.0.0.1").listen(factory)
        self.addr = f"127.0.0.1:{port.getHost().port}"

        @defer.inlineCallbacks
        def cleanup():  # type: ignore[no-untyped-def]
            for client in self.clients:
                yield client.close()
            closing = [p.on_close for p in app.connections]
            for proto in list(app.connections):
                proto.transport.loseConnection()
            yield defer.gatherResults(closing)
            yield port.stopListening()

        self.addCleanup(cleanup)

    def client(self, tls: TlsSettings | None) -> RemotingClient:
        from twisted.internet import reactor

        client = RemotingClient(reactor, tls=tls)
        self.clients.append(client)
        return client

    def echo(self, client: RemotingClient, body: bytes = b"hi") -> defer.Deferred:
        return client.invoke(self.addr, RemotingCommand.request(ECHO, body=body), timeout=5)

    @defer.inlineCallbacks
    def test_permissive_serves_both(self):  # type: ignore[no-untyped-def]
        """TLS and plaintext on one port."""
        yield self.serve("permissive")
        self.assertEqual((yield self.echo(self.client(self.client_settings()))).body, b"hi")
        self.assertEqual((yield self.echo(self.client(None))).body, b"hi")

    @defer.inlineCallbacks
    def test_enforcing_refuses_plaintext(self):  # type: ignore[no-untyped-def]
        """Enforcing closes plaintext connections; TLS ones work."""
        yield self.serve("enforcing")
        with self.assertRaises(RemotingConnectError):
            yield self.echo(self.client(None))
        self.assertEqual((yield self.echo(self.client(self.client_settings()))).body, b"hi")
        self.flushLoggedErrors()

    @defer.inlineCallbacks
    def test_disabled_refuses_tls(self):  # type: ignore[no-untyped-def]
        """Disabled closes a TLS hello; plaintext works."""
        yield self.serve("disabled")
        with self.assertRaises(RemotingConnectError):
            yield self.echo(self.client(self.client_settings()))
        self.assertEqual((yield self.echo(self.client(None))).body, b"hi")
        self.flushLoggedErrors()

    @defer.inlineCallbacks
    def test_mutual_tls_required(self):  # type: ignore[no-untyped-def]
        """With require + authClient: no certificate, or one from another CA, is refused."""
        yield self.serve("enforcing", self.server_settings(**{"tls.server.need.client.auth": "require",
                                                              "tls.server.authClient": "true"}))
        with self.assertRaises(RemotingConnectError):
            yield self.echo(self.client(self.client_settings(cert=False)))
        stranger = self.stranger_settings()
        with self.assertRaises(RemotingConnectError):
            yield self.echo(self.client(stranger))
        self.assertEqual((yield self.echo(self.client(self.client_settings(cert=True)))).body, b"hi")
        self.flushLoggedErrors()

    @defer.inlineCallbacks
    def test_expired_certificates_refused(self):  # type: ignore[no-untyped-def]
        """An expired client certificate (mutual TLS) and an expired server certificate are refused;
        the server keeps serving good clients."""
        past = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=1)
        expired_client = issue(self.pki["ca"], "old client", [], client=True, not_after=past)
        expired_server = issue(self.pki["ca"], "old server", ["127.0.0.1"], not_after=past)
        for name, issued in (("old-client", expired_client), ("old-server", expired_server)):
            with open(self.path(name + ".pem"), "wb") as f:
                f.write(issued.cert_pem())
            with open(self.path(name + ".key"), "wb") as f:
                f.write(issued.key_pem(None))
        yield self.serve("enforcing", self.server_settings(**{"tls.server.need.client.auth": "require",
                                                              "tls.server.authClient": "true"}))
        old = self.client_settings(**{"tls.client.certPath": self.path("old-client.pem"),
                                      "tls.client.keyPath": self.path("old-client.key")})
        with self.assertRaises(RemotingConnectError):
            yield self.echo(self.client(old))
        self.assertEqual((yield self.echo(self.client(self.client_settings(cert=True)))).body, b"hi")
        # A client that checks the server refuses a server certificate past its date.
        yield self.serve("enforcing", self.server_settings(**{"tls.server.certPath": self.path("old-server.pem"),
                                                              "tls.server.keyPath": self.path("old-server.key")}))
        with self.assertRaises(RemotingConnectError):
            yield self.echo(self.client(self.client_settings()))
        self.flushLoggedErrors()

    @defer.inlineCallbacks
    def test_host_name_checked(self):  # type: ignore[no-untyped-def]
        """A certificate without the server's IP is refused unless host checks are off, as Java's."""
        ca = self.pki["ca"]
        wrong = issue(ca, "elsewhere", ["10.9.9.9"])
        with open(self.path("wrong.pem"), "wb") as f:
            f.write(wrong.cert_pem())
        with open(self.path("wrong.key"), "wb") as f:
            f.write(wrong.key_pem())
        yield self.serve("enforcing", self.server_settings(**{"tls.server.certPath": self.path("wrong.pem"),
                                                              "tls.server.keyPath": self.path("wrong.key")}))
        with self.assertRaises(RemotingConnectError):
            yield self.echo(self.client(self.client_settings()))
        relaxed = self.client_settings(**{"tls.client.verifyHostname": "false"})
        self.assertEqual((yield self.echo(self.client(relaxed))).body, b"hi")
        self.flushLoggedErrors()

    @defer.inlineCallbacks
    def test_reload(self):  # type: ignore[no-untyped-def]
        """
        A new pair serves new connections once both files changed; old connections keep
        going; a bad pair is refused.
        """
        yield self.serve("enforcing")
        first = self.client(self.client_settings())
        yield self.echo(first)
        old_serial = (yield first.connection(self.addr)).transport.getPeerCertificate().get_serial_number()
        self.assertEqual(old_serial, self.pki["server"].serial)
        renewed = issue(self.pki["ca"], "renewed", ["127.0.0.1"])
        with open(self.path("server.pem.tmp"), "wb") as f:
            f.write(renewed.cert_pem())
        os.replace(self.path("server.pem.tmp"), self.path("server.pem"))
        self.assertFalse(self.tls.check())  # the certificate alone: wait for the key (Java's rule)
        with open(self.path("server.key.tmp"), "wb") as f:
            f.write(renewed.key_pem())
        os.replace(self.path("server.key.tmp"), self.path("server.key"))
        self.assertTrue(self.tls.check())
        second = self.client(self.client_settings())
        yield self.echo(second)
        new_serial = (yield second.connection(self.addr)).transport.getPeerCertificate().get_serial_number()
        self.assertEqual(new_serial, renewed.serial)
        self.assertEqual((yield self.echo(first, b"still")).body, b"still")
        # A key that does not match its certificate is refused; the renewed pair stays.
        stray = issue(self.pki["ca"], "stray", ["127.0.0.1"])
        with open(self.path("server.key"), "wb") as f:
            f.write(stray.key_pem())
        with open(self.path("server.pem"), "wb") as f:
            f.write(make_ca().cert_pem())
        self.assertFalse(self.tls.check())
        third = self.client(self.client_settings())
        yield self.echo(third)
        self.assertEqual((yield third.connection(self.addr)).transport.getPeerCertificate().get_serial_number(),
                         renewed.serial)

    @defer.inlineCallbacks
    def test_stalled_handshake_and_garbage(self):  # type: ignore[no-untyped-def]
        """A hello that never completes and garbage after 0x16 are closed; the server keeps serving."""
        yield self.serve("permissive", handshake_timeout=0.3)
        host, port = self.addr.split(":")

        def until_closed(s: socket.socket) -> bytes:
            # The server may send a TLS alert first; what matters is that it hangs up.
            try:
                while True:
                    data = s.recv(100)
                    if not data or data[:1] != b"\x15":
                        return data
            except ConnectionResetError:
                return b""

        def stall_and_garbage() -> tuple[bytes, bytes]:
            with socket.create_connection((host, int(port)), timeout=10) as s:
                s.sendall(b"\x16\x03\x01")
                stalled = until_closed(s)
            with socket.create_connection((host, int(port)), timeout=10) as s:
                s.sendall(b"\x16" + os.urandom(300))
                garbage = until_closed(s)
            return stalled, garbage

        stalled, garbage = yield threads.deferToThread(stall_and_garbage)
        self.assertEqual((stalled, garbage), (b"", b""))
        self.assertEqual((yield self.echo(self.client(self.client_settings()))).body, b"hi")
        self.flushLoggedErrors()

    @defer.inlineCallbacks
    def test_blocking_client(self):  # type: ignore[no-untyped-def]
        """The blocking client speaks TLS too, with a client certificate."""
        yield self.serve("enforcing", self.server_settings(**{"tls.server.need.client.auth": "require",
                                                              "tls.server.authClient": "true"}))

        def call() -> bytes:
            with BlockingRemotingClient(tls=self.client_settings(cert=True)) as client:
                return client.invoke(self.addr, RemotingCommand.request(ECHO, body=b"blocking")).body

        self.assertEqual((yield threads.deferToThread(call)), b"blocking")

    @defer.inlineCallbacks
    def test_unverified_client_certificate(self):  # type: ignore[no-untyped-def]
        """require without authClient (Java's insecure trust manager): any certificate, but one is needed."""
        settings = self.server_settings(**{"tls.server.need.client.auth": "require"})
        yield self.serve("enforcing", settings)
        self.assertTrue(self.tls.uses_pyopenssl)  # the one configuration stdlib ssl cannot express
        with self.assertRaises(RemotingConnectError):
            yield self.echo(self.client(self.client_settings(cert=False)))
        stranger = self.stranger_settings()
        self.assertEqual((yield self.echo(self.client(stranger))).body, b"hi")
        self.flushLoggedErrors()

    @defer.inlineCallbacks
    def test_optional_client_certificate(self):  # type: ignore[no-untyped-def]
        """optional + authClient: no certificate is fine, a trusted one too, a stranger's is refused."""
        yield self.serve("enforcing", self.server_settings(**{"tls.server.need.client.auth": "optional",
                                                              "tls.server.authClient": "true"}))
        self.assertFalse(self.tls.uses_pyopenssl)
        self.assertEqual((yield self.echo(self.client(self.client_settings(cert=False)))).body, b"hi")
        self.assertEqual((yield self.echo(self.client(self.client_settings(cert=True)))).body, b"hi")
        stranger = self.stranger_settings()
        with self.assertRaises(RemotingConnectError):
            yield self.echo(self.client(stranger))
        self.flushLoggedErrors()

    @defer.inlineCallbacks
    def test_large_frames_both_ways(self):  # type: ignore[no-untyped-def]
        """Frames over many TLS records and socket reads (records split across reads) arrive whole, in order."""
        yield self.serve("enforcing")
        client = self.client(self.client_settings())
        bodies = [os.urandom(n) for n in (1, 16383, 16384, 16385, 700_000)]
        answers = yield defer.gatherResults([self.echo(client, body) for body in bodies])
        self.assertEqual([a.body for a in answers], bodies)

    @defer.inlineCallbacks
    def test_failed_handshake_logs_one_line(self):  # type: ignore[no-untyped-def]
        """A client hello the server cannot accept closes that connection with one log line naming the peer."""
        yield self.serve("enforcing")
        host, port = self.addr.split(":")

        def bad_hello() -> bytes:
            # A well-framed TLS record whose ClientHello is nonsense: a handshake failure.
            with socket.create_connection((host, int(port)), timeout=10) as s:
                s.sendall(bytes.fromhex("1603010009" "010000050303000000"))
                try:
                    return s.recv(100)
                except ConnectionResetError:
                    return b""

        with capturedLogs() as events:
            answer = yield threads.deferToThread(bad_hello)
            yield self.echo(self.client(self.client_settings()))  # the server still serves
        self.assertEqual(answer[:1], b"\x15")  # a TLS alert, then the close
        failed = [e for e in events if "TLS with" in e.get("log_format", "")]
        self.assertEqual(len(failed), 1, events)
        self.assertEqual(failed[0]["peer"].split(":")[0], "127.0.0.1")
        self.flushLoggedErrors()

    def test_key_loads_without_memfd(self) -> None:
        """Where there is no memfd, the pair goes through a temporary file, removed at once; the
        server then presents that certificate."""
        material = load_pem_material(self.path("server.pem"), self.path("server.key"), "", "")
        before = set(os.listdir(tempfile.gettempdir()))
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        _load_cert_chain(context, material, memfd=False)
        self.assertEqual(set(os.listdir(tempfile.gettempdir())) - before, set())
        server_in, server_out, client_in, client_out = (ssl.MemoryBIO() for _ in range(4))
        server = context.wrap_bio(server_in, server_out, server_side=True)
        client_context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        client_context.check_hostname = False
        client_context.verify_mode = ssl.CERT_NONE
        client = client_context.wrap_bio(client_in, client_out)
        for _ in range(5):
            for side in (client, server):
                try:
                    side.do_handshake()
                except ssl.SSLWantReadError:
                    pass
            server_in.write(client_out.read())
            client_in.write(server_out.read())
        presented = x509.load_der_x509_certificate(client.getpeercert(binary_form=True))
        self.assertEqual(presented.serial_number, self.pki["server"].serial)

    def test_bad_initial_material(self) -> None:
        """A server whose key does not match its certificate refuses to start."""
        stray = issue(self.pki["ca"], "stray", [])
        with open(self.path("server.key"), "wb") as f:
            f.write(stray.key_pem())
        self.assertRaises(ConfigError, ReloadableServerTLS, self.server_settings())

    def test_encrypted_key(self) -> None:
        """An encrypted PKCS#8 key loads with tls.server.keyPassword and not without."""
        write_pki(self.dir, password="s3cret", ca=self.pki["ca"])
        ReloadableServerTLS(self.server_settings(**{"tls.server.keyPassword": "s3cret"}))
        self.assertRaises(ConfigError, ReloadableServerTLS, self.server_settings())
