"""
Broker benchmark, side by side: the official RocketMQ benchmark Producer and Consumer
(``org.apache.rocketmq.example.benchmark`` from the ``rocketmq-example`` 5.5.0 artifact)
against rocketmq_tx's broker and against the official Java broker, in one run, with the
same settings.

    python3 bench/broker/run.py [--seconds 20] [--targets java,tx] [--java-broker 5.5.0|4.9.7]
                                [--tx-mode separate|standalone] [--warmup 15] [--no-latency] [--keep]
                                [--flush async|sync]
    python3 bench/broker/run.py --transactions [--seconds 20] [--warmup 10] [--threads 64] ...
    python3 bench/broker/run.py --sql92 [--backlog 1000000] [--scan-timeout 900] ...
    python3 bench/broker/run.py --tls [--one-thread] [--seconds 10] [--warmup 10] [--targets java,tx] ...
    python3 bench/broker/run.py --ha [--seconds 20] [--warmup 10] [--no-latency] [--targets java,tx] ...
    python3 bench/broker/run.py --pop|--timer|--five [--pop-backlog 2000000] [--pop-poll-ms 0] [--seconds 20]
                                [--warmup 10] [--timer-count 20000] [--timer-spread 60] [--timer-delay 10] ...

For each target, in the order given, on fresh name server + broker processes and an empty
store (ASYNC_FLUSH, or SYNC_FLUSH with ``--flush sync``; autoCreateTopicEnable=true, Java's
defaults otherwise):

1. start-up: from the broker process's spawn until the first acknowledged send (a Python
   BlockingProducer retrying every 20 ms through the name server; the name server is
   already up, except in ``--tx-mode standalone`` where it is part of the measured process);
2. warm-up: benchmark Producer, 64 threads, ``--warmup`` seconds (not reported);
3. benchmark Producer, 1 KiB bodies, 64 threads of sync sends, then 1 thread;
4. SendLatency (ours, bench/broker/java, on the official client: the Producer's loop with
   every send timed) for p50/p99, 64 threads then 1 thread (``--no-latency`` skips it);
5. benchmark Consumer (20 threads, its default) while a 64-thread Producer feeds it;
6. broker RSS (/proc/<pid>/status VmRSS) after every phase.

Every topic is created (4 queues) before its phase, so no phase measures auto-creation.
Each tool phase runs until the tool's first report and then ``--seconds`` more: the tools
print a figure only once they hold 10 one-second snapshots (about 10 s after they start),
and each printed figure is over the last 9 s (a sliding window).
The tools run with ``-ri 1000`` (one line a second); a phase's figure is the mean over
its lines, Max RT is the tool's own (whole phase). The tools print no percentiles.

Prints a Markdown table with the ratios rocketmq_tx / Java and writes
``bench/broker/results-<UTC timestamp>.json`` (all raw tool lines included; gitignored) and a
small summary of it, ``bench/results/broker-<UTC timestamp>.json``, to keep in the repository
(``--summary PATH`` elsewhere, ``--no-summary`` not at all; ``bench/broker/summarize.py``
makes one from an earlier results file).

The rocketmq_tx command lines are built by :func:`brokerbench.peers.tx_command_lines` (one
place to adjust). The parts live in ``bench/broker/brokerbench/`` (see its ``__init__``);
this file is the command line.

``--tls`` (TLS compare, issue #7) measures only send TPS: for each target, plaintext and
then TLS, each on fresh processes, a ``--warmup`` (default 10 s) and the Producer with 1
thread, our BlockingProducer with 1 thread (see :func:`brokerbench.report.client_bound`), and the Producer with 64
threads (``--seconds`` each, default 10, after the first report). TLS is Java's
test mode (self-signed, no verification) with the servers enforcing it (JAVA_TLS_SERVER,
TX_TLS_SERVER; the clients: JAVA_TLS_CLIENT and a BlockingProducer over TLS). It prints
TLS / plaintext per target and (tx ratio) / (Java ratio), above 1 when TLS costs rocketmq_tx
less than Java, and writes ``bench/broker/results-tls-<UTC timestamp>.json``. ``--rounds N``
repeats it, every other round TLS first, and adds the means over the rounds.

``--acl`` (ACL compare) is the same comparison with ACL instead of TLS: for each target,
without ACL and then with it (every other round the other way round), each on fresh
processes: a ``--warmup``, then the Producer with 1 and with 64 threads (``--seconds``
each after the first report). With ACL both brokers read the same ``plain_acl.yml`` (one
account, PUB|SUB on every topic and group; ACL_YML) and the Producer signs every request
with Java's ``AclClientRPCHook`` (its ``-a true -ak -sk`` options; the start-up probe and
the topic maker sign too). rocketmq_tx: ``aclEnable=true``. Java 4.9.7 (``--java-broker
4.9.7``): ``aclEnable=true``, ACL 1.0, the same checks as ours. Java 5.5.0: 5.x has no ACL 1.0
(its ``aclEnable`` is read and ignored), so it runs ACL 2.0 (authentication and
authorization) with ``migrateAuthFromV1Enabled`` importing the same plain_acl.yml, 5.x's way
of serving such a file (JAVA5_ACL). Before measuring, a send signed with a wrong secret must
be refused, or the run stops. Besides send TPS and RT it records the broker's and the
Producer's CPU time per message in each measured phase (/proc, :func:`brokerbench.tools.run_producer`).
It prints ACL / plain per target and (tx ratio) / (Java ratio),
above 1 when ACL costs rocketmq_tx relatively less than Java, with the medians over
``--rounds``, and writes ``bench/broker/results-acl-<UTC timestamp>.json``.

``--metrics`` (issue #24): rocketmq_tx only, on fresh processes, with
``metricsExporterType=PROM`` and its ``/metrics`` scraped every second, against the same
without metrics (every other round metrics first): a ``--warmup`` (default 10 s), then the
Producer and SendLatency with 64 threads (``--seconds`` each, default 10). It prints
metrics / plain (goal: send TPS >= 0.97, p99 within noise), the scrapes made and the slowest
one, and writes ``bench/broker/results-metrics-<UTC timestamp>.json``.

``--metrics --paired`` (issue #24, brokerbench/paired.py): both rocketmq_tx brokers at once,
one without metrics and one with PROM scraped every second, and one ``rocketmq.bench.PairedSend``
JVM sending from 64 threads to one of them at a time in ``--windows`` windows of
``--window-seconds`` (A B B A ...), after ``--warmup`` (default 10 s) on both. It prints the
median of the per-pair TPS ratios (goal >= 0.97), p99 and each broker's CPU per message, and
writes ``bench/broker/results-metrics-paired-<UTC timestamp>.json``. It runs ``--legs`` (default
2) such runs on fresh brokers, metrics on B in the first and on A in the second (a crossover,
so a slot that reads better falls on both sides), and judges the geometric mean of the legs'
medians.
``--paired-null``: both brokers without metrics (an A/A run, the instrument's own reading when
nothing differs).

``--transactions`` (issue #21): for each target, on fresh processes, a ``--warmup`` (default
10 s), then the benchmark Producer (plain sync sends) and the benchmark TransactionProducer
(its defaults -sr 0 -su 0: every local transaction commits at once, no check-back), 64
threads (``--threads``), 1 KiB bodies, ``--seconds`` (default 20) after each tool's first
report. It prints transactional / plain send TPS per target and (tx ratio) / (Java ratio),
goal >= 1.0, and writes ``bench/broker/results-tx-<UTC timestamp>.json``.

``--sql92`` (issue #21): both brokers with enablePropertyFilter=true. For each target, on
fresh processes, ``rocketmq.bench.SqlLoad`` (bench/broker/java) stores ``--backlog``
messages (default 1,000,000; 64 threads, 1 KiB bodies, no tag, user property ``a`` = i % 10),
then one ``rocketmq.bench.SqlScan`` push consumer (official 5.5.0 client) of a new group,
``MessageSelector.bySql("a = 0")``, reads the topic from its first offset until it holds the
10 % that match. Scanned messages/s = backlog / (first to last matching message), tx / Java,
goal >= 1.0; delivered must be exactly the 10 %. Writes
``bench/broker/results-sql92-<UTC timestamp>.json``.

``--pop`` and ``--timer`` (issue #22; ``--five``: both, on the same fresh processes), Java
5.5.0 only: POP receive + ack messages/s with 64 POP requests in flight (``rocketmq.bench.PopBench``
over a ``--pop-backlog``), tx / Java, goal >= 1.0; and timer delivery lateness p50/p99/max
(``rocketmq.bench.TimerLateness``: ``--timer-count`` timers over ``--timer-spread`` seconds, each
due ``--timer-delay`` seconds after its send), goal tx's p99 <= Java's, no early and no missing
delivery. The method is in :mod:`brokerbench.five`. Writes
``bench/broker/results-five-<UTC timestamp>.json``.

``--ha`` (issue #23): per target, an ASYNC_MASTER with one slave (send TPS of the Producer,
64 threads, and the slave's fall-behind bytes sampled every second) and a SYNC_MASTER with
one slave (send TPS, SendLatency p50/p99); goals SYNC send TPS >= 1.0x, p99 <= 1.0x, median
ASYNC lag <= Java's. The method is in :mod:`brokerbench.ha`. Writes
``bench/broker/results-ha-<UTC timestamp>.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from brokerbench import features, five, ha, paired, summary  # noqa: E402  (puts the repository, bench/ and compat-tests/ on the path)
from brokerbench.peers import Target, tools_classpath  # noqa: E402
from brokerbench.phases import bench_metrics, bench_send, bench_target, measured, metrics_settings  # noqa: E402
from brokerbench.report import (  # noqa: E402
    ACL_ROWS,
    METRICS_ROWS,
    mean_of_rounds,
    median_of_rounds,
    ratio_table,
    report,
    tls_report,
    write_results,
)
from brokerbench.security import (  # noqa: E402
    ACL_PRODUCER_ARGS,
    ACL_SERVER,
    ACL_YML,
    JAVA_TLS_CLIENT,
    JAVA_TLS_SERVER,
    TX_TLS_SERVER,
    java_acl_settings,
)
from brokerbench.settings import BROKER_SETTINGS, TOOLS_VERSION, log  # noqa: E402


@dataclass(frozen=True)
class Comparison:
    """What sets one on/off comparison (``--tls``, ``--acl``) apart from the other."""

    #: the results' key of the runs with the feature on (off: "plain"), and the results file's suffix
    key: str
    #: how the runs are named with the feature on and off
    on: str
    off: str
    #: the table of one round's (or the aggregate's) results
    table: Callable[[dict], str]
    #: the figures of several rounds made one, and its name in the text
    aggregate: Callable[[list[dict]], dict]
    aggregate_name: str
    #: every other round the targets the other way round too (rocketmq_tx listed first)
    interleave_targets: bool


TLS_COMPARISON = Comparison("tls", "TLS", "plaintext", tls_report, mean_of_rounds, "Mean", False)
ACL_COMPARISON = Comparison("acl", "ACL", "plain", lambda results: tls_report(results, "ACL", "acl", ACL_ROWS),
                            median_of_rounds, "Median", True)


def phase_lengths(args: argparse.Namespace, seconds: float, warmup: float) -> tuple[float, float]:
    """``--seconds`` and ``--warmup``, or this mode's defaults where they are not given."""
    return (seconds if args.seconds is None else args.seconds, warmup if args.warmup is None else args.warmup)


def target_name(args: argparse.Namespace, kind: str) -> str:
    return "rocketmq_tx" if kind == "tx" else f"Java {args.java_broker}"


def each_target(args: argparse.Namespace, targets: list[str], measure: Callable[[str, str], dict]) -> dict[str, dict]:
    """``measure(kind, name)`` for each target in order (each on fresh processes), by name."""
    results: dict[str, dict] = {}
    for kind in targets:
        name = target_name(args, kind)
        results[name] = measure(kind, name)
    return results


def each_target_measured(args: argparse.Namespace, targets: list[str], tools_cp: str,
                         bench: Callable[[Target], dict]) -> dict[str, dict]:
    """:func:`each_target` with :func:`brokerbench.phases.measured`: *bench* on each fresh target, no TLS or ACL."""
    return each_target(args, targets, lambda kind, name: measured(kind, name, args, tools_cp, False, bench))


def compare_rounds(args: argparse.Namespace, targets: list[str], tools_cp: str, comparison: Comparison,
                   bench: Callable[[Target, bool], dict]) -> tuple[list[dict[str, dict[str, dict]]], str]:
    """
    ``--rounds`` rounds of *comparison*: each target off and on, each run on fresh processes
    (``bench(target, on)``); returns the rounds' results and their text (a table per round
    and, with several rounds, one of their aggregate).
    """
    c = comparison
    rounds: list[dict[str, dict[str, dict]]] = []
    for k in range(args.rounds):
        # every other round the feature first (--acl: and the targets the other way round), so
        # that a drift of the machine's load does not always favour the same run
        modes = (False, True) if k % 2 == 0 else (True, False)
        order = list(reversed(targets)) if c.interleave_targets and k % 2 else targets
        results: dict[str, dict[str, dict]] = {}
        for kind in order:
            name = target_name(args, kind)
            results[name] = {}
            for on in modes:
                label = f"{name} {c.on if on else c.off}" + (f" (round {k + 1})" if args.rounds > 1 else "")
                results[name][c.key if on else "plain"] = measured(
                    kind, label, args, tools_cp, on and c.key == "tls", lambda target, on=on: bench(target, on),
                    acl=on and c.key == "acl")
        if c.interleave_targets:
            results = {n: results[n] for n in sorted(results, key=lambda n: n != "rocketmq_tx")}
        rounds.append(results)
    parts = []
    for k, results in enumerate(rounds):
        loads = "; ".join(f"{n} {c.on if m == c.key else c.off}: load average {r['loadavg_1min'][0]} "
                          f"at start, {r['loadavg_1min'][1]} at end" for n, by_mode in results.items()
                          for m, r in by_mode.items())
        head = f"Round {k + 1} ({c.off if k % 2 == 0 else c.on} first):\n\n" if len(rounds) > 1 else ""
        parts.append(head + c.table(results) + "\n\n" + loads)
    if len(rounds) > 1:
        together = {n: {m: c.aggregate([r[n][m] for r in rounds]) for m in ("plain", c.key)} for n in rounds[0]}
        parts.append(f"{c.aggregate_name} of the {len(rounds)} rounds:\n\n" + c.table(together))
    return rounds, "\n\n".join(parts)


def finish(args: argparse.Namespace, kind: str, started: dt.datetime, head: dict, feature: dict, results: object,
           text: str) -> None:
    """Print the run's text, write its raw results file and (unless ``--no-summary``) its summary."""
    print(text)
    path, raw = write_results(kind, started, args, head, feature, results, text)
    if not args.no_summary:
        log(f"wrote {summary.save(raw, path, args.summary)}")


def main_full(args: argparse.Namespace, targets: list[str], tools_cp: str) -> None:
    seconds, warmup = phase_lengths(args, 20.0, 15.0)
    started = dt.datetime.now(dt.UTC)
    results = each_target_measured(args, targets, tools_cp, lambda target: bench_target(
        target, tools_cp, seconds, warmup, not args.no_latency))
    text = report(results) + "\n\n" + features.loads_text(results)
    finish(args, "", started, {"seconds": seconds, "warmup_phase_s": warmup}, {}, results, text)


def main_tls(args: argparse.Namespace, targets: list[str], tools_cp: str) -> None:
    seconds, warmup = phase_lengths(args, 10.0, 10.0)
    started = dt.datetime.now(dt.UTC)
    threads = (1,) if args.one_thread else (1, 64)
    rounds, text = compare_rounds(args, targets, tools_cp, TLS_COMPARISON, lambda target, tls: bench_send(
        target, tools_cp, seconds, warmup, tls, threads))
    finish(args, "tls", started,
           {"mode": "tls-compare", "rounds": args.rounds, "seconds": seconds, "warmup_phase_s": warmup},
           {"tls": {"java_servers": JAVA_TLS_SERVER, "java_broker_extra": {"tls.enable": "true"},
                    "java_tools": JAVA_TLS_CLIENT, "tx_servers": TX_TLS_SERVER,
                    "tx_broker_extra_separate": "tls.enable=true", "tx_mode": args.tx_mode}},
           rounds[0] if len(rounds) == 1 else rounds, text)


def main_acl(args: argparse.Namespace, targets: list[str], tools_cp: str) -> None:
    seconds, warmup = phase_lengths(args, 10.0, 10.0)
    started = dt.datetime.now(dt.UTC)
    threads = (1,) if args.one_thread else (1, 64)
    rounds, text = compare_rounds(args, targets, tools_cp, ACL_COMPARISON, lambda target, acl: bench_send(
        target, tools_cp, seconds, warmup, False, threads, acl, py_phase=False))
    finish(args, "acl", started,
           {"mode": "acl-compare", "rounds": args.rounds, "seconds": seconds, "warmup_phase_s": warmup},
           {"acl": {"plain_acl.yml": ACL_YML, "tx_broker": ACL_SERVER,
                    "java_broker": java_acl_settings(args.java_broker), "producer_args": list(ACL_PRODUCER_ARGS),
                    "tx_mode": args.tx_mode}},
           rounds[0] if len(rounds) == 1 else rounds, text)


def main_metrics(args: argparse.Namespace, targets: list[str], tools_cp: str) -> None:
    """--metrics (issue #24): rocketmq_tx with metricsExporterType=PROM, scraped every second, against
    the same without metrics, each on fresh processes; every other round metrics first."""
    seconds, warmup = phase_lengths(args, 10.0, 10.0)
    started = dt.datetime.now(dt.UTC)
    rounds: list[dict[str, dict[str, dict]]] = []
    for k in range(args.rounds):
        modes = (False, True) if k % 2 == 0 else (True, False)
        results: dict[str, dict] = {"rocketmq_tx": {}}
        for on in modes:
            extra, url = metrics_settings() if on else (None, None)
            label = f"rocketmq_tx metrics {'on' if on else 'off'}" + (f" (round {k + 1})" if args.rounds > 1 else "")
            results["rocketmq_tx"]["metrics" if on else "plain"] = measured(
                "tx", label, args, tools_cp, False,
                lambda target, url=url: bench_metrics(target, tools_cp, seconds, warmup, url), extra=extra)
        rounds.append(results)
    parts = [tls_report(r, "metrics", "metrics", METRICS_ROWS) for r in rounds]
    if len(rounds) > 1:
        median = {"rocketmq_tx": {m: median_of_rounds([r["rocketmq_tx"][m] for r in rounds])
                                  for m in ("plain", "metrics")}}
        parts.append(f"Median of the {len(rounds)} rounds:\n\n" + tls_report(median, "metrics", "metrics",
                                                                             METRICS_ROWS))
    parts.append("goal: send TPS, 64 threads, metrics / plain >= 0.97; p99 within noise")
    finish(args, "metrics", started,
           {"mode": "metrics-compare", "rounds": args.rounds, "seconds": seconds, "warmup_phase_s": warmup},
           {"metrics": {"tx_broker_extra": {"metricsExporterType": "PROM"}, "scrape_interval_s": 1.0,
                        "tx_mode": args.tx_mode}},
           rounds[0] if len(rounds) == 1 else rounds, "\n\n".join(parts))


def main_metrics_paired(args: argparse.Namespace, tools_cp: str) -> None:
    """--metrics --paired (issue #24): both brokers at once, one PairedSend JVM taking turns between them."""
    warmup = 10.0 if args.warmup is None else args.warmup
    started = dt.datetime.now(dt.UTC)
    out = paired.bench_crossover(args, tools_cp, args.windows, args.window_seconds, warmup, args.paired_null,
                                 args.legs)
    text, _ = paired.report(out)
    finish(args, "metrics-paired", started,
           {"mode": "metrics-paired", "windows": args.windows, "window_s": args.window_seconds,
            "warmup_phase_s": warmup, "legs": args.legs, "null": args.paired_null},
           {"metrics": {"tx_broker_extra": {"metricsExporterType": "PROM"}, "scrape_interval_s": 1.0,
                        "tx_mode": args.tx_mode}}, out, text)


def main_transactions(args: argparse.Namespace, targets: list[str], tools_cp: str) -> None:
    seconds, warmup = phase_lengths(args, 20.0, 10.0)
    started = dt.datetime.now(dt.UTC)
    rounds: list[dict[str, dict]] = []
    parts = []
    for k in range(args.rounds):
        # every other round the targets the other way round: a drift of the machine favours neither
        order = list(reversed(targets)) if k % 2 else targets
        results = each_target_measured(args, order, tools_cp, lambda target: features.bench_transactions(
            target, tools_cp, seconds, warmup, args.threads))
        rounds.append(results)
        head = f"Round {k + 1} ({', '.join(results)}):\n\n" if args.rounds > 1 else ""
        parts.append(head + features.table_text(features.tx_rows(results), list(results), "transactions")
                     + "\n\n" + features.loads_text(results))
    if len(rounds) > 1:
        parts.append(features.tx_rounds_text(rounds))
    finish(args, "tx", started, {"mode": "transactions", "rounds": args.rounds, "seconds": seconds,
                                 "warmup_phase_s": warmup, "threads": args.threads}, {},
           rounds[0] if len(rounds) == 1 else rounds, "\n\n".join(parts))


def main_sql92(args: argparse.Namespace, targets: list[str], tools_cp: str) -> None:
    started = dt.datetime.now(dt.UTC)
    results = each_target_measured(args, targets, tools_cp, lambda target: features.bench_sql92(
        target, tools_cp, args.backlog, args.scan_timeout))
    text = features.table_text(features.sql_rows(results), list(results), "sql92") + "\n\n" + \
        features.loads_text(results)
    finish(args, "sql92", started, {"mode": "sql92", "backlog": args.backlog, "expression": features.SQL_EXPRESSION},
           {}, results, text)


def main_five(args: argparse.Namespace, targets: list[str], tools_cp: str) -> None:
    parts = tuple(p for p in ("pop", "timer") if getattr(args, p))
    seconds, warmup = phase_lengths(args, 20.0, 10.0)
    started = dt.datetime.now(dt.UTC)
    results = each_target_measured(args, targets, tools_cp, lambda target: five.bench_five(
        target, tools_cp, args, parts, seconds, warmup))
    text = ratio_table(five.five_rows(results), list(results)) + "\n\n" + features.loads_text(results)
    head: dict = {"mode": "five", "parts": list(parts)}
    if "pop" in parts:
        head.update(seconds=seconds, warmup_phase_s=warmup,
                    pop={"backlog": args.pop_backlog, "inflight": args.pop_inflight, "batch": args.pop_batch,
                         "poll_ms": args.pop_poll_ms, "invisible_ms": args.pop_invisible_ms, "queues": 4})
    if "timer" in parts:
        head["timer"] = {"count": args.timer_count, "spread_s": args.timer_spread, "delay_s": args.timer_delay,
                         "timerPrecisionMs": five.TIMER_PRECISION_MS}
    finish(args, "five", started, head, {}, results, text)


def main_ha(args: argparse.Namespace, targets: list[str], tools_cp: str) -> None:
    seconds, warmup = phase_lengths(args, 20.0, 10.0)
    started = dt.datetime.now(dt.UTC)
    results = each_target(args, targets, lambda kind, name: ha.measured_ha(kind, name, args, tools_cp, seconds,
                                                                           warmup))
    text = ratio_table(ha.ha_rows(results), list(results)) + "\n\n" + features.loads_text(results)
    finish(args, "ha", started, {"mode": "ha", "seconds": seconds, "warmup_phase_s": warmup}, {}, results, text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=None,
                        help="seconds per phase after the tool's first figure (which comes about 10 s in); "
                             "default 20, 10 with --tls")
    parser.add_argument("--warmup", type=float, default=None,
                        help="seconds of 64-thread sends before the measured phases (0: none); "
                             "default 15, 10 with --tls")
    parser.add_argument("--no-latency", action="store_true", help="skip the SendLatency (p99) phases")
    parser.add_argument("--tls", action="store_true",
                        help="TLS compare: send TPS (Producer, 64 and 1 threads) in plaintext and with TLS "
                             "for each target, and the ratios TLS / plaintext")
    parser.add_argument("--acl", action="store_true",
                        help="ACL compare: send TPS (Producer, 1 and 64 threads) without and with ACL for each "
                             "target, the ratios ACL / plain, and their medians over --rounds")
    parser.add_argument("--transactions", action="store_true",
                        help="issue #21: transactional / plain send TPS (TransactionProducer vs Producer, "
                             "--threads threads) per target, and tx's ratio over Java's")
    parser.add_argument("--threads", type=int, default=64, help="--transactions: the tools' threads (default 64)")
    parser.add_argument("--sql92", action="store_true",
                        help="issue #21: one SQL92 consumer ('a = 0', 10%% match) reading a --backlog from the "
                             "start: scanned messages/s per target, tx / Java")
    parser.add_argument("--backlog", type=int, default=1_000_000,
                        help="--sql92: messages stored before the scan (default 1,000,000)")
    parser.add_argument("--scan-timeout", type=float, default=900.0,
                        help="--sql92: seconds the consumer may take (default 900)")
    parser.add_argument("--pop", action="store_true",
                        help="issue #22: POP receive+ack messages/s (PopBench: --pop-inflight pops of up to "
                             "--pop-batch, each message acked) over a --pop-backlog, tx / Java")
    parser.add_argument("--timer", action="store_true",
                        help="issue #22: timer delivery lateness p50/p99/max (TimerLateness), tx vs Java")
    parser.add_argument("--five", action="store_true", help="--pop and --timer, on the same fresh processes")
    parser.add_argument("--pop-backlog", type=int, default=2_000_000,
                        help="--pop: messages stored before consuming (default 2,000,000; raise it when the "
                             "table says the backlog ran out)")
    parser.add_argument("--pop-inflight", type=int, default=64, help="--pop: POP requests outstanding (default 64)")
    parser.add_argument("--pop-batch", type=int, default=32, help="--pop: maxMsgNums of each pop (default 32)")
    parser.add_argument("--pop-poll-ms", type=int, default=0,
                        help="--pop: each pop's long-polling time, ms (default 0: none; see brokerbench.five)")
    parser.add_argument("--pop-invisible-ms", type=int, default=five.POP_INVISIBLE_MS,
                        help="--pop: each pop's invisible time, ms (default 60000, longer than the run; a short "
                             "one with a small backlog and a long --seconds checks that acked messages stay acked)")
    parser.add_argument("--timer-count", type=int, default=20_000, help="--timer: timer messages (default 20,000)")
    parser.add_argument("--timer-spread", type=float, default=60.0,
                        help="--timer: seconds over which they are sent, and so their deliver times (default 60)")
    parser.add_argument("--timer-delay", type=float, default=10.0,
                        help="--timer: each message's deliver time, seconds after its send (default 10)")
    parser.add_argument("--metrics", action="store_true",
                        help="rocketmq_tx with Prometheus metrics on (scraped every second) against off: "
                             "64-thread send TPS and p99")
    parser.add_argument("--paired", action="store_true",
                        help="--metrics: both brokers at once and one PairedSend JVM sending to them in turn, "
                             "--windows windows of --window-seconds (A B B A ...), in --legs runs (metrics on B, "
                             "then A); judged on the geometric mean of the legs' per-pair medians")
    parser.add_argument("--paired-null", action="store_true",
                        help="--paired with metrics off on both brokers: an A/A run, the instrument's own noise")
    parser.add_argument("--windows", type=int, default=40, help="--paired: measured windows (default 40)")
    parser.add_argument("--window-seconds", type=float, default=5.0, help="--paired: seconds a window (default 5)")
    parser.add_argument("--legs", type=int, default=2,
                        help="--paired: runs on fresh brokers, metrics on B, then A, ... (default 2, a crossover)")
    parser.add_argument("--ha", action="store_true",
                        help="issue #23: an ASYNC_MASTER + slave (send TPS, the slave's lag sampled every second) "
                             "and a SYNC_MASTER + slave (send TPS, p99) per target, tx / Java")
    parser.add_argument("--one-thread", action="store_true",
                        help="with --tls or --acl: only the 1-thread phases (the warm-up still uses 64 threads)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="--tls, --acl, --metrics, --transactions: repeat the whole comparison N times, "
                             "every other round TLS (ACL, metrics) first (--acl, --transactions: the targets the "
                             "other way round); also prints the means (--acl, --metrics: medians; "
                             "--transactions: the median of the per-round ratios) over the rounds")
    parser.add_argument("--targets", default="java,tx", help="comma-separated, in order: java, tx")
    parser.add_argument("--java-broker", default=TOOLS_VERSION, help=f"{TOOLS_VERSION} (default) or 4.9.7")
    parser.add_argument("--java-heap", default="8g",
                        help="the Java broker's -Xms/-Xmx (default 8g, runbroker.sh's)")
    parser.add_argument("--tx-mode", default="separate", choices=("separate", "standalone"))
    parser.add_argument("--flush", default="async", choices=("async", "sync"),
                        help="both brokers' flushDiskType: ASYNC_FLUSH (default) or SYNC_FLUSH (group commit)")
    parser.add_argument("--keep", action="store_true",
                        help="keep the stores (bench/.work) and the Java homes with their logs (compat-tests/.work)")
    parser.add_argument("--summary", type=Path, default=None,
                        help="where to write the run's small JSON summary "
                             "(default bench/results/broker[-tls|-acl]-<UTC time>.json)")
    parser.add_argument("--no-summary", action="store_true", help="write no JSON summary")
    args = parser.parse_args()
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    if not targets or set(targets) - {"java", "tx"}:
        parser.error("--targets takes java and/or tx")
    # both starters read BROKER_SETTINGS, and the results file records it
    BROKER_SETTINGS["flushDiskType"] = "SYNC_FLUSH" if args.flush == "sync" else "ASYNC_FLUSH"
    if args.sql92:
        BROKER_SETTINGS["enablePropertyFilter"] = "true"

    # The start-up probe's refused connections are expected; keep the blocking client quiet.
    logging.getLogger("rocketmq_tx").setLevel(logging.ERROR)
    tools_cp = tools_classpath()
    if args.five:
        args.pop = args.timer = True
    if sum(map(bool, (args.tls, args.acl, args.transactions, args.sql92, args.pop or args.timer, args.ha,
                      args.metrics))) > 1:
        parser.error("--tls, --acl, --transactions, --sql92, --pop/--timer, --ha and --metrics are separate "
                     "comparisons")
    args.paired = args.paired or args.paired_null
    if args.paired and not args.metrics:
        parser.error("--paired goes with --metrics")
    if args.metrics and args.paired:
        main_metrics_paired(args, tools_cp)
        return
    if args.metrics:
        main_metrics(args, targets, tools_cp)
        return
    if args.ha:
        main_ha(args, targets, tools_cp)
        return
    if (args.pop or args.timer) and args.java_broker != TOOLS_VERSION and "java" in targets:
        parser.error(f"--pop/--timer compare with the Java {TOOLS_VERSION} broker (4.9.7 has no timer store)")
    if args.pop or args.timer:
        main_five(args, targets, tools_cp)
        return
    if args.transactions:
        main_transactions(args, targets, tools_cp)
        return
    if args.sql92:
        main_sql92(args, targets, tools_cp)
        return
    if args.tls:
        main_tls(args, targets, tools_cp)
        return
    if args.acl:
        main_acl(args, targets, tools_cp)
        return
    main_full(args, targets, tools_cp)


if __name__ == "__main__":
    main()
