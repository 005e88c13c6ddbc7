"""
Timer messages of RocketMQ 5.x (``TIMER_DELIVER_MS`` / ``TIMER_DELAY_SEC`` / ``TIMER_DELAY_MS``)
sent by the official Java 5.5.0 producer (``Message.setDeliverTimeMs``, ``setDelayTimeSec``,
``setDelayTimeMs``; ``rocketmq.compat.TimerPeer``) and received by the official push consumer:

* on our broker and on the Java 5.5.0 broker in the same run (plus one timer sent by our
  Python producer with ``Message.deliver_time_ms``): every message is received no
  earlier than its delivery time and at most one tick (``timerPrecisionMs``, 1 s) plus
  scheduling slack after it; a time already past is delivered at once; the delivered
  messages carry the same property names on both brokers (REAL_TOPIC/REAL_QID kept, as Java
  serialises them before it drops them; TIMER_OUT_MS, TIMER_ENQUEUE_MS, TIMER_DEQUEUE_MS);
* on ours, pending timers survive a clean restart and a kill -9;
* a store with pending timers written by the Java 5.5.0 broker (timerlog, timerwheel,
  config/timercheck) is taken over by our broker, which delivers them on time, once; and the
  other way, the Java 5.5.0 broker delivers the timers pending in a store ours wrote;
* GET_TIMER_CHECK_POINT (60) answers the 56-byte checkpoint and GET_TIMER_METRICS (61) the
  same JSON shape on both brokers, the topic's pending count back to 0 after delivery.

Lateness is measured on the delivered record's store timestamp (the broker's clock, when it
wrote the message back to its topic) and, looser, on the consumer's receive time.
"""

from __future__ import annotations

import json
import os
import signal
import struct
import time
from pathlib import Path

import javaharness as jh
import pytest
import rocketmq_java as rj
import txbroker as tb

from rocketmq_tx.blocking import BlockingConnection, BlockingProducer
from rocketmq_tx.common.message import Message
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.store.timer.formats import MAGIC_DEFAULT, UNIT_SIZE, TimerUnit
from rocketmq_tx.store.timer.wheel import TimerWheel

PRECISION_MS = 1000
#: the store timestamp of a delivered message is at most this much after its time (one
#: tick plus slack for a shared 2-core machine)
STORE_LATE_MS = PRECISION_MS + 1000
#: the consumer's receive time, which adds the push consumer's pull round trip
RECV_LATE_MS = PRECISION_MS + 2500
#: Both brokers use the same small store sizes, so a Java store can be taken over as it is.
SMALL = {"maxHashSlotNum": "5000", "maxIndexNum": "20000", "mappedFileSizeConsumeQueue": str(20 * 20_000)}
COMMITLOG_SIZE = 1 << 20

pytestmark = pytest.mark.compat


@pytest.fixture(scope="module")
def cp5(java_classpath_5: str) -> str:
    return java_classpath_5


@pytest.fixture(scope="module")
def tx_cluster(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("timer-interop")
    ns_proc, namesrv = tb.start_tx_namesrv(tmp)
    broker = tb.start_tx_broker(tmp / "store", namesrv, name="tx-timer-broker",
                                extra={"mappedFileSizeCommitLog": COMMITLOG_SIZE})
    state = {"broker": broker}
    yield namesrv, state
    state["broker"].stop()
    ns_proc.stop()


@pytest.fixture(scope="module")
def java_broker(cp5, tmp_path_factory):
    root = tmp_path_factory.mktemp("java-timer") / "store"
    with rj.java_cluster(cp5, root, commitlog_size=COMMITLOG_SIZE, extra=SMALL, graceful=False) as cluster:
        yield cluster


def create_topic(addr: str, namesrv: str, topic: str, broker_name: str) -> None:
    with BlockingConnection(addr) as conn:
        assert tb.create_topic(conn, topic, 4).code == ResponseCode.SUCCESS
    tb.wait_topic_route(namesrv, topic, [broker_name])


def produce(cp: str, namesrv: str, topic: str, specs: list[str]) -> dict[str, dict]:
    lines = jh.run_java(cp, "TimerPeer", ["produce", namesrv, topic, f"TimerPG_{topic}", *specs], timeout=120)
    sent = {}
    for line in lines:
        if line.startswith("{"):
            data = json.loads(line)
            if "body" in data:
                sent[data["body"]] = data
    assert all(s.get("status") == "SEND_OK" for s in sent.values()), sent
    assert set(sent) == {s.split(":", 1)[0] for s in specs}
    return sent


class Consumer:
    """The TimerPeer push consumer, started before the messages are due."""

    def __init__(self, cp: str, namesrv: str, topic: str, count: int, timeout_s: int = 180) -> None:
        self.count = count
        self.got: dict[str, list[dict]] = {}
        self.jp = jh.start_java(cp, "TimerPeer", ["consume", namesrv, topic, f"TimerCG_{topic}", str(count),
                                                  str(timeout_s)])

    def _read_until(self, done, timeout: float) -> None:  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + timeout
        while not done():
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"only {self.got} within {timeout}s: {self.jp.stderr_tail()}"
            try:
                line = self.jp.readline(remaining)
            except TimeoutError:
                continue
            assert line is not None, f"consumer ended early with {self.got}: {self.jp.stderr_tail()}"
            if line.startswith("{") and "recvMs" in line:
                data = json.loads(line)
                self.got.setdefault(data["body"], []).append(data)

    def wait_for(self, body: str, timeout: float = 90.0) -> None:
        """Until *body* arrived: the consumer is then pulling (its first rebalance is done)."""
        self._read_until(lambda: body in self.got, timeout)

    def collect(self, timeout: float = 120.0) -> dict[str, list[dict]]:
        """Every delivery by body (a body seen twice is two entries) once ``count`` arrived."""
        try:
            self._read_until(lambda: sum(len(v) for v in self.got.values()) >= self.count, timeout)
        finally:
            self.jp.stop()
        return self.got


def deliver_times(sent: dict[str, dict], specs: list[str]) -> dict[str, int]:
    """Each body's delivery time: absolute, or the send time plus the delay (the broker counts
    from when it got the message, a little later: the bound only gets tighter)."""
    out = {}
    for spec in specs:
        body, kind, value = spec.split(":", 2)
        v = int(value)
        out[body] = v if kind == "deliver" else sent[body]["sendMs"] + (v * 1000 if kind == "sec" else v)
    return out


def check_on_time(got: dict[str, list[dict]], due: dict[str, int], past: set[str] = frozenset(),
                  recv_bound: bool = True) -> None:
    """Stored (and received) never early; stored within a tick (+ slack); received within
    :data:`RECV_LATE_MS` when *recv_bound* (a consumer started after a broker start may wait
    for its next rebalance, a client matter)."""
    for body, when in due.items():
        assert body in got, (body, got.keys())
        for d in got[body]:
            if body in past:
                assert d["storeMs"] - when < 60_000
                continue
            assert d["storeMs"] >= when, f"{body}: stored {when - d['storeMs']} ms early"
            assert d["recvMs"] >= when, f"{body}: received {when - d['recvMs']} ms early"
            assert d["storeMs"] - when <= STORE_LATE_MS, f"{body}: stored {d['storeMs'] - when} ms late"
            if recv_bound:
                assert d["recvMs"] - when <= RECV_LATE_MS, f"{body}: received {d['recvMs'] - when} ms late"


def timer_specs(tag: str, base_ms: int) -> list[str]:
    # absolute times far enough ahead for the producer's JVM to start and send before them
    tick = (base_ms // 1000 + 10) * 1000  # an exact multiple of the precision
    return [f"{tag}-abs:deliver:{base_ms + 9300}", f"{tag}-tick:deliver:{tick}", f"{tag}-sec:sec:4",
            f"{tag}-ms:ms:3500", f"{tag}-past:deliver:{base_ms - 5000}"]


def checkpoint(addr: str) -> tuple[int, ...]:
    with BlockingConnection(addr) as conn:
        response = conn.invoke(RemotingCommand.request(RequestCode.GET_TIMER_CHECK_POINT), 10)
    assert response.code == ResponseCode.SUCCESS, response.remark
    assert len(response.body) == 56
    return struct.unpack(">7q", response.body)


def wait_checkpointed(addr: str, queue_offset: int, timeout: float = 30.0) -> tuple[int, ...]:
    """The broker's timer checkpoint once it counts *queue_offset* timer messages enqueued (or at the
    timeout: the caller asserts). Both brokers' flush services prepare it (every timerFlushIntervalMs)
    after the enqueue, and write the timer files with it."""
    deadline = time.monotonic() + timeout
    while True:
        cp = checkpoint(addr)
        if cp[2] >= queue_offset or time.monotonic() > deadline:
            return cp
        time.sleep(0.1)  # polling the flush service's progress, bounded by the deadline


def metrics(addr: str) -> dict:
    with BlockingConnection(addr) as conn:
        response = conn.invoke(RemotingCommand.request(RequestCode.GET_TIMER_METRICS), 10)
    assert response.code == ResponseCode.SUCCESS, response.remark
    return json.loads(response.body)


PROPS: dict[str, set[str]] = {}
METRICS: dict[str, tuple] = {}


@pytest.mark.parametrize("target", ["tx", "java"])
def test_delivered_on_time(target, cp5, tx_cluster, java_broker):
    """Each kind of timer is received no earlier than its time and within a tick (+ slack) after it."""
    if target == "tx":
        namesrv, state = tx_cluster
        addr, name = state["broker"].addr, state["broker"].name
    else:
        namesrv, addr, name = java_broker.namesrv_addr, f"127.0.0.1:{java_broker.port}", "compat-broker"
    topic = f"TimerTopic_{target}"
    create_topic(addr, namesrv, topic, name)
    consumer = Consumer(cp5, namesrv, topic, 7)
    # a message due at once first: the timers below are sent only once the consumer is pulling,
    # so its receive times measure the broker, not the consumer's first rebalance
    produce(cp5, namesrv, topic, [f"{target}-warm:deliver:1000"])
    consumer.wait_for(f"{target}-warm")
    base = int(time.time() * 1000)
    specs = timer_specs(target, base)
    sent = produce(cp5, namesrv, topic, specs)
    # and our Python producer with Message.deliver_time_ms
    with BlockingProducer(f"TimerPyPG_{target}", namesrv, send_timeout=10) as producer:
        py = Message(topic=topic, body=f"{target}-py".encode())
        py.deliver_time_ms = py_due = int(time.time() * 1000) + 3000
        assert producer.send(py).send_status.value == "SEND_OK"
    due = deliver_times(sent, specs)
    for body in (f"{target}-abs", f"{target}-tick"):
        assert sent[body]["sendMs"] < due[body] - 500, f"{body} was sent too late to be a timer: {sent[body]}"
    got = consumer.collect()
    due[f"{target}-py"] = py_due
    check_on_time(got, due, past={f"{target}-past"})
    assert all(len(v) == 1 for v in got.values()), got
    delivered = got[f"{target}-abs"][0]["props"]
    assert delivered["REAL_TOPIC"] == topic
    assert "TIMER_OUT_MS" in delivered and "TIMER_ENQUEUE_MS" in delivered and "TIMER_DEQUEUE_MS" in delivered
    # MSG_REGION and TRACE_ON: the 5.x send path stores them in every message, our (4.9.8-like)
    # one does not; WAIT: Java 5.x's timer hook re-serialises the map into which its send path
    # had put WAIT back (docs/compatibility.md)
    PROPS[target] = {k for k in delivered if k not in ("MIN_OFFSET", "MAX_OFFSET", "CONSUME_START_TIME",
                                                       "MSG_REGION", "TRACE_ON", "WAIT")}
    assert "TIMER_OUT_MS" not in got[f"{target}-past"][0]["props"]
    read, *_ = checkpoint(addr)
    assert read > 0
    doc = metrics(addr)
    assert doc["timingCount"][topic]["count"] == 0  # one up per enqueued timer, one down per delivery
    METRICS[target] = (sorted(doc), sorted(doc["dataVersion"]), sorted(doc["timingCount"][topic]))
    if len(PROPS) == 2:
        assert PROPS["tx"] == PROPS["java"], PROPS
        assert METRICS["tx"] == METRICS["java"], METRICS


def test_restart_and_kill9_keep_pending(cp5, tx_cluster):
    """Timers pending across a SIGTERM restart and then across a kill -9 are delivered on time."""
    namesrv, state = tx_cluster
    broker = state["broker"]
    topic = "TimerTopic_restart"
    create_topic(broker.addr, namesrv, topic, broker.name)
    base = int(time.time() * 1000)
    specs = [f"r-a:deliver:{base + 25_000}", f"r-b:deliver:{base + 42_000}", "r-c:sec:47"]
    enqueued = checkpoint(broker.addr)[2]  # the earlier tests' timers on this broker
    sent = produce(cp5, namesrv, topic, specs)
    # enqueued into the wheel and checkpointed before the stop
    assert wait_checkpointed(broker.addr, enqueued + 3)[2] == enqueued + 3
    broker.stop()
    broker = state["broker"] = tb.restart(broker)
    assert time.time() * 1000 < base + 24_000, "the restart took too long for the test's timers"
    consumer = Consumer(cp5, namesrv, topic, 3)
    # kill -9 once r-a is out, while r-b and r-c are still pending
    deadline = time.monotonic() + 40
    while time.time() * 1000 < base + 27_000 and time.monotonic() < deadline:
        time.sleep(0.2)  # waiting for a wall-clock moment, bounded
    os.kill(broker.pid, signal.SIGKILL)
    broker.proc.proc.wait(30)
    broker = state["broker"] = tb.restart(broker, "tx-broker-after-kill9")
    assert time.time() * 1000 < base + 41_000, "the restart after kill -9 took too long for the test's timers"
    got = consumer.collect(timeout=120)
    check_on_time(got, deliver_times(sent, specs), recv_bound=False)


def test_java_written_timer_store_taken_over(cp5, tmp_path):
    """Timers written by the Java 5.5.0 broker (timerlog, timerwheel, timercheck) are delivered
    on time by our broker started on that store."""
    root = tmp_path / "store"
    base = 0
    with rj.java_cluster(cp5, root, commitlog_size=COMMITLOG_SIZE, extra=SMALL, graceful=False) as cluster:
        create_topic(f"127.0.0.1:{cluster.port}", cluster.namesrv_addr, "TimerTakeover", "compat-broker")
        base = int(time.time() * 1000)
        specs = [f"t-a:deliver:{base + 40_000}", f"t-b:deliver:{base + 43_500}", "t-c:ms:46000"]
        sent = produce(cp5, cluster.namesrv_addr, "TimerTakeover", specs)
        java_cp = wait_checkpointed(f"127.0.0.1:{cluster.port}", 3)
        cluster.stop_broker()
    for name in ("timerwheel", "timerlog", "config/timercheck", "config/timermetrics"):
        assert (root / name).exists(), name
    # Java's bytes, read with our codecs: three 52-byte units chained in their wheel slots
    data = (root / "timerlog" / "00000000000000000000").read_bytes()[:3 * UNIT_SIZE + 4]
    units = [TimerUnit.decode(data, i * UNIT_SIZE) for i in range(3)]
    assert [size for size, _ in units] == [UNIT_SIZE] * 3
    assert all(u.magic == MAGIC_DEFAULT and u.prev_pos == -1 for _, u in units), units
    assert int.from_bytes(data[3 * UNIT_SIZE:], "big") == 0
    wheel = TimerWheel(str(root / "timerwheel"), 7 * 86400, PRECISION_MS)
    try:
        for i, (_, u) in enumerate(units):
            slot = wheel.get_slot(u.deliver_time_ms)
            assert (slot.first_pos, slot.last_pos, slot.num) == (i * UNIT_SIZE, i * UNIT_SIZE, 1)
        for body, (_, u) in zip(("t-a", "t-b"), units[:2], strict=True):  # absolute times: Java's rounding
            when = deliver_times(sent, specs)[body]
            assert u.deliver_time_ms == (when - PRECISION_MS if when % PRECISION_MS == 0 else
                                         when // PRECISION_MS * PRECISION_MS)
    finally:
        wheel.shutdown()
    assert java_cp[2] == 3  # the Java broker had enqueued all three
    ns_proc, namesrv = tb.start_tx_namesrv(tmp_path)
    broker = tb.start_tx_broker(Path(root), namesrv, name="compat-broker",
                                extra={"mappedFileSizeCommitLog": COMMITLOG_SIZE, **SMALL})
    try:
        ours = checkpoint(broker.addr)
        assert ours[2] == 3  # resumed from Java's checkpoint and timerlog: nothing enqueued twice
        assert time.time() * 1000 < base + 39_000, "the takeover took too long for the test's timers"
        tb.wait_topic_route(namesrv, "TimerTakeover", ["compat-broker"])
        consumer = Consumer(cp5, namesrv, "TimerTakeover", 3)
        got = consumer.collect(timeout=120)
        check_on_time(got, deliver_times(sent, specs), recv_bound=False)
        assert all(len(v) == 1 for v in got.values()), got
    finally:
        broker.stop()
        ns_proc.stop()


def test_our_timer_store_taken_over_by_java(cp5, tmp_path):
    """The other way: timers pending in a store our broker wrote are delivered on time, once, by
    the Java 5.5.0 broker started on it (our timerlog, timerwheel and timercheck as Java reads them)."""
    root = tmp_path / "store"
    ns_proc, namesrv = tb.start_tx_namesrv(tmp_path)
    broker = tb.start_tx_broker(root, namesrv, name="compat-broker",
                                extra={"mappedFileSizeCommitLog": COMMITLOG_SIZE, **SMALL})
    try:
        create_topic(broker.addr, namesrv, "TimerToJava", "compat-broker")
        base = int(time.time() * 1000)
        specs = [f"j-a:deliver:{base + 45_000}", f"j-b:deliver:{base + 48_500}", "j-c:ms:51000"]
        sent = produce(cp5, namesrv, "TimerToJava", specs)
        assert wait_checkpointed(broker.addr, 3)[2] == 3  # enqueued and checkpointed
    finally:
        broker.stop()
        ns_proc.stop()
    with rj.java_cluster(cp5, root, commitlog_size=COMMITLOG_SIZE, extra=SMALL, graceful=False) as cluster:
        assert time.time() * 1000 < base + 44_000, "the takeover took too long for the test's timers"
        tb.wait_topic_route(cluster.namesrv_addr, "TimerToJava", ["compat-broker"])
        assert checkpoint(f"127.0.0.1:{cluster.port}")[2] == 3  # Java resumed from our checkpoint
        consumer = Consumer(cp5, cluster.namesrv_addr, "TimerToJava", 3)
        got = consumer.collect(timeout=120)
        check_on_time(got, deliver_times(sent, specs), recv_bound=False)
        assert all(len(v) == 1 for v in got.values()), got
