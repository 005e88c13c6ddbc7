"""
rocketmq_tx's admin API (issue 6) against the official Java name server and broker (4.9.x:
broker 4.9.7 + tools 4.9.8; and 5.5.0) and against our own ``rocketmq-standalone``, with the
official ``mqadmin`` as the referee:

* BlockingAdmin creates a topic on every master of the cluster, reads the cluster, the topic
  list, the route and the topic's stats, and each matches mqadmin clusterList, topicList,
  topicRoute and topicStatus;
* a group's progress and lag and its connection (our blocking pull client, heartbeat and
  commits) match mqadmin consumerProgress and consumerConnection;
* messages are found by offset id, by UNIQ_KEY (also through viewMessage with a topic) and by
  key, as mqadmin queryMsgByKey finds them;
* the Twisted MQAdmin (in its own process, txadmin.py) reads what BlockingAdmin reads;
* offsets are reset by time for a connected group (through the brokers) and for a group with
  no consumer (mqadmin resetOffsetByTime's fallback, or the 5.x broker's own reset);
* a topic is deleted from the brokers and the name server.

One cluster per kind, shared by the module; the read-only mqadmin commands of a kind run in
one JVM (AdminBatch).
"""

from __future__ import annotations

import json
import re
import time

import javaharness as jh
import pytest
import rocketmq_java as rj
import txbroker as tb
import txharness as txh

from rocketmq_tx.blocking import BlockingAdmin, BlockingProducer, BlockingPullClient
from rocketmq_tx.common import fastjson
from rocketmq_tx.common.message import Message, MessageQueue
from rocketmq_tx.common.route import TopicConfig, TopicRouteData
from rocketmq_tx.remoting import MQBrokerError, ResponseCode, adminapi
from rocketmq_tx.remoting.api import MQClientError

pytestmark = pytest.mark.compat

TOPIC = "AdminInteropTopic"
GROUP = "AdminInteropGroup"
COUNT = 10


def wait_for(what: str, probe, timeout: float = 60.0):  # type: ignore[no-untyped-def]
    """Poll *probe* until it returns something true (remote state settles asynchronously)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = probe()
        except (MQBrokerError, MQClientError):
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached within {timeout}s")
        time.sleep(0.2)  # polling remote state, bounded by the deadline


@pytest.fixture(scope="module", params=["4.9.8", "5.5.0", "tx"])
def cluster(request, tmp_path_factory):
    """A name server and one broker: the official ones of a version, or our standalone (tools 4.9.8)."""
    kind = request.param
    tools = request.getfixturevalue("java_classpath_5" if kind == "5.5.0" else "java_classpath_4")
    tmp = tmp_path_factory.mktemp(f"admin-{kind}")
    if kind == "tx":
        server = tb.start_standalone(tmp / "store", name="tx-admin-interop", cluster="TxAdminCluster")
        try:
            yield dict(kind=kind, tools=tools, namesrv=server.namesrv, broker_addr=server.addr,
                       broker="tx-admin-interop", cluster="TxAdminCluster", home=rj.JavaHome("admin-interop"))
        finally:
            server.stop()
    else:
        with rj.java_cluster(tools, tmp / "store", graceful=False) as java:
            yield dict(kind=kind, tools=tools, namesrv=java.namesrv_addr, broker_addr=f"127.0.0.1:{java.port}",
                       broker="compat-broker", cluster="CompatCluster", home=java.home)


@pytest.fixture(scope="module")
def env(cluster):
    """TOPIC created by BlockingAdmin, COUNT messages with keys, GROUP online (heartbeat) with commits."""
    ns = cluster["namesrv"]
    admin = BlockingAdmin(ns, timeout=10.0)
    puller = BlockingPullClient(GROUP, ns, timeout=10.0)
    try:
        masters = admin.create_topic_in_cluster(cluster["cluster"], TopicConfig(TOPIC, 4, 4))
        assert masters == [cluster["broker_addr"]]
        wait_for("the topic's route", lambda: admin.examine_topic_route_info(TOPIC).queue_datas)
        sends = []
        with BlockingProducer("AdminInteropPG", ns, send_timeout=10.0) as producer:
            for i in range(COUNT):
                msg = Message(TOPIC, f"admin-{i}".encode())
                msg.keys, msg.tags = [f"ak-{i}"], "TagA"
                sends.append(producer.send(msg, queue=MessageQueue(TOPIC, cluster["broker"], i % 4)))
        per_queue = {q: sum(1 for s in sends if s.message_queue.queue_id == q) for q in range(4)}
        puller.send_heartbeat([TOPIC])  # online from now on; the broker creates %RETRY%GROUP
        committed = {q: n - (1 if q == 0 else 0) for q, n in per_queue.items()}  # a lag of 1, on queue 0
        for q, offset in committed.items():
            puller.commit_offset(MessageQueue(TOPIC, cluster["broker"], q), offset)
        wait_for("the group's retry topic", lambda: admin.examine_topic_route_info(f"%RETRY%{GROUP}").queue_datas)
        yield dict(cluster, admin=admin, puller=puller, sends=sends, per_queue=per_queue, committed=committed)
    finally:
        puller.close()
        admin.close()


@pytest.fixture(scope="module")
def mqadmin(env):
    """The read-only mqadmin commands, run once in one JVM (AdminBatch): args -> (stdout, description)."""
    commands = [("clusterList",), ("topicList",), ("topicRoute", "-t", TOPIC), ("topicStatus", "-t", TOPIC),
                ("consumerProgress", "-g", GROUP), ("consumerConnection", "-g", GROUP),
                ("queryMsgByKey", "-t", TOPIC, "-k", "ak-3")]
    env["puller"].send_heartbeat([TOPIC])
    results = rj.mqadmin_batch_results(env["tools"], [(c[0], "-n", env["namesrv"], *c[1:]) for c in commands],
                                       env["home"])
    answers = {}
    for args, result in zip(commands, results):
        err = jh.stderr_summary(result["err"])
        answers[args[0]] = (result["out"], f"mqadmin {env['kind']} {' '.join(args)}\n--- stdout ---\n"
                                           f"{result['out'][-3000:]}\n--- stderr ---\n{err}")
    return answers


# --------------------------------------------------------------------------- cluster and topics

def test_cluster_info(env, mqadmin):
    info = env["admin"].examine_broker_cluster_info()
    assert info.cluster_addr_table[env["cluster"]] == [env["broker"]]
    assert info.broker_addr_table[env["broker"]].broker_addrs == {0: env["broker_addr"]}
    assert env["admin"].fetch_master_addr_by_cluster_name(env["cluster"]) == [env["broker_addr"]]
    out, desc = mqadmin["clusterList"]
    rows = [line.split()[:4] for line in out.splitlines() if line.startswith(env["cluster"] + " ")]
    assert rows == [[env["cluster"], env["broker"], "0", env["broker_addr"]]], desc


def test_topic_list(env, mqadmin):
    ours = set(env["admin"].fetch_all_topic_list().topic_list)
    out, desc = mqadmin["topicList"]
    theirs = {line.strip() for line in out.splitlines() if re.fullmatch(r"[%|A-Za-z0-9_-]+", line.strip())}
    assert {TOPIC, f"%RETRY%{GROUP}", env["cluster"], env["broker"]} <= ours
    assert theirs == ours, desc


def test_topic_route(env, mqadmin):
    ours = env["admin"].examine_topic_route_info(TOPIC)
    assert [(q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm) for q in ours.queue_datas] == [
        (env["broker"], 4, 4, 6)]
    out, desc = mqadmin["topicRoute"]
    theirs = TopicRouteData.from_json(fastjson.loads(out[out.index("{"):]))
    assert theirs.queue_datas == ours.queue_datas, desc
    assert [(b.broker_name, b.broker_addrs) for b in theirs.broker_datas] == [
        (b.broker_name, b.broker_addrs) for b in ours.broker_datas], desc


def test_topic_stats(env, mqadmin):
    stats = env["admin"].examine_topic_stats(TOPIC)
    ours = {mq.queue_id: (o.min_offset, o.max_offset) for mq, o in stats.offset_table.items()}
    assert ours == {q: (0, n) for q, n in env["per_queue"].items()}
    now_ms = time.time() * 1000
    assert all(abs(o.last_update_timestamp - now_ms) < 600_000 for o in stats.offset_table.values()), stats
    out, desc = mqadmin["topicStatus"]
    rows = [line.split() for line in out.splitlines() if line.startswith(env["broker"] + " ")]
    assert {int(r[1]): (int(r[2]), int(r[3])) for r in rows} == ours, desc


# --------------------------------------------------------------------------- consumers

def test_consumer_progress(env, mqadmin):
    stats = env["admin"].examine_consume_stats(GROUP)
    ours = {(mq.topic, mq.queue_id): (w.broker_offset, w.consumer_offset) for mq, w in stats.offset_table.items()}
    assert ours == {(TOPIC, q): (env["per_queue"][q], c) for q, c in env["committed"].items()}
    assert stats.compute_total_diff() == 1
    assert env["admin"].examine_consume_stats(GROUP, TOPIC).offset_table == stats.offset_table
    out, desc = mqadmin["consumerProgress"]
    rows = [line.split() for line in out.splitlines() if line.startswith(TOPIC + " ")]
    assert {(r[0], int(r[2])): (int(r[3]), int(r[4])) for r in rows} == ours, desc
    assert re.search(r"Diff Total: 1\b", out), desc


def test_consumer_connection(env, mqadmin):
    env["puller"].send_heartbeat([TOPIC])
    connection = env["admin"].examine_consumer_connection_info(GROUP)
    client_id = env["puller"].client.client_id
    assert [c.client_id for c in connection.connection_set] == [client_id]
    assert TOPIC in connection.subscription_table and connection.message_model == "CLUSTERING"
    out, desc = mqadmin["consumerConnection"]
    assert client_id in out, desc


def test_consume_stats_of_unknown_group(env):
    with pytest.raises(MQBrokerError) as e:
        env["admin"].examine_consume_stats("AdminInteropNobody")
    assert e.value.code == ResponseCode.TOPIC_NOT_EXIST  # no %RETRY% route: the group never came


# --------------------------------------------------------------------------- messages

def test_messages(env, mqadmin):
    admin, sends = env["admin"], env["sends"]
    for i in (0, 5):
        assert admin.view_message(sends[i].offset_msg_id).body == f"admin-{i}".encode()
        assert admin.query_message_by_uniq_key(TOPIC, sends[i].msg_id).body == f"admin-{i}".encode()
    # A UNIQ_KEY is no offset id: with the topic, viewMessage falls back to the unique-key query.
    assert admin.view_message(sends[7].msg_id, TOPIC).body == b"admin-7"
    found = admin.query_message(TOPIC, "ak-3").message_list
    assert [(m.body, m.msg_id, m.queue_id, m.queue_offset) for m in found] == [
        (b"admin-3", sends[3].msg_id, sends[3].message_queue.queue_id, sends[3].queue_offset)]
    with pytest.raises(MQClientError) as e:
        admin.query_message(TOPIC, "no-such-key")
    assert e.value.code == ResponseCode.NO_MESSAGE
    out, desc = mqadmin["queryMsgByKey"]
    rows = [line.split()[:3] for line in out.splitlines() if line.strip() and not line.startswith("#")]
    assert rows == [[m.msg_id, str(m.queue_id), str(m.queue_offset)] for m in found], desc


# --------------------------------------------------------------------------- the Twisted admin

def test_twisted_admin_reads_the_same(env):
    """MQAdmin under a real reactor (txadmin.py) against what BlockingAdmin read."""
    env["puller"].send_heartbeat([TOPIC])
    out = txh.run_script("txadmin.py", env["namesrv"], TOPIC, GROUP, "ak-4", timeout=120)
    assert out.returncode == 0, f"{out.stdout[-2000:]}\n{out.stderr[-4000:]}"
    got = json.loads(out.stdout.strip().splitlines()[-1])
    broker = env["broker"]
    assert got["clusters"] == {env["cluster"]: {broker: {"0": env["broker_addr"]}}}
    assert TOPIC in got["topics"]
    assert got["route"] == [[broker, 4, 4, 6]]
    assert got["stats"] == {f"{broker}/{q}": [0, n] for q, n in env["per_queue"].items()}
    assert got["progress"] == {f"{broker}/{q}": [env["per_queue"][q], c] for q, c in env["committed"].items()}
    assert got["lag"] == 1
    assert got["clients"] == [env["puller"].client.client_id]
    assert got["keys"] == ["admin-4"]


# --------------------------------------------------------------------------- last: changes state

def test_reset_offset_of_connected_group(env):
    """Through the brokers (a 4.x broker tells the group's clients; a 5.x broker resets on its side)."""
    env["puller"].send_heartbeat([TOPIC])
    table = env["admin"].reset_offset_by_timestamp(TOPIC, GROUP, 0)
    assert table == {MessageQueue(TOPIC, env["broker"], q): 0 for q in range(4)}
    table = env["admin"].reset_offset_by_timestamp(TOPIC, GROUP, -1)
    assert table == {MessageQueue(TOPIC, env["broker"], q): n for q, n in env["per_queue"].items()}


def test_reset_offset_of_group_without_consumer(env):
    """mqadmin resetOffsetByTime's way: the broker finds no consumer, so the admin commits the offsets."""
    group = "AdminInteropOffline"
    queues = [MessageQueue(TOPIC, env["broker"], q) for q in range(4)]
    with BlockingPullClient(group, env["namesrv"], timeout=10.0) as offline:
        offline.pull(queues[0], 0, 1)  # a 5.x broker creates the group on a pull; no heartbeat: not online
        for mq in queues:
            offline.commit_offset(mq, env["per_queue"][mq.queue_id])
        if env["kind"] != "5.5.0":
            with pytest.raises(MQBrokerError) as e:
                env["admin"].reset_offset_by_timestamp(TOPIC, group, 0)
            assert e.value.code == ResponseCode.CONSUMER_NOT_ONLINE
        table = env["admin"].reset_offset_new(TOPIC, group, 0)
        assert table == {mq: 0 for mq in queues}
        assert [offline.committed_offset(mq) for mq in queues] == [0, 0, 0, 0]


def test_delete_topic(env):
    admin, topic = env["admin"], "AdminInteropDoomed"
    admin.create_topic_in_cluster(env["cluster"], TopicConfig(topic, 2, 2))
    wait_for("the new topic's route", lambda: admin.examine_topic_route_info(topic).queue_datas)
    admin.delete_topic(topic, env["cluster"])
    with pytest.raises(MQBrokerError) as e:
        admin.examine_topic_route_info(topic)
    assert e.value.code == ResponseCode.TOPIC_NOT_EXIST
    assert topic not in admin.fetch_all_topic_list().topic_list
    with pytest.raises(MQBrokerError) as e:
        admin.run(_stats_on(env["broker_addr"], topic))
    assert e.value.code == ResponseCode.TOPIC_NOT_EXIST  # gone from the broker too


def _stats_on(addr: str, topic: str):  # type: ignore[no-untyped-def]
    """A plan asking one broker for the topic's stats (to see that it deleted the topic)."""
    return adminapi.parse_topic_stats_response((yield adminapi.Call(addr, adminapi.topic_stats_request(topic))))
