"""
The official mqadmin (tools 4.9.8 and 5.5.0) against one ``twistd rocketmq-standalone``
(our name server and broker in one process), with messages sent by the official producer
and a live official push consumer:

updateTopic, topicList, topicRoute, topicStatus, updateSubGroup, consumerProgress,
consumerConnection, brokerStatus, getBrokerConfig, resetOffsetByTime, queryMsgById,
queryMsgByKey, queryMsgByUniqueKey, printMsg, clusterList, statsAll.

The read-only commands run up front through the official ``MQAdminStartup`` in one JVM per
tools version (``AdminBatch``: a JVM start costs more than most commands); the commands that
change state run as separate ``mqadmin`` processes in their tests.

mqadmin exits 0 even when a command fails (it prints the SubCommandException to stderr),
so every test asserts on what the command printed: topic names, queue counts, offsets,
keys and bodies. A failure shows mqadmin's stderr, which names the request code the
broker refused.

Version notes: 5.5.0's topicStatus and ``consumerProgress -g`` first ask every broker for
GET_TOPIC_CONFIG (351), a request code 5.x brokers added. The Java 4.9.7 broker answers it
REQUEST_CODE_NOT_SUPPORTED, so those two 5.5.0 commands fail against a Java 4.9 broker;
ours answers 351 (see rocketmq_tx/broker/processors/admin.py), so both tools versions are
tested for every command here. 5.5.0's queryMsgById also requires ``-t``.
"""

from __future__ import annotations

import concurrent.futures
import json
import re
import subprocess
import time
from pathlib import Path

import javaharness as jh
import pytest
import rocketmq_java as rj
import txbroker as tb

from rocketmq_tx.blocking import BlockingConnection
from rocketmq_tx.common import fastjson
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode

pytestmark = pytest.mark.compat

BROKER = "tx-admin"
CLUSTER = "AdminCluster"
TOPIC = "AdminTopic"
GROUP = "AdminGroup"
COUNT = 8
VERSIONS = ["4.9.8", "5.5.0"]


class Admin:
    """mqadmin for one tools version, keeping stdout and stderr for the assertion messages."""

    def __init__(self, version: str, classpath: str, home: rj.JavaHome, ns: str) -> None:
        self.version = version
        self.classpath = classpath
        self.home = home
        self.ns = ns

    def __call__(self, *args: str, timeout: float = 120.0) -> str:
        cached = _PREFETCHED.get((self.version, args))
        if cached is not None:
            self.last = cached[1]
            return cached[0]
        return self.run(*args, timeout=timeout)

    def run(self, *args: str, timeout: float = 120.0) -> str:
        argv = ["java", *self.home.jvm_args(), *jh.FAST_START, "-cp", self.classpath,
                "org.apache.rocketmq.tools.command.MQAdminStartup", args[0], "-n", self.ns, *args[1:]]
        for _attempt in (1, 2):
            out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=str(self.home.root),
                                 env=self.home.env())
            # mqadmin's own 3 s request timeout includes its JVM's slow first calls; on a
            # loaded machine retry once (a second timeout fails the test as usual).
            if "RemotingTimeoutException" not in out.stderr:
                break
        self.last = f"mqadmin {self.version} {' '.join(args)} (exit {out.returncode})\n--- stdout ---\n" \
                    f"{out.stdout[-3000:]}\n--- stderr ---\n{jh.stderr_summary(out.stderr, 25)}"
        return out.stdout


@pytest.fixture(scope="module")
def env(java_classpath_4, java_classpath_5, tmp_path_factory):
    """One standalone, COUNT messages from the official producer, a live official push consumer."""
    tmp = tmp_path_factory.mktemp("admin")
    server = tb.start_standalone(tmp / "store", name=BROKER, cluster=CLUSTER)
    consumer = None
    try:
        with BlockingConnection(server.addr) as conn:
            assert tb.create_topic(conn, TOPIC).code == ResponseCode.SUCCESS
        tb.wait_topic_route(server.namesrv, TOPIC, [BROKER])
        first_store_ms = int(time.time() * 1000) - 1000
        lines = jh.run_java(java_classpath_4, "ClientPeer", ["produce", server.namesrv, TOPIC, str(COUNT)])
        sends = [json.loads(line) for line in lines if line.startswith("{") and '"i"' in line]
        assert len(sends) == COUNT and all(s["status"] == "SEND_OK" for s in sends), lines
        consumer = jh.start_java(java_classpath_4, "ClientPeer",
                                 ["consume", server.namesrv, TOPIC, GROUP, "1000000", "900"], ready=r"READY (\d+)")
        received = [json.loads(consumer.readline(60)) for _ in range(COUNT)]
        assert sorted(m["body"] for m in received) == sorted(f"java-{i}" for i in range(COUNT))
        tb.wait_committed(server.addr, GROUP, TOPIC, {s["queueId"] for s in sends})
        home = rj.JavaHome("admin-tools")
        yield dict(server=server, ns=server.namesrv, addr=server.addr, sends=sends, consumer=consumer, home=home,
                   cp={"4.9.8": java_classpath_4, "5.5.0": java_classpath_5}, first_store_ms=first_store_ms)
        problems = tb.broker_log_problems(server.log_text())
        assert not problems, "broker logged errors:\n" + "\n".join(problems)
    finally:
        if consumer is not None:
            consumer.stop()
        server.stop()


#: (version, args) -> (stdout, description) of the read-only commands, run up front.
_PREFETCHED: dict[tuple[str, tuple[str, ...]], tuple[str, str]] = {}


def read_only_commands(env, version: str) -> list[tuple[str, ...]]:
    """The exact argument lists the read-only tests below use (prefetched in parallel)."""
    sends = env["sends"]
    cmds = [("topicList",), ("topicRoute", "-t", TOPIC), ("consumerProgress",),
            ("consumerConnection", "-g", GROUP), ("brokerStatus", "-b", env["addr"]),
            ("getBrokerConfig", "-b", env["addr"]), ("clusterList",), ("statsAll",),
            ("queryMsgById", "-i", sends[1]["offsetMsgId"], *(["-t", TOPIC] if version.startswith("5.") else [])),
            ("queryMsgByKey", "-t", TOPIC, "-k", "jk-3"), ("queryMsgByUniqueKey", "-t", TOPIC, "-i", sends[5]["msgId"]),
            ("printMsg", "-t", TOPIC, "-c", "UTF-8")]
    cmds += [("topicStatus", "-t", TOPIC), ("consumerProgress", "-g", GROUP)]
    return cmds


def admin_batch(version: str, classpath: str, home: rj.JavaHome, ns: str, commands) -> dict:
    """Run *commands* through the official MQAdminStartup in one JVM (AdminBatch); returns
    args -> (stdout, description)."""
    results = rj.mqadmin_batch_results(classpath, [(args[0], "-n", ns, *args[1:]) for args in commands], home)
    answers = {}
    for args, result in zip(commands, results):
        answers[tuple(args)] = (result["out"], f"mqadmin {version} {' '.join(args)} (in AdminBatch)\n--- stdout ---\n"
                                f"{result['out'][-3000:]}\n--- stderr ---\n{jh.stderr_summary(result['err'], 25)}")
    return answers


@pytest.fixture(scope="module")
def prefetched(env):
    """Every read-only command of both tools versions, run up front (before any test changes
    the broker's state) in one JVM per version (AdminBatch), the two versions at once."""
    def one(version):
        answers = admin_batch(version, env["cp"][version], env["home"], env["ns"], read_only_commands(env, version))
        return {(version, args): answer for args, answer in answers.items()}

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        for answers in pool.map(one, VERSIONS):
            _PREFETCHED.update(answers)
    yield
    _PREFETCHED.clear()


@pytest.fixture(params=VERSIONS)
def admin(request, env, prefetched) -> Admin:
    return Admin(request.param, env["cp"][request.param], env["home"], env["ns"])


def _queue_offsets(env) -> dict[int, int]:
    ends: dict[int, int] = {}
    for s in env["sends"]:
        ends[s["queueId"]] = max(ends.get(s["queueId"], 0), s["queueOffset"] + 1)
    return ends


# --------------------------------------------------------------------------- topics

def test_update_topic(admin, env):
    topic = f"Upd{admin.version.replace('.', '')}"
    out = admin("updateTopic", "-c", CLUSTER, "-t", topic, "-r", "3", "-w", "5")
    assert f"create topic to {env['addr']} success." in out, admin.last
    assert "readQueueNums=3" in out and "writeQueueNums=5" in out, admin.last
    with BlockingConnection(env["addr"]) as conn:
        r = conn.invoke(RemotingCommand.request(RequestCode.GET_ALL_TOPIC_CONFIG))
    tc = fastjson.loads(r.body)["topicConfigTable"][topic]
    assert (tc["readQueueNums"], tc["writeQueueNums"], tc["perm"]) == (3, 5, 6), tc
    route = tb.wait_topic_route(env["ns"], topic, [BROKER], timeout=10)
    assert [(q["readQueueNums"], q["writeQueueNums"]) for q in route["queueDatas"]] == [(3, 5)]


def test_topic_list(admin, env):
    out = admin("topicList").split()
    for topic in (TOPIC, "TBW102", CLUSTER, BROKER, f"%RETRY%{GROUP}"):
        assert topic in out, admin.last


def test_topic_route(admin, env):
    out = admin("topicRoute", "-t", TOPIC)
    assert f'"brokerName":"{BROKER}"' in out and f'"cluster":"{CLUSTER}"' in out, admin.last
    assert f'0:"{env["addr"]}"' in out, admin.last
    assert re.search(r'"readQueueNums":4', out) and re.search(r'"writeQueueNums":4', out), admin.last
    assert '"perm":6' in out, admin.last


def test_topic_status(admin, env):
    out = admin("topicStatus", "-t", TOPIC)
    rows = [line.split() for line in out.splitlines() if line.startswith(BROKER)]
    got = {int(r[1]): (int(r[2]), int(r[3])) for r in rows}
    want = {q: (0, _queue_offsets(env).get(q, 0)) for q in range(4)}
    assert got == want, admin.last
    assert all(re.match(r"\d{4}-\d\d-\d\d", r[4]) for r in rows if int(r[3]) > 0), admin.last


# --------------------------------------------------------------------------- groups and consumers

def test_update_sub_group(admin, env):
    group = f"SubG{admin.version.replace('.', '')}"
    out = admin("updateSubGroup", "-c", CLUSTER, "-g", group, "-r", "7", "-q", "2")
    assert f"create subscription group to {env['addr']} success." in out, admin.last
    with BlockingConnection(env["addr"]) as conn:
        r = conn.invoke(RemotingCommand.request(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG))
    assert r.code == ResponseCode.SUCCESS, r
    sgc = fastjson.loads(r.body)["subscriptionGroupTable"][group]
    assert (sgc["retryMaxTimes"], sgc["retryQueueNums"]) == (7, 2), sgc


def test_consumer_progress_of_group(admin, env):
    out = admin("consumerProgress", "-g", GROUP)
    rows = [line.split() for line in out.splitlines() if line.startswith(TOPIC + " ")]
    ends = _queue_offsets(env)
    got = {int(r[2]): (int(r[3]), int(r[4]), int(r[5])) for r in rows if r[1] == BROKER}
    assert got == {q: (ends.get(q, 0), ends.get(q, 0), 0) for q in range(4)}, admin.last
    assert re.search(r"Diff Total: 0", out), admin.last


def test_consumer_progress_all(admin, env):
    out = admin("consumerProgress")
    rows = [line.split() for line in out.splitlines() if line.startswith(GROUP + " ")]
    assert rows, admin.last
    # #Group #Count #Version #Type #Model #TPS #Diff Total
    assert rows[0][1] == "1" and rows[0][3] == "PUSH" and rows[0][4] == "CLUSTERING", admin.last
    assert rows[0][2].startswith("V4_9"), admin.last


def test_consumer_connection(admin, env):
    out = admin("consumerConnection", "-g", GROUP)
    rows = [line.split() for line in out.splitlines() if "@" in line and not line.startswith("#")]
    assert len(rows) == 1, admin.last
    client_id, client_addr, language, version = rows[0][1:5] if rows[0][0].isdigit() else rows[0][:4]
    assert client_addr.startswith("127.0.0.1:") and language == "JAVA" and version == "V4_9_8", admin.last
    subs = dict(re.findall(r"^(\S+)[ \t]+(\*)[ \t]*$", out, re.M))
    assert subs.get(TOPIC) == "*" and subs.get(f"%RETRY%{GROUP}") == "*", admin.last
    assert "ConsumeType: CONSUME_PASSIVELY" in out and "MessageModel: CLUSTERING" in out, admin.last
    assert "ConsumeFromWhere: CONSUME_FROM_FIRST_OFFSET" in out, admin.last


# --------------------------------------------------------------------------- broker

def test_broker_status(admin, env):
    out = admin("brokerStatus", "-b", env["addr"])
    info = dict(re.findall(r"^(\w+)[ \t]*:[ \t]*(.*?)[ \t]*$", out, re.M))
    assert info.get("brokerVersionDesc") == "V4_9_8", admin.last
    assert int(info["msgPutTotalTodayNow"]) >= COUNT and int(info["commitLogMaxOffset"]) > 0, admin.last
    assert int(info["msgGetTotalTodayNow"]) >= COUNT, admin.last
    assert info["runtime"].startswith("[ 0 days"), admin.last


def test_get_broker_config(admin, env):
    out = admin("getBrokerConfig", "-b", env["addr"])
    assert f"============{env['addr']}============" in out, admin.last
    cfg = dict(re.findall(r"^(\w+)[ \t]+=[ \t]+(.*?)[ \t]*$", out, re.M))
    assert cfg.get("brokerName") == BROKER and cfg.get("brokerClusterName") == CLUSTER, admin.last
    assert cfg.get("listenPort") == str(env["server"].port), admin.last
    assert cfg.get("storePathRootDir") == str(env["server"].store), admin.last
    assert cfg.get("autoCreateTopicEnable") == "true" and cfg.get("brokerIP1") == "127.0.0.1", admin.last


def test_cluster_list(admin, env):
    out = admin("clusterList")
    rows = [line.split() for line in out.splitlines() if line.startswith(CLUSTER)]
    assert [r[:5] for r in rows] == [[CLUSTER, BROKER, "0", env["addr"], "V4_9_8"]], admin.last
    # The thread-pool wait figures come from the broker's runtime info, like Java's.
    assert "null" not in out, admin.last


def test_stats_all(admin, env):
    out = admin("statsAll")
    rows = [line.split() for line in out.splitlines() if line.startswith(TOPIC + " ")]
    assert rows and rows[0][1] == GROUP, admin.last
    # #Topic #Consumer Group #Accumulation #InTPS #OutTPS #InMsg24Hour #OutMsg24Hour
    assert int(rows[0][2]) == 0 and int(rows[0][5]) >= COUNT and int(rows[0][6]) >= COUNT, admin.last


# --------------------------------------------------------------------------- messages

def _message_details(out: str) -> dict[str, str]:
    return dict(re.findall(r"^([A-Za-z][A-Za-z ]*?):[ \t]+(.*?)[ \t]*$", out, re.M))


def test_query_msg_by_id(admin, env):
    s = env["sends"][1]
    extra = ["-t", TOPIC] if admin.version.startswith("5.") else []
    out = admin("queryMsgById", "-i", s["offsetMsgId"], *extra)
    d = _message_details(out)
    assert d.get("Topic") == TOPIC and d.get("Keys") == "[jk-1]" and d.get("Tags") == "[TagB]", admin.last
    assert int(d["Queue ID"]) == s["queueId"] and int(d["Queue Offset"]) == s["queueOffset"], admin.last
    assert "idx=1" in d.get("Properties", "") and s["msgId"] in d.get("Properties", ""), admin.last
    body_path = d.get("Message Body Path")
    assert body_path and Path(body_path).read_bytes() == b"java-1", admin.last


def test_query_msg_by_key(admin, env):
    s = env["sends"][3]
    out = admin("queryMsgByKey", "-t", TOPIC, "-k", "jk-3")
    rows = [line.split() for line in out.splitlines() if line and not line.startswith("#")]
    assert [r[:3] for r in rows] == [[s["msgId"], str(s["queueId"]), str(s["queueOffset"])]], admin.last


def test_query_msg_by_unique_key(admin, env):
    s = env["sends"][5]
    out = admin("queryMsgByUniqueKey", "-t", TOPIC, "-i", s["msgId"])
    d = _message_details(out)
    assert d.get("Topic") == TOPIC and d.get("Keys") == "[jk-5]", admin.last
    assert int(d["Queue ID"]) == s["queueId"] and int(d["Queue Offset"]) == s["queueOffset"], admin.last
    body_path = d.get("Message Body Path")
    assert body_path and Path(body_path).read_bytes() == b"java-5", admin.last


def test_print_msg(admin, env):
    out = admin("printMsg", "-t", TOPIC, "-c", "UTF-8")
    bodies = re.findall(r"BODY: (java-\d+)", out)
    assert sorted(bodies) == sorted(f"java-{i}" for i in range(COUNT)), admin.last
    ends = _queue_offsets(env)
    for q in range(4):
        assert f"minOffset=0, maxOffset={ends.get(q, 0)}, MessageQueue [topic={TOPIC}, brokerName={BROKER}, " \
               f"queueId={q}]" in out, admin.last


# --------------------------------------------------------------------------- last: moves offsets

def test_reset_offset_by_time(admin, env):
    """Back to before the first message: the live consumer gets every message again."""
    consumer = env["consumer"]
    out = admin("resetOffsetByTime", "-g", GROUP, "-t", TOPIC, "-s", str(env["first_store_ms"]))
    rows = [line.split() for line in out.splitlines() if line.startswith(BROKER)]
    assert sorted((int(r[1]), int(r[2])) for r in rows) == [(q, 0) for q in range(4)], admin.last
    if admin.version != VERSIONS[0]:
        return  # the broker-to-client part is the same request for both tools (checked once:
        # the client waits 10 s before it applies a reset)
    again = []
    deadline = time.monotonic() + 60
    while len(again) < COUNT and time.monotonic() < deadline:
        line = consumer.readline(max(0.1, deadline - time.monotonic()))
        if line and line.startswith("{") and '"body"' in line:
            again.append(json.loads(line)["body"])
    assert sorted(again) == sorted(f"java-{i}" for i in range(COUNT)), (again, admin.last)
    tb.wait_committed(env["addr"], GROUP, TOPIC, range(4))
