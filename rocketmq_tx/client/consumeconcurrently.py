# -*- test-case-name: rocketmq_tx.client.test.test_push,rocketmq_tx.client.test.test_push_flowcontrol -*-
"""
:class:`ConsumeMessageConcurrentlyService` (Java's ``ConsumeMessageConcurrentlyService``) and
:class:`ConsumeStatus` (Java's ``ConsumeConcurrentlyStatus``): a concurrent listener.

A pulled batch goes to the listener ``consume_batch_size`` messages at a time, in queue
order. RECONSUME_LATER (or raising) sends each message of the batch back to the broker
(CONSUMER_SEND_MSG_BACK), which redelivers it through ``%RETRY%<group>`` and, after
``max_reconsume_times``, puts it in ``%DLQ%<group>``; a broadcasting consumer drops them,
as Java's does.
"""

from __future__ import annotations

import enum

from twisted.logger import Logger

from rocketmq_tx.client.consumer import BROADCASTING
from rocketmq_tx.client.consumeservice import ConsumeService
from rocketmq_tx.client.processqueue import ProcessQueue
from rocketmq_tx.common.message import MessageExt

__all__ = ["ConsumeMessageConcurrentlyService", "ConsumeStatus"]

log = Logger()


class ConsumeStatus(enum.Enum):
    """Java ``ConsumeConcurrentlyStatus``."""

    CONSUME_SUCCESS = "CONSUME_SUCCESS"
    RECONSUME_LATER = "RECONSUME_LATER"


class ConsumeMessageConcurrentlyService(ConsumeService):
    async def consume_batches(self, pq: ProcessQueue, messages: list[MessageExt]) -> None:
        for batch in self.batches(messages):
            status = await self.call_listener(batch, ConsumeStatus.RECONSUME_LATER)
            if status is ConsumeStatus.CONSUME_SUCCESS:
                continue
            if self.consumer.message_model == BROADCASTING:
                log.warn("broadcasting: {n} messages not consumed are dropped, as in Java", n=len(batch))
                continue
            for msg in batch:
                await self.send_back(pq.mq, msg)
