"""
Topic-creation storm: UPDATE_AND_CREATE_TOPIC one after another from one blocking admin
client (``mqadmin updateTopic`` in a loop), against rocketmq_tx's standalone (name server +
broker in one ``twistd rocketmq-standalone`` process) and, with ``--targets tx,java``, the
official Java 5.5.0 name server + broker (compat-tests/rocketmq_java.py; the first run builds
its Maven project).

    python3 bench/broker/create_topics.py [--count 10000] [--targets tx|java|tx,java] [--queues 4]
                                          [--window 500] [--deadline 900] [--out results.json]

Reports, per target: creates/s over the whole run; per-create latency p50/p99 over the first
and the last ``--window`` creates; the broker process's RSS (VmRSS) before the first create and
after the last; how long after the last create the name server routes every topic (checked on
the last topic and a sample of 200); the topics in the broker's topics.json after a clean stop.
A target that exceeds ``--deadline`` seconds stops creating and reports what it managed.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import ROOT, table  # noqa: E402  (bench is not a package)

sys.path.insert(0, str(ROOT / "compat-tests"))

import javaharness as jh  # noqa: E402
import rocketmq_java as rj  # noqa: E402
import txbroker as tb  # noqa: E402

from rocketmq_tx.blocking.admin import BlockingAdmin  # noqa: E402
from rocketmq_tx.common.route import TopicConfig  # noqa: E402
from rocketmq_tx.store.configfile import ConfigFile  # noqa: E402


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def storm(namesrv: str, broker_addr: str, pid: int, count: int, queues: int, window: int,
          deadline_s: float) -> dict:
    names = [f"StormTopic{i:05d}" for i in range(count)]
    latencies: list[float] = []
    rss = [(0, rss_mib(pid))]
    with BlockingAdmin(namesrv, timeout=30) as admin:
        start = time.monotonic()
        for i, name in enumerate(names):
            t = time.perf_counter()
            admin.create_and_update_topic_config(broker_addr, TopicConfig(name, queues, queues))
            latencies.append(time.perf_counter() - t)
            if (i + 1) % 1000 == 0:
                rss.append((i + 1, rss_mib(pid)))
                print(f"  {i + 1} created, {(i + 1) / (time.monotonic() - start):.0f}/s, "
                      f"last p50 {pct(latencies[-window:], 0.5):.2f} ms, RSS {rss[-1][1]:.0f} MiB", flush=True)
            if time.monotonic() - start > deadline_s:
                print(f"  deadline: stopped after {i + 1}", flush=True)
                break
        elapsed = time.monotonic() - start
    created = names[:len(latencies)]
    rss.append((len(latencies), rss_mib(pid)))
    # Routes: the last topic and a sample must be known to the name server.
    sample = [created[-1], *random.Random(1).sample(created, min(200, len(created)))]
    t = time.monotonic()
    lag = None
    while time.monotonic() - t < 120:
        if all(tb.route(namesrv, name) is not None for name in sample):
            lag = time.monotonic() - t
            break
        time.sleep(0.1)  # polling remote state, bounded above
    first, last = latencies[:window], latencies[-window:]
    return {
        "created": len(latencies), "seconds": round(elapsed, 1), "creates_per_s": round(len(latencies) / elapsed, 1),
        "p50_first_ms": round(pct(first, 0.5), 2), "p99_first_ms": round(pct(first, 0.99), 2),
        "p50_last_ms": round(pct(last, 0.5), 2), "p99_last_ms": round(pct(last, 0.99), 2),
        "mean_ms": round(statistics.mean(latencies) * 1000, 2), "max_ms": round(max(latencies) * 1000, 1),
        "rss_start_mib": round(rss[0][1]), "rss_end_mib": round(rss[-1][1]), "rss_samples": rss,
        "routes_complete_after_s": None if lag is None else round(lag, 2),
    }


def topics_on_disk(store: Path) -> int:
    data = ConfigFile(str(store / "config" / "topics.json")).load() or {}
    return sum(1 for name in data.get("topicConfigTable", {}) if name.startswith("StormTopic"))


def run_tx(args: argparse.Namespace, work: Path) -> dict:
    store = work / "tx-store"
    broker = tb.start_standalone(store, name="storm-broker", cluster="StormCluster")
    try:
        result = storm(broker.namesrv, broker.addr, broker.pid, args.count, args.queues, args.window, args.deadline)
    finally:
        broker.stop(60)
    result["topics_on_disk"] = topics_on_disk(store)
    return result


def run_java(args: argparse.Namespace, work: Path) -> dict:
    cp = jh.build("5")
    namesrv, ns_addr, _ = rj.start_namesrv(cp, label="storm-java-namesrv")
    store = work / "java-store"
    broker = None
    try:
        broker, broker_addr, _ = rj.start_broker(cp, ns_addr, broker_name="storm-broker", cluster="StormCluster",
                                                 store_root=store, label="storm-java-broker")
        rj.wait_for_registration(ns_addr)
        result = storm(ns_addr, broker_addr, broker.pid, args.count, args.queues, args.window, args.deadline)
    finally:
        if broker is not None:
            broker.stop(grace=60)
        namesrv.stop()
    result["topics_on_disk"] = topics_on_disk(store)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--targets", default="tx")
    parser.add_argument("--queues", type=int, default=4)
    parser.add_argument("--window", type=int, default=500)
    parser.add_argument("--deadline", type=float, default=900.0)
    parser.add_argument("--out")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="create-topics-"))
    results = {}
    try:
        for target in args.targets.split(","):
            print(f"{target}: creating {args.count} topics", flush=True)
            results[target] = (run_tx if target == "tx" else run_java)(args, work)
            print(json.dumps({k: v for k, v in results[target].items() if k != "rss_samples"}), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    keys = ["created", "seconds", "creates_per_s", "p50_first_ms", "p99_first_ms", "p50_last_ms", "p99_last_ms",
            "rss_start_mib", "rss_end_mib", "routes_complete_after_s", "topics_on_disk"]
    print(table(["target", *keys], [[t, *(r[k] for k in keys)] for t, r in results.items()]))
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
