"""
Message trace, broker side (issue 21): with ``traceTopicEnable=true`` the broker creates and
serves ``RMQ_SYS_TRACE_TOPIC`` (``msgTraceTopicName``), the official Java clients with trace
on store their trace records in it, and the official ``mqadmin queryMsgTraceById`` finds them.

Three servers in one run, each with ``traceTopicEnable=true``: rocketmq_tx's
``rocketmq-standalone``, the official Java 4.9.x name server and broker (broker 4.9.7; client
and tools 4.9.8) and the official 5.5.0 ones. Against each, ``TracePeer`` (a Java producer and
push consumer, both with ``enableMsgTrace``; 4.9.8 and 5.5.0 clients) sends and consumes, then
reads the trace topic by key = msgId through ``DefaultMQAdminExt.queryMessage`` (the query
``queryMsgTraceById`` makes) and decodes the records with ``TraceDataEncoder``; then
``mqadmin queryMsgTraceById -n NS -i MSGID`` (tools of the client's version) runs against
each. The record kinds (Pub, SubBefore, SubAfter), topic, msgId, keys, tags, groups and status
must be the same on our broker as on Java's 4.9 broker.

One difference between the Java brokers decides what a 5.x consumer records: its trace hook
drops a consumed message without the ``MSG_REGION`` property (5.x ``AsyncTraceDispatcher``:
"currentRegionId == null ... continue"), and only the 5.x broker stamps ``MSG_REGION`` and
``TRACE_ON`` into every stored message (4.9 does so only when a broker send hook is
registered, which a stock broker has not). So a 5.5.0 consumer's SubBefore/SubAfter records
appear on the 5.5.0 broker and on neither 4.9's nor ours, which stores messages as 4.9 does.
"""

from __future__ import annotations

import contextlib
import json
import re

import javaharness as jh
import pytest
import rocketmq_java as rj
import txbroker as tb

from rocketmq_tx.blocking import BlockingAdmin, BlockingRemotingClient
from rocketmq_tx.common import fastjson
from rocketmq_tx.common.route import TopicRouteData
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode

pytestmark = pytest.mark.compat

TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"
COUNT = 4
SERVERS = ("tx", "java4", "java5")
ALL_KINDS = ("Pub", "SubBefore", "SubAfter")
#: 5.x trace dispatchers send a batch smaller than traceMsgBatchNum after 5 s (flushTraceInterval).
SETTLE_MS = 7000


def expected_kinds(client: str, server: str) -> tuple[str, ...]:
    """What a client version stores on a server (see the module's docstring)."""
    if client == "5.5.0" and server != "java5":
        return ("Pub",)
    return ALL_KINDS


@pytest.fixture(scope="module")
def servers(java_classpath_4, java_classpath_5, tmp_path_factory):
    """The three servers with traceTopicEnable=true: kind -> {namesrv, broker, home}."""
    tmp = tmp_path_factory.mktemp("trace")
    with contextlib.ExitStack() as stack:
        tx = tb.start_standalone(tmp / "tx-store", name="tx-trace", cluster="TxTraceCluster",
                                 extra={"traceTopicEnable": "true"})
        stack.callback(tx.stop)
        java4 = stack.enter_context(rj.java_cluster(java_classpath_4, tmp / "java4-store",
                                                    extra={"traceTopicEnable": "true"}, graceful=False))
        java5 = stack.enter_context(rj.java_cluster(java_classpath_5, tmp / "java5-store",
                                                    extra={"traceTopicEnable": "true"}, graceful=False))
        yield {
            "tx": dict(namesrv=tx.namesrv, broker="tx-trace", home=rj.JavaHome("trace-tx")),
            "java4": dict(namesrv=java4.namesrv_addr, broker="compat-broker", home=java4.home),
            "java5": dict(namesrv=java5.namesrv_addr, broker="compat-broker", home=java5.home),
        }


def run_peers(cp: str, targets: dict, topic: str, pg: str, cg: str, kinds: dict, trace_topic: str | None = None
              ) -> dict:
    """TracePeer against each of *targets* (kind -> server) at once, expecting *kinds[kind]*;
    then mqadmin queryMsgTraceById (``-t trace_topic`` when given) for the first message on
    each. kind -> {sent, traces, consumed, mqadmin, first}."""
    jobs = [(cp, "rocketmq.compat.TracePeer", [server["namesrv"], topic, pg, cg, str(COUNT), trace_topic or "-",
                                               "90", str(SETTLE_MS), ",".join(kinds[kind])])
            for kind, server in targets.items()]
    outputs = jh.run_java_parallel(jobs, timeout=240)
    result = {}
    for kind, lines in zip(targets, outputs, strict=True):
        events = [json.loads(line) for line in lines if line.startswith("{")]
        assert events and events[-1] == {"event": "done"}, (kind, lines[-20:])
        sent = [e for e in events if e["event"] == "sent"]
        traces = {e["msgId"]: e["records"] for e in events if e["event"] == "trace"}
        consumed = {e["msgId"] for e in events if e["event"] == "consumed"}
        result[kind] = dict(sent=sent, traces=traces, consumed=consumed, first=sent[0]["msgId"])
    # Every server's query in one mqadmin JVM (a JVM costs seconds, a query a fraction of one).
    queries = [("queryMsgTraceById", "-n", server["namesrv"], "-i", result[kind]["first"],
                *(("-t", trace_topic) if trace_topic else ())) for kind, server in targets.items()]
    outs = rj.mqadmin_batch(cp, queries, next(iter(targets.values()))["home"], retry_timeouts=True)
    for kind, out in zip(targets, outs, strict=True):
        result[kind]["mqadmin"] = out
    return result


@pytest.fixture(scope="module", params=["4.9.8", "5.5.0"])
def traced(request, servers):
    """TracePeer of one client version against the three servers, and mqadmin of that version."""
    version = request.param
    cp = request.getfixturevalue("java_classpath_5" if version == "5.5.0" else "java_classpath_4")
    tag = version.replace(".", "")
    topic, pg, cg = f"TraceTopic{tag}", f"TracePG{tag}", f"TraceCG{tag}"
    runs = run_peers(cp, servers, topic, pg, cg, {k: expected_kinds(version, k) for k in SERVERS})
    return dict(version=version, topic=topic, pg=pg, cg=cg, runs=runs)


# --------------------------------------------------------------------------- the topic

def test_trace_topic_is_served(servers):
    """The trace topic's route: one read and one write queue, read-write, on the broker (Java's
    TopicConfigManager); our route answer equals Java's but for the broker's name."""
    routes = {}
    for kind in SERVERS:
        body = tb.route(servers[kind]["namesrv"], TRACE_TOPIC)
        assert body is not None, f"{kind}: {TRACE_TOPIC} has no route"
        route = TopicRouteData.from_json(body)
        routes[kind] = [(q.read_queue_nums, q.write_queue_nums, q.perm, q.topic_sys_flag) for q in route.queue_datas]
        assert [q.broker_name for q in route.queue_datas] == [servers[kind]["broker"]]
    assert routes["tx"] == routes["java4"] == routes["java5"] == [(1, 1, 6, 0)]


def test_trace_topic_listed(servers):
    """The trace topic is in the name server's topic list, from every broker."""
    for kind in SERVERS:
        with contextlib.closing(BlockingAdmin(servers[kind]["namesrv"], timeout=10.0)) as admin:
            assert TRACE_TOPIC in admin.fetch_all_topic_list().topic_list, kind


# --------------------------------------------------------------------------- the records

def _normal(records: list[dict]) -> list[tuple]:
    """Records without what differs by run (timestamps, hosts, ids): kind, group, topic, keys,
    tags, success, trace topic, and whether the trace message's keys include the msgId."""
    out = []
    for r in records:
        out.append((r["type"], r["group"], r["topic"], r["keys"], r["tags"], r["success"], r["traceTopic"],
                    r["msgId"] in (r["traceKeys"] or "").split(" ")))
    return sorted(out, key=repr)


def test_trace_records_stored_and_found(traced):
    """Every message's trace records (Pub; SubBefore and SubAfter where the client records them)
    are in the trace topic, found by key = msgId, the same on our broker as on Java's 4.9."""
    shapes = {}
    for kind in SERVERS:
        run = traced["runs"][kind]
        assert [s["status"] for s in run["sent"]] == ["SEND_OK"] * COUNT, (kind, run["sent"])
        assert run["consumed"] == {s["msgId"] for s in run["sent"]}, kind
        shapes[kind] = []
        for i, s in enumerate(run["sent"]):
            records = run["traces"][s["msgId"]]
            kinds = {r["type"] for r in records}
            assert kinds == set(expected_kinds(traced["version"], kind)), (kind, s["msgId"], records)
            for r in records:
                assert r["msgId"] == s["msgId"] and r["traceTopic"] == TRACE_TOPIC, (kind, r)
                assert r["keys"] == f"tk-{i}", (kind, r)
                assert s["msgId"] in r["traceKeys"].split(" "), (kind, r)
            pub = next(r for r in records if r["type"] == "Pub")
            assert (pub["group"], pub["topic"], pub["tags"], pub["success"]) == (
                traced["pg"], traced["topic"], "TagT", True), (kind, pub)
            for before in (r for r in records if r["type"] == "SubBefore"):
                assert before["group"] == traced["cg"], (kind, before)
            for after in (r for r in records if r["type"] == "SubAfter"):
                assert after["success"] is True, (kind, after)
            shapes[kind].append(_normal(records))
    assert shapes["tx"] == shapes["java4"]
    if traced["version"] == "4.9.8":
        assert shapes["tx"] == shapes["java5"]


def _mqadmin_rows(lines: list[str]) -> list[list[str]]:
    """queryMsgTraceById's data rows without the host, time and cost columns: kind, group,
    status (``%-10s %-20s %-20s %-20s %-10s %-10s``: type, group, client host,
    "yyyy-MM-dd HH:mm:ss", cost, status)."""
    rows = []
    for line in lines:
        m = re.match(r"(Pub|Sub)\s+(\S+)\s+(\S+)\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+(-?\d+)ms\s+(\S+)", line)
        if m:
            rows.append([m.group(1), m.group(2), m.group(5)])
    return sorted(rows)


def test_mqadmin_query_msg_trace_by_id(traced):
    """mqadmin queryMsgTraceById prints the Pub record (producer group, success) and, where the
    consumer recorded one, its Sub record (consumer group, success): from our broker as from
    Java's 4.9 broker."""
    rows = {}
    for kind in SERVERS:
        run = traced["runs"][kind]
        out = run["mqadmin"]
        rows[kind] = _mqadmin_rows(out)
        desc = f"{kind} mqadmin queryMsgTraceById -i {run['first']}:\n" + "\n".join(out)
        assert any(line.startswith("#Type") and "#ProducerGroup" in line for line in out), desc
        expected = [["Pub", traced["pg"], "success"]]
        if "SubAfter" in expected_kinds(traced["version"], kind):
            assert any(line.startswith("#Type") and "#ConsumerGroup" in line for line in out), desc
            expected.append(["Sub", traced["cg"], "success"])
        assert rows[kind] == expected, desc
    assert rows["tx"] == rows["java4"]


# --------------------------------------------------------------------------- another trace topic name

CUSTOM = "TxCustomTraceTopic"


@pytest.fixture(scope="module")
def custom(java_classpath_4, tmp_path_factory):
    """Our broker and Java's 4.9 broker with ``msgTraceTopicName`` set (and trace on); 4.9.8
    clients with that trace topic (customizedTraceTopic), then with the default one, which
    neither broker created: it comes from TBW102 on the first trace send, as any new topic."""
    tmp = tmp_path_factory.mktemp("trace-custom")
    extra = {"traceTopicEnable": "true", "msgTraceTopicName": CUSTOM}
    with contextlib.ExitStack() as stack:
        tx = tb.start_standalone(tmp / "tx-store", name="tx-trace-custom", cluster="TxTraceCluster", extra=extra)
        stack.callback(tx.stop)
        java4 = stack.enter_context(rj.java_cluster(java_classpath_4, tmp / "java4-store", extra=extra,
                                                    graceful=False))
        targets = {
            "tx": dict(namesrv=tx.namesrv, broker="tx-trace-custom", addr=tx.addr, home=rj.JavaHome("trace-custom")),
            "java4": dict(namesrv=java4.namesrv_addr, broker="compat-broker", addr=f"127.0.0.1:{java4.port}",
                          home=java4.home),
        }
        before = {k: tb.route(t["namesrv"], TRACE_TOPIC) for k, t in targets.items()}
        kinds = {k: ALL_KINDS for k in targets}
        named = run_peers(java_classpath_4, targets, "TraceCustomTopic", "TraceCustomPG", "TraceCustomCG", kinds,
                          trace_topic=CUSTOM)
        default = run_peers(java_classpath_4, targets, "TraceAutoTopic", "TraceAutoPG", "TraceAutoCG", kinds)
        yield dict(targets=targets, before=before, named=named, default=default)


def _system_topics(addr: str) -> set[str]:
    with BlockingRemotingClient() as client:
        response = client.invoke(addr, RemotingCommand.request(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER))
    assert response.code == ResponseCode.SUCCESS, response
    return set(fastjson.loads(response.body)["topicList"])


def _check_runs(runs: dict, topic_prefix: str, trace_topic: str) -> dict:
    shapes = {}
    for kind, run in runs.items():
        assert run["consumed"] == {s["msgId"] for s in run["sent"]}, kind
        shapes[kind] = []
        for i, s in enumerate(run["sent"]):
            records = run["traces"][s["msgId"]]
            assert {r["type"] for r in records} == set(ALL_KINDS), (kind, records)
            assert {r["traceTopic"] for r in records} == {trace_topic}, (kind, records)
            assert all(r["keys"] == f"tk-{i}" for r in records), (kind, records)
            shapes[kind].append(_normal(records))
        rows = _mqadmin_rows(run["mqadmin"])
        assert rows == [["Pub", f"{topic_prefix}PG", "success"], ["Sub", f"{topic_prefix}CG", "success"]], (
            kind, run["mqadmin"])
    return shapes


def test_custom_trace_topic(custom):
    """msgTraceTopicName: the broker creates that topic (one queue, a system topic) instead of
    RMQ_SYS_TRACE_TOPIC; clients naming it store their records there and mqadmin -t finds them."""
    for kind, target in custom["targets"].items():
        assert custom["before"][kind] is None, (kind, custom["before"][kind])
        route = TopicRouteData.from_json(tb.route(target["namesrv"], CUSTOM))
        assert [(q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm) for q in route.queue_datas] == [
            (target["broker"], 1, 1, 6)], kind
        assert CUSTOM in _system_topics(target["addr"]), kind
    shapes = _check_runs(custom["named"], "TraceCustom", CUSTOM)
    assert shapes["tx"] == shapes["java4"]


def test_default_trace_topic_created_on_first_use(custom):
    """A client tracing to RMQ_SYS_TRACE_TOPIC on a broker that did not create it: the first
    trace send creates it from TBW102 (as for any new topic), with the same queues as Java's."""
    queues = {}
    for kind, target in custom["targets"].items():
        route = TopicRouteData.from_json(tb.route(target["namesrv"], TRACE_TOPIC))
        queues[kind] = [(q.read_queue_nums, q.write_queue_nums, q.perm) for q in route.queue_datas]
    assert queues["tx"] == queues["java4"], queues
    shapes = _check_runs(custom["default"], "TraceAuto", TRACE_TOPIC)
    assert shapes["tx"] == shapes["java4"]
