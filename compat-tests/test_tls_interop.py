"""
TLS with the official Java peers (4.9.x; the broker-side proofs come with the broker):

* a Java broker with ``-Dtls.enable=true`` registers with our name server in enforcing
  mode, and mqadmin over TLS sees it; plaintext mqadmin is refused;
* our Twisted and blocking clients query a Java name server in enforcing mode, and are
  refused in plaintext;
* our blocking producer and pull client send and read through a Java name server and
  broker that both enforce TLS.
Both sides run Java's test mode (self-signed certificates, no verification), the
configuration Java ships with.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import javaharness as jh
import pytest
import rocketmq_java as rj
import txharness as txh

from rocketmq_tx.blocking import BlockingRemotingClient
from rocketmq_tx.blocking.client import BlockingProducer, BlockingPullClient
from rocketmq_tx.common import fastjson
from rocketmq_tx.common.message import Message
from rocketmq_tx.remoting import RemotingCommand, RemotingConnectError, RemotingError, RequestCode
from rocketmq_tx.tlsconfig import TlsSettings

pytestmark = pytest.mark.compat

JAVA_TLS_CLIENT = {"tls.enable": "true", "tls.test.mode.enable": "true", "tls.config.file": "/nonexistent"}


@pytest.fixture(scope="module")
def tls_namesrv(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("tls-ns")
    proc = txh.start_twistd("rocketmq-namesrv", [
        "--set", "listenPort=0", "--set", "bindAddress=127.0.0.1", "--set", f"kvConfigPath={tmp}/kv.json",
        "--set", "tls.server.mode=enforcing", "--set", "tls.config.file="])
    try:
        yield f"127.0.0.1:{proc.port}", proc
    finally:
        proc.stop()


def test_java_broker_registers_over_tls(java_classpath_4, tls_namesrv):
    """A TLS broker registers with our enforcing name server; mqadmin needs TLS to see it."""
    addr, proc = tls_namesrv
    broker, _, home = rj.start_broker(java_classpath_4, addr, broker_name="broker-tls",
                                      props={**JAVA_TLS_CLIENT, "tls.server.mode": "enforcing"})
    try:
        out = rj.mqadmin(java_classpath_4, ["clusterList", "-n", addr], home, props=JAVA_TLS_CLIENT)
        assert any("broker-tls" in line for line in out), out
        seen = len(proc.lines)
        try:
            plain = rj.mqadmin(java_classpath_4, ["clusterList", "-n", addr], home, timeout=60,
                               props={"tls.enable": "false"})
        except RuntimeError as e:  # mqadmin reports the failure; its exit status varies by version
            plain = str(e).splitlines()
        assert not any("broker-tls" in line for line in plain), plain
        proc.wait_for("plaintext while TLS is enforced", timeout=10, start=seen)
    finally:
        broker.discard()


def test_tx_clients_against_java_tls_namesrv(java_classpath_4):
    """Our blocking and Twisted clients over TLS to a Java name server in enforcing mode."""
    ns, addr, _ = rj.start_namesrv(java_classpath_4, props={"tls.server.mode": "enforcing",
                                                              "tls.test.mode.enable": "true",
                                                              "tls.config.file": "/nonexistent"})
    try:
        tls = TlsSettings.from_sources({"tls.config.file": ""})
        with BlockingRemotingClient(tls=tls) as client:
            response = client.invoke(addr, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO), timeout=10)
            assert response.code == 0 and \
                fastjson.loads(response.body) == {"brokerAddrTable": {}, "clusterAddrTable": {}}
        with BlockingRemotingClient() as plain:
            with pytest.raises(RemotingConnectError):
                plain.invoke(addr, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO), timeout=10)
        script = textwrap.dedent(f"""
            from twisted.internet import defer, task
            from rocketmq_tx.net import RemotingClient
            from rocketmq_tx.remoting import RemotingCommand, RequestCode
            from rocketmq_tx.tlsconfig import TlsSettings
            async def main(reactor):
                client = RemotingClient(reactor, tls=TlsSettings.from_sources({{"tls.config.file": ""}}))
                r = await client.invoke("{addr}", RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO), 10)
                print("CODE", r.code)
                await client.close()
            task.react(lambda reactor: defer.ensureDeferred(main(reactor)))
        """)
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
        assert "CODE 0" in out.stdout, out.stdout + out.stderr
    finally:
        ns.discard()


def test_tx_producer_and_pull_over_tls_to_java(java_classpath_4):
    """Our blocking producer and pull client with ``tls=`` against a Java name server and broker
    that both enforce TLS; without TLS they are refused."""
    java_tls = {"tls.server.mode": "enforcing", "tls.enable": "true", "tls.test.mode.enable": "true",
                "tls.config.file": "/nonexistent"}
    ns, addr, _ = rj.start_namesrv(java_classpath_4, props=java_tls)
    broker = None
    try:
        broker, _, home = rj.start_broker(java_classpath_4, addr, broker_name="broker-tls", props=java_tls)
        tls = TlsSettings.from_sources({"tls.config.file": "", "tls.enable": "true"})
        topic = f"TxTlsTopic{time.time_ns() % 100000}"
        with BlockingProducer("tx_tls_pg", addr, tls=tls) as producer:
            deadline = time.monotonic() + 60
            while True:  # the broker's registration reaches the name server a moment after boot
                try:
                    results = [producer.send(Message(topic, b"tls-0"))]
                    break
                except Exception:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.5)
            # Only the first send is retried: a retried batch would store duplicates.
            results += [producer.send(Message(topic, b"tls-%d" % i)) for i in range(1, 5)]
            assert {r.send_status.name for r in results} == {"SEND_OK"}
        with BlockingPullClient("tx_tls_cg", addr, tls=tls) as puller:
            bodies = []
            for mq in puller.fetch_queues(topic):
                bodies += [m.body for m in puller.pull(mq, 0, 32).msg_found_list]
            assert sorted(bodies) == [b"tls-%d" % i for i in range(5)]
        with BlockingPullClient("tx_plain_cg", addr) as plain:
            with pytest.raises(RemotingError):  # every name server refused (the route plan's error)
                plain.fetch_queues(topic)
    finally:
        jh.stop_together(*([broker.discard] if broker is not None else []), ns.discard)
