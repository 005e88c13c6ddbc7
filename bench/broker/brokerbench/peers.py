"""
The peers: a Java or a rocketmq_tx name server + broker started fresh on an empty store,
ready once a send is acknowledged (which also times the start-up); the Java classpaths
(resolved by Maven from bench/broker/java); and /proc readings of a running process.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import rocketmq_java
import txharness
from _common import javaharness as jh

from rocketmq_tx.common.message import Message

from .security import ACL_SERVER, JAVA_TLS_SERVER, TX_TLS_SERVER, java_acl_settings, py_producer, write_acl_file
from .settings import BROKER_SETTINGS, JAVA_PROJECT, NAMESRV_JVM, TOOLS_VERSION, WORK, broker_jvm, log

# --------------------------------------------------------------------------- /proc


def rss_kib(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _cpu_times(pid: int) -> tuple[float, float]:
    """User and system CPU seconds of process *pid* (all its threads), from /proc/<pid>/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def cpu_seconds(pid: int | None) -> float | None:
    """User + system CPU time of process *pid* (all its threads), from /proc/<pid>/stat."""
    if pid is None:
        return None
    try:
        return sum(_cpu_times(pid))
    except (OSError, IndexError):
        return None


def process_counters(pid: int | None) -> dict[str, float] | None:
    """What /proc says process *pid* did so far (all its threads): user and system CPU
    seconds, and voluntary / involuntary context switches summed over its threads."""
    if pid is None:
        return None
    try:
        utime, stime = _cpu_times(pid)
        out: dict[str, float] = {"utime_s": utime, "stime_s": stime,
                                 "voluntary_ctxt_switches": 0, "nonvoluntary_ctxt_switches": 0}
        for task in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{task}/status") as f:
                    for line in f:
                        key, _, value = line.partition(":")
                        if key in ("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches"):
                            out[key] += int(value)
            except OSError:  # a thread that ended meanwhile
                pass
        return out
    except (OSError, IndexError, ValueError):
        return None


# --------------------------------------------------------------------------- Java classpaths

def tools_classpath() -> str:
    """The Java side's classpath: bench/broker/java's classes (SendLatency) + rocketmq-example,
    broker and namesrv 5.5.0 with their dependencies; Maven runs when a source is newer."""
    target = JAVA_PROJECT / "target"
    cp_file = target / "classpath.txt"
    classes = target / "classes"
    pom = JAVA_PROJECT / "pom.xml"
    newest = max(p.stat().st_mtime for p in [pom, *(JAVA_PROJECT / "src").rglob("*.java")])
    if not (cp_file.is_file() and classes.is_dir() and cp_file.stat().st_mtime >= newest
            and all(os.path.exists(e) for e in cp_file.read_text().strip().split(os.pathsep))):
        cmd = ["mvn", "-q", "-B", "-f", str(pom), "package", "dependency:build-classpath",
               f"-Dmdep.outputFile={cp_file}", "-DskipTests"]
        log(" ".join(cmd))
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=1500, cwd=JAVA_PROJECT)
        if out.returncode != 0:
            raise RuntimeError(f"maven failed ({out.returncode}):\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
        cp_file.touch()
    return os.pathsep.join([str(classes), cp_file.read_text().strip()])


def java_broker_classpath(version: str, tools_cp: str) -> str:
    if version == TOOLS_VERSION:
        return tools_cp
    if version == "4.9.7":  # compat-tests/java's default build: client 4.9.8, broker/namesrv 4.9.7
        return jh.build("4")
    raise SystemExit(f"--java-broker must be {TOOLS_VERSION} or 4.9.7, not {version}")


#: every BenchHome made by this run (removed at the end unless --keep)
HOMES: list[Path] = []


class BenchHome(rocketmq_java.JavaHome):
    """A JavaHome (under compat-tests/.work) whose JVM gets *heap* options instead of the
    harness's -Xmx512m/SerialGC."""

    def __init__(self, label: str, heap: tuple[str, ...]) -> None:
        WORK.mkdir(parents=True, exist_ok=True)
        super().__init__(label)
        HOMES.append(self.root)
        self.heap = list(heap)

    def jvm_args(self) -> list[str]:
        return self.heap + super().jvm_args()[len(jh.DEFAULT_JVM_ARGS):]


# --------------------------------------------------------------------------- readiness probe

class FirstAck(threading.Thread):
    """Sends one small message through *namesrv_addr* every 20 ms until the broker acknowledges one."""

    def __init__(self, namesrv_addr: str, timeout: float = 180.0, tls: bool = False, acl: bool = False) -> None:
        super().__init__(name="first-ack", daemon=True)
        self.namesrv_addr = namesrv_addr
        self.tls = tls
        self.acl = acl
        self.timeout = timeout
        self.acked_at: float | None = None
        self.attempts = 0
        self.last_error = ""
        self._cancelled = threading.Event()

    def run(self) -> None:
        deadline = time.monotonic() + self.timeout
        with py_producer("bench_startup_probe", self.namesrv_addr, self.tls, self.acl, send_timeout=1.0,
                         retry_times_when_send_failed=0) as producer:
            while not self._cancelled.is_set() and time.monotonic() < deadline:
                self.attempts += 1
                try:
                    producer.send(Message(topic="BenchStartup", body=b"x" * 16))
                except Exception as e:  # noqa: BLE001 - anything short of an ack means "not yet"
                    self.last_error = f"{type(e).__name__}: {e}"
                    self._cancelled.wait(0.02)
                    continue
                self.acked_at = time.monotonic()
                return

    def result(self, t0: float, proc: subprocess.Popen | None = None) -> float:
        """Seconds from *t0* to the first ack; gives up early if *proc* (the broker) exits."""
        while self.is_alive():
            self.join(0.05)
            if proc is not None and proc.poll() is not None and self.acked_at is None:
                self.cancel()
                raise RuntimeError(f"the broker exited with {proc.returncode} before any send was acknowledged")
        if self.acked_at is None:
            raise RuntimeError(f"no acknowledged send within {self.timeout:.0f}s "
                               f"({self.attempts} attempts; last: {self.last_error})")
        return self.acked_at - t0

    def cancel(self) -> None:
        self._cancelled.set()


# --------------------------------------------------------------------------- targets

@dataclass
class Target:
    """A running name server + broker of one kind."""

    name: str
    namesrv_addr: str
    broker_pid: int
    namesrv_pid: int | None
    startup_s: float
    stop: Callable[[], None]
    info: dict = field(default_factory=dict)


def start_java(version: str, classpath: str, store: Path, heap: str = "8g", tls: bool = False,
               acl: bool = False, extra: dict[str, str] | None = None) -> Target:
    """*extra*: broker.conf keys over BROKER_SETTINGS (``--ha``: the master's brokerRole)."""
    ns_home = BenchHome("bench-broker-java-namesrv", NAMESRV_JVM)
    port = jh.free_port()
    conf = ns_home.root / "namesrv.properties"
    conf.write_text(f"listenPort={port}\nkvConfigPath={ns_home.root / 'kvConfig.json'}\n"
                    f"configStorePath={ns_home.root / 'namesrv.conf.store'}\n")
    t = time.monotonic()
    namesrv = rocketmq_java._spawn(classpath, "org.apache.rocketmq.namesrv.NamesrvStartup", ["-c", str(conf)],
                                   ns_home, r"The Name Server boot success", props=JAVA_TLS_SERVER if tls else None)
    ns_boot = time.monotonic() - t
    addr = f"127.0.0.1:{port}"
    broker = None
    probe = FirstAck(addr, tls=tls, acl=acl)
    try:
        broker_home = BenchHome("bench-broker-java-broker", broker_jvm(heap))
        if acl:
            write_acl_file(broker_home.root)
        probe.start()
        t0 = time.monotonic()
        broker, broker_addr, _ = rocketmq_java.start_broker(
            classpath, addr, broker_name="bench-broker", cluster="BenchCluster", home=broker_home,
            store_root=store, commitlog_size=1 << 30,
            extra={**BROKER_SETTINGS, **(java_acl_settings(version) if acl else {}), **(extra or {})},
            props={**JAVA_TLS_SERVER, "tls.enable": "true"} if tls else None)
        boot_line = time.monotonic() - t0
        startup = probe.result(t0, broker.proc)
    except BaseException:
        probe.cancel()
        if broker is not None:
            broker.stop(grace=30)
        namesrv.stop()
        raise

    def stop() -> None:
        broker.stop(grace=30)
        namesrv.stop()

    return Target(f"Java {version}", addr, broker.pid, namesrv.pid, startup, stop,
                  {"namesrv_boot_s": round(ns_boot, 3), "broker_boot_success_line_s": round(boot_line, 3),
                   "broker_addr": broker_addr, "broker_jvm": list(broker_jvm(heap)), "tls": tls, "acl": acl,
                   **({"acl_settings": java_acl_settings(version)} if acl else {})})


def tx_command_lines(work: Path, namesrv_port: int, broker_port: int, mode: str,
                     tls: bool = False, acl: bool = False,
                     extra: dict[str, str] | None = None) -> dict[str, list[str] | None]:
    """
    THE rocketmq_tx command lines: edit here when the broker's flags settle.

    Returns ``{"namesrv": argv or None, "broker": argv}``. In ``separate`` mode the name
    server runs as its own twistd process (started and waited for first, like Java's) and
    the broker is ``twistd -n rocketmq-broker -c broker.conf``; in ``standalone`` mode one
    ``twistd -n rocketmq-standalone`` process is both and is what start-up and RSS measure.
    *work* holds broker.conf (BROKER_SETTINGS + ports + store paths, the keys Java's
    broker.conf uses) and the store. *tls*: the servers in enforcing mode, test mode
    (TX_TLS_SERVER), and the separate broker registering over TLS. *acl*: ACL_SERVER, with
    *work* as rocketmqHome (its conf/plain_acl.yml is ACL_YML). *extra*: keys over those
    (``--ha``: brokerRole, and brokerId for the slave).
    """
    store = work / "store"
    conf = {
        "brokerClusterName": "BenchCluster", "brokerName": "bench-broker", "brokerId": "0",
        "brokerIP1": "127.0.0.1", "listenPort": str(broker_port), "namesrvAddr": f"127.0.0.1:{namesrv_port}",
        "storePathRootDir": str(store), "storePathCommitLog": str(store / "commitlog"),
        **BROKER_SETTINGS, **(extra or {}),
    }
    if acl:
        write_acl_file(work)
        conf.update(ACL_SERVER, rocketmqHome=str(work))
    conf_path = work / "broker.conf"
    conf_path.write_text("".join(f"{k}={v}\n" for k, v in conf.items()))
    twistd = txharness.twistd()
    tls_sets = [a for kv in TX_TLS_SERVER for a in ("--set", kv)] if tls else []
    if mode == "separate":
        return {
            "namesrv": [*twistd, "-n", "--pidfile=", "rocketmq-namesrv", "--set", f"listenPort={namesrv_port}",
                        "--set", "bindAddress=127.0.0.1", "--set", f"kvConfigPath={work / 'kvConfig.json'}",
                        *tls_sets],
            "broker": [*twistd, "-n", "--pidfile=", "rocketmq-broker", "-c", str(conf_path),
                       *tls_sets, *(["--set", "tls.enable=true"] if tls else [])],
        }
    if mode == "standalone":
        # The in-process name server is namesrvPort/namesrvBindAddress; the broker registers
        # with it by itself (a namesrvAddr in the file would be registered with as well).
        conf_path.write_text("".join(f"{k}={v}\n" for k, v in conf.items() if k != "namesrvAddr"))
        return {
            "namesrv": None,
            "broker": [*twistd, "-n", "--pidfile=", "rocketmq-standalone", "-c", str(conf_path),
                       "--set", f"namesrvPort={namesrv_port}", "--set", "namesrvBindAddress=127.0.0.1", *tls_sets],
        }
    raise ValueError(f"unknown tx mode {mode!r}")


def start_tx(mode: str, work: Path, tls: bool = False, acl: bool = False,
             extra: dict[str, str] | None = None) -> Target:
    namesrv_port = jh.free_port()
    broker_port = rocketmq_java.free_port_block()
    argv = tx_command_lines(work, namesrv_port, broker_port, mode, tls, acl, extra)
    txharness.WORK.mkdir(exist_ok=True)
    namesrv = None
    ns_boot = None
    if argv["namesrv"] is not None:
        t = time.monotonic()
        namesrv = txharness.TxProcess(argv["namesrv"], work / "namesrv.log")
        try:
            namesrv.wait_for(r"rocketmq-namesrv listening on")
        except BaseException:
            namesrv.stop()
            raise
        ns_boot = time.monotonic() - t
    addr = f"127.0.0.1:{namesrv_port}"
    probe = FirstAck(addr, tls=tls, acl=acl)
    probe.start()
    t0 = time.monotonic()
    broker_argv = argv["broker"]
    assert broker_argv is not None
    broker = txharness.TxProcess(broker_argv, work / "broker.log")
    try:
        startup = probe.result(t0, broker.proc)
    except BaseException as e:
        probe.cancel()
        tail = "\n".join(broker.lines[-20:])
        broker.stop()
        if namesrv is not None:
            namesrv.stop()
        raise RuntimeError(f"{' '.join(broker_argv[2:])}: {e}\n--- broker output (tail) ---\n{tail}") from None

    def stop() -> None:
        broker.stop(grace=30)
        if namesrv is not None:
            namesrv.stop()

    return Target("rocketmq_tx", addr, broker.proc.pid, namesrv.proc.pid if namesrv else None, startup, stop,
                  {"namesrv_boot_s": None if ns_boot is None else round(ns_boot, 3), "mode": mode, "tls": tls,
                   "broker_addr": f"127.0.0.1:{broker_port}",
                   "acl": acl,
                   "broker_argv": broker_argv, "namesrv_argv": argv["namesrv"]})
