# -*- test-case-name: rocketmq_tx.spark.test.test_offsets -*-
"""
Offset bookkeeping for the ``rocketmq`` data source, independent of Spark and of the
network: the JSON shape Spark checkpoints, admission control (``maxOffsetsPerTrigger``),
and cutting per-queue ranges into input partitions (``minPartitions``).

A queue is addressed as ``(topic, brokerName, queueId)``; an offset is a consume-queue
offset, so a range ``[start, end)`` holds ``end - start`` stored messages before tag
filtering.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = ["QueueKey", "QueueRange", "to_json", "from_json", "limit_offsets", "plan_ranges"]

QueueKey = tuple[str, str, int]


@dataclass(frozen=True)
class QueueRange:
    """
    Messages ``[start, end)`` of one queue: what one Spark task reads.

    :ivar new_queue: the queue was not in the previous offsets (a topic that grew, a
        broker that joined): a start below the queue's minimum offset is not data loss.
    """

    topic: str
    broker_name: str
    queue_id: int
    start: int
    end: int
    new_queue: bool = False

    @property
    def size(self) -> int:
        return self.end - self.start


def to_json(offsets: Mapping[QueueKey, int]) -> dict[str, dict[str, dict[str, int]]]:
    """``{"topic": {"brokerName": {"queueId": offset}}}``, sorted, with text keys (JSON's rule)."""
    out: dict[str, dict[str, dict[str, int]]] = {}
    for (topic, broker, queue_id), offset in sorted(offsets.items()):
        out.setdefault(topic, {}).setdefault(broker, {})[str(queue_id)] = int(offset)
    return out


def from_json(doc: Mapping[str, Mapping[str, Mapping[str, int]]]) -> dict[QueueKey, int]:
    """The inverse of :func:`to_json`."""
    return {(topic, broker, int(queue_id)): int(offset)
            for topic, brokers in doc.items()
            for broker, queues in brokers.items()
            for queue_id, offset in queues.items()}


def limit_offsets(start: Mapping[QueueKey, int], latest: Mapping[QueueKey, int], max_rows: int | None,
                  new_queue_start: Mapping[QueueKey, int] | None = None) -> dict[QueueKey, int]:
    """
    The end of the next micro-batch: *latest*, or at most *max_rows* offsets past *start*
    in all, shared among the queues in proportion to how far each lags (Kafka's rule),
    every remaining offset handed out so the batch is exactly *max_rows* when it is capped.

    A queue in *start* but missing from *latest* (its broker is away) keeps its offset; a
    queue only in *latest* starts at ``new_queue_start`` (default 0). Offsets never move
    backwards.
    """
    new_queue_start = new_queue_start or {}
    begin = {key: start.get(key, new_queue_start.get(key, 0)) for key in latest}
    lag = {key: max(0, latest[key] - begin[key]) for key in latest}
    end = dict(start)
    total = sum(lag.values())
    if max_rows is None or total <= max_rows:
        for key in latest:
            end[key] = begin[key] + lag[key]
        return end
    keys = sorted(lag)
    share = {key: lag[key] * max_rows // total for key in keys}
    left = max_rows - sum(share.values())
    # Largest remainder first (ties in queue order), so the split is deterministic.
    for key in sorted(keys, key=lambda k: (-(lag[k] * max_rows % total), k)):
        if left == 0:
            break
        if share[key] < lag[key]:
            share[key] += 1
            left -= 1
    for key in keys:
        end[key] = begin[key] + share[key]
    return end


def plan_ranges(start: Mapping[QueueKey, int], end: Mapping[QueueKey, int], min_partitions: int | None = None,
                new_queues: Iterable[QueueKey] = ()) -> list[QueueRange]:
    """
    One range per queue that has something between *start* and *end*; with
    *min_partitions*, the largest ranges are halved until there are that many (or every
    range holds one offset). Sorted, so the same offsets always give the same partitions.
    """
    fresh = set(new_queues)
    ranges = [QueueRange(key[0], key[1], key[2], start.get(key, 0), stop, key in fresh)
              for key, stop in sorted(end.items()) if stop > start.get(key, 0)]
    if min_partitions is None:
        return ranges
    while len(ranges) < min_partitions:
        widest = max(ranges, key=lambda r: r.size, default=None)
        if widest is None or widest.size < 2:
            break
        i = ranges.index(widest)
        middle = widest.start + widest.size // 2
        ranges[i:i + 1] = [
            QueueRange(widest.topic, widest.broker_name, widest.queue_id, widest.start, middle, widest.new_queue),
            QueueRange(widest.topic, widest.broker_name, widest.queue_id, middle, widest.end, widest.new_queue),
        ]
    return ranges
