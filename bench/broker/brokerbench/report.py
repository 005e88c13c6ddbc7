"""
The report: the Markdown tables (the full run's tx / Java ratios; ``--tls``'s and ``--acl``'s
feature / plain ratios and their quotient), the 1-thread TLS cost split, the rounds' means
and medians, and the raw results file (``bench/broker/results-*.json``, gitignored).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
from collections.abc import Callable
from pathlib import Path

from _common import table
from _summary import command_line, git_commit

from .settings import (
    BODY_SIZE,
    BROKER_SETTINGS,
    HERE,
    NAMESRV_JVM,
    ROOT,
    TOOL_JVM,
    TOOLS_VERSION,
    WARMUP,
    broker_jvm,
    log,
)
from .tools import mean

ROWS = [
    # label, getter, goal (ratio tx/Java; ">=" means higher is better)
    ("send TPS, 64 threads", lambda r: r["send_64"]["send_tps"], ">= 1.0"),
    ("avg RT ms, 64 threads", lambda r: r["send_64"]["avg_rt_ms"], ""),
    ("max RT ms, 64 threads", lambda r: r["send_64"]["max_rt_ms"], ""),
    ("p99 RT ms, 64 threads (SendLatency)", lambda r: r["latency_64"]["p99_ms"], "<= 1.0"),
    ("p50 RT ms, 64 threads (SendLatency)", lambda r: r["latency_64"]["p50_ms"], ""),
    ("send TPS, 64 threads (SendLatency)", lambda r: r["latency_64"]["tps"], ""),
    ("send failed, 64 threads", lambda r: r["send_64"]["send_failed"] + r["send_64"]["response_failed"], ""),
    ("send TPS, 1 thread", lambda r: r["send_1"]["send_tps"], ">= 1.0"),
    ("avg RT ms, 1 thread", lambda r: r["send_1"]["avg_rt_ms"], ""),
    ("max RT ms, 1 thread", lambda r: r["send_1"]["max_rt_ms"], ""),
    ("p99 RT ms, 1 thread (SendLatency)", lambda r: r["latency_1"]["p99_ms"], "<= 1.0"),
    ("p50 RT ms, 1 thread (SendLatency)", lambda r: r["latency_1"]["p50_ms"], ""),
    ("consume TPS", lambda r: r["consume"]["consume_tps"], ">= 1.0"),
    ("avg born-to-consume ms", lambda r: r["consume"]["avg_b2c_ms"], ""),
    ("max born-to-consume ms", lambda r: r["consume"]["max_b2c_ms"], ""),
    ("send TPS feeding the consumer", lambda r: r["consume"]["producer"].get("send_tps"), ""),
    ("broker RSS MiB, end of 64-thread run", lambda r: _mib(r["broker_rss_kib"]["after_send_64"]), "<= 0.25"),
    ("broker RSS MiB, peak of samples", lambda r: _mib(max(v for v in r["broker_rss_kib"].values() if v)), ""),
    ("start-up s (spawn to first ack)", lambda r: r["startup_s"], "<= 0.25"),
]

TLS_ROWS = [
    # label, getter, goal for (tx TLS/plaintext) / (Java TLS/plaintext)
    ("send TPS, 64 threads", lambda r: r["send_64"]["send_tps"], ">= 1.0"),
    ("send TPS, 1 thread", lambda r: r["send_1"]["send_tps"], ">= 1.0"),
    ("avg RT ms, 64 threads", lambda r: r["send_64"]["avg_rt_ms"], ""),
    ("avg RT ms, 1 thread", lambda r: r["send_1"]["avg_rt_ms"], ""),
    ("BlockingProducer avg RT ms, 1 thread", lambda r: r["py_send_1"]["avg_rt_ms"], ""),
    ("BlockingProducer p50 RT ms, 1 thread", lambda r: r["py_send_1"]["p50_rt_ms"], ""),
    ("send failed, 64 + 1 threads (no ratio)", lambda r: sum(r[f"send_{n}"]["send_failed"]
                                                             + r[f"send_{n}"]["response_failed"]
                                                             for n in (64, 1) if f"send_{n}" in r), ""),
    ("start-up s (spawn to first ack)", lambda r: r["startup_s"], ""),
]

METRICS_ROWS = [
    # label, getter, goal for rocketmq_tx metrics on / off (issue #24: at most 3 % TPS, p99 within noise)
    ("send TPS, 64 threads", lambda r: r["send_64"]["send_tps"], ">= 0.97"),
    ("p99 RT ms, 64 threads (SendLatency)", lambda r: r["latency_64"]["p99_ms"], ""),
    ("p50 RT ms, 64 threads (SendLatency)", lambda r: r["latency_64"]["p50_ms"], ""),
    ("avg RT ms, 64 threads", lambda r: r["send_64"]["avg_rt_ms"], ""),
    ("broker CPU us per message, 64 threads", lambda r: r["send_64"]["broker_cpu_us_per_msg"], ""),
    ("scrapes during the phases (no ratio)", lambda r: r["scraper"]["scrapes"], ""),
    ("slowest scrape s (no ratio)", lambda r: r["scraper"]["slowest_s"], ""),
]

ACL_ROWS = [
    # label, getter, goal for (tx ACL/plain) / (Java ACL/plain)
    ("send TPS, 64 threads", lambda r: r["send_64"]["send_tps"], ">= 1.0"),
    ("send TPS, 1 thread", lambda r: r["send_1"]["send_tps"], ">= 1.0"),
    ("avg RT ms, 64 threads", lambda r: r["send_64"]["avg_rt_ms"], ""),
    ("avg RT ms, 1 thread", lambda r: r["send_1"]["avg_rt_ms"], ""),
    ("broker CPU us per message, 64 threads", lambda r: r["send_64"]["broker_cpu_us_per_msg"], ""),
    ("broker CPU us per message, 1 thread", lambda r: r["send_1"]["broker_cpu_us_per_msg"], ""),
    ("Producer CPU us per message, 64 threads", lambda r: r["send_64"]["producer_cpu_us_per_msg"], ""),
    ("send failed, 64 + 1 threads (no ratio)", lambda r: sum(r[f"send_{n}"]["send_failed"]
                                                             + r[f"send_{n}"]["response_failed"]
                                                             for n in (64, 1) if f"send_{n}" in r), ""),
    ("start-up s (spawn to first ack)", lambda r: r["startup_s"], ""),
]


def _mib(kib: int | None) -> float | None:
    return None if kib is None else round(kib / 1024, 1)


def get(result: dict | None, getter: Callable[[dict], object]) -> object:
    """*getter*'s figure of *result*, None when the target failed or the figure is missing."""
    if not result or "error" in result:
        return None
    try:
        return getter(result)
    except (KeyError, TypeError, ValueError):
        return None


def ratio(a: object, b: object) -> float | None:
    return a / b if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b else None


def ratio_table(rows: list[dict], names: list[str]) -> str:
    """The feature modes' table: a row per figure, one column per target, tx / Java, the goal."""
    headers = ["figure", *names, "tx / Java", "goal", "met"]
    body = [[row["figure"], *(row[n] for n in names), row.get("tx_over_java"), row.get("goal", ""),
             row.get("met", "")] for row in rows]
    return table(headers, [["" if v is None else v for v in r] for r in body])


def report(results: dict[str, dict]) -> str:
    """The full run's table: each figure for both targets, tx / Java, the goal."""
    tx = results.get("rocketmq_tx")
    java_name = next((n for n in results if n.startswith("Java")), None)
    java = results.get(java_name) if java_name else None
    headers = ["figure", "rocketmq_tx", java_name or "Java", "tx / Java", "goal"]
    rows = []
    for label, getter, goal in ROWS:
        a, b = get(tx, getter), get(java, getter)
        r = ratio(a, b)
        skipped = "SendLatency" in label and bool((tx and "error" not in tx and "latency_64" not in tx)
                                                   or (java and "error" not in java and "latency_64" not in java))

        def cell(v: object, res: dict | None, skipped: bool = skipped) -> object:
            if v is not None:
                return v
            return "skipped" if skipped else "failed" if res and "error" in res else "n/m"

        rows.append([label, cell(a, tx) if tx else "not run", cell(b, java) if java else "not run",
                     "" if r is None else f"{r:.2f}", goal])
    return table(headers, rows)


def tls_report(results: dict[str, dict[str, dict]], feature: str = "TLS", key: str = "tls",
               rows_spec: list | None = None) -> str:
    """One row per figure: plaintext, TLS and TLS/plaintext for each target, then
    (tx TLS/plaintext) / (Java TLS/plaintext): above 1 when TLS costs tx less than Java.
    *feature*, *key*, *rows_spec*: the same for another feature (``--acl``: "ACL", "acl", ACL_ROWS)."""
    names = list(results)
    tx_name = "rocketmq_tx" if "rocketmq_tx" in results else None
    java_name = next((n for n in names if n.startswith("Java")), None)
    plain_label = "plaintext" if key == "tls" else "plain"
    headers = ["figure"]
    for n in names:
        headers += [f"{n} {plain_label}", f"{n} {feature}", f"{n} {feature} / {plain_label}"]
    both = tx_name is not None and java_name is not None
    if both:
        headers += ["tx ratio / Java ratio", "goal"]

    def fmt(v: float | None) -> str:
        return "" if v is None else f"{v:.3f}"

    rows = []
    for label, getter, goal in (TLS_ROWS if rows_spec is None else rows_spec):
        row: list[object] = [label]
        ratios = {}
        for n in names:
            plain, tls = results[n].get("plain"), results[n].get(key)
            a, b = get(plain, getter), get(tls, getter)
            ratios[n] = None if "no ratio" in label else ratio(b, a)
            row += ["failed" if a is None and plain and "error" in plain else "n/m" if a is None else a,
                    "failed" if b is None and tls and "error" in tls else "n/m" if b is None else b,
                    fmt(ratios[n])]
        if both:
            row += [fmt(ratio(ratios[tx_name], ratios[java_name])), goal]
        rows.append(row)
    text = table(headers, rows)
    if both and key == "tls":
        text += "\n\n" + client_bound(results[tx_name], results[java_name])
    return text


def client_bound(tx: dict[str, dict], java: dict[str, dict]) -> str:
    """
    What the 1-thread goal leaves tx, against what the Java Producer's own TLS costs. At one
    thread TPS is about 1 / RT, so the goal holds when tx's TLS RT <= tx's plaintext RT x
    (Java's TLS RT / Java's plaintext RT): that difference is tx's budget. Against a broker,
    the Java Producer's TLS RT minus plaintext RT is its own TLS cost plus the broker's;
    the same for the BlockingProducer is its own plus the broker's, so the first minus the
    second is the Java Producer's cost minus the BlockingProducer's, a lower bound of the
    Java Producer's own TLS cost. A bound above the budget means no broker, however cheap
    its TLS, meets the 1-thread goal with this client.
    """
    def rt(result: dict, mode: str, key: str) -> float | None:
        value = get(result.get(mode), lambda r: r[key]["avg_rt_ms"])
        return value if isinstance(value, (int, float)) else None

    lines = []
    for name, result in (("rocketmq_tx", tx), ("Java", java)):
        figures = [rt(result, m, k) for m in ("plain", "tls") for k in ("send_1", "py_send_1")]
        if None in figures:
            return "1-thread TLS cost split: not measured (a phase failed)"
        jp, pp, jt, pt = figures
        lines.append(f"- against {name}: Java Producer {(jt - jp) * 1000:+.0f} us with TLS, "
                     f"BlockingProducer {(pt - pp) * 1000:+.0f} us: the Java Producer's own TLS cost "
                     f">= {((jt - jp) - (pt - pp)) * 1000:.0f} us")
    jp, jt, tp = rt(java, "plain", "send_1"), rt(java, "tls", "send_1"), rt(tx, "plain", "send_1")
    assert jp and jt and tp
    budget = tp * (jt / jp - 1)
    lines.append(f"- tx's budget for the 1-thread goal: {tp * 1000:.0f} us x ({jt * 1000:.0f} / {jp * 1000:.0f} - 1)"
                 f" = {budget * 1000:.0f} us of TLS per round trip, client's and broker's together")
    return "1-thread TLS cost split (avg RT):\n\n" + "\n".join(lines)


def mean_of_rounds(runs: list[dict]) -> dict:
    """The figures TLS_ROWS reads, averaged over rounds (failures summed); an error if any round failed."""
    failed = [r for r in runs if "error" in r]
    if failed:
        return failed[0]
    out: dict = {"startup_s": round(statistics.fmean(r["startup_s"] for r in runs), 3)}
    for n in (n for n in (64, 1) if f"send_{n}" in runs[0]):
        sends = [r[f"send_{n}"] for r in runs]
        out[f"send_{n}"] = {"send_tps": mean([s["send_tps"] for s in sends]),
                            "avg_rt_ms": mean([s["avg_rt_ms"] for s in sends]),
                            "send_failed": sum(s["send_failed"] for s in sends),
                            "response_failed": sum(s["response_failed"] for s in sends)}
    out["py_send_1"] = {k: mean([r["py_send_1"][k] for r in runs]) for k in ("avg_rt_ms", "p50_rt_ms")}
    return out


def median_of_rounds(runs: list[dict]) -> dict:
    """The figures ACL_ROWS and METRICS_ROWS read, medians over rounds (failures summed); an error
    if any round failed."""
    failed = [r for r in runs if "error" in r]
    if failed:
        return failed[0]

    def median(values: list) -> float | None:
        values = [v for v in values if isinstance(v, (int, float))]
        return round(statistics.median(values), 3) if values else None

    out: dict = {"startup_s": median([r["startup_s"] for r in runs])}
    for n in (n for n in (64, 1) if f"send_{n}" in runs[0]):
        sends = [r[f"send_{n}"] for r in runs]
        out[f"send_{n}"] = {"send_tps": median([s["send_tps"] for s in sends]),
                            "avg_rt_ms": median([s["avg_rt_ms"] for s in sends]),
                            "send_failed": sum(s["send_failed"] for s in sends),
                            "response_failed": sum(s["response_failed"] for s in sends),
                            **{k: median([s.get(k) for s in sends])
                               for k in ("broker_cpu_us_per_msg", "producer_cpu_us_per_msg")}}
    # --metrics: SendLatency's percentiles and the scraper's figures (METRICS_ROWS reads them)
    for part in ("latency_64", "scraper"):
        if all(part in r for r in runs):
            out[part] = {k: median([r[part].get(k) for r in runs]) for k in runs[0][part]}
    return out


def write_results(kind: str, started: dt.datetime, args: argparse.Namespace, head: dict, feature: dict,
                  results: object, text: str) -> tuple[Path, dict]:
    """
    The raw results file, ``bench/broker/results[-kind]-<UTC time>.json`` (*kind*: "", "tls"
    or "acl"): the commit, the command, *head* (the mode, rounds, phase lengths), *feature*
    (``--tls``'s or ``--acl``'s settings), the settings both brokers and every JVM ran with,
    every result with the tools' raw lines, and the table. Returns the path and what it holds.
    """
    stamp = started.strftime("%Y%m%dT%H%M%SZ")
    path = HERE / f"results{'-' + kind if kind else ''}-{stamp}.json"
    data = {
        "started": started.isoformat(), "commit": git_commit(), "command": command_line("bench/broker/run.py"),
        **head, "tool_first_report_s": WARMUP, "body_size": BODY_SIZE, "tools": f"rocketmq-example {TOOLS_VERSION}",
        "cpus": os.cpu_count(), **feature,
        "broker_settings": BROKER_SETTINGS, "broker_jvm": broker_jvm(args.java_heap),
        "namesrv_jvm": NAMESRV_JVM, "tool_jvm": TOOL_JVM, "results": results, "table": text,
    }
    path.write_text(json.dumps(data, indent=2) + "\n")
    log(f"wrote {path.relative_to(ROOT)}")
    return path, data
