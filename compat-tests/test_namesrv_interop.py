"""
rocketmq_tx's name server with the official Java broker, clients and mqadmin
(4.9.x: broker 4.9.7 + client/tools 4.9.8; and 5.5.0):

* a Java broker registers with our name server (and, for comparison, with a Java name
  server at the same time); the official producer sends through the route it gets and a
  push consumer receives every message;
* mqadmin gets the same answers from both name servers;
* a SIGKILLed broker leaves our routes at once; a SIGSTOPped one after the expiry.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time

import javaharness as jh
import pytest
import rocketmq_java as rj
import txharness as txh
from txbroker import cluster_info

from rocketmq_tx.blocking import BlockingRemotingClient
from rocketmq_tx.common import fastjson
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode

pytestmark = pytest.mark.compat


def start_tx_namesrv(tmp: str, **settings: str) -> txh.TxProcess:
    args = ["--set", "listenPort=0", "--set", "bindAddress=127.0.0.1", "--set", f"kvConfigPath={tmp}/kvConfig.json",
            "--set", f"configStorePath={tmp}/namesrv.properties"]
    for key, value in settings.items():
        args += ["--set", f"{key}={value}"]
    return txh.start_twistd("rocketmq-namesrv", args)


@pytest.fixture(scope="module")
def cluster(java_peer, tmp_path_factory):
    """Our name server and a Java one, and a Java broker registered with both."""
    version, classpath = java_peer
    tmp = str(tmp_path_factory.mktemp(f"ns-{version}"))
    tx = start_tx_namesrv(tmp)
    tx_addr = f"127.0.0.1:{tx.port}"
    java_ns, java_addr, java_home = rj.start_namesrv(classpath)
    broker = None
    try:
        broker, broker_addr, home = rj.start_broker(classpath, f"{tx_addr};{java_addr}")
        wait_for_broker(tx_addr, "broker-a")
        wait_for_broker(java_addr, "broker-a")
        yield dict(version=version, classpath=classpath, tx=tx_addr, java=java_addr, broker=broker_addr, home=home)
    finally:
        jh.stop_together(*([broker.discard] if broker is not None else []), java_ns.discard, tx.stop)


def wait_for_broker(addr: str, name: str, present: bool = True, timeout: float = 60.0) -> float:
    """Poll cluster info until *name* is (or is no longer) registered; returns the seconds waited."""
    start = time.monotonic()
    while True:
        found = name in cluster_info(addr).get("brokerAddrTable", {})
        if found == present:
            return time.monotonic() - start
        if time.monotonic() - start > timeout:
            raise AssertionError(f"broker {name} {'never appeared' if present else 'never left'} on {addr}")
        time.sleep(0.1)  # polling a remote state, bounded by the timeout above


def admin(cluster: dict, *args: str) -> list[str]:
    return rj.mqadmin(cluster["classpath"], list(args), cluster["home"])


def test_java_clients_through_tx_namesrv(cluster):
    """The official producer and push consumer find the broker through our name server."""
    topic = f"TxNsTopic{int(time.time() * 1000) % 100000}"
    out = admin(cluster, "updateTopic", "-n", cluster["tx"], "-c", "DefaultCluster", "-t", topic, "-r", "4", "-w", "4")
    assert any("success" in line for line in out), out
    lines = jh.run_java(cluster["classpath"], "ProduceConsume", [cluster["tx"], topic, "40", "60"], timeout=180)
    result = json.loads(lines[-1])
    assert result["send_ok"] == 40, result
    assert result["unique"] == 40 and result["missing"] == [], result
    assert result["brokers"] == ["broker-a"], result


def normalized_cluster_list(lines: list[str]) -> list[tuple[str, ...]]:
    # Cluster, broker name, id, address, version; the load columns are live figures.
    return sorted(tuple(line.split()[:5]) for line in lines if line and not line.startswith("#"))


def wait_until_agreed(tx: str, java: str, timeout: float = 60.0) -> None:
    """The broker registers with both name servers at once but not at the same instant."""
    deadline = time.monotonic() + timeout
    with BlockingRemotingClient() as client:
        while True:
            lists = [sorted(fastjson.loads(client.invoke(a, RemotingCommand.request(
                RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)).body)["topicList"]) for a in (tx, java)]
            if lists[0] == lists[1] or time.monotonic() > deadline:
                return
            time.sleep(0.2)  # polling remote state, bounded by the deadline


def admin_batch(cluster: dict, *commands: tuple[str, ...], read_only: bool = False) -> list[list[str]]:
    """Several mqadmin commands in one JVM (rj.mqadmin_batch), in order."""
    return rj.mqadmin_batch(cluster["classpath"], commands, cluster["home"], retry_timeouts=read_only)


def test_mqadmin_same_answers(cluster):
    """clusterList, topicList, topicRoute, getNamesrvConfig, KV and permission commands agree."""
    tx, java = cluster["tx"], cluster["java"]
    wait_until_agreed(tx, java)
    # The read-only commands, each against both name servers, in one JVM.
    read_only = [("clusterList",), ("topicList",), ("topicRoute", "-t", "TBW102"), ("getNamesrvConfig",)]
    answers = admin_batch(cluster, *[(cmd[0], "-n", addr, *cmd[1:]) for cmd in read_only for addr in (tx, java)],
                          read_only=True)
    (tx_clusters, java_clusters, tx_topics, java_topics, tx_route, java_route,
     tx_config, java_config) = answers
    assert normalized_cluster_list(tx_clusters) == normalized_cluster_list(java_clusters)
    assert sorted(tx_topics) == sorted(java_topics)
    assert tx_route == java_route

    def config_keys(lines: list[str]) -> dict[str, str]:
        return {m.group(1): m.group(2) for m in (re.match(r"(\S+)\s+=\s+(.*)$", line) for line in lines) if m}

    ours, theirs = config_keys(tx_config), config_keys(java_config)
    missing = set(theirs) - set(ours) - {"configBlackList"}  # 4.9.7 does not report its blacklist key
    assert not missing, missing
    for key in ("productEnvName", "clusterTest", "orderMessageEnable", "serverChannelMaxIdleTimeSeconds"):
        assert ours[key] == theirs[key], key

    admin_batch(cluster, *[("updateKvConfig", "-n", addr, "-s", "compatNs", "-k", "k1", "-v", "v1")
                           for addr in (tx, java)])
    with BlockingRemotingClient() as client:
        def get(addr: str, key: str) -> tuple[int, str | None, str | None]:
            r = client.invoke(addr, RemotingCommand.request(RequestCode.GET_KV_CONFIG,
                                                            {"namespace": "compatNs", "key": key}))
            return r.code, r.ext_fields.get("value"), r.remark
        assert get(tx, "k1") == get(java, "k1") == (0, "v1", None)
        admin_batch(cluster, *[("deleteKvConfig", "-n", addr, "-s", "compatNs", "-k", "k1") for addr in (tx, java)])
        assert get(tx, "k1") == get(java, "k1")
        assert get(tx, "k1")[0] == ResponseCode.QUERY_NOT_FOUND

    # The count is compared on requests sent back to back (one JVM, one after the other).
    wiped = admin_batch(cluster, *[("wipeWritePerm", "-n", addr, "-b", "broker-a") for addr in (tx, java)])
    ours_wipe, theirs_wipe = ([re.sub(r"OK, \d+$", "OK, <n>", line.replace(addr, "<ns>")) for line in lines
                               if "wipe" in line] for addr, lines in zip((tx, java), wiped, strict=True))
    assert ours_wipe == theirs_wipe
    # The broker re-registers now and then and may restore the permission (on both, but
    # seconds apart), so the effect is compared on requests sent back to back.
    with BlockingRemotingClient() as client:
        def wipe_and_route(addr: str) -> tuple[int, dict]:
            wiped = client.invoke(addr, RemotingCommand.request(RequestCode.WIPE_WRITE_PERM_OF_BROKER,
                                                                {"brokerName": "broker-a"}))
            route = client.invoke(addr, RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC,
                                                                {"topic": "TBW102"}))
            return int(wiped.ext_fields["wipeTopicCount"]), fastjson.loads(route.body)
        ours_wiped, theirs_wiped = wipe_and_route(tx), wipe_and_route(java)
    assert ours_wiped == theirs_wiped
    assert ours_wiped[1]["queueDatas"][0]["perm"] == 5


def test_unknown_topic_remark(cluster):
    """TOPIC_NOT_EXIST with the same remark as the Java name server."""
    with BlockingRemotingClient() as client:
        answers = [client.invoke(addr, RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC,
                                                               {"topic": "NoSuchTopic"}))
                   for addr in (cluster["tx"], cluster["java"])]
    ours, theirs = answers
    assert ours.code == theirs.code == ResponseCode.TOPIC_NOT_EXIST
    if cluster["version"].startswith("4."):
        assert ours.remark == theirs.remark
    else:
        # 5.x points its FAQ hint at another URL; the message itself is the same.
        assert ours.remark.split("\nSee ")[0] == theirs.remark.split("\nSee ")[0]


@pytest.fixture(scope="module")
def expiring_namesrv(java_classpath_4, tmp_path_factory):
    """Our name server with a short expiry; Java brokers register every 10 s at the least."""
    tx = start_tx_namesrv(str(tmp_path_factory.mktemp("ns-expiry")), brokerChannelExpiredTime="12000",
                          scanNotActiveBrokerInterval="500")
    try:
        yield f"127.0.0.1:{tx.port}"
    finally:
        tx.stop()


def signalled_broker_leaves(classpath: str, namesrv: str, name: str, sig: int, timeout: float) -> float:
    """Start a broker, wait until it is registered, send it *sig*; seconds until its route went."""
    broker, _, _ = rj.start_broker(classpath, namesrv, broker_name=name, extra={"registerNameServerPeriod": "10000"})
    try:
        wait_for_broker(namesrv, name)
        os.kill(broker.pid, sig)
        return wait_for_broker(namesrv, name, present=False, timeout=timeout)
    finally:
        if sig == signal.SIGSTOP:
            os.kill(broker.pid, signal.SIGCONT)
        broker.discard()  # its route is gone (or the test failed); nothing reads its store


def test_killed_broker_leaves_at_once(java_classpath_4, expiring_namesrv):
    """SIGKILL closes the broker's connection; its route goes immediately, not at the expiry."""
    waited = signalled_broker_leaves(java_classpath_4, expiring_namesrv, "broker-kill", signal.SIGKILL, 10)
    assert waited < 5, waited


def test_stopped_broker_expires(java_classpath_4, expiring_namesrv):
    """SIGSTOP keeps the connection open; the broker leaves only once it is silent past the expiry."""
    elapsed = signalled_broker_leaves(java_classpath_4, expiring_namesrv, "broker-stop", signal.SIGSTOP, 40)
    # Silent for 12 s counted from its last registration, which was at most 10 s before the stop.
    assert 2 <= elapsed <= 12 + 1 + 5, elapsed
