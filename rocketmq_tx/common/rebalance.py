# -*- test-case-name: rocketmq_tx.common.test.test_rebalance -*-
"""
Queue allocation among the consumers of one group (Java ``AllocateMessageQueueStrategy``).
Every member computes its own share from the same sorted inputs, so the strategies must
match Java's exactly for a Python and a Java consumer to split a group without overlap.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Sequence

from rocketmq_tx.common.message import MessageQueue

__all__ = ["allocate_averagely", "allocate_averagely_by_circle", "allocate_consistent_hash", "STRATEGIES"]


def _check(current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]) -> int:
    if not current_cid:
        raise ValueError("currentCID is empty")
    return cid_all.index(current_cid) if current_cid in cid_all else -1


def allocate_averagely(current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]) -> list[MessageQueue]:
    """
    ``AllocateMessageQueueAveragely``: contiguous blocks, the first ``len(mq) % len(cid)``
    consumers get one queue more. Inputs are sorted here, as Java's RebalanceImpl sorts them.
    """
    mqs, cids = sorted(mq_all), sorted(cid_all)
    index = _check(current_cid, mqs, cids)
    if index < 0 or not mqs:
        return []
    n, c = len(mqs), len(cids)
    mod = n % c
    if n <= c:
        average = 1
    elif mod > 0 and index < mod:
        average = n // c + 1
    else:
        average = n // c
    start = index * average if mod > 0 and index < mod else index * average + mod
    return [mqs[(start + i) % n] for i in range(min(average, n - start))]


def allocate_averagely_by_circle(current_cid: str, mq_all: Sequence[MessageQueue],
                                 cid_all: Sequence[str]) -> list[MessageQueue]:
    """``AllocateMessageQueueAveragelyByCircle``: queue *i* goes to consumer ``i % len(cid)``."""
    mqs, cids = sorted(mq_all), sorted(cid_all)
    index = _check(current_cid, mqs, cids)
    if index < 0:
        return []
    return [mqs[i] for i in range(index, len(mqs)) if i % len(cids) == index]


def _md5_hash(key: str) -> int:
    # Java ConsistentHashRouter.MD5Hash: the digest's first 4 bytes, big-endian, unsigned.
    return int.from_bytes(hashlib.md5(key.encode("utf-8")).digest()[:4], "big")


def _java_string(mq: MessageQueue) -> str:
    return f"MessageQueue [topic={mq.topic}, brokerName={mq.broker_name}, queueId={mq.queue_id}]"


def allocate_consistent_hash(current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str],
                             virtual_nodes: int = 10) -> list[MessageQueue]:
    """
    ``AllocateMessageQueueConsistentHash`` (10 virtual nodes ``"<cid>-<i>"`` per consumer on
    an MD5 ring; a queue, keyed by Java's ``MessageQueue.toString()``, goes to the first
    node at or after its hash). Moving one consumer moves few queues.
    """
    mqs, cids = sorted(mq_all), sorted(cid_all)
    if _check(current_cid, mqs, cids) < 0:
        return []
    ring: dict[int, str] = {}
    for cid in cids:  # later insertions win hash collisions, as in Java's TreeMap.put
        for i in range(virtual_nodes):
            ring[_md5_hash(f"{cid}-{i}")] = cid
    points = sorted(ring)
    result = []
    for mq in mqs:
        at = bisect.bisect_left(points, _md5_hash(_java_string(mq)))
        if ring[points[at % len(points)]] == current_cid:
            result.append(mq)
    return result


STRATEGIES = {"AVG": allocate_averagely, "AVG_BY_CIRCLE": allocate_averagely_by_circle,
              "CONSISTENT_HASH": allocate_consistent_hash}
