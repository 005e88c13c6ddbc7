# -*- test-case-name: rocketmq_tx.broker.test.test_transaction_opbatch -*-
"""
:class:`TransactionalOpBatchService`: the op messages of resolved half messages written in
batches, as Java 5.x's ``TransactionalMessageServiceImpl.deletePrepareMessage`` and
``TransactionalOpBatchService`` write them.

Java 4.9 writes one op message per END_TRANSACTION (body ``"7"``). 5.x keeps the resolved
half offsets per half queue (``deleteContext``) and writes them as one op message (body
``"7,8,9,"``, tag ``d``) once they pass ``transactionOpMsgMaxSize`` characters (4096) or
``transactionOpBatchInterval`` (3000 ms) after the queue's last op message. A commit then
costs the store one put, not two. The check reads both forms
(:func:`~rocketmq_tx.broker.transaction.util.parse_op_body`).

Where this differs from Java 5.x, on purpose:

* a batch of one offset is written in 4.9's form (``"7"``), which 4.9 and 5.x both read, so a
  Java 4.9 broker taking the store over reads quiet periods' op messages right;
* ``transactionOpBatchInterval=0`` writes each op message at once in 4.9's form (Java 5.x
  would spin its thread and write ``"7,"``): the setting for a store a Java 4.9 broker may
  take over, which cannot read ``"7,8,"``;
* what is pending is written before each check pass and at shutdown, so the check never asks
  a producer about a message it has already resolved. As in Java, a crash (kill -9) loses what
  is pending: those half messages are checked again, which at-least-once delivery allows.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rocketmq_tx.common.message import MessageExt

if TYPE_CHECKING:
    from rocketmq_tx.broker.transaction.bridge import TransactionalMessageBridge

__all__ = ["TransactionalOpBatchService", "OP_CONTEXT_CAPACITY"]

log = logging.getLogger("rocketmq_tx.broker.transaction")

#: Java's ``MessageQueueOpContext`` queue capacity: beyond it an offset is written at once.
OP_CONTEXT_CAPACITY = 20000


class _OpContext:
    """Java ``MessageQueueOpContext``: one half queue's resolved offsets not yet written."""

    __slots__ = ("parts", "size", "last_write")

    def __init__(self, now: int) -> None:
        self.parts: list[str] = []
        self.size = 0  # characters, each part with its comma
        self.last_write = now


class TransactionalOpBatchService:
    """
    :param bridge: builds and puts the op messages.
    :param settings: ``transactionOpBatchInterval`` and ``transactionOpMsgMaxSize``, read at
        each use (UPDATE_BROKER_CONFIG applies at once).
    :param clock: ``callLater`` (the reactor; a ``task.Clock`` in tests).
    :param now_ms: the clock in milliseconds.
    """

    def __init__(self, bridge: TransactionalMessageBridge, settings: Any, clock: Any,
                 now_ms: Callable[[], int]) -> None:
        self.bridge = bridge
        self.settings = settings
        self.clock = clock
        self.now_ms = now_ms
        self.contexts: dict[int, _OpContext] = {}
        self._call: Any = None
        self._call_due = 0
        self.stopped = False

    def pending(self) -> int:
        """Offsets resolved and not yet written."""
        return sum(len(c.parts) for c in self.contexts.values())

    def delete_prepare_message(self, half: MessageExt) -> bool:
        """Record that *half* is resolved (Java ``deletePrepareMessage``)."""
        interval = self.settings["transactionOpBatchInterval"]
        if interval <= 0 or self.stopped:
            return self.bridge.put_op_message(half)
        context = self.contexts.get(half.queue_id)
        if context is None:
            context = self.contexts[half.queue_id] = _OpContext(self.now_ms())
        if len(context.parts) >= OP_CONTEXT_CAPACITY:
            # Java writes it alone when its context queue is full
            log.warning("Force add remove op data. queueId=%d", half.queue_id)
            return self.bridge.put_op_message(half)
        part = f"{half.queue_offset},"
        context.parts.append(part)
        context.size += len(part)
        if context.size > self.settings["transactionOpMsgMaxSize"]:
            self._write(half.queue_id, context)  # one put for some 500 resolved messages
        if context.parts:
            due = context.last_write + interval
            if self._call is None or due < self._call_due:
                self._schedule(due)
        return True

    def flush(self) -> None:
        """Write everything pending now (before a check pass, at shutdown)."""
        for queue_id, context in list(self.contexts.items()):
            while context.parts:
                self._write(queue_id, context)

    def stop(self) -> None:
        """Write what is pending; later resolutions are written one by one."""
        if self._call is not None and self._call.active():
            self._call.cancel()
        self._call = None
        self.flush()
        self.stopped = True

    # ------------------------------------------------------------------ internals

    def _schedule(self, due: int) -> None:
        """The next batch pass at *due* (ms), unless one comes sooner."""
        if self._call is not None and self._call.active():
            if self._call_due <= due:
                return
            self._call.cancel()
        self._call_due = due
        self._call = self.clock.callLater(max(0, due - self.now_ms()) / 1000.0, self._batch_send)

    def _batch_send(self) -> None:
        """Java ``batchSendOpMessage``: every queue whose batch is full or due; then sleep
        until the next one is due (nothing is scheduled while nothing is pending)."""
        self._call = None
        now = self.now_ms()
        interval = self.settings["transactionOpBatchInterval"]
        max_size = self.settings["transactionOpMsgMaxSize"]
        next_due: int | None = None
        for queue_id, context in list(self.contexts.items()):
            if not context.parts:
                continue
            if context.size < max_size and now - context.last_write < interval:
                due = context.last_write + interval
                next_due = due if next_due is None else min(next_due, due)
                continue
            self._write(queue_id, context)
            if context.parts:  # left over: another batch if still full, else an interval on
                due = now if context.size >= max_size else context.last_write + interval
                next_due = due if next_due is None else min(next_due, due)
        if next_due is not None:
            self._schedule(next_due)

    def _write(self, queue_id: int, context: _OpContext) -> None:
        """One op message of up to ``transactionOpMsgMaxSize`` characters (Java ``getOpMessage``)."""
        max_size = self.settings["transactionOpMsgMaxSize"]
        parts = context.parts
        taken = size = 0
        while taken < len(parts) and size < max_size:
            size += len(parts[taken])
            taken += 1
        batch = parts[:taken]
        del parts[:taken]
        context.size -= size
        context.last_write = self.now_ms()
        # one offset: 4.9's form, which both 4.9 and 5.x read
        body = batch[0][:-1] if taken == 1 else "".join(batch)
        if not self.bridge.put_op_body(queue_id, body.encode()):
            log.error("Transaction batch op message write failed. body is %s, queueId is %d", body, queue_id)
