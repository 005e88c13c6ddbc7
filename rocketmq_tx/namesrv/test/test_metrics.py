"""The name server's metrics: off by default; with PROM, its port and the latency of every answer."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families
from twisted.internet.testing import MemoryReactorClock
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.metrics.core import render
from rocketmq_tx.namesrv.config import NamesrvSettings
from rocketmq_tx.namesrv.service import NamesrvService
from rocketmq_tx.remoting import RemotingCommand, RequestCode


def settings(case: SynchronousTestCase, **keys: object) -> NamesrvSettings:
    root = case.mktemp()
    return NamesrvSettings({"listenPort": 0, "bindAddress": "127.0.0.1", "kvConfigPath": f"{root}/kv.json",
                            "configStorePath": f"{root}/ns.properties", **keys})


class NamesrvMetricsTests(SynchronousTestCase):
    def test_off_by_default(self) -> None:
        """No metrics object, no observer, and one port (the name server's) bound."""
        reactor = MemoryReactorClock()
        service = NamesrvService(settings(self), reactor)
        service.startService()
        self.addCleanup(service.stopService)
        self.assertIsNone(service.metrics)
        self.assertIsNone(service.factory.processors.observer)
        self.assertEqual(len(reactor.tcpServers), 1)

    def test_prom(self) -> None:
        """PROM: the metrics port is bound too, ready once listening, and every answered request
        is one rocketmq_rpc_latency sample labelled node_type=namesrv."""
        reactor = MemoryReactorClock()
        service = NamesrvService(settings(self, metricsExporterType="PROM", metricsPromExporterPort=0,
                                          metricsPromExporterHost="127.0.0.1"), reactor)
        service.startService()
        self.addCleanup(service.stopService)
        self.assertEqual(len(reactor.tcpServers), 2)
        metrics = service.metrics
        assert metrics is not None
        self.assertTrue(metrics.ready())
        table = service.factory.processors

        class Ctx:
            peer = "127.0.0.1:1"

        for _ in range(3):
            table.dispatch(Ctx(), RemotingCommand.request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER))
        families = {f.name: f for f in text_string_to_metric_families(render(metrics.collect()).decode())}
        counts = [s for s in families["rocketmq_rpc_latency_milliseconds"].samples if s.name.endswith("_count")]
        self.assertEqual([(s.labels["request_code"], s.labels["node_type"], s.value) for s in counts],
                         [("get_all_topic_list_from_nameserver", "namesrv", 3.0)])
        self.assertIn("rocketmq_tx_namesrv_brokers", families)
