"""
The official RocketMQ 5.x proxy (``org.apache.rocketmq:rocketmq-proxy``, cluster mode) as a
fresh process in front of a name server, and the official gRPC client program ``ProxyPeer``
(``rocketmq-client-java``) driven through it, for test_proxy_interop.py.

The proxy runs from the 5.x Maven classpath of compat-tests/java with its own temporary
home (``rmq-proxy.json`` there, logs to stderr) on free ports; readiness is its own
"rocketmq-proxy startup successfully" line, never a sleep.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import javaharness as jh
import rocketmq_java as rj

__all__ = ["Proxy", "start_proxy", "proxy_peer"]

PROXY_MAIN = "org.apache.rocketmq.proxy.ProxyStartup"
#: netty-tcnative, copied here by the 5.x build: the proxy needs OpenSSL, the other programs keep
#: the JDK's TLS (see pom.xml)
PROXY_LIB = jh.build_dir("5") / "proxy-lib"
#: rocketmq-client-java (shaded, self-contained), kept off the shared classpath: its protocol
#: classes clash with the proxy's (see pom.xml)
GRPC_CLIENT_LIB = jh.build_dir("5") / "grpc-client"
#: printed on stdout by ProxyStartup once the gRPC and remoting servers are up
READY = r"rocketmq-proxy startup successfully"


@dataclass
class Proxy:
    process: jh.JavaProcess
    #: gRPC endpoint for rocketmq-client-java ("127.0.0.1:port")
    endpoint: str
    remoting_port: int
    namesrv_addr: str
    home: rj.JavaHome

    def stop(self) -> int | None:
        return self.process.stop(grace=30)

    def discard(self) -> int | None:
        """Killed at once (see JavaProcess.discard): the proxy keeps no state."""
        return self.process.discard()

    def log_text(self) -> str:
        try:
            return self.process.stderr_path.read_text(errors="replace")
        except OSError:
            return ""


def start_proxy(classpath: str, namesrv_addr: str, cluster: str, *, label: str = "java-proxy",
                log_level: str = "WARN", extra: dict | None = None) -> Proxy:
    """
    ``ProxyStartup -pc rmq-proxy.json -pm cluster``. The proxy's gRPC and remoting servers bind
    every interface (5.5.0 has no bind-address setting for them); the ports are free ones and the
    clients connect to 127.0.0.1. *log_level*: the proxy's (and its remoting client's) log level on
    stderr (``INFO`` shows each refused request).
    """
    home = rj.JavaHome(label)
    grpc_port = jh.free_port()
    remoting_port = jh.free_port()
    config = {
        "rocketMQClusterName": cluster,
        "namesrvAddr": namesrv_addr,
        "grpcServerPort": grpc_port,
        "remotingListenPort": remoting_port,
        "proxyMode": "cluster",
        # The address the proxy announces to clients (routes, endpoints) and uses as its own.
        "localServeAddr": "127.0.0.1",
        "remotingAccessAddr": "127.0.0.1",
        "enablePrintJstack": False,
        # On SIGTERM the gRPC server waits this long for open calls (default 30 s); the consumers'
        # streams are gone by then and nothing is lost by not waiting: teardown stays short.
        "grpcShutdownTimeSeconds": 1,
        **(extra or {}),
    }
    conf = home.root / "rmq-proxy.json"
    conf.write_text(json.dumps(config, indent=2))
    jars = sorted(str(p) for p in PROXY_LIB.glob("*.jar"))
    if not jars:
        raise jh.JavaStartError(f"no netty-tcnative jars in {PROXY_LIB}: the 5.x build did not copy them")
    process = rj._spawn(":".join([classpath, *jars]), PROXY_MAIN, ["-pc", str(conf), "-pm", "cluster"], home, READY,
                        props={"compat.log.level": log_level, "rocketmq.log.root": str(home.root / "logs")})
    return Proxy(process, f"127.0.0.1:{grpc_port}", remoting_port, namesrv_addr, home)


def peer_classpath() -> str:
    """ProxyPeer's classpath: the harness classes and the gRPC client jar, nothing else."""
    jars = sorted(str(p) for p in GRPC_CLIENT_LIB.glob("rocketmq-client-java-*.jar"))
    if not jars:
        raise jh.JavaStartError(f"no rocketmq-client-java jar in {GRPC_CLIENT_LIB}: the 5.x build did not copy it")
    return ":".join([str(jh.build_dir("5") / "classes"), *jars])


def proxy_peer(home: rj.JavaHome, *args: object, timeout: float = 180.0) -> dict:
    """Run one ``ProxyPeer`` flow to its end (after ``jh.build("5")``); returns its JSON line
    (``ok`` false: a refusal, as data)."""
    jvm = [*jh.DEFAULT_JVM_ARGS, f"-Duser.home={home.root}", f"-Drocketmq.log.root={home.root / 'client-logs'}",
           "-Drocketmq.log.level=warn", "-Dmq.consoleAppender.enabled=false"]
    lines = jh.run_java(peer_classpath(), "ProxyPeer", [str(a) for a in args], timeout=timeout, jvm_args=jvm)
    answers = [line for line in lines if line.startswith("{")]
    assert answers, f"ProxyPeer {args} printed no JSON line: {lines}"
    return json.loads(answers[-1])


def client_log(home: rj.JavaHome) -> str:
    """The gRPC client's own log file (warnings and errors of every ProxyPeer run with *home*)."""
    path = Path(home.root / "client-logs" / "rocketmq-client.log")
    return path.read_text(errors="replace") if path.exists() else ""
