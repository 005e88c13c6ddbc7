# -*- test-case-name: rocketmq_tx.client.test.test_push,rocketmq_tx.client.test.test_push_flowcontrol -*-
"""
:class:`ConsumeService` (Java's ``ConsumeMessageService``): how a push consumer hands a pulled
batch to its listener. The concurrent and the orderly services
(:mod:`rocketmq_tx.client.consumeconcurrently`, :mod:`rocketmq_tx.client.consumeorderly`)
share what is here: the listener call, batches of ``consume_batch_size``, the original topic
of a redelivered message, and CONSUMER_SEND_MSG_BACK (Java's ``sendMessageBack``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from twisted.internet.defer import maybeDeferred
from twisted.logger import Logger

from rocketmq_tx.client.consumer import sleep
from rocketmq_tx.client.processqueue import ProcessQueue
from rocketmq_tx.common.message import MessageConst, MessageExt, MessageQueue
from rocketmq_tx.remoting import api
from rocketmq_tx.remoting.api import RETRY_GROUP_TOPIC_PREFIX

if TYPE_CHECKING:
    from rocketmq_tx.client.push import PushConsumer

__all__ = ["ConsumeService", "Listener", "PULL_DELAY_WHEN_EXCEPTION"]

log = Logger()

#: ``listener(messages)`` returns a status, or a Deferred of one.
Listener = Callable[[list[MessageExt]], Any]

#: Java ``pullTimeDelayMillsWhenException``, seconds: the wait before a failed call is retried.
PULL_DELAY_WHEN_EXCEPTION = 3.0


class ConsumeService:
    """
    What a subclass gives: :meth:`consume_batches`, and where the queue must be prepared
    before its next pull (:meth:`ready`) or something run beside it (:meth:`start`).
    """

    def __init__(self, consumer: PushConsumer, listener: Listener) -> None:
        self.consumer = consumer
        self.listener = listener

    def start(self) -> None:
        """Called once the consumer runs."""

    async def ready(self, pq: ProcessQueue) -> bool:
        """Whether *pq* may be pulled now (the caller asks again when not)."""
        return True

    async def consume(self, pq: ProcessQueue, messages: list[MessageExt]) -> None:
        """Hand *messages*, a pulled batch of *pq*, to the listener; done when all are handled."""
        for msg in messages:
            # Java resetRetryAndNamespace: a redelivered message shows its original topic.
            origin = msg.properties.get(MessageConst.PROPERTY_RETRY_TOPIC)
            if origin and msg.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                msg.topic = origin
        await self.consume_batches(pq, messages)

    async def consume_batches(self, pq: ProcessQueue, messages: list[MessageExt]) -> None:
        raise NotImplementedError

    def batches(self, messages: list[MessageExt]) -> Iterator[list[MessageExt]]:
        """*messages* by ``consume_batch_size`` (Java ``consumeMessageBatchMaxSize``)."""
        size = self.consumer.consume_batch_size
        for i in range(0, len(messages), size):
            yield messages[i:i + size]

    async def call_listener(self, batch: list[MessageExt], failed: object) -> object:
        """The listener's status for *batch*; *failed* when it raises (logged). Traced when the consumer traces."""
        tracer = self.consumer.trace_dispatcher
        before = tracer.before_consume(batch) if tracer is not None else None
        try:
            status: object = await maybeDeferred(self.listener, batch)
        except Exception as e:
            log.warn("listener failed: {error}", error=e)
            if tracer is not None and before is not None:
                tracer.after_consume(before, batch, None, True)
            return failed
        if tracer is not None and before is not None:
            tracer.after_consume(before, batch, status, False)
        return status

    async def send_back(self, mq: MessageQueue, msg: MessageExt, delay_level: int = 0) -> None:
        """
        CONSUMER_SEND_MSG_BACK with delay level 0 (the broker picks 3 + reconsume times), or
        -1 to put the message in the group's DLQ at once; retried until it is answered.
        """
        c = self.consumer
        max_times = 16 if c.max_reconsume_times < 0 else c.max_reconsume_times
        request = api.send_back_request(msg, c.group, delay_level, max_reconsume_times=max_times,
                                        broker_name=mq.broker_name)
        while c.running:
            try:
                api.check_response(await c.instance.invoke_broker(mq, request))
                return
            except Exception as e:
                log.warn("send back of {id} failed, retrying: {error}", id=msg.msg_id, error=e)
                await sleep(c.reactor, PULL_DELAY_WHEN_EXCEPTION)
