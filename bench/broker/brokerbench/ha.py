"""
``--ha`` (issue #23): replication throughput and lag, and the cost of SYNC_MASTER.

For each target, two fresh master + slave pairs (one name server, the master as the target's
own start, the slave the same kind of broker with brokerId=1 and brokerRole=SLAVE on its own
store, its HA master address learned from the name server as Java's is):

1. ASYNC_MASTER: once the slave holds the master's first message, a ``--warmup`` (Producer,
   64 threads), then the benchmark Producer, 64 threads, 1 KiB bodies, its first report +
   ``--seconds``; meanwhile, every second, the slave's fall-behind bytes: the master's
   ``commitLogMaxOffset`` minus the slave's, each read with GET_BROKER_RUNTIME_INFO (the
   master first, then the slave, so a sample slightly under-states the lag; both pairs the
   same way). Reported: send TPS, median / p90 / max lag over the samples taken while the
   Producer reported, and the seconds from the Producer's stop until the slave holds the
   master's whole log (catch-up).
2. SYNC_MASTER: once a send is acknowledged by the slave (SUCCESS, not SLAVE_NOT_AVAILABLE),
   the warm-up, the Producer (64 threads) for send TPS, and SendLatency (64 threads) for
   p50/p99; the lag is sampled here too, and the slave must hold the master's log at the end.

Goals: SYNC_MASTER send TPS tx / Java >= 1.0, p99 tx / Java <= 1.0, ASYNC_MASTER median lag
tx <= Java's. Both brokers of a pair get BROKER_SETTINGS, the same for both kinds.
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import rocketmq_java
import txbroker
import txharness

from rocketmq_tx.blocking import BlockingConnection
from rocketmq_tx.common import fastjson
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode

from .peers import HOMES, BenchHome, Target, java_broker_classpath, rss_kib, start_java, start_tx, tx_command_lines
from .report import get, ratio
from .settings import BROKER_SETTINGS, TOOL_JVM, WORK, broker_jvm, log
from .tools import run_latency, run_producer

SLAVE = {"brokerId": "1", "brokerRole": "SLAVE"}
SYNC_WAIT_S = 60.0
CATCH_UP_TIMEOUT_S = 120.0


def commitlog_max_offset(addr: str) -> int:
    with BlockingConnection(addr) as conn:
        r = conn.invoke(RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO), 5)
    if r.code != ResponseCode.SUCCESS:
        raise RuntimeError(f"GET_BROKER_RUNTIME_INFO {addr}: {r.code} {r.remark}")
    return int(fastjson.loads(r.body)["table"]["commitLogMaxOffset"])


class LagSampler(threading.Thread):
    """Every second: (monotonic time, master offset, master - slave offset)."""

    def __init__(self, master: str, slave: str) -> None:
        super().__init__(name="ha-lag", daemon=True)
        self.master, self.slave = master, slave
        self.samples: list[tuple[float, int, int]] = []
        self.errors = 0
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.is_set():
            t = time.monotonic()
            try:
                m = commitlog_max_offset(self.master)
                s = commitlog_max_offset(self.slave)
                self.samples.append((t, m, max(0, m - s)))  # below 0: the slave passed the earlier read
            except Exception:  # noqa: BLE001 - a missed sample is counted, not fatal
                self.errors += 1
            self._done.wait(max(0.0, 1.0 - (time.monotonic() - t)))

    def stop(self) -> None:
        self._done.set()
        self.join(10)


def _lag_figures(samples: list[int]) -> dict:
    if not samples:
        return {"lag_samples": 0}
    ordered = sorted(samples)
    return {"lag_samples": len(samples), "lag_median_bytes": int(statistics.median(ordered)),
            "lag_p90_bytes": ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))],
            "lag_max_bytes": ordered[-1], "lag_mean_bytes": int(statistics.fmean(ordered))}


def _poll(what: str, check: Callable[[], bool], timeout: float) -> float:
    """Seconds until *check* holds (polled every 50 ms)."""
    t0 = time.monotonic()
    while not check():
        if time.monotonic() - t0 > timeout:
            raise RuntimeError(f"{what}: not within {timeout:.0f}s")
        time.sleep(0.05)
    return time.monotonic() - t0


def _in_sync(master: str, slave: str) -> bool:
    try:
        return commitlog_max_offset(slave) == commitlog_max_offset(master) > 0
    except RuntimeError:
        # a Java 4.9.7 broker with an empty store answers SYSTEM_ERROR (NoSuchElementException
        # from LinkedList.getLast): the slave has nothing yet
        return False


def _slave_acks(master: str) -> bool:
    """A send (WAIT=true) to the SYNC_MASTER answered SUCCESS, not SLAVE_NOT_AVAILABLE / FLUSH_SLAVE_TIMEOUT."""
    with BlockingConnection(master) as conn:
        return txbroker.send(conn, "BenchStartup", b"sync-probe", 0).code == ResponseCode.SUCCESS


def start_pair(kind: str, args, tools_cp: str, work: Path, role: str) -> tuple[Target, str, Callable[[], None]]:
    """The master (a Target, its brokerRole *role*) and a slave of the same kind; returns the
    master, the slave's address and the slave's stop."""
    extra = {"brokerRole": role}
    if kind == "java":
        cp = java_broker_classpath(args.java_broker, tools_cp)
        master = start_java(args.java_broker, cp, work / "m" / "store", args.java_heap, extra=extra)
        try:
            proc, slave_addr, _ = rocketmq_java.start_broker(
                cp, master.namesrv_addr, broker_name="bench-broker", cluster="BenchCluster",
                home=BenchHome("bench-broker-java-slave", broker_jvm(args.java_heap)), store_root=work / "s" / "store",
                commitlog_size=1 << 30, extra={**BROKER_SETTINGS, **SLAVE})
        except BaseException:
            master.stop()
            raise
        master.info["slave_pid"] = proc.pid
        return master, slave_addr, lambda: proc.stop(grace=30)
    (work / "m").mkdir(parents=True, exist_ok=True)
    master = start_tx(args.tx_mode, work / "m", extra=extra)
    try:
        namesrv_port = int(master.namesrv_addr.rpartition(":")[2])
        port = rocketmq_java.free_port_block()
        (work / "s").mkdir(parents=True, exist_ok=True)
        argv = tx_command_lines(work / "s", namesrv_port, port, "separate", extra=SLAVE)["broker"]
        assert argv is not None
        proc = txharness.TxProcess(argv, work / "s" / "broker.log")
        try:
            proc.wait_for(r"rocketmq-broker listening on")
        except BaseException:
            proc.stop()
            raise
    except BaseException:
        master.stop()
        raise
    master.info["slave_pid"] = proc.proc.pid
    return master, f"127.0.0.1:{port}", lambda: proc.stop(grace=30)


def bench_async(master: Target, slave: str, cp: str, seconds: float, warmup: float) -> dict:
    home = BenchHome("bench-broker-tools", TOOL_JVM)
    addr = master.info["broker_addr"]
    out: dict = {"startup_s": round(master.startup_s, 3)}
    out["first_sync_s"] = round(_poll("the slave holds the first message", lambda: _in_sync(addr, slave),
                                      SYNC_WAIT_S), 3)
    if warmup > 0:
        log(f"{master.name} ASYNC_MASTER: warm-up, Producer, 64 threads, {warmup:.0f} s (not reported)")
        run_producer(cp, home, master.namesrv_addr, "BenchWarmup", 64, warmup, warmup_only=True)
    sampler = LagSampler(addr, slave)
    sampler.start()
    log(f"{master.name} ASYNC_MASTER: Producer, 64 threads, first report + {seconds:.0f} s, lag sampled every second")
    try:
        t0 = time.monotonic()  # the series' zero
        send = run_producer(cp, home, master.namesrv_addr, "BenchHaAsync", 64, seconds, broker_pid=master.broker_pid)
    finally:
        sampler.stop()
    # the samples of the measured window: from the Producer's first report for *seconds*
    start, end = send.pop("window_monotonic")
    lags = [lag for t, _, lag in sampler.samples if start <= t <= end]
    out["send"] = send
    out.update(_lag_figures(lags))
    out["lag_series"] = [[round(t - t0, 2), m, lag] for t, m, lag in sampler.samples]
    out["lag_sample_errors"] = sampler.errors
    out["catch_up_s"] = round(_poll("the slave catches up", lambda: _in_sync(addr, slave), CATCH_UP_TIMEOUT_S), 3)
    out["master_max_offset"] = commitlog_max_offset(addr)
    return out


def bench_sync(master: Target, slave: str, cp: str, seconds: float, warmup: float, latency: bool) -> dict:
    home = BenchHome("bench-broker-tools", TOOL_JVM)
    addr = master.info["broker_addr"]
    out: dict = {"startup_s": round(master.startup_s, 3)}
    out["first_ack_s"] = round(_poll("a send acknowledged by the slave", lambda: _slave_acks(addr), SYNC_WAIT_S), 3)
    if warmup > 0:
        log(f"{master.name} SYNC_MASTER: warm-up, Producer, 64 threads, {warmup:.0f} s (not reported)")
        run_producer(cp, home, master.namesrv_addr, "BenchWarmup", 64, warmup, warmup_only=True)
    sampler = LagSampler(addr, slave)
    sampler.start()
    try:
        log(f"{master.name} SYNC_MASTER: Producer, 64 threads, first report + {seconds:.0f} s")
        out["send"] = run_producer(cp, home, master.namesrv_addr, "BenchHaSync", 64, seconds,
                                   broker_pid=master.broker_pid)
        out["send"].pop("window_monotonic", None)
        if latency:
            log(f"{master.name} SYNC_MASTER: SendLatency (p99), 64 threads, {seconds + 3:.0f} s")
            out["latency"] = run_latency(cp, home, master.namesrv_addr, "BenchHaSyncLatency", 64, seconds)
    finally:
        sampler.stop()
    out.update(_lag_figures([lag for _, _, lag in sampler.samples]))
    out["lag_sample_errors"] = sampler.errors
    # every acknowledged send is on the slave: at the end it holds the master's whole log
    out["catch_up_s"] = round(_poll("the slave holds the master's log", lambda: _in_sync(addr, slave),
                                    CATCH_UP_TIMEOUT_S), 3)
    out["still_acked"] = _slave_acks(addr)
    out["broker_rss_kib"] = rss_kib(master.broker_pid)
    return out


HA_ROWS = [
    # label, getter, goal on tx / Java
    ("ASYNC_MASTER send TPS, 64 threads", lambda r: r["async"]["send"]["send_tps"], ""),
    ("ASYNC_MASTER slave lag, median bytes", lambda r: r["async"]["lag_median_bytes"], "<= 1.0"),
    ("ASYNC_MASTER slave lag, p90 bytes", lambda r: r["async"]["lag_p90_bytes"], ""),
    ("ASYNC_MASTER slave lag, max bytes", lambda r: r["async"]["lag_max_bytes"], ""),
    ("ASYNC_MASTER catch-up after the Producer, s", lambda r: r["async"]["catch_up_s"], ""),
    ("SYNC_MASTER send TPS, 64 threads", lambda r: r["sync"]["send"]["send_tps"], ">= 1.0"),
    ("SYNC_MASTER avg RT ms, 64 threads", lambda r: r["sync"]["send"]["avg_rt_ms"], ""),
    ("SYNC_MASTER p50 ms, 64 threads", lambda r: r["sync"]["latency"]["p50_ms"], ""),
    ("SYNC_MASTER p99 ms, 64 threads", lambda r: r["sync"]["latency"]["p99_ms"], "<= 1.0"),
    ("SYNC_MASTER slave lag, median bytes", lambda r: r["sync"]["lag_median_bytes"], ""),
]


def ha_rows(results: dict[str, dict]) -> list[dict]:
    java_name = next((n for n in results if n.startswith("Java")), None)
    rows = []
    for label, getter, goal in HA_ROWS:
        row: dict = {"figure": label}
        for name, r in results.items():
            row[name] = get(r if "error" not in r else None, getter)
        if "rocketmq_tx" in results and java_name is not None:
            tx, java = row["rocketmq_tx"], row[java_name]
            q = ratio(tx, java)
            row["tx_over_java"] = None if q is None else round(q, 3)
            if goal:
                row["goal"] = f"tx / Java {goal}"
                bound = float(goal.split()[1])
                if goal.startswith(">="):
                    row["met"] = None if q is None else q >= bound
                elif tx is not None and java is not None:
                    row["met"] = tx <= java if java == 0 else q is not None and q <= bound
        rows.append(row)
    return rows


def bench_ha(kind: str, name: str, args, tools_cp: str, work: Path, seconds: float, warmup: float) -> dict:
    """Both pairs of one target, each fresh, stopped after its phase."""
    out: dict = {"name": name}
    for role, key in (("ASYNC_MASTER", "async"), ("SYNC_MASTER", "sync")):
        log(f"{name}: starting an {role} and its slave")
        master, slave, stop_slave = start_pair(kind, args, tools_cp, work / key, role)
        try:
            out.setdefault("broker_addrs", {})[key] = [master.info["broker_addr"], slave]
            if key == "async":
                out[key] = bench_async(master, slave, tools_cp, seconds, warmup)
            else:
                out[key] = bench_sync(master, slave, tools_cp, seconds, warmup, not args.no_latency)
        finally:
            stop_slave()
            master.stop()
    return out


def measured_ha(kind: str, name: str, args, tools_cp: str, seconds: float, warmup: float) -> dict:
    """:func:`bench_ha` on a fresh work directory, with the load average at start and end; a
    failed target keeps its logs and reports its error (as ``phases.measured``)."""
    WORK.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"broker-ha-{kind}-", dir=WORK))
    load_start = os.getloadavg()[0]
    result: dict | None = None
    try:
        log(f"{name}: work dir {work}; load average {load_start:.2f}")
        result = bench_ha(kind, name, args, tools_cp, work, seconds, warmup)
    except Exception as e:  # noqa: BLE001 - report the other target anyway
        traceback.print_exc()
        result = {"name": name, "error": f"{type(e).__name__}: {e}"}
    finally:
        if result is None:
            result = {"name": name, "error": "interrupted"}
        result["loadavg_1min"] = [round(load_start, 2), round(os.getloadavg()[0], 2)]
        if not args.keep and "error" not in result:
            shutil.rmtree(work, ignore_errors=True)
            for home in HOMES:
                shutil.rmtree(home, ignore_errors=True)
        HOMES.clear()
    return result


def summarize(raw: dict, raw_path=None) -> dict:
    """The JSON summary of a ``--ha`` raw results file."""
    results = raw["results"]
    settings = {k: raw.get(k) for k in ("seconds", "warmup_phase_s", "body_size", "tools", "cpus")
                if raw.get(k) is not None}
    settings["flushDiskType"] = raw.get("broker_settings", {}).get("flushDiskType")
    settings["java_heap"] = next((a[4:] for a in raw.get("broker_jvm", ()) if a.startswith("-Xmx")), None)
    return {
        "bench": "broker-ha", "started": raw.get("started"), "commit": raw.get("commit"),
        "command": raw.get("command"), "raw_results": raw_path.name if raw_path else None, "settings": settings,
        "loadavg_1min": {n: r.get("loadavg_1min") for n, r in results.items()},
        "errors": {n: r["error"] for n, r in results.items() if "error" in r} or None,
        "figures": ha_rows(results),
    }


__all__ = ["measured_ha", "ha_rows", "summarize"]
