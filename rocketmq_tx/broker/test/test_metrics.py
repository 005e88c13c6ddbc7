"""The broker's Prometheus metrics: counted where events happen, off by default, shown on scrape."""

from __future__ import annotations

from twisted.internet.defer import Deferred

from rocketmq_tx.broker import metrics as broker_metrics
from rocketmq_tx.broker.metrics import FAMILIES, BrokerMetrics, message_type
from rocketmq_tx.broker.service import BrokerService
from rocketmq_tx.broker.test.test_pull import TOPIC, PullTestCase
from rocketmq_tx.broker.test.util import FakeReactor, broker_settings, heartbeat
from rocketmq_tx.common.route import TopicConfig
from rocketmq_tx.config import ConfigError
from rocketmq_tx.metrics.core import render
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.remoting.headers.client import ConsumerSendMsgBackRequestHeader
from rocketmq_tx.testing.metrics import families as parse_families
from rocketmq_tx.testing.metrics import sample_total as value


def scrape(metrics: BrokerMetrics) -> dict:
    """name -> family, as prometheus_client's parser reads the text."""
    d = metrics.collect()
    assert isinstance(d, Deferred)
    families: list = []
    d.addCallback(families.extend)
    metrics.controller.reactor.advance(0)  # the sliced lag work
    return parse_families(render(families).decode())



class MetricsCountTests(PullTestCase):
    keys = {"metricsExporterType": "PROM", "brokerClusterName": "C1"}

    def test_sends_and_pulls_counted(self) -> None:
        """N sends: rocketmq_messages_in_total N and the bytes stored; a pull of them:
        rocketmq_messages_out_total N for the group; the message size histogram counts each put."""
        for i in range(5):
            self.put(queue_id=i % 4)
        metrics = self.controller.metrics
        assert metrics is not None
        families = scrape(metrics)
        labels = {"topic": TOPIC, "message_type": "normal", "is_system": "false", "cluster": "C1",
                  "node_type": "broker", "node_id": "broker-a"}
        self.assertEqual(value(families, "rocketmq_messages_in", "rocketmq_messages_in_total", **labels), 5)
        stored = self.store.get_max_phy_offset()
        self.assertEqual(value(families, "rocketmq_throughput_in", "rocketmq_throughput_in_total", **labels), stored)
        self.assertEqual(value(families, "rocketmq_message_size", "rocketmq_message_size_count", **labels), 5)
        got = sum(len(self.pull(0, q).body and [1] or []) for q in range(4))
        self.assertEqual(got, 4)
        families = scrape(metrics)
        self.assertEqual(value(families, "rocketmq_messages_out", "rocketmq_messages_out_total", topic=TOPIC,
                               consumer_group="g", is_system="false"), 5)

    def test_rpc_histogram_counts_requests(self) -> None:
        """rocketmq_rpc_latency_milliseconds' _count, by request and response code, equals the
        requests answered; the +Inf bucket equals the count."""
        for _ in range(3):
            self.put()
        self.call(RequestCode.GET_MAX_OFFSET, {"topic": "Nope", "queueId": "0"})
        families = scrape(self.controller.metrics)  # type: ignore[arg-type]
        hist = "rocketmq_rpc_latency_milliseconds"
        sends = value(families, hist, hist + "_count", request_code="send_message", response_code="success",
                      protocol_type="remoting", result="success", is_long_polling="false")
        self.assertEqual(sends, 3)
        self.assertEqual(value(families, hist, hist + "_bucket", request_code="send_message", le="+Inf"), 3)
        self.assertEqual(value(families, hist, hist + "_count", request_code="get_max_offset"), 1)

    def test_held_pull_is_long_polling(self) -> None:
        """A pull answered later (held, then woken by a put) is is_long_polling="true"."""
        d = self.pull_later(0)
        self.put()
        self.reactor.advance(0.1)
        self.assertEqual(self.successResultOf(d).code, ResponseCode.SUCCESS)
        families = scrape(self.controller.metrics)  # type: ignore[arg-type]
        hist = "rocketmq_rpc_latency_milliseconds"
        self.assertEqual(value(families, hist, hist + "_count", request_code="pull_message",
                               is_long_polling="true"), 1)

    def test_lag_inflight_ready(self) -> None:
        """An online group with committed offset 0 lags by every message; pulled but not
        committed they are in flight; committed at the end the lag is 0."""
        self.assertEqual(self.call(RequestCode.HEART_BEAT, body=heartbeat(consumers={"g": {TOPIC: "*"}}).body).code,
                         ResponseCode.SUCCESS)
        for _ in range(3):
            self.put(queue_id=0)
        self.controller.consumer_offset_manager.commit_offset("g", TOPIC, 0, 0)
        self.reactor.advance(1.5)
        labels = {"consumer_group": "g", "topic": TOPIC, "is_retry": "false"}
        families = scrape(self.controller.metrics)  # type: ignore[arg-type]
        self.assertEqual(value(families, "rocketmq_consumer_lag_messages", **labels), 3)
        self.assertEqual(value(families, "rocketmq_consumer_ready_messages", **labels), 3)
        self.assertEqual(value(families, "rocketmq_consumer_lag_latency_milliseconds", **labels), 1500)
        self.pull(0, 0)
        families = scrape(self.controller.metrics)  # type: ignore[arg-type]
        self.assertEqual(value(families, "rocketmq_consumer_inflight_messages", **labels), 3)
        self.assertEqual(value(families, "rocketmq_consumer_ready_messages", **labels), 0)
        self.controller.consumer_offset_manager.commit_offset("g", TOPIC, 0, 3)
        families = scrape(self.controller.metrics)  # type: ignore[arg-type]
        self.assertEqual(value(families, "rocketmq_consumer_lag_messages", **labels), 0)
        self.assertEqual(value(families, "rocketmq_consumer_lag_latency_milliseconds", **labels), 0)
        self.assertEqual(value(families, "rocketmq_consumer_inflight_messages", **labels), 0)
        self.assertEqual(value(families, "rocketmq_consumer_connections", consumer_group="g", consume_mode="push",
                               protocol_type="remoting"), 1)

    def test_series_limit(self) -> None:
        """Past metricsSeriesLimit new topics share one otel_metric_overflow series, counted exactly."""
        metrics = self.controller.metrics
        assert metrics is not None
        metrics.messages_in.limit = 2
        for i in range(4):
            metrics.message_in(f"T{i}", "normal", 1, 100)
        families = scrape(metrics)
        samples = families["rocketmq_messages_in"].samples
        self.assertEqual(len(samples), 3)
        self.assertEqual(value(families, "rocketmq_messages_in", otel_metric_overflow="true"), 2)
        self.assertEqual(sum(s.value for s in samples), 4)
        self.flushLoggedErrors()

    def test_lag_sliced(self) -> None:
        """The per-group gauges give the reactor back between steps when a slice is used up: the
        scrape completes over several turns, each family once, one series per (group, topic)."""
        metrics = self.controller.metrics
        assert metrics is not None
        subs = {f"T{i}": "*" for i in range(3)}
        for topic in subs:
            self.controller.topic_config_manager.update_topic_config(TopicConfig(topic, 1, 1))
        self.call(RequestCode.HEART_BEAT, body=heartbeat(consumers={"g": subs}).body)
        self.patch(broker_metrics, "SLICE_SECONDS", -1.0)
        scheduled = len(self.reactor.getDelayedCalls())
        d = metrics.collect()
        self.assertFalse(d.called)  # one (group, topic) done, the rest on a later turn
        self.assertEqual(len(self.reactor.getDelayedCalls()), scheduled + 1)
        self.reactor.advance(0)
        text = render(self.successResultOf(d)).decode()
        self.assertEqual(text.count("# TYPE rocketmq_consumer_lag_messages gauge"), 1)
        families = parse_families(text)
        self.assertEqual(sorted(s.labels["topic"] for s in families["rocketmq_consumer_lag_messages"].samples),
                         ["T0", "T1", "T2"])

    def test_empty_family_left_out(self) -> None:
        """A family with no series yet is not in the text at all (as Java's exporter)."""
        families = scrape(self.controller.metrics)  # type: ignore[arg-type]
        self.assertNotIn("rocketmq_send_to_dlq_messages", families)
        self.assertIn("rocketmq_topic_number", families)

    def test_lag_series_bounded(self) -> None:
        """The per-group gauges stop at metricsSeriesLimit (group, topic) pairs."""
        metrics = self.controller.metrics
        assert metrics is not None
        metrics.limit = 3
        subs = {f"T{i}": "*" for i in range(6)}
        for topic in subs:
            self.controller.topic_config_manager.update_topic_config(TopicConfig(topic, 1, 1))
        self.call(RequestCode.HEART_BEAT, body=heartbeat(consumers={"g": subs}).body)
        families = scrape(metrics)
        self.assertEqual(len(families["rocketmq_consumer_lag_messages"].samples), 3)

    def test_dlq_counted(self) -> None:
        """A send back past the group's max reconsume times counts in rocketmq_send_to_dlq_messages_total."""
        self.put()
        header = ConsumerSendMsgBackRequestHeader(0, "g", -1, origin_topic=TOPIC)  # type: ignore[call-arg]
        response = self.call(RequestCode.CONSUMER_SEND_MSG_BACK, header.to_ext_fields())
        self.assertEqual(response.code, ResponseCode.SUCCESS, response.remark)
        families = scrape(self.controller.metrics)  # type: ignore[arg-type]
        self.assertEqual(value(families, "rocketmq_send_to_dlq_messages", "rocketmq_send_to_dlq_messages_total",
                               consumer_group="g", topic=TOPIC), 1)

    def test_every_family_exposed(self) -> None:
        """Every family FAMILIES lists appears in a scrape under its exposed name once it has data."""
        self.call(RequestCode.HEART_BEAT, body=heartbeat(producers=("pg",), consumers={"g": {TOPIC: "*"}}).body)
        metrics = self.controller.metrics
        assert metrics is not None
        metrics.reactor_lag = lambda: 0.0
        self.put()
        self.pull(0)
        metrics.dlq("g", TOPIC)
        metrics.group_commit(3)
        families = scrape(metrics)
        for family in FAMILIES.values():
            self.assertIn(family.exposed_name, families)


class MetricsOffTests(PullTestCase):
    def test_off_by_default(self) -> None:
        """metricsExporterType defaults to DISABLE: nothing is counted, no observer runs."""
        self.assertEqual(self.controller.settings["metricsExporterType"], "DISABLE")
        self.assertIsNone(self.controller.metrics)
        self.assertIsNone(self.table.observer)
        self.put()
        self.assertEqual(self.pull(0).code, ResponseCode.SUCCESS)


class ServiceTests(PullTestCase):
    def test_port_bound_only_with_prom(self) -> None:
        """BrokerService listens on metricsPromExporterPort only with PROM."""
        reactor = FakeReactor()
        off = BrokerService(broker_settings(self, listenPort=0), reactor, drive_store=False)
        self.assertIsNone(off.metrics_listener)
        reactor = FakeReactor()
        on = BrokerService(broker_settings(self, listenPort=0, metricsExporterType="PROM",
                                           metricsPromExporterPort=0, metricsPromExporterHost="127.0.0.1"),
                           reactor, drive_store=False)
        self.assertIsNotNone(on.metrics_listener)

    def test_ready(self) -> None:
        """/readyz's answer: not before the store is loaded, nor before a full registration is accepted."""
        reactor = FakeReactor()
        service = BrokerService(broker_settings(self, listenPort=0, metricsExporterType="PROM",
                                                metricsPromExporterPort=0, namesrvAddr="127.0.0.1:9876"),
                                reactor, drive_store=False)
        metrics = service.controller.metrics
        assert metrics is not None
        self.assertFalse(metrics.ready())
        metrics.store_ready = True
        self.assertFalse(metrics.ready())  # no name server has answered
        lane = service.registrar._current_lanes()[0]
        lane.synced = object()
        self.assertTrue(metrics.ready())
        lane.retry = True  # a registration failed since
        self.assertFalse(metrics.ready())
        service.controller.shutdown()

    def test_exporter_types(self) -> None:
        """OTLP_GRPC and LOG are refused at start with one line; names and Java's numbers parse."""
        for kind in ("OTLP_GRPC", "LOG", "1", "3", "PROMETHEUS"):
            settings = broker_settings(self)
            settings["metricsExporterType"] = kind
            with self.assertRaises(ConfigError):
                settings.validate()
        for kind in ("PROM", "DISABLE", "2", "0"):
            settings = broker_settings(self)
            settings["metricsExporterType"] = kind
            settings.validate()


class MessageTypeTests(PullTestCase):
    def test_message_type(self) -> None:
        """Java getMessageType: TRAN_MSG, then the sharding key, then any delay property."""
        self.assertEqual(message_type({}), "normal")
        self.assertEqual(message_type({"TRAN_MSG": "true", "DELAY": "3"}), "transaction")
        self.assertEqual(message_type({"__SHARDINGKEY": "a"}), "fifo")
        self.assertEqual(message_type({"TIMER_DELAY_SEC": "3"}), "delay")
        self.assertEqual(message_type({"DELAY": "2"}), "delay")

    def test_oneway_has_no_sample(self) -> None:
        """A request answered with nothing (oneway) leaves no latency sample, as in Java."""
        metrics = self.controller.metrics
        self.assertIsNone(metrics)
        m = BrokerMetrics(self.controller)
        m.rpc.rpc_done(RemotingCommand.request(RequestCode.HEART_BEAT), None, 0.0, False)
        self.assertEqual(m.rpc.table.rows, {})
