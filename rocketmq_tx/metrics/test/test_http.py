"""The metrics port's resources: /metrics, /healthz, /readyz, and the reactor lag monitor."""

from __future__ import annotations

from prometheus_client.core import GaugeMetricFamily
from twisted.internet import task
from twisted.trial.unittest import SynchronousTestCase
from twisted.web.test.requesthelper import DummyRequest

from rocketmq_tx.metrics.http import ReactorLagMonitor, metrics_site


class Source:
    def __init__(self) -> None:
        self.is_ready = False

    def collect(self) -> list:
        return [GaugeMetricFamily("rocketmq_topic_number", "topics", value=3)]

    def ready(self) -> bool:
        return self.is_ready


def get(site, path: bytes) -> DummyRequest:  # type: ignore[no-untyped-def]
    request = DummyRequest(path.strip(b"/").split(b"/"))
    request.method = b"GET"
    resource = site.getResourceFor(request)
    body = resource.render(request)
    if isinstance(body, bytes):
        request.write(body)
        request.finish()
    return request


class ResourceTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.source = Source()
        self.site = metrics_site(self.source, None, in_thread=False, process=False)

    def test_metrics(self) -> None:
        """/metrics: Prometheus' text format of what the source collects."""
        request = get(self.site, b"/metrics")
        self.assertEqual(request.finished, 1)
        self.assertIn(b"rocketmq_topic_number 3.0", b"".join(request.written))
        self.assertIn(b"text/plain", request.responseHeaders.getRawHeaders(b"content-type")[0])

    def test_health_and_readiness(self) -> None:
        """/healthz is 200 while up; /readyz 503 until the source is ready, then 200."""
        self.assertEqual(get(self.site, b"/healthz").responseCode, 200)
        self.assertEqual(get(self.site, b"/readyz").responseCode, 503)
        self.source.is_ready = True
        self.assertEqual(get(self.site, b"/readyz").responseCode, 200)

    def test_process_collector(self) -> None:
        """The process' own figures (RSS, CPU, fds) come with the scrape."""
        site = metrics_site(self.source, None, in_thread=False, process=True)
        self.assertIn(b"process_resident_memory_bytes", b"".join(get(site, b"/metrics").written))


class LagTests(SynchronousTestCase):
    def test_lateness(self) -> None:
        """A timer run late by 0.3 s reports 0.3 s once, then 0 after take()."""
        clock = task.Clock()
        monitor = ReactorLagMonitor(clock, interval=0.5, wall=clock.seconds)
        monitor.startService()
        clock.advance(0.5)
        self.assertEqual(monitor.take(), 0.0)
        clock.advance(0.8)  # the call due at 1.0 runs at 1.3
        self.assertAlmostEqual(monitor.take(), 0.3)
        clock.advance(0.5)  # due at 1.8 (the LoopingCall keeps its schedule)
        self.assertLess(monitor.take(), 0.3)
        monitor.stopService()
