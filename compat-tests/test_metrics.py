"""
Prometheus metrics (``metricsExporterType=PROM``, issue #24): the same traffic through our name
server and broker and through the official Java 5.5.0 ones, each broker's ``/metrics`` read
with prometheus_client's own text parser.

The traffic: the official 5.5.0 producer sends N messages to a 4-queue topic and the official
push consumer consumes them (``ProduceConsume``); then a consumer group held online by a raw
HEART_BEAT commits offset 0 (lag N) and then the queues' ends (lag 0). On each broker:
``rocketmq_messages_in_total`` and ``rocketmq_messages_out_total`` of the topic equal N, the
lag gauge goes from N to 0, and ``rocketmq_rpc_latency``'s ``_count`` equals the requests sent
by request code. A table of the metric names present in both scrapes or only in one is printed;
every Java name docs/operations.md claims must be in both.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import javaharness as jh
import pytest
import rocketmq_java as rj
import txbroker as txb

from rocketmq_tx.blocking import BlockingConnection
from rocketmq_tx.common import fastjson
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.remoting.api import ConsumerData, HeartbeatData, SubscriptionData
from rocketmq_tx.testing.metrics import families as parse_families
from rocketmq_tx.testing.metrics import sample_total as total

pytestmark = pytest.mark.compat

N = 40
QUEUES = 4
ROOT = Path(__file__).resolve().parent.parent
#: Java 5.x names docs/operations.md lists as exposed by both brokers (checked against the real one)
CLAIMED_SHARED = (
    "rocketmq_messages_in", "rocketmq_messages_out", "rocketmq_throughput_in", "rocketmq_throughput_out",
    "rocketmq_message_size", "rocketmq_rpc_latency_milliseconds", "rocketmq_topic_number",
    "rocketmq_consumer_group_number", "rocketmq_broker_permission", "rocketmq_producer_connections",
    "rocketmq_consumer_connections", "rocketmq_consumer_lag_messages", "rocketmq_consumer_lag_latency_milliseconds",
    "rocketmq_consumer_inflight_messages", "rocketmq_consumer_queueing_latency_milliseconds",
    "rocketmq_consumer_ready_messages", "rocketmq_storage_size_bytes", "rocketmq_storage_flush_behind_bytes",
    "rocketmq_storage_dispatch_behind_bytes", "rocketmq_storage_message_reserve_time_milliseconds",
)


def _get(url: str, timeout: float = 10.0) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def scrape(url: str) -> dict:
    """name -> family, parsed by prometheus_client."""
    status, text = _get(url)
    assert status == 200, (url, status, text[:200])
    return parse_families(text)


def poll(read: Callable[[], float], want: float, what: str, timeout: float = 60.0) -> float:
    deadline = time.monotonic() + timeout
    while True:
        value = read()
        if value == want:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: {value}, wanted {want}")
        time.sleep(0.5)  # polling a remote figure, bounded by the deadline


class Servers:
    def __init__(self, label: str, namesrv: str, broker: str, broker_name: str, metrics: str) -> None:
        self.label = label
        self.namesrv = namesrv
        self.broker = broker
        self.broker_name = broker_name
        self.metrics = metrics


@pytest.fixture(scope="module")
def tx_servers(tmp_path_factory) -> Iterator[Servers]:
    tmp = tmp_path_factory.mktemp("metrics-tx")
    port = jh.free_port()
    ns_proc, ns = txb.start_tx_namesrv(tmp, metricsExporterType="PROM", metricsPromExporterHost="127.0.0.1",
                                       metricsPromExporterPort=jh.free_port())
    broker = txb.start_tx_broker(tmp / "store", ns, name="tx-metrics",
                                 extra={"metricsExporterType": "PROM", "metricsPromExporterHost": "127.0.0.1",
                                        "metricsPromExporterPort": port})
    try:
        broker.proc.wait_for(r"rocketmq-broker-metrics listening on 127\.0\.0\.1:(\d+)")
        ns_metrics = ns_proc.wait_for(r"rocketmq-namesrv-metrics listening on 127\.0\.0\.1:(\d+)")
        servers = Servers("rocketmq-tx", ns, broker.addr, "tx-metrics", f"http://127.0.0.1:{port}")
        servers.namesrv_metrics = f"http://127.0.0.1:{ns_metrics.group(1)}"  # type: ignore[attr-defined]
        yield servers
    finally:
        broker.stop()
        ns_proc.stop()


@pytest.fixture(scope="module")
def java_servers(java_classpath_5) -> Iterator[Servers]:
    port = jh.free_port()
    ns_proc, ns, _ = rj.start_namesrv(java_classpath_5, label="java5-metrics-ns")
    try:
        broker, addr, _ = rj.start_broker(java_classpath_5, ns, broker_name="java-metrics", label="java5-metrics",
                                          extra={"metricsExporterType": "PROM", "metricsPromExporterHost": "127.0.0.1",
                                                 "metricsPromExporterPort": str(port)})
        try:
            yield Servers("java-5.5.0", ns, addr, "java-metrics", f"http://127.0.0.1:{port}")
        finally:
            broker.stop()
    finally:
        ns_proc.stop()


def _heartbeat(group: str, topic: str) -> RemotingCommand:
    """A consumer group subscribed to *topic* (and a producer group), online while the connection lasts."""
    data = HeartbeatData(f"metrics-{group}", [f"PG_{group}"], [ConsumerData(
        group, "CONSUME_PASSIVELY", "CLUSTERING", "CONSUME_FROM_FIRST_OFFSET",
        [SubscriptionData.build(topic, "*", sub_version=1)])])
    return RemotingCommand.request(RequestCode.HEART_BEAT, body=fastjson.dumps(data.to_json()))


def _commit(conn: BlockingConnection, group: str, topic: str, queue_id: int, offset: int) -> None:
    r = conn.invoke(RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, {
        "consumerGroup": group, "topic": topic, "queueId": str(queue_id), "commitOffset": str(offset)}), 10)
    assert r.code == ResponseCode.SUCCESS, r


def run_traffic(servers: Servers, classpath: str) -> dict:
    """The traffic of the module docstring; returns the final scrape and what was checked."""
    topic = f"MetricsTopic{time.monotonic_ns() % 10**8}"
    group = f"CG_lag_{time.monotonic_ns() % 10**8}"
    with BlockingConnection(servers.broker) as conn:
        assert txb.create_topic(conn, topic, QUEUES).code == ResponseCode.SUCCESS
    txb.wait_topic_route(servers.namesrv, topic, [servers.broker_name])
    before = scrape(servers.metrics + "/metrics")
    sends_before = total(before, "rocketmq_rpc_latency_milliseconds", "rocketmq_rpc_latency_milliseconds_count",
                         request_code="send_message_v2")
    result = json.loads(jh.run_java(classpath, "ProduceConsume", [servers.namesrv, topic, str(N), "90"],
                                    timeout=150)[-1])
    assert result["send_ok"] == N and result["unique"] == N, (servers.label, result)

    def scraped(name: str, sample: str | None = None, **labels: str) -> Callable[[], float]:
        return lambda: total(scrape(servers.metrics + "/metrics"), name, sample, **labels)

    # Java's messages_in excludes nothing here; both count the N sends of the topic.
    poll(scraped("rocketmq_messages_in", "rocketmq_messages_in_total", topic=topic), N, "messages in")
    poll(scraped("rocketmq_messages_out", "rocketmq_messages_out_total", topic=topic), N, "messages out")
    # The push consumer committed its offsets too (and has stopped): count from here.
    commits_before = total(scrape(servers.metrics + "/metrics"), "rocketmq_rpc_latency_milliseconds",
                           "rocketmq_rpc_latency_milliseconds_count", request_code="update_consumer_offset")
    with BlockingConnection(servers.broker) as conn:
        assert conn.invoke(_heartbeat(group, topic), 10).code == ResponseCode.SUCCESS
        for q in range(QUEUES):
            _commit(conn, group, topic, q, 0)
        poll(scraped("rocketmq_consumer_lag_messages", consumer_group=group, topic=topic), N, "lag before")
        for q in range(QUEUES):
            _commit(conn, group, topic, q, txb.max_offset(conn, topic, q))
        poll(scraped("rocketmq_consumer_lag_messages", consumer_group=group, topic=topic), 0, "lag after")
        final = scrape(servers.metrics + "/metrics")
    hist = "rocketmq_rpc_latency_milliseconds"
    sends = total(final, hist, hist + "_count", request_code="send_message_v2") - sends_before
    commits = total(final, hist, hist + "_count", request_code="update_consumer_offset") - commits_before
    # ProduceConsume's producer sends each message once with SEND_MESSAGE_V2 (no retry: all were SEND_OK)
    assert sends == N, (servers.label, sends)
    assert commits == 2 * QUEUES, (servers.label, commits)
    # the +Inf bucket is the count
    assert total(final, hist, hist + "_bucket", request_code="update_consumer_offset", le="+Inf") - commits_before \
        == 2 * QUEUES
    size_count = total(final, "rocketmq_message_size", "rocketmq_message_size_count", topic=topic)
    assert size_count == N, (servers.label, size_count)
    assert total(final, "rocketmq_throughput_in", "rocketmq_throughput_in_total", topic=topic) > 0
    return final


def test_metrics_same_traffic_both_brokers(tx_servers, java_servers, java_classpath_5):
    """Counters equal N, lag goes N -> 0 and histogram counts equal request counts on our broker
    and on Java 5.5.0's; the metric names of both scrapes side by side."""
    ours = run_traffic(tx_servers, java_classpath_5)
    theirs = run_traffic(java_servers, java_classpath_5)
    names_ours = {n for n in ours if n.startswith("rocketmq_")}
    names_java = {n for n in theirs if n.startswith("rocketmq_")}
    rows = sorted((n, n in names_ours, n in names_java) for n in names_ours | names_java)
    print("\nmetric family                                        rocketmq-tx  java-5.5.0")
    for name, in_ours, in_java in rows:
        print(f"{name:52} {'yes' if in_ours else '-':11}  {'yes' if in_java else '-'}")
    missing = [n for n in CLAIMED_SHARED if n not in names_ours or n not in names_java]
    assert not missing, missing
    # the labels Java puts on every series, with the same values' shape
    for family in ("rocketmq_messages_in", "rocketmq_rpc_latency_milliseconds"):
        ours_labels = set().union(*(s.labels for s in ours[family].samples))
        java_labels = set().union(*(s.labels for s in theirs[family].samples))
        assert ours_labels == java_labels, (family, ours_labels ^ java_labels)


def test_health_endpoints(tx_servers):
    """/healthz answers 200; /readyz 200 once the broker registered (and the name server listens)."""
    assert _get(tx_servers.metrics + "/healthz")[0] == 200
    assert _get(tx_servers.metrics + "/readyz")[0] == 200
    ns = tx_servers.namesrv_metrics  # type: ignore[attr-defined]
    assert _get(ns + "/healthz")[0] == 200
    assert _get(ns + "/readyz")[0] == 200
    families = scrape(ns + "/metrics")
    hist = "rocketmq_rpc_latency_milliseconds"
    # the broker's registrations reached the name server and were timed there
    assert total(families, hist, hist + "_count", request_code="register_broker") >= 1
    assert "process_resident_memory_bytes" in scrape(tx_servers.metrics + "/metrics")
