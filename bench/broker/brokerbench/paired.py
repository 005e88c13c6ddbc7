"""
``--metrics --paired`` (issue #24): two rocketmq_tx brokers started side by side, one
without metrics and one with ``metricsExporterType=PROM`` scraped every second, and one
``PairedSend`` JVM (bench/broker/java) whose 64 threads send to them in turn, in short
windows ordered A B B A A B B A ..., so that the machine's drift falls on both alike.

A run is ``legs`` such runs on fresh brokers, metrics on B in the first leg, on A in the
second, and so on (a crossover): whatever makes one slot read better than the other (the A/A
run of 2026-12-02 read B / A = 0.970 with nothing different) then falls on metrics on and off
alike. Each leg's figure is the median of its per-pair ratios on / off (each pair two
adjacent windows), and the goal is judged on the geometric mean of the legs' figures, in
which a fixed slot effect cancels (it multiplies one leg's figure and divides the other's);
an A/A run orients its pairs the same way by slot.
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

from .peers import HOMES, BenchHome, process_counters, rss_kib, start_tx
from .phases import Scraper, metrics_settings
from .settings import BODY_SIZE, TOOL_JVM, WORK, log
from .tools import Tool, ensure_topic

TOPIC = "BenchPaired"
GOAL = 0.97  # issue #24: at most a 3 % TPS cost


def bench_crossover(args: argparse.Namespace, tools_cp: str, windows: int, window_s: float, warmup: float,
                    null: bool = False, legs: int = 2) -> dict:
    """*legs* paired runs, metrics on B, then on A, and so on (see the module's text)."""
    return {"null": null, "legs": [bench_paired(args, tools_cp, windows, window_s, warmup, "ab"[1 - k % 2], null)
                                   for k in range(legs)]}


def bench_paired(args: argparse.Namespace, tools_cp: str, windows: int, window_s: float, warmup: float,
                 on: str = "b", null: bool = False) -> dict:
    """Start both brokers, run PairedSend over them, stop them; the tool's windows and each
    broker's CPU over the measured windows (each idle while the other is measured: its
    timers and, for the metrics one, its scrapes count too). *on*: the slot with metrics;
    *null*: that slot without metrics too (an A/A run: what the instrument reads when nothing
    differs)."""
    WORK.mkdir(parents=True, exist_ok=True)
    extra, url = metrics_settings()
    if null:
        extra = None
    targets: dict[str, Any] = {}
    works: list[Path] = []
    out: dict = {"windows_requested": windows, "window_s": window_s, "warmup_s": warmup, "null": null, "on": on}
    scraper: Scraper | None = None
    try:
        for key in ("a", "b"):
            settings = extra if key == on else None
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
            counters_before = {k: process_counters(t.broker_pid) for k, t in targets.items()}
            tool.wait_for("^windows end$", windows * window_s + 60)
            counters_after = {k: process_counters(t.broker_pid) for k, t in targets.items()}
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
            c0, c1 = counters_before[k], counters_after[k]
            counters = None if c0 is None or c1 is None else {name: round(c1[name] - c0[name], 2) for name in c0}
            out[k]["broker_counters"] = counters
            out[k]["broker_cpu_s"] = None if c0 is None or c1 is None else round(
                c1["utime_s"] + c1["stime_s"] - c0["utime_s"] - c0["stime_s"], 2)
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


def pair_ratios(windows: list[dict], on: str = "b") -> list[float]:
    """metrics on / off TPS of each pair of adjacent windows (0-1, 2-3, ...: one of each),
    slot *on* the one with metrics."""
    off = "a" if on == "b" else "b"
    ratios = []
    for w0, w1 in zip(windows[0::2], windows[1::2], strict=False):
        by = {w["target"]: w["sends"] / w["seconds"] for w in (w0, w1)}
        if set(by) == {"a", "b"} and by[off] > 0:
            ratios.append(by[on] / by[off])
    return ratios


def legs_of(results: dict) -> list[dict]:
    """The legs of a run (a raw file from before the crossover is one leg, metrics on B)."""
    return results["legs"] if "legs" in results else [{**results, "on": "b"}]


def _leg_figures(leg: dict) -> dict:
    """One leg's figures, its slots named by what they ran (on = the metrics slot)."""
    on = leg["on"]
    off = "a" if on == "b" else "b"
    ratios = pair_ratios(leg["windows"], on)
    tps = {k: sum(w["sends"] for w in leg["windows"] if w["target"] == k)
           / sum(w["seconds"] for w in leg["windows"] if w["target"] == k) for k in (on, off)}
    cpu = {k: (leg[k]["broker_cpu_s"] / leg[k]["sends"] * 1e6 if leg[k].get("broker_cpu_s") and leg[k]["sends"]
               else None) for k in (on, off)}
    return {
        "metrics_slot": on,
        "pairs": len(ratios),
        "tps_ratio_per_pair": [round(r, 4) for r in ratios],
        "tps_ratio_median": round(statistics.median(ratios), 4),
        "tps_ratio_of_totals": round(tps[on] / tps[off], 4),
        "tps": {"off": round(tps[off], 1), "on": round(tps[on], 1)},
        "p99_ms": {"off": leg[off]["p99_ms"], "on": leg[on]["p99_ms"]},
        "p99_ratio": round(leg[on]["p99_ms"] / leg[off]["p99_ms"], 4),
        "p50_ms": {"off": leg[off]["p50_ms"], "on": leg[on]["p50_ms"]},
        "broker_cpu_us_per_message": {k: None if v is None else round(v, 2)
                                      for k, v in (("off", cpu[off]), ("on", cpu[on]))},
        "per_message": {side: _per_message(leg[k]) for side, k in (("off", off), ("on", on))},
        "scraper": leg.get("scraper"),
    }


def _per_message(target: dict) -> dict | None:
    """A broker's /proc counters over the windows, per message sent to it (µs of CPU; calls)."""
    counters, sends = target.get("broker_counters"), target.get("sends")
    if not counters or not sends:
        return None
    return {"user_us": round(counters["utime_s"] / sends * 1e6, 2),
            "system_us": round(counters["stime_s"] / sends * 1e6, 2),
            "context_switches": round((counters["voluntary_ctxt_switches"] + counters["nonvoluntary_ctxt_switches"])
                                      / sends, 4)}


def report(results: dict) -> tuple[str, dict]:
    """The run's text and its figures: per leg, the geometric mean of the legs' medians (judged
    against the goal), the median of all legs' pairs, and the slot effect (B / A) the legs show."""
    legs = [_leg_figures(leg) for leg in legs_of(results)]
    null = bool(results.get("null"))
    ratios = [r for leg in legs for r in leg["tps_ratio_per_pair"]]
    median = statistics.median(ratios)
    quartiles = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [median, median, median]
    geo = statistics.geometric_mean([leg["tps_ratio_median"] for leg in legs])
    # each leg's median is effect x slot (metrics on B) or effect / slot (on A)
    slot = statistics.geometric_mean([leg["tps_ratio_median"] ** (1 if leg["metrics_slot"] == "b" else -1)
                                      for leg in legs])
    p99 = statistics.geometric_mean([leg["p99_ratio"] for leg in legs])
    cpu = [leg["broker_cpu_us_per_message"] for leg in legs]
    cpu_change = (statistics.geometric_mean([c["on"] / c["off"] for c in cpu]) - 1
                  if all(c["on"] and c["off"] for c in cpu) else None)
    figures = {
        "legs": legs,
        "pairs": len(ratios),
        "tps_ratio_median": round(median, 4),
        "tps_ratio_quartiles": [round(quartiles[0], 4), round(quartiles[2], 4)],
        "tps_ratio_geomean_of_leg_medians": round(geo, 4),
        "slot_b_over_a": round(slot, 4),
        "p99_ratio_geomean": round(p99, 4),
        "broker_cpu_change_geomean": None if cpu_change is None else round(cpu_change, 4),
        "goal": f"geometric mean of the legs' medians of per-pair send TPS on / off >= {GOAL}",
        "met": None if null else geo >= GOAL,
    }
    what = "nominal on / off (both metrics off)" if null else "metrics on / off"
    lines = [f"{what}, {len(legs)} leg(s) of {len(ratios) // max(len(legs), 1)} pairs of "
             f"{legs_of(results)[0]['window_s']:g} s windows (A B B A ...), 64 threads:"]
    for k, leg in enumerate(legs):
        c = leg["broker_cpu_us_per_message"]
        cpu_text = (f"{c['off']:.2f} -> {c['on']:.2f} us ({c['on'] / c['off'] - 1:+.1%})"
                    if c["on"] and c["off"] else "n/m")
        scrapes = leg["scraper"]
        lines.append(
            f"  leg {k + 1} ({'nominal ' if null else ''}metrics on {leg['metrics_slot'].upper()}): per pair median "
            f"{leg['tps_ratio_median']:.3f}; totals {leg['tps']['off']:,.0f} -> {leg['tps']['on']:,.0f} "
            f"({leg['tps_ratio_of_totals']:.3f}); p99 {leg['p99_ms']['off']:.2f} -> {leg['p99_ms']['on']:.2f} ms "
            f"({leg['p99_ratio']:.3f}); broker CPU per message {cpu_text}"
            + (f"; scrapes {scrapes['scrapes']} (failed {scrapes['failures']}, slowest {scrapes['slowest_s']:.3f} s)"
               if scrapes else ""))
        pm = leg["per_message"]
        if pm["off"] and pm["on"]:
            lines.append("    per message off -> on: " + ", ".join(
                f"{name.replace('_', ' ')} {pm['off'][name]:g} -> {pm['on'][name]:g}" for name in pm["off"]))
    lines += [
        f"  all legs: geometric mean of the leg medians {geo:.3f}; all pairs' median {median:.3f} (quartiles "
        f"{quartiles[0]:.3f}-{quartiles[2]:.3f}); slot B / A {slot:.3f}; p99 ratio {p99:.3f}"
        + ("" if cpu_change is None else f"; broker CPU per message {cpu_change:+.1%}"),
        ("A/A: no goal; the instrument's reading when nothing differs" if null
         else f"goal: {figures['goal']}: {'met' if figures['met'] else 'not met'}"),
    ]
    return "\n".join(lines), figures


def summarize(raw: dict, raw_path: Path | None) -> dict:
    _, figures = report(raw["results"])
    keys = ("windows", "window_s", "warmup_phase_s", "legs", "null", "body_size", "tools", "cpus")
    return {"bench": "broker-metrics-paired" + ("-null" if raw.get("null") else ""),
            "started": raw.get("started"), "commit": raw.get("commit"), "command": raw.get("command"),
            "raw_results": raw_path.name if raw_path else None,
            "settings": {k: raw.get(k) for k in keys if raw.get(k) is not None}, "figures": figures}
