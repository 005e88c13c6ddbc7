# -*- test-case-name: rocketmq_tx.blocking.test.test_trace -*-
"""
:class:`BlockingTraceDispatcher`: message trace for the
:class:`~rocketmq_tx.blocking.client.BlockingProducer` and the
:class:`~rocketmq_tx.blocking.transaction.BlockingTransactionProducer`
(``enable_msg_trace=True``). Pub (and EndTransaction) records gather as in Java's
``AsyncTraceDispatcher`` (:class:`~rocketmq_tx.common.trace.TraceBatcher`), but a blocking
client has no thread of its own: a batch whose first record waited 500 ms leaves after the
producer's next request, a full one at once, and the rest at ``close()`` (or
``flush_traces()``). A failed trace send is logged and dropped.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, TypeVar

from rocketmq_tx.common import trace
from rocketmq_tx.common.message import Message
from rocketmq_tx.common.trace import TraceBatcher
from rocketmq_tx.remoting.api import PreparedMessage, SendResult
from rocketmq_tx.remoting.errors import RocketMQError
from rocketmq_tx.remoting.plans import Plan
from rocketmq_tx.remoting.sendapi import ProducerBase
from rocketmq_tx.remoting.traceapi import (
    PRODUCE,
    TRACE_MAX_MESSAGE_SIZE,
    TRACE_SEND_TIMEOUT,
    pub_record,
    trace_group,
    trace_message,
)

if TYPE_CHECKING:
    from rocketmq_tx.blocking.client import BlockingMQClient
    from rocketmq_tx.remoting.transactionapi import LocalTransactionState

__all__ = ["BlockingTraceDispatcher"]

log = logging.getLogger(__name__)
T = TypeVar("T")


class _TraceProducer(ProducerBase):
    def __init__(self, client: BlockingMQClient, group: str) -> None:
        super().__init__(group, client.route_table, send_timeout=TRACE_SEND_TIMEOUT,
                         max_message_size=TRACE_MAX_MESSAGE_SIZE)
        self.client = client

    def _run(self, plan: Plan[T]) -> T:
        return self.client.run(plan)


class BlockingTraceDispatcher:
    """
    :param client: the traced producer's client (the trace producer sends through it).
    :param group: the traced producer group.
    :param trace_topic: where records go (default ``RMQ_SYS_TRACE_TOPIC``).
    """

    def __init__(self, client: BlockingMQClient, group: str, trace_topic: str | None = None) -> None:
        self.group = group
        self.trace_topic = trace_topic or trace.RMQ_SYS_TRACE_TOPIC
        self.batcher = TraceBatcher(self.trace_topic)
        self.producer = _TraceProducer(client, trace_group(group, PRODUCE))
        self._ready: list[tuple[str, bytes, str]] = []

    def on_send(self, prepared: PreparedMessage, broker_addr: str, result: SendResult, started_ms: int) -> None:
        """``ProducerBase.send_trace``: keep the Pub record (sent by :meth:`send_due`)."""
        ctx = pub_record(self.group, self.trace_topic, prepared, broker_addr, result, started_ms)
        if ctx is not None:
            self._ready += self.batcher.add(ctx)

    def on_end_transaction(self, msg: Message, msg_id: str, broker_addr: str, state: LocalTransactionState,
                           from_check: bool) -> None:
        """``TransactionProducerBase.end_trace``: keep the EndTransaction record."""
        if not msg.topic.startswith(self.trace_topic):
            ctx = trace.end_transaction_context(self.group, msg, msg_id, broker_addr, state.value, from_check)
            self._ready += self.batcher.add(ctx)

    def send_due(self) -> None:
        """Send the full batches and the one whose first record waited long enough."""
        batches, self._ready = self._ready + self.batcher.due(), []
        self._send(batches)

    def flush(self) -> None:
        """Send everything waiting."""
        batches, self._ready = self._ready + self.batcher.flush(), []
        self._send(batches)

    def _send(self, batches: list[tuple[str, bytes, str]]) -> None:
        for topic, body, keys in batches:
            try:
                self.producer.send(trace_message(topic, body, keys))
            except RocketMQError as e:
                log.warning("send trace data failed (%d bytes): %s", len(body), e)
