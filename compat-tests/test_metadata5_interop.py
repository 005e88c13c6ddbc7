"""
5.x topic and group metadata, driven the same way against our ``rocketmq-standalone`` and the
Java 5.5.0 name server + broker in one run, asserting the same outcome on both:

* topic attributes through the official 5.5.0 ``mqadmin updateTopic -a +message.type=FIFO``,
  answered by GET_TOPIC_CONFIG (351) and GET_ALL_TOPIC_CONFIG, and kept in topics.json;
  Java's refusals (unknown key, bad value, MIXED, unchangeable key, a ``-`` key at creation)
  as raw UPDATE_AND_CREATE_TOPIC requests: code and remark equal;
* UPDATE_AND_CREATE_TOPIC_LIST (18) and UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST (225) raw;
* ``mqadmin updateSubGroup`` with 5.x options (``-o`` consumeMessageOrderly, ``-p``
  groupRetryPolicy, ``-r``), read back with GET_SUBSCRIPTIONGROUP_CONFIG (352), also for an
  unknown (auto-created) group, and printed by ``mqadmin getConsumerConfig`` (352 through
  ``DefaultMQAdminExt``);
* ``mqadmin setConsumeMode`` (401) read back with GET_ALL_MESSAGE_REQUEST_MODE (402), and 401's
  refusals;
* QUERY_TOPICS_BY_CONSUMER (343) and QUERY_SUBSCRIPTION_BY_CONSUMER (345);
* sends: a FIFO topic takes a plain message (the 5.x broker does not check message types), a
  COMPACTION topic refuses a message without keys;
* ``mqadmin topicRoute`` / ``topicStatus`` on the FIFO topic;
* QUERY_ASSIGNMENT (400) from two live clients, in PULL and POP mode;
* the three config files taken over both ways.
"""

from __future__ import annotations

import concurrent.futures
import json
import subprocess
import time
from pathlib import Path
from typing import Any

import javaharness as jh
import pytest
import rocketmq_java as rj
import txbroker as tb

from rocketmq_tx.blocking import BlockingConnection
from rocketmq_tx.broker.test.util import heartbeat
from rocketmq_tx.common import fastjson
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode

pytestmark = pytest.mark.compat

FIFO_TOPIC = "Meta5Fifo"
GROUP = "Meta5Group"
POLICY = {"type": "CUSTOMIZED", "customizedRetryPolicy": {"next": [1000, 5000, 10000]}}


class Side:
    """One broker under test: its name server, address, store and an mqadmin of tools 5.5.0."""

    def __init__(self, name: str, ns: str, addr: str, store: Path, classpath: str, home: rj.JavaHome,
                 broker_name: str) -> None:
        self.name = name
        self.broker_name = broker_name
        self.ns = ns
        self.addr = addr
        self.store = store
        self.classpath = classpath
        self.home = home

    def mqadmin(self, *args: str) -> str:
        argv = ["java", *self.home.jvm_args(), "-XX:TieredStopAtLevel=1", "-cp", self.classpath,
                "org.apache.rocketmq.tools.command.MQAdminStartup", args[0], "-n", self.ns, *args[1:]]
        out = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=str(self.home.root),
                             env=self.home.env())
        return out.stdout + "\n--- stderr ---\n" + "\n".join(
            line for line in out.stderr.splitlines()[-30:] if not line.lstrip().startswith("at "))

    def invoke(self, code: int, fields: dict[str, str] | None = None, body: Any = None) -> RemotingCommand:
        data = b"" if body is None else fastjson.dumps(body)
        with BlockingConnection(self.addr) as conn:
            return conn.invoke(RemotingCommand.request(code, fields or {}, data), 10)

    def body(self, code: int, fields: dict[str, str] | None = None, body: Any = None) -> Any:
        response = self.invoke(code, fields, body)
        assert response.code == ResponseCode.SUCCESS, (self.name, code, response.code, response.remark)
        return fastjson.loads(response.body)

    def create_topic(self, topic: str, attributes: str | None, queues: int = 4) -> RemotingCommand:
        fields = {"topic": topic, "defaultTopic": "TBW102", "readQueueNums": str(queues),
                  "writeQueueNums": str(queues), "perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0",
                  "order": "false"}
        if attributes is not None:
            fields["attributes"] = attributes
        return self.invoke(RequestCode.UPDATE_AND_CREATE_TOPIC, fields)

    def topics_json(self) -> dict:
        return json.loads((self.store / "config" / "topics.json").read_text())["topicConfigTable"]


@pytest.fixture(scope="module")
def sides(java_classpath_5, tmp_path_factory):
    """Our standalone and the Java 5.5.0 name server + broker, each with its own mqadmin home."""
    tmp = tmp_path_factory.mktemp("meta5")
    ours = tb.start_standalone(tmp / "tx-store", name="tx-meta5", cluster="Meta5Cluster")
    namesrv = broker = None
    try:
        namesrv, ns, home = rj.start_namesrv(java_classpath_5, label="meta5-ns")
        java_store = tmp / "java-store"
        broker, addr, _ = rj.start_broker(java_classpath_5, ns, broker_name="java-meta5", cluster="Meta5Cluster",
                                          home=home, store_root=java_store)
        rj.wait_for_registration(ns)
        yield [Side("tx", ours.namesrv, ours.addr, Path(ours.store), java_classpath_5, rj.JavaHome("meta5-tx-tools"),
                    "tx-meta5"),
               Side("java", ns, addr, java_store, java_classpath_5, rj.JavaHome("meta5-java-tools"),
                    "java-meta5")]
        problems = tb.broker_log_problems(ours.log_text())
        assert not problems, "broker logged errors:\n" + "\n".join(problems)
    finally:
        jh.stop_together(*[p.discard for p in (broker, namesrv) if p is not None], ours.stop)


def both(sides: list[Side], fn) -> dict[str, Any]:
    """*fn* on every side at once (the sides share nothing; an mqadmin JVM spends seconds, mostly waiting)."""
    with concurrent.futures.ThreadPoolExecutor(len(sides)) as pool:
        futures = {side.name: pool.submit(fn, side) for side in sides}
    return {name: future.result() for name, future in futures.items()}


def outcome(response: RemotingCommand) -> tuple[int, str | None]:
    return response.code, response.remark


def same(results: dict[str, Any]) -> Any:
    assert results["tx"] == results["java"], results
    return results["tx"]


def test_update_topic_with_attributes(sides):
    """mqadmin updateTopic -a +message.type=FIFO: stored, answered by 351 and 21, kept in topics.json."""
    outs = both(sides, lambda s: s.mqadmin("updateTopic", "-b", s.addr, "-t", FIFO_TOPIC, "-r", "2", "-w", "2",
                                           "-a", "+message.type=FIFO"))
    for name, out in outs.items():
        assert "create topic to" in out and "success" in out, (name, out)
    config = same(both(sides, lambda s: {k: v for k, v in s.body(RequestCode.GET_TOPIC_CONFIG,
                                                                 {"topic": FIFO_TOPIC}).items()
                                         if k in ("attributes", "readQueueNums", "writeQueueNums", "perm")}))
    assert config["attributes"] == {"message.type": "FIFO"}
    same(both(sides, lambda s: s.body(RequestCode.GET_ALL_TOPIC_CONFIG)["topicConfigTable"][FIFO_TOPIC]
              ["attributes"]))

    def stored(side: Side) -> Any:
        deadline = time.monotonic() + 15
        while True:  # ours writes off the reactor, soon after the change
            try:
                return side.topics_json()[FIFO_TOPIC]["attributes"]
            except (KeyError, FileNotFoundError, json.JSONDecodeError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
    assert same(both(sides, stored)) == {"message.type": "FIFO"}


def test_attribute_refusals(sides):
    """Java's codes and remarks for modifications it refuses, equal on both brokers."""
    for topic, attributes in [("Meta5Bad1", "+unknown.key=1"), ("Meta5Bad2", "+message.type=NOPE"),
                              ("Meta5Bad3", "+message.type=MIXED"), ("Meta5Bad4", "-message.type"),
                              ("Meta5Bad5", "message.type=FIFO"), ("Meta5Bad6", "+reserve.time=x")]:
        result = same(both(sides, lambda s, t=topic, a=attributes: outcome(s.create_topic(t, a))))
        assert result[0] != ResponseCode.SUCCESS, (attributes, result)
        if attributes == "+unknown.key=1":
            assert result == (ResponseCode.SYSTEM_ERROR, "unsupported key: unknown.key")
        if attributes == "+message.type=MIXED":
            assert result == (ResponseCode.INVALID_PARAMETER, "MIXED message type is not supported.")
    for side in sides:
        assert side.create_topic("Meta5Queue", "+queue.type=SimpleCQ").code == ResponseCode.SUCCESS
    result = same(both(sides, lambda s: outcome(s.create_topic("Meta5Queue", "+queue.type=BatchCQ"))))
    assert result == (ResponseCode.SYSTEM_ERROR, "attempt to update an unchangeable attribute. key: queue.type")
    # An update without attributes keeps them; "-" removes one.
    same(both(sides, lambda s: s.create_topic("Meta5Queue", "+message.type=DELAY").code))
    same(both(sides, lambda s: s.create_topic("Meta5Queue", "", queues=8).code))
    kept = same(both(sides, lambda s: s.body(RequestCode.GET_TOPIC_CONFIG, {"topic": "Meta5Queue"})["attributes"]))
    assert kept == {"queue.type": "SimpleCQ", "message.type": "DELAY"}
    same(both(sides, lambda s: s.create_topic("Meta5Queue", "-message.type").code))
    assert same(both(sides, lambda s: s.body(RequestCode.GET_TOPIC_CONFIG, {"topic": "Meta5Queue"})
                     ["attributes"])) == {"queue.type": "SimpleCQ"}


def test_topic_and_group_lists(sides):
    """UPDATE_AND_CREATE_TOPIC_LIST (18) and UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST (225)."""
    topics = {"topicConfigList": [
        {"topicName": "Meta5L1", "readQueueNums": 2, "writeQueueNums": 2, "perm": 6, "topicFilterType": "SINGLE_TAG",
         "attributes": {"+message.type": "TRANSACTION"}},
        {"topicName": "Meta5L2", "readQueueNums": 1, "writeQueueNums": 1, "perm": 6, "topicFilterType": "SINGLE_TAG",
         "attributes": {}}]}
    same(both(sides, lambda s: s.invoke(RequestCode.UPDATE_AND_CREATE_TOPIC_LIST, body=topics).code))
    got = same(both(sides, lambda s: [(lambda c: (c["writeQueueNums"], c.get("attributes") or {}))(
        s.body(RequestCode.GET_TOPIC_CONFIG, {"topic": t})) for t in ("Meta5L1", "Meta5L2")]))
    assert got == [(2, {"message.type": "TRANSACTION"}), (1, {})]
    groups = {"groupConfigList": [{"groupName": "Meta5G1", "consumeMessageOrderly": True, "retryMaxTimes": 5},
                                  {"groupName": "Meta5G2"}]}
    same(both(sides, lambda s: s.invoke(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST, body=groups).code))
    got = same(both(sides, lambda s: (lambda g: (g["consumeMessageOrderly"], g["retryMaxTimes"]))(
        s.body(RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG, {"group": "Meta5G1"}))))
    assert got == (True, 5)


def test_update_sub_group_and_352(sides):
    """mqadmin updateSubGroup with 5.x options, read back with GET_SUBSCRIPTIONGROUP_CONFIG."""
    outs = both(sides, lambda s: s.mqadmin("updateSubGroup", "-b", s.addr, "-g", GROUP, "-o", "true", "-r", "3",
                                           "-p", json.dumps(POLICY)))
    for name, out in outs.items():
        assert "create subscription group to" in out and "success" in out, (name, out)
    keys = ("groupName", "consumeMessageOrderly", "retryMaxTimes", "groupRetryPolicy", "consumeEnable",
            "retryQueueNums")
    got = same(both(sides, lambda s: {k: s.body(RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG, {"group": GROUP}).get(k)
                                      for k in keys}))
    assert (got["consumeMessageOrderly"], got["retryMaxTimes"]) == (True, 3)
    assert got["groupRetryPolicy"]["type"] == "CUSTOMIZED"
    assert got["groupRetryPolicy"]["customizedRetryPolicy"]["next"] == POLICY["customizedRetryPolicy"]["next"]
    # An unknown group is created on the spot (autoCreateSubscriptionGroup defaults to true).
    auto = same(both(sides, lambda s: (lambda g: (g["groupName"], g["retryMaxTimes"], g["consumeEnable"]))(
        s.body(RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG, {"group": "Meta5Auto"}))))
    assert auto == ("Meta5Auto", 16, True)
    # An unknown group attribute: SYSTEM_ERROR on both (Java's remark adds its stack frame).
    refused = both(sides, lambda s: s.invoke(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
                                             body={"groupName": "Meta5Attr", "attributes": {"+nope": "1"}}))
    for name, r in refused.items():
        assert r.code == ResponseCode.SYSTEM_ERROR, (name, r.code, r.remark)
        assert r.remark.startswith("java.lang.RuntimeException: unsupported key: nope"), (name, r.remark)


def test_get_consumer_config(sides):
    """mqadmin getConsumerConfig (DefaultMQAdminExt.examineSubscriptionGroupConfig, 352) prints
    the same group settings from both brokers."""
    def printed(side: Side) -> list[str]:
        out = side.mqadmin("getConsumerConfig", "-g", GROUP)
        fields = sorted(line.strip() for line in out.split("--- stderr ---")[0].splitlines()
                        if "=" in line and not line.startswith("="))
        assert any("consumeMessageOrderly" in f for f in fields), (side.name, out)
        return fields
    fields = same(both(sides, printed))
    assert any(f.replace(" ", "") == "retryMaxTimes=3" for f in fields), fields

def test_set_consume_mode_and_402(sides):
    """mqadmin setConsumeMode (401), then GET_ALL_MESSAGE_REQUEST_MODE (402); 401's refusals."""
    outs = both(sides, lambda s: s.mqadmin("setConsumeMode", "-b", s.addr, "-t", FIFO_TOPIC, "-g", GROUP,
                                           "-m", "POP", "-q", "2"))
    for name, out in outs.items():
        assert "set consume mode to" in out and "success" in out, (name, out)
    modes = same(both(sides, lambda s: s.body(RequestCode.GET_ALL_MESSAGE_REQUEST_MODE)))
    assert modes["messageRequestModeMap"][FIFO_TOPIC][GROUP] == {
        "consumerGroup": GROUP, "mode": "POP", "popShareQueueNum": 2, "topic": FIFO_TOPIC}
    for body in ({"topic": "%RETRY%" + GROUP, "consumerGroup": GROUP, "mode": "POP"},
                 {"topic": "Meta5Missing", "consumerGroup": GROUP, "mode": "POP"}):
        result = same(both(sides, lambda s, b=body: outcome(s.invoke(RequestCode.SET_MESSAGE_REQUEST_MODE, body=b))))
        assert result[0] in (ResponseCode.NO_PERMISSION, ResponseCode.TOPIC_NOT_EXIST), result


def test_query_topics_and_subscription_by_consumer(sides):
    """343: the group's topics with offsets; 345 without a live consumer: group and topic only."""
    for side in sides:
        fields = {"consumerGroup": GROUP, "topic": FIFO_TOPIC, "queueId": "0", "commitOffset": "0"}
        r = side.invoke(RequestCode.UPDATE_CONSUMER_OFFSET, fields)
        assert r.code == ResponseCode.SUCCESS, (side.name, r.code, r.remark)
    topics = both(sides, lambda s: s.body(RequestCode.QUERY_TOPICS_BY_CONSUMER, {"group": GROUP}))
    for side in sides:
        assert topics[side.name]["topicList"] == [FIFO_TOPIC] and topics[side.name]["brokerAddr"], topics
    same(both(sides, lambda s: s.body(RequestCode.QUERY_SUBSCRIPTION_BY_CONSUMER,
                                      {"group": GROUP, "topic": FIFO_TOPIC})))


def test_sends_and_route(sides):
    """A FIFO topic takes a plain message on both; a COMPACTION topic refuses one without keys;
    mqadmin topicRoute and topicStatus show the FIFO topic's queues."""
    for side in sides:
        with BlockingConnection(side.addr) as conn:
            assert tb.send(conn, FIFO_TOPIC, b"plain").code == ResponseCode.SUCCESS, side.name
    same(both(sides, lambda s: s.create_topic("Meta5Compact", "+cleanup.policy=COMPACTION").code))

    def send_no_keys(side: Side) -> Any:
        with BlockingConnection(side.addr) as conn:
            return outcome(tb.send(conn, "Meta5Compact", b"x"))
    assert same(both(sides, send_no_keys)) == (ResponseCode.MESSAGE_ILLEGAL, "Required message key is missing")
    routes = both(sides, lambda s: s.mqadmin("topicRoute", "-t", FIFO_TOPIC))
    statuses = both(sides, lambda s: s.mqadmin("topicStatus", "-t", FIFO_TOPIC))
    for side in sides:
        route = routes[side.name]
        assert '"writeQueueNums":2' in route.replace(" ", ""), (side.name, route)
        status = statuses[side.name]
        rows = [line for line in status.splitlines() if line.startswith(side.broker_name)]
        assert len(rows) == 2, (side.name, status)


def test_query_assignment(sides):
    """QUERY_ASSIGNMENT (400) from two live clients of a group: AVG over the route in PULL mode,
    and POP mode (set by setConsumeMode above, sharing 2 of 2 clients): every queue, id -1."""
    def assignments(side: Side) -> dict:
        conns = [BlockingConnection(side.addr) for _ in range(2)]
        try:
            out: dict = {}
            for n, conn in enumerate(conns):
                for group in (GROUP, "Meta5PullGroup"):
                    hb = heartbeat(f"meta5-cid-{n}", consumers={group: {FIFO_TOPIC: "*"}})
                    assert conn.invoke(hb, 10).code == ResponseCode.SUCCESS
            for n, conn in enumerate(conns):
                for group in (GROUP, "Meta5PullGroup"):
                    body = {"topic": FIFO_TOPIC, "consumerGroup": group, "clientId": f"meta5-cid-{n}",
                            "strategyName": "AVG", "messageModel": "CLUSTERING"}
                    r = conn.invoke(RemotingCommand.request(RequestCode.QUERY_ASSIGNMENT, {},
                                                            fastjson.dumps(body)), 10)
                    assert r.code == ResponseCode.SUCCESS, (side.name, r.code, r.remark)
                    data = fastjson.loads(r.body)
                    out[(n, group)] = sorted(
                        (a["messageQueue"]["brokerName"] == side.broker_name, a["messageQueue"]["queueId"], a["mode"])
                        for a in data.get("messageQueueAssignments") or [])
            return out
        finally:
            for conn in conns:
                conn.close()
    got = same(both(sides, assignments))
    assert got[(0, GROUP)] == got[(1, GROUP)] == [(True, -1, "POP")]
    assert got[(0, "Meta5PullGroup")] == [(True, 0, "PULL")] and got[(1, "Meta5PullGroup")] == [(True, 1, "PULL")]


def _wait_config(store: Path, name: str, needle: str, timeout: float = 20.0) -> None:
    """Until ``config/<name>`` holds *needle* (ours writes off the reactor, soon after a change)."""
    path = store / "config" / name
    deadline = time.monotonic() + timeout
    while not (path.is_file() and needle in path.read_text()):
        assert time.monotonic() < deadline, f"{path} never held {needle!r}"
        time.sleep(0.1)


def _metadata(side: Side) -> tuple:
    config = side.body(RequestCode.GET_TOPIC_CONFIG, {"topic": FIFO_TOPIC})
    group = side.body(RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG, {"group": GROUP})
    modes = side.body(RequestCode.GET_ALL_MESSAGE_REQUEST_MODE)["messageRequestModeMap"]
    return (config.get("attributes"), group["consumeMessageOrderly"], group["retryMaxTimes"],
            group["groupRetryPolicy"]["customizedRetryPolicy"]["next"], modes[FIFO_TOPIC][GROUP]["mode"])


def test_config_takeover_both_ways(sides, tmp_path, java_classpath_5):
    """topics.json, subscriptionGroup.json and messageRequestMode.json written by one broker are
    read by the other: ours on the Java 5.5.0 broker's config files, Java 5.5.0 on ours."""
    tx, java = sides
    expected = same(both(sides, _metadata))
    for store in (tx.store, java.store):
        _wait_config(store, "topics.json", '"message.type"')
        _wait_config(store, "subscriptionGroup.json", "CUSTOMIZED")
        _wait_config(store, "messageRequestMode.json", '"POP"')
    taken = tmp_path / "tx-on-java-config"
    tb.copy_live_config(java.store / "config", taken / "config")
    ours = tb.start_tx_broker(taken, None, name="tx-meta5-takeover", cluster="Meta5Cluster")
    try:
        side = Side("tx-takeover", tx.ns, ours.addr, taken, tx.classpath, tx.home, "tx-meta5-takeover")
        assert _metadata(side) == expected
    finally:
        ours.stop()
    handed = tmp_path / "java-on-tx-config"
    tb.copy_live_config(tx.store / "config", handed / "config")
    proc, addr, _ = rj.start_broker(java_classpath_5, java.ns, broker_name="java-meta5-takeover",
                                    cluster="Meta5Cluster", label="meta5-takeover", store_root=handed)
    try:
        side = Side("java-takeover", java.ns, addr, handed, java.classpath, java.home, "java-meta5-takeover")
        assert _metadata(side) == expected
    finally:
        proc.discard()  # a throwaway copy of the configuration
