# -*- test-case-name: rocketmq_tx.store.timer.test.test_formats -*-
"""
Java ``TimerMetrics``: pending timer messages per real topic, in
``<root>/config/timermetrics`` as fastjson writes ``TimerMetricsSerializeWrapper``:
``{"dataVersion":{"counter":..,"stateVersion":..,"timestamp":..},"timingCount":{topic:
{"count":..,"timeStamp":..}}}``. The same text answers GET_TIMER_METRICS (61).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from typing import Any

from rocketmq_tx.store.configfile import ConfigFile

__all__ = ["TimerMetrics", "timer_metrics_path"]

log = logging.getLogger("rocketmq_tx.store.timer")


def timer_metrics_path(root: str) -> str:
    """Java ``BrokerPathConfigHelper.getTimerMetricsPath``: ``<root>/config/timermetrics``."""
    return os.path.join(root, "config", "timermetrics")


class TimerMetrics:
    """
    :param path: the ``timermetrics`` file.
    :param now_ms: clock for the time stamps.
    """

    def __init__(self, path: str, now_ms: Callable[[], int]) -> None:
        self.file = ConfigFile(path)
        self.now_ms = now_ms
        #: topic -> [count, timeStamp]
        self.timing_count: dict[str, list[int]] = {}
        self.counter = 0
        self.state_version = 0
        self.timestamp = now_ms()

    def add_and_get(self, topic: str, value: int) -> int:
        """Java ``addAndGet``: the topic's count moves by *value*; the DataVersion moves on."""
        self.counter += 1
        self.timestamp = now = self.now_ms()
        pair = self.timing_count.get(topic)
        if pair is None:
            pair = self.timing_count[topic] = [0, now]
        pair[0] += value
        pair[1] = now
        return pair[0]

    def get_timing_count(self, topic: str) -> int:
        pair = self.timing_count.get(topic)
        return 0 if pair is None else pair[0]

    def encode(self) -> str:
        """Compact JSON, fastjson's field order (alphabetical); non-ASCII escaped (BrowserCompatible)."""
        doc: dict[str, Any] = {
            "dataVersion": {"counter": self.counter, "stateVersion": self.state_version, "timestamp": self.timestamp},
            "timingCount": {t: {"count": c, "timeStamp": ts} for t, (c, ts) in self.timing_count.items()},
        }
        return json.dumps(doc, separators=(",", ":"), ensure_ascii=True)

    def decode(self, doc: Any) -> None:
        """Merge a parsed file (Java ``decode``: putAll, then the DataVersion)."""
        if not isinstance(doc, dict):
            raise ValueError("timermetrics is not a JSON object")
        table = doc.get("timingCount") or {}
        if not isinstance(table, dict):
            raise ValueError("timermetrics timingCount is not an object")
        for topic, metric in table.items():
            if isinstance(metric, dict):
                self.timing_count[str(topic)] = [int(metric.get("count", 0)), int(metric.get("timeStamp", 0))]
        dv = doc.get("dataVersion") or {}
        if isinstance(dv, dict):
            self.counter = int(dv.get("counter", 0))
            self.state_version = int(dv.get("stateVersion", 0))
            self.timestamp = int(dv.get("timestamp", 0))

    def load(self) -> bool:
        """Read the file (or its ``.bak``); a missing file is empty. ``False`` on a bad one."""
        doc = self.file.load()
        if doc is None:
            return True
        try:
            self.decode(doc)
        except (ValueError, TypeError) as e:
            log.error("bad %s: %s", self.file.path, e)
            return False
        return True

    def persist(self, text: str | None = None) -> bool:
        return self.file.persist(self.encode() if text is None else text)
