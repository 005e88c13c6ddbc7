"""
The load tools: the official benchmark Producer and Consumer and our SendLatency (JVMs on
the bench/broker/java classpath), what they print and how it is read, and our
BlockingProducer's own send loop (``--tls``). Each phase creates its topic first.
"""

from __future__ import annotations

import contextlib
import json
import re
import signal
import statistics
import subprocess
import threading
import time

import rocketmq_java

from rocketmq_tx.common.message import Message

from .peers import cpu_seconds
from .security import ACL_PRODUCER_ARGS, JAVA_TLS_CLIENT, py_producer
from .settings import BENCH_PKG, BODY_SIZE, PRODUCER_PROPS

FIRST_REPORT_TIMEOUT = 120.0

SEND_RE = re.compile(r"Send TPS: (\d+) \| Max RT\(ms\): (\d+) \| Average RT\(ms\):\s*([\d.NaN]+) \| "
                     r"Send Failed: (\d+) \| Response Failed: (\d+)")
CONSUME_RE = re.compile(r"Consume TPS: (\d+) \| AVG\(B2C\) RT\(ms\):\s*([\d.NaN]+) \| "
                        r"AVG\(S2C\) RT\(ms\):\s*([\d.NaN]+) \| MAX\(B2C\) RT\(ms\): (\d+) \| "
                        r"MAX\(S2C\) RT\(ms\): (\d+) \| Consume Fail: (\d+)")


class Tool:
    """A benchmark tool JVM; stdout lines are kept with their arrival time."""

    def __init__(self, classpath: str, home: rocketmq_java.JavaHome, main: str, args: list[str],
                 props: tuple[str, ...] = ()) -> None:
        main = main if "." in main else f"{BENCH_PKG}.{main}"
        self.argv = ["java", *home.jvm_args(), *props, "-cp", classpath, main, *args]
        main = main.rsplit(".", 1)[-1]
        self.stderr_path = home.root / f"{main}-{time.monotonic_ns()}.stderr"
        with open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err,
                                         cwd=str(home.root), env=home.env(), start_new_session=True)
        self.lines: list[tuple[float, str]] = []
        self._cond = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            with self._cond:
                self.lines.append((time.monotonic(), raw.decode("utf-8", "replace").rstrip()))
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def wait_for(self, pattern: str, timeout: float) -> None:
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self._cond:
            while not any(rx.search(line) for _, line in self.lines):
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{self.argv[-1]}: no {pattern!r} (exit {self.proc.poll()}); stderr "
                                       f"{self.stderr_path}:\n{self.stderr_tail()}")
                self._cond.wait(0.5)

    def stderr_tail(self, n: int = 20) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.stderr_path.read_text(errors="replace").splitlines()[-n:])
        return ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(15)
        self._reader.join(5)


# --------------------------------------------------------------------------- their output

def mean(values: list[float]) -> float | None:
    """The mean, NaN dropped (a window without messages), rounded; None if nothing is left."""
    values = [v for v in values if v == v]
    return round(statistics.fmean(values), 3) if values else None


def parse_producer(lines: list[tuple[float, str]]) -> dict:
    rows = [m.groups() for _, line in lines if (m := SEND_RE.search(line))]
    if not rows:
        return {"reports": 0}
    return {
        "reports": len(rows),
        "send_tps": mean([float(r[0]) for r in rows]),
        "send_tps_last": int(rows[-1][0]),
        "avg_rt_ms": mean([float(r[2]) for r in rows]),
        "max_rt_ms": int(rows[-1][1]),  # the tool's maximum since its start
        "send_failed": int(rows[-1][3]),
        "response_failed": int(rows[-1][4]),
    }


def parse_consumer(lines: list[tuple[float, str]], until: float) -> dict:
    rows = [m.groups() for t, line in lines if t <= until and (m := CONSUME_RE.search(line))]
    if not rows:
        return {"reports": 0}
    return {
        "reports": len(rows),
        "consume_tps": mean([float(r[0]) for r in rows]),
        "avg_b2c_ms": mean([float(r[1]) for r in rows]),
        "avg_s2c_ms": mean([float(r[2]) for r in rows]),
        "max_b2c_ms": max(int(r[3]) for r in rows),  # the tool resets its maxima at every report
        "consume_fail": sum(int(r[5]) for r in rows),  # per-window counts; windows overlap
    }


# --------------------------------------------------------------------------- the phases' tools

def ensure_topic(namesrv_addr: str, topic: str, tls: bool = False, acl: bool = False) -> None:
    """Create *topic* (4 queues, as the tools' auto-creation would) and wait for its route, so
    that no phase measures topic auto-creation, and a consumer finds its topic at once (it
    would only see an unknown topic at its next route poll, 30 s later)."""
    with py_producer("bench_topic_maker", namesrv_addr, tls, acl) as p:
        p.send(Message(topic=topic, body=b"x" * BODY_SIZE))
        deadline = time.monotonic() + 60
        while True:
            try:
                p.client.route(topic, refresh=True)
                return
            except Exception:  # noqa: BLE001 - not registered with the name server yet
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)


def producer_args(namesrv_addr: str, topic: str, threads: int) -> list[str]:
    return ["-n", namesrv_addr, "-t", topic, "-w", str(threads), "-s", str(BODY_SIZE), "-ri", "1000"]


def run_producer(cp: str, home: rocketmq_java.JavaHome, namesrv_addr: str, topic: str, threads: int,
                 seconds: float, warmup_only: bool = False, tls: bool = False, acl: bool = False,
                 broker_pid: int | None = None) -> dict:
    """The Producer until its first report (10 s after it starts), then *seconds* more (or,
    *warmup_only*, just *seconds* from its launch); *tls*: the Producer (and the topic maker)
    over TLS; *acl*: both signing with the bench account. With *broker_pid*, also the CPU
    time the broker and the Producer spent per message over the *seconds* after the first
    report (CPU time over that window / (the tool's mean send TPS x the window))."""
    ensure_topic(namesrv_addr, topic, tls, acl)
    tool = Tool(cp, home, "Producer",
                producer_args(namesrv_addr, topic, threads) + list(ACL_PRODUCER_ARGS if acl else ()),
                PRODUCER_PROPS + (JAVA_TLS_CLIENT if tls else ()))
    cpu: list[tuple[float, float | None, float | None]] = []
    try:
        if not warmup_only:
            tool.wait_for(r"Send TPS", FIRST_REPORT_TIMEOUT)
            cpu.append((time.monotonic(), cpu_seconds(broker_pid), cpu_seconds(tool.proc.pid)))
        time.sleep(seconds + 0.5)
        if cpu:
            cpu.append((time.monotonic(), cpu_seconds(broker_pid), cpu_seconds(tool.proc.pid)))
    finally:
        tool.stop()
    result = parse_producer(tool.lines)
    result["lines"] = [line for _, line in tool.lines]
    if not warmup_only and not result["reports"]:
        raise RuntimeError(f"Producer printed no figures; stderr {tool.stderr_path}:\n{tool.stderr_tail()}")
    if len(cpu) == 2:  # the measured window (time.monotonic()), for samplers running beside it (--ha)
        result["window_monotonic"] = [cpu[0][0], cpu[1][0]]
    if len(cpu) == 2 and result.get("send_tps"):
        (t0, b0, p0), (t1, b1, p1) = cpu
        messages = result["send_tps"] * (t1 - t0)
        for who, start, end in (("broker", b0, b1), ("producer", p0, p1)):
            if start is not None and end is not None:
                result[f"{who}_cpu_pct"] = round((end - start) / (t1 - t0) * 100, 1)
                result[f"{who}_cpu_us_per_msg"] = round((end - start) / messages * 1e6, 2)
    return result


def run_consumer(cp: str, home: rocketmq_java.JavaHome, namesrv_addr: str, topic: str, seconds: float) -> dict:
    ensure_topic(namesrv_addr, topic)
    consumer = Tool(cp, home, "Consumer", ["-n", namesrv_addr, "-t", topic, "-g", "bench_consumer", "-ri", "1000"])
    producer = None
    try:
        consumer.wait_for(r"Consumer Started", 60)
        producer = Tool(cp, home, "Producer", producer_args(namesrv_addr, topic, 64), PRODUCER_PROPS)
        producer.wait_for(r"Send TPS", FIRST_REPORT_TIMEOUT)
        time.sleep(seconds + 0.5)
        until = time.monotonic()
    finally:
        if producer is not None:
            producer.stop()
        consumer.stop()
    result = parse_consumer(consumer.lines, until)
    result["producer"] = parse_producer(producer.lines)
    result["lines"] = [line for _, line in consumer.lines]
    if not result["reports"]:
        raise RuntimeError(f"Consumer printed no figures; stderr {consumer.stderr_path}:\n{consumer.stderr_tail()}")
    return result


def run_latency(cp: str, home: rocketmq_java.JavaHome, namesrv_addr: str, topic: str, threads: int,
                seconds: float) -> dict:
    """Our SendLatency probe (official client, same loop as the Producer): percentiles."""
    ensure_topic(namesrv_addr, topic)
    tool = Tool(cp, home, "rocketmq.bench.SendLatency",
                [namesrv_addr, topic, str(threads), str(BODY_SIZE), "3", str(seconds)], PRODUCER_PROPS)
    try:
        deadline = time.monotonic() + seconds + 120
        while tool.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        tool.stop()
    for _, line in reversed(tool.lines):
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError(f"SendLatency printed no result; stderr {tool.stderr_path}:\n{tool.stderr_tail()}")


def py_send_loop(namesrv_addr: str, topic: str, seconds: float, tls: bool) -> dict:
    """
    --tls: our BlockingProducer (stdlib ``ssl``, a different TLS stack from the Java
    Producer's) sending 1 KiB messages one at a time for *seconds* after 1 s of warm-up;
    every send timed. Its TLS / plaintext difference against each broker, set beside the
    Java Producer's, separates the Java client's own TLS cost from the broker's.
    """
    body = b"x" * BODY_SIZE
    rts: list[float] = []
    failed = 0
    with py_producer("bench_py_send", namesrv_addr, tls, send_timeout=3.0) as producer:
        for phase_end, keep in ((time.monotonic() + 1.0, False), (time.monotonic() + 1.0 + seconds, True)):
            while time.monotonic() < phase_end:
                t = time.perf_counter()
                try:
                    producer.send(Message(topic=topic, body=body))
                except Exception:  # noqa: BLE001 - counted, as the Java tool counts its failures
                    if keep:
                        failed += 1
                    continue
                if keep:
                    rts.append(time.perf_counter() - t)
    rts.sort()
    return {"sends": len(rts), "failed": failed,
            "avg_rt_ms": round(statistics.fmean(rts) * 1000, 4) if rts else None,
            "p50_rt_ms": round(rts[len(rts) // 2] * 1000, 4) if rts else None}
