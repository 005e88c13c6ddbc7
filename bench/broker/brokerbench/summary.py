"""
The small JSON summary of a broker run, kept in the repository (``bench/results/broker[-tls|-acl]-
<UTC time>.json``, see ``bench/_summary.py``): the commit, the command and its settings, the
load average of every measured target, and the figures of the report with their ratios and
goals, met or not. Built from what the raw results file holds, so that it can also be built
from a results file of an earlier run (``bench/broker/summarize.py``).
"""

from __future__ import annotations

import datetime as dt
import statistics
from pathlib import Path

import _summary

from .report import ACL_ROWS, METRICS_ROWS, ROWS, TLS_ROWS, get, mean_of_rounds, median_of_rounds, ratio

__all__ = ["dumps", "met", "save", "summarize"]

dumps = _summary.dumps

#: per round, only the figures with a goal (the full rows are in the aggregate)
_KEY_FIGURES = ("send TPS, 64 threads", "send TPS, 1 thread", "p99 RT ms, 64 threads (SendLatency)")


def _num(value: object) -> object:
    if isinstance(value, float):
        return round(value, 3) if abs(value) < 100 else round(value, 1)
    return value


def met(value: float | None, goal: str) -> bool | None:
    """Whether *value* meets *goal* (">= 1.0", "<= 0.25"); None when not measured."""
    if value is None or not goal:
        return None
    op, bound = goal.split()
    return value >= float(bound) if op == ">=" else value <= float(bound)


def _full(results: dict[str, dict]) -> list[dict]:
    tx = results.get("rocketmq_tx")
    java_name = next((n for n in results if n.startswith("Java")), "Java")
    java = results.get(java_name)
    rows = []
    for label, getter, goal in ROWS:
        a, b = get(tx, getter), get(java, getter)
        row: dict = {"figure": label, "rocketmq_tx": _num(a), java_name: _num(b)}
        r = ratio(a, b)
        if r is not None:
            row["tx_over_java"] = round(r, 3)
        if goal:
            row["goal"] = f"tx / Java {goal}"
            row["met"] = met(r, goal)
        rows.append(row)
    return rows


def _compare(results: dict[str, dict[str, dict]], key: str, rows_spec: list,
             only: tuple[str, ...] | None = None) -> list[dict]:
    """The feature (*key*: "tls" or "acl") against plain for each target, and the quotient of the ratios."""
    rows = []
    for label, getter, goal in rows_spec:
        if only is not None and label not in only:
            continue
        row: dict = {"figure": label}
        ratios = {}
        for name, by_mode in results.items():
            a, b = get(by_mode.get("plain"), getter), get(by_mode.get(key), getter)
            ratios[name] = None if "no ratio" in label else ratio(b, a)
            row[name] = {"plain": _num(a), key: _num(b)}
            if ratios[name] is not None:
                row[name][f"{key}_over_plain"] = round(ratios[name], 3)
        java_name = next((n for n in results if n.startswith("Java")), None)
        if "rocketmq_tx" in results and java_name is not None:
            q = ratio(ratios["rocketmq_tx"], ratios[java_name])
            if q is not None:
                row["tx_ratio_over_java_ratio"] = round(q, 3)
            if goal:
                row["goal"] = f"tx ratio / Java ratio {goal}"
                row["met"] = met(q, goal)
        rows.append(row)
    return rows


def _loads(results: dict) -> dict:
    """The 1-minute load average at the start and end of every measured target (and mode)."""
    out = {}
    for name, r in results.items():
        if "loadavg_1min" in r:
            out[name] = r["loadavg_1min"]
        else:
            out[name] = {mode: m.get("loadavg_1min") for mode, m in r.items()}
    return out


def summarize(raw: dict, raw_path: Path | None = None) -> dict:
    """The summary of a raw results file's content *raw* (the file's name: *raw_path*)."""
    mode = raw.get("mode", "full")
    if mode in ("transactions", "sql92"):
        from .features import summarize as features_summary

        return features_summary(raw, raw_path)
    if mode == "ha":
        from .ha import summarize as ha_summary

        return ha_summary(raw, raw_path)
    if mode == "five":
        from .five import summarize as five_summary

        return five_summary(raw, raw_path)
    if mode == "metrics-paired":
        from .paired import summarize as paired_summary

        return paired_summary(raw, raw_path)
    rounds = raw["results"] if isinstance(raw["results"], list) else [raw["results"]]
    settings = {k: raw.get(k) for k in ("seconds", "warmup_phase_s", "rounds", "body_size", "tools", "cpus")
                if raw.get(k) is not None}
    settings["flushDiskType"] = raw.get("broker_settings", {}).get("flushDiskType")
    settings["java_heap"] = next((a[4:] for a in raw.get("broker_jvm", ()) if a.startswith("-Xmx")), None)
    tx = rounds[0].get("rocketmq_tx", {})
    tx = tx if "name" in tx else next(iter(tx.values()), {})  # the compare modes: by mode
    if tx.get("mode"):
        settings["tx_mode"] = tx["mode"]
    for feature in ("tls", "acl"):
        if feature in raw:
            settings[feature] = {k: v for k, v in raw[feature].items() if k != "plain_acl.yml"}
    out: dict = {
        "bench": "broker" if mode == "full" else f"broker-{mode.split('-')[0]}",
        "started": raw.get("started"), "commit": raw.get("commit"), "command": raw.get("command"),
        "raw_results": raw_path.name if raw_path else None, "settings": settings,
        "loadavg_1min": [_loads(r) for r in rounds] if len(rounds) > 1 else _loads(rounds[0]),
    }
    if mode == "full":
        out["figures"] = _full(rounds[0])
        return out
    key, spec, combine, how = (("tls", TLS_ROWS, mean_of_rounds, "mean") if mode == "tls-compare"
                               else ("metrics", METRICS_ROWS, median_of_rounds, "median")
                               if mode == "metrics-compare"
                               else ("acl", ACL_ROWS, median_of_rounds, "median"))
    if len(rounds) == 1:
        out["figures"] = _own_goals(_compare(rounds[0], key, spec), key, spec)
        return out
    out["rounds"] = [_compare(r, key, spec, _KEY_FIGURES) for r in rounds]
    combined = {n: {m: combine([r[n][m] for r in rounds]) for m in ("plain", key)} for n in rounds[0]}
    out[f"{how}_of_rounds"] = _own_goals(_compare(combined, key, spec), key, spec)
    if key == "metrics":
        _paired_goals(out[f"{how}_of_rounds"], out["rounds"], [r["rocketmq_tx"]["plain"] for r in rounds])
    return out


P99_ROW = "p99 RT ms, 64 threads (SendLatency)"
TPS_ROW = "send TPS, 64 threads"


def _paired_goals(rows: list[dict], round_rows: list[list[dict]], plain_runs: list[dict]) -> None:
    """
    --metrics over several rounds: each round runs plain and metrics back to back, so the
    goals are judged on the median of the per-round ratios (paired), not on the ratio of
    each side's median (kept beside it as ``ratio_of_medians``). Issue #24's "no p99 change
    beyond noise" made a number: met when that median p99 ratio is no larger than the plain
    broker's own p99 spread over the rounds (largest / smallest), the noise the same
    settings show with nothing changed.
    """
    def per_round(figure: str) -> list[float]:
        values = [row.get("rocketmq_tx", {}).get("metrics_over_plain")
                  for rows_ in round_rows for row in rows_ if row["figure"] == figure]
        return [v for v in values if isinstance(v, (int, float))]

    p99s = [r.get("latency_64", {}).get("p99_ms") for r in plain_runs]
    band = (round(max(p99s) / min(p99s), 3)
            if len(p99s) > 1 and all(isinstance(v, (int, float)) and v > 0 for v in p99s) else None)
    for row in rows:
        if row["figure"] not in (TPS_ROW, P99_ROW):
            continue
        ratios = per_round(row["figure"])
        if not ratios:
            continue
        tx = row.setdefault("rocketmq_tx", {})
        tx["ratio_of_medians"] = tx.get("metrics_over_plain")
        tx["per_round"] = ratios
        tx["metrics_over_plain"] = value = round(statistics.median(ratios), 3)
        if row["figure"] == TPS_ROW:
            row["goal"] = "median of the per-round metrics on / off >= 0.97"
            row["met"] = value >= 0.97
        elif band is not None:
            row["goal"] = (f"median of the per-round metrics on / off <= {band} "
                           "(plain's own p99 max / min over the rounds)")
            row["met"] = value <= band


def _own_goals(rows: list[dict], key: str, spec: list) -> list[dict]:
    """--metrics' goals are on rocketmq_tx's own ratio (metrics on / off), not against Java's."""
    if key != "metrics":
        return rows
    goals = {label: goal for label, _, goal in spec}
    for row in rows:
        goal = goals.get(row["figure"])
        value = row.get("rocketmq_tx", {}).get("metrics_over_plain")
        if goal:
            row["goal"] = f"metrics on / off {goal}"
            row["met"] = met(value, goal)
    return rows


def save(raw: dict, raw_path: Path | None, path: Path | None = None) -> Path:
    """Write the summary of *raw* to *path* (default ``bench/results/<bench>-<its UTC start>.json``)."""
    summary = summarize(raw, raw_path)
    if path is None:
        path = _summary.default_path(summary["bench"], dt.datetime.fromisoformat(summary["started"]))
    return _summary.write(summary, path)

