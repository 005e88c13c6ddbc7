"""
The official Java name server, broker and mqadmin as fresh processes, for interop tests.

Each runs from compat-tests/java's Maven classpath (4.9.x: client/tools 4.9.8 with the
newest published broker/namesrv, 4.9.7; 5.x: 5.5.0) with its own temporary
ROCKETMQ_HOME (logback configurations that log to files there) and ``user.home``, on free
127.0.0.1 ports. Readiness is the program's own "boot success" line, never a sleep.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import javaharness as jh

from rocketmq_tx.blocking import BlockingConnection
from rocketmq_tx.blocking.client import BlockingMQClient
from rocketmq_tx.remoting import RemotingCommand, RequestCode
from rocketmq_tx.remoting.errors import RemotingConnectError, RemotingTimeoutError

__all__ = ["JavaHome", "JavaCluster", "start_namesrv", "start_broker", "java_cluster", "mqadmin", "mqadmin_batch",
           "mqadmin_batch_results", "free_port_block"]

# Logs go to stderr (captured per process in the home directory) at WARN, or at the
# level given by -Dcompat.log.level.
_LOGBACK = (jh.JAVA_PROJECT / "src" / "main" / "resources" / "compat-logback.xml").read_text()
#: The broker unmaps files through DirectByteBuffer internals, which Java 17 hides; without
#: these its shutdown cannot unmap and leaves the abort file behind.
OPENS = ("--add-opens=java.base/java.nio=ALL-UNNAMED", "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
         "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED", "--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED",
         "--add-exports=java.base/jdk.internal.ref=ALL-UNNAMED")


class JavaHome:
    """A throwaway ROCKETMQ_HOME + user.home with logback configurations for every tool."""

    def __init__(self, label: str) -> None:
        jh.HERE.joinpath(".work").mkdir(exist_ok=True)
        self.root = Path(tempfile.mkdtemp(prefix=f"{label}-", dir=jh.HERE / ".work"))
        conf = self.root / "conf"
        conf.mkdir()
        for name in ("broker", "namesrv", "tools", "client"):
            (conf / f"logback_{name}.xml").write_text(_LOGBACK)

    def jvm_args(self) -> list[str]:
        logback = self.root / "conf" / "logback_tools.xml"
        # 5.x reads its repackaged logback's configuration from rmq.logback.configurationFile.
        return [*jh.DEFAULT_JVM_ARGS, *OPENS, f"-Duser.home={self.root}", f"-Drocketmq.home.dir={self.root}",
                f"-Drmq.logback.configurationFile={logback}", f"-Dlogback.configurationFile={logback}"]

    def env(self) -> dict[str, str]:
        return {**os.environ, "ROCKETMQ_HOME": str(self.root)}


def _port_free(port: int) -> bool:
    # The 4.9 broker binds 0.0.0.0, so the port must be free there too.
    for host in ("127.0.0.1", "0.0.0.0"):
        with socket.socket() as s:
            try:
                s.bind((host, port))
            except OSError:
                return False
    return True


def free_port_block() -> int:
    """A listenPort whose fast port (-2) and HA port (+1) are free too."""
    for _ in range(200):
        port = jh.free_port()
        if 2000 < port < 65000 and all(_port_free(p) for p in (port - 2, port + 1)):
            return port
    raise RuntimeError("no block of free ports found")


def _props(props: Mapping[str, str] | None) -> list[str]:
    return [f"-D{k}={v}" for k, v in (props or {}).items()]


def _spawn(classpath: str, main: str, args: Sequence[str], home: JavaHome, ready: str,
           timeout: float = 120.0, props: Mapping[str, str] | None = None,
           jvm_extra: Sequence[str] = ()) -> jh.JavaProcess:
    argv = ["java", *home.jvm_args(), *_props(props), *jvm_extra, "-cp", classpath, main, *args]
    import subprocess

    err = home.root / f"{main.rsplit('.', 1)[-1]}.stderr"
    with open(err, "wb") as stderr:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                                cwd=str(home.root), env=home.env(), start_new_session=True)
    jp = jh.JavaProcess(proc, argv, err, stdin_eof_exits=False)
    try:
        jp.wait_for(ready, timeout)
    except BaseException:
        jp.stop()
        raise
    return jp


def start_namesrv(classpath: str, label: str = "java-namesrv",
                  props: Mapping[str, str] | None = None) -> tuple[jh.JavaProcess, str, JavaHome]:
    """The Java name server on a free port (*props*: JVM system properties such as ``tls.server.mode``);
    returns (process, "127.0.0.1:port", home)."""
    home = JavaHome(label)
    port = jh.free_port()
    conf = home.root / "namesrv.properties"
    conf.write_text(f"listenPort={port}\nkvConfigPath={home.root / 'kvConfig.json'}\n"
                    f"configStorePath={home.root / 'namesrv.conf.store'}\n")
    proc = _spawn(classpath, "org.apache.rocketmq.namesrv.NamesrvStartup", ["-c", str(conf)], home,
                  r"The Name Server boot success", props=props)
    return proc, f"127.0.0.1:{port}", home


def start_broker(classpath: str, namesrv_addr: str, *, broker_name: str = "broker-a", cluster: str = "DefaultCluster",
                 extra: Mapping[str, str] | None = None, label: str = "java-broker",
                 home: JavaHome | None = None, props: Mapping[str, str] | None = None,
                 store_root: Path | None = None, port: int | None = None,
                 commitlog_size: int = 64 * 1024 * 1024,
                 jvm_extra: Sequence[str] = ()) -> tuple[jh.JavaProcess, str, JavaHome]:
    """The Java broker registered with *namesrv_addr*; returns (process, "127.0.0.1:port", home)."""
    home = home or JavaHome(label)
    store = store_root or home.root / "store"
    # A port block picked here can be taken by another process's outgoing connection (an ephemeral
    # port) before the broker binds it: then, on a store this start created, a new block, twice more.
    retries = 2 if port is None and not store.exists() else 0
    while True:
        chosen = port or free_port_block()
        try:
            proc = _start_broker(classpath, namesrv_addr, chosen, store, broker_name, cluster, extra, home, props,
                                 commitlog_size, jvm_extra)
        except jh.JavaStartError as e:
            # the whole stderr, not the error's tail: the broker's shutdown hook logs a page of
            # unregister failures after the BindException, which pushes it out of the tail
            err = home.root / "BrokerStartup.stderr"
            text = err.read_text(errors="replace") if err.is_file() else ""
            if retries and "Address already in use" in str(e) + text:
                retries -= 1
                shutil.rmtree(store, ignore_errors=True)
                continue
            raise
        addr = f"127.0.0.1:{chosen}"
        _wait_store_stats(addr)
        return proc, addr, home


def _wait_store_stats(addr: str, timeout: float = 15.0) -> None:
    """A Java broker prints "boot success" before its StoreStatsService has taken its first
    sample (1 s after the store starts); until then GET_BROKER_RUNTIME_INFO fails with
    NoSuchElementException (mqadmin clusterList shows an empty row). Wait for any other
    answer: SUCCESS, or an ACL refusal. A TLS-only broker closes a plain connection: not
    checked."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with BlockingConnection(addr) as conn:
                r = conn.invoke(RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO), 3)
        except (RemotingConnectError, RemotingTimeoutError):
            return
        if "NoSuchElementException" not in (r.remark or ""):
            return
        if time.monotonic() > deadline:
            raise jh.JavaStartError(f"the Java broker at {addr} did not answer its runtime info in {timeout} s: {r}")
        time.sleep(0.1)


def _start_broker(classpath: str, namesrv_addr: str, port: int, store: Path, broker_name: str, cluster: str,
                  extra: Mapping[str, str] | None, home: JavaHome, props: Mapping[str, str] | None,
                  commitlog_size: int, jvm_extra: Sequence[str]) -> jh.JavaProcess:
    settings = {
        "brokerClusterName": cluster, "brokerName": broker_name, "brokerId": "0", "brokerIP1": "127.0.0.1",
        "listenPort": str(port), "haListenPort": str(port + 1), "namesrvAddr": namesrv_addr,
        "storePathRootDir": str(store), "storePathCommitLog": str(store / "commitlog"),
        "mappedFileSizeCommitLog": str(commitlog_size), "autoCreateTopicEnable": "true",
        "flushDiskType": "ASYNC_FLUSH", "brokerRole": "ASYNC_MASTER", "deleteWhen": "04", "fileReservedTime": "48",
        "diskMaxUsedSpaceRatio": "99",
        # Slow, shared CI machines: no flow control while the JIT warms up.
        "waitTimeMillsInSendQueue": "20000", "osPageCacheBusyTimeOutMills": "20000",
    }
    settings.update(extra or {})
    conf = home.root / "broker.conf"
    conf.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
    return _spawn(classpath, "org.apache.rocketmq.broker.BrokerStartup", ["-c", str(conf)], home,
                  r"boot success", props=props, jvm_extra=jvm_extra)


def mqadmin(classpath: str, args: Sequence[str], home: JavaHome, timeout: float = 120.0,
            props: Mapping[str, str] | None = None) -> list[str]:
    """Run one mqadmin command to completion; returns its stdout lines."""
    import subprocess

    argv = ["java", *home.jvm_args(), *_props(props), "-cp", classpath,
            "org.apache.rocketmq.tools.command.MQAdminStartup", *args]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=str(home.root), env=home.env())
    if out.returncode != 0:
        raise RuntimeError(
            f"mqadmin {' '.join(args)} exited {out.returncode}:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    return out.stdout.splitlines()


def mqadmin_batch(classpath: str, commands: Sequence[Sequence[str]], home: JavaHome, timeout: float = 240.0,
                  props: Mapping[str, str] | None = None, retry_timeouts: bool = False) -> list[list[str]]:
    """Several mqadmin commands, in order, in one JVM (compat-tests' AdminBatch: the official
    MQAdminStartup.main0 once per command); returns each command's stdout lines. An mqadmin JVM
    costs 3-4 s, mostly idle (about 1 s of CPU), a command inside one a fraction of a second.
    :func:`mqadmin_batch_results` is the same with each command's stderr too."""
    results = mqadmin_batch_results(classpath, commands, home, timeout, props, retry_timeouts)
    return [result["out"].splitlines() for result in results]


def mqadmin_batch_results(classpath: str, commands: Sequence[Sequence[str]], home: JavaHome, timeout: float = 240.0,
                          props: Mapping[str, str] | None = None, retry_timeouts: bool = False) -> list[dict]:
    """:func:`mqadmin_batch`, each command's result as AdminBatch prints it: ``{"out": stdout, "err": stderr}``.

    *retry_timeouts* (for read-only commands): a command that failed with mqadmin's
    RemotingTimeoutException (its 3 s budget includes a cold JVM's first calls, which a loaded
    machine can exceed) runs once more, in a second JVM; a second timeout stays a failure."""
    import json
    import subprocess

    def run(batch: Sequence[Sequence[str]]) -> list[dict]:
        argv = ["java", *home.jvm_args(), *jh.FAST_START, *_props(props), "-cp", classpath,
                "rocketmq.compat.AdminBatch"]
        text = "".join("\t".join(args) + "\n" for args in batch)
        out = subprocess.run(argv, input=text, capture_output=True, text=True, timeout=timeout,
                             cwd=str(home.root), env=home.env())
        results = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
        if out.returncode != 0 or len(results) != len(batch) + 1 or results[-1] != {"done": True}:
            raise RuntimeError(f"AdminBatch {[list(c) for c in batch]} exited {out.returncode}:\n"
                               f"{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
        return results[:-1]

    results = run(commands)
    if retry_timeouts:
        again = [i for i, r in enumerate(results) if "RemotingTimeoutException" in r["err"]]
        if again:
            for i, result in zip(again, run([commands[i] for i in again]), strict=True):
                results[i] = result
    return results


@dataclass
class JavaCluster:
    """A Java name server and one broker on a given store directory."""

    namesrv: jh.JavaProcess
    broker: jh.JavaProcess
    namesrv_addr: str
    port: int
    home: JavaHome

    def stop_broker(self) -> int | None:
        """SIGTERM, so the broker's shutdown hook flushes and removes the abort file."""
        return self.broker.stop(grace=30)

    def discard(self) -> None:
        """Both processes killed at once (see JavaProcess.discard): the store is thrown away."""
        jh.stop_together(self.broker.discard, self.namesrv.discard)


def wait_for_registration(namesrv_addr: str, timeout: float = 60.0) -> None:
    """Until the name server routes TBW102: a broker logs "boot success" before its first
    registration has reached the name server, and a producer started in between fails."""
    deadline = time.monotonic() + timeout
    with BlockingMQClient(namesrv_addr) as client:
        while True:
            try:
                client.route("TBW102", refresh=True)
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)


@contextlib.contextmanager
def java_cluster(classpath: str, store_root: Path, *, commitlog_size: int = 1 << 20,
                 extra: Mapping[str, str] | None = None, port: int | None = None,
                 jvm_extra: Sequence[str] = (), graceful: bool = True) -> Iterator[JavaCluster]:
    """A Java name server and broker ``compat-broker`` (cluster ``CompatCluster``) on *store_root*.

    On exit the broker stops with SIGTERM (its store is complete: no abort file) and then the name
    server; ``graceful=False``, for a store nobody reads afterwards, kills both at once instead."""
    namesrv, namesrv_addr, home = start_namesrv(classpath, label="java-cluster")
    broker = None
    try:
        broker, broker_addr, _ = start_broker(
            classpath, namesrv_addr, broker_name="compat-broker", cluster="CompatCluster", extra=extra, home=home,
            store_root=store_root, port=port, commitlog_size=commitlog_size, jvm_extra=jvm_extra)
        wait_for_registration(namesrv_addr)
        yield JavaCluster(namesrv, broker, namesrv_addr, int(broker_addr.rsplit(":", 1)[1]), home)
    finally:
        if not graceful:
            jh.stop_together(*([broker.discard] if broker is not None else []), namesrv.discard)
        else:
            if broker is not None:
                broker.stop(grace=30)
            namesrv.stop()
