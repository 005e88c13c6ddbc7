# -*- test-case-name: rocketmq_tx.namesrv.test.test_metrics -*-
"""
The name server's metrics (``metricsExporterType=PROM``). Java 5.x's name server exports none
(only its embedded controller has the keys); ours exports Java's ``rocketmq_rpc_latency`` for
every request it answers, and, under our own prefix, its route table's size.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prometheus_client.core import Metric
from twisted.logger import Logger

from rocketmq_tx.common.native import ACCELERATED
from rocketmq_tx.metrics.core import Family, parse_metrics_label
from rocketmq_tx.metrics.rpc import RpcLatency

__all__ = ["NamesrvMetrics", "FAMILIES"]

log = Logger()

FAMILIES = {
    "brokers": Family("rocketmq_tx_namesrv_brokers", "gauge", "Live brokers registered"),
    "topics": Family("rocketmq_tx_namesrv_topics", "gauge", "Topics in the route table"),
    "reactor_lag": Family("rocketmq_tx_reactor_lag_seconds", "gauge",
                          "Largest lateness of a reactor timer since the last scrape"),
    "native": Family("rocketmq_tx_native_accelerator", "gauge",
                     "1 when the C accelerator (rocketmq_tx._speedups) is in use"),
}


class NamesrvMetrics:
    """
    :param controller: the name server (settings, route table).
    :param node_id: this name server's address (the ``node_id`` label), once it listens.
    :param is_listening: whether its port listens (``/readyz``).
    """

    def __init__(self, controller: Any, node_id: Callable[[], str], is_listening: Callable[[], bool]) -> None:
        self.controller = controller
        s = controller.settings
        extra, bad = parse_metrics_label(s["metricsLabel"])
        if bad:
            log.warn("metricsLabel is not valid: {labels}", labels=s["metricsLabel"])
        self.node_id = node_id
        self.is_listening = is_listening
        common = {"node_type": "namesrv"}
        if s["metricsInDelta"]:
            common["aggregation"] = "delta"
        self.common: dict[str, str] = {**extra, **common}
        self.rpc = RpcLatency(max(1, s["metricsSeriesLimit"]), self._capped)
        self.reactor_lag: Callable[[], float] | None = None

    @staticmethod
    def _capped(name: str, limit: int) -> None:
        log.warn("metrics: {name} reached metricsSeriesLimit ({limit} series); further label sets are counted "
                 "together under otel_metric_overflow=\"true\"", name=name, limit=limit)

    def ready(self) -> bool:
        """``/readyz``: the name server's port listens."""
        return self.is_listening()

    def collect(self) -> list[Metric | Callable[[], Metric]]:
        routes = self.controller.route_info_manager
        common = {**self.common, "node_id": self.node_id()}
        out: list[Metric | Callable[[], Metric]] = [
            self.rpc.lazy(common),
            FAMILIES["brokers"].build(common, {(): len(routes.broker_live_table)}),
            FAMILIES["topics"].build(common, {(): len(routes.topic_queue_table)}),
            FAMILIES["native"].build(common, {(): 1 if ACCELERATED else 0}),
        ]
        if self.reactor_lag is not None:
            out.append(FAMILIES["reactor_lag"].build(common, {(): self.reactor_lag()}))
        return out
