"""
Mixed clusters: rocketmq_tx's broker (``twistd rocketmq-broker``) and the official Java
4.9.7 broker in one cluster, each registered with a Java 4.9.7 name server, ours, and a
Java 5.5.0 name server.

* both name servers list both brokers in the cluster, and a topic created on the cluster
  routes to both;
* the official producer and push consumer (4.9.8 and 5.5.0) send through both brokers and
  receive every message, whichever name server they ask;
* a topic only our broker has, found through the Java name server, and a topic only the
  Java broker has, found through ours, work end to end.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import signal
import time

import javaharness as jh
import pytest
import rocketmq_java as rj
import txbroker as tb

from rocketmq_tx.blocking import BlockingConnection

pytestmark = pytest.mark.compat

CLUSTER = "MixedCluster"
TX_BROKER = "tx-mixed"
JAVA_BROKER = "java-mixed"


@pytest.fixture(scope="module")
def mixed(java_classpath_4, java_classpath_5, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("mixed")
    tx_ns_proc, tx_ns = tb.start_tx_namesrv(tmp / "ns")
    java_ns, java_ns_addr, home = rj.start_namesrv(java_classpath_4, label="mixed-java-ns")
    java5_ns = None
    tx_broker = java_broker = None
    try:
        java5_ns, java5_ns_addr, _ = rj.start_namesrv(java_classpath_5, label="mixed-java5-ns")
        both_ns = f"{java_ns_addr};{tx_ns};{java5_ns_addr}"
        # Our broker from a Java-style broker.conf (-c) and the name servers on the command line (-n).
        tx_broker = tb.start_tx_broker(tmp / "store", both_ns, name=TX_BROKER, cluster=CLUSTER, conf_file=True)
        java_broker, java_broker_addr, _ = rj.start_broker(java_classpath_4, both_ns, broker_name=JAVA_BROKER,
                                                           cluster=CLUSTER, home=home)
        for ns in (tx_ns, java_ns_addr, java5_ns_addr):
            tb.wait_route(ns, lambda info: {TX_BROKER, JAVA_BROKER} <= set(info["clusterAddrTable"].get(CLUSTER, [])),
                          what="both brokers in the cluster")
        yield dict(tx_ns=tx_ns, java_ns=java_ns_addr, java5_ns=java5_ns_addr, tx_broker=tx_broker,
                   java_broker=java_broker_addr, home=home, cp4=java_classpath_4, cp5=java_classpath_5)
        problems = tb.broker_log_problems(tx_broker.log_text())
        assert not problems, "our broker logged errors:\n" + "\n".join(problems)
    finally:
        jh.stop_together(*[p.discard for p in (java_broker, java5_ns, java_ns) if p is not None],
                         *([tx_broker.stop] if tx_broker is not None else []), tx_ns_proc.stop)


def admin(mixed, *args: str) -> list[str]:
    return rj.mqadmin(mixed["cp4"], list(args), mixed["home"])


def _topic_name(prefix: str) -> str:
    return f"{prefix}{time.monotonic_ns() % 10**9}"


def test_cluster_lists_both_brokers(mixed):
    """Every name server has one cluster with our broker and the Java one (clusterList
    through ours and the Java 4.9.7 one)."""
    for ns in (mixed["tx_ns"], mixed["java_ns"], mixed["java5_ns"]):
        info = tb.cluster_info(ns)
        assert set(info["clusterAddrTable"][CLUSTER]) == {TX_BROKER, JAVA_BROKER}, (ns, info)
        assert info["brokerAddrTable"][TX_BROKER]["brokerAddrs"] == {"0": mixed["tx_broker"].addr}, (ns, info)
        assert info["brokerAddrTable"][JAVA_BROKER]["brokerAddrs"] == {"0": mixed["java_broker"]}, (ns, info)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        outputs = list(pool.map(lambda ns: admin(mixed, "clusterList", "-n", ns), (mixed["tx_ns"], mixed["java_ns"])))
    for out in outputs:
        # (The 4.9.7 broker runs on rocketmq-common 4.9.8, so it reports V4_9_8 too.)
        rows = [line.split() for line in out if line.startswith(CLUSTER)]
        assert sorted((r[1], r[3], r[4]) for r in rows) == sorted([(TX_BROKER, mixed["tx_broker"].addr, "V4_9_8"),
                                                                   (JAVA_BROKER, mixed["java_broker"], "V4_9_8")]), out


def _create_on(mixed, topic: str, target: list[str]) -> None:
    out = admin(mixed, "updateTopic", "-n", mixed["java_ns"], *target, "-t", topic, "-r", "4", "-w", "4")
    assert any("success" in line for line in out), out


def test_topic_on_cluster_through_both_name_servers(mixed):
    """A cluster topic routes to both brokers; 4.9.8 and 5.5.0 clients use both, via either name server."""
    topic = _topic_name("MixedTopic")
    _create_on(mixed, topic, ["-c", CLUSTER])
    start = time.monotonic()
    for ns in (mixed["tx_ns"], mixed["java_ns"], mixed["java5_ns"]):
        route = tb.wait_topic_route(ns, topic, [TX_BROKER, JAVA_BROKER])
        queues = {q["brokerName"]: (q["readQueueNums"], q["writeQueueNums"], q["perm"]) for q in route["queueDatas"]}
        assert queues == {TX_BROKER: (4, 4, 6), JAVA_BROKER: (4, 4, 6)}, route
    # Our broker re-registers as soon as a topic is created, as Java's does.
    assert time.monotonic() - start < 15
    jobs = [(cp, "ProduceConsume", [ns, topic, "40", "60"])
            for cp in (mixed["cp4"], mixed["cp5"]) for ns in (mixed["tx_ns"], mixed["java_ns"])]
    jobs.append((mixed["cp5"], "ProduceConsume", [mixed["java5_ns"], topic, "40", "60"]))
    results = [json.loads(lines[-1]) for lines in jh.run_java_parallel(jobs, timeout=150)]
    for (cp, _, (ns, *_)), result in zip(jobs, results):
        label = ("4.9.8" if cp == mixed["cp4"] else "5.5.0", ns)
        assert result["send_ok"] == 40, (label, result)
        assert result["unique"] == 40 and result["missing"] == [], (label, result)
        assert result["brokers"] == sorted([TX_BROKER, JAVA_BROKER]), (label, result)


def test_single_broker_topics_across_name_servers(mixed):
    """A topic only our broker serves, found through the Java name server, and a topic only
    the Java broker serves, found through ours (both runs at once)."""
    cases = [(_topic_name("TxOnly"), mixed["tx_broker"].addr, TX_BROKER, mixed["java_ns"]),
             (_topic_name("JavaOnly"), mixed["java_broker"], JAVA_BROKER, mixed["tx_ns"])]
    for topic, addr, name, ns in cases:
        _create_on(mixed, topic, ["-b", addr])
        route = tb.wait_topic_route(ns, topic, [name])
        assert [b["brokerName"] for b in route["brokerDatas"]] == [name], route
    jobs = [(mixed["cp4"], "ProduceConsume", [ns, topic, "40", "60"]) for topic, _, _, ns in cases]
    results = [json.loads(lines[-1]) for lines in jh.run_java_parallel(jobs, timeout=150)]
    for (topic, _, name, _ns), result in zip(cases, results):
        assert result["send_ok"] == 40 and result["unique"] == 40 and result["missing"] == [], (topic, result)
        assert result["brokers"] == [name], (topic, result)


def test_auto_created_topic_spreads_over_both(mixed):
    """autoCreateTopicEnable on both: the producer's first sends to a new topic go through
    TBW102's route (both brokers), each broker creates the topic and re-registers, and the
    messages are stored on both."""
    topic = _topic_name("AutoMixed")
    lines = jh.run_java(mixed["cp4"], "ClientPeer", ["produce", mixed["tx_ns"], topic, "40"], timeout=120)
    sends = [json.loads(line) for line in lines if line.startswith("{") and '"i"' in line]
    assert len(sends) == 40 and all(s["status"] == "SEND_OK" for s in sends), lines
    per_broker = {name: sum(1 for s in sends if s["broker"] == name) for name in (TX_BROKER, JAVA_BROKER)}
    assert all(per_broker.values()), per_broker
    for ns in (mixed["tx_ns"], mixed["java_ns"]):
        tb.wait_topic_route(ns, topic, [TX_BROKER, JAVA_BROKER], timeout=15)
    for name, addr in ((TX_BROKER, mixed["tx_broker"].addr), (JAVA_BROKER, mixed["java_broker"])):
        with BlockingConnection(addr) as conn:
            stored = sum(tb.max_offset(conn, topic, q) for q in range(4))
        assert stored == per_broker[name], (name, stored, per_broker)


def test_sigterm_leaves_every_name_server(mixed):
    """Last: SIGTERM our broker; it unregisters from the Java 4.9.7 and 5.5.0 name servers and
    ours at once (not at their 120 s expiry), and the Java broker stays listed."""
    broker = mixed["tx_broker"]
    problems = tb.broker_log_problems(broker.log_text())
    assert not problems, "our broker logged errors:\n" + "\n".join(problems)
    os.kill(broker.pid, signal.SIGTERM)
    for ns in (mixed["java_ns"], mixed["java5_ns"], mixed["tx_ns"]):
        waited = tb.wait_route(ns, lambda info: TX_BROKER not in info["brokerAddrTable"], timeout=15,
                               what=f"{TX_BROKER} unregistered")
        assert waited < 3, (ns, waited)
        info = tb.cluster_info(ns)
        assert set(info["clusterAddrTable"][CLUSTER]) == {JAVA_BROKER}, (ns, info)
    assert broker.proc.proc.wait(20) in (0, -signal.SIGTERM)
    assert "unregister failed" not in broker.log_text()
