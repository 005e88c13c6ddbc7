"""
TLS at our broker with the official Java 4.9.x clients (issue 7's broker-side proofs):

* enforcing mode, Java's test mode (self-signed, no verification): the official producer
  and push consumer with ``-Dtls.enable=true`` send and consume through our name server
  and broker; a plaintext client is refused at the broker port;
* permissive mode: TLS and plaintext Java clients both work on the same ports;
* mutual TLS (``need.client.auth=require``, our own CA): a Java client with a client
  certificate works, and a client without one (or with one from another CA) is refused;
* certificate rotation by replacing the files while a Java consumer is connected.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import socket
import ssl
import time

import javaharness as jh
import pytest
import rocketmq_java as rj
import txharness as txh
from cryptography import x509

from rocketmq_tx.blocking import BlockingRemotingClient
from rocketmq_tx.certs import write_pki
from rocketmq_tx.remoting import RemotingCommand, RemotingConnectError, RequestCode
from rocketmq_tx.tlsconfig import TlsSettings

pytestmark = pytest.mark.compat

JAVA_TEST_MODE = ("-Dtls.enable=true", "-Dtls.test.mode.enable=true", "-Dtls.config.file=/nonexistent")


def standalone(tmp, *settings: str) -> txh.TxProcess:
    args = ["--set", "namesrvPort=0", "--set", "namesrvBindAddress=127.0.0.1", "--set", "listenPort=0",
            "--set", "bindAddress=127.0.0.1", "--set", "brokerIP1=127.0.0.1", "--set", "brokerName=broker-tls",
            "--set", f"storePathRootDir={tmp}", "--set", "tls.config.file=", "--set", "fastListenPortEnable=false"]
    for item in settings:
        args += ["--set", item]
    return txh.start_twistd("rocketmq-standalone", [*args, *txh.small_store_args()])


def produce_consume(classpath: str, proc: txh.TxProcess, topic: str, jvm_tls: tuple[str, ...], count: int = 20,
                    timeout: float = 60) -> dict:
    lines = jh.run_java(classpath, "ProduceConsume", [f"127.0.0.1:{proc.namesrv_port}", topic, str(count),
                                                      str(int(timeout))],
                        timeout=timeout + 60, jvm_args=(*jh.DEFAULT_JVM_ARGS, *jvm_tls))
    return json.loads(lines[-1])


def plaintext_refused(addr: str) -> None:
    with BlockingRemotingClient() as client:
        with pytest.raises(RemotingConnectError):
            client.invoke(addr, RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO), timeout=5)


def test_java_clients_enforcing(java_classpath_4, tmp_path):
    """Enforcing: Java TLS clients produce and consume; plaintext is refused at the broker."""
    proc = standalone(tmp_path / "store", "tls.server.mode=enforcing")
    try:
        topic = f"TlsTopic{time.time_ns() % 100000}"
        result = produce_consume(java_classpath_4, proc, topic, JAVA_TEST_MODE)
        assert result["send_ok"] == 20 and result["unique"] == 20 and result["missing"] == [], result
        assert result["brokers"] == ["broker-tls"], result
        seen = len(proc.lines)
        plaintext_refused(f"127.0.0.1:{proc.port}")
        proc.wait_for("plaintext while TLS is enforced", timeout=10, start=seen)
        # The official tools without TLS get nowhere; with TLS they see the broker's topic.
        home = rj.JavaHome("tls-admin")
        ns = f"127.0.0.1:{proc.namesrv_port}"
        out = rj.mqadmin(java_classpath_4, ["topicRoute", "-n", ns, "-t", topic], home,
                         props={"tls.enable": "true", "tls.test.mode.enable": "true",
                                "tls.config.file": "/nonexistent"})
        assert any("broker-tls" in line for line in out), out
        try:
            plain = rj.mqadmin(java_classpath_4, ["topicRoute", "-n", ns, "-t", topic], home, timeout=60,
                               props={"tls.enable": "false"})
        except RuntimeError as e:  # mqadmin reports the failure; its exit status varies by version
            plain = str(e).splitlines()
        assert not any("broker-tls" in line for line in plain), plain
    finally:
        proc.stop()


def test_java_clients_permissive(java_classpath_4, tmp_path):
    """Permissive: the same ports serve a TLS Java client and a plaintext one."""
    proc = standalone(tmp_path / "store", "tls.server.mode=permissive")
    try:
        topic = f"TlsMixed{time.time_ns() % 100000}"
        # Both clients at once (their own groups and topics): each run is mostly a wait for its consumer.
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            tls_run = pool.submit(produce_consume, java_classpath_4, proc, topic, JAVA_TEST_MODE)
            plain_run = pool.submit(produce_consume, java_classpath_4, proc, topic + "p", ("-Dtls.enable=false",))
        with_tls, plain = tls_run.result(), plain_run.result()
        for result in (with_tls, plain):
            assert result["send_ok"] == 20 and result["unique"] == 20 and result["missing"] == [], result
    finally:
        proc.stop()


def test_java_clients_mutual_tls(java_classpath_4, tmp_path):
    """need.client.auth=require: only a client certificate from our CA gets through."""
    pki = tmp_path / "pki"
    write_pki(pki, hosts=["127.0.0.1", "localhost"])
    other = tmp_path / "other"
    write_pki(other, hosts=["127.0.0.1"])
    proc = standalone(
        tmp_path / "store", "tls.server.mode=enforcing", "tls.server.need.client.auth=require",
        "tls.test.mode.enable=false", f"tls.server.keyPath={pki}/server.key", f"tls.server.certPath={pki}/server.pem",
        f"tls.server.trustCertPath={pki}/ca.pem", "tls.server.authClient=true",
        # The broker's own registration with the in-process name server presents these.
        f"tls.client.keyPath={pki}/client.key", f"tls.client.certPath={pki}/client.pem",
        f"tls.client.trustCertPath={pki}/ca.pem", "tls.client.authServer=true")
    try:
        java_mtls = ("-Dtls.enable=true", "-Dtls.test.mode.enable=false", "-Dtls.config.file=/nonexistent",
                     f"-Dtls.client.keyPath={pki}/client.key", f"-Dtls.client.certPath={pki}/client.pem",
                     f"-Dtls.client.trustCertPath={pki}/ca.pem", "-Dtls.client.authServer=true")
        result = produce_consume(java_classpath_4, proc, f"MtlsTopic{time.time_ns() % 100000}", java_mtls)
        assert result["send_ok"] == 20 and result["unique"] == 20 and result["missing"] == [], result
        broker = f"127.0.0.1:{proc.port}"
        no_cert = TlsSettings.from_sources({"tls.config.file": "", "tls.enable": "true",
                                            "tls.test.mode.enable": "true"})
        wrong_ca = TlsSettings.from_sources({
            "tls.config.file": "", "tls.enable": "true", "tls.test.mode.enable": "false",
            "tls.client.keyPath": f"{other}/client.key", "tls.client.certPath": f"{other}/client.pem",
            "tls.client.authServer": "false"})
        for tls in (no_cert, wrong_ca):
            with BlockingRemotingClient(tls=tls) as client:
                with pytest.raises(RemotingConnectError):
                    client.invoke(broker, RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO), timeout=5)
    finally:
        proc.stop()


def presented_serial(addr: tuple[str, int]) -> int:
    """The serial number of the certificate a new TLS connection to *addr* is shown."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with socket.create_connection(addr, timeout=10) as sock, context.wrap_socket(sock) as tls:
        der = tls.getpeercert(binary_form=True)
    return x509.load_der_x509_certificate(der).serial_number


def _replace(path, data: bytes) -> None:
    # An atomic replace, as a certificate manager does; the watch must see it.
    tmp = path.with_name(path.name + ".new")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _produce(classpath: str, ns: str, topic: str, count: int, jvm_tls: tuple[str, ...]) -> list[dict]:
    lines = jh.run_java(classpath, "ClientPeer", ["produce", ns, topic, str(count)], timeout=120,
                        jvm_args=(*jh.DEFAULT_JVM_ARGS, *jvm_tls))
    return [json.loads(line) for line in lines if line.startswith("{")]


def test_certificate_rotation_with_java_consumer(java_classpath_4, tmp_path):
    """
    The server certificate is replaced (another CA) while a Java consumer stays connected:
    the consumer keeps receiving, new connections are shown the new certificate (by serial)
    and a Java client that trusts only the new CA connects; then a broken replacement is
    refused and the new certificate stays in service.
    """
    old, new = tmp_path / "old", tmp_path / "new"
    old_serial = write_pki(old, hosts=["127.0.0.1", "localhost"])["server"].serial
    new_serial = write_pki(new, hosts=["127.0.0.1", "localhost"])["server"].serial
    live = tmp_path / "live"
    live.mkdir()
    for name in ("server.pem", "server.key"):
        (live / name).write_bytes((old / name).read_bytes())
    both = tmp_path / "both-ca.pem"
    both.write_bytes((old / "ca.pem").read_bytes() + (new / "ca.pem").read_bytes())
    proc = standalone(
        tmp_path / "store", "tls.server.mode=enforcing", "tls.test.mode.enable=false",
        f"tls.server.keyPath={live}/server.key", f"tls.server.certPath={live}/server.pem",
        f"tls.client.trustCertPath={both}", "tls.client.authServer=true", "tls.watch.interval=200")

    def java_tls(trust) -> tuple[str, ...]:
        return ("-Dtls.enable=true", "-Dtls.test.mode.enable=false", "-Dtls.config.file=/nonexistent",
                f"-Dtls.client.trustCertPath={trust}", "-Dtls.client.authServer=true")

    ns = f"127.0.0.1:{proc.namesrv_port}"
    topic = f"RotateTopic{time.time_ns() % 100000}"
    consumer = None
    try:
        sent = _produce(java_classpath_4, ns, topic, 10, java_tls(both))  # creates the topic
        assert [r["status"] for r in sent if "status" in r] == ["SEND_OK"] * 10, sent
        consumer = jh.start_java(java_classpath_4, "ClientPeer",
                                 ["consume", ns, topic, f"RotateGroup{time.time_ns() % 100000}", "20", "150"],
                                 jvm_args=(*jh.DEFAULT_JVM_ARGS, *java_tls(both)))
        # ClientPeer's bodies repeat across runs ("java-<i>"): count distinct message ids.
        received: set[str] = set()

        def receive(n: int, timeout: float = 90.0) -> None:
            deadline = time.monotonic() + timeout
            while len(received) < n:
                try:
                    line = consumer.readline(max(0.1, deadline - time.monotonic()))
                except TimeoutError:
                    line = None
                assert line is not None and time.monotonic() < deadline, (
                    len(received), consumer.stderr_path.read_text(errors="replace")[-4000:])
                if line.startswith("{") and "msgId" in line:
                    received.add(json.loads(line)["msgId"])

        receive(10)
        broker = ("127.0.0.1", proc.port)
        assert presented_serial(broker) == old_serial
        seen = len(proc.lines)
        for name in ("server.key", "server.pem"):
            _replace(live / name, (new / name).read_bytes())
        proc.wait_for("TLS context reloaded", timeout=20, start=seen)
        assert presented_serial(broker) == new_serial
        # A client that trusts only the new CA can connect now: new connections get the new pair.
        sent = _produce(java_classpath_4, ns, topic + "New", 5, java_tls(new / "ca.pem"))
        assert [r["status"] for r in sent if "status" in r] == ["SEND_OK"] * 5, sent
        # The consumer, connected before the rotation, keeps consuming.
        sent = _produce(java_classpath_4, ns, topic, 10, java_tls(both))
        assert [r["status"] for r in sent if "status" in r] == ["SEND_OK"] * 10, sent
        receive(20)
        # A broken pair is refused with one log line; the last good certificate stays.
        seen = len(proc.lines)
        _replace(live / "server.key", b"not a key")
        _replace(live / "server.pem", b"not a certificate")
        proc.wait_for("TLS reload refused", timeout=20, start=seen)
        assert presented_serial(broker) == new_serial
    finally:
        if consumer is not None:
            consumer.stop()
        proc.stop()
