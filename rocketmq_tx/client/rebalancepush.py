# -*- test-case-name: rocketmq_tx.client.test.test_push,rocketmq_tx.client.test.test_push_flowcontrol -*-
"""
:class:`RebalancePushImpl` (Java's ``RebalancePushImpl`` with ``RebalanceImpl``'s process-queue
table): a push consumer's rebalance. The allocation of :class:`~rocketmq_tx.client.rebalance.RebalanceImpl`
(every 20 s and on NOTIFY_CONSUMER_IDS_CHANGED) becomes the consumer's process queues: a
queue taken away is dropped, its offset committed and (orderly) its lock given back; a new
queue gets a :class:`~rocketmq_tx.client.processqueue.ProcessQueue` and a pull loop, for an
orderly consumer only once the broker's lock on it is ours.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from twisted.logger import Logger

from rocketmq_tx.client.consumer import BROADCASTING
from rocketmq_tx.client.processqueue import ProcessQueue
from rocketmq_tx.client.rebalance import RebalanceImpl, Strategy

if TYPE_CHECKING:
    from rocketmq_tx.client.push import PushConsumer

__all__ = ["RebalancePushImpl"]

log = Logger()


class RebalancePushImpl(RebalanceImpl):
    def __init__(self, consumer: PushConsumer, strategy: Strategy) -> None:
        RebalanceImpl.__init__(self, consumer.instance, consumer.group, strategy)
        self.consumer = consumer

    async def rebalance(self) -> None:
        """Java ``rebalanceByTopic`` for every subscription, then ``updateProcessQueueTableInRebalance``."""
        c = self.consumer
        wanted = await self.allocate(list(c.subscriptions), broadcasting=c.message_model == BROADCASTING,
                                     owned=list(c.queues))
        if not c.running:
            return
        dropped = [mq for mq in c.queues if mq not in wanted]
        for mq in dropped:
            pq = c.queues.pop(mq)
            pq.dropped = True
            if pq.offset is not None:
                await c.commit_offset(mq, pq.offset)
        if c.locking and dropped:
            await self.unlock(dropped)
        added = sorted(wanted - set(c.queues))
        if c.locking and added:
            # Java: a new queue is taken only once its lock is ours; the rest wait for
            # the member that still holds them to let go (a later rebalance retries).
            locked = await self.lock(added)
            added = [mq for mq in added if mq in locked]
        for mq in added:
            if not c.running or mq in c.queues:
                continue
            pq = c.queues[mq] = ProcessQueue(mq)
            if c.locking:
                pq.locked_at = c.now()
            c.pull(pq)

    async def lock_all(self) -> None:
        """Java ``lockAll``: renew the locks of every owned queue; a queue whose lock is lost pauses."""
        owned = list(self.consumer.queues)
        if not owned:
            return
        locked = await self.lock(owned)
        now = self.consumer.now()
        for mq in owned:
            pq = self.consumer.queues.get(mq)
            if pq is None:
                continue
            if mq in locked:
                pq.locked_at = now
            elif pq.locked_at is not None:
                log.warn("lost the lock of {mq}; its consumption pauses", mq=mq)
                pq.locked_at = None
