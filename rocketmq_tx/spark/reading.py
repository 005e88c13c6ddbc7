# -*- test-case-name: rocketmq_tx.spark.test.test_reading -*-
"""
What the ``rocketmq`` source does over the wire, through :mod:`rocketmq_tx.blocking` only:
on the driver, list queues and resolve offsets; on an executor, read one
:class:`~rocketmq_tx.spark.offsets.QueueRange` into Arrow record batches.

Nothing here keeps a connection between calls: each call opens its clients and closes
them, so the objects Spark pickles hold configuration only.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING

from rocketmq_tx.blocking import BlockingPullClient
from rocketmq_tx.common.message import MessageConst, MessageExt, MessageQueue
from rocketmq_tx.remoting.api import PullStatus
from rocketmq_tx.spark.offsets import QueueKey, QueueRange
from rocketmq_tx.spark.options import EARLIEST, LATEST, OffsetSpec, ReadOptions

if TYPE_CHECKING:
    import pyarrow

__all__ = ["DataLossError", "QueueOffsets", "read_range", "arrow_schema", "COLUMNS"]

log = logging.getLogger(__name__)

#: Rows per Arrow batch handed to Spark.
BATCH_ROWS = 4096

#: The row schema, in order: (column, Spark SQL type).
COLUMNS = (
    ("topic", "string"),
    ("brokerName", "string"),
    ("queueId", "int"),
    ("queueOffset", "bigint"),
    ("msgId", "string"),
    ("keys", "string"),
    ("tags", "string"),
    ("body", "binary"),
    ("properties", "map<string,string>"),
    ("bornTimestamp", "timestamp"),
    ("storeTimestamp", "timestamp"),
    ("bornHost", "string"),
    ("storeHost", "string"),
    ("reconsumeTimes", "int"),
)

#: Added by the client to every pulled message (they change as the queue grows), so left
#: out of the ``properties`` column to keep re-reads identical.
_CLIENT_PROPERTIES = (MessageConst.PROPERTY_MIN_OFFSET, MessageConst.PROPERTY_MAX_OFFSET)


class DataLossError(RuntimeError):
    """Messages a read needs are gone (expired or truncated) and ``failOnDataLoss`` is true."""


def pull_client(options: ReadOptions) -> BlockingPullClient:
    return BlockingPullClient(options.pull_group, options.name_server, timeout=options.pull_timeout_ms / 1000,
                              tls=options.tls, credentials=options.credentials)


class QueueOffsets:
    """
    Driver-side lookups for every queue of the source's topics. Use as a context manager;
    it holds connections only while open.
    """

    def __init__(self, options: ReadOptions) -> None:
        self.options = options
        self.client = pull_client(options)

    def __enter__(self) -> QueueOffsets:
        return self

    def __exit__(self, *exc: object) -> None:
        self.client.close()

    def queues(self, *, missing_ok: bool = False) -> list[MessageQueue]:
        """
        Every readable queue of every topic. With *missing_ok*, a topic the name server does
        not know (yet) contributes nothing instead of raising.
        """
        queues: list[MessageQueue] = []
        for topic in self.options.topics:
            try:
                queues += self.client.fetch_queues(topic)
            except Exception:
                if not missing_ok:
                    raise
                log.warning("rocketmq source: no route for topic %s yet", topic)
        return sorted(queues)

    def min_max(self, queues: list[MessageQueue], *, skip_unreachable: bool = False) -> dict[QueueKey, tuple[int, int]]:
        """``(min, max)`` offsets per queue; with *skip_unreachable*, a broker that does not answer is left out."""
        out: dict[QueueKey, tuple[int, int]] = {}
        down: set[str] = set()
        for mq in queues:
            if mq.broker_name in down:
                continue
            try:
                out[_key(mq)] = (max(0, self.client.min_offset(mq)), self.client.max_offset(mq))
            except Exception as e:
                if not skip_unreachable:
                    raise
                down.add(mq.broker_name)
                log.warning("rocketmq source: broker %s unreachable (%s); its queues wait", mq.broker_name, e)
        return out

    def resolve(self, spec: OffsetSpec, queues: list[MessageQueue], bounds: dict[QueueKey, tuple[int, int]],
                timestamp: int | None = None, *, default: str = "earliest") -> dict[QueueKey, int]:
        """
        Offsets for *queues* from a start or end spec (or a timestamp, which wins, as with
        Kafka's ``startingTimestamp``). Explicit offsets are kept as given, even outside
        the queue's bounds: reading decides what a missing range means.
        """
        explicit = spec.explicit()
        out: dict[QueueKey, int] = {}
        for mq in queues:
            key = _key(mq)
            if key not in bounds:
                continue
            low, high = bounds[key]
            if timestamp is not None:
                out[key] = self.offset_for_time(mq, timestamp, low, high)
                continue
            kind = spec.kind
            offset = explicit.get(key) if kind == "json" else None
            if kind == "json" and offset is None:
                kind = default
            if kind == "earliest" or offset == EARLIEST:
                out[key] = low
            elif kind == "latest" or offset == LATEST:
                out[key] = high
            else:
                assert offset is not None
                out[key] = offset
        return out

    def offset_for_time(self, mq: MessageQueue, timestamp: int, low: int, high: int) -> int:
        """
        The first offset of *mq* stored at or after *timestamp* (Kafka's meaning of
        ``startingTimestamp``). The broker's SEARCH_OFFSET_BY_TIMESTAMP answers the offset
        whose store time is *closest*, which may be on either side of the first one; store
        times only grow along a queue, so a short scan around it finds the exact offset.
        """
        offset = self._first_at_or_after(mq, timestamp, min(max(self.client.search_offset(mq, timestamp), low), high),
                                         high)
        while offset > low:
            window = max(low, offset - 32)
            first = self._first_at_or_after(mq, timestamp, window, offset)
            if first > window or window == low:
                return first
            offset = window
        return offset

    def _first_at_or_after(self, mq: MessageQueue, timestamp: int, start: int, limit: int) -> int:
        """The first offset in ``[start, limit)`` stored at or after *timestamp*, else *limit*."""
        offset = start
        while offset < limit:
            messages = self.client.pull(mq, offset, min(32, limit - offset)).msg_found_list
            if not messages:
                return limit
            for msg in messages:
                if msg.queue_offset >= limit:
                    return limit
                if msg.store_timestamp >= timestamp:
                    return msg.queue_offset
            offset = messages[-1].queue_offset + 1
        return limit

    def commit(self, offsets: dict[QueueKey, int]) -> None:
        """Store *offsets* as the consumer group's progress (UPDATE_CONSUMER_OFFSET per queue)."""
        for (topic, broker, queue_id), offset in sorted(offsets.items()):
            self.client.commit_offset(MessageQueue(topic, broker, queue_id), offset)


def _key(mq: MessageQueue) -> QueueKey:
    return (mq.topic, mq.broker_name, mq.queue_id)


def arrow_schema() -> pyarrow.Schema:
    """The Arrow schema Spark expects for :data:`COLUMNS` (checked against Spark's own mapping by a test)."""
    import pyarrow as pa

    string_map = pa.map_(pa.field("key", pa.string(), nullable=False), pa.field("value", pa.string()))
    types = {"string": pa.string(), "int": pa.int32(), "bigint": pa.int64(), "binary": pa.binary(),
             "map<string,string>": string_map, "timestamp": pa.timestamp("us", tz="UTC")}
    return pa.schema([pa.field(name, types[kind]) for name, kind in COLUMNS])


def _host(host: tuple[str, int]) -> str:
    return f"{host[0]}:{host[1]}"


class _Columns:
    """Column lists filled message by message and turned into one Arrow batch."""

    def __init__(self, broker_name: str) -> None:
        self.broker_name = broker_name
        self.columns: list[list] = [[] for _ in COLUMNS]

    def __len__(self) -> int:
        return len(self.columns[0])

    def add(self, msg: MessageExt) -> None:
        props = msg.properties
        extra = {k: v for k, v in props.items() if k not in _CLIENT_PROPERTIES}
        c = self.columns
        c[0].append(msg.topic)
        c[1].append(self.broker_name)
        c[2].append(msg.queue_id)
        c[3].append(msg.queue_offset)
        c[4].append(msg.msg_id)
        c[5].append(props.get(MessageConst.PROPERTY_KEYS))
        c[6].append(props.get(MessageConst.PROPERTY_TAGS))
        c[7].append(msg.body)
        c[8].append(extra)
        c[9].append(msg.born_timestamp * 1000)
        c[10].append(msg.store_timestamp * 1000)
        c[11].append(_host(msg.born_host))
        c[12].append(_host(msg.store_host))
        c[13].append(msg.reconsume_times)

    def batch(self, schema: pyarrow.Schema) -> pyarrow.RecordBatch:
        import pyarrow as pa

        arrays = [pa.array(values, type=field.type) for values, field in zip(self.columns, schema)]
        self.columns = [[] for _ in COLUMNS]
        return pa.RecordBatch.from_arrays(arrays, schema=schema)


def read_range(options: ReadOptions, part: QueueRange) -> Iterator[pyarrow.RecordBatch]:
    """
    The messages of *part* whose tags match ``subExpression``, in queue order, as Arrow
    batches of :func:`arrow_schema`. Deterministic: the same range gives the same rows as
    long as the broker still has them.

    :raises DataLossError: part of the range is gone and ``failOnDataLoss`` is true (with
        it false, the gap is logged and skipped).
    """
    puller = pull_client(options)
    schema = arrow_schema()
    mq = MessageQueue(part.topic, part.broker_name, part.queue_id)
    columns = _Columns(part.broker_name)
    offset = part.start
    try:
        while offset < part.end:
            result = puller.pull(mq, offset, min(options.pull_batch_size, part.end - offset),
                                 options.sub_expression)
            status = result.pull_status
            if status is PullStatus.FOUND:
                for msg in result.msg_found_list:
                    if msg.queue_offset >= part.end:
                        break
                    if msg.queue_offset >= offset:
                        columns.add(msg)
                if len(columns) >= BATCH_ROWS:
                    yield columns.batch(schema)
            elif status is PullStatus.NO_MATCHED_MSG:
                pass
            elif status is PullStatus.OFFSET_ILLEGAL and offset < result.min_offset:
                # Expired (or never there, for a new queue's start of 0).
                _lost(options, part, offset, min(result.min_offset, part.end), quiet=part.new_queue)
                offset = min(result.min_offset, part.end)
                continue
            else:
                # NO_NEW_MSG or an offset past the end: the broker no longer has what it
                # advertised. A Java broker whose CommitLog expired under a still-listed
                # consume queue says so with a next offset past the hole; anything else
                # (a truncated store, a replaced broker) loses the rest of the range.
                resume = result.next_begin_offset
                if offset < resume < part.end:
                    _lost(options, part, offset, resume, quiet=False)
                    offset = resume
                    continue
                _lost(options, part, offset, part.end, quiet=False)
                break
            if result.next_begin_offset <= offset:
                raise RuntimeError(f"{mq}: the broker answered next offset {result.next_begin_offset} "
                                   f"for a pull at {offset}")
            offset = result.next_begin_offset
        if len(columns):
            yield columns.batch(schema)
    finally:
        puller.close()


def _lost(options: ReadOptions, part: QueueRange, start: int, end: int, *, quiet: bool) -> None:
    if start >= end or quiet:
        return
    where = f"{part.topic}/{part.broker_name}/{part.queue_id}"
    if options.fail_on_data_loss:
        raise DataLossError(
            f"rocketmq source: offsets [{start}, {end}) of {where} are no longer on the broker "
            f"(expired or removed). Set failOnDataLoss=false to skip them with a warning.")
    log.warning("rocketmq source: skipping offsets [%d, %d) of %s: no longer on the broker", start, end, where)

