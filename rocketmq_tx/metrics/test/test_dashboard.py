"""conf/grafana-rocketmq-tx.json queries only metrics the servers register."""

from __future__ import annotations

import json
import re
from pathlib import Path

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.broker.metrics import FAMILIES as BROKER
from rocketmq_tx.namesrv.metrics import FAMILIES as NAMESRV

DASHBOARD = Path(__file__).resolve().parents[3] / "conf" / "grafana-rocketmq-tx.json"
#: prometheus_client's ProcessCollector, which both servers' scrapes include
PROCESS = {"process_cpu_seconds", "process_resident_memory_bytes", "process_virtual_memory_bytes",
           "process_open_fds", "process_max_fds", "process_start_time_seconds"}
_NAME = re.compile(r"\b((?:rocketmq|process)_[a-z0-9_]+)")
_SUFFIXES = ("_bucket", "_count", "_sum", "_total")


def _family(sample: str, known: set[str]) -> str:
    if sample in known:
        return sample
    for suffix in _SUFFIXES:
        if sample.endswith(suffix) and sample[:-len(suffix)] in known:
            return sample[:-len(suffix)]
    return sample


class DashboardTests(SynchronousTestCase):
    def test_every_metric_exists(self) -> None:
        """Each metric name in the dashboard's expressions (and variables) is one we expose."""
        known = {f.exposed_name for f in list(BROKER.values()) + list(NAMESRV.values())} | PROCESS
        dashboard = json.loads(DASHBOARD.read_text())
        exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
        exprs += [v["query"] for v in dashboard["templating"]["list"] if v["type"] == "query"]
        self.assertGreater(len(exprs), 10)
        used = {_family(name, known) for e in exprs for name in _NAME.findall(e)}
        self.assertEqual(used - known, set())
        # and the dashboard shows the figures the issue names
        for name in ("rocketmq_messages_in", "rocketmq_consumer_lag_messages", "rocketmq_rpc_latency_milliseconds",
                     "rocketmq_storage_flush_behind_bytes", "rocketmq_tx_reactor_lag_seconds"):
            self.assertIn(name, used)
