"""
The official 5.5.0 remoting client's ``DefaultMQPushConsumer`` in POP mode against our
``rocketmq-standalone`` and the Java 5.5.0 name server + broker, in the same run, with the same
program (``rocketmq.compat.PopPushPeer``, run against both at once), asserting the same outcome:

* the groups' request mode set to POP with SET_MESSAGE_REQUEST_MODE: one group's by
  ``mqadmin setConsumeMode -c <cluster>`` (every master the name server lists; ``-b`` is run in
  test_metadata5_interop.py), the others' by ``DefaultMQAdminExt.setMessageRequestMode``; read back
  with GET_ALL_MESSAGE_REQUEST_MODE;
* consumers with ``clientRebalance=false`` learn POP mode through QUERY_ASSIGNMENT and consume by
  POP_MESSAGE (each message carries the POP_CK the broker built), ack with ACK_MESSAGE: every
  message delivered once, nothing delivered again after the invisible time;
* RECONSUME_LATER: the client changes the invisible time (CHANGE_MESSAGE_INVISIBLETIME), the broker
  revives the message through its POP retry topic, the client sees it under the original topic
  with reconsumeTimes counted; at ``maxReconsumeTimes`` the 5.x client acks the message itself
  (no DLQ for POP consumption from the remoting client: neither broker forwards one);
* ``MessageListenerOrderly`` with the group in POP mode: the 5.5.0 client rebalances orderly
  consumers itself and pulls with queue locks (``RebalancePushImpl.clientRebalance``), so POP mode
  does not apply; per-queue order is kept on both.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import javaharness as jh
import pytest
import rocketmq_java as rj
import txbroker as tb

from rocketmq_tx.blocking import BlockingConnection
from rocketmq_tx.common import fastjson
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode

pytestmark = pytest.mark.compat

SCENARIOS = ("ack", "retry", "orderly")
CLUSTER = "PopPush"
SEND_PATH_KEYS = {"MSG_REGION", "TRACE_ON", "WAIT"}


def run_peer(classpath: str, ns: str, addr: str, side: str) -> dict:
    jp = jh.spawn_java(classpath, "PopPushPeer", [ns, addr, side.capitalize(), CLUSTER])
    lines = jh.collect(jp, timeout=150)
    return json.loads(next(line for line in lines if line.startswith("{")))


@pytest.fixture(scope="module")
def runs(java_classpath_5, tmp_path_factory):
    """Each side started and PopPushPeer run against it as soon as it is up, both sides at once:
    {"tx": {"addr", "run"}, "java": {...}} (run: PopPushPeer's JSON)."""
    tmp = tmp_path_factory.mktemp("pop-push")
    procs: dict[str, Any] = {}
    out: dict[str, dict] = {"tx": {}, "java": {}}

    def tx() -> None:
        ours = procs["tx"] = tb.start_standalone(tmp / "tx-store", name="tx-poppush", cluster=CLUSTER)
        out["tx"]["addr"] = ours.addr
        out["tx"]["run"] = run_peer(java_classpath_5, ours.namesrv, ours.addr, "tx")

    def java() -> None:
        namesrv, ns, home = procs["java_ns"] = rj.start_namesrv(java_classpath_5, label="poppush-ns")
        procs["java"], addr, _ = rj.start_broker(java_classpath_5, ns, broker_name="java-poppush", cluster=CLUSTER,
                                                 home=home, store_root=tmp / "java-store")
        rj.wait_for_registration(ns)
        out["java"]["addr"] = addr
        out["java"]["run"] = run_peer(java_classpath_5, ns, addr, "java")

    def stop(name: str) -> None:
        proc = procs.get(name)
        if name == "java_ns" and proc is not None:
            proc[0].stop()
        elif name == "java" and proc is not None:
            proc.stop(grace=5)  # its store is thrown away: no need to wait for a clean shutdown
        elif proc is not None:
            proc.stop()

    try:
        errors = in_threads(tx, java)
        assert not errors, errors
        yield out
        problems = tb.broker_log_problems(procs["tx"].log_text())
        assert not problems, "broker logged errors:\n" + "\n".join(problems)
    finally:
        in_threads(*(lambda n=n: stop(n) for n in ("tx", "java", "java_ns")))


def in_threads(*fns: Callable[[], None]) -> list[BaseException]:
    """Run *fns* at once; return what they raised."""
    errors: list[BaseException] = []

    def guarded(fn: Callable[[], None]) -> None:
        try:
            fn()
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=(fn,)) for fn in fns]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def modes(addr: str) -> dict:
    with BlockingConnection(addr) as conn:
        r = conn.invoke(RemotingCommand.request(RequestCode.GET_ALL_MESSAGE_REQUEST_MODE), 10)
    assert r.code == ResponseCode.SUCCESS, (r.code, r.remark)
    return fastjson.loads(r.body)["messageRequestModeMap"]


def summary(run: dict, side: str) -> dict:
    """What a run saw, without timings, queue ids or names that differ between the two runs."""
    d = run["deliveries"]
    topic = "PopPush" + side.capitalize() + "_"
    got: dict = {"timedOut": run["timedOut"]}
    for scenario in ("ack", "retry"):
        got[scenario] = sorted((m["body"], m["reconsumeTimes"], m["topic"] == topic + scenario, m["popCk"])
                               for m in d[scenario])
    per_queue: dict[int, list[str]] = {}
    for m in d["orderly"]:
        per_queue.setdefault(m["queueId"], []).append(m["body"])
    got["orderly"] = sorted(per_queue.values())
    got["orderly_pop"] = sorted({m["popCk"] for m in d["orderly"]})
    # the property keys of each delivery (less the three the 5.x send path stores and ours, as 4.9,
    # does not: docs/compatibility.md), and one message id per message across its redeliveries
    got["keys"] = sorted((s, m["body"], m["reconsumeTimes"], tuple(sorted(set(m["props"]) - SEND_PATH_KEYS)))
                         for s in SCENARIOS for m in d[s])
    got["ids"] = sorted((s, m["body"], len({n["msgId"] for n in d[s] if n["body"] == m["body"]}))
                        for s in SCENARIOS for m in d[s])
    return got


def test_request_mode_read_back(runs):
    """The modes PopPushPeer set (SET_MESSAGE_REQUEST_MODE, one through ``mqadmin setConsumeMode -c``)
    are what both brokers answer with 402."""
    got = {}
    for side, started in runs.items():
        out = started["run"]["setConsumeMode"]
        assert f"set consume mode to {started['addr']} success" in out, (side, out)
        table = modes(started["addr"])
        got[side] = {s: table["PopPush" + side.capitalize() + "_" + s]["PopPushGroup" + side.capitalize() + "_" + s]
                     ["mode"] for s in SCENARIOS}
    assert got["tx"] == got["java"] == {s: "POP" for s in SCENARIOS}, got


def test_push_consumer_pop_same_as_java(runs):
    ours, java = summary(runs["tx"]["run"], "tx"), summary(runs["java"]["run"], "java")
    assert ours == java, (ours, java)
    assert ours["timedOut"] is False, runs["tx"]["run"]
    # each message once, popped (POP_CK present), acked: nothing delivered again
    assert ours["ack"] == sorted((f"a{i}", 0, True, True) for i in range(16)), ours
    # reconsumeTimes counted on each redelivery, under the original topic; "never" acked by the
    # client at maxReconsumeTimes (2), so three deliveries and no more
    assert ours["retry"] == [("never", 0, True, True), ("never", 1, True, True), ("never", 2, True, True),
                             ("ok", 0, True, True), ("once", 0, True, True), ("once", 1, True, True)], ours
    assert ours["orderly"] == [[f"q0-{i}" for i in range(5)], [f"q1-{i}" for i in range(5)]], ours
    assert ours["orderly_pop"] == [False], ours
    assert {n for _, _, n in ours["ids"]} == {1}, ours["ids"]
    revived = {keys for s, body, times, keys in ours["keys"] if times > 0}
    assert revived == {("1ST_POP_TIME", "CLUSTER", "CONSUME_START_TIME", "ORIGIN_GROUP", "POP_CK", "TAGS",
                        "UNIQ_KEY")}, ours["keys"]


def test_redelivery_not_before_changed_invisible_time(runs):
    """RECONSUME_LATER changes the invisible time to the client's delay (1 s here): no redelivery
    earlier than that after the previous delivery, by the client's clock. Java's checkpoints go
    through its timer wheel (1 s slots), so it is allowed a slot of slack (as in test_pop_interop)."""
    for side, started in runs.items():
        slack = 1000 if side == "java" else 0
        run = started["run"]
        times: dict[str, list[int]] = {}
        for m in run["deliveries"]["retry"]:
            times.setdefault(m["body"], []).append(m["ms"])
        for body in ("once", "never"):
            gaps = [b - a for a, b in zip(times[body], times[body][1:], strict=False)]
            assert gaps and min(gaps) >= 1000 - slack, (side, body, gaps)


def test_no_dlq_for_pop(runs):
    """The message the client gave up on ("never") was acked, not forwarded: neither broker has a
    DLQ topic for the group."""
    got = {}
    for side, started in runs.items():
        group = "PopPushGroup" + side.capitalize() + "_retry"
        with BlockingConnection(started["addr"]) as conn:
            r = conn.invoke(RemotingCommand.request(RequestCode.GET_TOPIC_CONFIG, {"topic": "%DLQ%" + group}), 10)
        got[side] = r.code
    assert got["tx"] == got["java"] != ResponseCode.SUCCESS, got
