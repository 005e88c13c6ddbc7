# -*- test-case-name: rocketmq_tx.client.test.test_push,rocketmq_tx.client.test.test_push_flowcontrol -*-
"""
:class:`ConsumeMessageOrderlyService` (Java's ``ConsumeMessageOrderlyService``) and
:class:`ConsumeOrderlyStatus`: an orderly listener (Java's ``MessageListenerOrderly``).

A clustering member consumes a queue only while it holds the broker's lock on it
(LOCK_BATCH_MQ when the rebalance assigns the queue, renewed every 20 s here; a lock not
renewed for 30 s is treated as lost, and the queue waits until it is locked again), so two
members never consume one queue at once even while a rebalance settles. A suspended batch
(SUSPEND_CURRENT_QUEUE_A_MOMENT, or raising) is redelivered after
``suspend_current_queue_time`` before anything behind it; past ``max_reconsume_times``
(unlimited by default, as in Java) it goes to the DLQ and the queue moves on.
"""

from __future__ import annotations

import enum

from rocketmq_tx.client.consumeconcurrently import ConsumeStatus
from rocketmq_tx.client.consumer import CLUSTERING, sleep
from rocketmq_tx.client.consumeservice import PULL_DELAY_WHEN_EXCEPTION, ConsumeService
from rocketmq_tx.client.processqueue import LOCK_RENEW_INTERVAL, ProcessQueue
from rocketmq_tx.common.message import MessageExt

__all__ = ["ConsumeMessageOrderlyService", "ConsumeOrderlyStatus"]


class ConsumeOrderlyStatus(enum.Enum):
    """Java ``ConsumeOrderlyStatus``."""

    SUCCESS = "SUCCESS"
    SUSPEND_CURRENT_QUEUE_A_MOMENT = "SUSPEND_CURRENT_QUEUE_A_MOMENT"


_DONE = (ConsumeOrderlyStatus.SUCCESS, ConsumeStatus.CONSUME_SUCCESS)


class ConsumeMessageOrderlyService(ConsumeService):
    def start(self) -> None:
        """Java ``lockMQPeriodically``: renew the locks every 20 s (clustering only)."""
        if self.consumer.locking:
            self.consumer.every(LOCK_RENEW_INTERVAL, self.consumer.lock_all, now=False)

    async def ready(self, pq: ProcessQueue) -> bool:
        """
        *pq*'s lock is ours; else take it (it was never ours, was lost, or is too old), and
        when the broker refuses, wait 3 s as Java delays the pull of an unlocked queue.
        """
        c = self.consumer
        if not c.locking or pq.holds_lock(c.now()):
            return True
        if pq.mq in await c.rebalance_impl.lock([pq.mq]):
            pq.locked_at = c.now()
            return True
        await sleep(c.reactor, PULL_DELAY_WHEN_EXCEPTION)
        return False

    async def consume_batches(self, pq: ProcessQueue, messages: list[MessageExt]) -> None:
        """Each batch until the listener succeeds (or it went to the DLQ), under the queue's lock."""
        c = self.consumer
        for batch in self.batches(messages):
            pq.attempts = 0
            while True:
                if pq.dropped or not c.running:
                    return
                if not await self.ready(pq):
                    continue
                for msg in batch:
                    msg.reconsume_times = max(msg.reconsume_times, pq.attempts)
                status = await self.call_listener(batch, ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT)
                if status in _DONE:
                    break
                pq.attempts += 1
                if 0 <= c.max_reconsume_times <= pq.attempts and c.message_model == CLUSTERING:
                    for msg in batch:
                        await self.send_back(pq.mq, msg, delay_level=-1)  # straight to %DLQ%
                    break
                await sleep(c.reactor, c.suspend_current_queue_time)
