# -*- test-case-name: rocketmq_tx.metrics.test.test_core -*-
"""
The counting side of the metrics, shared by both servers and free of Twisted.

Events are counted into plain dictionaries (:class:`SeriesTable`): one lookup of a label
tuple and a few additions per event, on the reactor thread, without locks. A scrape copies
the tables (``dict(rows)`` is one C call) and turns the copies into prometheus_client metric
families, which :func:`render` writes in Prometheus' text format, possibly in another thread.

Names, types, units and labels are RocketMQ 5.x's (``BrokerMetricsConstant``,
``RemotingMetricsConstant``, ``DefaultStoreMetricsConstant``) as Java's OpenTelemetry
Prometheus exporter exposes them: a unit is appended to the name (``rocketmq_rpc_latency`` in
milliseconds is ``rocketmq_rpc_latency_milliseconds``), a counter's samples end in ``_total``.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping, MutableSequence, Sequence
from typing import Any, TypeAlias

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.exposition import generate_latest

__all__ = [
    "SeriesTable", "HistogramTable", "Row", "Family", "render", "bool_label", "OVERFLOW_LABEL",
    "RPC_LATENCY_BUCKETS", "MESSAGE_SIZE_BUCKETS", "parse_metrics_label",
]

#: OpenTelemetry's cardinality-limit series: what no longer fits gathers under this label alone.
OVERFLOW_LABEL = "otel_metric_overflow"

#: A series row: a list of numbers, or a compact table's ``array('q')``.
Row: TypeAlias = MutableSequence[Any]

#: Java ``RemotingMetricsManager.getMetricsView``: ms.
RPC_LATENCY_BUCKETS = (1.0, 3.0, 5.0, 7.0, 10.0, 100.0, 1000.0, 2000.0, 3000.0)
#: Java ``BrokerMetricsManager.registerMetricsView``: bytes (1 KiB, 4 KiB, 512 KiB, 1, 2 and 4 MiB).
MESSAGE_SIZE_BUCKETS = (1024.0, 4096.0, 524288.0, 1048576.0, 2097152.0, 4194304.0)


def bool_label(value: bool) -> str:
    """A boolean attribute as the OpenTelemetry exporter writes it."""
    return "true" if value else "false"


def parse_metrics_label(text: str) -> tuple[dict[str, str], list[str]]:
    """
    Java's ``metricsLabel``: ``key:value`` pairs separated by commas, added to every series.

    :returns: the labels, and the items that are not ``key:value`` (Java warns and skips them).
    """
    labels: dict[str, str] = {}
    bad: list[str] = []
    for item in text.split(","):
        if not item:
            continue
        parts = item.split(":")
        if len(parts) != 2:
            bad.append(item)
            continue
        labels[parts[0]] = parts[1]
    return labels, bad


class SeriesTable:
    """
    Label tuples to rows of numbers, at most *limit* of them: past the limit, new label
    tuples share one overflow row (``otel_metric_overflow="true"``, as Java's cardinality
    limit), and *on_capped* is called once.

    The hot path is the caller's: ``row = t.rows.get(key) or t.new_row(key)`` then
    ``row[i] += n``.

    :param width: numbers per row.
    :param compact: rows of 64-bit ints (``array('q')``) rather than lists of Python
        numbers, for the tables counted on every request: the accelerator adds to them in
        place, with no int object made per add and a row's numbers in one block of memory.
        Only for tables whose numbers are ints.
    """

    __slots__ = ("name", "width", "limit", "rows", "overflow", "on_capped", "capped", "compact")

    def __init__(self, name: str, width: int, limit: int, on_capped: Callable[[str, int], object] | None = None,
                 compact: bool = False):
        self.name = name
        self.width = width
        self.limit = limit
        self.rows: dict[tuple, Row] = {}
        self.overflow: Row | None = None
        self.on_capped = on_capped
        self.capped = False
        self.compact = compact

    def _zeros(self) -> Row:
        return array("q", bytes(8 * self.width)) if self.compact else [0] * self.width

    def new_row(self, key: tuple) -> Row:
        """The row for a label tuple not seen yet (or the overflow row past the limit)."""
        if len(self.rows) < self.limit:
            row = self.rows[key] = self._zeros()
            return row
        if self.overflow is None:
            self.overflow = self._zeros()
        if not self.capped:
            self.capped = True
            if self.on_capped is not None:
                self.on_capped(self.name, self.limit)
        return self.overflow

    def add(self, key: tuple, index: int, value: float) -> None:
        """``row[index] += value`` (for the paths that are not hot)."""
        row = self.rows.get(key) or self.new_row(key)
        row[index] += value

    def snapshot(self) -> tuple[dict[tuple, Row], Row | None]:
        """Copies that a scrape may read in another thread while events go on."""
        rows = dict(self.rows)
        return {k: list(v) for k, v in rows.items()}, (list(self.overflow) if self.overflow else None)


class HistogramTable(SeriesTable):
    """
    A :class:`SeriesTable` whose rows are a histogram: a count per bucket (the last one
    ``+Inf``), then the sum; :meth:`observe` is one ``bisect`` and three additions.
    """

    __slots__ = ("bounds",)

    def __init__(self, name: str, bounds: Sequence[float], limit: int,
                 on_capped: Callable[[str, int], object] | None = None, compact: bool = False):
        super().__init__(name, len(bounds) + 2, limit, on_capped, compact)
        self.bounds = tuple(bounds)

    def observe(self, key: tuple, value: float) -> None:
        observe_row(self.rows.get(key) or self.new_row(key), self.bounds, value)


def observe_row(row: Row, bounds: tuple[float, ...], value: float) -> None:
    """One *value* into a histogram *row* (a count per bucket, then the sum)."""
    # bucket i holds bounds[i-1] < v <= bounds[i] (Prometheus' "le")
    row[bisect_left(bounds, value)] += 1
    row[-1] += value


class Family:
    """
    One metric family's description and how to build it from rows.

    :param name: the exposed name (unit and, for counters, ``_total`` excluded).
    :param kind: ``counter``, ``gauge`` or ``histogram``.
    :param labels: the label names of a row's key, after the common labels.
    :param unit: appended to *name* as Java's exporter does (``milliseconds``, ``bytes``), or ``""``.
    :param java: one of Java's families: its HELP text is what Java's exporter writes (a
        counter's or gauge's is its default view's description, not *doc*).
    """

    __slots__ = ("name", "kind", "doc", "labels", "unit", "java")

    def __init__(self, name: str, kind: str, doc: str, labels: Sequence[str] = (), unit: str = "",
                 java: bool = False) -> None:
        self.name = name
        self.kind = kind
        self.doc = doc
        self.labels = tuple(labels)
        self.unit = unit
        self.java = java

    @property
    def help(self) -> str:
        """The HELP line's text."""
        if self.java and self.kind != "histogram":
            return f"default view for {self.kind}."
        return self.doc

    @property
    def exposed_name(self) -> str:
        """The name a scrape shows (the family's; counters' samples add ``_total``)."""
        if self.unit and not self.name.endswith("_" + self.unit):
            return f"{self.name}_{self.unit}"
        return self.name

    def build(self, common: Mapping[str, str], rows: Mapping[tuple, Any], overflow: Any = None,
              bounds: Sequence[float] = (), index: int = 0) -> Metric:
        """
        The family with a sample per row. *rows* map label tuples to a number, or to a row of
        numbers of which *index* is taken (counters and gauges) or which is a histogram row.
        """
        names = list(common) + list(self.labels)
        values = list(common.values())
        name = self.exposed_name
        metric: Metric
        if self.kind == "histogram":
            metric = HistogramMetricFamily(name, self.help, labels=names)
            for key, row in rows.items():
                metric.add_metric(values + list(key), _buckets(bounds, row), row[-1])
            if overflow is not None:
                _overflow_histogram(metric, name, common, bounds, overflow)
            return metric
        cls = CounterMetricFamily if self.kind == "counter" else GaugeMetricFamily
        metric = cls(name, self.help, labels=names)
        for key, row in rows.items():
            metric.add_metric(values + list(key), row if isinstance(row, (int, float)) else row[index])
        if overflow is not None:
            sample = name + "_total" if self.kind == "counter" else name
            metric.add_sample(sample, {**common, OVERFLOW_LABEL: "true"},
                              overflow if isinstance(overflow, (int, float)) else overflow[index])
        return metric


def _buckets(bounds: Sequence[float], row: Sequence[float]) -> list[tuple[str, float]]:
    out: list[tuple[str, float]] = []
    total = 0.0
    for i, bound in enumerate(bounds):
        total += row[i]
        out.append((repr(float(bound)), total))
    out.append(("+Inf", total + row[len(bounds)]))
    return out


def _overflow_histogram(metric: Metric, name: str, common: Mapping[str, str], bounds: Sequence[float],
                        row: Sequence[float]) -> None:
    labels = {**common, OVERFLOW_LABEL: "true"}
    buckets = _buckets(bounds, row)
    for le, count in buckets:
        metric.add_sample(name + "_bucket", {**labels, "le": le}, count)
    metric.add_sample(name + "_count", labels, buckets[-1][1])
    metric.add_sample(name + "_sum", labels, row[-1])


class _Families:
    """What ``generate_latest`` wants: an object whose ``collect()`` gives the families."""

    def __init__(self, families: Iterable[Metric]) -> None:
        self.families = families

    def collect(self) -> Iterable[Metric]:
        return self.families


def render(families: Iterable[Metric | Callable[[], Metric]], *extra_collectors: Any) -> bytes:
    """
    Prometheus' text format (version 0.0.4) of *families* (metric families, or functions that
    build one: the building then happens here, in the caller's thread) and of
    *extra_collectors*' own. A family without samples is left out, as Java's exporter leaves out
    an instrument with no data.
    """
    out = []
    for family in families:
        metric = family() if callable(family) else family
        if metric.samples:
            out.append(metric)
    for collector in extra_collectors:
        out.extend(collector.collect())
    return generate_latest(_Families(out))
