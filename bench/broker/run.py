"""
Broker benchmark, side by side: the official RocketMQ benchmark Producer and Consumer
(``org.apache.rocketmq.example.benchmark`` from the ``rocketmq-example`` 5.5.0 artifact)
against rocketmq_tx's broker and against the official Java broker, in one run, with the
same settings.

    python3 bench/broker/run.py [--seconds 20] [--targets java,tx] [--java-broker 5.5.0|4.9.7]
                                [--tx-mode separate|standalone] [--warmup 15] [--no-latency] [--keep]
                                [--flush async|sync]
    python3 bench/broker/run.py --tls [--one-thread] [--seconds 10] [--warmup 10] [--targets java,tx] ...

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
``bench/broker/results-<UTC timestamp>.json`` (all raw tool lines included).

The rocketmq_tx command lines are built by :func:`tx_command_lines` (one place to adjust).

``--tls`` (TLS compare, issue #7) measures only send TPS: for each target, plaintext and
then TLS, each on fresh processes, a ``--warmup`` (default 10 s) and the Producer with 1
thread, our BlockingProducer with 1 thread (see :func:`client_bound`), and the Producer with 64
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
Producer's CPU time per message in each measured phase (/proc, :func:`run_producer`).
It prints ACL / plain per target and (tx ratio) / (Java ratio),
above 1 when ACL costs rocketmq_tx relatively less than Java, with the medians over
``--rounds``, and writes ``bench/broker/results-acl-<UTC timestamp>.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import logging
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "compat-tests"))

from _common import javaharness as jh, table  # noqa: E402
import rocketmq_java  # noqa: E402
import txharness  # noqa: E402

from rocketmq_tx.blocking.client import BlockingProducer  # noqa: E402
from rocketmq_tx.blocking.connection import BlockingRemotingClient  # noqa: E402
from rocketmq_tx.common.message import Message  # noqa: E402
from rocketmq_tx.tlsconfig import TlsSettings  # noqa: E402

JAVA_PROJECT = HERE / "java"
WORK = ROOT / "bench" / ".work"

TOOLS_VERSION = "5.5.0"
BENCH_PKG = "org.apache.rocketmq.example.benchmark"
BODY_SIZE = 1024
WARMUP = 10.0  # the tools' first report comes after 10 one-second snapshots

# --------------------------------------------------------------------------- settings

#: broker.conf keys given to both brokers (everything else: Java's defaults). Java's
#: defaults also for the flow-control timeouts (waitTimeMillsInSendQueue=200,
#: osPageCacheBusyTimeOutMills=1000) and the 1 GiB CommitLog files, which the compat
#: helpers otherwise relax.
BROKER_SETTINGS = {
    "flushDiskType": "ASYNC_FLUSH",
    "brokerRole": "ASYNC_MASTER",
    "autoCreateTopicEnable": "true",
    "waitTimeMillsInSendQueue": "200",
    "osPageCacheBusyTimeOutMills": "1000",
    "mappedFileSizeCommitLog": str(1 << 30),
    "deleteWhen": "04",
    "fileReservedTime": "48",
    "diskMaxUsedSpaceRatio": "75",
}

#: runbroker.sh (5.5.0 and 4.9.7 agree; Java >= 9 branch) minus -XX:+AlwaysPreTouch (it would
#: make RSS the 8 GiB heap and add the pre-touch to start-up; leaving it out favours Java on
#: both counts) and minus the GC log file.
BROKER_JVM = ("-server", "-Xms8g", "-Xmx8g", "-XX:+UseG1GC", "-XX:G1HeapRegionSize=16m", "-XX:G1ReservePercent=25",
              "-XX:InitiatingHeapOccupancyPercent=30", "-XX:SoftRefLRUPolicyMSPerMB=0",
              "-XX:-OmitStackTraceInFastThrow", "-XX:MaxDirectMemorySize=15g", "-XX:-UseLargePages")
#: runserver.sh (Java >= 9 branch) minus the GC log file.
NAMESRV_JVM = ("-server", "-Xms4g", "-Xmx4g", "-XX:MetaspaceSize=128m", "-XX:MaxMetaspaceSize=320m",
               "-XX:+UseG1GC", "-XX:G1HeapRegionSize=16m", "-XX:G1ReservePercent=25",
               "-XX:InitiatingHeapOccupancyPercent=30", "-XX:SoftRefLRUPolicyMSPerMB=0",
               "-XX:-OmitStackTraceInFastThrow", "-XX:-UseLargePages")
#: benchmark/runclass.sh (its CMS flags do not exist on Java 17: G1, the default, instead).
TOOL_JVM = ("-server", "-Xms1g", "-Xmx1g", "-Xmn256m", "-XX:+UseG1GC", "-XX:-OmitStackTraceInFastThrow",
            "-XX:-UseLargePages", "-XX:+PerfDisableSharedMem")
#: benchmark/producer.sh passes this to the Producer (SEND_MESSAGE_V2 headers).
PRODUCER_PROPS = ("-Dorg.apache.rocketmq.client.sendSmartMsg=true",)

# TLS (--tls): Java's test mode, the configuration Java ships with: the servers present a
# self-signed certificate and nobody verifies anything; the servers are in enforcing mode,
# so a plaintext connection is refused and every figure of a TLS run is over TLS.
#: JVM system properties of the Java name server and broker (the broker also gets tls.enable
#: so that it registers with the enforcing name server over TLS).
JAVA_TLS_SERVER = {"tls.server.mode": "enforcing", "tls.test.mode.enable": "true", "tls.config.file": "/nonexistent"}
#: JVM system properties of the client tools (ClientConfig.useTLS defaults to tls.enable).
JAVA_TLS_CLIENT = ("-Dtls.enable=true", "-Dtls.test.mode.enable=true", "-Dtls.config.file=/nonexistent")
#: --set overrides of our name server and broker (tls.test.mode.enable=true is our default too;
#: the separate broker also gets tls.enable=true, standalone registers over TLS by itself).
TX_TLS_SERVER = ("tls.server.mode=enforcing", "tls.config.file=")

# ACL (--acl): one account, allowed everything a Producer needs, in every broker's
# $ROCKETMQ_HOME/conf/plain_acl.yml; every client signs with it.
ACL_ACCESS_KEY = "benchUser01"
ACL_SECRET_KEY = "benchSecret1"
ACL_YML = (f"accounts:\n- accessKey: {ACL_ACCESS_KEY}\n  secretKey: {ACL_SECRET_KEY}\n  admin: false\n"
           "  defaultTopicPerm: PUB|SUB\n  defaultGroupPerm: PUB|SUB\n")
#: broker.conf keys of the Java 4.9.7 broker and ours: ACL 1.0.
ACL_SERVER = {"aclEnable": "true"}
#: broker.conf keys of the Java 5.5.0 broker: ACL 2.0, its users and ACLs migrated from plain_acl.yml.
JAVA5_ACL = {
    "authenticationEnabled": "true",
    "authenticationProvider": "org.apache.rocketmq.auth.authentication.provider.DefaultAuthenticationProvider",
    "authenticationMetadataProvider":
        "org.apache.rocketmq.auth.authentication.provider.LocalAuthenticationMetadataProvider",
    "authorizationEnabled": "true",
    "authorizationProvider": "org.apache.rocketmq.auth.authorization.provider.DefaultAuthorizationProvider",
    "authorizationMetadataProvider":
        "org.apache.rocketmq.auth.authorization.provider.LocalAuthorizationMetadataProvider",
    "migrateAuthFromV1Enabled": "true",
}
#: The Producer's options for signing (the benchmark tool's own -a/-ak/-sk).
ACL_PRODUCER_ARGS = ("-a", "true", "-ak", ACL_ACCESS_KEY, "-sk", ACL_SECRET_KEY)


def write_acl_file(home: Path) -> None:
    (home / "conf").mkdir(parents=True, exist_ok=True)
    (home / "conf" / "plain_acl.yml").write_text(ACL_YML)


def java_acl_settings(version: str) -> dict[str, str]:
    return dict(JAVA5_ACL) if version.startswith("5.") else dict(ACL_SERVER)


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def rss_kib(pid: int) -> Optional[int]:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
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

def py_producer(group: str, namesrv_addr: str, tls: bool = False, acl: bool = False, **kwargs) -> BlockingProducer:
    """A BlockingProducer (the probe and topic maker); *tls*: over TLS, test mode (no verification);
    *acl*: signing with the bench account."""
    if acl:
        kwargs.setdefault("access_key", ACL_ACCESS_KEY)
        kwargs.setdefault("secret_key", ACL_SECRET_KEY)
    producer = BlockingProducer(group, namesrv_addr, **kwargs)
    if tls:  # BlockingProducer has no TLS option; its remoting client does
        producer.client.remoting.close()
        producer.client.remoting = BlockingRemotingClient(
            connect_timeout=producer.client.connect_timeout, tls=TlsSettings.from_sources({"tls.config.file": ""}))
    return producer


class FirstAck(threading.Thread):
    """Sends one small message through *namesrv_addr* every 20 ms until the broker acknowledges one."""

    def __init__(self, namesrv_addr: str, timeout: float = 180.0, tls: bool = False, acl: bool = False) -> None:
        super().__init__(name="first-ack", daemon=True)
        self.namesrv_addr = namesrv_addr
        self.tls = tls
        self.acl = acl
        self.timeout = timeout
        self.acked_at: Optional[float] = None
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

    def result(self, t0: float, proc: Optional[subprocess.Popen] = None) -> float:
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
    namesrv_pid: Optional[int]
    startup_s: float
    stop: Callable[[], None]
    info: dict = field(default_factory=dict)


def broker_jvm(heap: str) -> tuple[str, ...]:
    """BROKER_JVM with -Xms/-Xmx set to *heap* (runbroker.sh's 8g unless --java-heap)."""
    return tuple(f"-Xms{heap}" if a.startswith("-Xms") else f"-Xmx{heap}" if a.startswith("-Xmx") else a
                 for a in BROKER_JVM)


def start_java(version: str, classpath: str, store: Path, heap: str = "8g", tls: bool = False,
               acl: bool = False) -> Target:
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
            extra={**BROKER_SETTINGS, **(java_acl_settings(version) if acl else {})},
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
                     tls: bool = False, acl: bool = False) -> dict[str, Optional[list[str]]]:
    """
    THE rocketmq_tx command lines: edit here when the broker's flags settle.

    Returns ``{"namesrv": argv or None, "broker": argv}``. In ``separate`` mode the name
    server runs as its own twistd process (started and waited for first, like Java's) and
    the broker is ``twistd -n rocketmq-broker -c broker.conf``; in ``standalone`` mode one
    ``twistd -n rocketmq-standalone`` process is both and is what start-up and RSS measure.
    *work* holds broker.conf (BROKER_SETTINGS + ports + store paths, the keys Java's
    broker.conf uses) and the store. *tls*: the servers in enforcing mode, test mode
    (TX_TLS_SERVER), and the separate broker registering over TLS. *acl*: ACL_SERVER, with
    *work* as rocketmqHome (its conf/plain_acl.yml is ACL_YML).
    """
    store = work / "store"
    conf = {
        "brokerClusterName": "BenchCluster", "brokerName": "bench-broker", "brokerId": "0",
        "brokerIP1": "127.0.0.1", "listenPort": str(broker_port), "namesrvAddr": f"127.0.0.1:{namesrv_port}",
        "storePathRootDir": str(store), "storePathCommitLog": str(store / "commitlog"),
        **BROKER_SETTINGS,
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


def start_tx(mode: str, work: Path, tls: bool = False, acl: bool = False) -> Target:
    namesrv_port = jh.free_port()
    broker_port = rocketmq_java.free_port_block()
    argv = tx_command_lines(work, namesrv_port, broker_port, mode, tls, acl)
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
    broker = txharness.TxProcess(argv["broker"], work / "broker.log")
    try:
        startup = probe.result(t0, broker.proc)
    except BaseException as e:
        probe.cancel()
        tail = "\n".join(broker.lines[-20:])
        broker.stop()
        if namesrv is not None:
            namesrv.stop()
        raise RuntimeError(f"{' '.join(argv['broker'][2:])}: {e}\n--- broker output (tail) ---\n{tail}") from None

    def stop() -> None:
        broker.stop(grace=30)
        if namesrv is not None:
            namesrv.stop()

    return Target("rocketmq_tx", addr, broker.proc.pid, namesrv.proc.pid if namesrv else None, startup, stop,
                  {"namesrv_boot_s": None if ns_boot is None else round(ns_boot, 3), "mode": mode, "tls": tls,
                   "acl": acl,
                   "broker_argv": argv["broker"], "namesrv_argv": argv["namesrv"]})


# --------------------------------------------------------------------------- the tools

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


SEND_RE = re.compile(r"Send TPS: (\d+) \| Max RT\(ms\): (\d+) \| Average RT\(ms\):\s*([\d.NaN]+) \| "
                     r"Send Failed: (\d+) \| Response Failed: (\d+)")
CONSUME_RE = re.compile(r"Consume TPS: (\d+) \| AVG\(B2C\) RT\(ms\):\s*([\d.NaN]+) \| "
                        r"AVG\(S2C\) RT\(ms\):\s*([\d.NaN]+) \| MAX\(B2C\) RT\(ms\): (\d+) \| "
                        r"MAX\(S2C\) RT\(ms\): (\d+) \| Consume Fail: (\d+)")


def _mean(values: list[float]) -> Optional[float]:
    values = [v for v in values if v == v]  # drop NaN (a window without messages)
    return round(statistics.fmean(values), 3) if values else None


def parse_producer(lines: list[tuple[float, str]]) -> dict:
    rows = [m.groups() for _, line in lines if (m := SEND_RE.search(line))]
    if not rows:
        return {"reports": 0}
    return {
        "reports": len(rows),
        "send_tps": _mean([float(r[0]) for r in rows]),
        "send_tps_last": int(rows[-1][0]),
        "avg_rt_ms": _mean([float(r[2]) for r in rows]),
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
        "consume_tps": _mean([float(r[0]) for r in rows]),
        "avg_b2c_ms": _mean([float(r[1]) for r in rows]),
        "avg_s2c_ms": _mean([float(r[2]) for r in rows]),
        "max_b2c_ms": max(int(r[3]) for r in rows),  # the tool resets its maxima at every report
        "consume_fail": sum(int(r[5]) for r in rows),  # per-window counts; windows overlap
    }


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


FIRST_REPORT_TIMEOUT = 120.0


def cpu_seconds(pid: Optional[int]) -> Optional[float]:
    """User + system CPU time of process *pid* (all its threads), from /proc/<pid>/stat."""
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_producer(cp: str, home: rocketmq_java.JavaHome, namesrv_addr: str, topic: str, threads: int,
                 seconds: float, warmup_only: bool = False, tls: bool = False, acl: bool = False,
                 broker_pid: Optional[int] = None) -> dict:
    """The Producer until its first report (10 s after it starts), then *seconds* more (or,
    *warmup_only*, just *seconds* from its launch); *tls*: the Producer (and the topic maker)
    over TLS; *acl*: both signing with the bench account. With *broker_pid*, also the CPU
    time the broker and the Producer spent per message over the *seconds* after the first
    report (CPU time over that window / (the tool's mean send TPS x the window))."""
    ensure_topic(namesrv_addr, topic, tls, acl)
    tool = Tool(cp, home, "Producer",
                producer_args(namesrv_addr, topic, threads) + list(ACL_PRODUCER_ARGS if acl else ()),
                PRODUCER_PROPS + (JAVA_TLS_CLIENT if tls else ()))
    cpu: list[tuple[float, Optional[float], Optional[float]]] = []
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


def bench_target(target: Target, cp: str, seconds: float, warmup: float, latency: bool) -> dict:
    home = BenchHome("bench-broker-tools", TOOL_JVM)
    out: dict = {"name": target.name, "startup_s": round(target.startup_s, 3), **target.info}
    rss: dict[str, Optional[int]] = {"after_start": rss_kib(target.broker_pid)}
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


# --------------------------------------------------------------------------- report

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


def _mib(kib: Optional[int]) -> Optional[float]:
    return None if kib is None else round(kib / 1024, 1)


def _get(result: Optional[dict], getter: Callable[[dict], object]) -> object:
    if not result or "error" in result:
        return None
    try:
        return getter(result)
    except (KeyError, TypeError, ValueError):
        return None


def report(results: dict[str, dict]) -> str:
    tx = results.get("rocketmq_tx")
    java_name = next((n for n in results if n.startswith("Java")), None)
    java = results.get(java_name) if java_name else None
    headers = ["figure", "rocketmq_tx", java_name or "Java", "tx / Java", "goal"]
    rows = []
    for label, getter, goal in ROWS:
        a, b = _get(tx, getter), _get(java, getter)
        ratio = f"{a / b:.2f}" if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b else ""
        cell = (lambda v, r: ("failed" if r and "error" in r else "n/m") if v is None else v)
        if "SendLatency" in label and ((tx and "error" not in tx and "latency_64" not in tx)
                                       or (java and "error" not in java and "latency_64" not in java)):
            cell = (lambda v, r: "skipped" if v is None else v)
        rows.append([label, cell(a, tx) if tx else "not run", cell(b, java) if java else "not run", ratio, goal])
    return table(headers, rows)


def _commit() -> str:
    """The rocketmq_tx commit measured (``-dirty`` when the working tree has changes)."""
    out = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty", "--exclude", "*"],
                         capture_output=True, text=True)
    return out.stdout.strip() or "unknown"


def measured(kind: str, name: str, args: argparse.Namespace, tools_cp: str, tls: bool,
             bench: Callable[[Target], dict], acl: bool = False) -> dict:
    """Start a fresh *kind* target (name server + broker, empty store; *tls*: enforcing, test
    mode; *acl*: ACL on, see ``--acl``), run *bench* on it, stop it; the result carries the
    load average at start and end, or the error (a failed target keeps its logs)."""
    WORK.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"broker-{kind}{'-tls' if tls else ''}{'-acl' if acl else ''}-", dir=WORK))
    target = None
    result: Optional[dict] = None
    load_start = os.getloadavg()[0]
    try:
        log(f"{name}: starting (work dir {work}; load average {load_start:.2f})")
        if kind == "java":
            target = start_java(args.java_broker, java_broker_classpath(args.java_broker, tools_cp),
                                work / "store", args.java_heap, tls, acl)
        else:
            target = start_tx(args.tx_mode, work, tls, acl)
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


# --------------------------------------------------------------------------- TLS compare (--tls)

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
    rss: dict[str, Optional[int]] = {"after_start": rss_kib(target.broker_pid)}
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


TLS_ROWS = [
    # label, getter, goal for (tx TLS/plaintext) / (Java TLS/plaintext)
    ("send TPS, 64 threads", lambda r: r["send_64"]["send_tps"], ">= 1.0"),
    ("send TPS, 1 thread", lambda r: r["send_1"]["send_tps"], ">= 1.0"),
    ("avg RT ms, 64 threads", lambda r: r["send_64"]["avg_rt_ms"], ""),
    ("avg RT ms, 1 thread", lambda r: r["send_1"]["avg_rt_ms"], ""),
    ("BlockingProducer avg RT ms, 1 thread", lambda r: r["py_send_1"]["avg_rt_ms"], ""),
    ("BlockingProducer p50 RT ms, 1 thread", lambda r: r["py_send_1"]["p50_rt_ms"], ""),
    ("send failed, 64 + 1 threads (no ratio)", lambda r: sum(r[f"send_{n}"]["send_failed"] + r[f"send_{n}"]["response_failed"]
                                                  for n in (64, 1) if f"send_{n}" in r), ""),
    ("start-up s (spawn to first ack)", lambda r: r["startup_s"], ""),
]


def _ratio(a: object, b: object) -> Optional[float]:
    return a / b if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b else None


def tls_report(results: dict[str, dict[str, dict]], feature: str = "TLS", key: str = "tls",
               rows_spec: Optional[list] = None) -> str:
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
    fmt = (lambda v: "" if v is None else f"{v:.3f}")
    rows = []
    for label, getter, goal in (TLS_ROWS if rows_spec is None else rows_spec):
        row: list[object] = [label]
        ratios = {}
        for n in names:
            plain, tls = results[n].get("plain"), results[n].get(key)
            a, b = _get(plain, getter), _get(tls, getter)
            ratios[n] = None if "no ratio" in label else _ratio(b, a)
            row += ["failed" if a is None and plain and "error" in plain else "n/m" if a is None else a,
                    "failed" if b is None and tls and "error" in tls else "n/m" if b is None else b,
                    fmt(ratios[n])]
        if both:
            row += [fmt(_ratio(ratios[tx_name], ratios[java_name])), goal]
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
    def rt(result: dict, mode: str, key: str) -> Optional[float]:
        value = _get(result.get(mode), lambda r: r[key]["avg_rt_ms"])
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


def _mean_of_rounds(runs: list[dict]) -> dict:
    """The figures TLS_ROWS reads, averaged over rounds (failures summed); an error if any round failed."""
    failed = [r for r in runs if "error" in r]
    if failed:
        return failed[0]
    out: dict = {"startup_s": round(statistics.fmean(r["startup_s"] for r in runs), 3)}
    for n in (n for n in (64, 1) if f"send_{n}" in runs[0]):
        sends = [r[f"send_{n}"] for r in runs]
        out[f"send_{n}"] = {"send_tps": _mean([s["send_tps"] for s in sends]),
                            "avg_rt_ms": _mean([s["avg_rt_ms"] for s in sends]),
                            "send_failed": sum(s["send_failed"] for s in sends),
                            "response_failed": sum(s["response_failed"] for s in sends)}
    out["py_send_1"] = {k: _mean([r["py_send_1"][k] for r in runs]) for k in ("avg_rt_ms", "p50_rt_ms")}
    return out


def main_tls(args: argparse.Namespace, targets: list[str], tools_cp: str) -> None:
    seconds = 10.0 if args.seconds is None else args.seconds
    warmup = 10.0 if args.warmup is None else args.warmup
    started = dt.datetime.now(dt.timezone.utc)
    rounds: list[dict[str, dict[str, dict]]] = []
    for k in range(args.rounds):
        # odd rounds run TLS first, so that a load drift does not always favour the same mode
        modes = (False, True) if k % 2 == 0 else (True, False)
        results: dict[str, dict[str, dict]] = {}
        for kind in targets:
            name = "rocketmq_tx" if kind == "tx" else f"Java {args.java_broker}"
            results[name] = {}
            for tls in modes:
                label = f"{name} {'TLS' if tls else 'plaintext'}" + (f" (round {k + 1})" if args.rounds > 1 else "")
                results[name]["tls" if tls else "plain"] = measured(
                    kind, label, args, tools_cp, tls,
                    lambda target, tls=tls: bench_send(target, tools_cp, seconds, warmup, tls,
                                                       (1,) if args.one_thread else (1, 64)))
        rounds.append(results)
    parts = []
    for k, results in enumerate(rounds):
        loads = "; ".join(f"{n} {'TLS' if m == 'tls' else 'plaintext'}: load average {r['loadavg_1min'][0]} "
                          f"at start, {r['loadavg_1min'][1]} at end" for n, by_mode in results.items()
                          for m, r in by_mode.items())
        head = f"Round {k + 1} ({'plaintext first' if k % 2 == 0 else 'TLS first'}):\n\n" if len(rounds) > 1 else ""
        parts.append(head + tls_report(results) + "\n\n" + loads)
    if len(rounds) > 1:
        mean = {n: {m: _mean_of_rounds([r[n][m] for r in rounds]) for m in ("plain", "tls")} for n in rounds[0]}
        parts.append(f"Mean of the {len(rounds)} rounds:\n\n" + tls_report(mean))
    text = "\n\n".join(parts)
    print(text)
    stamp = started.strftime("%Y%m%dT%H%M%SZ")
    path = HERE / f"results-tls-{stamp}.json"
    path.write_text(json.dumps({
        "started": started.isoformat(), "commit": _commit(),
        "command": " ".join(["python3", "bench/broker/run.py", *sys.argv[1:]]),
        "mode": "tls-compare", "rounds": args.rounds, "seconds": seconds, "warmup_phase_s": warmup, "tool_first_report_s": WARMUP,
        "body_size": BODY_SIZE, "tools": f"rocketmq-example {TOOLS_VERSION}", "cpus": os.cpu_count(),
        "tls": {"java_servers": JAVA_TLS_SERVER, "java_broker_extra": {"tls.enable": "true"},
                "java_tools": JAVA_TLS_CLIENT, "tx_servers": TX_TLS_SERVER,
                "tx_broker_extra_separate": "tls.enable=true", "tx_mode": args.tx_mode},
        "broker_settings": BROKER_SETTINGS, "broker_jvm": broker_jvm(args.java_heap),
        "namesrv_jvm": NAMESRV_JVM, "tool_jvm": TOOL_JVM,
        "results": rounds[0] if len(rounds) == 1 else rounds, "table": text,
    }, indent=2) + "\n")
    log(f"wrote {path.relative_to(ROOT)}")


# --------------------------------------------------------------------------- ACL compare (--acl)

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


def check_acl_enforced(target: Target) -> None:
    """--acl: a send signed with a wrong secret must be refused, or the run would measure a
    broker that checks nothing (a Java 5.x broker ignores aclEnable, for one)."""
    with py_producer("bench_acl_check", target.namesrv_addr, access_key=ACL_ACCESS_KEY, secret_key="notTheSecret",
                     send_timeout=5.0, retry_times_when_send_failed=0) as producer:
        try:
            producer.send(Message(topic="BenchStartup", body=b"must be refused"))
        except Exception as e:  # noqa: BLE001 - any refusal will do
            log(f"{target.name}: a wrong signature is refused ({type(e).__name__}: {str(e)[:160]})")
            return
    raise RuntimeError(f"{target.name} accepted a send signed with a wrong secret: ACL is not enforced")


def _median_of_rounds(runs: list[dict]) -> dict:
    """The figures ACL_ROWS reads, medians over rounds (failures summed); an error if any round failed."""
    failed = [r for r in runs if "error" in r]
    if failed:
        return failed[0]

    def median(values: list) -> Optional[float]:
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
    return out


def main_acl(args: argparse.Namespace, targets: list[str], tools_cp: str) -> None:
    seconds = 10.0 if args.seconds is None else args.seconds
    warmup = 10.0 if args.warmup is None else args.warmup
    started = dt.datetime.now(dt.timezone.utc)
    threads = (1,) if args.one_thread else (1, 64)
    rounds: list[dict[str, dict[str, dict]]] = []
    for k in range(args.rounds):
        # interleaved: every other round ACL first and the targets the other way round, so
        # that a drift of the machine's load does not always favour the same run
        modes = (False, True) if k % 2 == 0 else (True, False)
        order = targets if k % 2 == 0 else list(reversed(targets))
        results: dict[str, dict[str, dict]] = {}
        for kind in order:
            name = "rocketmq_tx" if kind == "tx" else f"Java {args.java_broker}"
            results[name] = {}
            for acl in modes:
                label = f"{name} {'ACL' if acl else 'plain'}" + (f" (round {k + 1})" if args.rounds > 1 else "")
                results[name]["acl" if acl else "plain"] = measured(
                    kind, label, args, tools_cp, False,
                    lambda target, acl=acl: bench_send(target, tools_cp, seconds, warmup, False, threads, acl,
                                                       py_phase=False),
                    acl=acl)
        rounds.append({n: results[n] for n in sorted(results, key=lambda n: n != "rocketmq_tx")})
    parts = []
    for k, results in enumerate(rounds):
        loads = "; ".join(f"{n} {'ACL' if m == 'acl' else 'plain'}: load average {r['loadavg_1min'][0]} "
                          f"at start, {r['loadavg_1min'][1]} at end" for n, by_mode in results.items()
                          for m, r in by_mode.items())
        head = f"Round {k + 1} ({'plain first' if k % 2 == 0 else 'ACL first'}):\n\n" if len(rounds) > 1 else ""
        parts.append(head + tls_report(results, "ACL", "acl", ACL_ROWS) + "\n\n" + loads)
    if len(rounds) > 1:
        median = {n: {m: _median_of_rounds([r[n][m] for r in rounds]) for m in ("plain", "acl")} for n in rounds[0]}
        parts.append(f"Median of the {len(rounds)} rounds:\n\n" + tls_report(median, "ACL", "acl", ACL_ROWS))
    text = "\n\n".join(parts)
    print(text)
    stamp = started.strftime("%Y%m%dT%H%M%SZ")
    path = HERE / f"results-acl-{stamp}.json"
    path.write_text(json.dumps({
        "started": started.isoformat(), "commit": _commit(),
        "command": " ".join(["python3", "bench/broker/run.py", *sys.argv[1:]]),
        "mode": "acl-compare", "rounds": args.rounds, "seconds": seconds, "warmup_phase_s": warmup,
        "tool_first_report_s": WARMUP, "body_size": BODY_SIZE, "tools": f"rocketmq-example {TOOLS_VERSION}",
        "cpus": os.cpu_count(),
        "acl": {"plain_acl.yml": ACL_YML, "tx_broker": ACL_SERVER, "java_broker": java_acl_settings(args.java_broker),
                "producer_args": list(ACL_PRODUCER_ARGS), "tx_mode": args.tx_mode},
        "broker_settings": BROKER_SETTINGS, "broker_jvm": broker_jvm(args.java_heap),
        "namesrv_jvm": NAMESRV_JVM, "tool_jvm": TOOL_JVM,
        "results": rounds[0] if len(rounds) == 1 else rounds, "table": text,
    }, indent=2) + "\n")
    log(f"wrote {path.relative_to(ROOT)}")


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
    parser.add_argument("--one-thread", action="store_true",
                        help="with --tls or --acl: only the 1-thread phases (the warm-up still uses 64 threads)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="--tls, --acl: repeat the whole comparison N times, every other round TLS (ACL) "
                             "first; also prints the means (--acl: medians) over the rounds")
    parser.add_argument("--targets", default="java,tx", help="comma-separated, in order: java, tx")
    parser.add_argument("--java-broker", default=TOOLS_VERSION, help=f"{TOOLS_VERSION} (default) or 4.9.7")
    parser.add_argument("--java-heap", default="8g",
                        help="the Java broker's -Xms/-Xmx (default 8g, runbroker.sh's)")
    parser.add_argument("--tx-mode", default="separate", choices=("separate", "standalone"))
    parser.add_argument("--flush", default="async", choices=("async", "sync"),
                        help="both brokers' flushDiskType: ASYNC_FLUSH (default) or SYNC_FLUSH (group commit)")
    parser.add_argument("--keep", action="store_true",
                        help="keep the stores (bench/.work) and the Java homes with their logs (compat-tests/.work)")
    args = parser.parse_args()
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    if not targets or set(targets) - {"java", "tx"}:
        parser.error("--targets takes java and/or tx")
    # both starters read BROKER_SETTINGS, and the results file records it
    BROKER_SETTINGS["flushDiskType"] = "SYNC_FLUSH" if args.flush == "sync" else "ASYNC_FLUSH"

    # The start-up probe's refused connections are expected; keep the blocking client quiet.
    logging.getLogger("rocketmq_tx").setLevel(logging.ERROR)
    tools_cp = tools_classpath()
    if args.tls and args.acl:
        parser.error("--tls and --acl are separate comparisons")
    if args.tls:
        main_tls(args, targets, tools_cp)
        return
    if args.acl:
        main_acl(args, targets, tools_cp)
        return
    seconds = 20.0 if args.seconds is None else args.seconds
    warmup = 15.0 if args.warmup is None else args.warmup
    started = dt.datetime.now(dt.timezone.utc)
    results: dict[str, dict] = {}
    for kind in targets:
        name = "rocketmq_tx" if kind == "tx" else f"Java {args.java_broker}"
        results[name] = measured(kind, name, args, tools_cp, False,
                                 lambda target: bench_target(target, tools_cp, seconds, warmup, not args.no_latency))

    text = report(results) + "\n\n" + "; ".join(
        f"{n}: load average {r['loadavg_1min'][0]} at start, {r['loadavg_1min'][1]} at end" for n, r in results.items())
    print(text)
    stamp = started.strftime("%Y%m%dT%H%M%SZ")
    path = HERE / f"results-{stamp}.json"
    path.write_text(json.dumps({
        "started": started.isoformat(), "commit": _commit(),
        "command": " ".join(["python3", "bench/broker/run.py", *sys.argv[1:]]),
        "seconds": seconds, "warmup_phase_s": warmup, "tool_first_report_s": WARMUP,
        "body_size": BODY_SIZE, "tools": f"rocketmq-example {TOOLS_VERSION}",
        "cpus": os.cpu_count(), "broker_settings": BROKER_SETTINGS, "broker_jvm": broker_jvm(args.java_heap),
        "namesrv_jvm": NAMESRV_JVM, "tool_jvm": TOOL_JVM, "results": results, "table": text,
    }, indent=2) + "\n")
    log(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
