"""
Name server throughput: GET_ROUTEINFO_BY_TOPIC queries per second with 100 topics served
by 10 registered brokers, from 16 client connections (the official NettyRemotingClient,
compat-tests' RouteLoad, 4 requests in flight on each), rocketmq_tx's name server against
the Java one in the same run; plus each server's resident memory after the load.

    python bench/namesrv.py [--seconds 10] [--java 4.9.8|5.5.0]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import zlib

from _common import ROOT, javaharness, table

sys.path.insert(0, str(ROOT / "compat-tests"))
import rocketmq_java  # noqa: E402
import txharness  # noqa: E402

from rocketmq_tx.blocking import BlockingConnection  # noqa: E402
from rocketmq_tx.common.route import DataVersion, TopicConfig  # noqa: E402
from rocketmq_tx.remoting import RemotingCommand, RequestCode  # noqa: E402
from rocketmq_tx.remoting.bodies import RegisterBrokerBody  # noqa: E402

TOPICS = 100
BROKERS = 10


def register_brokers(addr: str) -> list[BlockingConnection]:
    """Register the fake brokers; their connections must stay open (closing one unregisters it)."""
    body = RegisterBrokerBody(DataVersion(1, 1), {f"BenchTopic{i}": TopicConfig(f"BenchTopic{i}", 8, 8)
                                                  for i in range(TOPICS)}, []).encode()
    connections = []
    for b in range(BROKERS):
        conn = BlockingConnection(addr)
        response = conn.invoke(RemotingCommand.request(RequestCode.REGISTER_BROKER, {
            "brokerName": f"broker-{b}", "brokerAddr": f"10.0.0.{b}:10911", "clusterName": "BenchCluster",
            "haServerAddr": f"10.0.0.{b}:10912", "brokerId": "0", "compressed": "false",
            "bodyCrc32": str(zlib.crc32(body) & 0x7FFFFFFF)}, body), timeout=10)
        assert response.code == 0, response
        connections.append(conn)
    return connections


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--java", default="4.9.8")
    args = parser.parse_args()
    classpath = javaharness.build(javaharness.VERSION_KEYS[args.java])
    tmp = tempfile.mkdtemp(prefix="bench-ns-")
    tx = txharness.start_twistd("rocketmq-namesrv", ["--set", "listenPort=0", "--set", "bindAddress=127.0.0.1",
                                                     "--set", f"kvConfigPath={tmp}/kv.json"], label="bench-namesrv")
    java, java_addr, _ = rocketmq_java.start_namesrv(classpath, label="bench-java-namesrv")
    servers = {"rocketmq_tx": (f"127.0.0.1:{tx.port}", tx.proc.pid), f"Java {args.java}": (java_addr, java.pid)}
    results = {}
    keep = []
    try:
        for name, (addr, pid) in servers.items():
            keep += register_brokers(addr)
            lines = javaharness.run_java(classpath, "RouteLoad", [addr, "BenchTopic", str(TOPICS), "16", "4",
                                                                  str(args.seconds)], timeout=args.seconds + 120)
            results[name] = dict(json.loads(lines[-1]), rss_kib=rss_kib(pid))
    finally:
        for conn in keep:
            conn.close()
        tx.stop()
        java.stop()
    ours, theirs = results["rocketmq_tx"], results[f"Java {args.java}"]
    rows = [[name, r["rps"], r["p50_us"], r["p99_us"], r["errors"], round(r["rss_kib"] / 1024, 1)]
            for name, r in results.items()]
    rows.append(["ratio tx/Java", f"{ours['rps'] / theirs['rps']:.2f}",
                 f"{ours['p50_us'] / max(theirs['p50_us'], 1):.2f}",
                 f"{ours['p99_us'] / max(theirs['p99_us'], 1):.2f}", "", f"{ours['rss_kib'] / theirs['rss_kib']:.2f}"])
    print(table(["server", "queries/s", "p50 µs", "p99 µs", "errors", "RSS MiB"], rows))


if __name__ == "__main__":
    main()
