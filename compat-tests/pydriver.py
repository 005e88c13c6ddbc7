"""
Drives a server implementing the harness echo contract (9001 ECHO, 9002 ONEWAY_SINK,
9003 SINK_COUNT) with rocketmq_tx's own clients, as ClientDriver.java does with the
official NettyRemotingClient. Runs as a fresh process:

    python pydriver.py HOST:PORT JSON|ROCKETMQ twisted|blocking [case ...]

Prints one JSON line per case: {"case": name, "ok": bool, "detail": {...}}.
"""

from __future__ import annotations

import json
import socket
import sys
import time
import zlib
from collections.abc import Callable
from typing import Any

from rocketmq_tx.remoting import RemotingCommand, ResponseCode, SerializeType

ECHO, ONEWAY_SINK, SINK_COUNT, UNKNOWN = 9001, 9002, 9003, 7777
BIG_SIZE = 16 * 1024 * 1024 - 64 * 1024
CASES = ["sync", "async", "oneway", "big", "unknown", "many", "oversized"]
EXT = {"k1": "v1", "unicode": "h\u00e9llo \u4e16\u754c"}


class Blocking:
    """The blocking client behind a call(cmd, timeout) / oneway(cmd) / call_async(cmd, cb) surface."""

    def __init__(self, addr: str) -> None:
        from rocketmq_tx.blocking import BlockingRemotingClient

        self.addr = addr
        self.client = BlockingRemotingClient()

    def call(self, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        return self.client.invoke(self.addr, cmd, timeout)

    def call_async(self, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        # The blocking client has no async mode; a thread makes the call concurrently.
        import concurrent.futures

        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            other = Blocking(self.addr)
            return pool.submit(other.call, cmd, timeout).result(timeout + 1)

    def oneway(self, cmd: RemotingCommand) -> None:
        self.client.invoke_oneway(self.addr, cmd)

    def close(self) -> None:
        self.client.close()


class Twisted:
    """The Twisted client, run on a reactor in a background thread (this is a test driver)."""

    def __init__(self, addr: str) -> None:
        import threading

        from twisted.internet import reactor

        from rocketmq_tx.net import RemotingClient

        self.addr = addr
        self.reactor = reactor
        self.thread = threading.Thread(target=reactor.run, kwargs={"installSignalHandlers": False}, daemon=True)
        self.thread.start()
        self.client = RemotingClient(reactor)

    def _wait(self, make: Callable[[], Any], timeout: float) -> Any:
        from twisted.internet.threads import blockingCallFromThread

        return blockingCallFromThread(self.reactor, make)

    def call(self, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        return self._wait(lambda: self.client.invoke(self.addr, cmd, timeout), timeout)

    def call_async(self, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        import threading

        done = threading.Event()
        box: list[Any] = []

        def callback(result: Any) -> None:
            box.append(result)
            done.set()

        self.reactor.callFromThread(self.client.invoke_async, self.addr, cmd, callback, timeout)
        if not done.wait(timeout + 1):
            raise TimeoutError("callback not invoked")
        if not isinstance(box[0], RemotingCommand):
            box[0].raiseException()
        return box[0]

    def oneway(self, cmd: RemotingCommand) -> None:
        self._wait(lambda: self.client.invoke_oneway(self.addr, cmd), 10)

    def close(self) -> None:
        self._wait(self.client.close, 10)
        self.reactor.callFromThread(self.reactor.stop)


def echoed(response: RemotingCommand, ext: dict[str, str], body: bytes, detail: dict[str, Any]) -> bool:
    detail.update(code=response.code, remark=response.remark, ext=response.ext_fields,
                  serialize=response.serialize_type.name, body_len=len(response.body))
    return (response.code == ResponseCode.SUCCESS and response.remark == "echo"
            and all(response.ext_fields.get(k) == v for k, v in ext.items()) and response.body == body)


def run_case(name: str, client: Any, kind: SerializeType, addr: str, detail: dict[str, Any]) -> bool:
    def req(code: int, ext: dict[str, str] | None = None, body: bytes = b"") -> RemotingCommand:
        return RemotingCommand.request(code, ext, body, serialize_type=kind)

    if name == "sync":
        body = bytes(range(256)) * 4
        return echoed(client.call(req(ECHO, EXT, body), 10), EXT, body, detail)
    if name == "async":
        return echoed(client.call_async(req(ECHO, EXT, b"async"), 10), EXT, b"async", detail)
    if name == "oneway":
        before = int(client.call(req(SINK_COUNT), 10).ext_fields["count"])
        for i in range(5):
            client.oneway(req(ONEWAY_SINK, {"i": str(i)}, f"oneway-{i}".encode()))
        deadline = time.monotonic() + 10
        delta = 0
        while time.monotonic() < deadline:  # oneways carry no acknowledgement: poll the count
            delta = int(client.call(req(SINK_COUNT), 10).ext_fields["count"]) - before
            if delta >= 5:
                break
        detail["delta"] = delta
        return delta == 5
    if name == "big":
        body = bytes(range(256)) * (BIG_SIZE // 256)
        response = client.call(req(ECHO, {"size": str(len(body))}, body), 30)
        detail.update(code=response.code, body_len=len(response.body), crc=zlib.crc32(response.body))
        return response.code == 0 and response.body == body
    if name == "unknown":
        response = client.call(req(UNKNOWN), 10)
        detail.update(code=response.code, remark=response.remark, serialize=response.serialize_type.name)
        return (response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
                and response.remark == f" request type {UNKNOWN} not supported")
    if name == "many":
        for i in range(200):
            ext = {"i": str(i), "pad": "x" * (i % 17 + 1)}
            if not echoed(client.call(req(ECHO, ext, str(i).encode()), 10), ext, str(i).encode(), detail):
                detail["failed_at"] = i
                return False
        return True
    if name == "oversized":
        # A frame declaring 16 MiB + 1 is refused: that connection is closed...
        host, port = addr.rsplit(":", 1)
        bad = socket.create_connection((host, int(port)), timeout=10)
        # (More than 16 bytes: a 5.x server first waits for enough to rule out a PROXY header.)
        bad.sendall((16 * 1024 * 1024 + 1).to_bytes(4, "big") + b"\x00\x00\x00\x02{}" + bytes(64))
        bad.settimeout(10)
        try:
            closed = bad.recv(1) == b""
        except ConnectionResetError:
            closed = True
        bad.close()
        # ...and a client on another connection is unaffected.
        detail["closed"] = closed
        return closed and echoed(client.call(req(ECHO, EXT, b"after"), 10), EXT, b"after", detail)
    detail["error"] = "no such case"
    return False


def main(argv: list[str]) -> int:
    addr, kind, client_kind = argv[0], SerializeType[argv[1]], argv[2]
    cases = argv[3:] or CASES
    client = (Twisted if client_kind == "twisted" else Blocking)(addr)
    for name in cases:
        detail: dict[str, Any] = {}
        try:
            ok = run_case(name, client, kind, addr, detail)
        except Exception as e:  # a failing case is reported, not a crash
            ok = False
            detail["error"] = f"{type(e).__name__}: {e}"
        print(json.dumps({"case": name, "ok": ok, "serialize": kind.name, "detail": detail}), flush=True)
    client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
