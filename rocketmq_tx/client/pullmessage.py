# -*- test-case-name: rocketmq_tx.client.test.test_push_flowcontrol,rocketmq_tx.client.test.test_push -*-
"""
:class:`PullMessageService` (Java's ``PullMessageService`` with
``DefaultMQPushConsumerImpl.pullMessage`` and its ``PullCallback``): one long-polling pull
loop per owned :class:`~rocketmq_tx.client.processqueue.ProcessQueue` of a push consumer.

A loop pulls its queue (15 s broker suspend), hands what arrives to the consume service,
and pulls again only once that batch is consumed: one pull and one batch per queue in
flight, which is Java's flow control (``pullThresholdForQueue``,
``pullThresholdSizeForQueue``) by construction. A failed pull is retried after 3 s.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from twisted.internet.defer import Deferred
from twisted.logger import Logger

from rocketmq_tx.client.consumer import CLUSTERING, sleep
from rocketmq_tx.client.consumeservice import PULL_DELAY_WHEN_EXCEPTION
from rocketmq_tx.client.processqueue import ProcessQueue
from rocketmq_tx.remoting import api, sendapi
from rocketmq_tx.remoting.api import PullStatus

if TYPE_CHECKING:
    from rocketmq_tx.client.push import PushConsumer

__all__ = ["PullMessageService", "BROKER_SUSPEND_MAX_MS", "LONG_POLL_TIMEOUT"]

log = Logger()

#: Java ``brokerSuspendMaxTimeMillis`` and the client-side timeout of a long poll.
BROKER_SUSPEND_MAX_MS = 15000
LONG_POLL_TIMEOUT = 30.0


class PullMessageService:
    def __init__(self, consumer: PushConsumer) -> None:
        self.consumer = consumer

    def pull(self, pq: ProcessQueue) -> None:
        """Start *pq*'s loop (Java's first ``PullRequest`` of a queue); it ends when *pq* is dropped."""
        Deferred.fromCoroutine(self._loop(pq))

    async def _loop(self, pq: ProcessQueue) -> None:
        c, mq = self.consumer, pq.mq
        service = c.consume_service
        assert service is not None
        while c.running and not pq.dropped:
            if not await service.ready(pq):
                continue
            try:
                if pq.offset is None:
                    pq.offset = await c.start_offset(mq)
                sub = c.subscriptions[mq.topic]
                build = partial(api.pull_request, c.group, mq, pq.offset, c.pull_batch_size, sub,
                                commit_offset=self._commit_candidate(pq), suspend_timeout_ms=BROKER_SUSPEND_MAX_MS)

                pq.last_pull_ms = c.now_ms()
                # To the broker id the last answer suggested (a slave, or any node while the
                # master is out of the route), as Java's PullAPIWrapper.
                result = await c.instance.run(
                    sendapi.pull_call(c.instance.route_table, c.pull_nodes, mq, build, sub),
                    LONG_POLL_TIMEOUT)
            except Exception as e:
                if pq.dropped or not c.running:
                    return
                log.warn("pull of {mq} failed: {error}", mq=mq, error=e)
                await sleep(c.reactor, PULL_DELAY_WHEN_EXCEPTION)
                continue
            if pq.dropped:
                return
            if result.msg_found_list:
                await service.consume(pq, result.msg_found_list)
                pq.last_consume_ms = c.now_ms()
                if pq.dropped:
                    return
            if result.pull_status is PullStatus.OFFSET_ILLEGAL:
                log.warn("offset {offset} of {mq} illegal, moving to {next}", offset=pq.offset, mq=mq,
                         next=result.next_begin_offset)
            pq.offset = result.next_begin_offset

    def _commit_candidate(self, pq: ProcessQueue) -> int:
        # Java piggy-backs the in-memory offset on each pull (FLAG_COMMIT_OFFSET) once it is
        # > 0, in clustering only: a broadcasting member's offset is its own.
        if self.consumer.message_model != CLUSTERING:
            return 0
        return pq.offset if pq.offset else 0
