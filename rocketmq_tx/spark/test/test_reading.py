"""
Reading ranges and the readers' driver-side methods against the threaded fake cluster:
real sockets and the blocking client, no Spark session.
"""

from __future__ import annotations

import pickle
import time

from pyspark.sql.datasource import DataSourceStreamReader
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.blocking import BlockingProducer
from rocketmq_tx.common.message import Message, MessageQueue
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.remoting.headers.pull import PullMessageResponseHeader
from rocketmq_tx.spark.offsets import QueueRange
from rocketmq_tx.spark.options import ReadOptions
from rocketmq_tx.spark.reading import DataLossError, arrow_schema, read_range
from rocketmq_tx.spark.source import SCHEMA, RocketMQBatchReader, RocketMQDataSource, RocketMQStreamReader
from rocketmq_tx.testing.fakebroker import ThreadedFakeServer


class Base(SynchronousTestCase):
    def setUp(self) -> None:
        self.server = ThreadedFakeServer(("broker-a", "broker-b"))
        self.addCleanup(self.server.close)
        self.cluster = self.server.cluster
        self.cluster.add_topic("T", 2)
        self.producer = BlockingProducer("PG", self.server.namesrv_addr)
        self.addCleanup(self.producer.close)

    def fill(self, per_queue: int = 5) -> None:
        """*per_queue* messages in each of the 4 queues; tag A on even offsets, B on odd ones."""
        for broker in ("broker-a", "broker-b"):
            for queue_id in (0, 1):
                for i in range(per_queue):
                    msg = Message("T", f"{broker}/{queue_id}/{i}".encode())
                    msg.tags = "A" if i % 2 == 0 else "B"
                    msg.keys = [f"k{i}", "x"]
                    msg.put_property("n", str(i))
                    self.producer.send(msg, queue=MessageQueue("T", broker, queue_id))

    def options(self, streaming: bool = False, **extra: str) -> ReadOptions:
        raw = {"nameserver": self.server.namesrv_addr, "topic": "T", **{k.lower(): v for k, v in extra.items()}}
        return ReadOptions.parse(raw, streaming=streaming)

    def rows(self, options: ReadOptions, part: QueueRange) -> list[dict]:
        return [row for batch in read_range(options, part) for row in batch.to_pylist()]


class SchemaTests(SynchronousTestCase):
    def test_arrow_schema_is_sparks(self) -> None:
        """The batches carry exactly the Arrow schema Spark derives from the DDL (it rejects any other)."""
        self.assertTrue(arrow_schema().equals(to_arrow_schema(SCHEMA, timezone="UTC")))
        self.assertEqual(RocketMQDataSource({}).schema(), SCHEMA)


class ReadRangeTests(Base):
    def test_rows(self) -> None:
        self.fill()
        rows = self.rows(self.options(pullBatchSize="2"), QueueRange("T", "broker-b", 1, 1, 4))
        self.assertEqual([(r["queueOffset"], r["body"]) for r in rows],
                         [(1, b"broker-b/1/1"), (2, b"broker-b/1/2"), (3, b"broker-b/1/3")])
        row = rows[0]
        stored = self.cluster.messages[("broker-b", "T", 1)][1]
        self.assertEqual({k: row[k] for k in ("topic", "brokerName", "queueId", "keys", "tags", "reconsumeTimes")},
                         {"topic": "T", "brokerName": "broker-b", "queueId": 1, "keys": "k1 x", "tags": "B",
                          "reconsumeTimes": 0})
        self.assertEqual(row["msgId"], stored.unique_key)
        props = dict(row["properties"])
        self.assertEqual(props["n"], "1")
        self.assertNotIn("MAX_OFFSET", props)  # added by the client, changes as the queue grows
        self.assertEqual(int(row["storeTimestamp"].timestamp() * 1000), stored.store_timestamp)
        self.assertEqual(row["storeHost"], f"{stored.store_host[0]}:{stored.store_host[1]}")

    def test_tag_filter_and_determinism(self) -> None:
        self.fill()
        options = self.options(subExpression="A", pullBatchSize="1")
        part = QueueRange("T", "broker-a", 0, 0, 5)
        first = self.rows(options, part)
        self.assertEqual([r["queueOffset"] for r in first], [0, 2, 4])
        self.fill()  # more messages after the range: the same rows again
        self.assertEqual(self.rows(options, part), first)

    def test_data_loss(self) -> None:
        self.fill()
        self.cluster.min_offsets[("broker-a", "T", 0)] = 3
        part = QueueRange("T", "broker-a", 0, 1, 5)
        with self.assertRaisesRegex(DataLossError, r"offsets \[1, 3\) of T/broker-a/0 are no longer on the broker"):
            self.rows(self.options(), part)
        with self.assertLogs("rocketmq_tx.spark.reading", "WARNING") as logs:
            rows = self.rows(self.options(failOnDataLoss="false"), part)
        self.assertEqual([r["queueOffset"] for r in rows], [3, 4])
        self.assertIn("skipping offsets [1, 3) of T/broker-a/0", logs.output[0])
        # A queue that appeared mid-stream starts at 0 by plan: its missing head is not loss.
        self.assertEqual(len(self.rows(self.options(), QueueRange("T", "broker-a", 0, 0, 5, new_queue=True))), 2)

    def test_hole_in_the_middle(self) -> None:
        """A broker answering "not found" with a next offset past a hole (Java's OFFSET_FOUND_NULL)."""
        self.fill()

        def hole(addr: str, request: RemotingCommand) -> RemotingCommand:
            ext = PullMessageResponseHeader(0, 3, 0, 5).to_ext_fields()
            return request.make_response(ResponseCode.PULL_NOT_FOUND, None, ext)

        self.cluster.script(RequestCode.PULL_MESSAGE, hole)
        with self.assertLogs("rocketmq_tx.spark.reading", "WARNING") as logs:
            rows = self.rows(self.options(failOnDataLoss="false"), QueueRange("T", "broker-a", 0, 0, 5))
        self.assertEqual([r["queueOffset"] for r in rows], [3, 4])
        self.assertIn("[0, 3)", logs.output[0])

    def test_truncated_queue(self) -> None:
        """A range past what the broker holds (a store that lost its tail) is data loss too."""
        self.fill(2)
        with self.assertRaisesRegex(DataLossError, r"\[2, 6\)"):
            self.rows(self.options(), QueueRange("T", "broker-a", 0, 0, 6))


class BatchReaderTests(Base):
    def ranges(self, **extra: str) -> list[tuple]:
        reader = RocketMQBatchReader(self.options(**extra))
        parts = reader.partitions()
        pickle.loads(pickle.dumps(reader))  # what Spark ships to executors
        return [(p.range.broker_name, p.range.queue_id, p.range.start, p.range.end) for p in parts]

    def test_default_is_everything(self) -> None:
        self.fill(3)
        self.assertEqual(self.ranges(), [("broker-a", 0, 0, 3), ("broker-a", 1, 0, 3),
                                         ("broker-b", 0, 0, 3), ("broker-b", 1, 0, 3)])

    def test_json_bounds_and_timestamp(self) -> None:
        self.fill(3)
        self.assertEqual(self.ranges(startingOffsets='{"T": {"broker-a": {"0": 1, "1": -1}}}',
                                     endingOffsets='{"T": {"broker-b": {"0": 2}}}'),
                         [("broker-a", 0, 1, 3), ("broker-b", 0, 0, 2), ("broker-b", 1, 0, 3)])
        cut = int(time.time() * 1000) + 1
        time.sleep(0.01)
        self.fill(1)
        self.assertEqual(self.ranges(startingTimestamp=str(cut)), [("broker-a", 0, 3, 4), ("broker-a", 1, 3, 4),
                                                                   ("broker-b", 0, 3, 4), ("broker-b", 1, 3, 4)])

    def test_min_partitions(self) -> None:
        self.fill(4)
        self.assertEqual(len(self.ranges(minPartitions="8")), 8)


class StreamReaderTests(Base):
    def reader(self, **extra: str) -> RocketMQStreamReader:
        return RocketMQStreamReader(self.options(streaming=True, **extra))

    def test_admission_control(self) -> None:
        self.fill(5)
        reader = self.reader(startingOffsets="earliest", maxOffsetsPerTrigger="6")
        self.assertIsInstance(reader, DataSourceStreamReader)
        self.assertEqual(reader.getDefaultReadLimit(), ReadMaxRows(6))
        start = reader.initialOffset()
        self.assertEqual(start, {"T": {"broker-a": {"0": 0, "1": 0}, "broker-b": {"0": 0, "1": 0}}})
        end = reader.latestOffset(start, reader.getDefaultReadLimit())
        self.assertEqual(end, {"T": {"broker-a": {"0": 2, "1": 2}, "broker-b": {"0": 1, "1": 1}}})
        self.assertEqual(reader.latestOffset(end, ReadAllAvailable()),
                         {"T": {"broker-a": {"0": 5, "1": 5}, "broker-b": {"0": 5, "1": 5}}})
        parts = reader.partitions(start, end)
        self.assertEqual(sum(p.range.size for p in parts), 6)

    def test_latest_start(self) -> None:
        self.fill(2)
        reader = self.reader()
        start = reader.initialOffset()
        self.assertEqual(start["T"]["broker-a"], {"0": 2, "1": 2})
        self.assertEqual(reader.latestOffset(start, ReadAllAvailable()), start)

    def test_new_queue_and_absent_broker(self) -> None:
        self.fill(2)
        reader = self.reader(startingOffsets="earliest")
        start = {"T": {"broker-a": {"0": 1}}}  # as if broker-a/1 and broker-b joined later
        end = reader.latestOffset(start, ReadAllAvailable())
        self.assertEqual(end, {"T": {"broker-a": {"0": 2, "1": 2}, "broker-b": {"0": 2, "1": 2}}})
        parts = reader.partitions(start, end)
        self.assertEqual([(p.range.broker_name, p.range.queue_id, p.range.start, p.range.new_queue) for p in parts],
                         [("broker-a", 0, 1, False), ("broker-a", 1, 0, True), ("broker-b", 0, 0, True),
                          ("broker-b", 1, 0, True)])
        # broker-b stops answering: its queues keep their offsets until it is back.
        self.cluster.down.add(self.cluster.brokers["broker-b"])
        for queue_id in (0, 1):
            self.producer.send(Message("T", b"late"), queue=MessageQueue("T", "broker-a", queue_id))
        while_down = reader.latestOffset(end, ReadAllAvailable())
        self.assertEqual(while_down, {"T": {"broker-a": {"0": 3, "1": 3}, "broker-b": {"0": 2, "1": 2}}})
        # Back again, with messages sent meanwhile elsewhere: its queues continue from where they stopped.
        self.cluster.down.clear()
        self.fill(1)
        self.assertEqual(reader.latestOffset(while_down, ReadAllAvailable())["T"]["broker-b"], {"0": 3, "1": 3})

    def test_available_now_stops_at_the_start_time_latest(self) -> None:
        """Trigger.AvailableNow: what arrives after prepareForTriggerAvailableNow waits for the next run."""
        self.fill(2)
        reader = self.reader(startingOffsets="earliest", maxOffsetsPerTrigger="5")
        start = reader.initialOffset()
        reader.prepareForTriggerAvailableNow()
        self.fill(2)
        first = reader.latestOffset(start, reader.getDefaultReadLimit())
        final = reader.latestOffset(first, ReadAllAvailable())
        self.assertEqual(final, {"T": {"broker-a": {"0": 2, "1": 2}, "broker-b": {"0": 2, "1": 2}}})
        self.assertEqual(sum(e - s for (e, s) in zip(_flat(first), _flat(start))), 5)

    def test_commit_offsets_for_group(self) -> None:
        self.fill(2)
        reader = self.reader(consumerGroup="G")
        reader.commit({"T": {"broker-a": {"0": 2, "1": 1}}})
        self.assertEqual((self.cluster.offsets[("G", "T", 0)], self.cluster.offsets[("G", "T", 1)]), (2, 1))
        # latestOffset(start) means the batch ending at start is done: it is committed too.
        reader.latestOffset({"T": {"broker-a": {"0": 2, "1": 2}}}, ReadAllAvailable())
        self.assertEqual(self.cluster.offsets[("G", "T", 1)], 2)
        before = dict(self.cluster.offsets)
        self.reader().commit({"T": {"broker-a": {"0": 1}}})  # no group: nothing is written
        self.assertEqual(self.cluster.offsets, before)


def _flat(offsets: dict) -> list[int]:
    return [o for brokers in offsets.values() for queues in brokers.values() for _, o in sorted(queues.items())]
