"""
``--metrics --paired`` (issue #24): two rocketmq_tx brokers started side by side, one
without metrics and one with ``metricsExporterType=PROM`` scraped every second, and one
``PairedSend`` JVM (bench/broker/java) whose 64 threads send to them in turn, in short
windows ordered A B B A A B B A ..., so that the machine's drift falls on both alike. The
goal is judged on the median of the per-pair TPS ratios (each pair two adjacent windows).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from .peers import HOMES, BenchHome, cpu_seconds, rss_kib, start_tx
from .phases import Scraper, metrics_settings
from .settings import BODY_SIZE, TOOL_JVM, WORK, log
from .tools import Tool, ensure_topic

TOPIC = "BenchPaired"
GOAL = 0.97  # issue #24: at most a 3 % TPS cost


def bench_paired(args: argparse.Namespace, tools_cp: str, windows: int, window_s: float, warmup: float,
                 null: bool = False) -> dict:
    """Start both brokers, run PairedSend over them, stop them; the tool's windows and each
    broker's CPU over the measured windows (each idle while the other is measured: its
    timers and, for the metrics one, its scrapes count too). *null*: B without metrics too
    (an A/A run: what the instrument reads when nothing differs)."""
    WORK.mkdir(parents=True, exist_ok=True)
    extra, url = metrics_settings()
    if null:
        extra = None
    targets: dict[str, Any] = {}
    works: list[Path] = []
    out: dict = {"windows_requested": windows, "window_s": window_s, "warmup_s": warmup, "null": null}
    scraper: Scraper | None = None
    try:
        for key, settings in (("a", None), ("b", extra)):
            work = Path(tempfile.mkdtemp(prefix=f"broker-tx-paired-{key}-", dir=WORK))
            works.append(work)
            log(f"rocketmq_tx metrics {'on' if settings else 'off'} ({key}): starting (work dir {work})")
            targets[key] = start_tx(args.tx_mode, work, extra=settings)
            ensure_topic(targets[key].namesrv_addr, TOPIC)
        if extra is not None:
            scraper = Scraper(url)
            scraper.start()
        log(f"PairedSend: {warmup:.0f} s warm-up, then {windows} windows of {window_s:g} s, 64 threads")
        tool = Tool(tools_cp, BenchHome("bench-broker-tools", TOOL_JVM), "rocketmq.bench.PairedSend",
                    [targets["a"].namesrv_addr, targets["b"].namesrv_addr, TOPIC, "64", str(BODY_SIZE), str(warmup),
                     str(window_s), str(windows)])
        try:
            tool.wait_for("^windows start$", warmup + 120)
            cpu_before = {k: cpu_seconds(t.broker_pid) for k, t in targets.items()}
            tool.wait_for("^windows end$", windows * window_s + 60)
            cpu_after = {k: cpu_seconds(t.broker_pid) for k, t in targets.items()}
            deadline = time.monotonic() + 60
            while tool.proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.2)
        finally:
            tool.stop()
        out["scraper"] = scraper.stop() if scraper is not None else None
        scraper = None
        line = next((line for _, line in reversed(tool.lines) if line.startswith("{")), None)
        if line is None:
            raise RuntimeError(f"PairedSend printed no result; stderr {tool.stderr_path}:\n{tool.stderr_tail()}")
        out.update(json.loads(line.replace("NaN", "null")))
        for k in targets:
            before, after = cpu_before[k], cpu_after[k]
            out[k]["broker_cpu_s"] = None if before is None or after is None else round(after - before, 2)
            out[k]["broker_rss_kib"] = rss_kib(targets[k].broker_pid)
    finally:
        if scraper is not None:
            scraper.stop()
        for t in targets.values():
            t.stop()
        if not args.keep and "windows" in out:
            for work in works:
                shutil.rmtree(work, ignore_errors=True)
            for home in HOMES:
                shutil.rmtree(home, ignore_errors=True)
        HOMES.clear()
    return out


def pair_ratios(windows: list[dict]) -> list[float]:
    """metrics on / off TPS of each pair of adjacent windows (0-1, 2-3, ...: one of each)."""
    ratios = []
    for w0, w1 in zip(windows[0::2], windows[1::2], strict=False):
        by = {w["target"]: w["sends"] / w["seconds"] for w in (w0, w1)}
        if set(by) == {"a", "b"} and by["a"] > 0:
            ratios.append(by["b"] / by["a"])
    return ratios


def report(out: dict) -> tuple[str, dict]:
    """The run's text and its figures (median and spread of the pair ratios, p99, CPU per message)."""
    ratios = pair_ratios(out["windows"])
    tps = {k: sum(w["sends"] for w in out["windows"] if w["target"] == k)
           / sum(w["seconds"] for w in out["windows"] if w["target"] == k) for k in ("a", "b")}
    cpu = {k: (out[k]["broker_cpu_s"] / out[k]["sends"] * 1e6 if out[k].get("broker_cpu_s") and out[k]["sends"]
               else None) for k in ("a", "b")}
    median = statistics.median(ratios)
    quartiles = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [median, median, median]
    figures = {
        "pairs": len(ratios),
        "tps_ratio_per_pair": [round(r, 4) for r in ratios],
        "tps_ratio_median": round(median, 4),
        "tps_ratio_quartiles": [round(quartiles[0], 4), round(quartiles[2], 4)],
        "tps_ratio_of_totals": round(tps["b"] / tps["a"], 4),
        "tps": {"off": round(tps["a"], 1), "on": round(tps["b"], 1)},
        "p99_ms": {"off": out["a"]["p99_ms"], "on": out["b"]["p99_ms"]},
        "p99_ratio": round(out["b"]["p99_ms"] / out["a"]["p99_ms"], 4),
        "p50_ms": {"off": out["a"]["p50_ms"], "on": out["b"]["p50_ms"]},
        "broker_cpu_us_per_message": {"off": cpu["a"] and round(cpu["a"], 2), "on": cpu["b"] and round(cpu["b"], 2)},
        "goal": f"median of the per-pair send TPS on / off >= {GOAL}",
        "met": median >= GOAL,
    }
    cpu_text = (f"{cpu['a']:.2f} -> {cpu['b']:.2f} us ({cpu['b'] / cpu['a'] - 1:+.1%})"
                if cpu["a"] and cpu["b"] else "n/m")
    text = "\n".join([
        f"{'B / A (both metrics off)' if out.get('null') else 'metrics on / off'}, {len(ratios)} pairs of "
        f"{out['window_s']:g} s windows (A B B A ...), 64 threads:",
        f"  send TPS per pair: median {median:.3f} (quartiles {quartiles[0]:.3f}-{quartiles[2]:.3f}); "
        f"totals {tps['a']:,.0f} -> {tps['b']:,.0f} ({tps['b'] / tps['a']:.3f})",
        f"  p99 {out['a']['p99_ms']:.2f} -> {out['b']['p99_ms']:.2f} ms ({figures['p99_ratio']:.3f}); "
        f"p50 {out['a']['p50_ms']:.2f} -> {out['b']['p50_ms']:.2f} ms",
        f"  broker CPU per message {cpu_text}",
        (f"  scrapes {out['scraper']['scrapes']} (failed {out['scraper']['failures']}, slowest "
         f"{out['scraper']['slowest_s']:.3f} s)" if out.get("scraper") else "  A/A: B without metrics, no scrapes"),
        f"goal: {figures['goal']}: {'met' if figures['met'] else 'not met'}",
    ])
    return text, figures


def summarize(raw: dict, raw_path: Path | None) -> dict:
    _, figures = report(raw["results"])
    keys = ("windows", "window_s", "warmup_phase_s", "null", "body_size", "tools", "cpus")
    return {"bench": "broker-metrics-paired" + ("-null" if raw.get("null") else ""),
            "started": raw.get("started"), "commit": raw.get("commit"), "command": raw.get("command"),
            "raw_results": raw_path.name if raw_path else None,
            "settings": {k: raw.get(k) for k in keys if raw.get(k) is not None}, "figures": figures}
