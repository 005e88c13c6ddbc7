"""
The phases: what runs against one started target (the full run's, or ``--tls``'s and
``--acl``'s send phases), and one target's whole measurement: fresh processes on an empty
store, the phases, the load average at start and end, stop and clean-up.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import threading
import time
import traceback
import urllib.request
from collections.abc import Callable
from pathlib import Path

import javaharness as jh

from .peers import HOMES, BenchHome, Target, java_broker_classpath, rss_kib, start_java, start_tx
from .security import check_acl_enforced
from .settings import TOOL_JVM, WORK, log
from .tools import py_send_loop, run_consumer, run_latency, run_producer


def bench_target(target: Target, cp: str, seconds: float, warmup: float, latency: bool) -> dict:
    """The full run: warm-up, Producer with 64 then 1 thread, SendLatency (*latency*), Consumer; RSS after each."""
    home = BenchHome("bench-broker-tools", TOOL_JVM)
    out: dict = {"name": target.name, "startup_s": round(target.startup_s, 3), **target.info}
    rss: dict[str, int | None] = {"after_start": rss_kib(target.broker_pid)}
    if warmup > 0:
        log(f"{target.name}: warm-up, Producer, 64 threads, {warmup:.0f} s (not reported)")
        out["warmup"] = run_producer(cp, home, target.namesrv_addr, "BenchWarmup", 64, warmup, warmup_only=True)
        out["warmup"].pop("lines", None)
        rss["after_warmup"] = rss_kib(target.broker_pid)
    for threads in (64, 1):
        log(f"{target.name}: Producer, {threads} thread(s), first report + {seconds:.0f} s")
        out[f"send_{threads}"] = run_producer(cp, home, target.namesrv_addr, f"BenchSend{threads}", threads, seconds)
        rss[f"after_send_{threads}"] = rss_kib(target.broker_pid)
    if latency:
        for threads in (64, 1):
            log(f"{target.name}: SendLatency (p99), {threads} thread(s), {seconds + 3:.0f} s")
            out[f"latency_{threads}"] = run_latency(cp, home, target.namesrv_addr, f"BenchLatency{threads}",
                                                    threads, seconds)
    log(f"{target.name}: Consumer + 64-thread Producer, first report + {seconds:.0f} s")
    out["consume"] = run_consumer(cp, home, target.namesrv_addr, "BenchConsume", seconds)
    rss["after_consume"] = rss_kib(target.broker_pid)
    out["broker_rss_kib"] = rss
    if target.namesrv_pid is not None:
        out["namesrv_rss_kib"] = rss_kib(target.namesrv_pid)
    return out


def bench_send(target: Target, cp: str, seconds: float, warmup: float, tls: bool,
               thread_counts: tuple[int, ...] = (1, 64), acl: bool = False, py_phase: bool = True) -> dict:
    """
    --tls: warm-up, then the Producer with each of *thread_counts* threads, over TLS if *tls*,
    and our BlockingProducer right after the 1-thread phase. The lighter phase goes first:
    after a measured 64-thread phase, the Java broker's 1-thread plaintext round trip was 40%
    longer (204 -> 280-293 us, session 8) while its TLS one was not, so the 1-thread
    comparison depended on what had run before it.

    *acl*: every Producer signs. *py_phase*: False leaves the BlockingProducer phase (a TLS
    question) out (``--acl`` runs, with ACL and without).
    """
    home = BenchHome("bench-broker-tools", TOOL_JVM)
    out: dict = {"name": target.name, "startup_s": round(target.startup_s, 3), **target.info}
    rss: dict[str, int | None] = {"after_start": rss_kib(target.broker_pid)}
    mode = "TLS" if tls else "ACL" if acl else "plaintext" if py_phase else "plain"
    if warmup > 0:
        log(f"{target.name} {mode}: warm-up, Producer, 64 threads, {warmup:.0f} s (not reported)")
        out["warmup"] = run_producer(cp, home, target.namesrv_addr, "BenchWarmup", 64, warmup, True, tls, acl)
        out["warmup"].pop("lines", None)
    for threads in thread_counts:
        log(f"{target.name} {mode}: Producer, {threads} thread(s), first report + {seconds:.0f} s")
        out[f"send_{threads}"] = run_producer(cp, home, target.namesrv_addr, f"BenchSend{threads}", threads,
                                              seconds, tls=tls, acl=acl, broker_pid=target.broker_pid)
        rss[f"after_send_{threads}"] = rss_kib(target.broker_pid)
        if threads == 1 and py_phase:  # beside the Java Producer's 1-thread phase, for client_bound
            log(f"{target.name} {mode}: BlockingProducer, 1 thread, {seconds:.0f} s")
            out["py_send_1"] = py_send_loop(target.namesrv_addr, "BenchSend1", seconds, tls)
    out["broker_rss_kib"] = rss
    return out


def measured(kind: str, name: str, args: argparse.Namespace, tools_cp: str, tls: bool,
             bench: Callable[[Target], dict], acl: bool = False, extra: dict[str, str] | None = None) -> dict:
    """Start a fresh *kind* target (name server + broker, empty store; *tls*: enforcing, test
    mode; *acl*: ACL on, see ``--acl``), run *bench* on it, stop it; the result carries the
    load average at start and end, or the error (a failed target keeps its logs)."""
    WORK.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"broker-{kind}{'-tls' if tls else ''}{'-acl' if acl else ''}-", dir=WORK))
    target = None
    result: dict | None = None
    load_start = os.getloadavg()[0]
    try:
        log(f"{name}: starting (work dir {work}; load average {load_start:.2f})")
        if kind == "java":
            target = start_java(args.java_broker, java_broker_classpath(args.java_broker, tools_cp),
                                work / "store", args.java_heap, tls, acl)
        else:
            target = start_tx(args.tx_mode, work, tls, acl, extra)
        log(f"{name}: first acknowledged send {target.startup_s:.3f} s after spawn")
        if acl:
            check_acl_enforced(target)
        result = bench(target)
    except Exception as e:  # noqa: BLE001 - report the other target anyway
        traceback.print_exc()
        result = {"name": name, "error": f"{type(e).__name__}: {e}"}
    finally:
        if result is None:
            result = {"name": name, "error": "interrupted"}
        result["loadavg_1min"] = [round(load_start, 2), round(os.getloadavg()[0], 2)]
        if target is not None:
            target.stop()
        if not args.keep and "error" not in result:
            shutil.rmtree(work, ignore_errors=True)
            for home in HOMES:
                shutil.rmtree(home, ignore_errors=True)
        HOMES.clear()
    return result


class Scraper(threading.Thread):
    """GET *url* every *interval* s until stopped, as a Prometheus server would; counts the
    scrapes, the failures and the slowest answer."""

    def __init__(self, url: str, interval: float = 1.0) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.interval = interval
        self.stopped = threading.Event()
        self.scrapes = 0
        self.failures = 0
        self.slowest_s = 0.0
        self.last_bytes = 0

    def run(self) -> None:
        while not self.stopped.wait(self.interval):
            t = time.monotonic()
            try:
                with urllib.request.urlopen(self.url, timeout=10) as r:
                    self.last_bytes = len(r.read())
                self.scrapes += 1
            except OSError:
                self.failures += 1
            self.slowest_s = max(self.slowest_s, time.monotonic() - t)

    def stop(self) -> dict:
        self.stopped.set()
        self.join(15)
        return {"scrapes": self.scrapes, "failures": self.failures, "slowest_s": round(self.slowest_s, 4),
                "last_bytes": self.last_bytes}


def metrics_settings() -> tuple[dict[str, str], str]:
    """The broker keys that turn metrics on (a free port on 127.0.0.1), and the URL to scrape."""
    port = jh.free_port()
    return ({"metricsExporterType": "PROM", "metricsPromExporterHost": "127.0.0.1",
             "metricsPromExporterPort": str(port)}, f"http://127.0.0.1:{port}/metrics")


def bench_metrics(target: Target, cp: str, seconds: float, warmup: float, scrape_url: str | None) -> dict:
    """
    --metrics: a warm-up, then the Producer and SendLatency with 64 threads while *scrape_url*
    (the broker's /metrics; ``None``: metrics off) is scraped every second.
    """
    home = BenchHome("bench-broker-tools", TOOL_JVM)
    out: dict = {"name": target.name, "startup_s": round(target.startup_s, 3), **target.info}
    if warmup > 0:
        log(f"{target.name}: warm-up, Producer, 64 threads, {warmup:.0f} s (not reported)")
        out["warmup"] = run_producer(cp, home, target.namesrv_addr, "BenchWarmup", 64, warmup, True)
        out["warmup"].pop("lines", None)
    scraper = Scraper(scrape_url) if scrape_url else None
    if scraper is not None:
        scraper.start()
    try:
        log(f"{target.name}: Producer, 64 threads, first report + {seconds:.0f} s")
        out["send_64"] = run_producer(cp, home, target.namesrv_addr, "BenchSend64", 64, seconds,
                                      broker_pid=target.broker_pid)
        log(f"{target.name}: SendLatency (p99), 64 threads, {seconds + 3:.0f} s")
        out["latency_64"] = run_latency(cp, home, target.namesrv_addr, "BenchLatency64", 64, seconds)
    finally:
        if scraper is not None:
            out["scraper"] = scraper.stop()
    out["broker_rss_kib"] = {"after_send_64": rss_kib(target.broker_pid)}
    return out
