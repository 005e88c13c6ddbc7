"""
Our broker (``twistd rocketmq-standalone``: name server + broker in one process) driven by
the official Java clients, 4.9.8 and 5.5.0 (rocketmq.compat.BrokerScenarios, one scenario
per JVM, one JSON line of observations per run; the assertions are all here):

* DefaultMQProducer sync / async / oneway / ordered (MessageQueueSelector) / batch, plus a
  compressed, a 3 MiB and a non-ASCII message: the SendResults (SEND_OK, msgId = UNIQ_KEY,
  offsetMsgId = our address + physical offset, queue offsets consecutive per queue) agree
  with what a pull reads back;
* DefaultMQPushConsumer clustering (two consumers split the queues, nothing lost, no
  duplicates once the split is stable, long polling answers at once, the survivor takes
  over on UNREGISTER_CLIENT and when the other JVM is SIGKILLed), broadcasting (both get
  everything), MessageListenerOrderly (LOCK_BATCH_MQ, per-key order, lock hand-over), tag
  expressions, CONSUME_FROM_FIRST/LAST/TIMESTAMP for a new group;
* RECONSUME_LATER -> %RETRY% (retry delay levels shortened to 1 s) -> %DLQ%group with the
  original body, keys, UNIQ_KEY and ORIGIN_MESSAGE_ID; an orderly listener's SUSPEND past
  maxReconsumeTimes (the client re-sends to %RETRY% at the maximum) -> %DLQ%; delay level
  2 (2 s here) holds a message back at least that long, level 99 is clamped to the last;
* restarts on the same store and ports: a running producer and consumer live through a
  SIGTERM restart, a new consumer process resumes from the committed offsets, and after a
  kill -9 nothing acknowledged is lost (nor re-consumed once consumerOffset.json is flushed);
* DefaultLitePullConsumer assign / seek / poll / commitSync, and a second instance resumes
  (5.x pulls with LITE_PULL_MESSAGE, 361);
* no name server request to the shared process took 3 s or more meanwhile (Java's timeout).

One standalone process is shared by the module (both Java versions, separate topics and
groups); the restart test starts its own. Set BROKER_INTEROP_TIMINGS=1 (with -s) to print
how long each scenario took.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

import javaharness as jh
import pytest
from txharness import WORK, TxProcess, small_store_args, twistd, wait_for_route

from rocketmq_tx.blocking import BlockingMQClient

pytestmark = pytest.mark.compat

#: level 2 is 2 s (the delay test); level 3+ (the retries) are 1 s, to keep the retry test short.
DELAY_LEVELS = "1s 2s " + " ".join(["1s"] * 16)
READY = r"rocketmq-broker listening on [^:]+:(\d+)"


# --------------------------------------------------------------------------- servers

def _port_pair() -> int:
    """A free port P whose fast port P-2 and HA port P+1 are free too (the broker listens on all three)."""
    for _ in range(50):
        port = jh.free_port()
        if port < 1026 or port > 65000:
            continue
        free = True
        for other in (port - 2, port + 1):
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", other))
                except OSError:
                    free = False
        if free:
            return port
    raise RuntimeError("no free port pair")


class Standalone:
    """``twistd -n rocketmq-standalone`` on fixed ports and store, restartable."""

    def __init__(self, store: Path, name: str) -> None:
        self.store = store
        self.name = name
        self.ns_port = jh.free_port()
        self.port = _port_pair()
        self.proc: TxProcess | None = None

    @property
    def namesrv(self) -> str:
        return f"127.0.0.1:{self.ns_port}"

    def start(self) -> None:
        WORK.mkdir(exist_ok=True)
        args = [*twistd(), "-n", "--pidfile=", "rocketmq-standalone",
                "--set", f"namesrvPort={self.ns_port}", "--set", "namesrvBindAddress=127.0.0.1",
                "--set", f"listenPort={self.port}", "--set", "bindAddress=127.0.0.1",
                "--set", f"storePathRootDir={self.store}", "--set", "brokerIP1=127.0.0.1",
                "--set", f"brokerName={self.name}", "--set", f"messageDelayLevel={DELAY_LEVELS}",
                *small_store_args()]
        log = WORK / f"broker-interop-{self.name}-{os.getpid()}-{time.monotonic_ns()}.log"
        self.proc = TxProcess(args, log)
        try:
            m = self.proc.wait_for(READY)
            assert int(m.group(1)) == self.port
            wait_for_route(self.namesrv, "TBW102", 30.0)
        except BaseException:
            self.proc.stop()
            raise

    def stop(self) -> int | None:
        return self.proc.stop() if self.proc else None

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.proc.send_signal(signal.SIGKILL)
        self.proc.proc.wait(10)

    def log_tail(self, n: int = 60) -> str:
        return "\n".join(self.proc.lines[-n:]) if self.proc else ""


def wait_for_offsets(path: Path, key: str, total: int, timeout: float) -> float:
    """Wait until consumerOffset.json's offsets for topic@group add up to total; seconds waited."""
    t0 = time.monotonic()
    seen = None
    while time.monotonic() - t0 < timeout:
        try:
            table = json.loads(path.read_text())["offsetTable"]
            seen = table.get(key)
            if seen and sum(seen.values()) >= total:
                return time.monotonic() - t0
        except (OSError, ValueError, KeyError):
            pass  # not written yet, or being replaced
        time.sleep(0.2)  # waiting for the broker's periodic flush, bounded above
    raise AssertionError(f"{path} never showed {total} consumed for {key} within {timeout}s: {seen}")


class StallProbe(threading.Thread):
    """Asks the standalone's name server for a route every 200 ms and keeps the slow answers:
    the name server and broker share one reactor, and Java clients give up after 3 s."""

    def __init__(self, namesrv: str) -> None:
        super().__init__(daemon=True, name="stall-probe")
        self.namesrv = namesrv
        self.stop_event = threading.Event()
        self.slow: list[tuple[str, float]] = []
        self.count = 0

    def run(self) -> None:
        with BlockingMQClient(self.namesrv) as client:
            while not self.stop_event.wait(0.2):
                t0 = time.monotonic()
                try:
                    client.route("TBW102", refresh=True)
                except Exception as e:  # noqa: BLE001 - a probe: any failure is a data point
                    self.slow.append((time.strftime("%H:%M:%S"), -1.0))
                    self.slow.append((repr(e), -1.0))
                    continue
                dt = time.monotonic() - t0
                self.count += 1
                if dt > 1.0:
                    self.slow.append((time.strftime("%H:%M:%S"), round(dt, 2)))


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    server = Standalone(tmp_path_factory.mktemp("broker-interop-store"), "txbroker")
    server.start()
    server.probe = StallProbe(server.namesrv)
    server.probe.start()
    yield server
    server.probe.stop_event.set()
    rc = server.stop()
    # twistd re-raises the SIGTERM it shut down on, so -15 is a clean exit
    assert rc in (0, -signal.SIGTERM), f"broker exited {rc}:\n{server.log_tail()}"


def scenario(classpath: str, server: Standalone, name: str, topic: str, group: str, *args,
             timeout: float = 150.0) -> dict:
    t0 = time.monotonic()
    lines = jh.run_java(classpath, "BrokerScenarios", [name, server.namesrv, topic, group, *map(str, args)],
                        timeout=timeout)
    found = [json.loads(line) for line in lines if line.startswith("{")]
    assert len(found) == 1, lines
    if os.environ.get("BROKER_INTEROP_TIMINGS"):
        print(f"\n  {name} {topic} {group}: {time.monotonic() - t0:.1f}s")
    return found[0]


def tag(version: str) -> str:
    return version.split(".")[0]


def bodies(deliveries, who=None) -> Counter:
    return Counter(d["body"] for d in deliveries if who is None or d["who"] == who)


# --------------------------------------------------------------------------- producer

def test_producer_send_kinds(java_peer, broker):
    version, cp = java_peer
    topic = f"BI_Produce_{tag(version)}"
    out = scenario(cp, broker, "produce", topic, "unused")
    assert out["errors"] == []
    sends, stored = out["sends"], out["stored"]
    assert Counter(s["kind"] for s in sends) == {"sync": 9, "async": 6, "ordered": 8, "batch": 1}
    by_body = {m["body"]: m for m in stored}
    expected = ({"big", "huge", "uni-h\u00e9llo-\u4e16\u754c"} | {f"sync-{i}" for i in range(6)}
                | {f"async-{i}" for i in range(6)} | {f"oneway-{i}" for i in range(4)}
                | {f"ord-{i}" for i in range(8)} | {f"batch-{i}" for i in range(5)})
    assert sorted(by_body) == sorted(expected) and len(stored) == len(expected)

    for s in sends:
        assert s["status"] == "SEND_OK", s
        assert s["brokerName"] == broker.name
        ids, offset_ids = s["msgId"].split(","), s["offsetMsgId"].split(",")
        names = [s["body"]] if s["kind"] != "batch" else [f"batch-{i}" for i in range(5)]
        assert len(ids) == len(offset_ids) == len(s["decoded"]) == len(names), s
        for i, body in enumerate(names):
            m = by_body[body]
            # IPv4 (32 hex digits) or IPv6 (56) client address; that part is the client's
            assert re.fullmatch(r"[0-9A-F]{32}|[0-9A-F]{56}", ids[i]), s
            if s["kind"] == "batch" and version.startswith("5."):
                # The 5.x client also gives the MessageBatch itself a UNIQ_KEY, sent as a
                # batch-level property; the broker appends the batch properties to every
                # inner message's (as Java's CommitLog encoder does), so the last UNIQ_KEY,
                # the batch's, is what a consumer decodes.
                assert m["msgId"] == by_body["batch-0"]["msgId"] and m["msgId"] not in ids, (s, m)
            else:
                assert ids[i] == m["msgId"] == m["properties"]["UNIQ_KEY"], (s, m)
            assert offset_ids[i] == m["offsetMsgId"], (s, m)
            assert s["decoded"][i] == {"address": f"/127.0.0.1:{broker.port}", "offset": m["commitLogOffset"]}, (s, m)
            assert m["queueId"] == s["queueId"] and m["queueOffset"] == s["queueOffset"] + i, (s, m)
            assert m["storeHost"] == f"/127.0.0.1:{broker.port}"
    # queue offsets are consecutive from 0 in every queue, in commit-log order
    per_queue = defaultdict(list)
    for m in stored:
        per_queue[m["queueId"]].append(m)
    assert sorted(per_queue) == [0, 1, 2, 3]
    for q, msgs in per_queue.items():
        assert [m["queueOffset"] for m in msgs] == list(range(len(msgs))), q
        assert [m["commitLogOffset"] for m in msgs] == sorted(m["commitLogOffset"] for m in msgs), q
    # ordered sends: ord-i to the selected queue (i % 2 of the sorted list), in send order
    ordered = [s for s in sends if s["kind"] == "ordered"]
    for parity in (0, 1):
        mine = [s for s in ordered if int(s["body"].split("-")[1]) % 2 == parity]
        assert len({s["queueId"] for s in mine}) == 1, mine
        assert [s["queueOffset"] for s in mine] == sorted(s["queueOffset"] for s in mine)
    assert {s["queueId"] for s in ordered} == {0, 1}
    # the compressed body comes back whole (the sysFlag keeps the COMPRESSED bit), and so
    # do non-ASCII bodies and properties
    # (5.x's decoder clears COMPRESSED_FLAG after inflating but keeps the ZLIB type, 0x300)
    assert by_body["big"]["bigIntact"] and by_body["big"]["sysFlag"] & (1 if version.startswith("4.") else 0x700), \
        by_body["big"]
    assert by_body["huge"]["bigIntact"], by_body["huge"]  # 3 MiB, more than one pull's byte limit
    uni = by_body["uni-h\u00e9llo-\u4e16\u754c"]
    assert uni["properties"]["prop"] == "v\u00e4rde \u4e16" and uni["sysFlag"] & 1 == 0, uni
    # tags and keys made it
    assert by_body["oneway-0"]["tags"] == "TagC" and by_body["oneway-0"]["keys"] == "k-oneway-0"
    assert by_body["batch-3"]["tags"] == "TagD" and by_body["batch-3"]["keys"] == "k-batch-3"


# --------------------------------------------------------------------------- push consumers

def test_clustering_two_consumers(java_peer, broker):
    version, cp = java_peer
    topic, group = f"BI_Cluster_{tag(version)}", f"BI_CG_Cluster_{tag(version)}"
    out = scenario(cp, broker, "cluster", topic, group, 40)
    assert out["errors"] == []
    assert out["stable"], out["ownership"]
    own0, own1 = set(out["ownership"]["0"]), set(out["ownership"]["1"])
    assert own0 and own1 and not own0 & own1 and own0 | own1 == {0, 1, 2, 3}, out["ownership"]
    got = bodies(out["deliveries"])
    expected = {f"m-{i}" for i in range(40)} | {"warm-up"}
    assert set(got) == expected, sorted(expected - set(got))
    # The warm-up message was sent before the second consumer joined: a rebalance hands its
    # queue over, and the new owner may read it again before the old one's offset arrives
    # (at-least-once, as with Java's broker). What is sent once ownership is stable must
    # come exactly once, from the queue's owner.
    duplicates = {b: n for b, n in got.items() if n > 1 and b != "warm-up"}
    assert duplicates == {}, f"{len(duplicates)} bodies delivered more than once: {duplicates}"
    served = defaultdict(set)
    for d in out["deliveries"]:
        if d["body"] != "warm-up":
            served[d["queueId"]].add(d["who"])
    for q, who in served.items():
        assert len(who) == 1, f"queue {q} consumed by {who}"
        assert q in (own0 if who == {0} else own1)
    # consumer 1 shuts down: consumer 0 owns all four queues and reads what follows
    assert out["takeover"], "the remaining consumer never took over every queue"
    after = bodies(out["after"])
    assert set(after) == {f"after-{i}" for i in range(12)} and max(after.values()) == 1, after
    assert {d["who"] for d in out["after"]} == {0}
    # long polling: a message sent to an idle consumer arrives when it is stored, not when the
    # parked pull times out (the push consumer parks pulls for 15 s). The bound leaves room for
    # a loaded CI machine: one run's median was 1.4 s there, against tens of ms when idle.
    latency = sorted(d["at"] - d["bornTimestamp"] for d in out["deliveries"] if d["body"].startswith("m-"))
    assert latency[len(latency) // 2] < 5000, latency


def test_broadcasting(java_peer, broker):
    version, cp = java_peer
    topic, group = f"BI_Broadcast_{tag(version)}", f"BI_CG_Broadcast_{tag(version)}"
    out = scenario(cp, broker, "broadcast", topic, group, 20)
    assert out["errors"] == []
    assert out["stable"], out["ownership"]
    expected = {f"m-{i}" for i in range(20)} | {"warm-up"}
    for who in (0, 1):
        got = bodies(out["deliveries"], who)
        assert set(got) == expected, (who, sorted(expected - set(got)))
        assert max(got.values()) == 1, (who, got)


def test_orderly(java_peer, broker):
    version, cp = java_peer
    topic, group = f"BI_Orderly_{tag(version)}", f"BI_CG_Orderly_{tag(version)}"
    keys, per_key = 8, 10
    out = scenario(cp, broker, "orderly", topic, group, keys, per_key)
    assert out["errors"] == []
    assert out["stable"], f"LOCK_BATCH_MQ did not give each queue to exactly one consumer: {out['locked']}"
    seqs = defaultdict(list)
    for d in out["deliveries"]:
        if d["body"].startswith("o-"):
            _, k, s = d["body"].split("-")
            seqs[int(k)].append((int(s), d["who"], d["queueId"]))
    for k in range(keys):
        assert [s for s, _, _ in seqs[k]] == list(range(per_key)), (k, seqs[k])
        assert len({q for _, _, q in seqs[k]}) == 1 and len({w for _, w, _ in seqs[k]}) == 1, (k, seqs[k])
    # consumer 1 leaves: its locks are released and consumer 0 locks every queue, order kept
    assert out["takeover"], "the remaining consumer never locked every queue"
    after = defaultdict(list)
    for d in out["after"]:
        _, k, s = d["body"].split("-")
        after[int(k)].append(int(s))
    assert after == {k: list(range(per_key, per_key + 3)) for k in range(keys)}, after


def test_tag_expression(java_peer, broker):
    version, cp = java_peer
    topic, group = f"BI_Tags_{tag(version)}", f"BI_CG_Tags_{tag(version)}"
    out = scenario(cp, broker, "tags", topic, group, 6)
    assert out["errors"] == []
    got = bodies(out["deliveries"])
    expected = {f"{t}-{i}" for t in ("TagA", "TagB") for i in range(6)}
    assert set(got) == expected
    assert max(got.values()) == 1
    assert {m["tags"] for m in out["pulled"]} == {"TagA", "TagB"}


def test_consume_from_where(java_peer, broker):
    """A new group on a queue whose first message is still in memory gets offset 0 from
    QUERY_CONSUMER_OFFSET (Java's ConsumerManageProcessor), so FIRST, LAST and TIMESTAMP
    alike read the old messages; all three read the new ones."""
    version, cp = java_peer
    topic, group = f"BI_Where_{tag(version)}", f"BI_CG_Where_{tag(version)}"
    out = scenario(cp, broker, "from_where", topic, group, 10)
    assert out["errors"] == []
    assert out["wheres"] == ["CONSUME_FROM_FIRST_OFFSET", "CONSUME_FROM_LAST_OFFSET", "CONSUME_FROM_TIMESTAMP"]
    everything = {f"old-{i}" for i in range(10)} | {f"new-{i}" for i in range(10)} | {"warm-up"}
    for who, where in enumerate(out["wheres"]):
        got = bodies(out["deliveries"], who)
        assert set(got) == everything, (where, sorted(everything - set(got)))
        assert max(got.values()) == 1, (where, got)


def test_reconsume_later_then_dlq(java_peer, broker):
    version, cp = java_peer
    topic, group = f"BI_Retry_{tag(version)}", f"BI_CG_Retry_{tag(version)}"
    t0 = time.monotonic()
    out = scenario(cp, broker, "retry_dlq", topic, group, 1)
    elapsed = time.monotonic() - t0
    assert out["errors"] == []
    sent = out["sent"]
    assert sent["status"] == "SEND_OK"
    deliveries = out["deliveries"]
    assert [(d["body"], d["topic"], d["reconsumeTimes"], d["msgId"]) for d in deliveries] == [
        ("doomed", topic, 0, sent["msgId"]), ("doomed", topic, 1, sent["msgId"])], deliveries
    retry = deliveries[1]["properties"]
    assert retry.get("RETRY_TOPIC") == topic, retry
    assert retry.get("ORIGIN_MESSAGE_ID") == sent["offsetMsgId"], retry
    assert deliveries[1]["at"] - deliveries[0]["at"] >= 900, "retry level 3 is 1 s on this broker"
    dlq = out["dlq"]
    assert len(dlq) == 1, dlq
    m = dlq[0]
    assert (m["topic"], m["body"], m["keys"], m["tags"], m["msgId"]) == (
        f"%DLQ%{group}", "doomed", "dlq-key", "TagR", sent["msgId"]), m
    assert m["properties"].get("ORIGIN_MESSAGE_ID") == sent["offsetMsgId"], m
    assert m["properties"].get("RETRY_TOPIC") == topic, m
    assert m["properties"].get("custom") == "yes", m
    assert m["reconsumeTimes"] == 2, m
    assert elapsed < 60


def test_orderly_suspend_then_dlq(java_peer, broker):
    """An orderly listener's SUSPEND past maxReconsumeTimes: the client re-sends the message to
    %RETRY%group with RECONSUME_TIME = max, and the broker stores it in %DLQ%group instead."""
    version, cp = java_peer
    topic, group = f"BI_ODlq_{tag(version)}", f"BI_CG_ODlq_{tag(version)}"
    out = scenario(cp, broker, "orderly_dlq", topic, group, 1)
    assert out["errors"] == []
    sent = out["sent"]
    assert [(d["body"], d["reconsumeTimes"]) for d in out["deliveries"]] == [("stuck", 0), ("stuck", 1)], \
        out["deliveries"]
    assert out["retry"] == [], out["retry"]
    assert len(out["dlq"]) == 1, out["dlq"]
    m = out["dlq"][0]
    assert (m["topic"], m["body"], m["keys"], m["tags"], m["msgId"]) == (
        f"%DLQ%{group}", "stuck", "odlq-key", "TagR", sent["msgId"]), m
    assert m["properties"].get("RETRY_TOPIC") == topic, m
    assert m["properties"].get("ORIGIN_MESSAGE_ID") == sent["msgId"], m  # the client's msgId: UNIQ_KEY
    # As Java 4.9's broker (checked against 4.9.7): the client's DELAY (3 + 1) survives the
    # DLQ diversion, so the message passes through the schedule topic on its way. (A 5.5.0
    # broker stores DELAY=-1 and skips the schedule; we follow 4.9.)
    props = m["properties"]
    assert (props.get("DELAY"), props.get("REAL_TOPIC"), props.get("REAL_QID")) == (
        "4", f"%DLQ%{group}", "0"), props
    assert m["delayTimeLevel"] == 4, m
    # the client's RECONSUME_TIME, stored as sent: 4.9.8 sends the count, 5.5.0 the count + 1
    assert m["reconsumeTimes"] == (1 if version.startswith("4.") else 2), m


def test_delay_level(java_peer, broker):
    """delayTimeLevel=2 is 2 s on this broker ("1s 2s ..."): the consumer sees it no earlier."""
    version, cp = java_peer
    topic, group = f"BI_Delay_{tag(version)}", f"BI_CG_Delay_{tag(version)}"
    out = scenario(cp, broker, "delay", topic, group, 2)
    assert out["errors"] == []
    delayed = [d for d in out["deliveries"] if d["body"] == "delayed"]
    assert len(delayed) == 1, out["deliveries"]
    waited = delayed[0]["at"] - out["sentAt"]
    assert 2000 <= waited < 10_000, waited
    assert delayed[0]["topic"] == topic and delayed[0]["msgId"] == out["sent"]["msgId"]
    assert delayed[0]["storeTimestamp"] - delayed[0]["bornTimestamp"] >= 2000 - 50, delayed[0]
    # delayTimeLevel 99 is clamped to the last level (18, 1 s here), not dropped or refused
    assert out["clamped"]["status"] == "SEND_OK"
    clamped = [d for d in out["deliveries"] if d["body"] == "clamped"]
    assert len(clamped) == 1, out["deliveries"]
    assert 1000 <= clamped[0]["at"] - out["clampedAt"] < 10_000, clamped[0]


def test_killed_consumer_queues_taken_over(java_peer, broker):
    """A consumer JVM killed with SIGKILL: the broker sees its connection close, drops it from
    the group and notifies the other member, which takes every queue over at once (not after
    the 120 s channel expiry)."""
    version, cp = java_peer
    topic, group = f"BI_Kill_{tag(version)}", f"BI_CG_Kill_{tag(version)}"
    victim = jh.start_java(cp, "BrokerScenarios", ["victim", broker.namesrv, topic, group], ready=r"OWNS (\d+)")
    survivor = None
    try:
        assert victim.ready_match.group(1) == "4"
        survivor = jh.start_java(cp, "BrokerScenarios", ["survivor", broker.namesrv, topic, group, 12],
                                 ready=r"SPLIT (\w+)")
        assert survivor.ready_match.group(1) == "true"
        victim.proc.kill()
        victim.proc.wait(10)
        survivor.proc.stdin.write(b"go\n")
        survivor.proc.stdin.flush()
        lines = jh.collect(survivor, timeout=120)
    finally:
        victim.stop()
        if survivor is not None:
            survivor.stop()
    out = [json.loads(line) for line in lines if line.startswith("{")][0]
    assert out["errors"] == [] and out["takeover"], out
    assert out["takeoverMs"] < 10_000, out["takeoverMs"]
    if os.environ.get("BROKER_INTEROP_TIMINGS"):
        print(f"\n  takeover after SIGKILL: {out['takeoverMs']} ms")
    got = bodies(out["deliveries"])
    assert set(got) >= {f"s-{i}" for i in range(12)} and max(got.values()) == 1, got


# --------------------------------------------------------------------------- lite pull

def test_lite_pull_consumer(java_peer, broker):
    version, cp = java_peer
    topic, group = f"BI_Lite_{tag(version)}", f"BI_CG_Lite_{tag(version)}"
    out = scenario(cp, broker, "litepull", topic, group)
    assert out["errors"] == []
    assert out["queues"] == [0, 1, 2, 3]
    assert all(s["status"] == "SEND_OK" for s in out["sends"] + out["sends2"])
    # everything stored (the warm-up and lp-0..7) polled once, from offset 0 of each queue
    polled = Counter(d["body"] for d in out["polled"])
    assert set(polled) == {"warm-up"} | {f"lp-{i}" for i in range(8)} and max(polled.values()) == 1, polled
    per_queue = Counter(d["queueId"] for d in out["polled"])
    for q in range(4):
        offsets = sorted(d["queueOffset"] for d in out["polled"] if d["queueId"] == q)
        assert offsets == list(range(per_queue[q])), (q, offsets)
    # seek(queue 0, 1) then poll: queue 0 again from offset 1
    assert [(d["queueId"], d["queueOffset"]) for d in out["sought"]] == [(0, o) for o in range(1, per_queue[0])], \
        out["sought"]
    # commitSync: the broker has each queue's next offset
    assert out["committed"] == {str(q): per_queue[q] for q in range(4)}, out
    resumed = Counter(d["body"] for d in out["resumed"])
    assert set(resumed) == {f"lp2-{i}" for i in range(4)}, resumed
    assert max(resumed.values()) == 1


# --------------------------------------------------------------------------- restart

def test_resume_after_restart(java_peer, tmp_path):
    """SIGTERM: the group resumes where it committed. kill -9: nothing acknowledged is lost,
    and once consumerOffset.json has been flushed nothing is consumed twice."""
    version, cp = java_peer
    server = Standalone(tmp_path / "store", f"txrestart{tag(version)}")
    topic, group = "BI_Restart", "BI_CG_Restart"
    server.start()
    try:
        # a running producer and consumer live through a SIGTERM restart (same ports, store)
        live = jh.start_java(cp, "BrokerScenarios", ["live", server.namesrv, topic, group, 10], ready=r"PHASE1 (\w+)")
        try:
            assert live.ready_match.group(1) == "true"
            assert server.stop() in (0, -signal.SIGTERM), server.log_tail()
            server.start()
            live.proc.stdin.write(b"go\n")
            live.proc.stdin.flush()
            lines = jh.collect(live, timeout=120)
        finally:
            live.stop()
        out = [json.loads(line) for line in lines if line.startswith("{")][0]
        got = bodies(out["deliveries"])
        assert out["errors"] == [] and out["phase2"], out
        assert set(got) == {f"l{p}-{i}" for p in (1, 2) for i in range(10)}, sorted(got)
        assert max(got.values()) == 1, f"consumed twice across the restart: {got}"
        if os.environ.get("BROKER_INTEROP_TIMINGS"):
            print(f"\n  live: {out['sendFailures']} send failures, resent in {out['resentMs']} ms, "
                  f"consumed in {out['consumedMs']} ms")

        # graceful: SIGTERM, same ports and store; a new consumer process of the group
        # starts where the last one committed
        assert server.stop() in (0, -signal.SIGTERM), server.log_tail()
        server.start()
        sent = scenario(cp, server, "send", topic, "-", "b-", 20)
        assert [s["status"] for s in sent["sends"]] == ["SEND_OK"] * 20, sent
        second = scenario(cp, server, "consume", topic, group, "b-", 20)
        got = bodies(second["deliveries"])
        assert second["complete"], sorted(got)
        assert set(got) == {f"b-{i}" for i in range(20)}, f"re-consumed after SIGTERM restart: {sorted(got)}"

        # kill -9 right after the sends: nothing sent may be lost. consumerOffset.json is
        # rewritten every flushConsumerOffsetInterval (5 s): once it shows the b- offsets,
        # nothing before c- may come again.
        offsets_file = server.store / "config" / "consumerOffset.json"
        flushed = wait_for_offsets(offsets_file, f"{topic}@{group}", 40, timeout=20)  # l1, l2, b
        sent = scenario(cp, server, "send", topic, "-", "c-", 20)
        assert [s["status"] for s in sent["sends"]] == ["SEND_OK"] * 20, sent
        server.kill()
        server.start()
        third = scenario(cp, server, "consume", topic, group, "c-", 20)
        got = bodies(third["deliveries"])
        assert third["complete"], f"lost after kill -9: {sorted({f'c-{i}' for i in range(20)} - set(got))}"
        assert set(got) == {f"c-{i}" for i in range(20)}, f"re-consumed after kill -9: {sorted(got)}"
        assert max(got.values()) == 1
        assert flushed < 12, f"consumerOffset.json took {flushed:.1f}s to show the committed offsets"
    finally:
        server.stop()


def test_no_long_stalls(broker):
    """Runs after the scenarios above on the shared broker: no route query during them took
    3 s or more (Java's default timeout for name server calls)."""
    probe = broker.probe
    # The module's broker may be fresh here (pytest regroups by Java version): let it probe.
    deadline = time.monotonic() + 15
    while probe.count < 5 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert probe.count > 0
    assert not [s for s in probe.slow if s[1] < 0 or s[1] >= 3.0], probe.slow
    if os.environ.get("BROKER_INTEROP_TIMINGS"):
        print(f"\n  {probe.count} probes, slower than 1 s: {probe.slow}")
