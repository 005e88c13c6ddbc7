"""
The load generator of bench/rpc.py: a Twisted RemotingClient in its own process that
keeps N requests in flight against one server for a fixed time and prints JSON.

    python bench/rpcclient.py HOST:PORT --inflight 64 --seconds 5 [--serialize JSON|ROCKETMQ]
"""

from __future__ import annotations

import argparse
import json
import time

from twisted.internet import defer, task

from rocketmq_tx.net import RemotingClient
from rocketmq_tx.remoting import RemotingCommand, SerializeType

ECHO = 9001


async def run(reactor, addr: str, inflight: int, seconds: float, serialize: SerializeType, body: bytes):  # type: ignore[no-untyped-def]
    client = RemotingClient(reactor)
    # Warm up the connection and the code paths before timing.
    for _ in range(200):
        await client.invoke(addr, RemotingCommand.request(ECHO, {"k": "v"}, body, serialize_type=serialize))
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds

    async def worker() -> None:
        while time.perf_counter() < deadline:
            t0 = time.perf_counter()
            await client.invoke(addr, RemotingCommand.request(ECHO, {"k": "v"}, body, serialize_type=serialize))
            latencies.append(time.perf_counter() - t0)

    start = time.perf_counter()
    await defer.gatherResults([defer.ensureDeferred(worker()) for _ in range(inflight)])
    elapsed = time.perf_counter() - start
    await client.close()
    latencies.sort()
    n = len(latencies)
    print(json.dumps({
        "inflight": inflight, "serialize": serialize.name, "requests": n, "seconds": round(elapsed, 3),
        "rps": round(n / elapsed), "p50_us": round(latencies[n // 2] * 1e6),
        "p99_us": round(latencies[int(n * 0.99)] * 1e6),
    }), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("addr")
    parser.add_argument("--inflight", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--serialize", default="JSON", choices=[t.name for t in SerializeType])
    parser.add_argument("--body", type=int, default=100)
    args = parser.parse_args()
    task.react(lambda reactor: defer.ensureDeferred(
        run(reactor, args.addr, args.inflight, args.seconds, SerializeType[args.serialize], b"x" * args.body)))


if __name__ == "__main__":
    main()
