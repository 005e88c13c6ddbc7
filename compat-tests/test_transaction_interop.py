"""
Transactional messages on our broker, driven by the official Java TransactionMQProducer
(4.9.8 and 5.5.0, ``rocketmq.compat.TxPeer``: one JVM per version for the session, one
command per stdin line, check-backs and consumed messages as event lines):

* commit, rollback, and unknown resolved by the broker's check-back (CHECK_TRANSACTION_STATE)
  to commit, to rollback, and after a second check to commit; a message committed at once
  is never checked;
* a message left unknown is checked ``transactionCheckMax`` times (TRANSACTION_CHECK_TIMES
  1, 2, 3) and then moved to TRANS_CHECK_MAX_TIME_TOPIC (4.9.8), never checked again;
* a 4 MiB transactional message (compressed by the client) through the half queue, the
  check-back and the commit;
* a broker restart (SIGTERM, same store and port) between the half message and its commit:
  the check after the restart resolves it;
* a Java push consumer, and a raw pull of every queue, see exactly the committed messages,
  once each, with TRAN_MSG=true and PGROUP as a Java broker delivers them.

The brokers run with ``transactionCheckInterval=1000`` and ``transactionTimeOut=1000`` (ms)
so the checks come within seconds.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import javaharness as jh
import pytest
import rocketmq_java as rj
import txbroker as tb
import txharness as txh

from rocketmq_tx.blocking import BlockingConnection
from rocketmq_tx.common.messagecodec import decode_messages
from rocketmq_tx.remoting import ResponseCode

CHECK_MAX = 3
TX_SETTINGS = {"transactionCheckInterval": 1000, "transactionTimeOut": 1000, "transactionCheckMax": CHECK_MAX,
               "mappedFileSizeCommitLog": 16 * 1024 * 1024}


class TxPeer:
    """The TxPeer JVM: commands answered in order, events kept as they come."""

    def __init__(self, classpath: str) -> None:
        self.jp = jh.start_java(classpath, "TxPeer", ready=r'"ready": ?true')
        self.answers: queue.Queue[dict] = queue.Queue()
        self.events: list[dict] = []
        self.cond = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while True:
            try:
                line = self.jp.readline(3600)
            except TimeoutError:
                continue
            if line is None:
                return
            if not line.startswith("{"):
                continue
            data = json.loads(line)
            if "event" in data:
                with self.cond:
                    self.events.append(data)
                    self.cond.notify_all()
            else:
                self.answers.put(data)

    def call(self, *args: object, timeout: float = 60.0) -> dict:
        assert self.jp.proc.stdin is not None
        self.jp.proc.stdin.write(("\t".join(map(str, args)) + "\n").encode())
        self.jp.proc.stdin.flush()
        answer = self.answers.get(timeout=timeout)
        assert "error" not in answer, (args, answer, self.jp.stderr_tail())
        return answer

    def matching(self, **want: Any) -> list[dict]:
        with self.cond:
            return [e for e in self.events if all(e.get(k) == v for k, v in want.items())]

    def wait_events(self, count: int, timeout: float = 60.0, **want: Any) -> list[dict]:
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                found = [e for e in self.events if all(e.get(k) == v for k, v in want.items())]
                if len(found) >= count:
                    return found
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"{count} events {want} not seen within {timeout}s: {found}")
                self.cond.wait(remaining)

    def stop(self) -> None:
        self.jp.stop()


_PEERS: dict[str, TxPeer] = {}


@pytest.fixture(scope="session")
def tx_peer(java_peer):
    """One TxPeer JVM per Java version for the whole session."""
    version, classpath = java_peer
    peer = _PEERS.get(version)
    if peer is None:
        peer = _PEERS[version] = TxPeer(classpath)
    yield version, peer


@pytest.fixture(scope="session", autouse=True)
def _stop_peers():
    yield
    for peer in _PEERS.values():
        peer.stop()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("tx-interop")
    ns_proc, namesrv = tb.start_tx_namesrv(tmp)
    broker = tb.start_tx_broker(tmp / "store", namesrv, name="tx-broker-t", extra=TX_SETTINGS)
    yield namesrv, broker
    broker.stop()
    ns_proc.stop()
    problems = tb.broker_log_problems(broker.log_text())
    assert not problems, problems


def tag(version: str) -> str:
    return version.split(".")[0]


def create_topic(broker: tb.TxBroker, namesrv: str, topic: str, queues: int = 4) -> None:
    with BlockingConnection(broker.addr) as conn:
        assert tb.create_topic(conn, topic, queues).code == ResponseCode.SUCCESS
    tb.wait_topic_route(namesrv, topic, [broker.name])


def stored(broker: tb.TxBroker, topic: str, queues: int = 4) -> list[Any]:
    """Every message of the topic, by a raw pull of each queue from offset 0."""
    found = []
    with BlockingConnection(broker.addr) as conn:
        for q in range(queues):
            offset = 0
            while True:
                response = tb.pull(conn, "tx_raw_reader", topic, q, offset)
                if response.code != ResponseCode.SUCCESS:
                    break
                messages = decode_messages(response.body)
                found += messages
                offset = int(response.ext_fields["nextBeginOffset"])
    return found


def stored_keys(broker: tb.TxBroker, topic: str, keys: set[str], timeout: float = 30.0) -> Counter:
    """The first keys of the topic's stored messages, once every one of *keys* is there (or
    *timeout* passed): the commit a check-back answers is a oneway END_TRANSACTION, stored
    and dispatched by the broker a moment after the producer saw the check."""
    deadline = time.monotonic() + timeout
    while True:
        found = Counter(m.keys[0] for m in stored(broker, topic))
        if keys <= set(found) or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def wait_consumed(peer: TxPeer, consumer: str, keys: set[str], quiet: float = 4.0, timeout: float = 90.0
                  ) -> Counter:
    """The keys *consumer* got, once every one of *keys* arrived and *quiet* seconds more passed."""
    for key in keys:
        peer.wait_events(1, timeout, event="msg", consumer=consumer, key=key)
    time.sleep(quiet)  # anything more (a duplicate, an uncommitted message) would show up now
    return Counter(e["key"] for e in peer.matching(event="msg", consumer=consumer))


def test_commit_rollback_and_check_backs(tx_peer, cluster):
    version, peer = tx_peer
    namesrv, broker = cluster
    v = tag(version)
    topic, group = f"TxTopic{v}", f"TxPG{v}"
    create_topic(broker, namesrv, topic)
    peer.call("producer", f"p{v}", namesrv, group)
    plan = {  # key: (local transaction, check-back answers)
        f"commit{v}": ("COMMIT_MESSAGE", "ROLLBACK_MESSAGE"),
        f"rollback{v}": ("ROLLBACK_MESSAGE", "COMMIT_MESSAGE"),
        f"unk-commit{v}": ("UNKNOW", "COMMIT_MESSAGE"),
        f"unk-rollback{v}": ("UNKNOW", "ROLLBACK_MESSAGE"),
        f"unk-unk-commit{v}": ("UNKNOW", "UNKNOW,COMMIT_MESSAGE"),
    }
    sent = {}
    for key, (local, checks) in plan.items():
        sent[key] = peer.call("send", f"p{v}", topic, key, local, checks, 64)
        assert sent[key]["status"] == "SEND_OK", sent[key]
        assert sent[key]["local"] == local
    peer.wait_events(1, 30, event="check", key=f"unk-commit{v}")
    peer.wait_events(1, 30, event="check", key=f"unk-rollback{v}")
    two = peer.wait_events(2, 30, event="check", key=f"unk-unk-commit{v}")
    assert [e["times"] for e in two[:2]] == ["1", "2"]
    first = peer.matching(event="check", key=f"unk-commit{v}")[0]
    assert (first["topic"], first["bodyLen"], first["times"]) == (topic, 64, "1")
    assert first["transactionId"] == sent[f"unk-commit{v}"]["msgId"]  # the UNIQ_KEY, as Java sends it
    peer.call("consume", f"c{v}", namesrv, topic, f"TxCG{v}")
    committed = {f"commit{v}", f"unk-commit{v}", f"unk-unk-commit{v}"}
    got = wait_consumed(peer, f"c{v}", committed)
    assert got == Counter({k: 1 for k in committed}), got
    # committed at once or rolled back by the producer: never checked; resolved ones not again
    assert peer.matching(event="check", key=f"commit{v}") == []
    assert peer.matching(event="check", key=f"rollback{v}") == []
    assert len(peer.matching(event="check", key=f"unk-commit{v}")) == 1
    assert len(peer.matching(event="check", key=f"unk-rollback{v}")) == 1
    assert len(peer.matching(event="check", key=f"unk-unk-commit{v}")) == 2
    msgs = peer.matching(event="msg", consumer=f"c{v}")
    assert all(m["tranMsg"] == "true" and m["pgroup"] == group and m["topic"] == topic for m in msgs), msgs
    assert all(m["sysFlag"] & 0xC == 0x8 for m in msgs), msgs
    raw = stored(broker, topic)
    assert Counter(m.keys[0] for m in raw) == Counter({k: 1 for k in committed})
    by_key = {m.keys[0]: m for m in raw}
    # the commit is the producer's message: queue as sent, body intact, UNIQ_KEY = the msgId
    for key in committed:
        assert by_key[key].queue_id == sent[key]["queueId"]
        assert by_key[key].unique_key == sent[key]["msgId"]
        assert len(by_key[key].body) == 64
    peer.call("shutdown", f"p{v}")


def test_check_max_then_discarded(tx_peer, cluster):
    version, peer = tx_peer
    namesrv, broker = cluster
    v = tag(version)
    topic, group = f"TxMax{v}", f"TxMaxPG{v}"
    create_topic(broker, namesrv, topic)
    peer.call("producer", f"pm{v}", namesrv, group)
    key = f"max{v}"
    assert peer.call("send", f"pm{v}", topic, key, "UNKNOW", "UNKNOW", 32)["status"] == "SEND_OK"
    checks = peer.wait_events(CHECK_MAX, 30, event="check", key=key)
    assert [c["times"] for c in checks] == [str(i) for i in range(1, CHECK_MAX + 1)]
    time.sleep(4)  # four more check intervals: no more checks
    assert len(peer.matching(event="check", key=key)) == CHECK_MAX
    assert stored(broker, topic) == []
    kept = [m for m in stored(broker, "TRANS_CHECK_MAX_TIME_TOPIC", 1) if m.keys == [key]]
    assert len(kept) == 1
    assert kept[0].properties["REAL_TOPIC"] == topic
    assert kept[0].properties["TRANSACTION_CHECK_TIMES"] == str(CHECK_MAX)
    peer.call("shutdown", f"pm{v}")


def test_four_mib_message_checked_then_committed(tx_peer, cluster):
    version, peer = tx_peer
    namesrv, broker = cluster
    v = tag(version)
    topic, group = f"TxBig{v}", f"TxBigPG{v}"
    create_topic(broker, namesrv, topic)
    peer.call("producer", f"pb{v}", namesrv, group)
    size = 4 * 1024 * 1024
    key = f"big{v}"
    r = peer.call("send", f"pb{v}", topic, key, "UNKNOW", "COMMIT_MESSAGE", size)
    assert r["status"] == "SEND_OK", r
    [check] = peer.wait_events(1, 30, event="check", key=key)
    assert check["bodyLen"] == size
    peer.call("consume", f"cb{v}", namesrv, topic, f"TxBigCG{v}")
    got = wait_consumed(peer, f"cb{v}", {key})
    assert got == Counter({key: 1})
    [msg] = peer.matching(event="msg", consumer=f"cb{v}")
    assert msg["bodyLen"] == size
    peer.call("shutdown", f"pb{v}")


def test_broker_restart_between_half_and_commit(tx_peer, tmp_path: Path):
    version, peer = tx_peer
    v = tag(version)
    ns_proc, namesrv = tb.start_tx_namesrv(tmp_path)
    # The restarted broker knows the producer again at its next heartbeat (every 30 s); the
    # checks before that find no channel but still count, so allow more of them here.
    settings = {**TX_SETTINGS, "transactionCheckMax": 60}
    broker = tb.start_tx_broker(tmp_path / "store", namesrv, name=f"tx-restart-{v}", extra=settings)
    try:
        topic, group = f"TxRestart{v}", f"TxRestartPG{v}"
        create_topic(broker, namesrv, topic)
        peer.call("producer", f"pr{v}", namesrv, group)
        key = f"restart{v}"
        assert peer.call("send", f"pr{v}", topic, key, "UNKNOW", "UNKNOW", 128)["status"] == "SEND_OK"
        peer.wait_events(1, 30, event="check", key=key)  # checked, left unknown
        assert broker.stop() in (0, -15)
        broker = tb.restart(broker)
        peer.call("plan", key, "COMMIT_MESSAGE")
        [after] = peer.wait_events(1, 90, event="check", key=key, answer="COMMIT_MESSAGE")
        assert int(after["times"]) >= 2  # the count went on across the restart
        peer.call("consume", f"cr{v}", namesrv, topic, f"TxRestartCG{v}")
        assert wait_consumed(peer, f"cr{v}", {key}) == Counter({key: 1})
        assert len(peer.matching(event="check", key=key, answer="COMMIT_MESSAGE")) == 1
        assert [m.keys for m in stored(broker, topic)] == [[key]]
        peer.call("shutdown", f"pr{v}")
        problems = tb.broker_log_problems(broker.log_text())
        assert not problems, problems
    finally:
        broker.stop()
        ns_proc.stop()


def test_another_producer_of_the_group_answers(tx_peer, cluster):
    """The producer that sent the half message is gone (UNREGISTER_CLIENT at shutdown):
    the check goes to the other producer of the group."""
    version, peer = tx_peer
    namesrv, broker = cluster
    v = tag(version)
    topic, group = f"TxTwo{v}", f"TxTwoPG{v}"
    create_topic(broker, namesrv, topic)
    peer.call("producer", f"first{v}", namesrv, group)
    peer.call("producer", f"second{v}", namesrv, group)
    # the second producer's heartbeat reaches the broker once it has a route: a send gives it one
    assert peer.call("send", f"second{v}", topic, f"warm{v}", "COMMIT_MESSAGE", "ROLLBACK_MESSAGE", 8)[
        "status"] == "SEND_OK"
    key = f"orphan{v}"
    assert peer.call("send", f"first{v}", topic, key, "UNKNOW", "COMMIT_MESSAGE", 16)["status"] == "SEND_OK"
    peer.call("shutdown", f"first{v}")
    [check] = peer.wait_events(1, 30, event="check", key=key)
    assert check["producer"] == f"second{v}"
    peer.call("consume", f"ct{v}", namesrv, topic, f"TxTwoCG{v}")
    assert wait_consumed(peer, f"ct{v}", {key, f"warm{v}"}) == Counter({key: 1, f"warm{v}": 1})
    peer.call("shutdown", f"second{v}")


# ------------------------------------------------------------------ store takeover, both ways

#: Both brokers with the same file sizes (the harness's small ConsumeQueue and index files).
JAVA_TX = {"transactionCheckInterval": "1000", "transactionTimeOut": "1000", "transactionCheckMax": "60",
           **txh.SMALL_STORE}
TAKEOVER_SETTINGS = {**TX_SETTINGS, "transactionCheckMax": 60}


def _first_half(peer: TxPeer, producer: str, namesrv: str, group: str, topic: str, v: str, side: str) -> str:
    """Commit, rollback and one left unknown (checked once by the first broker); returns its key."""
    peer.call("producer", producer, namesrv, group)
    for key, local in ((f"{side}-commit{v}", "COMMIT_MESSAGE"), (f"{side}-rollback{v}", "ROLLBACK_MESSAGE"),
                       (f"{side}-pending{v}", "UNKNOW")):
        assert peer.call("send", producer, topic, key, local, "UNKNOW", 256)["status"] == "SEND_OK"
    peer.wait_events(1, 30, event="check", key=f"{side}-pending{v}")
    peer.call("shutdown", producer)
    return f"{side}-pending{v}"


def _second_half(peer: TxPeer, producer: str, namesrv: str, group: str, topic: str, v: str, side: str,
                 pending: str) -> None:
    """The other broker resolves the pending one with a producer of the same group."""
    peer.call("plan", pending, "COMMIT_MESSAGE")
    peer.call("producer", producer, namesrv, group)
    assert peer.call("send", producer, topic, f"{side}-after{v}", "COMMIT_MESSAGE", "UNKNOW", 8)["status"] == "SEND_OK"
    peer.wait_events(1, 90, event="check", key=pending, answer="COMMIT_MESSAGE")
    peer.call("shutdown", producer)


def test_store_written_by_java_taken_over(tx_peer, java_peer, tmp_path: Path):
    version, peer = tx_peer
    _, cp = java_peer
    v = tag(version)
    root = tmp_path / "store"
    topic, group = f"TxFromJava{v}", f"TxFromJavaPG{v}"
    with rj.java_cluster(cp, root, commitlog_size=TX_SETTINGS["mappedFileSizeCommitLog"], extra=JAVA_TX) as jc:
        with BlockingConnection(f"127.0.0.1:{jc.port}") as conn:
            assert tb.create_topic(conn, topic).code == ResponseCode.SUCCESS
        tb.wait_topic_route(jc.namesrv_addr, topic, ["compat-broker"])
        pending = _first_half(peer, f"j1{v}", jc.namesrv_addr, group, topic, v, "java")
    assert not (root / "abort").exists()
    ns_proc, namesrv = tb.start_tx_namesrv(tmp_path)
    broker = tb.start_tx_broker(root, namesrv, name=f"tx-takeover-{v}", extra=TAKEOVER_SETTINGS)
    try:
        tb.wait_topic_route(namesrv, topic, [broker.name])
        _second_half(peer, f"t1{v}", namesrv, group, topic, v, "java", pending)
        want = Counter({f"java-commit{v}": 1, pending: 1, f"java-after{v}": 1})
        keys = stored_keys(broker, topic, set(want))
        assert keys == want, keys
        problems = tb.broker_log_problems(broker.log_text())
        assert not problems, problems
    finally:
        broker.stop()
        ns_proc.stop()


def test_store_written_by_us_taken_over_by_java(tx_peer, java_peer, tmp_path: Path):
    version, peer = tx_peer
    _, cp = java_peer
    v = tag(version)
    root = tmp_path / "store"
    topic, group = f"TxToJava{v}", f"TxToJavaPG{v}"
    port = rj.free_port_block()
    ns_proc, namesrv = tb.start_tx_namesrv(tmp_path)
    broker = tb.start_tx_broker(root, namesrv, name=f"tx-handover-{v}", extra=TAKEOVER_SETTINGS, port=port)
    try:
        create_topic(broker, namesrv, topic)
        pending = _first_half(peer, f"t2{v}", namesrv, group, topic, v, "tx")
    finally:
        assert broker.stop() in (0, -15)
        ns_proc.stop()
    with rj.java_cluster(cp, root, commitlog_size=TX_SETTINGS["mappedFileSizeCommitLog"], extra=JAVA_TX,
                         port=port, graceful=False) as jc:
        tb.wait_topic_route(jc.namesrv_addr, topic, ["compat-broker"])
        _second_half(peer, f"j2{v}", jc.namesrv_addr, group, topic, v, "tx", pending)
        want = Counter({f"tx-commit{v}": 1, pending: 1, f"tx-after{v}": 1})
        keys = stored_keys(broker, topic, set(want))
        assert keys == want, keys
