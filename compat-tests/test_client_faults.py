"""
rocketmq_tx's client under faults, against rocketmq_tx's own name servers and brokers
(each a fresh twistd process):

* a broker restarted while our push consumer reads from it: consumption resumes, nothing
  acknowledged is lost, duplicates (allowed by at-least-once) are counted and reported;
* one of two name servers down: cached routes keep the producer and consumer going, and
  new routes come from the other one;
* a broker killed: the producer's sends go to the live broker.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter

import javaharness as jh
import pytest
import txbroker as txb
import txharness as txh

from rocketmq_tx.blocking import BlockingConnection, BlockingProducer
from rocketmq_tx.common.message import Message

pytestmark = pytest.mark.compat


def push_consumer(namesrv: str, group: str, topic: str, seconds: int) -> jh.JavaProcess:
    """compat-tests/txclient.py push: our Twisted push consumer in its own process."""
    consumer = txh.start_txclient("push", namesrv, group, topic, str(seconds))
    consumer.wait_for(r'"ready"', 60)
    return consumer


class Received:
    """Drains a consumer's JSON lines on a thread; counts each body."""

    def __init__(self, proc: jh.JavaProcess) -> None:
        self.proc = proc
        self.counts: Counter = Counter()
        self._stop = False
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop:
            try:
                line = self.proc.readline(0.2)
            except TimeoutError:
                continue
            if line is None:
                return
            if line.startswith("{") and '"body"' in line:
                self.counts[json.loads(line)["body"]] += 1

    def wait_for(self, bodies: set[str], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not bodies <= set(self.counts):
            if time.monotonic() > deadline:
                missing = sorted(bodies - set(self.counts))
                raise AssertionError(f"{len(missing)} messages never consumed, e.g. {missing[:5]}")
            time.sleep(0.1)  # polling the drain thread's progress, bounded by the deadline

    def stop(self) -> None:
        self._stop = True
        self.proc.stop()


def create_topic(addr: str, topic: str, queues: int = 4) -> None:
    with BlockingConnection(addr) as conn:
        assert txb.create_topic(conn, topic, queues).code == 0


def test_broker_restart_during_consumption(tmp_path, capsys) -> None:
    ns_proc, namesrv = txb.start_tx_namesrv(tmp_path / "ns")
    broker = txb.start_tx_broker(tmp_path / "store", namesrv, name="fault-broker")
    consumer = None
    try:
        topic, group = "FaultRestart", "FAULT_RESTART_CG"
        create_topic(broker.addr, topic)
        txb.wait_topic_route(namesrv, topic, [broker.name])
        received = Received(push_consumer(namesrv, group, topic, 240))
        consumer = received
        acked: set[str] = set()
        with BlockingProducer("FAULT_PG", namesrv, send_timeout=10) as producer:
            for i in range(100):
                producer.send(Message(topic, f"before-{i}".encode()))
                acked.add(f"before-{i}")
            received.wait_for({f"before-{i}" for i in range(50)}, 60)
            assert broker.stop() in (0, -15, 1), "a clean SIGTERM stop"
            broker = txb.restart(broker, "fault-broker-restarted")
            txb.wait_topic_route(namesrv, topic, [broker.name])
            for i in range(100):
                try:
                    producer.send(Message(topic, f"after-{i}".encode()))
                    acked.add(f"after-{i}")
                except Exception:
                    pass  # only acknowledged sends must arrive
        assert len(acked) >= 150
        received.wait_for(acked, 120)
        duplicates = sum(n - 1 for n in received.counts.values() if n > 1)
        with capsys.disabled():
            print(f"\n[client faults] broker restart: {len(acked)} acknowledged, all consumed, "
                  f"{duplicates} duplicate deliveries")
    finally:
        if consumer is not None:
            consumer.stop()
        broker.stop()
        ns_proc.stop()


def test_one_name_server_down(tmp_path) -> None:
    ns1_proc, ns1 = txb.start_tx_namesrv(tmp_path / "ns1")
    ns2_proc, ns2 = txb.start_tx_namesrv(tmp_path / "ns2")
    both = f"{ns1};{ns2}"
    broker = txb.start_tx_broker(tmp_path / "store", both, name="fault-ns-broker")
    consumer = None
    try:
        topic, group = "FaultNamesrv", "FAULT_NS_CG"
        create_topic(broker.addr, topic)
        for ns in (ns1, ns2):
            txb.wait_topic_route(ns, topic, [broker.name])
        consumer = Received(push_consumer(both, group, topic, 180))
        with BlockingProducer("FAULT_NS_PG", both) as producer:
            for i in range(20):
                producer.send(Message(topic, f"up-{i}".encode()))
            consumer.wait_for({f"up-{i}" for i in range(20)}, 60)
            ns1_proc.stop()
            # Cached routes: the same producer and the running consumer carry on.
            for i in range(20):
                producer.send(Message(topic, f"down-{i}".encode()))
            consumer.wait_for({f"down-{i}" for i in range(20)}, 60)
        # A new client with the dead name server first finds routes through the other.
        create_topic(broker.addr, "FaultNamesrvNew")
        txb.wait_topic_route(ns2, "FaultNamesrvNew", [broker.name])
        with BlockingProducer("FAULT_NS_PG2", both) as fresh:
            assert fresh.send(Message("FaultNamesrvNew", b"via-ns2")).message_queue.broker_name == broker.name
    finally:
        if consumer is not None:
            consumer.stop()
        broker.stop()
        ns1_proc.stop()
        ns2_proc.stop()


def test_dead_broker_avoided_by_the_producer(tmp_path) -> None:
    ns_proc, namesrv = txb.start_tx_namesrv(tmp_path / "ns")
    a = txb.start_tx_broker(tmp_path / "a", namesrv, name="fault-a")
    b = txb.start_tx_broker(tmp_path / "b", namesrv, name="fault-b")
    try:
        topic = "FaultDeadBroker"
        for broker in (a, b):
            create_topic(broker.addr, topic)
        txb.wait_topic_route(namesrv, topic, [a.name, b.name])
        with BlockingProducer("FAULT_DEAD_PG", namesrv, send_timeout=10) as producer:
            first = Counter(producer.send(Message(topic, f"x{i}".encode())).message_queue.broker_name
                            for i in range(16))
            assert set(first) == {a.name, b.name}
            b.proc.proc.kill()  # SIGKILL: no unregistration, the route still lists it for a while
            b.proc.proc.wait(30)
            after = Counter(producer.send(Message(topic, f"y{i}".encode())).message_queue.broker_name
                            for i in range(16))
        assert after == Counter({a.name: 16}), after
    finally:
        b.stop()
        a.stop()
        ns_proc.stop()
