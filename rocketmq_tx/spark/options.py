# -*- test-case-name: rocketmq_tx.spark.test.test_options -*-
"""
The ``rocketmq`` data source's options, parsed and checked on the driver.

Spark hands a data source its options lower-cased; they are matched here without regard
to case and turned into frozen, picklable dataclasses, so executors receive plain values.
Names follow Spark's Kafka source where they mean the same thing. Anything unknown or
malformed raises :class:`OptionError` with the option's name before any job starts.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rocketmq_tx.acl import SessionCredentials
from rocketmq_tx.config import ConfigError
from rocketmq_tx.remoting.api import MessageSelector
from rocketmq_tx.tlsconfig import TlsSettings

__all__ = ["OptionError", "OffsetSpec", "ReadOptions", "WriteOptions", "EARLIEST", "LATEST"]

#: In a JSON offsets option, Kafka's sentinels: -2 is the earliest offset, -1 the latest.
EARLIEST = -2
LATEST = -1

#: Options Spark itself may put into a source's option map.
_SPARK_OWNED = frozenset({"path", "checkpointlocation", "queryname"})

#: ``tls.*`` keys accepted as options (client side only), lower-cased -> Java's name.
_TLS_KEYS = {s.key.lower(): s.key for s in TlsSettings.SPEC if not s.key.startswith("tls.server.")}


class OptionError(ValueError):
    """An option of the ``rocketmq`` data source is unknown, missing or malformed."""


#: ``{"topic": {"brokerName": {"queueId": offset}}}`` with ints; see :class:`OffsetSpec`.
OffsetTable = dict[str, dict[str, dict[str, int]]]


@dataclass(frozen=True)
class OffsetSpec:
    """
    Where a read starts or ends: ``earliest``, ``latest`` or explicit per-queue offsets.

    :ivar kind: ``"earliest"``, ``"latest"`` or ``"json"``.
    :ivar table: for ``json``: ``topic -> brokerName -> queueId (text) -> offset``, where
        -2 and -1 mean earliest and latest. Queues it does not name take the default of
        the option (earliest for a start, latest for an end).
    """

    kind: str
    table: tuple[tuple[str, str, int, int], ...] = ()

    def explicit(self) -> dict[tuple[str, str, int], int]:
        """``(topic, brokerName, queueId) -> offset`` for a ``json`` spec."""
        return {(t, b, q): o for t, b, q, o in self.table}

    @classmethod
    def parse(cls, name: str, text: str, topics: tuple[str, ...]) -> OffsetSpec:
        value = text.strip()
        if value.lower() in ("earliest", "latest"):
            return cls(value.lower())
        try:
            doc = json.loads(value)
        except ValueError:
            raise OptionError(f"{name}: expected earliest, latest or a JSON object "
                              f'{{"topic":{{"brokerName":{{"queueId":offset}}}}}}, got {text!r}') from None
        if not isinstance(doc, dict):
            raise OptionError(f"{name}: expected a JSON object, got {text!r}")
        rows = []
        for topic, brokers in doc.items():
            if topic not in topics:
                raise OptionError(f"{name}: topic {topic!r} is not one of the topics read ({', '.join(topics)})")
            if not isinstance(brokers, dict):
                raise OptionError(f"{name}: {topic!r} must map broker names to objects")
            for broker, queues in brokers.items():
                if not isinstance(queues, dict):
                    raise OptionError(f"{name}: {topic}/{broker} must map queue ids to offsets")
                for queue, offset in queues.items():
                    try:
                        queue_id = int(queue)
                    except ValueError:
                        raise OptionError(f"{name}: queue id {queue!r} of {topic}/{broker} is not an integer") from None
                    if isinstance(offset, bool) or not isinstance(offset, int) or offset < EARLIEST:
                        raise OptionError(f"{name}: offset of {topic}/{broker}/{queue} must be an integer >= -2, "
                                          f"got {offset!r}")
                    rows.append((topic, broker, queue_id, offset))
        return cls("json", tuple(sorted(rows)))


def _canonical(options: Mapping[str, str], known: Mapping[str, str], what: str) -> dict[str, str]:
    """Options keyed by their documented spelling; unknown ones raise."""
    out: dict[str, str] = {}
    for key, value in options.items():
        lower = key.lower()
        if lower in _SPARK_OWNED:
            continue
        name = known.get(lower) or _TLS_KEYS.get(lower)
        if name is None:
            names = ", ".join(sorted(set(known.values())))
            raise OptionError(f"unknown {what} option {key!r}; known options: {names} and tls.client.* / tls.enable")
        out[name] = value if isinstance(value, str) else str(value)
    return out


def _int(options: Mapping[str, str], name: str, default: int | None, minimum: int) -> int | None:
    text = options.get(name)
    if text is None:
        return default
    try:
        value = int(text.strip())
    except ValueError:
        raise OptionError(f"{name}: expected an integer, got {text!r}") from None
    if value < minimum:
        raise OptionError(f"{name}: must be at least {minimum}, got {value}")
    return value


def _bool(options: Mapping[str, str], name: str, default: bool) -> bool:
    text = options.get(name)
    if text is None:
        return default
    if text.strip().lower() not in ("true", "false"):
        raise OptionError(f"{name}: expected true or false, got {text!r}")
    return text.strip().lower() == "true"


def _tls(options: Mapping[str, str]) -> TlsSettings | None:
    tls_options = {k: v for k, v in options.items() if k.startswith("tls.")}
    if not tls_options:
        return None
    try:
        settings = TlsSettings.from_sources({"tls.config.file": ""}, tls_options)
    except ConfigError as e:
        raise OptionError(str(e)) from None
    return settings if settings["tls.enable"] else None


def _credentials(options: Mapping[str, str]) -> SessionCredentials | None:
    """ACL 1.0 credentials from ``accessKey``/``secretKey``/``securityToken`` (the values
    never appear in messages or ``repr``)."""
    access_key = options.get("accessKey")
    secret_key = options.get("secretKey")
    token = options.get("securityToken")
    if access_key is None and secret_key is None:
        if token is not None:
            raise OptionError("securityToken needs accessKey and secretKey")
        return None
    if access_key is None or secret_key is None or not access_key.strip() or not secret_key.strip():
        raise OptionError("accessKey and secretKey go together, and neither may be empty")
    return SessionCredentials(access_key.strip(), secret_key.strip(), token.strip() if token is not None else None)


def _name_server(options: Mapping[str, str]) -> str:
    addr = (options.get("nameServer") or "").strip()
    if not addr:
        raise OptionError("nameServer is required: the name server list, \"host:port;host:port\"")
    for part in filter(None, (p.strip() for p in addr.split(";"))):
        host, sep, port = part.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise OptionError(f"nameServer: {part!r} is not host:port")
    return addr


_READ_KEYS = {k.lower(): k for k in (
    "nameServer", "topic", "subExpression", "sql92", "startingOffsets", "startingTimestamp", "endingOffsets",
    "maxOffsetsPerTrigger", "minPartitions", "failOnDataLoss", "pullBatchSize", "pullTimeoutMs",
    "consumerGroup", "accessKey", "secretKey", "securityToken",
)}

_WRITE_KEYS = {k.lower(): k for k in ("nameServer", "topic", "producerGroup", "sendTimeoutMs", "accessKey", "secretKey",
                                      "securityToken")}

#: The group a reader names in its pull requests when no ``consumerGroup`` is given.
DEFAULT_READ_GROUP = "rocketmq_tx_spark_reader"
DEFAULT_PRODUCER_GROUP = "rocketmq_tx_spark_writer"


@dataclass(frozen=True)
class ReadOptions:
    """Everything a reader needs, validated; pickled to executors as is."""

    name_server: str
    topics: tuple[str, ...]
    #: a TAG expression, or (option ``sql92``) an SQL92 selector the broker evaluates
    sub_expression: str | MessageSelector = "*"
    starting_offsets: OffsetSpec | None = None
    starting_timestamp: int | None = None
    ending_offsets: OffsetSpec = OffsetSpec("latest")
    max_offsets_per_trigger: int | None = None
    min_partitions: int | None = None
    fail_on_data_loss: bool = True
    pull_batch_size: int = 32
    pull_timeout_ms: int = 10_000
    consumer_group: str | None = None
    tls: TlsSettings | None = None
    #: ACL 1.0 (``accessKey``, ``secretKey``, ``securityToken``); its repr hides the secrets
    credentials: SessionCredentials | None = None

    @property
    def pull_group(self) -> str:
        return self.consumer_group or DEFAULT_READ_GROUP

    def start_spec(self, streaming: bool) -> OffsetSpec:
        """``startingOffsets``, defaulting like Kafka's: earliest for batch, latest for streaming."""
        if self.starting_offsets is not None:
            return self.starting_offsets
        return OffsetSpec("latest" if streaming else "earliest")

    @classmethod
    def parse(cls, raw: Mapping[str, Any], *, streaming: bool) -> ReadOptions:
        options = _canonical(raw, _READ_KEYS, "read")
        name_server = _name_server(options)
        topics = tuple(dict.fromkeys(t.strip() for t in options.get("topic", "").split(",") if t.strip()))
        if not topics:
            raise OptionError("topic is required: one topic or a comma-separated list")
        tags = options.get("subExpression", "*").strip() or "*"
        if "||" in tags and any(not t.strip() for t in tags.split("||")):
            raise OptionError(f"subExpression: empty tag in {tags!r}")
        sub_expression: str | MessageSelector = tags
        sql = options.get("sql92")
        if sql is not None:
            if not sql.strip():
                raise OptionError("sql92: must not be empty")
            if tags != "*":
                raise OptionError("sql92 and subExpression are mutually exclusive (filter TAGS in the SQL)")
            sub_expression = MessageSelector.by_sql(sql.strip())
        starting = options.get("startingOffsets")
        start = OffsetSpec.parse("startingOffsets", starting, topics) if starting is not None else None
        ending = options.get("endingOffsets")
        if ending is not None and streaming:
            raise OptionError("endingOffsets applies to batch reads only")
        end = OffsetSpec.parse("endingOffsets", ending, topics) if ending is not None else OffsetSpec("latest")
        if end.kind == "earliest":
            raise OptionError("endingOffsets: earliest is not a valid end (use latest or JSON)")
        if any(o == EARLIEST for o in end.explicit().values()):
            raise OptionError("endingOffsets: -2 (earliest) is not a valid end offset")
        if start is not None and start.kind == "json" and end.kind == "json":
            ends = end.explicit()
            for key, offset in start.explicit().items():
                if offset >= 0 and ends.get(key, LATEST) >= 0 and ends[key] < offset:
                    raise OptionError(f"endingOffsets: {'/'.join(map(str, key))} ends at {ends[key]}, "
                                      f"before its start {offset}")
        max_per_trigger = _int(options, "maxOffsetsPerTrigger", None, 1)
        if max_per_trigger is not None and not streaming:
            raise OptionError("maxOffsetsPerTrigger applies to streaming reads only")
        group = options.get("consumerGroup")
        if group is not None:
            group = group.strip()
            if not group:
                raise OptionError("consumerGroup: must not be empty")
        return cls(
            name_server=name_server,
            topics=topics,
            sub_expression=sub_expression,
            starting_offsets=start,
            starting_timestamp=_int(options, "startingTimestamp", None, 0),
            ending_offsets=end,
            max_offsets_per_trigger=max_per_trigger,
            min_partitions=_int(options, "minPartitions", None, 1),
            fail_on_data_loss=_bool(options, "failOnDataLoss", True),
            pull_batch_size=_int(options, "pullBatchSize", 32, 1) or 32,
            pull_timeout_ms=_int(options, "pullTimeoutMs", 10_000, 1) or 10_000,
            consumer_group=group,
            tls=_tls(options),
            credentials=_credentials(options),
        )


@dataclass(frozen=True)
class WriteOptions:
    """The writer's options: where to send, and the topic of rows without one."""

    name_server: str
    topic: str | None = None
    producer_group: str = DEFAULT_PRODUCER_GROUP
    send_timeout_ms: int = 3000
    tls: TlsSettings | None = None
    #: ACL 1.0 (``accessKey``, ``secretKey``, ``securityToken``); its repr hides the secrets
    credentials: SessionCredentials | None = None

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> WriteOptions:
        options = _canonical(raw, _WRITE_KEYS, "write")
        topic = (options.get("topic") or "").strip() or None
        if topic is not None and "," in topic:
            raise OptionError("topic: a writer sends to one default topic (rows may name their own)")
        return cls(
            name_server=_name_server(options),
            topic=topic,
            producer_group=(options.get("producerGroup") or DEFAULT_PRODUCER_GROUP).strip(),
            send_timeout_ms=_int(options, "sendTimeoutMs", 3000, 1) or 3000,
            tls=_tls(options),
            credentials=_credentials(options),
        )
