# -*- test-case-name: rocketmq_tx.metrics.test.test_http -*-
"""
The metrics port, served by the reactor: ``/metrics`` (Prometheus' text format), ``/healthz``
(200 while the process runs) and ``/readyz`` (200 once the server says it is ready, else 503).

A scrape must not hold the reactor: the server's :class:`IMetricsSource` gathers its figures
(in slices, if it has many), and the text is written in the reactor's thread pool from copies.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.process_collector import ProcessCollector
from twisted.application import internet
from twisted.internet import defer, threads
from twisted.internet.endpoints import TCP4ServerEndpoint, TCP6ServerEndpoint
from twisted.logger import Logger
from twisted.python.failure import Failure
from twisted.web import resource, server
from zope.interface import Interface

from rocketmq_tx.metrics.core import render
from rocketmq_tx.net.service import ListeningService

__all__ = ["IMetricsSource", "MetricsResource", "metrics_site", "metrics_service", "ReactorLagMonitor"]

log = Logger()


class IMetricsSource(Interface):
    """A server's figures."""

    def collect() -> Any:
        """The metric families (a list, or a Deferred of one), built from copies."""

    def ready() -> bool:
        """Whether the server serves (``/readyz``)."""


class _Text(resource.Resource):
    isLeaf = True

    def __init__(self, answer: Callable[[], tuple[int, bytes]]) -> None:
        super().__init__()
        self.answer = answer

    def render_GET(self, request: Any) -> bytes:
        code, body = self.answer()
        request.setResponseCode(code)
        request.setHeader(b"content-type", b"text/plain; charset=utf-8")
        return body


class MetricsResource(resource.Resource):
    """
    ``/metrics`` of *source*.

    :param reactor: where the text is written (its thread pool) unless *in_thread* is false.
    :param process: add the process' own figures (prometheus_client's ``ProcessCollector``:
        CPU seconds, RSS, open file descriptors), read in the same thread.
    """

    isLeaf = True

    def __init__(self, source: Any, reactor: Any, in_thread: bool = True, process: bool = True) -> None:
        super().__init__()
        self.source = source
        self.reactor = reactor
        self.in_thread = in_thread
        self.extra = [ProcessCollector(registry=None)] if process else []

    def render_GET(self, request: Any) -> Any:
        d = defer.maybeDeferred(self.source.collect)
        if self.in_thread:
            d.addCallback(lambda families: threads.deferToThreadPool(
                self.reactor, self.reactor.getThreadPool(), render, families, *self.extra))
        else:
            d.addCallback(lambda families: render(families, *self.extra))
        d.addCallbacks(self._write, self._failed, callbackArgs=(request,), errbackArgs=(request,))
        return server.NOT_DONE_YET

    @staticmethod
    def _write(body: bytes, request: Any) -> None:
        if request.finished or getattr(request, "_disconnected", False):
            return
        request.setHeader(b"content-type", CONTENT_TYPE_LATEST.encode())
        request.write(body)
        request.finish()

    @staticmethod
    def _failed(failure: Failure, request: Any) -> None:
        log.failure("metrics scrape failed", failure)
        if request.finished or getattr(request, "_disconnected", False):
            return
        request.setResponseCode(500)
        request.write(b"scrape failed\n")
        request.finish()


def metrics_site(source: Any, reactor: Any, in_thread: bool = True, process: bool = True) -> server.Site:
    """The HTTP site of the metrics port: ``/metrics``, ``/healthz``, ``/readyz``."""
    root = resource.Resource()
    root.putChild(b"metrics", MetricsResource(source, reactor, in_thread, process))
    root.putChild(b"healthz", _Text(lambda: (200, b"ok\n")))
    root.putChild(b"readyz", _Text(lambda: (200, b"ready\n") if source.ready() else (503, b"not ready\n")))
    site = server.Site(root)
    site.noisy = False
    site.log = lambda request: None  # type: ignore[method-assign]  # scrapes every few seconds: no access log
    return site


def metrics_service(label: str, host: str, port: int, site: server.Site, reactor: Any) -> ListeningService:
    """Listens on *host*:*port* and logs ``<label> listening on <host>:<port>``."""
    endpoint: Any
    if ":" in host:
        endpoint = TCP6ServerEndpoint(reactor, port, interface=host)
    else:
        endpoint = TCP4ServerEndpoint(reactor, port, interface=host)
    return ListeningService(label, endpoint, site, reactor)  # type: ignore[arg-type]


class ReactorLagMonitor(internet.TimerService):
    """
    How late the reactor runs a timer: every *interval* s it notes how much later than asked
    the call came; :attr:`max_lag` is the largest lateness since the last :meth:`take`.

    :param wall: the clock lateness is measured on (the reactor's own in tests).
    """

    def __init__(self, clock: Any, interval: float = 0.5, wall: Callable[[], float] = time.monotonic) -> None:
        super().__init__(interval, self._tick)
        self.clock = clock
        self.interval = interval
        self.wall = wall
        self.last_lag = 0.0
        self.max_lag = 0.0
        self._expected: float | None = None

    def _tick(self) -> None:
        now = self.wall()
        if self._expected is not None:
            lag = max(0.0, now - self._expected)
            self.last_lag = lag
            self.max_lag = max(self.max_lag, lag)
        self._expected = now + self.interval

    def stopService(self) -> Any:
        self._expected = None
        return super().stopService()

    def take(self) -> float:
        """The largest lateness since the last call (seconds), and start again."""
        lag, self.max_lag = max(self.max_lag, self.last_lag), 0.0
        return lag
