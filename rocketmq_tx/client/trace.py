# -*- test-case-name: rocketmq_tx.client.test.test_trace -*-
"""
:class:`AsyncTraceDispatcher`: Java's ``AsyncTraceDispatcher`` with its send and consume
hooks (``SendMessageTraceHookImpl``, ``ConsumeMessageTraceHookImpl``) on Twisted, for a
:class:`~rocketmq_tx.client.producer.Producer` or
:class:`~rocketmq_tx.client.push.PushConsumer` made with ``enable_msg_trace=True``.

Records (:mod:`rocketmq_tx.common.trace`, Java's layout) gather in a
:class:`~rocketmq_tx.common.trace.TraceBatcher`; every 100 ms the batch whose first record
waited 500 ms is sent (a full one at once) to the trace topic by a producer of the group
``_INNER_TRACE_PRODUCER-<group>-<PRODUCE|CONSUME>-<n>`` on the same client instance
(Java gives it an instance of its own), its ``KEYS`` the traced ids and keys. A failed
trace send is logged, never retried, and never fails the traced send or consume.
"""

from __future__ import annotations

from typing import Any

from twisted.internet.defer import Deferred, DeferredList
from twisted.internet.task import LoopingCall
from twisted.logger import Logger
from twisted.python.failure import Failure

from rocketmq_tx.client.instance import MQClientInstance
from rocketmq_tx.common import trace
from rocketmq_tx.common.message import Message, MessageExt
from rocketmq_tx.common.msgid import UniqueKeyGenerator
from rocketmq_tx.common.trace import ConsumeReturnType, TraceBatcher, TraceContext
from rocketmq_tx.remoting.api import PreparedMessage, SendResult
from rocketmq_tx.remoting.plans import Plan
from rocketmq_tx.remoting.sendapi import ProducerBase
from rocketmq_tx.remoting.traceapi import (
    CONSUME,
    PRODUCE,
    TRACE_MAX_MESSAGE_SIZE,
    TRACE_SEND_TIMEOUT,
    pub_record,
    trace_group,
    trace_message,
)
from rocketmq_tx.remoting.transactionapi import LocalTransactionState

__all__ = ["AsyncTraceDispatcher", "PRODUCE", "CONSUME"]

log = Logger()

#: Java's ``pollingTimeMil``: how often waiting batches are looked at, seconds.
POLLING_INTERVAL = 0.1

#: Statuses that count as a successful consume (concurrent, then orderly).
_SUCCESS = frozenset({"CONSUME_SUCCESS", "SUCCESS", "COMMIT"})


class _TraceProducer(ProducerBase):
    def __init__(self, instance: MQClientInstance, group: str) -> None:
        super().__init__(group, instance.route_table, send_timeout=TRACE_SEND_TIMEOUT,
                         max_message_size=TRACE_MAX_MESSAGE_SIZE)
        self.instance = instance

    def _run(self, plan: Plan[Any]) -> Deferred:
        return self.instance.run(plan)


class AsyncTraceDispatcher:
    """
    :param instance: the traced client's instance (the trace producer uses it too).
    :param group: the traced producer or consumer group.
    :param kind: :data:`PRODUCE` or :data:`CONSUME`.
    :param trace_topic: where records go (default ``RMQ_SYS_TRACE_TOPIC``).
    """

    def __init__(self, instance: MQClientInstance, group: str, kind: str, trace_topic: str | None = None) -> None:
        self.instance = instance
        self.group = group
        self.trace_topic = trace_topic or trace.RMQ_SYS_TRACE_TOPIC
        self.batcher = TraceBatcher(self.trace_topic)
        self.producer = _TraceProducer(instance, trace_group(group, kind))
        self.ids = UniqueKeyGenerator()
        self._loop: LoopingCall | None = None
        self._sending: set[Deferred] = set()

    def _now_ms(self) -> int:
        return int(self.instance.reactor.seconds() * 1000)

    # ------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Register the trace producer and look at the batch every 100 ms."""
        if self._loop is not None:
            return
        self.instance.register_producer(self.producer.group)
        self._loop = LoopingCall(self._tick)
        self._loop.clock = self.instance.reactor
        self._loop.start(POLLING_INTERVAL, now=False)

    def stop(self) -> Deferred[None]:
        """Send what is waiting, wait for the sends in flight, unregister the trace producer."""
        return Deferred.fromCoroutine(self._stop())

    async def _stop(self) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self._loop = None
        self._send(self.batcher.flush())
        if self._sending:
            await DeferredList(list(self._sending), consumeErrors=True)
        self.instance.unregister_producer(self.producer.group)

    # ------------------------------------------------------------ records
    def append(self, ctx: TraceContext) -> None:
        """Take a record (dropped when 1024 are waiting, as Java drops them)."""
        self._send(self.batcher.add(ctx, self._now_ms()))

    def _tick(self) -> None:
        self._send(self.batcher.due(self._now_ms()))

    def _send(self, batches: list[tuple[str, bytes, str]]) -> None:
        for topic, body, keys in batches:
            d = self.producer.send(trace_message(topic, body, keys))
            self._sending.add(d)
            d.addErrback(self._failed, body)
            d.addBoth(self._sent, d)

    def _sent(self, result: object, d: Deferred) -> None:
        self._sending.discard(d)

    def _failed(self, failure: Failure, body: bytes) -> None:
        log.warn("send trace data failed ({size} bytes): {error}", size=len(body), error=failure.getErrorMessage())

    # ------------------------------------------------------------ hooks
    def on_send(self, prepared: PreparedMessage, broker_addr: str, result: SendResult, started_ms: int) -> None:
        """``ProducerBase.send_trace``: a Pub record of an answered send attempt."""
        ctx = pub_record(self.group, self.trace_topic, prepared, broker_addr, result, started_ms)
        if ctx is not None:
            self.append(ctx)

    def on_end_transaction(self, msg: Message, msg_id: str, broker_addr: str, state: LocalTransactionState,
                           from_check: bool) -> None:
        """``TransactionProducerBase.end_trace``: an EndTransaction record."""
        if not msg.topic.startswith(self.trace_topic):
            self.append(trace.end_transaction_context(self.group, msg, msg_id, broker_addr, state.value, from_check))

    def before_consume(self, batch: list[MessageExt]) -> TraceContext | None:
        """The SubBefore records of a batch about to be consumed (``None``: nothing traced)."""
        ctx = trace.sub_before_context(self.group, batch, self.ids.create_uniq_id())
        if ctx is not None:
            self.append(ctx)
        return ctx

    def after_consume(self, before: TraceContext, batch: list[MessageExt], status: object, raised: bool) -> None:
        """The SubAfter records: *status* the listener's (``None`` if none), *raised* if it raised."""
        name = getattr(status, "name", None)
        if raised:
            return_type = ConsumeReturnType.EXCEPTION
        elif status is None:
            return_type = ConsumeReturnType.RETURNNULL
        elif name in _SUCCESS:
            return_type = ConsumeReturnType.SUCCESS
        else:
            return_type = ConsumeReturnType.FAILED
        self.after_consume_as(before, len(batch), not raised and name in _SUCCESS, return_type)

    def after_consume_as(self, before: TraceContext, count: int, success: bool, return_type: ConsumeReturnType) -> None:
        """The SubAfter records of *count* messages, with the outcome given."""
        self.append(trace.sub_after_context(before, count, success, return_type))

