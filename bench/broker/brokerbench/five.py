"""
Issue #22's two comparisons of the 5.x line (``run.py --pop``, ``run.py --timer``, both with
``--five``): their phases against one started target, their table and their JSON summary.

``--pop``: POP receive + ack throughput. A backlog of ``--pop-backlog`` 1 KiB messages is
stored (SqlLoad, 64 threads) in a topic of 4 queues, then ``rocketmq.bench.PopBench`` (official
5.5.0 remoting client, MQClientAPIImpl.popMessageAsync / ackMessageAsync) consumes it with a
new group. "64 in flight" is read as 64 POP_MESSAGE requests outstanding at every moment
(``--pop-inflight``): each response re-issues its slot at once, so the broker always holds
64 pops, each of up to 32 messages (``--pop-batch``) from any queue (queueId -1, the 5.x
proxy's receive), and every message received is acked at once with its own ACK_MESSAGE (the
push consumer's POP-mode ack). Counting outstanding requests rather than consumer threads
makes the broker, not the client's thread pool, the limit, and it is what a proxy in front of
many SimpleConsumers puts on a broker. The figure is acks answered OK per second over
``--seconds`` after ``--warmup``; also the pop round trip p50/p99, empty pops (a pop that found
nothing), failed and unanswered acks, the broker's CPU per message, and whether (and when) the
backlog ran out, which makes the window undercount. The invisible time is 60 s, longer than
the run, so nothing is revived while measuring.

Long polling: ``--pop-poll-ms`` is 0 by default (a pop that finds nothing returns at once and
its slot is re-issued; empty pops are counted). The backlog never runs dry in the window, so
a poll time only matters for a pop that finds every queue locked: the Java broker locks a
queue while one pop reads it, and with 64 pops over 4 queues that happens; with a poll time
such a pop is parked (up to that time) before it is retried. ``--pop-poll-ms 1000`` runs it
the way the clients do.

``--timer``: timer delivery lateness. ``rocketmq.bench.TimerLateness`` (official 5.5.0 client)
starts a push consumer, proves it receives, then sends ``--timer-count`` messages at a steady
rate over ``--timer-spread`` seconds, each with TIMER_DELIVER_MS = its scheduled send time +
``--timer-delay`` seconds; per message, lateness = receive time - deliver time. Both brokers
run with Java's default timerPrecisionMs=1000. Both (as Java's HookUtils does) round a deliver
time down to its tick and read a tick's slot only once the clock has passed it, so a timer
comes at or up to about one tick after its time: the table counts early deliveries (must
be 0), and missing ones (must be 0).
"""

from __future__ import annotations

import json
import os
import time

from .features import _json_tool
from .peers import BenchHome, Target, cpu_seconds, rss_kib
from .report import get, ratio
from .settings import BODY_SIZE, TOOL_JVM, log
from .tools import Tool, ensure_topic

POP_TOPIC = "BenchPop"
POP_GROUP = "bench_pop_consumer"
POP_INVISIBLE_MS = 60_000
LOAD_THREADS = 64

TIMER_TOPIC = "BenchTimer"
TIMER_GROUP = "bench_timer_consumer"
#: both brokers' default (BROKER_SETTINGS leaves timerPrecisionMs alone)
TIMER_PRECISION_MS = 1000


def bench_pop(target: Target, cp: str, backlog: int, inflight: int, batch: int, poll_ms: int, warmup: float,
              seconds: float, invisible_ms: int = POP_INVISIBLE_MS) -> dict:
    """Store *backlog* messages, then PopBench (*inflight* pops of up to *batch*) for *warmup* + *seconds*."""
    home = BenchHome("bench-broker-tools", TOOL_JVM)
    ensure_topic(target.namesrv_addr, POP_TOPIC)  # one more message in the backlog
    log(f"{target.name}: POP backlog, {backlog:,} messages ({LOAD_THREADS} threads, {BODY_SIZE} B bodies)")
    out: dict = {"load": _json_tool(cp, home, "rocketmq.bench.SqlLoad",
                                    [target.namesrv_addr, POP_TOPIC, str(backlog), str(LOAD_THREADS), str(BODY_SIZE)],
                                    timeout=max(600.0, backlog / 500))}
    out["backlog"] = backlog + 1
    log(f"{target.name}: loaded in {out['load']['seconds']:.1f} s ({out['load']['tps']:,.0f}/s)")
    time.sleep(2.0)  # let the ConsumeQueue dispatch catch up with the last sends
    log(f"{target.name}: PopBench, {inflight} pops in flight of up to {batch}, poll {poll_ms} ms, "
        f"{warmup:.0f} s warm-up + {seconds:.0f} s")
    pop = _pop_tool(cp, home, [target.namesrv_addr, POP_TOPIC, POP_GROUP, str(inflight), str(batch),
                               str(invisible_ms), str(poll_ms), str(warmup), str(seconds), str(out["backlog"])],
                    target.broker_pid, warmup + seconds + 120)
    # the backlog ran out before the window's end: the window undercounts (raise --pop-backlog)
    at = pop.get("exhausted_at_s")
    pop["backlog_exhausted"] = at is not None and at < seconds
    out["pop"] = pop
    out["broker_rss_kib_after_pop"] = rss_kib(target.broker_pid)
    log(f"{target.name}: pop: {json.dumps(pop)}")
    return out


def run_queue_wait_seconds(pid: int | None) -> float | None:
    """Seconds the threads of process *pid* spent runnable but waiting for a CPU (the sum of
    /proc/<pid>/task/*/schedstat's second field): on a shared machine, the share of the
    window a broker was starved, beside its CPU %."""
    if pid is None:
        return None
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[1])
        except (OSError, IndexError, ValueError):
            continue  # a thread that ended meanwhile
    return total / 1e9


def _pop_tool(cp: str, home: BenchHome, args: list[str], broker_pid: int, timeout: float) -> dict:
    """PopBench to its end; the broker's and PopBench's CPU time over its measured window (sampled
    when it prints "window start" and "window end"), per message acked in the window."""
    tool = Tool(cp, home, "rocketmq.bench.PopBench", args)
    marks: dict[str, tuple[float, float | None, float | None, float | None]] = {}
    try:
        deadline = time.monotonic() + timeout
        while tool.proc.poll() is None and time.monotonic() < deadline:
            seen = {line for _, line in list(tool.lines) if line.startswith("window ")}
            for mark in seen - marks.keys():
                marks[mark] = (time.monotonic(), cpu_seconds(broker_pid), cpu_seconds(tool.proc.pid),
                               run_queue_wait_seconds(broker_pid))
            time.sleep(0.02)
    finally:
        tool.stop()
    for _, line in reversed(tool.lines):
        if line.startswith("{"):
            result = json.loads(line.replace("NaN", "null"))
            break
    else:
        raise RuntimeError(f"PopBench printed no result; stderr {tool.stderr_path}:\n{tool.stderr_tail()}")
    if "window start" in marks and "window end" in marks:
        (t0, b0, c0, w0), (t1, b1, c1, w1) = marks["window start"], marks["window end"]
        if w0 is not None and w1 is not None:
            result["broker_run_queue_wait_pct"] = round((w1 - w0) / (t1 - t0) * 100, 1)
        for who, start, end in (("broker", b0, b1), ("client", c0, c1)):
            if start is not None and end is not None:
                result[f"{who}_cpu_pct"] = round((end - start) / (t1 - t0) * 100, 1)  # of one core
                if result.get("acked"):
                    result[f"{who}_cpu_us_per_msg"] = round((end - start) / result["acked"] * 1e6, 2)
    return result


def bench_timer(target: Target, cp: str, count: int, spread: float, delay: float) -> dict:
    """TimerLateness: *count* timers over *spread* seconds, each due *delay* seconds after its send."""
    home = BenchHome("bench-broker-tools", TOOL_JVM)
    ensure_topic(target.namesrv_addr, TIMER_TOPIC)
    log(f"{target.name}: TimerLateness, {count:,} timers over {spread:.0f} s, each due {delay:.0f} s after its send")
    cpu0, t0 = cpu_seconds(target.broker_pid), time.monotonic()
    timer = _json_tool(cp, home, "rocketmq.bench.TimerLateness",
                       [target.namesrv_addr, TIMER_TOPIC, TIMER_GROUP, str(count), str(spread), str(delay),
                        str(BODY_SIZE), str(TIMER_PRECISION_MS)], timeout=spread + delay + 300)
    cpu1, t1 = cpu_seconds(target.broker_pid), time.monotonic()
    if cpu0 is not None and cpu1 is not None:
        timer["broker_cpu_pct"] = round((cpu1 - cpu0) / (t1 - t0) * 100, 1)
    if not timer.get("received"):  # no sample: the tool prints Long.MIN_VALUE for the percentiles
        for key in [k for k in timer if k.startswith("lateness_")]:
            timer[key] = None
    log(f"{target.name}: timer: {json.dumps(timer)}")
    return {"timer": timer, "broker_rss_kib_after_timer": rss_kib(target.broker_pid)}


def bench_five(target: Target, cp: str, args, parts: tuple[str, ...], seconds: float, warmup: float) -> dict:
    """The parts asked for (``pop``, ``timer``) against one fresh target, in that order."""
    out: dict = {"name": target.name, "startup_s": round(target.startup_s, 3), **target.info}
    if "pop" in parts:
        out.update(bench_pop(target, cp, args.pop_backlog, args.pop_inflight, args.pop_batch, args.pop_poll_ms,
                             warmup, seconds, args.pop_invisible_ms))
    if "timer" in parts:
        out.update(bench_timer(target, cp, args.timer_count, args.timer_spread, args.timer_delay))
    return out


# --------------------------------------------------------------------------- the table

#: label, getter, goal: ">= 1.0" (tx / Java), "<= Java" (tx's figure against Java's, not a
#: ratio: a lateness may be 0 or negative), "= 0" (each target on its own)
FIVE_ROWS = [
    ("POP acked messages/s", lambda r: r["pop"]["acked_per_s"], ">= 1.0"),
    ("POP popped messages/s", lambda r: r["pop"]["popped_per_s"], ""),
    ("POP round trip p50 ms", lambda r: r["pop"]["pop_p50_ms"], ""),
    ("POP round trip p99 ms", lambda r: r["pop"]["pop_p99_ms"], ""),
    ("POP requests in the window", lambda r: r["pop"]["pops"], ""),
    ("POP empty pops in the window", lambda r: r["pop"]["empty_pops"], ""),
    ("POP failed pops + acks (whole run)", lambda r: r["pop"]["pop_failed_total"] + r["pop"]["ack_failed_total"],
     "= 0"),
    ("POP acks unanswered at the end", lambda r: r["pop"]["acks_unanswered"], "= 0"),
    # more popped than stored: a message came back (revived) although its ack was answered OK
    ("POP popped beyond the backlog", lambda r: max(r["pop"]["popped_total"] - r["backlog"], 0), "= 0"),
    ("POP backlog ran out in or before the window", lambda r: r["pop"]["backlog_exhausted"], "= False"),
    ("POP backlog ran out at s (from the window's start)", lambda r: r["pop"]["exhausted_at_s"], ""),
    ("POP broker CPU % in the window", lambda r: r["pop"]["broker_cpu_pct"], ""),
    ("POP broker CPU us per acked message", lambda r: r["pop"]["broker_cpu_us_per_msg"], ""),
    ("POP client (PopBench) CPU % in the window", lambda r: r["pop"]["client_cpu_pct"], ""),
    # summed over the broker's threads: above 0 a few %, the machine was short of CPU for it
    ("POP broker run-queue wait % in the window", lambda r: r["pop"]["broker_run_queue_wait_pct"], ""),
    ("backlog load TPS (SqlLoad, 64 threads)", lambda r: r["load"]["tps"], ""),
    ("timer lateness p50 ms", lambda r: r["timer"]["lateness_p50_ms"], ""),
    ("timer lateness p99 ms", lambda r: r["timer"]["lateness_p99_ms"], "<= Java"),
    ("timer lateness max ms", lambda r: r["timer"]["lateness_max_ms"], ""),
    ("timer lateness min ms", lambda r: r["timer"]["lateness_min_ms"], ""),
    ("timer early (before the deliver time)", lambda r: r["timer"]["early"], "= 0"),
    ("timer missing", lambda r: r["timer"]["missing"], "= 0"),
    ("timer duplicates", lambda r: r["timer"]["duplicates"], ""),
    ("timer send failed", lambda r: r["timer"]["send_failed"], "= 0"),
    ("timer sends/s (steady)", lambda r: r["timer"]["send_rate"], ""),
    ("timer broker CPU %", lambda r: r["timer"]["broker_cpu_pct"], ""),
]


def _met(goal: str, tx: object, java: object) -> bool | None:
    if not goal:
        return None
    if goal == ">= 1.0":
        q = ratio(tx, java)
        return None if q is None else q >= 1.0
    if goal == "<= Java":
        return tx <= java if isinstance(tx, (int, float)) and isinstance(java, (int, float)) else None
    want: object = False if goal == "= False" else 0
    return None if tx is None else tx == want


def five_rows(results: dict[str, dict]) -> list[dict]:
    """One row per figure measured by at least one target; the goals of the "= 0" kind are
    tx's (Java's own value is beside it)."""
    rows = []
    java_name = next((n for n in results if n.startswith("Java")), None)
    for label, getter, goal in FIVE_ROWS:
        row: dict = {"figure": label}
        for name, r in results.items():
            row[name] = get(r, getter)
        if all(row[n] is None for n in results):
            continue
        if "rocketmq_tx" in results and java_name is not None:
            q = ratio(row["rocketmq_tx"], row[java_name])
            row["tx_over_java"] = None if q is None or isinstance(row["rocketmq_tx"], bool) else round(q, 3)
        if goal:
            row["goal"] = goal if not goal.startswith(">=") else f"tx / Java {goal}"
            row["met"] = _met(goal, row.get("rocketmq_tx"), row.get(java_name) if java_name else None)
        rows.append(row)
    return rows


def summarize(raw: dict, raw_path=None) -> dict:
    """The JSON summary of a ``--pop`` / ``--timer`` raw results file."""
    results = raw["results"]
    settings = {k: raw.get(k) for k in ("parts", "seconds", "warmup_phase_s", "pop", "timer", "body_size", "tools",
                                        "cpus") if raw.get(k) is not None}
    settings["flushDiskType"] = raw.get("broker_settings", {}).get("flushDiskType")
    settings["java_heap"] = next((a[4:] for a in raw.get("broker_jvm", ()) if a.startswith("-Xmx")), None)
    return {
        "bench": "broker-five",
        "started": raw.get("started"), "commit": raw.get("commit"), "command": raw.get("command"),
        "raw_results": raw_path.name if raw_path else None, "settings": settings,
        "loadavg_1min": {n: r.get("loadavg_1min") for n, r in results.items()},
        "errors": {n: r["error"] for n, r in results.items() if "error" in r} or None,
        "figures": five_rows(results),
    }
