"""
Request/response round trips per second between two local processes: rocketmq_tx's
server (``twistd rocketmq-echo``) against the official Java ``NettyRemotingServer``
(compat-tests' EchoServer), with the same load generator (rpcclient.py, our Twisted
client, 100-byte bodies) keeping 1 and then 64 requests in flight.

    python bench/rpc.py [--seconds 5] [--java 4.9.8|5.5.0]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from _common import ROOT, javaharness, table

sys.path.insert(0, str(ROOT / "compat-tests"))
import txharness  # noqa: E402


def load(addr: str, inflight: int, seconds: float, serialize: str) -> dict:
    out = subprocess.run([sys.executable, str(Path(__file__).parent / "rpcclient.py"), addr, "--inflight",
                          str(inflight), "--seconds", str(seconds), "--serialize", serialize],
                         capture_output=True, text=True, check=True, timeout=seconds * 4 + 60)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--java", default="4.9.8")
    args = parser.parse_args()
    classpath = javaharness.build(javaharness.VERSION_KEYS[args.java])
    java = javaharness.start_java(classpath, "EchoServer", ["--port", "0"], jvm_args=("-Xmx512m",))
    tx = txharness.start_twistd("rocketmq-echo", ["--listen", "tcp:0:interface=127.0.0.1"], label="bench-echo")
    servers = {"rocketmq_tx": f"127.0.0.1:{tx.port}", f"Java {args.java}": f"127.0.0.1:{java.port}"}
    rows = []
    try:
        for serialize in ["JSON", "ROCKETMQ"]:
            for inflight in (1, 64):
                results = {name: load(addr, inflight, args.seconds, serialize) for name, addr in servers.items()}
                ours, theirs = results["rocketmq_tx"], results[f"Java {args.java}"]
                rows.append([serialize, inflight, ours["rps"], theirs["rps"], f"{ours['rps'] / theirs['rps']:.2f}",
                             ours["p99_us"], theirs["p99_us"]])
    finally:
        tx.stop()
        java.stop()
    print(table(["serialize", "in flight", "rocketmq_tx rps", f"Java {args.java} rps", "ratio",
                 "tx p99 µs", "Java p99 µs"], rows))


if __name__ == "__main__":
    main()
