"""
POP consumption (5.x) on our broker and on the Java 5.5.0 broker in the same run, driven by
the official 5.5.0 remoting client's POP calls (``rocketmq.compat.PopPeer``:
``MQClientAPIImpl.popMessageAsync``, ``ackMessageAsync``, ``batchAckMessageAsync``,
``changeInvisibleTimeAsync``; POP is driven directly rather than through
SET_MESSAGE_REQUEST_MODE, which is another branch's work). One scenario, same outcome:

* three messages popped at once (invisible 4 s), reconsume times 0;
* the first acked: never delivered again;
* the second's invisible time changed to 12 s: delivered again no earlier than 12 s after
  the change, reconsume times 1;
* the third left alone: delivered again no earlier than 4 s after the pop, through the POP
  retry topic (under the original topic, reconsume times 1, ``1ST_POP_TIME`` set), then
  acked with a BATCH_ACK_MESSAGE built by the client: not delivered again;
* waiting POPs (``pollTime``) are answered when the revived messages arrive;
* FIFO (``order=true``): a queue blocked while its messages are out, the offset moved by
  acks, the unacked message and the one behind it handed out again in order after the
  invisible time, the redelivery counted (``orderCountInfo`` → reconsume times);
* our broker killed with SIGKILL between the POP and the invisible time, then restarted on
  the same store: the acked message stays acked, the other comes back once (the revive log is
  read back).
"""

from __future__ import annotations

import json
import os
import queue
import signal
import threading
import time
from typing import Any

import javaharness as jh
import pytest
import rocketmq_java as rj
import txbroker as tb

from rocketmq_tx.blocking import BlockingConnection
from rocketmq_tx.remoting import ResponseCode

INVISIBLE_MS = 4000
CHANGED_MS = 12000
POLL_MS = 5000


class PopPeer:
    """The PopPeer JVM: one command per line, one JSON answer each."""

    def __init__(self, classpath: str) -> None:
        self.jp = jh.start_java(classpath, "PopPeer", ready=r'"ready": ?true')
        self.answers: queue.Queue[dict] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        while True:
            try:
                line = self.jp.readline(3600)
            except TimeoutError:
                continue
            if line is None:
                return
            if line.startswith("{"):
                self.answers.put(json.loads(line))

    def call(self, *args: object, timeout: float = 90.0) -> dict:
        assert self.jp.proc.stdin is not None
        self.jp.proc.stdin.write(("\t".join(map(str, args)) + "\n").encode())
        self.jp.proc.stdin.flush()
        answer = self.answers.get(timeout=timeout)
        assert "error" not in answer, (args, answer, self.jp.stderr_tail())
        return answer


@pytest.fixture(scope="module")
def pop_peer(java_classpath_5):
    peer = PopPeer(java_classpath_5)
    yield peer
    peer.jp.stop()


@pytest.fixture(scope="module")
def tx_broker(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pop-interop")
    ns_proc, namesrv = tb.start_tx_namesrv(tmp)
    broker = tb.start_tx_broker(tmp / "store", namesrv, name="tx-pop-broker")
    yield broker.addr, broker.name
    broker.stop()
    ns_proc.stop()
    problems = tb.broker_log_problems(broker.log_text())
    assert not problems, problems


@pytest.fixture(scope="module")
def java_broker(java_classpath_5, tmp_path_factory):
    with rj.java_cluster(java_classpath_5, tmp_path_factory.mktemp("pop-java") / "store",
                         commitlog_size=64 << 20, graceful=False) as cluster:
        yield f"127.0.0.1:{cluster.port}", "compat-broker"


def scenario(peer: PopPeer, addr: str, broker_name: str, tag: str) -> dict[str, Any]:
    """Run the scenario against one broker; return what it saw, in a broker-neutral form."""
    topic, group = f"PopTopic{tag}", f"PopGroup{tag}"
    with BlockingConnection(addr) as conn:
        assert tb.create_topic(conn, topic, 1).code == ResponseCode.SUCCESS
        for body in (b"m0", b"m1", b"m2"):
            assert tb.send(conn, topic, body, 0).code == ResponseCode.SUCCESS
    outcome: dict[str, Any] = {}
    first = peer.call("pop", addr, broker_name, topic, group, 32, INVISIBLE_MS, 0)
    assert first["status"] == "FOUND", first
    msgs = {m["body"]: m for m in first["msgs"]}
    outcome["first"] = sorted((m["body"], m["reconsumeTimes"], m["topic"] == topic, m["extraInfo"].split(" ")[4])
                              for m in first["msgs"])
    m0, m1 = msgs["m0"], msgs["m1"]
    outcome["ack"] = peer.call("ack", addr, topic, group, m0["queueId"], m0["queueOffset"], m0["extraInfo"])["status"]
    changed = peer.call("change", addr, broker_name, topic, group, m1["queueId"], m1["queueOffset"],
                        m1["extraInfo"], CHANGED_MS)
    outcome["change"] = changed["status"]
    again: list[tuple[str, int, bool, str]] = []
    # ms from the (first) pop time to the revival's store time, both by the broker's clock: a
    # revived message carries 1ST_POP_TIME = its checkpoint's pop time (the change's for m1)
    elapsed: dict[str, int] = {}
    deadline = time.monotonic() + 60
    while len(again) < 2 and time.monotonic() < deadline:
        got = peer.call("pop", addr, broker_name, topic, group, 32, INVISIBLE_MS, POLL_MS)
        for m in got["msgs"]:
            elapsed[m["body"]] = int(m["storeTimestamp"]) - int(m["firstPopTime"])
            if m["body"] == "m2":
                # acked in a batch, as the client builds BATCH_ACK_MESSAGE from extra infos
                outcome["batchack"] = peer.call("batchack", addr, topic, group, m["extraInfo"])["status"]
            else:
                outcome["ack2"] = peer.call("ack", addr, topic, group, m["queueId"], m["queueOffset"],
                                            m["extraInfo"])["status"]
            again.append((m["body"], m["reconsumeTimes"], m["topic"] == topic, m["extraInfo"].split(" ")[4]))
            assert m["firstPopTime"] is not None, m
    outcome["again"] = sorted(again)
    outcome["elapsed"] = elapsed
    # m0 acked, m2 batch-acked, m1 acked: nothing more, even past every invisible time
    quiet_until = time.monotonic() + INVISIBLE_MS / 1000 + 4
    late = []
    while time.monotonic() < quiet_until:
        got = peer.call("pop", addr, broker_name, topic, group, 32, INVISIBLE_MS, 2000)
        late += [m["body"] for m in got["msgs"]]
    outcome["late"] = late
    return outcome


def test_pop_ack_change_revive_same_as_java(pop_peer, tx_broker, java_broker):
    ours = scenario(pop_peer, *tx_broker, "Tx")
    java = scenario(pop_peer, *java_broker, "Java")
    ours_elapsed, java_elapsed = ours.pop("elapsed"), java.pop("elapsed")
    assert ours == java, (ours, java)
    # Not before the invisible time: ours revives once it has passed; Java's checkpoints go
    # through its timer wheel (1 s slots), so it is allowed a slot of slack.
    for elapsed, slack in ((ours_elapsed, 0), (java_elapsed, 1000)):
        assert elapsed["m2"] >= INVISIBLE_MS - slack, (ours_elapsed, java_elapsed)
        assert elapsed["m1"] >= CHANGED_MS - slack, (ours_elapsed, java_elapsed)
    # the original topic, the normal topic's flag (0) first, the V1 retry topic's (1) after revival
    assert ours["first"] == [("m0", 0, True, "0"), ("m1", 0, True, "0"), ("m2", 0, True, "0")]
    assert ours["again"] == [("m1", 1, True, "1"), ("m2", 1, True, "1")], ours
    assert (ours["ack"], ours["change"], ours["batchack"], ours["ack2"], ours["late"]) == ("OK", "OK", "OK", "OK", [])


def fifo_scenario(peer: PopPeer, addr: str, broker_name: str, tag: str) -> dict[str, Any]:
    topic, group = f"FifoTopic{tag}", f"FifoGroup{tag}"
    with BlockingConnection(addr) as conn:
        assert tb.create_topic(conn, topic, 1).code == ResponseCode.SUCCESS
        for body in (b"f0", b"f1", b"f2"):
            assert tb.send(conn, topic, body, 0).code == ResponseCode.SUCCESS

    def pop(poll_ms: int = 0, max_nums: int = 2) -> dict:
        return peer.call("pop", addr, broker_name, topic, group, max_nums, INVISIBLE_MS, poll_ms, "order")

    def summary(got: dict) -> tuple:
        return got["status"], [(m["body"], m["reconsumeTimes"], m["extraInfo"].split(" ")[3]) for m in got["msgs"]]

    outcome: dict[str, Any] = {}
    first = pop()
    outcome["first"] = summary(first)
    outcome["blocked"] = summary(pop())[0]
    f0 = first["msgs"][0]
    outcome["ack"] = peer.call("ack", addr, topic, group, f0["queueId"], f0["queueOffset"], f0["extraInfo"])["status"]
    outcome["still_blocked"] = summary(pop())[0]
    again = pop(poll_ms=0, max_nums=32)
    deadline = time.monotonic() + 30
    while not again["msgs"] and time.monotonic() < deadline:
        time.sleep(0.2)
        again = pop(poll_ms=0, max_nums=32)
    if again["msgs"]:  # pop times by the broker's clock (extra info field 1): not before the invisible time
        popped = [int(got["msgs"][0]["extraInfo"].split(" ")[1]) for got in (first, again)]
        outcome["again_early"] = popped[1] - popped[0] < INVISIBLE_MS
    outcome["again"] = summary(again)
    for m in again["msgs"]:
        outcome.setdefault("acks", []).append(
            peer.call("ack", addr, topic, group, m["queueId"], m["queueOffset"], m["extraInfo"])["status"])
    outcome["after"] = summary(pop(poll_ms=1000))
    return outcome


def test_fifo_pop_same_as_java(pop_peer, tx_broker, java_broker):
    ours = fifo_scenario(pop_peer, *tx_broker, "Tx")
    java = fifo_scenario(pop_peer, *java_broker, "Java")
    assert ours == java, (ours, java)
    assert ours["first"] == ("FOUND", [("f0", 0, "999"), ("f1", 0, "999")]), ours
    assert (ours["blocked"], ours["ack"], ours["still_blocked"]) == ("POLLING_NOT_FOUND", "OK", "POLLING_NOT_FOUND")
    assert ours["again"] == ("FOUND", [("f1", 1, "999"), ("f2", 0, "999")]), ours
    assert (ours["again_early"], ours["acks"], ours["after"]) == (False, ["OK", "OK"], ("POLLING_NOT_FOUND", []))


def test_pop_state_survives_kill_9(pop_peer, tmp_path):
    ns_proc, namesrv = tb.start_tx_namesrv(tmp_path)
    broker = tb.start_tx_broker(tmp_path / "store", namesrv, name="tx-pop-kill")
    try:
        topic, group = "PopKill", "PopKillGroup"
        with BlockingConnection(broker.addr) as conn:
            assert tb.create_topic(conn, topic, 1).code == ResponseCode.SUCCESS
            for body in (b"k0", b"k1"):
                assert tb.send(conn, topic, body, 0).code == ResponseCode.SUCCESS
        first = pop_peer.call("pop", broker.addr, broker.name, topic, group, 32, 6000, 0)
        assert sorted(m["body"] for m in first["msgs"]) == ["k0", "k1"], first
        k0 = next(m for m in first["msgs"] if m["body"] == "k0")
        assert pop_peer.call("ack", broker.addr, topic, group, k0["queueId"], k0["queueOffset"],
                             k0["extraInfo"])["status"] == "OK"
        os.kill(broker.pid, signal.SIGKILL)
        broker.proc.proc.wait(10)
        broker = tb.restart(broker)
        seen = []
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline and not seen:
            got = pop_peer.call("pop", broker.addr, broker.name, topic, group, 32, 6000, POLL_MS)
            seen += [(m["body"], m["reconsumeTimes"]) for m in got["msgs"]]
            for m in got["msgs"]:
                assert pop_peer.call("ack", broker.addr, topic, group, m["queueId"], m["queueOffset"],
                                     m["extraInfo"])["status"] == "OK"
        assert seen == [("k1", 1)], seen
        quiet_until = time.monotonic() + 8
        while time.monotonic() < quiet_until:
            got = pop_peer.call("pop", broker.addr, broker.name, topic, group, 32, 6000, 2000)
            assert got["msgs"] == [], got
    finally:
        broker.stop()
        ns_proc.stop()
