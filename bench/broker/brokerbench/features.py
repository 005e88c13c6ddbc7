"""
Issue #21's two comparisons (``run.py --transactions`` and ``run.py --sql92``): their phases
against one started target, their tables and their JSON summaries.

``--transactions``: on one broker, the benchmark Producer (plain sync sends) and then the
benchmark TransactionProducer (half message, local transaction committed at once, END_TRANSACTION),
both 64 threads and 1 KiB bodies; the figure is transactional / plain send TPS per broker,
and the goal compares tx's ratio with Java's.

``--sql92``: a backlog of N messages (property ``a`` = i % 10, no tag) loaded by SqlLoad, then
one SqlScan push consumer with ``a = 0`` reading it from the first offset; scanned messages/s
= backlog / the time to deliver all the matching ones, tx / Java.
"""

from __future__ import annotations

import json
import re
import statistics
import time

import rocketmq_java

from .peers import BenchHome, Target, cpu_seconds, rss_kib
from .report import get, ratio, ratio_table
from .settings import BODY_SIZE, TOOL_JVM, log
from .tools import FIRST_REPORT_TIMEOUT, Tool, ensure_topic, mean, run_producer

# TransactionProducer (5.5.0) prints, once a second with -ri 1000, over the last 9 s:
# "Current Time: ... | Send TPS: %5d | Max RT(ms): %5d | AVG RT(ms): %3.1f | Send Failed: %d |
#  Check: %d | UnexpectedCheck: %d | DuplicatedCheck: %d"
TX_SEND_RE = re.compile(r"Send TPS:\s*(\d+) \| Max RT\(ms\):\s*(\d+) \| AVG RT\(ms\):\s*([\d.NaN]+) \| "
                        r"Send Failed: (\d+) \| Check: (\d+) \| UnexpectedCheck: (\d+) \| DuplicatedCheck: (\d+)")

SQL_TOPIC = "BenchSql92"
#: the consumer's expression: ``a`` is a user property, no tag is set, so nothing but the
#: property evaluation (both brokers: read the message's properties from the CommitLog) selects
SQL_EXPRESSION = "a = 0"
SQL_LOAD_THREADS = 64


# --------------------------------------------------------------------------- --transactions

def parse_tx_producer(lines: list[tuple[float, str]]) -> dict:
    rows = [m.groups() for _, line in lines if (m := TX_SEND_RE.search(line))]
    if not rows:
        return {"reports": 0}
    return {
        "reports": len(rows),
        "send_tps": mean([float(r[0]) for r in rows]),
        "send_tps_last": int(rows[-1][0]),
        "avg_rt_ms": mean([float(r[2]) for r in rows]),
        "max_rt_ms": max(int(r[1]) for r in rows),  # this tool resets its maximum at every report
        "send_failed": sum(int(r[3]) for r in rows),  # per-window counts; windows overlap
        "response_failed": 0,
        "checks": sum(int(r[4]) for r in rows),  # the same: any check-back at all shows here
        "unexpected_checks": sum(int(r[5]) for r in rows),
    }


def run_tx_producer(cp: str, home: rocketmq_java.JavaHome, namesrv_addr: str, topic: str, threads: int,
                    seconds: float, broker_pid: int | None = None) -> dict:
    """The benchmark TransactionProducer as ``benchmark/tproducer.sh`` starts it (no
    sendSmartMsg property), with its defaults -sr 0 -su 0 (every local transaction answers
    COMMIT_MESSAGE at once, so no check-back is due): until its first report, then *seconds*
    more; the broker's and the tool's CPU time per message over those *seconds*."""
    ensure_topic(namesrv_addr, topic)
    tool = Tool(cp, home, "TransactionProducer",
                ["-n", namesrv_addr, "-t", topic, "-w", str(threads), "-s", str(BODY_SIZE), "-ri", "1000"])
    cpu = []
    try:
        tool.wait_for(r"Send TPS", FIRST_REPORT_TIMEOUT)
        cpu.append((time.monotonic(), cpu_seconds(broker_pid), cpu_seconds(tool.proc.pid)))
        time.sleep(seconds + 0.5)
        cpu.append((time.monotonic(), cpu_seconds(broker_pid), cpu_seconds(tool.proc.pid)))
    finally:
        tool.stop()
    result = parse_tx_producer(tool.lines)
    result["lines"] = [line for _, line in tool.lines]
    if not result["reports"]:
        raise RuntimeError(f"TransactionProducer printed no figures; stderr {tool.stderr_path}:\n"
                           f"{tool.stderr_tail()}")
    (t0, b0, p0), (t1, b1, p1) = cpu
    if result.get("send_tps"):
        messages = result["send_tps"] * (t1 - t0)
        for who, start, end in (("broker", b0, b1), ("producer", p0, p1)):
            if start is not None and end is not None:
                result[f"{who}_cpu_pct"] = round((end - start) / (t1 - t0) * 100, 1)
                result[f"{who}_cpu_us_per_msg"] = round((end - start) / messages * 1e6, 2)
    return result


def bench_transactions(target: Target, cp: str, seconds: float, warmup: float, threads: int = 64) -> dict:
    """Warm-up, then the Producer and the TransactionProducer, *threads* threads each, on the same broker."""
    home = BenchHome("bench-broker-tools", TOOL_JVM)
    out: dict = {"name": target.name, "startup_s": round(target.startup_s, 3), **target.info}
    rss: dict[str, int | None] = {"after_start": rss_kib(target.broker_pid)}
    if warmup > 0:
        log(f"{target.name}: warm-up, Producer, 64 threads, {warmup:.0f} s (not reported)")
        out["warmup"] = run_producer(cp, home, target.namesrv_addr, "BenchWarmup", 64, warmup, warmup_only=True)
        out["warmup"].pop("lines", None)
    log(f"{target.name}: Producer (plain), {threads} threads, first report + {seconds:.0f} s")
    out["plain"] = run_producer(cp, home, target.namesrv_addr, "BenchSendPlain", threads, seconds,
                                broker_pid=target.broker_pid)
    rss["after_plain"] = rss_kib(target.broker_pid)
    log(f"{target.name}: TransactionProducer (commit at once), {threads} threads, first report + {seconds:.0f} s")
    out["transactional"] = run_tx_producer(cp, home, target.namesrv_addr, "BenchSendTx", threads, seconds,
                                           target.broker_pid)
    rss["after_transactional"] = rss_kib(target.broker_pid)
    out["broker_rss_kib"] = rss
    return out


TX_ROWS = [
    # label, getter (of one mode's result), goal for (tx's tx/plain) / (Java's tx/plain)
    ("send TPS, 64 threads", lambda r: r["send_tps"], ">= 1.0"),
    ("avg RT ms, 64 threads", lambda r: r["avg_rt_ms"], ""),
    ("broker CPU us per message", lambda r: r["broker_cpu_us_per_msg"], ""),
    ("Producer CPU us per message", lambda r: r["producer_cpu_us_per_msg"], ""),
]


def tx_rows(results: dict[str, dict]) -> list[dict]:
    rows = []
    java_name = next((n for n in results if n.startswith("Java")), None)
    for label, getter, goal in TX_ROWS:
        row: dict = {"figure": label}
        ratios = {}
        for name, r in results.items():
            plain = get(r.get("plain") if "error" not in r else None, getter)
            tx = get(r.get("transactional") if "error" not in r else None, getter)
            ratios[name] = ratio(tx, plain)
            row[name] = {"plain": plain, "transactional": tx,
                         "transactional_over_plain": None if ratios[name] is None else round(ratios[name], 3)}
        if "rocketmq_tx" in results and java_name is not None:
            q = ratio(ratios["rocketmq_tx"], ratios[java_name])
            row["tx_ratio_over_java_ratio"] = None if q is None else round(q, 3)
            if goal:
                row["goal"] = f"tx ratio / Java ratio {goal}"
                row["met"] = None if q is None else q >= float(goal.split()[1])
        rows.append(row)
    return rows


def tx_rounds_rows(rounds: list[dict[str, dict]]) -> list[dict]:
    """Several ``--transactions`` rounds: each figure's per-round ratios and their median. The
    goal is judged on the median of the per-round tx ratio / Java ratio (each round measures
    both targets back to back, so the rounds are the pairs), as ``--metrics`` judges its own."""
    per_round = [tx_rows(r) for r in rounds]
    rows = []
    for i, (label, _, goal) in enumerate(TX_ROWS):
        row: dict = {"figure": label}
        for name in rounds[0]:
            values = [r[i].get(name, {}).get("transactional_over_plain") for r in per_round]
            known = [v for v in values if v is not None]
            row[name] = {"per_round": values,
                         "median_transactional_over_plain": round(statistics.median(known), 3) if known else None}
        qs = [r[i].get("tx_ratio_over_java_ratio") for r in per_round]
        known_q = [q for q in qs if q is not None]
        if known_q:
            row["per_round_tx_ratio_over_java_ratio"] = qs
            q = row["tx_ratio_over_java_ratio"] = round(statistics.median(known_q), 3)
            if goal:
                row["goal"] = f"median of the per-round tx ratio / Java ratio {goal}"
                row["met"] = q >= float(goal.split()[1])
        rows.append(row)
    return rows


def tx_rounds_text(rounds: list[dict[str, dict]]) -> str:
    """The per-round ratios of several rounds and their medians, as a Markdown table."""
    names = list(rounds[0])
    lines = [f"Median of the {len(rounds)} rounds' ratios:", "",
             "| figure | " + " | ".join(f"{n} tx / plain per round (median)" for n in names)
             + " | tx ratio / Java ratio per round (median) | goal | met |",
             "|---|" + "---|" * (len(names) + 3)]
    for row in tx_rounds_rows(rounds):
        cells = [f"{row[n]['per_round']} ({row[n]['median_transactional_over_plain']})" for n in names]
        q = row.get("tx_ratio_over_java_ratio")
        cells.append("" if q is None else f"{row['per_round_tx_ratio_over_java_ratio']} ({q})")
        cells += [row.get("goal", ""), str(row.get("met", ""))]
        lines.append(f"| {row['figure']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# --------------------------------------------------------------------------- --sql92

def bench_sql92(target: Target, cp: str, backlog: int, timeout: float) -> dict:
    """Load *backlog* messages (SqlLoad, 64 threads), then one SqlScan consumer with SQL_EXPRESSION
    from the first offset until it holds the backlog's tenth (or *timeout*); the broker's CPU
    time and RSS over the scan."""
    home = BenchHome("bench-broker-tools", TOOL_JVM)
    out: dict = {"name": target.name, "startup_s": round(target.startup_s, 3), **target.info}
    ensure_topic(target.namesrv_addr, SQL_TOPIC)  # stores one message without properties: not matching
    log(f"{target.name}: loading {backlog:,} messages ({SQL_LOAD_THREADS} threads, {BODY_SIZE} B bodies)")
    out["load"] = _json_tool(cp, home, "rocketmq.bench.SqlLoad",
                             [target.namesrv_addr, SQL_TOPIC, str(backlog), str(SQL_LOAD_THREADS), str(BODY_SIZE)],
                             timeout=max(600.0, backlog / 500))
    log(f"{target.name}: loaded in {out['load']['seconds']:.1f} s ({out['load']['tps']:,.0f}/s)")
    expected = (backlog + 9) // 10  # i % 10 == 0 for i in 0 .. backlog-1
    out["scanned_backlog"] = backlog + 1  # with ensure_topic's message
    out["expected_matches"] = expected
    time.sleep(2.0)  # let the ConsumeQueue dispatch catch up with the last sends
    cpu0, t0 = cpu_seconds(target.broker_pid), time.monotonic()
    log(f"{target.name}: SqlScan, '{SQL_EXPRESSION}', until {expected:,} matching messages")
    scan = _json_tool(cp, home, "rocketmq.bench.SqlScan",
                      [target.namesrv_addr, SQL_TOPIC, "bench_sql92_consumer", SQL_EXPRESSION, str(expected),
                       str(timeout), "3"], timeout=timeout + 120)
    cpu1, t1 = cpu_seconds(target.broker_pid), time.monotonic()
    if cpu0 is not None and cpu1 is not None:
        scan["broker_cpu_s"] = round(cpu1 - cpu0, 2)
        scan["broker_cpu_pct"] = round((cpu1 - cpu0) / (t1 - t0) * 100, 1)
    seconds = scan.get("seconds")
    if scan.get("complete") and isinstance(seconds, (int, float)) and seconds == seconds and seconds > 0:
        scan["scanned_per_s"] = round(out["scanned_backlog"] / seconds, 1)
        scan["scanned_per_s_from_start"] = round(out["scanned_backlog"] / scan["seconds_from_start"], 1)
    scan["delivered_exactly_10pct"] = bool(scan.get("complete") and scan.get("received") == expected
                                           and scan.get("distinct") == expected and not scan.get("not_matching"))
    out["scan"] = scan
    out["broker_rss_kib_after_scan"] = rss_kib(target.broker_pid)
    log(f"{target.name}: scan: {json.dumps(scan)}")
    return out


def _json_tool(cp: str, home: rocketmq_java.JavaHome, main: str, args: list[str], timeout: float) -> dict:
    """Run one of bench/broker/java's tools to its end and return the JSON line it prints."""
    tool = Tool(cp, home, main, args)
    try:
        deadline = time.monotonic() + timeout
        while tool.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        tool.stop()
    for _, line in reversed(tool.lines):
        if line.startswith("{"):
            return json.loads(line.replace("NaN", "null"))
    raise RuntimeError(f"{main} printed no result; stderr {tool.stderr_path}:\n{tool.stderr_tail()}")


SQL_ROWS = [
    ("scanned messages/s (backlog / first to last match)", lambda r: r["scan"]["scanned_per_s"], ">= 1.0"),
    ("scanned messages/s (backlog / consumer start to last match)",
     lambda r: r["scan"]["scanned_per_s_from_start"], ""),
    ("scan seconds (first to last match)", lambda r: r["scan"]["seconds"], ""),
    ("consumer start to first match s", lambda r: r["scan"]["first_message_s"], ""),
    ("delivered", lambda r: r["scan"]["received"], ""),
    ("delivered, distinct", lambda r: r["scan"]["distinct"], ""),
    ("delivered, not matching", lambda r: r["scan"]["not_matching"], ""),
    ("broker CPU % during the scan", lambda r: r["scan"]["broker_cpu_pct"], ""),
    ("load TPS (SqlLoad, 64 threads)", lambda r: r["load"]["tps"], ""),
    ("broker RSS MiB after the scan", lambda r: round(r["broker_rss_kib_after_scan"] / 1024, 1), ""),
]


def sql_rows(results: dict[str, dict]) -> list[dict]:
    rows = []
    java_name = next((n for n in results if n.startswith("Java")), None)
    for label, getter, goal in SQL_ROWS:
        row: dict = {"figure": label}
        for name, r in results.items():
            row[name] = get(r, getter)
        if "rocketmq_tx" in results and java_name is not None:
            q = ratio(row["rocketmq_tx"], row[java_name])
            row["tx_over_java"] = None if q is None else round(q, 3)
            if goal:
                row["goal"] = f"tx / Java {goal}"
                row["met"] = None if q is None else q >= float(goal.split()[1])
        rows.append(row)
    return rows


# --------------------------------------------------------------------------- tables and summaries

def table_text(rows: list[dict], names: list[str], mode: str) -> str:
    from _common import table

    if mode == "transactions":
        headers = ["figure"]
        for n in names:
            headers += [f"{n} plain", f"{n} transactional", f"{n} tx / plain"]
        headers += ["tx ratio / Java ratio", "goal", "met"]
        body = [[row["figure"], *(v for n in names for v in (row[n]["plain"], row[n]["transactional"],
                                                               row[n]["transactional_over_plain"])),
                 row.get("tx_ratio_over_java_ratio"), row.get("goal", ""), row.get("met", "")] for row in rows]
    else:
        return ratio_table(rows, names)
    return table(headers, [["" if v is None else v for v in r] for r in body])


def summarize(raw: dict, raw_path=None) -> dict:
    """The JSON summary of a ``--transactions`` or ``--sql92`` raw results file."""
    mode = raw["mode"]
    if isinstance(raw["results"], list):  # --transactions --rounds N
        rounds = raw["results"]
        out = summarize({**raw, "results": rounds[0]}, raw_path)
        out["settings"]["rounds"] = len(rounds)
        out["loadavg_1min"] = [{n: r.get("loadavg_1min") for n, r in rs.items()} for rs in rounds]
        out["errors"] = [e for rs in rounds for n, r in rs.items() if "error" in r for e in [{n: r["error"]}]] or None
        out["rounds"] = [tx_rows(rs) for rs in rounds]
        out["figures"] = tx_rounds_rows(rounds)
        out["check_backs"] = [{n: get(r, lambda r: r["transactional"]["checks"]) for n, r in rs.items()}
                              for rs in rounds]
        return out
    results = raw["results"]
    settings = {k: raw.get(k) for k in ("seconds", "warmup_phase_s", "threads", "backlog", "expression",
                                        "body_size", "tools", "cpus") if raw.get(k) is not None}
    settings["flushDiskType"] = raw.get("broker_settings", {}).get("flushDiskType")
    settings["enablePropertyFilter"] = raw.get("broker_settings", {}).get("enablePropertyFilter")
    settings["java_heap"] = next((a[4:] for a in raw.get("broker_jvm", ()) if a.startswith("-Xmx")), None)
    out = {
        "bench": f"broker-{'tx' if mode == 'transactions' else 'sql92'}",
        "started": raw.get("started"), "commit": raw.get("commit"), "command": raw.get("command"),
        "raw_results": raw_path.name if raw_path else None, "settings": settings,
        "loadavg_1min": {n: r.get("loadavg_1min") for n, r in results.items()},
        "errors": {n: r["error"] for n, r in results.items() if "error" in r} or None,
        "figures": tx_rows(results) if mode == "transactions" else sql_rows(results),
    }
    if mode == "transactions":
        out["check_backs"] = {n: get(r, lambda r: r["transactional"]["checks"]) for n, r in results.items()}
    return out


def loads_text(results: dict[str, dict]) -> str:
    return "; ".join(f"{n}: load average {r['loadavg_1min'][0]} at start, {r['loadavg_1min'][1]} at end"
                     for n, r in results.items())
