# -*- test-case-name: rocketmq_tx.spark.test.test_reading -*-
"""
The ``rocketmq`` data source for Spark's Python Data Source API (pyspark >= 4.2):

    from rocketmq_tx.spark import RocketMQDataSource
    spark.dataSource.register(RocketMQDataSource)
    df = spark.read.format("rocketmq").option("nameServer", "127.0.0.1:9876").option("topic", "T").load()

Where each piece runs: the data source and the readers' planning methods run in Python
processes beside the driver; ``read`` and the writers' ``write`` run in executor Python
workers, which receive these objects pickled. So they hold only :class:`ReadOptions` /
:class:`WriteOptions` (plain values), and every method opens its blocking clients and
closes them before returning.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow
from pyspark.sql.types import (
    BinaryType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from rocketmq_tx.spark import offsets as off
from rocketmq_tx.spark.offsets import QueueRange
from rocketmq_tx.spark.options import ReadOptions, WriteOptions
from rocketmq_tx.spark.reading import COLUMNS, QueueOffsets, read_range
from rocketmq_tx.spark.writing import check_columns, send_rows

__all__ = ["RocketMQDataSource", "RocketMQPartition", "SCHEMA"]

log = logging.getLogger(__name__)

_TYPES = {"string": StringType(), "int": IntegerType(), "bigint": LongType(), "binary": BinaryType(),
          "map<string,string>": MapType(StringType(), StringType()), "timestamp": TimestampType()}

#: The rows the source produces (see ``docs/spark.md``).
SCHEMA = StructType([StructField(name, _TYPES[kind]) for name, kind in COLUMNS])


class RocketMQPartition(InputPartition):
    """One :class:`QueueRange` as Spark's input partition (picklable: plain values only)."""

    def __init__(self, queue_range: QueueRange) -> None:
        super().__init__(queue_range)
        self.range = queue_range


class RocketMQDataSource(DataSource):
    """``format("rocketmq")``: batch and streaming reads, batch and streaming writes."""

    @classmethod
    def name(cls) -> str:
        return "rocketmq"

    def schema(self) -> StructType:
        return SCHEMA

    def reader(self, schema) -> DataSourceReader:
        return RocketMQBatchReader(ReadOptions.parse(self.options, streaming=False))

    def streamReader(self, schema) -> DataSourceStreamReader:
        return RocketMQStreamReader(ReadOptions.parse(self.options, streaming=True))

    def writer(self, schema, overwrite: bool) -> DataSourceWriter:
        return RocketMQWriter(self._write_options(schema), schema.fieldNames())

    def streamWriter(self, schema, overwrite: bool) -> DataSourceStreamWriter:
        return RocketMQStreamWriter(self._write_options(schema), schema.fieldNames())

    def _write_options(self, schema) -> WriteOptions:
        options = WriteOptions.parse(self.options)
        check_columns(options, schema.fieldNames())
        return options


def _partitions(ranges: list[QueueRange]) -> list[InputPartition]:
    return [RocketMQPartition(r) for r in ranges]


class RocketMQBatchReader(DataSourceReader):
    """A bounded read: offsets are fixed when Spark plans the query."""

    def __init__(self, options: ReadOptions) -> None:
        self.options = options

    def partitions(self) -> list[InputPartition]:
        options = self.options
        with QueueOffsets(options) as lookup:
            queues = lookup.queues()
            bounds = lookup.min_max(queues)
            start = lookup.resolve(options.start_spec(streaming=False), queues, bounds, options.starting_timestamp)
            end = lookup.resolve(options.ending_offsets, queues, bounds, default="latest")
        ends = {key: max(stop, start[key]) for key, stop in end.items()}
        return _partitions(off.plan_ranges(start, ends, options.min_partitions))

    def read(self, partition: InputPartition) -> Iterator:
        assert isinstance(partition, RocketMQPartition)  # Spark hands back what partitions() made
        return read_range(self.options, partition.range)


class RocketMQStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """
    Offsets are ``{"topic": {"brokerName": {"queueId": nextOffset}}}``, checkpointed by
    Spark. ``maxOffsetsPerTrigger`` is Spark's read limit (admission control), honoured by
    ``Trigger.AvailableNow`` too.
    """

    def __init__(self, options: ReadOptions) -> None:
        self.options = options
        self._committed: dict | None = None
        #: with Trigger.AvailableNow: the offsets that were the latest when the query started
        self._target: dict | None = None

    def prepareForTriggerAvailableNow(self) -> None:
        with QueueOffsets(self.options) as lookup:
            queues = lookup.queues(missing_ok=True)
            self._target = {key: high for key, (_, high) in lookup.min_max(queues, skip_unreachable=True).items()}

    def initialOffset(self) -> dict:
        options = self.options
        with QueueOffsets(options) as lookup:
            queues = lookup.queues()
            bounds = lookup.min_max(queues)
            start = lookup.resolve(options.start_spec(streaming=True), queues, bounds, options.starting_timestamp)
        return off.to_json(start)

    def getDefaultReadLimit(self) -> ReadLimit:
        limit = self.options.max_offsets_per_trigger
        return ReadAllAvailable() if limit is None else ReadMaxRows(limit)

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        # Spark asks for the next batch only once the batch ending at `start` is done, but
        # calls commit() for it only when a new batch has data: report progress here too,
        # so an idle query's group shows no lag.
        self._commit_group(start)
        begin = off.from_json(start)
        with QueueOffsets(self.options) as lookup:
            queues = lookup.queues(missing_ok=True)
            bounds = lookup.min_max(queues, skip_unreachable=True)
        latest = {key: high for key, (_, high) in bounds.items()}
        if self._target is not None:  # AvailableNow: nothing that arrived after the start
            latest = {key: min(high, self._target[key]) for key, high in latest.items() if key in self._target}
        new_start = {key: low for key, (low, _) in bounds.items() if key not in begin}
        for key in new_start:
            log.info("rocketmq source: new queue %s/%s/%d starts at its earliest offset", *key)
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        return off.to_json(off.limit_offsets(begin, latest, max_rows, new_start))

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        begin, stop = off.from_json(start), off.from_json(end)
        new = [key for key in stop if key not in begin]
        return _partitions(off.plan_ranges(begin, stop, self.options.min_partitions, new_queues=new))

    def read(self, partition: InputPartition) -> Iterator:
        assert isinstance(partition, RocketMQPartition)  # Spark hands back what partitions() made
        return read_range(self.options, partition.range)

    def commit(self, end: dict) -> None:
        self._commit_group(end)

    def _commit_group(self, done: dict) -> None:
        """With ``consumerGroup``, store *done* (offsets of processed batches) on the brokers."""
        if self.options.consumer_group is None or done == self._committed:
            return
        try:
            with QueueOffsets(self.options) as lookup:
                lookup.commit(off.from_json(done))
        except Exception as e:  # progress reporting must not stop the query
            log.warning("rocketmq source: committing offsets for %s failed: %s", self.options.consumer_group, e)
            return
        self._committed = done


@dataclass
class RocketMQCommitMessage(WriterCommitMessage):
    """What one write task sent."""

    sent: int


def _sent(messages: list) -> int:
    return sum(m.sent for m in messages if m is not None)


class _RowSender:
    """What both writers do on an executor: rows to messages through the blocking producer."""

    def __init__(self, options: WriteOptions, columns: list[str]) -> None:
        self.options = options
        self.columns = columns

    def write(self, iterator: Iterator) -> RocketMQCommitMessage:
        return RocketMQCommitMessage(send_rows(self.options, self.columns, iterator))


class RocketMQWriter(_RowSender, DataSourceWriter):
    """Rows to messages through the blocking producer (at-least-once: see ``docs/spark.md``)."""

    def commit(self, messages: list) -> None:
        log.info("rocketmq sink: %d messages sent", _sent(messages))


class RocketMQStreamWriter(_RowSender, DataSourceStreamWriter):
    """The streaming form of :class:`RocketMQWriter`."""

    def commit(self, messages: list, batchId: int) -> None:
        log.info("rocketmq sink: batch %d: %d messages sent", batchId, _sent(messages))
