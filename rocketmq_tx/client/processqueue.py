# -*- test-case-name: rocketmq_tx.client.test.test_push,rocketmq_tx.client.test.test_push_flowcontrol -*-
"""
:class:`ProcessQueue` (Java's ``ProcessQueue``): one queue a push consumer owns, as its
pull loop, its consume service and the rebalance see it.

Java's ``ProcessQueue`` also caches what was pulled and not yet consumed, up to
``pullThresholdForQueue`` (1000 messages) and ``pullThresholdSizeForQueue`` (100 MiB). Ours
holds at most one pull batch: a queue's next pull is sent only once its batch is consumed
(:mod:`rocketmq_tx.client.push`), so the thresholds are never reached.
"""

from __future__ import annotations

from typing import Any

from rocketmq_tx.common.message import MessageQueue

__all__ = ["ProcessQueue", "LOCK_MAX_LIVE", "LOCK_RENEW_INTERVAL"]

#: Java ``REBALANCE_LOCK_INTERVAL``: how often an orderly consumer renews its queue locks.
LOCK_RENEW_INTERVAL = 20.0
#: Java ``REBALANCE_LOCK_MAX_LIVE_TIME``: a lock not renewed for this long is not trusted.
LOCK_MAX_LIVE = 30.0


class ProcessQueue:
    """
    :ivar offset: the next offset to pull (``None`` until the start offset is read).
    :ivar dropped: the queue was taken away (rebalance, reset, stop): its loop ends and
        whatever it has in flight is discarded.
    :ivar locked_at: orderly: reactor time of the last LOCK_BATCH_MQ that locked it for us.
    :ivar attempts: orderly: local deliveries of the batch being consumed.
    """

    def __init__(self, mq: MessageQueue) -> None:
        self.mq = mq
        self.offset: int | None = None
        self.dropped = False
        self.locked_at: float | None = None
        self.attempts = 0
        self.last_pull_ms = 0
        self.last_consume_ms = 0

    def holds_lock(self, now: float) -> bool:
        """The broker's lock is ours and was renewed less than :data:`LOCK_MAX_LIVE` ago."""
        return self.locked_at is not None and now - self.locked_at < LOCK_MAX_LIVE

    def info(self, now: float, commit_offset: int, locking: bool) -> dict[str, Any]:
        """
        Java's ``ProcessQueueInfo`` (``fillProcessQueueInfo``), for GET_CONSUMER_RUNNING_INFO;
        nothing is cached beyond the batch being consumed, so the cache fields read 0.
        """
        return {
            "commitOffset": commit_offset,
            "cachedMsgMinOffset": 0, "cachedMsgMaxOffset": 0, "cachedMsgCount": 0, "cachedMsgSizeInMiB": 0,
            "transactionMsgMinOffset": 0, "transactionMsgMaxOffset": 0, "transactionMsgCount": 0,
            "locked": self.holds_lock(now) if locking else False,
            "tryUnlockTimes": 0,
            "lastLockTimestamp": int(self.locked_at * 1000) if self.locked_at is not None else 0,
            "droped": self.dropped,
            "lastPullTimestamp": self.last_pull_ms,
            "lastConsumeTimestamp": self.last_consume_ms or int(now * 1000),
        }
