"""
The official Java name server, broker and mqadmin as fresh processes, for interop tests.

Each runs from compat-tests/java's Maven classpath (4.9.x: client/tools 4.9.8 with the
newest published broker/namesrv, 4.9.7; 5.x: 5.5.0) with its own temporary
ROCKETMQ_HOME (logback configurations that log to files there) and ``user.home``, on free
127.0.0.1 ports. Readiness is the program's own "boot success" line, never a sleep.
"""

from __future__ import annotations

import os
import socket
import tempfile
from pathlib import Path
from typing import Mapping, Optional, Sequence

import javaharness as jh

__all__ = ["JavaHome", "start_namesrv", "start_broker", "mqadmin", "free_port_block"]

_LOGBACK = """<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>{log}</file>
    <encoder><pattern>%d{{HH:mm:ss.SSS}} %-5level %logger{{36}} - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
"""


class JavaHome:
    """A throwaway ROCKETMQ_HOME + user.home with logback configurations for every tool."""

    def __init__(self, label: str) -> None:
        jh.HERE.joinpath(".work").mkdir(exist_ok=True)
        self.root = Path(tempfile.mkdtemp(prefix=f"{label}-", dir=jh.HERE / ".work"))
        conf = self.root / "conf"
        conf.mkdir()
        for name in ("broker", "namesrv", "tools", "client"):
            (conf / f"logback_{name}.xml").write_text(_LOGBACK.format(log=self.root / f"{name}.log"))
        # 5.x reads its repackaged logback's configuration from this property.
        (conf / "rmq.logback.xml").write_text(_LOGBACK.format(log=self.root / "rmq.log"))

    def jvm_args(self) -> list[str]:
        return ["-Xmx512m", "-XX:+UseSerialGC", f"-Duser.home={self.root}", f"-Drocketmq.home.dir={self.root}",
                f"-Drmq.logback.configurationFile={self.root / 'conf' / 'rmq.logback.xml'}",
                f"-Dlogback.configurationFile={self.root / 'conf' / 'logback_tools.xml'}"]

    def env(self) -> dict[str, str]:
        return {**os.environ, "ROCKETMQ_HOME": str(self.root)}

    def log_tail(self, name: str, n: int = 40) -> str:
        path = self.root / f"{name}.log"
        if not path.exists():
            return "(no log)"
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port_block() -> int:
    """A listenPort whose fast port (-2) and HA port (+1) are free too."""
    for _ in range(200):
        port = jh.free_port()
        if port > 2000 and all(_port_free(p) for p in (port - 2, port + 1)):
            return port
    raise RuntimeError("no block of free ports found")


def _props(props: Optional[Mapping[str, str]]) -> list[str]:
    return [f"-D{k}={v}" for k, v in (props or {}).items()]


def _spawn(classpath: str, main: str, args: Sequence[str], home: JavaHome, ready: str,
           timeout: float = 120.0, props: Optional[Mapping[str, str]] = None) -> jh.JavaProcess:
    argv = ["java", *home.jvm_args(), *_props(props), "-cp", classpath, main, *args]
    import subprocess

    err = home.root / f"{main.rsplit('.', 1)[-1]}.stderr"
    with open(err, "wb") as stderr:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                                cwd=str(home.root), env=home.env(), start_new_session=True)
    jp = jh.JavaProcess(proc, argv, err)
    try:
        jp.wait_for(ready, timeout)
    except BaseException:
        jp.stop()
        raise
    return jp


def start_namesrv(classpath: str, label: str = "java-namesrv",
                  props: Optional[Mapping[str, str]] = None) -> tuple[jh.JavaProcess, str, JavaHome]:
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
                 extra: Optional[Mapping[str, str]] = None, label: str = "java-broker",
                 home: Optional[JavaHome] = None,
                 props: Optional[Mapping[str, str]] = None) -> tuple[jh.JavaProcess, str, JavaHome]:
    """The Java broker registered with *namesrv_addr*; returns (process, "127.0.0.1:port", home)."""
    home = home or JavaHome(label)
    port = free_port_block()
    store = home.root / "store"
    settings = {
        "brokerClusterName": cluster, "brokerName": broker_name, "brokerId": "0", "brokerIP1": "127.0.0.1",
        "listenPort": str(port), "namesrvAddr": namesrv_addr, "storePathRootDir": str(store),
        "storePathCommitLog": str(store / "commitlog"), "mappedFileSizeCommitLog": str(64 * 1024 * 1024),
        "autoCreateTopicEnable": "true", "flushDiskType": "ASYNC_FLUSH", "brokerRole": "ASYNC_MASTER",
        "deleteWhen": "04", "fileReservedTime": "48",
    }
    settings.update(extra or {})
    conf = home.root / "broker.conf"
    conf.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
    proc = _spawn(classpath, "org.apache.rocketmq.broker.BrokerStartup", ["-c", str(conf)], home,
                  r"boot success", props=props)
    return proc, f"127.0.0.1:{port}", home


def mqadmin(classpath: str, args: Sequence[str], home: JavaHome, timeout: float = 120.0,
            props: Optional[Mapping[str, str]] = None) -> list[str]:
    """Run one mqadmin command to completion; returns its stdout lines."""
    import subprocess

    argv = ["java", *home.jvm_args(), *_props(props), "-cp", classpath,
            "org.apache.rocketmq.tools.command.MQAdminStartup", *args]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=str(home.root), env=home.env())
    if out.returncode != 0:
        raise RuntimeError(f"mqadmin {' '.join(args)} exited {out.returncode}:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    return out.stdout.splitlines()
