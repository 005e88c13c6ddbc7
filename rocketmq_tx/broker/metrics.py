# -*- test-case-name: rocketmq_tx.broker.test.test_metrics -*-
"""
The broker's metrics (``metricsExporterType=PROM``): Java 5.x's ``BrokerMetricsManager``,
``RemotingMetricsManager`` and ``DefaultStoreMetricsManager`` figures with their names, labels
and buckets, plus a few of our own under ``rocketmq_tx_``.

Counters are counted where the events happen (the send and pull processors, the POP path, DLQ
sends, every request's answer) into :class:`~rocketmq_tx.metrics.core.SeriesTable` rows; the
gauges (connections, lag, storage) are computed when scraped, the per-group ones a few ms per
reactor turn, at most ``metricsSeriesLimit`` series per family.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

from prometheus_client.core import Metric
from twisted.internet.defer import Deferred
from twisted.logger import Logger

from rocketmq_tx.broker.topicconfig import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX, is_system_topic
from rocketmq_tx.common.native import ACCELERATED, speedups
from rocketmq_tx.common.route import PermName
from rocketmq_tx.common.version import mq_version_desc
from rocketmq_tx.metrics.core import (
    MESSAGE_SIZE_BUCKETS,
    Family,
    HistogramTable,
    Row,
    SeriesTable,
    bool_label,
    observe_row,
    parse_metrics_label,
)
from rocketmq_tx.metrics.rpc import RPC_LATENCY, RpcLatency
from rocketmq_tx.remoting.codes import LanguageCode

__all__ = ["BrokerMetrics", "FAMILIES", "message_type", "is_system_group"]

log = Logger()

#: Java ``MixAll.CID_RMQ_SYS_PREFIX``
CID_RMQ_SYS_PREFIX = "CID_RMQ_SYS_"
#: the time a scrape's sliced work may hold the reactor before giving it back
SLICE_SECONDS = 0.003

F = Family
#: Every family the broker exposes, by our short name. Java's names (BrokerMetricsConstant,
#: RemotingMetricsConstant, DefaultStoreMetricsConstant), units as its exporter appends them.
FAMILIES: dict[str, Family] = {
    "messages_in": F("rocketmq_messages_in", "counter", "Total number of incoming messages",
                     ("topic", "message_type", "is_system"), java=True),
    "throughput_in": F("rocketmq_throughput_in", "counter", "Total traffic of incoming messages",
                       ("topic", "message_type", "is_system"), java=True),
    "message_size": F("rocketmq_message_size", "histogram", "Incoming messages size",
                      ("topic", "message_type", "is_system"), java=True),
    "messages_out": F("rocketmq_messages_out", "counter", "Total number of outgoing messages",
                      ("topic", "consumer_group", "is_system"), java=True),
    "throughput_out": F("rocketmq_throughput_out", "counter", "Total traffic of outgoing messages",
                        ("topic", "consumer_group", "is_system"), java=True),
    "send_to_dlq": F("rocketmq_send_to_dlq_messages", "counter", "Consumer send to DLQ messages",
                     ("consumer_group", "topic", "is_system"), java=True),
    "rpc_latency": RPC_LATENCY,
    "broker_permission": F("rocketmq_broker_permission", "gauge", "Broker permission", java=True),
    "topic_number": F("rocketmq_topic_number", "gauge", "Active topic number", java=True),
    "consumer_group_number": F("rocketmq_consumer_group_number", "gauge", "Active subscription group number",
                               java=True),
    "producer_connections": F("rocketmq_producer_connections", "gauge", "Producer connections",
                              ("language", "version", "protocol_type"), java=True),
    "consumer_connections": F("rocketmq_consumer_connections", "gauge", "Consumer connections",
                              ("consumer_group", "language", "version", "consume_mode", "protocol_type",
                               "is_system"), java=True),
    "consumer_lag_messages": F("rocketmq_consumer_lag_messages", "gauge", "Consumer lag messages",
                               ("consumer_group", "topic", "is_retry", "is_system"), java=True),
    "consumer_lag_latency": F("rocketmq_consumer_lag_latency", "gauge", "Consumer lag time",
                              ("consumer_group", "topic", "is_retry", "is_system"), unit="milliseconds",
                              java=True),
    "consumer_inflight_messages": F("rocketmq_consumer_inflight_messages", "gauge", "Consumer inflight messages",
                                    ("consumer_group", "topic", "is_retry", "is_system"), java=True),
    "consumer_queueing_latency": F("rocketmq_consumer_queueing_latency", "gauge", "Consumer queueing time",
                                   ("consumer_group", "topic", "is_retry", "is_system"), unit="milliseconds",
                              java=True),
    "consumer_ready_messages": F("rocketmq_consumer_ready_messages", "gauge", "Consumer ready messages",
                                 ("consumer_group", "topic", "is_retry", "is_system"), java=True),
    "storage_size": F("rocketmq_storage_size", "gauge", "Broker storage size",
                      ("storage_type", "storage_medium"), unit="bytes", java=True),
    "flush_behind": F("rocketmq_storage_flush_behind_bytes", "gauge", "Broker flush behind bytes",
                      ("storage_type", "storage_medium"), unit="bytes", java=True),
    "dispatch_behind": F("rocketmq_storage_dispatch_behind_bytes", "gauge", "Broker dispatch behind bytes",
                         ("storage_type", "storage_medium"), unit="bytes", java=True),
    "message_reserve_time": F("rocketmq_storage_message_reserve_time", "gauge", "Broker message reserve time",
                              ("storage_type", "storage_medium"), unit="milliseconds", java=True),
    # ours
    "reactor_lag": F("rocketmq_tx_reactor_lag_seconds", "gauge",
                     "Largest lateness of a reactor timer since the last scrape"),
    "native": F("rocketmq_tx_native_accelerator", "gauge",
                "1 when the C accelerator (rocketmq_tx._speedups) is in use"),
    "group_commit": F("rocketmq_tx_group_commit_batch_size", "histogram",
                      "Sends answered by one SYNC_FLUSH group commit"),
    "held_requests": F("rocketmq_tx_held_requests", "gauge", "Long-polling pulls and POPs parked", ("kind",)),
}

_STORAGE = ("local", "disk")
GROUP_COMMIT_BUCKETS = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0)
#: Java's TopicMessageType metric values
NORMAL, FIFO, DELAY, TRANSACTION = "normal", "fifo", "delay", "transaction"
_DELAY_KEYS = ("__STARTDELIVERTIME", "DELAY", "TIMER_DELIVER_MS", "TIMER_DELAY_SEC", "TIMER_DELAY_MS")


_DELAY_SET = frozenset(_DELAY_KEYS)


def _message_type(props: dict[str, str]) -> str:
    """Java ``BrokerMetricsManager.getMessageType``: what a send's properties make it (the twin
    of ``_speedups.message_type``)."""
    tran = props.get("TRAN_MSG")
    if tran is not None and tran.lower() == "true":
        return TRANSACTION
    if "__SHARDINGKEY" in props:
        return FIFO
    # one C call over the few keys a message has (values are never None here)
    return NORMAL if _DELAY_SET.isdisjoint(props) else DELAY


message_type: Callable[[dict[str, str]], str] = speedups.message_type if speedups else _message_type


def _count_message_in(state: tuple[dict[str, dict[str, tuple[Row, Row]]], Callable[..., object], tuple[float, ...]],
                      topic: str, props: dict[str, str], msg_num: int, wrote_bytes: int) -> object:
    """
    A stored send counted into its cached ``(messages_in row, message_size row)``,
    ``cache[topic][message_type(props)]``, *state* being ``(cache, fallback, bounds)`` (the
    twin of ``_speedups.count_message_in``, called through a ``partial``); a miss is
    *fallback*'s (:meth:`BrokerMetrics.message_in`, which finds or makes the rows), told
    ``(topic, msg_type, msg_num, wrote_bytes)``.
    """
    cache, fallback, bounds = state
    msg_type = _message_type(props)
    types = cache.get(topic)
    rows = None if types is None else types.get(msg_type)
    if rows is None:
        return fallback(topic, msg_type, msg_num, wrote_bytes)
    _add_in(rows, bounds, msg_num, wrote_bytes)
    return None


def _add_in(rows: tuple[Row, Row], bounds: tuple[float, ...], msg_num: int, wrote_bytes: int) -> None:
    row, size_row = rows
    row[0] += msg_num
    row[1] += wrote_bytes
    observe_row(size_row, bounds, wrote_bytes // msg_num if msg_num > 1 else wrote_bytes)


count_message_in = speedups.count_message_in if speedups else _count_message_in


def is_system_group(group: str | None) -> bool:
    """Java ``BrokerMetricsManager.isSystemGroup`` (case-insensitive ``CID_RMQ_SYS_``)."""
    return group is not None and group.lower().startswith("cid_rmq_sys_")


class BrokerMetrics:
    """
    What the broker counts and what a scrape shows.

    :param controller: the broker (managers, store, settings; its clock, which store
        timestamps are on, for the latencies).
    """

    def __init__(self, controller: Any) -> None:
        self.controller = controller
        s = self.settings = controller.settings
        self.limit = max(1, s["metricsSeriesLimit"])
        # Java's exporter adds the OpenTelemetry meter's name to every series
        common = {"cluster": s["brokerClusterName"], "node_type": "broker", "node_id": s["brokerName"],
                  "otel_scope_name": "broker-meter"}
        extra, bad = parse_metrics_label(s["metricsLabel"])
        if bad:
            log.warn("metricsLabel is not valid: {labels}", labels=s["metricsLabel"])
        if s["metricsInDelta"]:
            common["aggregation"] = "delta"
        self.common: dict[str, str] = {**extra, **common}
        capped = self._capped
        #: (topic, message_type, is_system) -> [messages, bytes]
        # counted on every send: compact rows (see SeriesTable)
        self.messages_in = SeriesTable("rocketmq_messages_in", 2, self.limit, capped, compact=True)
        self.message_size = HistogramTable("rocketmq_message_size", MESSAGE_SIZE_BUCKETS, self.limit, capped,
                                           compact=True)
        #: (topic, consumer_group, is_system) -> [messages, bytes]
        self.messages_out = SeriesTable("rocketmq_messages_out", 2, self.limit, capped)
        #: POP's: (topic, consumer_group, is_system, is_retry) -> [messages, bytes]
        self.messages_out_pop = SeriesTable("rocketmq_messages_out", 2, self.limit, capped)
        #: (consumer_group, topic, is_system) -> [messages]
        self.send_to_dlq = SeriesTable("rocketmq_send_to_dlq_messages", 1, self.limit, capped)
        #: every answer's latency; :meth:`RpcLatency.rpc_done` is the processor tables' observer
        self.rpc = RpcLatency(self.limit, capped)
        #: SYNC_FLUSH: sends answered per group commit
        self.group_commits = HistogramTable("rocketmq_tx_group_commit_batch_size", GROUP_COMMIT_BUCKETS, 1)
        #: Java's pullOffsetTable: where each queue's last pull ended, (group, topic, queue) -> offset
        self.pull_offsets: dict[tuple[str, str, int], int] = {}
        self._system_topic: dict[str, str] = {}
        #: topic -> message type -> (messages_in row, message_size row): message_in's cache
        self._in_rows: dict[str, dict[str, tuple[Row, Row]]] = {}
        self._in_cached = 0
        #: what the send processor calls for a stored send: ``count_in(topic, props, msg_num,
        #: wrote_bytes)``, its type found and its cached rows counted in C when the accelerator is there
        # one tuple bound, not three items: see _speedups' unpack_state
        self.count_in = partial(count_message_in, (self._in_rows, self.message_in, MESSAGE_SIZE_BUCKETS))
        self.reactor_lag: Callable[[], float] | None = None
        #: set by the service once the store is loaded and recovered
        self.store_ready = False
        self._warned: set[str] = set()

    def _capped(self, name: str, limit: int) -> None:
        log.warn("metrics: {name} reached metricsSeriesLimit ({limit} series); further label sets are counted "
                 "together under otel_metric_overflow=\"true\"", name=name, limit=limit)

    def _is_system_topic(self, topic: str) -> str:
        flag = self._system_topic.get(topic)
        if flag is None:
            if len(self._system_topic) > 4 * self.limit:
                self._system_topic.clear()
            flag = self._system_topic[topic] = bool_label(is_system_topic(topic))
        return flag

    # ------------------------------------------------------------------ events

    def message_in(self, topic: str, msg_type: str, msg_num: int, wrote_bytes: int) -> None:
        """A send was stored (Java's SendMessageProcessor: not for retry and DLQ topics)."""
        types = self._in_rows.get(topic)
        rows = (None if types is None else types.get(msg_type)) or self._message_in_rows(topic, msg_type)
        if rows is not None:
            _add_in(rows, self.message_size.bounds, msg_num, wrote_bytes)

    def _message_in_rows(self, topic: str, msg_type: str) -> tuple[Row, Row] | None:
        # The rows of a (topic, type) once found stay the rows (a table never drops one, and
        # the overflow row is kept too): the hot path is then two dict lookups.
        if topic.startswith(RETRY_GROUP_TOPIC_PREFIX) or topic.startswith(DLQ_GROUP_TOPIC_PREFIX):
            return None
        if self._in_cached > 4 * self.limit:
            self._in_rows.clear()
            self._in_cached = 0
        key = (topic, msg_type, self._is_system_topic(topic))
        rows = (self.messages_in.rows.get(key) or self.messages_in.new_row(key),
                self.message_size.rows.get(key) or self.message_size.new_row(key))
        self._in_rows.setdefault(topic, {})[msg_type] = rows
        self._in_cached += 1
        return rows

    def group_commit(self, puts: int) -> None:
        """A SYNC_FLUSH group commit answered *puts* sends at once."""
        self.group_commits.observe((), puts)

    def message_out(self, topic: str, group: str, msg_num: int, size: int) -> None:
        """A pull found messages (Java's DefaultPullMessageResultHandler: not for retry and DLQ topics)."""
        if topic.startswith(RETRY_GROUP_TOPIC_PREFIX) or topic.startswith(DLQ_GROUP_TOPIC_PREFIX):
            return
        system = "true" if self._is_system_topic(topic) == "true" or group.startswith(CID_RMQ_SYS_PREFIX) else "false"
        key = (topic, group, system)
        row = self.messages_out.rows.get(key) or self.messages_out.new_row(key)
        row[0] += msg_num
        row[1] += size

    def pop_out(self, topic: str, group: str, is_retry: bool, msg_num: int, size: int) -> None:
        """A POP returned messages (Java's PopMessageProcessor, with is_retry)."""
        system = "true" if self._is_system_topic(topic) == "true" or group.startswith(CID_RMQ_SYS_PREFIX) else "false"
        key = (topic, group, system, bool_label(is_retry))
        row = self.messages_out_pop.rows.get(key) or self.messages_out_pop.new_row(key)
        row[0] += msg_num
        row[1] += size

    def pulled(self, group: str, topic: str, queue_id: int, next_offset: int) -> None:
        """Java ``commitPullOffset``: a pull of the queue ended at *next_offset* (queues a peer
        names are bounded: past 64 per series allowed, new ones are not remembered)."""
        key = (group, topic, queue_id)
        if key in self.pull_offsets or len(self.pull_offsets) < 64 * self.limit:
            self.pull_offsets[key] = next_offset

    def dlq(self, group: str, topic: str) -> None:
        """A message went to the group's DLQ; *topic* is its original topic (Java's label)."""
        system = bool_label(is_system_topic(topic or "") or is_system_group(group))
        self.send_to_dlq.add((group, topic or "", system), 0, 1)

    # ------------------------------------------------------------------ scrape

    def ready(self) -> bool:
        """``/readyz``: the store is recovered (the service started) and a name server has us."""
        registrar = self.controller.registrar
        return self.store_ready and registrar is not None and registrar.is_registered()

    def collect(self) -> Deferred:
        """
        Every family, as metric families or functions building one from copies (called where
        the text is written, off the reactor); the per-group gauges in slices of at most a few
        ms of reactor time.
        """
        families: list[Any] = self._counters()
        families += self._gauges()
        lag: dict[str, list] = {name: [] for name in (
            "consumer_lag_messages", "consumer_lag_latency", "consumer_inflight_messages",
            "consumer_queueing_latency", "consumer_ready_messages")}
        steps = self._lag_steps(lag)
        done: Deferred = Deferred()
        clock = self.controller.reactor
        common = dict(self.common)

        def run() -> None:
            deadline = time.monotonic() + SLICE_SECONDS
            try:
                for _ in steps:
                    if time.monotonic() > deadline:
                        clock.callLater(0, run)
                        return
            except Exception:
                done.errback()
                return
            for name, rows in lag.items():
                families.append(partial(_gauge_rows, FAMILIES[name], common, rows))
            done.callback(families)

        run()
        return done

    def _counters(self) -> list[Callable[[], Metric]]:
        """Copies of the counters (cheap: the reactor's part) and how to build their families."""
        common = dict(self.common)
        out: list[Callable[[], Metric]] = []
        rows, overflow = self.messages_in.snapshot()
        out.append(partial(FAMILIES["messages_in"].build, common, rows, overflow, index=0))
        out.append(partial(FAMILIES["throughput_in"].build, common, rows, overflow, index=1))
        rows, overflow = self.message_size.snapshot()
        out.append(partial(FAMILIES["message_size"].build, common, rows, overflow, bounds=MESSAGE_SIZE_BUCKETS))
        rows, overflow = self.messages_out.snapshot()
        pop_rows, pop_overflow = self.messages_out_pop.snapshot()
        for name, index in (("messages_out", 0), ("throughput_out", 1)):
            out.append(partial(_messages_out, FAMILIES[name], common, rows, overflow or pop_overflow, pop_rows, index))
        rows, overflow = self.send_to_dlq.snapshot()
        out.append(partial(FAMILIES["send_to_dlq"].build, common, rows, overflow))
        out.append(self.rpc.lazy(common))
        rows, _ = self.group_commits.snapshot()
        out.append(partial(FAMILIES["group_commit"].build, common, rows, bounds=GROUP_COMMIT_BUCKETS))
        return out

    def _gauges(self) -> list[Metric]:
        c = self.controller
        s = self.settings
        common = self.common
        out = [
            FAMILIES["broker_permission"].build(common, {(): s["brokerPermission"]}),
            FAMILIES["topic_number"].build(common, {(): len(c.topic_config_manager.topic_config_table)}),
            FAMILIES["consumer_group_number"].build(
                common, {(): len(c.subscription_group_manager.subscription_group_table)}),
        ]
        producers: dict[tuple[str, ...], int] = {}
        for channels in list(c.producer_manager.group_channel_table.values()):
            for info in list(channels.values()):
                key = (_language(info.language), mq_version_desc(info.version).lower(), "remoting")
                producers[key] = producers.get(key, 0) + 1
                if len(producers) >= self.limit:
                    break
        out.append(FAMILIES["producer_connections"].build(common, producers))
        consumers: dict[tuple[str, ...], int] = {}
        for group, group_info in list(c.consumer_manager.consumer_table.items())[:self.limit]:
            mode = _CONSUME_MODE.get(group_info.consume_type, "")
            for info in list(group_info.channel_info_table.values()):
                ckey = (group, _language(info.language), mq_version_desc(info.version).lower(), mode, "remoting",
                       bool_label(is_system_group(group)))
                consumers[ckey] = consumers.get(ckey, 0) + 1
        out.append(FAMILIES["consumer_connections"].build(common, consumers))
        store = c.store
        storage: dict[tuple, int] = {}
        try:
            st = os.statvfs(c.store_config.store_path_root_dir)
            total = st.f_blocks * st.f_frsize
            if total > 0:  # Java: total - free space of the store's file system
                storage[_STORAGE] = total - st.f_bfree * st.f_frsize
        except OSError:
            pass
        out.append(FAMILIES["storage_size"].build(common, storage))
        commit_log = store.commit_log
        out.append(FAMILIES["flush_behind"].build(
            common, {_STORAGE: max(0, commit_log.get_max_offset() - commit_log.flushed_where)}))
        out.append(FAMILIES["dispatch_behind"].build(common, {_STORAGE: store.dispatch_behind_bytes()}))
        earliest = store.get_earliest_message_time()
        out.append(FAMILIES["message_reserve_time"].build(
            common, {_STORAGE: c.now_ms() - earliest} if earliest > 0 else {}))
        out.append(FAMILIES["native"].build(common, {(): 1 if ACCELERATED else 0}))
        out.append(FAMILIES["held_requests"].build(common, {
            ("pull",): c.pull_request_hold_service.held(), ("pop",): c.pop_long_polling.held()}))
        if self.reactor_lag is not None:
            out.append(FAMILIES["reactor_lag"].build(common, {(): self.reactor_lag()}))
        return out

    def _lag_steps(self, out: dict[str, list]) -> Iterator[None]:
        """Java ``ConsumerLagCalculator`` for the groups online: one step per (group, topic)."""
        c = self.controller
        store = c.store
        offsets = c.consumer_offset_manager
        perm = self.settings["brokerPermission"]
        now = c.now_ms()
        series = 0
        for group, info in list(c.consumer_manager.consumer_table.items()):
            if group not in c.subscription_group_manager.subscription_group_table:
                continue
            pop = info.consume_type == "CONSUME_POP"
            for topic in list(info.subscription_table):
                if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                    continue
                tc = c.topic_config_manager.select_topic_config(topic)
                if tc is None:
                    continue
                p = tc.perm & perm
                if not PermName.is_readable(p) and not PermName.is_writeable(p):
                    continue
                if series >= self.limit:
                    if "lag" not in self._warned:
                        self._warned.add("lag")
                        log.warn("metrics: consumer lag series reached metricsSeriesLimit ({limit}); the rest are "
                                 "not shown", limit=self.limit)
                    return
                series += 1
                labels = {**self.common, "consumer_group": group, "topic": topic, "is_retry": "false",
                          "is_system": bool_label(is_system_topic(topic) or is_system_group(group))}
                lag = inflight = ready = 0
                earliest_unconsumed = earliest_unpulled = 0
                for queue_id in range(tc.write_queue_nums):
                    broker = max(0, store.get_max_offset_in_queue(topic, queue_id))
                    committed = offsets.query_offset(group, topic, queue_id)
                    consumer = broker if committed < 0 else committed
                    lag += max(0, broker - consumer)
                    earliest_unconsumed = _earliest(earliest_unconsumed, store, topic, queue_id, consumer, broker)
                    if pop:
                        continue
                    # Java's queryPullOffset: the last pull's end, else the committed offset
                    pulled = self.pull_offsets.get((group, topic, queue_id), committed)
                    ready += max(0, broker - (broker if pulled < 0 else pulled))
                    pulled = max(pulled, 0)
                    inflight += max(0, pulled - (pulled if committed < 0 else committed))
                    earliest_unpulled = _earliest(earliest_unpulled, store, topic, queue_id, pulled, broker)
                out["consumer_lag_messages"].append((labels, lag))
                out["consumer_lag_latency"].append((labels, now - earliest_unconsumed if earliest_unconsumed else 0))
                if not pop:  # POP's in-flight counts are not built (docs/compatibility.md)
                    out["consumer_inflight_messages"].append((labels, inflight))
                    out["consumer_queueing_latency"].append(
                        (labels, now - earliest_unpulled if earliest_unpulled else 0))
                    out["consumer_ready_messages"].append((labels, ready))
                yield None


def _gauge_rows(family: Family, common: dict[str, str], rows: list[tuple[dict[str, str], int]]) -> Metric:
    """A gauge family from (labels, value) pairs whose labels include the common ones."""
    metric = family.build(common, {})
    for labels, value in rows:
        metric.add_sample(family.exposed_name, labels, value)
    return metric


def _messages_out(family: Family, common: dict[str, str], rows: dict, overflow: Row | None, pop_rows: dict,
                  index: int) -> Metric:
    """Pulls' series, then POP's, which Java labels with is_retry too."""
    metric = family.build(common, rows, overflow, index=index)
    for (topic, group, system, retry), row in pop_rows.items():
        metric.add_sample(family.exposed_name + "_total", {**common, "topic": topic, "consumer_group": group,
                                                          "is_system": system, "is_retry": retry}, row[index])
    return metric


_CONSUME_MODE = {"CONSUME_ACTIVELY": "pull", "CONSUME_PASSIVELY": "push", "CONSUME_POP": "pop"}


def _language(language: Any) -> str:
    if isinstance(language, int):
        try:
            return LanguageCode(language).name.lower()
        except ValueError:
            return str(language)
    return str(language).lower()


def _earliest(current: int, store: Any, topic: str, queue_id: int, offset: int, max_offset: int) -> int:
    """The smaller of *current* and the store time of the message at *offset* (0: none yet)."""
    if offset >= max_offset:
        return current
    ts = store.get_message_store_timestamp(topic, queue_id, offset)
    if ts <= 0:
        return current
    return ts if current == 0 else min(current, ts)
