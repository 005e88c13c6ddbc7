# -*- test-case-name: rocketmq_tx.broker.test.test_managers -*-
"""
``RebalanceLockManager``: queue locks for orderly consumption (LOCK_BATCH_MQ /
UNLOCK_BATCH_MQ). A queue belongs to one client of a group at a time; a lock not renewed
for 60 s (Java's ``rocketmq.broker.rebalance.lockMaxLiveTime``) expires.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from rocketmq_tx.common.message import MessageQueue

__all__ = ["RebalanceLockManager", "LOCK_MAX_LIVE_TIME_MS"]

LOCK_MAX_LIVE_TIME_MS = 60_000


class RebalanceLockManager:
    def __init__(self, now_ms: Callable[[], int] | None = None, max_live_ms: int = LOCK_MAX_LIVE_TIME_MS) -> None:
        self._now = now_ms or (lambda: int(time.time() * 1000))
        self.max_live_ms = max_live_ms
        # group -> queue -> (client id, last renewal)
        self.table: dict[str, dict[MessageQueue, tuple[str, int]]] = {}

    def _holder(self, group: str, mq: MessageQueue, now: int) -> str | None:
        entry = self.table.get(group, {}).get(mq)
        if entry is None or now - entry[1] > self.max_live_ms:
            return None
        return entry[0]

    def is_locked(self, group: str, mq: MessageQueue, client_id: str) -> bool:
        return self._holder(group, mq, self._now()) == client_id

    def try_lock_batch(self, group: str, mqs: Iterable[MessageQueue], client_id: str) -> set[MessageQueue]:
        """Lock (or renew) what is free or already ours; return the queues now held by *client_id*."""
        now = self._now()
        locks = self.table.setdefault(group, {})
        held: set[MessageQueue] = set()
        for mq in mqs:
            holder = self._holder(group, mq, now)
            if holder is None or holder == client_id:
                locks[mq] = (client_id, now)
                held.add(mq)
        return held

    def unlock_batch(self, group: str, mqs: Iterable[MessageQueue], client_id: str) -> None:
        locks = self.table.get(group)
        if not locks:
            return
        for mq in mqs:
            entry = locks.get(mq)
            if entry is not None and entry[0] == client_id:
                del locks[mq]
