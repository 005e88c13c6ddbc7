"""The counting primitives: rows, overflow past the limit, histogram buckets, the text they render to."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.metrics.core import (
    RPC_LATENCY_BUCKETS,
    Family,
    HistogramTable,
    SeriesTable,
    parse_metrics_label,
    render,
)
from rocketmq_tx.metrics.rpc import RpcLatency, request_code_desc, response_code_desc
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode


def parse(families: list) -> dict:
    return {f.name: f for f in text_string_to_metric_families(render(families).decode())}


class SeriesTableTests(SynchronousTestCase):
    def test_overflow_after_limit(self) -> None:
        """Past the limit new keys share one overflow row; on_capped is called once."""
        capped = []
        table = SeriesTable("x", 1, 2, lambda name, limit: capped.append((name, limit)))
        for key in ("a", "b", "c", "d", "a"):
            table.add((key,), 0, 1)
        self.assertEqual(table.rows, {("a",): [2], ("b",): [1]})
        self.assertEqual(table.overflow, [2])
        self.assertEqual(capped, [("x", 2)])

    def test_counter_text(self) -> None:
        """A counter family: samples end in _total, common labels first, overflow labelled."""
        table = SeriesTable("rocketmq_messages_in", 2, 1)
        table.add(("T",), 0, 3)
        table.add(("U",), 0, 4)
        rows, overflow = table.snapshot()
        family = Family("rocketmq_messages_in", "counter", "in", ("topic",))
        out = parse([family.build({"cluster": "C"}, rows, overflow, index=0)])
        samples = [(s.name, s.labels, s.value) for s in out["rocketmq_messages_in"].samples]
        self.assertEqual(samples, [("rocketmq_messages_in_total", {"cluster": "C", "topic": "T"}, 3.0),
                                   ("rocketmq_messages_in_total", {"cluster": "C", "otel_metric_overflow": "true"},
                                    4.0)])

    def test_unit_suffix(self) -> None:
        """A unit is appended to the name unless the name already ends with it (as Java's exporter)."""
        self.assertEqual(Family("rocketmq_rpc_latency", "histogram", "", unit="milliseconds").exposed_name,
                         "rocketmq_rpc_latency_milliseconds")
        self.assertEqual(Family("rocketmq_storage_flush_behind_bytes", "gauge", "", unit="bytes").exposed_name,
                         "rocketmq_storage_flush_behind_bytes")


class HistogramTests(SynchronousTestCase):
    def test_buckets_are_le(self) -> None:
        """A value equal to a bound falls in that bound's bucket; buckets are cumulative, +Inf is the count."""
        table = HistogramTable("h", (1.0, 3.0), 10)
        for v in (0, 1, 2, 3, 4, 100):
            table.observe(("k",), v)
        rows, _ = table.snapshot()
        out = parse([Family("h", "histogram", "", ("key",)).build({}, rows, bounds=(1.0, 3.0))])
        buckets = {s.labels["le"]: s.value for s in out["h"].samples if s.name == "h_bucket"}
        self.assertEqual(buckets, {"1.0": 2, "3.0": 4, "+Inf": 6})
        values = {s.name: s.value for s in out["h"].samples if s.name != "h_bucket"}
        self.assertEqual(values, {"h_count": 6, "h_sum": 110})


class RpcLatencyTests(SynchronousTestCase):
    def test_counts_by_codes(self) -> None:
        """One sample per answered request, labelled with Java's lower-case code names; latency
        in whole ms into Java's buckets; no response, no sample."""
        now = [10.0]
        rpc = RpcLatency(100, clock=lambda: now[0])
        request = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2)
        for elapsed in (0.0005, 0.004, 2.5):
            now[0] = 10.0 + elapsed
            rpc.rpc_done(request, request.make_response(ResponseCode.SUCCESS), 10.0, False)
        rpc.rpc_done(request, None, 10.0, False)
        rpc.rpc_done(RemotingCommand.request(999999), request.make_response(ResponseCode.SYSTEM_ERROR), 10.0, False)
        out = parse([rpc.build({"node_type": "broker"})])["rocketmq_rpc_latency_milliseconds"]
        count = {(s.labels["request_code"], s.labels["response_code"]): s.value
                 for s in out.samples if s.name.endswith("_count")}
        self.assertEqual(count, {("send_message_v2", "success"): 3, ("999999", "system_error"): 1})
        buckets = [s.labels["le"] for s in out.samples
                   if s.name.endswith("_bucket") and s.labels["request_code"] == "send_message_v2"]
        self.assertEqual(buckets, [repr(b) for b in RPC_LATENCY_BUCKETS] + ["+Inf"])
        le = {s.labels["le"]: s.value for s in out.samples
              if s.name.endswith("_bucket") and s.labels["request_code"] == "send_message_v2"}
        self.assertEqual((le["1.0"], le["5.0"], le["2000.0"], le["3000.0"]), (1, 2, 2, 3))

    def test_code_names(self) -> None:
        """Java's RemotingHelper descriptions: the field name in lower case, else the number."""
        self.assertEqual(request_code_desc(10), "send_message")
        self.assertEqual(response_code_desc(0), "success")
        self.assertEqual(request_code_desc(123456), "123456")


class LabelTests(SynchronousTestCase):
    def test_metrics_label(self) -> None:
        """metricsLabel: key:value pairs by commas; others are reported, not applied."""
        self.assertEqual(parse_metrics_label("a:1,,b:2,bad,c:d:e"), ({"a": "1", "b": "2"}, ["bad", "c:d:e"]))
