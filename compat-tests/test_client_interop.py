"""
rocketmq_tx's client library against the official Java name server and broker (4.9.x:
broker 4.9.7 + client/tools 4.9.8; and 5.5.0), with the official clients as peers:

* our producers' messages (blocking and Twisted; single, compressed, batch) reach a Java
  push consumer with body, keys, tags, properties and ids intact;
* a Java producer's messages are read by our blocking pull API (by queue and offset, by
  id, by key, offsets by timestamp) and by our Twisted lite-pull consumer, whose commits
  mqadmin consumerProgress shows;
* our push consumer reads a Java producer's messages, shares a group with a Java push
  consumer, its RECONSUME_LATER goes through %RETRY% to %DLQ%, and mqadmin
  resetOffsetByTime rewinds it while it runs;
* delay levels hold a message back; ordered sends land per queue in order;
* a dead name server in the list is skipped.

One name server and one broker per Java version, shared by the module; and the same
suite against rocketmq_tx's own name server and broker (``rocketmq-standalone``).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import javaharness as jh
import pytest
import rocketmq_java as rj
import txbroker as txb
import txharness as txh

from rocketmq_tx.blocking import BlockingMQClient, BlockingProducer, BlockingPullClient
from rocketmq_tx.common.clientroute import subscribe_queues
from rocketmq_tx.common.message import Message
from rocketmq_tx.remoting import MQBrokerError, api
from rocketmq_tx.remoting.api import SendStatus

pytestmark = pytest.mark.compat

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module", params=["4.9.8", "5.5.0", "tx"])
def cluster(request, tmp_path_factory):
    """
    A name server and broker, the broker registered and its template topic routable: the
    official Java ones of a version, or ("tx") rocketmq_tx's own ``rocketmq-standalone``,
    with the 5.5.0 Java clients and tools as peers.
    """
    target = request.param
    classpath = request.getfixturevalue("java_classpath_5" if target in ("5.5.0", "tx") else "java_classpath_4")
    if target == "tx":
        broker = txb.start_standalone(tmp_path_factory.mktemp("client-interop-tx"), name="broker-a")
        try:
            txh.wait_for_route(broker.namesrv, "TBW102")
            yield dict(version=target, classpath=classpath, namesrv=broker.namesrv, broker=broker.addr,
                       home=rj.JavaHome("tx-client-interop"))
        finally:
            broker.stop()
        return
    ns, ns_addr, _ = rj.start_namesrv(classpath)
    broker = None
    try:
        broker, broker_addr, home = rj.start_broker(classpath, ns_addr)
        txh.wait_for_route(ns_addr, "TBW102")
        yield dict(version=target, classpath=classpath, namesrv=ns_addr, broker=broker_addr, home=home)
    finally:
        jh.stop_together(*([broker.discard] if broker is not None else []), ns.discard)


def txclient(*args: str, timeout: float = 120.0) -> list[dict]:
    """Run compat-tests/txclient.py (our Twisted client in its own process); its JSON lines."""
    out = txh.run_script("txclient.py", *args, timeout=timeout)
    assert out.returncode == 0, f"txclient {args} exited {out.returncode}:\n{out.stdout[-2000:]}\n{out.stderr[-4000:]}"
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def java_peer_lines(classpath: str, args: list[str], timeout: float = 120.0) -> list[dict]:
    return [json.loads(line) for line in jh.run_java(classpath, "ClientPeer", args, timeout=timeout)
            if line.startswith("{")]


def test_our_producers_to_java_push_consumer(cluster):
    """Blocking and Twisted sends, a compressed body and a batch reach the official push consumer intact."""
    topic = "TxToJava"
    expected = {}
    with BlockingProducer("TX_PG", cluster["namesrv"]) as producer:
        for i in range(8):
            body = (f"py-{i}-" + ("x" * 6000 if i == 3 else "")).encode()
            msg = Message(topic, body)
            msg.tags, msg.keys = f"Tag{i % 3}", [f"pk-{i}", f"alt-{i}"]
            msg.put_property("color", f"c{i}")
            result = producer.send(msg)
            assert result.send_status is SendStatus.SEND_OK
            expected[body.decode()] = (msg.tags, f"pk-{i} alt-{i}", f"c{i}", result.msg_id)
        batch = [Message(topic, f"batch-{i}".encode()) for i in range(3)]
        for i, msg in enumerate(batch):
            msg.keys = [f"bk-{i}"]
        result = producer.send_batch(batch)
        for i, (_msg, msg_id) in enumerate(zip(batch, result.msg_id.split(","))):
            expected[f"batch-{i}"] = (None, f"bk-{i}", None, msg_id)
    for line in txclient("produce", cluster["namesrv"], topic, "4")[:-1]:
        i = line["i"]
        assert line["status"] == "SEND_OK"
        expected[f"tx-{i}"] = ("TagA" if i % 2 == 0 else "TagB", f"tk-{i}", None, line["msgId"])

    lines = java_peer_lines(cluster["classpath"], ["consume", cluster["namesrv"], topic, "CG_JAVA_" +
                                                   str(time.monotonic_ns()), str(len(expected)), "60"])
    got = {line["body"]: line for line in lines if "body" in line}
    # Redeliveries (at-least-once) may be printed after the summary line.
    done = next(line for line in lines if "done" in line)
    assert done == {"done": True, "unique": len(expected)}, done
    for body, (tags, keys, color, msg_id) in expected.items():
        line = got[body]
        assert (line["tags"], line["keys"], line["props"].get("color"), line["msgId"]) == (tags, keys, color,
                                                                                          msg_id), line
        assert line["props"]["UNIQ_KEY"] == msg_id


def test_java_producer_to_our_blocking_pull(cluster):
    """Messages sent by the official producer, read by queue and offset, by id, by key and by time."""
    topic = "JavaToTx"
    sent = java_peer_lines(cluster["classpath"], ["produce", cluster["namesrv"], topic, "12"])[:-1]
    assert len(sent) == 12
    txh.wait_for_route(cluster["namesrv"], topic)
    with BlockingPullClient("TX_BLOCK_CG", cluster["namesrv"]) as client:
        messages = txh.pull_all(client, topic)
        by_body = {m.body.decode(): m for m in messages}
        assert sorted(by_body) == sorted(f"java-{i}" for i in range(12))
        for line in sent:
            m = by_body[f"java-{line['i']}"]
            assert (m.msg_id, m.offset_msg_id, m.queue_id, m.queue_offset) == (
                line["msgId"], line["offsetMsgId"], line["queueId"], line["queueOffset"])
            assert (m.tags, m.keys, m.properties["idx"]) == ("TagA" if line["i"] % 2 == 0 else "TagB",
                                                             [f"jk-{line['i']}"], str(line["i"]))
        tagged = [m for mq in client.fetch_queues(topic) for m in client.pull(mq, 0, 32, "TagB").msg_found_list]
        assert sorted(m.body for m in tagged) == sorted(f"java-{i}".encode() for i in range(1, 12, 2))

        first = sent[0]
        mq = next(q for q in client.fetch_queues(topic) if q.queue_id == first["queueId"])
        assert client.max_offset(mq) >= 1
        assert client.min_offset(mq) == 0
        assert client.search_offset(mq, 0) == 0
        assert client.earliest_msg_store_time(mq) > 0
        assert client.client.view_message(first["offsetMsgId"]).body == b"java-0"
        found = client.client.query_messages(topic, "jk-5")
        assert [m.body for m in found] == [b"java-5"]

        client.commit_offset(mq, 1)
        assert client.committed_offset(mq) == 1


def test_java_producer_to_our_lite_pull_consumer(cluster):
    """Our Twisted lite-pull consumer reads what the Java producer sent; mqadmin sees its commits."""
    topic = "JavaToTxLite"
    sent = java_peer_lines(cluster["classpath"], ["produce", cluster["namesrv"], topic, "10"])[:-1]
    txh.wait_for_route(cluster["namesrv"], topic)
    group = "TX_LITE_CG"
    lines = txclient("litepull", cluster["namesrv"], group, topic, "10", "60")
    done = lines[-1]
    assert done["received"] == 10, done
    got = {line["body"]: line for line in lines[:-1]}
    for line in sent:
        m = got[f"java-{line['i']}"]
        assert (m["msgId"], m["queueId"], m["queueOffset"], m["keys"], m["props"]["idx"]) == (
            line["msgId"], line["queueId"], line["queueOffset"], f"jk-{line['i']}", str(line["i"]))

    expected = {}
    for line in sent:
        key = f"{line['broker']}/{line['queueId']}"
        expected[key] = max(expected.get(key, 0), line["queueOffset"] + 1)
    for key, offset in expected.items():
        assert done["committed"][key] == offset
    rows = progress_rows(cluster, group, topic)
    for key, offset in expected.items():
        broker, qid = key.split("/")
        assert rows[(broker, int(qid))] == (offset, offset), rows


def progress_rows(cluster: dict, group: str, topic: str) -> dict:
    """
    mqadmin consumerProgress: (broker, queue) -> (broker offset, consumer offset), retried while
    the route settles.
    """
    deadline = time.monotonic() + 60
    while True:
        try:
            lines = rj.mqadmin(cluster["classpath"], ["consumerProgress", "-n", cluster["namesrv"], "-g", group],
                               cluster["home"])
        except RuntimeError:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)  # the %RETRY% topic's route reaches the name server asynchronously
            continue
        rows = {}
        for line in lines:
            parts = line.split()
            if len(parts) >= 5 and parts[0] == topic and parts[2].isdigit():
                rows[(parts[1], int(parts[2]))] = (int(parts[3]), int(parts[4]))
        if rows or time.monotonic() > deadline:
            return rows
        time.sleep(1)


def test_ordered_sends_per_queue(cluster):
    """send_orderly: every sharding key's messages land in one queue, in send order."""
    topic = "TxOrdered"
    with BlockingProducer("TX_ORDER_PG", cluster["namesrv"]) as producer:
        queues_by_key: dict[str, set] = {}
        for i in range(30):
            key = f"order-{i % 3}"
            result = producer.send_orderly(Message(topic, f"{key}:{i}".encode()), key)
            queues_by_key.setdefault(key, set()).add(result.message_queue)
    txh.wait_for_route(cluster["namesrv"], topic)
    assert all(len(q) == 1 for q in queues_by_key.values()), queues_by_key
    with BlockingPullClient("TX_ORDER_CG", cluster["namesrv"]) as client:
        seqs: dict[str, list[int]] = {}
        for m in sorted(txh.pull_all(client, topic), key=lambda m: (m.queue_id, m.queue_offset)):
            key, _, seq = m.body.decode().partition(":")
            seqs.setdefault(key, []).append(int(seq))
    assert {k: v for k, v in seqs.items()} == {f"order-{k}": list(range(k, 30, 3)) for k in range(3)}


def test_orderly_push_consumer_under_broker_locks(cluster):
    """
    Our orderly PushConsumer on a Java broker: it holds the broker's locks on its queues
    (another client id is refused them), each queue is consumed in offset order, and a
    suspended message is redelivered before anything after it in its queue.
    """
    topic, group = "TxOrderlyConsume", f"TX_ORDERLY_CG_{time.monotonic_ns()}"
    with BlockingProducer("TX_ORDERLY_PG", cluster["namesrv"]) as producer:
        for i in range(24):
            key = f"k{i % 4}"
            producer.send_orderly(Message(topic, f"{key}:{i // 4}".encode()), key)
    txh.wait_for_route(cluster["namesrv"], topic)
    ours = txh.start_txclient("orderly", cluster["namesrv"], group, topic, "90")
    try:
        client_id = json.loads(ours.wait_for(r'"ready"', 60).string)["clientId"]
        got = collect({"tx": ours}, lambda g: len({m["body"] for m in g if m["topic"] == topic}) >= 24, 60)
        with BlockingMQClient(cluster["namesrv"]) as client:
            queues = client.fetch_queues(topic)
            response = client.invoke_broker(queues[0], api.lock_batch_request(group, "10.9.9.9@intruder", queues))
            stolen = api.parse_lock_batch_response(response)
        # GET_CONSUMER_RUNNING_INFO relayed by the broker to our consumer: the official mqadmin
        # and our CLI, with and without -i, in the same run
        ns = cluster["namesrv"]
        status, every = ("\n".join(lines) for lines in rj.mqadmin_batch(
            cluster["classpath"], [["consumerStatus", "-n", ns, "-g", group, "-i", client_id],
                                   ["consumerStatus", "-n", ns, "-g", group]], cluster["home"]))
        mine = txh.admin_cli(ns, "consumerStatus", "-g", group, "-i", client_id)
        mine_every = txh.admin_cli(ns, "consumerStatus", "-g", group, cwd=cluster["home"].root)
    finally:
        ours.stop()
    facts = _status_facts(status)
    assert facts["properties"]["PROP_CONSUMEORDERLY"] == "true" and facts["offsets"], status
    assert _status_facts(mine) == facts, (mine, status)
    for text in (every, mine_every):
        rows = [line.split() for line in text.splitlines() if line.split()[1:2] == [client_id]]
        assert [r[0] for r in rows] == ["1"], text
        assert "Same subscription in the same group of consumer" in text and "Rebalance OK" in text, text
    assert stolen == set(), "the queues are locked by our consumer"
    assert "#Consumer Properties#" in status and "PROP_CONSUMEORDERLY" in status, status
    assert re.search(rf"{topic}\s+\S+\s+\d+\s+\d+", status), status  # a #Consumer Offset# row
    mine = [m for m in got if m["topic"] == topic]
    assert {m["body"] for m in mine} == {f"k{i % 4}:{i // 4}" for i in range(24)}
    for queue_id in {m["queueId"] for m in mine}:
        offsets = [m["queueOffset"] for m in mine if m["queueId"] == queue_id]
        # In order; a suspended first message appears twice in a row, nothing overtakes it.
        assert offsets == sorted(offsets), (queue_id, offsets)
    per_key: dict[str, list[int]] = {}
    for m in mine:
        key, _, seq = m["body"].partition(":")
        if not per_key.get(key) or per_key[key][-1] != int(seq):
            per_key.setdefault(key, []).append(int(seq))
    assert per_key == {f"k{k}": list(range(6)) for k in range(4)}
    attempts: dict[str, list[int]] = {}
    for m in mine:
        attempts.setdefault(m["body"], []).append(m["attempt"])
    assert {b: a for b, a in attempts.items() if b.endswith(":0")} == {f"k{k}:0": [1, 2] for k in range(4)}
    assert all(a == [1] for b, a in attempts.items() if not b.endswith(":0"))


def _status_facts(text: str) -> dict:
    """consumerStatus -i, parsed: properties, subscriptions, and each queue's commit offset."""
    section, facts = "", {"properties": {}, "subscriptions": [], "offsets": {}}
    for line in text.splitlines():
        if line.startswith("#Consumer ") and line.endswith("#"):
            section = line
            continue
        if not line.strip() or line.startswith("#Topic"):
            continue
        if section == "#Consumer Properties#":
            key, _, value = line.partition(": ")
            facts["properties"][key.strip()] = value.strip()
        elif section == "#Consumer Subscription#":
            facts["subscriptions"].append(line.split()[2:])
        elif section == "#Consumer Offset#":
            topic, broker, qid, offset = line.split()
            facts["offsets"][(topic, broker, int(qid))] = int(offset)
    return facts


def test_dead_name_server_skipped(cluster):
    """A name-server list whose first entry is dead still routes and sends."""
    dead = f"127.0.0.1:{jh.free_port()}"
    with BlockingProducer("TX_FAILOVER_PG", f"{dead};{cluster['namesrv']}") as producer:
        assert producer.send(Message("TxToJava", b"failover")).send_status is SendStatus.SEND_OK
        assert producer.client.namesrvs.ordered()[0] == cluster["namesrv"]


def test_examples_run(cluster):
    """Every program in examples/ runs to completion against the Java servers."""
    examples = HERE.parent / "examples"
    topic = "ExampleTopic"
    runs = [("blocking_producer.py", [topic]), ("twisted_producer.py", [topic]),
            ("blocking_pull.py", [topic, "example-pull"]), ("admin.py", [topic, "example-pull"]),
            ("lite_pull_consumer.py", [topic, "example-lite"]),
            ("lite_pull_consumer.py", [topic, "example-lite-subscribe", "--subscribe"]),
            ("push_consumer.py", [topic, "example-push", "30"]),
            ("orderly_consumer.py", [topic, "example-orderly", "30"])]
    for name, args in runs:
        out = subprocess.run([sys.executable, str(examples / name), cluster["namesrv"], *args], capture_output=True,
                             text=True, timeout=120, cwd=str(HERE.parent), env=txh.CHILD_ENV)
        assert out.returncode == 0, f"{name}: {out.stdout[-2000:]}\n{out.stderr[-4000:]}"
        assert out.stdout.strip(), name
        if name == "blocking_producer.py":
            txh.wait_for_route(cluster["namesrv"], topic)  # the first send created the topic


def collect(procs: dict[str, jh.JavaProcess], until: Callable[[list[dict]], bool], timeout: float,
            assigned: dict[str, list[str]] | None = None) -> list[dict]:
    """
    JSON message lines (tagged with "who") from every process until *until* holds or
    *timeout* passes; each process's latest {"assigned": [...]} goes to *assigned*.
    """
    got: list[dict] = []
    deadline = time.monotonic() + timeout
    while not until(got) and time.monotonic() < deadline:
        for who, proc in procs.items():
            try:
                line = proc.readline(0.05)
            except TimeoutError:
                continue
            if line and line.startswith("{") and '"body"' in line:
                got.append({**json.loads(line), "who": who})
            elif line and line.startswith('{"assigned"') and assigned is not None:
                assigned[who] = json.loads(line)["assigned"]
    return got


def partitioned(assigned: dict[str, list[str]], members: int, queues: set[str]) -> bool:
    """Whether *members* consumers each own some queues, none twice, and all of *queues* between them."""
    owned = [set(q) for q in assigned.values()]
    return (len(owned) == members and all(owned) and sum(map(len, owned)) == len(queues)
            and set().union(*owned) == queues)


def test_java_producer_to_our_push_consumer(cluster):
    """Our PushConsumer (long polling, rebalance, commits) receives what the official producer sent."""
    topic = "JavaToTxPush"
    sent = java_peer_lines(cluster["classpath"], ["produce", cluster["namesrv"], topic, "12"])[:-1]
    txh.wait_for_route(cluster["namesrv"], topic)
    ours = txh.start_txclient("push", cluster["namesrv"], "TX_PUSH_CG", topic, "60")
    try:
        ours.wait_for(r'"ready"', 60)
        got = collect({"tx": ours}, lambda g: len({m["body"] for m in g}) >= 12, 60)
    finally:
        ours.stop()
    by_body = {m["body"]: m for m in got}
    assert sorted(by_body) == sorted(f"java-{i}" for i in range(12))
    for line in sent:
        m = by_body[f"java-{line['i']}"]
        assert (m["msgId"], m["queueId"], m["queueOffset"], m["keys"], m["props"]["idx"]) == (
            line["msgId"], line["queueId"], line["queueOffset"], f"jk-{line['i']}", str(line["i"]))


def share_a_group_with_java(cluster, topic: str, group: str, txclient_mode: str) -> None:
    """
    Our consumer (``txclient.py <txclient_mode>``) and the official push consumer in one
    group: every message is consumed, and once the group has settled each queue is served
    by one member only, and both members serve some.
    """
    with BlockingProducer("TX_MIXED_PG", cluster["namesrv"]) as producer:
        for i in range(8):
            producer.send(Message(topic, f"first-{i}".encode()))
    route = txh.wait_for_route(cluster["namesrv"], topic)
    queues = {f"{q.broker_name}/{q.queue_id}" for q in subscribe_queues(topic, route)}
    java = jh.start_java(cluster["classpath"], "ClientPeer", ["consume", cluster["namesrv"], topic, group, "100000",
                                                              "120", "assigned"], ready=r"READY (\d+)")
    ours = txh.start_txclient(txclient_mode, cluster["namesrv"], group, topic, "120")
    procs = {"java": java, "tx": ours}
    assigned: dict[str, list[str]] = {}
    try:
        ours.wait_for(r'"ready"', 60)
        first = collect(procs, lambda g: {m["body"] for m in g} >= {f"first-{i}" for i in range(8)}, 60, assigned)
        assert {m["body"] for m in first} >= {f"first-{i}" for i in range(8)}
        # Both have rebalanced (each does at once on the broker's notification) once their
        # queues split the topic's between them.
        settle = collect(procs, lambda g: partitioned(assigned, 2, queues), 60, assigned)
        assert partitioned(assigned, 2, queues), assigned
        wanted = {f"second-{i}" for i in range(40)}
        with BlockingProducer("TX_MIXED_PG", cluster["namesrv"]) as producer:
            for body in sorted(wanted):
                producer.send(Message(topic, body.encode()))
        second = collect(procs, lambda g: {m["body"] for m in g} >= wanted, 60)
    finally:
        ours.stop()
        java.stop()
    assert not [m for m in settle if m["body"].startswith("second")]
    seconds = [m for m in second if m["body"] in wanted]
    assert {m["body"] for m in seconds} == wanted
    served: dict[int, set] = {}
    for m in seconds:
        served.setdefault(m["queueId"], set()).add(m["who"])
    assert all(len(who) == 1 for who in served.values()), served
    assert {w for who in served.values() for w in who} == {"java", "tx"}, served


def test_our_push_and_java_push_share_a_group(cluster):
    """Our PushConsumer and the official one in one group."""
    share_a_group_with_java(cluster, "MixedGroup", f"MIXED_CG_{time.monotonic_ns()}", "push")


def test_our_lite_pull_subscriber_and_java_push_share_a_group(cluster):
    """LitePullConsumer.subscribe and the official push consumer in one group."""
    share_a_group_with_java(cluster, "MixedLiteGroup", f"MIXED_LITE_CG_{time.monotonic_ns()}", "litesubscribe")


def test_broadcasting_every_member_gets_everything(cluster, tmp_path):
    """Two of our BROADCASTING push consumers in one group on a Java broker: each receives every message."""
    topic, group = "TxBroadcast", f"TX_BCAST_CG_{time.monotonic_ns()}"
    with BlockingProducer("TX_BCAST_PG", cluster["namesrv"]) as producer:
        for i in range(4):
            producer.send(Message(topic, f"warm-{i}".encode()))
    txh.wait_for_route(cluster["namesrv"], topic)
    members = {f"tx{n}": txh.start_txclient("broadcast", cluster["namesrv"], group, topic, "90",
                                            str(tmp_path / f"m{n}"))
               for n in (1, 2)}
    try:
        for proc in members.values():
            proc.wait_for(r'"ready"', 60)
        with BlockingProducer("TX_BCAST_PG", cluster["namesrv"]) as producer:
            wanted = set()
            for i in range(20):
                producer.send(Message(topic, f"b-{i}".encode()))
                wanted.add(f"b-{i}")

        def both(got: list[dict]) -> bool:
            return all({m["body"] for m in got if m["who"] == who} >= wanted for who in members)

        got = collect(members, both, 60)
    finally:
        for proc in members.values():
            proc.stop()
    for who in members:
        assert {m["body"] for m in got if m["who"] == who} >= wanted, who


def test_reconsume_later_then_dlq(cluster):
    """RECONSUME_LATER: the broker redelivers through %RETRY% (delay level 3, 10 s) and, past
    max_reconsume_times (1 here), stores the message in %DLQ%<group>."""
    topic, group = "TxRetry", f"TX_DLQ_CG_{time.monotonic_ns()}"
    with BlockingProducer("TX_DLQ_PG", cluster["namesrv"]) as producer:
        msg = Message(topic, b"doomed")
        msg.keys = ["dlq-key"]
        sent = producer.send(msg)
    txh.wait_for_route(cluster["namesrv"], topic)  # the broker registers the new topic asynchronously
    ours = txh.start_txclient("push", cluster["namesrv"], group, topic, "90", "1")
    try:
        ours.wait_for(r'"ready"', 60)
        deliveries = collect({"tx": ours}, lambda g: len(g) >= 2, 60)
    finally:
        ours.stop()
    assert [(d["body"], d["topic"], d["reconsumeTimes"], d["msgId"]) for d in deliveries[:2]] == [
        ("doomed", topic, 0, sent.msg_id), ("doomed", topic, 1, sent.msg_id)], deliveries
    dlq = f"%DLQ%{group}"
    deadline = time.monotonic() + 30
    found = []
    with BlockingPullClient("TX_DLQ_READER", cluster["namesrv"]) as client:
        while not found:
            try:
                found = txh.pull_all(client, dlq)
            except MQBrokerError:
                pass  # the DLQ topic's route reaches the name server asynchronously
            if not found:
                assert time.monotonic() < deadline, "nothing in the DLQ"
                time.sleep(0.5)
    assert [(m.body, m.unique_key, m.keys) for m in found] == [(b"doomed", sent.msg_id, ["dlq-key"])]


def test_delay_level(cluster):
    """A message sent with delay level 2 (5 s) is not readable at once, and is after the delay."""
    topic = "TxDelay"
    with BlockingProducer("TX_DELAY_PG", cluster["namesrv"]) as producer:
        producer.send(Message(topic, b"warm-up"))  # creates the topic
        txh.wait_for_route(cluster["namesrv"], topic)
        msg = Message(topic, b"later")
        msg.delay_time_level = 2
        sent_at = time.monotonic()
        producer.send(msg)
    with BlockingPullClient("TX_DELAY_CG", cluster["namesrv"]) as client:
        assert b"later" not in [m.body for m in txh.pull_all(client, topic)]
        deadline = time.monotonic() + 30
        while b"later" not in [m.body for m in txh.pull_all(client, topic)]:
            assert time.monotonic() < deadline, "the delayed message never arrived"
            time.sleep(0.5)  # waiting for the broker's schedule, bounded above
    assert time.monotonic() - sent_at >= 4.0


def test_reset_offset_by_time_reaches_our_push_consumer(cluster):
    """mqadmin resetOffsetByTime rewinds our running push consumer (RESET_CONSUMER_CLIENT_OFFSET)."""
    topic, group = "TxReset", f"TX_RESET_CG_{time.monotonic_ns()}"
    before = int(time.time() * 1000) - 1000
    java_peer_lines(cluster["classpath"], ["produce", cluster["namesrv"], topic, "6"])
    route = txh.wait_for_route(cluster["namesrv"], topic)
    bodies = {f"java-{i}" for i in range(6)}
    ours = txh.start_txclient("push", cluster["namesrv"], group, topic, "90")
    try:
        ours.wait_for(r'"ready"', 60)
        first = collect({"tx": ours}, lambda g: {m["body"] for m in g} >= bodies, 60)
        assert {m["body"] for m in first} >= bodies
        # The Java broker refuses the reset ("consumer group not exist", and mqadmin prints
        # nothing) until it holds the group's offset of every queue; a push consumer commits
        # them every 5 s.
        txb.wait_committed(cluster["broker"], group, topic, range(route.queue_datas[0].write_queue_nums))
        admin = rj.mqadmin(cluster["classpath"], ["resetOffsetByTime", "-n", cluster["namesrv"], "-g", group,
                                                  "-t", topic, "-s", str(before)], cluster["home"])
        # mqadmin exits 0 even when the command failed. This three-column table is printed only
        # when the broker reset the running consumer (the fallback for an offline consumer
        # prints six columns).
        assert ["#brokerName", "#queueId", "#offset"] in [line.split() for line in admin], admin
        again = collect({"tx": ours}, lambda g: {m["body"] for m in g} >= bodies, 60)
        log = ours.stderr_path.read_text(errors="replace")
    finally:
        ours.stop()
    assert {m["body"] for m in again} >= bodies, (admin, log[-4000:])
