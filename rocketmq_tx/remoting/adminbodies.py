# -*- test-case-name: rocketmq_tx.remoting.test.test_adminbodies -*-
"""
JSON bodies of the broker's admin and client-management requests: configuration
wrappers, statistics, connections, queue locks and offset tables.

Each value converts to and from the plain-dict form of its Java class as fastjson
writes it (``to_json``/``from_json``): a key per getter, in alphabetical order, null
fields left out, enums by name. The caller turns dicts into bytes with
:func:`rocketmq_tx.common.fastjson.dumps` (or ``dumps_legacy`` where a Java peer wants
unquoted integer keys) and reads them with :func:`~rocketmq_tx.common.fastjson.loads`.

Java's ``HashSet`` fields are lists here (insertion order kept; Java's order is its
hash order, which no reader relies on). Maps keyed by ``MessageQueue`` use the queue
itself as key; in the dict form such a key is a :class:`~rocketmq_tx.common.fastjson.ObjectKey`,
as fastjson writes bean keys.

Why one module of ~700 lines: it is a catalogue of ~30 small declarative classes, one per
Java body class, sharing the same few conversion helpers; none is read with another.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from rocketmq_tx.common import fastjson
from rocketmq_tx.common.fastjson import ObjectKey
from rocketmq_tx.common.javatext import time_millis_to_human_string
from rocketmq_tx.common.message import MessageQueue
from rocketmq_tx.common.route import DataVersion, TopicConfig
from rocketmq_tx.common.subscription import SubscriptionGroupConfig
from rocketmq_tx.remoting.api import SubscriptionData

__all__ = [
    "message_queue_to_json",
    "message_queue_from_json",
    "message_queue_key",
    "message_queue_from_key",
    "TopicConfigSerializeWrapper",
    "SubscriptionGroupWrapper",
    "ConsumerOffsetSerializeWrapper",
    "TopicOffset",
    "TopicStatsTable",
    "OffsetWrapper",
    "ConsumeStats",
    "Connection",
    "ConsumerConnection",
    "ProducerConnection",
    "GroupList",
    "LockBatchRequestBody",
    "UnlockBatchRequestBody",
    "LockBatchResponseBody",
    "QueueTimeSpan",
    "QueryConsumeTimeSpanBody",
    "QueryCorrectionOffsetBody",
    "ResetOffsetBody",
    "KVTable",
    "BrokerStatsItem",
    "BrokerStatsData",
    "ConsumeStatsList",
    "ConsumeQueueData",
    "QueryConsumeQueueResponseBody",
    "ProducerInfo",
    "ProducerTableInfo",
    "CreateTopicListRequestBody",
    "SubscriptionGroupList",
    "QuerySubscriptionResponseBody",
    "SetMessageRequestModeRequestBody",
    "QueryAssignmentRequestBody",
    "MessageQueueAssignment",
    "QueryAssignmentResponseBody",
]


# --------------------------------------------------------------------------- MessageQueue

def message_queue_to_json(mq: MessageQueue) -> dict[str, Any]:
    """``MessageQueue`` as fastjson writes it."""
    return {"brokerName": mq.broker_name, "queueId": mq.queue_id, "topic": mq.topic}


def message_queue_from_json(data: Mapping[str, Any]) -> MessageQueue:
    """
    :raises KeyError: a field is missing.
    :raises ValueError: ``queueId`` is not a number.
    """
    return MessageQueue(str(data["topic"]), str(data["brokerName"]), int(data["queueId"]))


def message_queue_key(mq: MessageQueue) -> ObjectKey:
    """The map key fastjson writes for a ``MessageQueue`` (an object, not a string)."""
    return ObjectKey(message_queue_to_json(mq))


_MQ_TO_STRING = re.compile(r"MessageQueue \[topic=(?P<topic>.*), brokerName=(?P<broker>.*), queueId=(?P<qid>-?\d+)\]")


def message_queue_from_key(key: Any) -> MessageQueue:
    """
    A ``MessageQueue`` map key as read by :func:`fastjson.loads`: an object key, or a
    string holding the queue's JSON or its Java ``toString()`` (writers that quoted the key).

    :raises ValueError: the key is none of these.
    :raises KeyError: a field is missing.
    """
    if isinstance(key, Mapping):
        return message_queue_from_json(key)
    match = _MQ_TO_STRING.fullmatch(str(key))
    if match is not None:
        return MessageQueue(match["topic"], match["broker"], int(match["qid"]))
    data = fastjson.loads(str(key))
    if not isinstance(data, Mapping):
        raise ValueError(f"not a MessageQueue key: {key!r}")
    return message_queue_from_json(data)


def _mq_table(table: Mapping[MessageQueue, Any], convert: Any = None) -> dict[ObjectKey, Any]:
    return {message_queue_key(mq): (v if convert is None else convert(v)) for mq, v in table.items()}


def _read_mq_table(table: Any, convert: Any) -> dict[MessageQueue, Any]:
    return {message_queue_from_key(k): convert(v) for k, v in dict(table or {}).items()}


def _sorted(out: dict[str, Any]) -> dict[str, Any]:
    # fastjson sorts bean fields by name; unknown keys kept from a newer peer join in.
    return {k: out[k] for k in sorted(out)}


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)


# --------------------------------------------------------------------------- config wrappers

@dataclass(slots=True)
class TopicConfigSerializeWrapper:
    """
    ``TopicConfigSerializeWrapper``: GET_ALL_TOPIC_CONFIG's body and ``topics.json``.

    ``extra`` keeps keys of 5.x's ``TopicConfigAndMappingSerializeWrapper``
    (``mappingDataVersion``, ``topicQueueMapping*Map``) untouched.
    """

    topic_config_table: dict[str, TopicConfig] = field(default_factory=dict)
    data_version: DataVersion = field(default_factory=DataVersion)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out = dict(self.extra)
        out["dataVersion"] = self.data_version.to_json()
        out["topicConfigTable"] = {name: tc.to_json() for name, tc in self.topic_config_table.items()}
        return _sorted(out)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TopicConfigSerializeWrapper:
        table = dict(data.get("topicConfigTable") or {})
        return cls({str(k): TopicConfig.from_json(v) for k, v in table.items()},
                   DataVersion.from_json(data.get("dataVersion")),
                   {k: v for k, v in data.items() if k not in ("topicConfigTable", "dataVersion")})


@dataclass(slots=True)
class SubscriptionGroupWrapper:
    """``SubscriptionGroupWrapper``: GET_ALL_SUBSCRIPTIONGROUP_CONFIG's body and ``subscriptionGroup.json``."""

    subscription_group_table: dict[str, SubscriptionGroupConfig] = field(default_factory=dict)
    data_version: DataVersion = field(default_factory=DataVersion)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out = dict(self.extra)
        out["dataVersion"] = self.data_version.to_json()
        out["subscriptionGroupTable"] = {k: v.to_json() for k, v in self.subscription_group_table.items()}
        return _sorted(out)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SubscriptionGroupWrapper:
        table = dict(data.get("subscriptionGroupTable") or {})
        return cls({str(k): SubscriptionGroupConfig.from_json(v) for k, v in table.items()},
                   DataVersion.from_json(data.get("dataVersion")),
                   {k: v for k, v in data.items() if k not in ("subscriptionGroupTable", "dataVersion")})


@dataclass(slots=True)
class ConsumerOffsetSerializeWrapper:
    """
    ``ConsumerOffsetSerializeWrapper``: GET_ALL_CONSUMER_OFFSET's body (43), keyed
    ``"topic@group"`` then queue id. Java writes the queue ids unquoted (use
    ``dumps_legacy`` for the exact bytes); ``dataVersion`` is 5.x only.
    """

    offset_table: dict[str, dict[int, int]] = field(default_factory=dict)
    data_version: DataVersion | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.data_version is not None:
            out["dataVersion"] = self.data_version.to_json()
        out["offsetTable"] = {k: {int(q): int(o) for q, o in v.items()} for k, v in self.offset_table.items()}
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ConsumerOffsetSerializeWrapper:
        table = dict(data.get("offsetTable") or {})
        version = data.get("dataVersion")
        return cls({str(k): {int(q): int(o) for q, o in dict(v or {}).items()} for k, v in table.items()},
                   None if version is None else DataVersion.from_json(version))


# --------------------------------------------------------------------------- statistics

@dataclass(slots=True)
class TopicOffset:
    """``TopicOffset``: one queue's offsets range and last write time."""

    min_offset: int = 0
    max_offset: int = 0
    last_update_timestamp: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"lastUpdateTimestamp": self.last_update_timestamp, "maxOffset": self.max_offset,
                "minOffset": self.min_offset}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TopicOffset:
        return cls(int(data.get("minOffset") or 0), int(data.get("maxOffset") or 0),
                   int(data.get("lastUpdateTimestamp") or 0))


@dataclass(slots=True)
class TopicStatsTable:
    """``TopicStatsTable``: GET_TOPIC_STATS_INFO's body. ``topicPutTps`` is 5.x only."""

    offset_table: dict[MessageQueue, TopicOffset] = field(default_factory=dict)
    topic_put_tps: float | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"offsetTable": _mq_table(self.offset_table, TopicOffset.to_json)}
        if self.topic_put_tps is not None:
            out["topicPutTps"] = float(self.topic_put_tps)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TopicStatsTable:
        tps = data.get("topicPutTps")
        return cls(_read_mq_table(data.get("offsetTable"), TopicOffset.from_json),
                   None if tps is None else float(tps))


@dataclass(slots=True)
class OffsetWrapper:
    """``OffsetWrapper``: a queue's broker and consumer offsets; ``pullOffset`` is 5.x only."""

    broker_offset: int = 0
    consumer_offset: int = 0
    last_timestamp: int = 0
    pull_offset: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"brokerOffset": self.broker_offset, "consumerOffset": self.consumer_offset,
                               "lastTimestamp": self.last_timestamp}
        if self.pull_offset is not None:
            out["pullOffset"] = self.pull_offset
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> OffsetWrapper:
        return cls(int(data.get("brokerOffset") or 0), int(data.get("consumerOffset") or 0),
                   int(data.get("lastTimestamp") or 0), _opt_int(data.get("pullOffset")))


@dataclass(slots=True)
class ConsumeStats:
    """``ConsumeStats``: GET_CONSUME_STATS's body."""

    offset_table: dict[MessageQueue, OffsetWrapper] = field(default_factory=dict)
    consume_tps: float = 0.0

    def compute_total_diff(self) -> int:
        """Java's ``computeTotalDiff``: the backlog over all queues."""
        return sum(w.broker_offset - w.consumer_offset for w in self.offset_table.values())

    def to_json(self) -> dict[str, Any]:
        return {"consumeTps": float(self.consume_tps),
                "offsetTable": _mq_table(self.offset_table, OffsetWrapper.to_json)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ConsumeStats:
        return cls(_read_mq_table(data.get("offsetTable"), OffsetWrapper.from_json),
                   float(data.get("consumeTps") or 0.0))


@dataclass(slots=True)
class ConsumeStatsList:
    """
    ``ConsumeStatsList``: GET_BROKER_CONSUME_STATS's body, a list of one-entry maps
    group -> that group's stats per topic. ``totalInflightDiff`` is 5.x only.
    """

    consume_stats_list: list[dict[str, list[ConsumeStats]]] = field(default_factory=list)
    broker_addr: str | None = None
    total_diff: int = 0
    total_inflight_diff: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.broker_addr is not None:
            out["brokerAddr"] = self.broker_addr
        out["consumeStatsList"] = [{g: [s.to_json() for s in stats] for g, stats in entry.items()}
                                   for entry in self.consume_stats_list]
        out["totalDiff"] = self.total_diff
        if self.total_inflight_diff is not None:
            out["totalInflightDiff"] = self.total_inflight_diff
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ConsumeStatsList:
        entries = [{str(g): [ConsumeStats.from_json(s) for s in stats or []] for g, stats in dict(entry).items()}
                   for entry in data.get("consumeStatsList") or []]
        addr = data.get("brokerAddr")
        return cls(entries, None if addr is None else str(addr), int(data.get("totalDiff") or 0),
                   _opt_int(data.get("totalInflightDiff")))


@dataclass(slots=True)
class BrokerStatsItem:
    """``BrokerStatsItem``: a sum, its rate and average (per minute, hour or day)."""

    sum: int = 0
    tps: float = 0.0
    avgpt: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"avgpt": float(self.avgpt), "sum": self.sum, "tps": float(self.tps)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BrokerStatsItem:
        return cls(int(data.get("sum") or 0), float(data.get("tps") or 0.0), float(data.get("avgpt") or 0.0))


@dataclass(slots=True)
class BrokerStatsData:
    """``BrokerStatsData``: VIEW_BROKER_STATS_DATA's body."""

    stats_minute: BrokerStatsItem | None = None
    stats_hour: BrokerStatsItem | None = None
    stats_day: BrokerStatsItem | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, item in (("statsDay", self.stats_day), ("statsHour", self.stats_hour),
                          ("statsMinute", self.stats_minute)):
            if item is not None:
                out[key] = item.to_json()
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BrokerStatsData:
        def item(key: str) -> BrokerStatsItem | None:
            value = data.get(key)
            return None if value is None else BrokerStatsItem.from_json(value)
        return cls(item("statsMinute"), item("statsHour"), item("statsDay"))


# --------------------------------------------------------------------------- connections

@dataclass(frozen=True, slots=True)
class Connection:
    """``Connection``: one client channel of a group; ``language`` is a ``LanguageCode`` name."""

    client_id: str | None = None
    client_addr: str | None = None
    language: str | None = None
    version: int = 0

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.client_addr is not None:
            out["clientAddr"] = self.client_addr
        if self.client_id is not None:
            out["clientId"] = self.client_id
        if self.language is not None:
            out["language"] = self.language
        out["version"] = self.version
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Connection:
        def text(key: str) -> str | None:
            value = data.get(key)
            return None if value is None else str(value)
        return cls(text("clientId"), text("clientAddr"), text("language"), int(data.get("version") or 0))


@dataclass(slots=True)
class ConsumerConnection:
    """
    ``ConsumerConnection``: GET_CONSUMER_CONNECTION_LIST's body. The three enums travel
    by name (``CONSUME_PASSIVELY``, ``CLUSTERING``, ``CONSUME_FROM_LAST_OFFSET``...).
    """

    connection_set: list[Connection] = field(default_factory=list)
    subscription_table: dict[str, SubscriptionData] = field(default_factory=dict)
    consume_type: str | None = None
    message_model: str | None = None
    consume_from_where: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"connectionSet": [c.to_json() for c in self.connection_set]}
        if self.consume_from_where is not None:
            out["consumeFromWhere"] = self.consume_from_where
        if self.consume_type is not None:
            out["consumeType"] = self.consume_type
        if self.message_model is not None:
            out["messageModel"] = self.message_model
        out["subscriptionTable"] = {t: s.to_json() for t, s in self.subscription_table.items()}
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ConsumerConnection:
        def text(key: str) -> str | None:
            value = data.get(key)
            return None if value is None else str(value)
        return cls([Connection.from_json(c) for c in data.get("connectionSet") or []],
                   {str(t): SubscriptionData.from_json(s)
                    for t, s in dict(data.get("subscriptionTable") or {}).items()},
                   text("consumeType"), text("messageModel"), text("consumeFromWhere"))


def _java_text(value: Any) -> str:
    # a JSON value as Java's String.valueOf prints it (booleans lower case)
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


@dataclass(slots=True)
class ConsumerRunningInfo:
    """
    ``ConsumerRunningInfo``: GET_CONSUMER_RUNNING_INFO's body (a client's answer, relayed by
    a broker), with what mqadmin ``consumerStatus`` does with it: ``formatString`` and the
    ``analyze*`` checks. Queue states stay the ``ProcessQueueInfo`` JSON objects.
    """

    properties: dict[str, str] = field(default_factory=dict)
    subscription_set: list[SubscriptionData] = field(default_factory=list)
    mq_table: dict[MessageQueue, dict[str, Any]] = field(default_factory=dict)
    status_table: dict[str, dict[str, Any]] = field(default_factory=dict)
    jstack: str | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ConsumerRunningInfo:
        subscriptions = [SubscriptionData.from_json(s) for s in data.get("subscriptionSet") or []]
        # Java keeps them in a TreeSet (SubscriptionData.compareTo: topic, then expression)
        subscriptions.sort(key=lambda sd: (sd.topic, sd.sub_string))
        return cls({str(k): _java_text(v) for k, v in dict(data.get("properties") or {}).items()},
                   subscriptions,
                   dict(sorted(_read_mq_table(data.get("mqTable"), dict).items())),
                   {str(t): dict(v) for t, v in sorted(dict(data.get("statusTable") or {}).items())},
                   None if data.get("jstack") is None else str(data["jstack"]))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"properties": dict(self.properties),
                               "subscriptionSet": [s.to_json() for s in self.subscription_set],
                               "mqTable": _mq_table(self.mq_table), "statusTable": dict(self.status_table)}
        if self.jstack is not None:
            out["jstack"] = self.jstack
        return out

    @property
    def push(self) -> bool:
        return self.properties.get("PROP_CONSUME_TYPE") == "CONSUME_PASSIVELY"

    def format_string(self) -> str:
        """Java ``formatString`` (properties in key order: Java prints its Hashtable's order)."""
        lines = ["#Consumer Properties#"]
        lines += [f"{k:<40}: {v}" for k, v in sorted(self.properties.items())]
        lines += ["", "", "#Consumer Subscription#"]
        for i, sd in enumerate(self.subscription_set, 1):
            filter_mode = "true" if sd.class_filter_mode else "false"
            lines.append(f"{i:03d} Topic: {sd.topic:<40} ClassFilter: {filter_mode:<8} SubExpression: {sd.sub_string}")
        head = f"{'#Topic':<64}  {'#Broker Name':<32}  {'#QID':<4}  "
        lines += ["", "", "#Consumer Offset#", head + f"{'#Consumer Offset':<20}"]
        for mq, pq in self.mq_table.items():
            offset = int(pq.get("commitOffset", 0))
            lines.append(f"{mq.topic:<32}  {mq.broker_name:<32}  {mq.queue_id:<4d}  {offset:<20d}")
        lines += ["", "", "#Consumer MQ Detail#", head + f"{'#ProcessQueueInfo':<20}"]
        for mq, pq in self.mq_table.items():
            lines.append(f"{mq.topic:<64}  {mq.broker_name:<32}  {mq.queue_id:<4d}  {process_queue_text(pq)}")
        lines += ["", "", "#Consumer RT&TPS#",
                  f"{'#Topic':<64}  {'#Pull RT':>14} {'#Pull TPS':>14} {'#Consume RT':>14} {'#ConsumeOK TPS':>14} "
                  f"{'#ConsumeFailed TPS':>18} {'#ConsumeFailedMsgsInHour':>25}"]
        for topic, st in self.status_table.items():
            lines.append(f"{topic:<32}  {float(st.get('pullRT', 0)):14.2f} {float(st.get('pullTPS', 0)):14.2f} "
                         f"{float(st.get('consumeRT', 0)):14.2f} {float(st.get('consumeOKTPS', 0)):14.2f} "
                         f"{float(st.get('consumeFailedTPS', 0)):18.2f} {int(st.get('consumeFailedMsgs', 0)):25d}")
        text = "\n".join(lines) + "\n"
        if self.jstack is not None:
            text += "\n\n#Consumer jstack#\n" + self.jstack
        return text


def process_queue_text(pq: Mapping[str, Any]) -> str:
    """``ProcessQueueInfo.toString``."""
    def v(key: str) -> str:
        return _java_text(pq.get(key, 0))

    def t(key: str) -> str:
        return time_millis_to_human_string(int(pq.get(key, 0)))
    return (f"ProcessQueueInfo [commitOffset={v('commitOffset')}, cachedMsgMinOffset={v('cachedMsgMinOffset')}, "
            f"cachedMsgMaxOffset={v('cachedMsgMaxOffset')}, cachedMsgCount={v('cachedMsgCount')}, "
            f"cachedMsgSizeInMiB={v('cachedMsgSizeInMiB')}, transactionMsgMinOffset={v('transactionMsgMinOffset')}, "
            f"transactionMsgMaxOffset={v('transactionMsgMaxOffset')}, transactionMsgCount={v('transactionMsgCount')}, "
            f"locked={_java_text(bool(pq.get('locked', False)))}, tryUnlockTimes={v('tryUnlockTimes')}, "
            f"lastLockTimestamp={t('lastLockTimestamp')}, droped={_java_text(bool(pq.get('droped', False)))}, "
            f"lastPullTimestamp={t('lastPullTimestamp')}, lastConsumeTimestamp={t('lastConsumeTimestamp')}]")


def analyze_subscription(table: Mapping[str, ConsumerRunningInfo], now_ms: int) -> bool:
    """
    Java ``ConsumerRunningInfo.analyzeSubscription`` over ``{clientId: info}``: for a push
    group whose first member started more than 2 minutes ago, every member has the same
    subscriptions and they are not empty.
    """
    infos = [table[k] for k in sorted(table)]
    first = infos[0]
    started = int(first.properties.get("PROP_CONSUMER_START_TIMESTAMP", "0") or 0)
    if not (first.push and now_ms - started > 120_000):
        return True
    def key(info: ConsumerRunningInfo) -> list[Any]:
        return [s.to_json() for s in info.subscription_set]
    if any(key(info) != key(first) for info in infos):
        return False
    return bool(infos[-1].subscription_set)


def analyze_process_queue(client_id: str, info: ConsumerRunningInfo, now_ms: int) -> str:
    """Java ``ConsumerRunningInfo.analyzeProcessQueue``: the lines about stuck queues of a push member."""
    if not info.push:
        return ""
    orderly = info.properties.get("PROP_CONSUMEORDERLY", "").strip().lower() == "true"
    out = []
    for mq, pq in info.mq_table.items():
        mq_text = f"MessageQueue [topic={mq.topic}, brokerName={mq.broker_name}, queueId={mq.queue_id}]"
        if orderly:
            if not pq.get("locked"):
                out.append(f"{client_id} {mq_text} can't lock for a while, "
                           f"{now_ms - int(pq.get('lastLockTimestamp', 0))}ms\n")
            elif pq.get("droped") and int(pq.get("tryUnlockTimes", 0)) > 0:
                out.append(f"{client_id} {mq_text} unlock {int(pq['tryUnlockTimes'])} times, still failed\n")
        else:
            diff = now_ms - int(pq.get("lastConsumeTimestamp", 0))
            if diff > 60_000 and int(pq.get("cachedMsgCount", 0)) > 0:
                out.append(f"{client_id} {mq_text} can't consume for a while, maybe blocked, {diff}ms\n")
    return "".join(out)


@dataclass(slots=True)
class ProducerConnection:
    """``ProducerConnection``: GET_PRODUCER_CONNECTION_LIST's body."""

    connection_set: list[Connection] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"connectionSet": [c.to_json() for c in self.connection_set]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ProducerConnection:
        return cls([Connection.from_json(c) for c in data.get("connectionSet") or []])


@dataclass(slots=True)
class GroupList:
    """``GroupList``: QUERY_TOPIC_CONSUME_BY_WHO's body."""

    group_list: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"groupList": list(self.group_list)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> GroupList:
        return cls([str(g) for g in data.get("groupList") or []])


@dataclass(slots=True)
class ProducerInfo:
    """``ProducerInfo``: one producer channel; ``language`` is a ``LanguageCode`` name."""

    client_id: str | None = None
    remote_ip: str | None = None
    language: str | None = None
    version: int = 0
    last_update_timestamp: int = 0

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.client_id is not None:
            out["clientId"] = self.client_id
        if self.language is not None:
            out["language"] = self.language
        out["lastUpdateTimestamp"] = self.last_update_timestamp
        if self.remote_ip is not None:
            out["remoteIP"] = self.remote_ip
        out["version"] = self.version
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ProducerInfo:
        def text(key: str) -> str | None:
            value = data.get(key)
            return None if value is None else str(value)
        return cls(text("clientId"), text("remoteIP"), text("language"), int(data.get("version") or 0),
                   int(data.get("lastUpdateTimestamp") or 0))


@dataclass(slots=True)
class ProducerTableInfo:
    """``ProducerTableInfo``: GET_ALL_PRODUCER_INFO's body, producers by group."""

    data: dict[str, list[ProducerInfo]] | None = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        if self.data is None:
            return {}
        return {"data": {g: [p.to_json() for p in ps] for g, ps in self.data.items()}}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ProducerTableInfo:
        table = data.get("data")
        if table is None:
            return cls(None)
        return cls({str(g): [ProducerInfo.from_json(p) for p in ps or []] for g, ps in dict(table).items()})


# --------------------------------------------------------------------------- queue locks

@dataclass(slots=True)
class LockBatchRequestBody:
    """
    ``LockBatchRequestBody`` (LOCK_BATCH_MQ, 41). ``onlyThisBroker`` is 5.x only; a 5.x
    peer always sends it, a 4.x one never does.
    """

    consumer_group: str | None = None
    client_id: str | None = None
    mq_set: list[MessageQueue] = field(default_factory=list)
    only_this_broker: bool | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.client_id is not None:
            out["clientId"] = self.client_id
        if self.consumer_group is not None:
            out["consumerGroup"] = self.consumer_group
        out["mqSet"] = [message_queue_to_json(mq) for mq in self.mq_set]
        if self.only_this_broker is not None:
            out["onlyThisBroker"] = self.only_this_broker
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LockBatchRequestBody:
        group, client, only = data.get("consumerGroup"), data.get("clientId"), data.get("onlyThisBroker")
        return cls(None if group is None else str(group), None if client is None else str(client),
                   [message_queue_from_json(mq) for mq in data.get("mqSet") or []],
                   None if only is None else bool(only))


class UnlockBatchRequestBody(LockBatchRequestBody):
    """``UnlockBatchRequestBody`` (UNLOCK_BATCH_MQ, 42): the same shape as the lock request."""

    __slots__ = ()


@dataclass(slots=True)
class LockBatchResponseBody:
    """``LockBatchResponseBody``: the queues LOCK_BATCH_MQ did lock (``lockOKMQSet``)."""

    lock_ok_mq_set: list[MessageQueue] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"lockOKMQSet": [message_queue_to_json(mq) for mq in self.lock_ok_mq_set]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LockBatchResponseBody:
        return cls([message_queue_from_json(mq) for mq in data.get("lockOKMQSet") or []])


# --------------------------------------------------------------------------- offsets and time spans

def _human_time(ms: int) -> str | None:
    # Java's getXxxTimeStampStr: SimpleDateFormat "yyyy-MM-dd#HH:mm:ss:SSS" in the JVM's
    # local zone. Display only: Java has no setter, so readers drop it.
    try:
        moment = datetime.fromtimestamp(ms / 1000)
    except (OverflowError, ValueError, OSError):
        return None
    return moment.strftime("%Y-%m-%d#%H:%M:%S:") + f"{ms % 1000:03d}"


@dataclass(slots=True)
class QueueTimeSpan:
    """``QueueTimeSpan``: one queue's stored and consumed time range."""

    message_queue: MessageQueue | None = None
    min_time_stamp: int = 0
    max_time_stamp: int = 0
    consume_time_stamp: int = 0
    delay_time: int = 0

    def to_json(self) -> dict[str, Any]:
        """Includes Java's derived ``*TimeStampStr`` fields (local time, as a JVM writes them)."""
        out: dict[str, Any] = {"consumeTimeStamp": self.consume_time_stamp,
                               "consumeTimeStampStr": _human_time(self.consume_time_stamp),
                               "delayTime": self.delay_time, "maxTimeStamp": self.max_time_stamp,
                               "maxTimeStampStr": _human_time(self.max_time_stamp)}
        if self.message_queue is not None:
            out["messageQueue"] = message_queue_to_json(self.message_queue)
        out["minTimeStamp"] = self.min_time_stamp
        out["minTimeStampStr"] = _human_time(self.min_time_stamp)
        return {k: v for k, v in out.items() if v is not None}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> QueueTimeSpan:
        mq = data.get("messageQueue")
        return cls(None if mq is None else message_queue_from_json(mq), int(data.get("minTimeStamp") or 0),
                   int(data.get("maxTimeStamp") or 0), int(data.get("consumeTimeStamp") or 0),
                   int(data.get("delayTime") or 0))


@dataclass(slots=True)
class QueryConsumeTimeSpanBody:
    """``QueryConsumeTimeSpanBody``: QUERY_CONSUME_TIME_SPAN's body (a list despite its name)."""

    consume_time_span_set: list[QueueTimeSpan] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"consumeTimeSpanSet": [s.to_json() for s in self.consume_time_span_set]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> QueryConsumeTimeSpanBody:
        return cls([QueueTimeSpan.from_json(s) for s in data.get("consumeTimeSpanSet") or []])


@dataclass(slots=True)
class QueryCorrectionOffsetBody:
    """``QueryCorrectionOffsetBody``: QUERY_CORRECTION_OFFSET's body, queue id -> offset (int keys)."""

    correction_offsets: dict[int, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"correctionOffsets": {int(q): int(o) for q, o in self.correction_offsets.items()}}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> QueryCorrectionOffsetBody:
        return cls({int(q): int(o) for q, o in dict(data.get("correctionOffsets") or {}).items()})


@dataclass(slots=True)
class ResetOffsetBody:
    """
    ``ResetOffsetBody``: the new offset of each queue, the answer to
    INVOKE_BROKER_TO_RESET_OFFSET and the body of RESET_CONSUMER_CLIENT_OFFSET.
    Java leaves the table null when there is none; ``None`` keeps that.
    """

    offset_table: dict[MessageQueue, int] | None = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        if self.offset_table is None:
            return {}
        return {"offsetTable": _mq_table(self.offset_table, int)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ResetOffsetBody:
        table = data.get("offsetTable")
        return cls(None if table is None else _read_mq_table(table, int))


@dataclass(slots=True)
class KVTable:
    """``KVTable``: a string map (``{"table":{...}}``), e.g. GET_BROKER_RUNTIME_INFO's body."""

    table: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"table": dict(self.table)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> KVTable:
        return cls({str(k): str(v) for k, v in dict(data.get("table") or {}).items()})


# --------------------------------------------------------------------------- consume queue

@dataclass(slots=True)
class ConsumeQueueData:
    """``ConsumeQueueData``: one ConsumeQueue unit and, for a group, whether its filter passed it."""

    physic_offset: int = 0
    physic_size: int = 0
    tags_code: int = 0
    extend_data_json: str | None = None
    bit_map: str | None = None
    eval: bool = False
    msg: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.bit_map is not None:
            out["bitMap"] = self.bit_map
        out["eval"] = self.eval
        if self.extend_data_json is not None:
            out["extendDataJson"] = self.extend_data_json
        if self.msg is not None:
            out["msg"] = self.msg
        out.update(physicOffset=self.physic_offset, physicSize=self.physic_size, tagsCode=self.tags_code)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ConsumeQueueData:
        def text(key: str) -> str | None:
            value = data.get(key)
            return None if value is None else str(value)
        return cls(int(data.get("physicOffset") or 0), int(data.get("physicSize") or 0),
                   int(data.get("tagsCode") or 0), text("extendDataJson"), text("bitMap"),
                   bool(data.get("eval", False)), text("msg"))


@dataclass(slots=True)
class QueryConsumeQueueResponseBody:
    """``QueryConsumeQueueResponseBody``: QUERY_CONSUME_QUEUE's body."""

    subscription_data: SubscriptionData | None = None
    filter_data: str | None = None
    queue_data: list[ConsumeQueueData] | None = None
    max_queue_index: int = 0
    min_queue_index: int = 0

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.filter_data is not None:
            out["filterData"] = self.filter_data
        out["maxQueueIndex"] = self.max_queue_index
        out["minQueueIndex"] = self.min_queue_index
        if self.queue_data is not None:
            out["queueData"] = [q.to_json() for q in self.queue_data]
        if self.subscription_data is not None:
            out["subscriptionData"] = self.subscription_data.to_json()
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> QueryConsumeQueueResponseBody:
        sub, queue, filt = data.get("subscriptionData"), data.get("queueData"), data.get("filterData")
        return cls(None if sub is None else SubscriptionData.from_json(sub), None if filt is None else str(filt),
                   None if queue is None else [ConsumeQueueData.from_json(q) for q in queue],
                   int(data.get("maxQueueIndex") or 0), int(data.get("minQueueIndex") or 0))


# --------------------------------------------------------------------------- 5.x metadata


@dataclass(slots=True)
class CreateTopicListRequestBody:
    """
    ``CreateTopicListRequestBody`` (UPDATE_AND_CREATE_TOPIC_LIST, 18; 5.x): the topic configs
    to create. Their ``attributes`` keep the sign of a modification (``{"+message.type": "FIFO"}``).
    """

    topic_config_list: list[TopicConfig] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"topicConfigList": [tc.to_json() for tc in self.topic_config_list]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CreateTopicListRequestBody:
        return cls([TopicConfig.from_json(tc) for tc in data.get("topicConfigList") or []])


@dataclass(slots=True)
class SubscriptionGroupList:
    """``SubscriptionGroupList`` (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST, 225; 5.x)."""

    group_config_list: list[SubscriptionGroupConfig] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"groupConfigList": [g.to_json() for g in self.group_config_list]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SubscriptionGroupList:
        return cls([SubscriptionGroupConfig.from_json(g) for g in data.get("groupConfigList") or []])


@dataclass(slots=True)
class QuerySubscriptionResponseBody:
    """``QuerySubscriptionResponseBody`` (QUERY_SUBSCRIPTION_BY_CONSUMER, 345; 5.x)."""

    group: str | None = None
    topic: str | None = None
    subscription_data: SubscriptionData | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.group is not None:
            out["group"] = self.group
        if self.subscription_data is not None:
            out["subscriptionData"] = self.subscription_data.to_json()
        if self.topic is not None:
            out["topic"] = self.topic
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> QuerySubscriptionResponseBody:
        sub = data.get("subscriptionData")
        return cls(data.get("group"), data.get("topic"), None if sub is None else SubscriptionData.from_json(sub))


#: ``MessageRequestMode`` names.
MESSAGE_REQUEST_MODES = ("PULL", "POP")


@dataclass(slots=True)
class SetMessageRequestModeRequestBody:
    """
    ``SetMessageRequestModeRequestBody`` (SET_MESSAGE_REQUEST_MODE, 401; 5.x), also the value
    of each (topic, group) in ``messageRequestMode.json``. Java's defaults: PULL, 0.

    :raises ValueError: (from :meth:`from_json`) a mode that is neither PULL nor POP, or a
        share count that is no integer.
    """

    topic: str | None = None
    consumer_group: str | None = None
    mode: str = "PULL"
    pop_share_queue_num: int = 0

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.consumer_group is not None:
            out["consumerGroup"] = self.consumer_group
        out["mode"] = self.mode
        out["popShareQueueNum"] = self.pop_share_queue_num
        if self.topic is not None:
            out["topic"] = self.topic
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SetMessageRequestModeRequestBody:
        mode = data.get("mode")
        mode = "PULL" if mode is None else str(mode)
        if mode.isdigit() and int(mode) < len(MESSAGE_REQUEST_MODES):
            mode = MESSAGE_REQUEST_MODES[int(mode)]  # fastjson also reads an enum by ordinal
        if mode not in MESSAGE_REQUEST_MODES:
            raise ValueError(f"no MessageRequestMode named {mode[:100]!r}")
        topic, group = data.get("topic"), data.get("consumerGroup")
        return cls(None if topic is None else str(topic), None if group is None else str(group), mode,
                   int(data.get("popShareQueueNum") or 0))


@dataclass(slots=True)
class QueryAssignmentRequestBody:
    """``QueryAssignmentRequestBody`` (QUERY_ASSIGNMENT, 400; 5.x): who asks the broker to allocate."""

    topic: str | None = None
    consumer_group: str | None = None
    client_id: str | None = None
    strategy_name: str | None = None
    message_model: str | None = None

    def to_json(self) -> dict[str, Any]:
        out = {"clientId": self.client_id, "consumerGroup": self.consumer_group, "messageModel": self.message_model,
               "strategyName": self.strategy_name, "topic": self.topic}
        return {k: v for k, v in out.items() if v is not None}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> QueryAssignmentRequestBody:
        def text(key: str) -> str | None:
            value = data.get(key)
            return None if value is None else str(value)
        return cls(text("topic"), text("consumerGroup"), text("clientId"), text("strategyName"), text("messageModel"))


@dataclass(frozen=True, slots=True)
class MessageQueueAssignment:
    """``MessageQueueAssignment``: one queue and how it is consumed (PULL or POP; queue id -1: every queue)."""

    message_queue: MessageQueue
    mode: str = "PULL"

    def to_json(self) -> dict[str, Any]:
        return {"messageQueue": message_queue_to_json(self.message_queue), "mode": self.mode}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MessageQueueAssignment:
        return cls(message_queue_from_json(data["messageQueue"]), str(data.get("mode") or "PULL"))


@dataclass(slots=True)
class QueryAssignmentResponseBody:
    """``QueryAssignmentResponseBody``: ``None`` (left out) is Java's "no valid answer, keep what you have"."""

    message_queue_assignments: list[MessageQueueAssignment] | None = None

    def to_json(self) -> dict[str, Any]:
        if self.message_queue_assignments is None:
            return {}
        return {"messageQueueAssignments": [a.to_json() for a in self.message_queue_assignments]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> QueryAssignmentResponseBody:
        items = data.get("messageQueueAssignments")
        return cls(None if items is None else [MessageQueueAssignment.from_json(a) for a in items])
