# -*- test-case-name: rocketmq_tx.broker.test.test_transaction -*-
"""
:class:`TransactionalMessageService` (Java 4.9.8 ``TransactionalMessageServiceImpl``).

:meth:`~TransactionalMessageService.check` is Java's ``check`` written as a generator: it
yields after each half message it looks at, so the caller can run a pass in slices and keep
the reactor free (:class:`~rocketmq_tx.broker.transaction.check.TransactionalMessageCheckService`).
The decisions are Java's, step for step: half messages are walked from the kept half
offset; an op message (tag ``d``) naming an offset marks it resolved; a message younger
than ``transactionTimeOut`` (or its CHECK_IMMUNITY_TIME_IN_SECONDS) ends the pass; one due
is written again at the end of the half queue with TRANSACTION_CHECK_TIMES raised and the
producer is asked about the new copy; one checked ``transactionCheckMax`` times, or older
than the store keeps files, is discarded. Progress is kept as CID_RMQ_SYS_TRANS's consume
offsets of the half and op queues.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator
from typing import Protocol

from rocketmq_tx.broker.transaction.bridge import PullResult, PullStatus, TransactionalMessageBridge
from rocketmq_tx.broker.transaction.opbatch import TransactionalOpBatchService
from rocketmq_tx.broker.transaction.util import (
    REMOVE_TAG,
    TRANS_HALF_TOPIC,
    TRANS_OP_HALF_TOPIC,
    immunity_half_message,
    java_long,
    parse_op_body,
    renew_half_message,
)
from rocketmq_tx.common.message import MessageConst, MessageExt
from rocketmq_tx.store import MessageExtBrokerInner, PutMessageResult
from rocketmq_tx.store.status import PutMessageStatus

__all__ = ["TransactionalMessageService", "RecentHalfMessages", "CheckListener", "MAX_PROCESS_TIME_LIMIT"]

log = logging.getLogger("rocketmq_tx.broker.transaction")

#: Java's limits: one message read per half pull, 60 s per queue and pass, one retry on a hole.
PULL_MSG_RETRY_NUMBER = 1
MAX_PROCESS_TIME_LIMIT = 60000
MAX_RETRY_COUNT_WHEN_HALF_NULL = 1
OP_PULL_NUMS = 32
#: A put back that keeps failing ends the queue's pass (Java retries until its 60 s are up).
MAX_PUT_BACK_FAILURES = 3


class CheckListener(Protocol):
    def resolve_half_msg(self, msg: MessageExt) -> None: ...

    def resolve_discard_msg(self, msg: MessageExt) -> None: ...


def _java_int(text: str) -> int:
    value = java_long(text)
    return value if -(1 << 31) <= value < (1 << 31) else -1


class RecentHalfMessages:
    """
    The half messages this broker stored lately and no END_TRANSACTION has named yet, by
    CommitLog offset: a producer commits right after its send, and reading the record back
    (as Java does) and decoding it was a quarter of END_TRANSACTION's time in the broker
    (``bench/txpath.py --profile``). Bounded in count and bytes, oldest dropped first; a
    miss reads the store, as before.
    """

    def __init__(self, max_count: int = 4096, max_bytes: int = 16 << 20) -> None:
        self.max_count = max_count
        self.max_bytes = max_bytes
        self.size = 0
        #: offset -> (the stored half message, its queue offset, record size, bytes held,
        #: store host, store timestamp)
        self._halves: dict[int, tuple[MessageExtBrokerInner, int, int, int, tuple[str, int], int]] = {}

    def __len__(self) -> int:
        return len(self._halves)

    def add(self, inner: MessageExtBrokerInner, commit_log_offset: int, queue_offset: int, record_size: int,
            store_host: tuple[str, int], store_timestamp: int) -> None:
        held = len(inner.body) + len(inner.properties)
        if held > self.max_bytes:
            return
        halves = self._halves
        old = halves.pop(commit_log_offset, None)
        if old is not None:  # (only if the log was cut and written again)
            self.size -= old[3]
        halves[commit_log_offset] = (inner, queue_offset, record_size, held, store_host, store_timestamp)
        self.size += held
        while len(halves) > self.max_count or self.size > self.max_bytes:
            oldest = next(iter(halves))
            self.size -= halves.pop(oldest)[3]

    def pop(self, commit_log_offset: int) -> MessageExt | None:
        """The half message at *commit_log_offset* as a read of it would give (the fields
        END_TRANSACTION uses), or ``None``; forgotten either way."""
        entry = self._halves.pop(commit_log_offset, None)
        if entry is None:
            return None
        inner, queue_offset, record_size, held, store_host, store_timestamp = entry
        self.size -= held
        props = inner.property_map
        assert props is not None
        return MessageExt(inner.topic, inner.body, inner.flag, dict(props), None, inner.queue_id, record_size,
                          queue_offset, inner.sys_flag, inner.born_timestamp, inner.born_host, store_timestamp,
                          store_host, commit_log_offset, 0, inner.reconsume_times)

    def clear(self) -> None:
        self._halves.clear()
        self.size = 0


class TransactionalMessageService:
    """
    :param bridge: the store side.
    :param now_ms: the clock (the reactor's, like the store's).
    :param file_reserved_hours: ``fileReservedTime``: older half messages are discarded.
    """

    def __init__(self, bridge: TransactionalMessageBridge, now_ms: Callable[[], int],
                 file_reserved_hours: int = 72, op_batch: TransactionalOpBatchService | None = None) -> None:
        self.bridge = bridge
        self.now_ms = now_ms
        self.file_reserved_hours = file_reserved_hours
        #: 5.x's batched op messages; without it each is written at once (4.9)
        self.op_batch = op_batch
        self.recent_halves = RecentHalfMessages()

    # ------------------------------------------------------------------ END_TRANSACTION

    def half_message_stored(self, inner: MessageExtBrokerInner, result: PutMessageResult | None) -> None:
        """SEND_MESSAGE stored *inner* as a half message (*result* its put result): kept for
        its END_TRANSACTION. A put the store rewrote (a delay level, a timer) is not kept."""
        if result is None or result.status is not PutMessageStatus.PUT_OK:
            return
        append = result.append_result
        if append is not None and append.store_host is not None and inner.topic == TRANS_HALF_TOPIC \
                and inner.property_map is not None:
            self.recent_halves.add(inner, append.wrote_offset, append.logics_offset, append.wrote_bytes,
                                   append.store_host, append.store_timestamp)

    def get_half_message_by_offset(self, commit_log_offset: int) -> MessageExt | None:
        """Java ``commitMessage``/``rollbackMessage``: the half message, or ``None``
        ("Find prepared transaction message failed")."""
        half = self.recent_halves.pop(commit_log_offset)
        if half is not None:
            store = self.bridge.store
            # kept only while its record is still in the CommitLog (not expired, not cut)
            if store.get_min_phy_offset() <= commit_log_offset \
                    and commit_log_offset + half.store_size <= store.get_max_phy_offset():
                return half
        return self.bridge.look_message_by_offset(commit_log_offset)

    def delete_prepare_message(self, half: MessageExt) -> bool:
        if self.op_batch is not None:
            return self.op_batch.delete_prepare_message(half)
        if self.bridge.put_op_message(half):
            return True
        log.error("Transaction op message write failed. messageId is %s, queueId is %d", half.offset_msg_id,
                  half.queue_id)
        return False

    # ------------------------------------------------------------------ check

    def _need_discard(self, msg: MessageExt, check_max: int) -> bool:
        times = msg.properties.get(MessageConst.PROPERTY_TRANSACTION_CHECK_TIMES)
        count = 1
        if times is not None:
            count = _java_int(times)
            if count >= check_max:
                return True
            count += 1
        msg.properties[MessageConst.PROPERTY_TRANSACTION_CHECK_TIMES] = str(count)
        return False

    def _need_skip(self, msg: MessageExt) -> bool:
        if self.now_ms() - msg.born_timestamp > self.file_reserved_hours * 3600 * 1000:
            log.info("Half message exceed file reserved time, so skip it. messageId %s, bornTime %d",
                     msg.offset_msg_id, msg.born_timestamp)
            return True
        return False

    def _put_back(self, msg: MessageExt) -> bool:
        """Java ``putBackHalfMsgQueue``: *msg* now describes the new copy."""
        result = self.bridge.put(renew_half_message(msg))
        if result is not None and result.status is PutMessageStatus.PUT_OK and result.append_result is not None:
            msg.queue_offset = result.append_result.logics_offset
            msg.commit_log_offset = result.append_result.wrote_offset
            return True
        log.error("PutBackToHalfQueueReturnResult write failed, topic: %s, queueId: %d, msgId: %s", msg.topic,
                  msg.queue_id, msg.offset_msg_id)
        return False

    def _fill_op_remove_map(self, remove: dict[int, int], queue_id: int, op_offset: int, mini_offset: int,
                            done: list[int], op_map: dict[int, set[int]]) -> PullResult:
        """
        Java ``fillOpRemoveMap``: the op messages from *op_offset* on (32 at a time) into
        *remove* (half offset -> op offset). The body is read as 5.x writes it too (offsets
        joined by commas, ``"7,"``; 4.9 writes ``"7"``), so a store a 5.x broker wrote is
        checked right; *op_map* keeps which half offsets each op message still names, and an
        op message is done once they are all passed (5.x's bookkeeping, 4.9's for one offset).
        """
        pulled = self.bridge.get_op_message(queue_id, op_offset, OP_PULL_NUMS)
        if pulled.status in (PullStatus.OFFSET_ILLEGAL, PullStatus.NO_MATCHED_MSG):
            log.warning("The miss op offset=%d in queue %d is illegal", op_offset, queue_id)
            self.bridge.update_consume_offset(TRANS_OP_HALF_TOPIC, queue_id, pulled.next_begin_offset)
            return pulled
        if pulled.status == PullStatus.NO_NEW_MSG or pulled.messages is None:
            return pulled
        for op in pulled.messages:
            named: set[int] = set()
            if op.tags == REMOVE_TAG:
                for half_offset in parse_op_body(op.body):
                    if half_offset >= mini_offset:
                        remove[half_offset] = op.queue_offset
                        named.add(half_offset)
            else:
                log.error("Found a illegal tag in op message %s", op.offset_msg_id)
            if named:
                op_map[op.queue_offset] = named
            else:
                done.append(op.queue_offset)
        return pulled

    @staticmethod
    def _resolved(i: int, remove: dict[int, int], done: list[int], op_map: dict[int, set[int]]) -> None:
        op_offset = remove.pop(i)
        named = op_map.get(op_offset)
        if named is not None:
            named.discard(i)
            if named:
                return
            del op_map[op_offset]
        done.append(op_offset)

    def _check_prepare_queue_offset(self, remove: dict[int, int], done: list[int], msg: MessageExt) -> bool:
        text = msg.properties.get(MessageConst.PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET)
        if text is None:
            return self.bridge.put_ok(immunity_half_message(msg))
        prepared = java_long(text)
        if prepared == -1:
            return False
        if prepared in remove:
            done.append(remove.pop(prepared))
            return True
        return self.bridge.put_ok(immunity_half_message(msg))

    @staticmethod
    def _immunity_time(text: str, timeout: int) -> int:
        value = java_long(text)
        return timeout if value == -1 else value * 1000

    @staticmethod
    def calculate_op_offset(done: list[int], old: int) -> int:
        new = old
        for offset in sorted(done):
            if offset != new:
                break
            new += 1
        return new

    def check(self, timeout: int, check_max: int, listener: CheckListener) -> Generator[None, None, None]:
        """One check pass over every half queue (Java ``check``); yields after each step."""
        bridge = self.bridge
        if self.op_batch is not None:
            # what is resolved and not yet written, first: no producer is asked about it
            self.op_batch.flush()
        queue_ids = bridge.half_queue_ids()
        if not queue_ids:
            log.warning("The queue of topic is empty: %s", TRANS_HALF_TOPIC)
            return
        for queue_id in queue_ids:
            start = self.now_ms()
            half_offset = bridge.fetch_consume_offset(TRANS_HALF_TOPIC, queue_id)
            op_offset = bridge.fetch_consume_offset(TRANS_OP_HALF_TOPIC, queue_id)
            if half_offset < 0 or op_offset < 0:
                log.error("half queue %d: illegal offset read: %d, op offset: %d, skip this queue", queue_id,
                          half_offset, op_offset)
                continue
            done: list[int] = []
            remove: dict[int, int] = {}
            op_map: dict[int, set[int]] = {}
            pulled = self._fill_op_remove_map(remove, queue_id, op_offset, half_offset, done, op_map)
            null_count = 1
            put_back_failures = 0
            new_offset = i = half_offset
            while True:
                yield None
                now = self.now_ms()
                if now - start > MAX_PROCESS_TIME_LIMIT:
                    log.info("half queue %d: process time reach max=%d", queue_id, MAX_PROCESS_TIME_LIMIT)
                    break
                if i in remove:
                    self._resolved(i, remove, done, op_map)
                else:
                    got = bridge.get_half_message(queue_id, i, PULL_MSG_RETRY_NUMBER)
                    msg = got.messages[0] if got.messages else None
                    if msg is None:
                        null_count += 1
                        if null_count - 1 > MAX_RETRY_COUNT_WHEN_HALF_NULL:
                            break
                        if got.status == PullStatus.NO_NEW_MSG:
                            break
                        log.info("Illegal offset, the miss offset=%d in half queue %d, continue check from %d", i,
                                 queue_id, got.next_begin_offset)
                        i = new_offset = got.next_begin_offset
                        continue
                    if self._need_discard(msg, check_max) or self._need_skip(msg):
                        listener.resolve_discard_msg(msg)
                        new_offset = i = i + 1
                        continue
                    if msg.store_timestamp >= start:
                        break  # stored after this pass began
                    age = now - msg.born_timestamp
                    immunity = timeout
                    immunity_text = msg.properties.get(MessageConst.PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS)
                    if immunity_text is not None:
                        immunity = self._immunity_time(immunity_text, timeout)
                        if age < immunity and self._check_prepare_queue_offset(remove, done, msg):
                            new_offset = i = i + 1
                            continue
                    elif 0 <= age < immunity:
                        break  # not due yet, nor is anything after it
                    ops = pulled.messages
                    need_check = ((ops is None and age > immunity)
                                  or (ops is not None and ops[-1].born_timestamp - start > timeout)
                                  or age <= -1)
                    if need_check:
                        if not self._put_back(msg):
                            put_back_failures += 1
                            if put_back_failures >= MAX_PUT_BACK_FAILURES:
                                break
                            continue
                        listener.resolve_half_msg(msg)
                    else:
                        if ops is None:
                            break  # no op message left to read; due on a later pass (Java spins until then)
                        # the op messages read so far do not name it: read on
                        pulled = self._fill_op_remove_map(remove, queue_id, pulled.next_begin_offset, half_offset,
                                                          done, op_map)
                        continue
                new_offset = i = i + 1
            if new_offset != half_offset:
                bridge.update_consume_offset(TRANS_HALF_TOPIC, queue_id, new_offset)
            new_op_offset = self.calculate_op_offset(done, op_offset)
            if new_op_offset != op_offset:
                bridge.update_consume_offset(TRANS_OP_HALF_TOPIC, queue_id, new_op_offset)
