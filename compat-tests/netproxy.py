"""
A TCP proxy for partition tests, run on threads in the test process (no Twisted: the
servers under test are separate processes, the test itself is blocking).

Modes, switched at any time:

* ``heal()``: bytes flow both ways (after ``delay`` seconds each, when set);
* ``blackhole()``: the proxy stops forwarding without closing anything, so both peers keep
  a silent, open connection (what a pulled cable looks like until a keepalive or a
  housekeeping timer notices); new connections are accepted and held the same way. What
  the peers write meanwhile waits in the proxy and the kernel's buffers and is delivered
  after ``heal()`` if the connection is still open then (TCP never loses bytes mid-stream);
* ``cut()``: every connection is closed (RST) and new ones are closed as soon as accepted,
  until ``heal()``.
"""

from __future__ import annotations

import socket
import struct
import threading
import time

__all__ = ["PartitionProxy"]

_CHUNK = 64 * 1024


class _Link:
    """One accepted connection and its upstream, pumped by two threads."""

    def __init__(self, proxy: PartitionProxy, client: socket.socket) -> None:
        self.proxy = proxy
        self.client = client
        self.upstream: socket.socket | None = None
        self.closed = False

    def start(self) -> None:
        threading.Thread(target=self._run, daemon=True, name="netproxy-link").start()

    def _run(self) -> None:
        proxy = self.proxy
        # a blackholed network answers no SYN: connect upstream only once healed
        if not proxy._wait_flowing(lambda: self.closed):
            return
        try:
            self.upstream = socket.create_connection(proxy.target, timeout=5)
            self.upstream.settimeout(None)
        except OSError:
            self.close()
            return
        threading.Thread(target=self._pump, args=(self.upstream, self.client), daemon=True).start()
        self._pump(self.client, self.upstream)

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        proxy = self.proxy
        try:
            while True:
                data = src.recv(_CHUNK)
                if not data:
                    break
                due = time.monotonic() + proxy.delay
                if not proxy._wait_flowing(lambda: self.closed):
                    return
                pause = due - time.monotonic()
                if pause > 0:
                    time.sleep(pause)  # the configured link latency, per chunk, order kept
                dst.sendall(data)
                with proxy._lock:
                    proxy.forwarded += len(data)
        except OSError:
            pass
        self.close()

    def close(self, reset: bool = False) -> None:
        if self.closed:
            return
        self.closed = True
        for sock in (self.client, self.upstream):
            if sock is None:
                continue
            try:
                if reset:  # SO_LINGER 0: close sends RST, as a dropped connection looks to the peer
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                else:
                    sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            try:
                sock.close()
            except OSError:
                pass
        with self.proxy._lock:
            self.proxy._cond.notify_all()
            if self in self.proxy._links:
                self.proxy._links.remove(self)


class PartitionProxy:
    """Listens on 127.0.0.1:<free port>, forwards to *target* (``host:port``)."""

    def __init__(self, target: str) -> None:
        host, _, port = target.rpartition(":")
        self.target = (host, int(port))
        self.delay = 0.0
        self.forwarded = 0
        self.accepted = 0
        self._mode = "flowing"
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._links: list[_Link] = []
        self._server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._server.bind(("127.0.0.1", 0))
        self._server.listen(16)
        self.port = self._server.getsockname()[1]
        self.addr = f"127.0.0.1:{self.port}"
        self._stopped = False
        threading.Thread(target=self._accept, daemon=True, name="netproxy-accept").start()

    def _accept(self) -> None:
        while not self._stopped:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            link = _Link(self, client)
            with self._lock:
                self.accepted += 1
                if self._mode == "cut":
                    link.closed = True
                else:
                    self._links.append(link)
            if link.closed:
                link.closed = False
                link.close(reset=True)
                continue
            link.start()

    def _wait_flowing(self, gone) -> bool:
        with self._lock:
            while self._mode != "flowing" and not gone() and not self._stopped:
                self._cond.wait(0.5)
            return self._mode == "flowing" and not gone() and not self._stopped

    def _set(self, mode: str) -> None:
        with self._lock:
            self._mode = mode
            self._cond.notify_all()

    def heal(self, delay: float = 0.0) -> None:
        self.delay = delay
        self._set("flowing")

    def blackhole(self) -> None:
        self._set("blackhole")

    def cut(self) -> None:
        self._set("cut")
        with self._lock:
            links = list(self._links)
        for link in links:
            link.close(reset=True)

    @property
    def open_links(self) -> int:
        with self._lock:
            return len(self._links)

    def stop(self) -> None:
        self._stopped = True
        self._server.close()
        with self._lock:
            links = list(self._links)
            self._cond.notify_all()
        for link in links:
            link.close()
