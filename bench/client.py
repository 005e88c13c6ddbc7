"""
Client benchmark (issue #6): rocketmq_tx's Twisted producer and push consumer against the
official Java 5.5.0 client, in one run, against the same official Java 5.5.0 name server
and broker.

    python3 bench/client.py [--seconds 15] [--warmup 3] [--messages 100000]

* Producer: sync sends of a 1 KiB body, 64 in flight at once (Java: 64 threads of
  ``DefaultMQProducer.send``, bench/broker/java's SendLatency; ours: 64 concurrent
  ``Producer.send`` Deferreds on one reactor), then one at a time. Sends per second and
  the latency percentiles of every acknowledged send after the warm-up.
* Push consumer: a backlog of ``--messages`` messages drained by a new group from the
  first offset (Java: DefaultMQPushConsumer, bench/broker/java's DrainConsumer; ours:
  PushConsumer), timed from the first message to the last.

Our client runs in its own process (``--driver``), like the Java one, so the two compete
for the same cores the same way. Prints a Markdown table of figures and tx / Java ratios, and
writes a small JSON summary of the run to ``bench/results/client-<UTC time>.json``
(``--summary PATH`` elsewhere, ``--no-summary`` not at all).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "broker"))

BODY_SIZE = 1024


# --------------------------------------------------------------------------- our side (--driver)

def _percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    index = max(0, min(len(sorted_values) - 1, int(-(-q * len(sorted_values) // 1)) - 1))
    return sorted_values[index]


async def drive_produce(reactor, namesrv: str, topic: str, concurrency: str, seconds: str,  # type: ignore[no-untyped-def]
                        warmup: str) -> None:
    from rocketmq_tx.client import Message, Producer

    body = b"a" * BODY_SIZE
    start = reactor.seconds()
    record_from = start + float(warmup)
    end = record_from + float(seconds)
    samples: list[float] = []
    failed = 0

    async def worker() -> None:
        nonlocal failed
        while True:
            t0 = time.perf_counter()
            now = reactor.seconds()
            if now >= end:
                return
            try:
                await producer.send(Message(topic, body))
            except Exception:  # noqa: BLE001 - counted like Java's SendLatency
                if now >= record_from:
                    failed += 1
                continue
            if now >= record_from:
                samples.append(time.perf_counter() - t0)

    from twisted.internet.defer import ensureDeferred, gatherResults

    async with Producer("bench_tx_producer", namesrv, reactor, compress_over=1 << 30) as producer:
        await gatherResults([ensureDeferred(worker()) for _ in range(int(concurrency))])
    samples.sort()
    print(json.dumps({"sends": len(samples), "failed": failed, "tps": len(samples) / float(seconds),
                      "p50_ms": _percentile(samples, 0.5) * 1e3, "p99_ms": _percentile(samples, 0.99) * 1e3,
                      "max_ms": (samples[-1] * 1e3) if samples else float("nan")}))


async def drive_consume(reactor, namesrv: str, topic: str, group: str, count: str,  # type: ignore[no-untyped-def]
                        timeout: str) -> None:
    from twisted.internet.defer import Deferred

    from rocketmq_tx.client import CONSUME_FROM_FIRST_OFFSET, ConsumeStatus, PushConsumer

    done: Deferred = Deferred()
    state = {"received": 0, "first": 0.0}

    def listener(msgs):  # type: ignore[no-untyped-def]
        if not state["first"]:
            state["first"] = time.perf_counter()
        state["received"] += len(msgs)
        if state["received"] >= int(count) and not done.called:
            done.callback(None)
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer(group, namesrv, reactor, consume_from_where=CONSUME_FROM_FIRST_OFFSET)
    consumer.subscribe(topic, "*")
    consumer.register_listener(listener)
    async with consumer:
        timer = reactor.callLater(float(timeout), lambda: done.called or done.callback(None))
        await done
        end = time.perf_counter()
        if timer.active():
            timer.cancel()
    seconds = end - state["first"] if state["first"] else float("nan")
    print(json.dumps({"received": state["received"], "seconds": seconds, "rate": state["received"] / seconds}))


def driver(args: list[str]) -> None:
    from twisted.internet.defer import ensureDeferred
    from twisted.internet.task import react

    mode, rest = args[0], args[1:]
    fn = {"produce": drive_produce, "consume": drive_consume}[mode]
    react(lambda reactor: ensureDeferred(fn(reactor, *rest)))


# --------------------------------------------------------------------------- the run

def run_driver(*args: str, timeout: float) -> dict:
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--driver", *args], capture_output=True,
                         text=True, timeout=timeout, cwd=ROOT)
    if out.returncode != 0:
        raise RuntimeError(f"driver {args} exited {out.returncode}:\n{out.stderr[-3000:]}")
    return json.loads([line for line in out.stdout.splitlines() if line.startswith("{")][-1])


def fill(namesrv: str, topic: str, count: int) -> None:
    from rocketmq_tx.blocking import BlockingProducer
    from rocketmq_tx.common.message import Message

    with BlockingProducer("bench_client_fill", namesrv, send_timeout=30) as producer:
        sent = 0
        while sent < count:
            n = min(64, count - sent)
            producer.send_batch([Message(topic, b"a" * BODY_SIZE) for _ in range(n)])
            sent += n


def main() -> None:
    if sys.argv[1:2] == ["--driver"]:
        driver(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--summary", type=Path, default=None,
                        help="where to write the run's small JSON summary "
                             "(default bench/results/client-<UTC time>.json)")
    parser.add_argument("--no-summary", action="store_true", help="write no JSON summary")
    args = parser.parse_args()

    # the broker bench's parts (bench/broker/brokerbench): the Java side's classpath and helpers
    import _summary
    from _common import table
    from brokerbench.peers import BenchHome, start_java, tools_classpath
    from brokerbench.settings import TOOL_JVM, WORK, log
    from brokerbench.tools import Tool, ensure_topic, run_latency

    started = dt.datetime.now(dt.UTC)
    load_start = _summary.loadavg()
    tools_cp = tools_classpath()
    WORK.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="bench-client-", dir=WORK))
    target = start_java("5.5.0", tools_cp, work / "store", heap="4g")
    ns = target.namesrv_addr
    home = BenchHome("bench-client-tools", TOOL_JVM)
    results: dict[str, dict] = {}
    try:
        for threads in (64, 1):
            for who in ("java", "tx"):
                topic = f"ClientBench{who}{threads}"
                ensure_topic(ns, topic)
                log(f"{who}: producer, {threads} in flight, {args.warmup + args.seconds:.0f} s")
                if who == "java":
                    results[f"java_send_{threads}"] = run_latency(tools_cp, home, ns, topic, threads,
                                                                              args.seconds)
                else:
                    results[f"tx_send_{threads}"] = run_driver("produce", ns, topic, str(threads),
                                                               str(args.seconds), str(args.warmup),
                                                               timeout=args.seconds + args.warmup + 120)
        topic = "ClientBenchDrain"
        ensure_topic(ns, topic)
        log(f"filling {topic} with {args.messages} messages")
        fill(ns, topic, args.messages)
        for who in ("java", "tx"):
            group = f"bench_drain_{who}"
            log(f"{who}: push consumer draining {args.messages} messages")
            if who == "java":
                tool = Tool(tools_cp, home, "rocketmq.bench.DrainConsumer",
                                         [ns, topic, group, str(args.messages), "600"], ())
                try:
                    deadline = time.monotonic() + 660
                    while tool.proc.poll() is None and time.monotonic() < deadline:
                        time.sleep(0.2)
                finally:
                    tool.stop()
                results["java_drain"] = json.loads([line for _, line in tool.lines if line.startswith("{")][-1])
            else:
                results["tx_drain"] = run_driver("consume", ns, topic, group, str(args.messages), "600",
                                                 timeout=700)
    finally:
        target.stop()
        shutil.rmtree(work, ignore_errors=True)

    def ratio(a: float, b: float) -> str:
        return f"{a / b:.2f}" if b else "-"

    rows = []
    for threads in (64, 1):
        j, t = results[f"java_send_{threads}"], results[f"tx_send_{threads}"]
        rows.append([f"sends/s, {threads} in flight", f"{t['tps']:.0f}", f"{j['tps']:.0f}", ratio(t["tps"], j["tps"]),
                     ">= 0.7"])
        rows.append([f"p99 ms, {threads} in flight", f"{t['p99_ms']:.2f}", f"{j['p99_ms']:.2f}",
                     ratio(t["p99_ms"], j["p99_ms"]), ""])
        rows.append([f"p50 ms, {threads} in flight", f"{t['p50_ms']:.2f}", f"{j['p50_ms']:.2f}",
                     ratio(t["p50_ms"], j["p50_ms"]), ""])
    j, t = results["java_drain"], results["tx_drain"]
    rows.append([f"push consumer msgs/s ({args.messages} backlog)", f"{t['rate']:.0f}", f"{j['rate']:.0f}",
                 ratio(t["rate"], j["rate"]), ">= 0.7"])
    print(table(["figure", "rocketmq_tx", "Java 5.5.0 client", "tx / Java", "goal"], rows))
    print(json.dumps(results))
    if not args.no_summary:
        path = _summary.write({
            "bench": "client", "started": started.isoformat(timespec="seconds"), "commit": _summary.git_commit(),
            "command": _summary.command_line("bench/client.py"),
            "settings": {"seconds": args.seconds, "warmup": args.warmup, "messages": args.messages,
                         "body_size": BODY_SIZE},
            "machine": _summary.machine(), "loadavg_start": load_start, "loadavg_end": _summary.loadavg(),
            "figures": {"table": [dict(zip(["figure", "rocketmq_tx", "java", "tx_over_java", "goal"], row))
                                  for row in rows], "results": results},
        }, args.summary or _summary.default_path("client", started))
        log(f"wrote {path}")


if __name__ == "__main__":
    main()
