# -*- test-case-name: rocketmq_tx.broker.test.test_transaction -*-
"""
:class:`TransactionalMessageBridge` (Java ``TransactionalMessageBridge``): the store, the
topic table and the consume offsets as the transaction code sees them. Synchronous; call it
on the reactor thread.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rocketmq_tx.broker.transaction.util import (
    CID_SYS_RMQ_TRANS,
    TRANS_HALF_TOPIC,
    TRANS_OP_HALF_TOPIC,
    half_message,
    op_message_body,
)
from rocketmq_tx.common.errors import MessageFormatError
from rocketmq_tx.common.message import MessageExt
from rocketmq_tx.common.messagecodec import decode_message
from rocketmq_tx.common.msgid import UniqueKeyGenerator
from rocketmq_tx.common.route import PermName, TopicConfig
from rocketmq_tx.store import MessageExtBrokerInner, PutMessageResult
from rocketmq_tx.store.status import GetMessageStatus, PutMessageStatus

if TYPE_CHECKING:
    from rocketmq_tx.broker.controller import BrokerController

__all__ = ["TransactionalMessageBridge", "PullResult", "PullStatus"]

log = logging.getLogger("rocketmq_tx.broker.transaction")


class PullStatus:
    FOUND = "FOUND"
    NO_NEW_MSG = "NO_NEW_MSG"
    NO_MATCHED_MSG = "NO_MATCHED_MSG"
    OFFSET_ILLEGAL = "OFFSET_ILLEGAL"


_STATUS = {
    GetMessageStatus.FOUND: PullStatus.FOUND,
    GetMessageStatus.NO_MATCHED_MESSAGE: PullStatus.NO_MATCHED_MSG,
    GetMessageStatus.NO_MESSAGE_IN_QUEUE: PullStatus.NO_NEW_MSG,
    GetMessageStatus.OFFSET_OVERFLOW_ONE: PullStatus.NO_NEW_MSG,
}


@dataclass
class PullResult:
    """What the bridge's reads give (the client's ``PullResult`` as Java's bridge builds it):
    *messages* is ``None`` unless FOUND."""

    status: str
    next_begin_offset: int
    min_offset: int
    max_offset: int
    messages: list[MessageExt] | None = None


class TransactionalMessageBridge:
    """:param controller: the broker (store, topic table, consume offsets, clock)."""

    def __init__(self, controller: BrokerController) -> None:
        self.controller = controller
        self.store = controller.store
        self.ids = UniqueKeyGenerator()
        self._addr: str | None = None
        self._host = ("", 0)

    @property
    def store_host(self) -> tuple[str, int]:
        addr = self.controller.broker_addr
        if addr is not self._addr:  # parsed again only when the broker's address changes
            ip, _, port = addr.rpartition(":")
            self._addr, self._host = addr, (ip, int(port))
        return self._host

    # ------------------------------------------------------------------ offsets

    def fetch_consume_offset(self, topic: str, queue_id: int) -> int:
        """The check's progress in one queue; the queue's min offset when none was kept."""
        offset = self.controller.consumer_offset_manager.query_offset(CID_SYS_RMQ_TRANS, topic, queue_id)
        if offset == -1:
            offset = self.store.get_min_offset_in_queue(topic, queue_id)
        return offset

    def update_consume_offset(self, topic: str, queue_id: int, offset: int) -> None:
        self.controller.consumer_offset_manager.commit_offset(CID_SYS_RMQ_TRANS, topic, queue_id, offset)

    def select_topic_config(self, topic: str) -> TopicConfig | None:
        """The topic's config, created (1 queue, read-write) when missing, as Java's bridge does."""
        topics = self.controller.topic_config_manager
        tc = topics.select_topic_config(topic)
        if tc is None:
            tc = topics.create_topic_in_send_message_back_method(topic, 1, PermName.PERM_READ | PermName.PERM_WRITE)
        return tc

    def half_queue_ids(self) -> list[int]:
        """Java ``fetchMessageQueues(RMQ_SYS_TRANS_HALF_TOPIC)``: its read queues."""
        tc = self.select_topic_config(TRANS_HALF_TOPIC)
        if tc is None or tc.read_queue_nums <= 0:
            return []
        return list(range(tc.read_queue_nums))

    # ------------------------------------------------------------------ reads

    def get_half_message(self, queue_id: int, offset: int, nums: int) -> PullResult:
        return self._get(TRANS_HALF_TOPIC, queue_id, offset, nums)

    def get_op_message(self, queue_id: int, offset: int, nums: int) -> PullResult:
        return self._get(TRANS_OP_HALF_TOPIC, queue_id, offset, nums)

    def _get(self, topic: str, queue_id: int, offset: int, nums: int) -> PullResult:
        got = self.store.get_message(CID_SYS_RMQ_TRANS, topic, queue_id, offset, nums)
        status = _STATUS.get(got.status, PullStatus.OFFSET_ILLEGAL)
        messages: list[MessageExt] | None = None
        if status == PullStatus.FOUND:
            messages = []
            for record in got.message_buffers:
                try:
                    # as Java's decodeMsgList: body read, not decompressed
                    msg, _ = decode_message(record, 0, decompress_body=False)
                except MessageFormatError:
                    log.exception("an unreadable record in %s queue %d", topic, queue_id)
                    continue
                messages.append(msg)
        return PullResult(status, got.next_begin_offset, got.min_offset, got.max_offset, messages)

    def look_message_by_offset(self, commit_log_offset: int) -> MessageExt | None:
        return self.store.look_message_by_offset(commit_log_offset)

    # ------------------------------------------------------------------ puts

    def put(self, msg: MessageExtBrokerInner) -> PutMessageResult | None:
        """A put that does not wait for the disk (every message the transaction code writes
        itself has WAIT false, as in Java)."""
        try:
            result = self.controller.put_message(msg, stats=False)
        except Exception:
            log.exception("put to %s failed", msg.topic)
            return None
        if isinstance(result, PutMessageResult):
            return result
        return None  # pragma: no cover - WAIT false never waits for a flush

    def put_ok(self, msg: MessageExtBrokerInner) -> bool:
        result = self.put(msg)
        if result is not None and result.status is PutMessageStatus.PUT_OK:
            return True
        log.error("put message failed, topic: %s, queueId: %d, status: %s", msg.topic, msg.queue_id,
                  None if result is None else result.status.name)
        return False

    def prepare_half_message(self, msg: MessageExtBrokerInner, props: dict[str, str]) -> MessageExtBrokerInner:
        """Java ``parseHalfMessageInner``: *msg* turned into its half message (put by the caller)."""
        return half_message(msg, props)

    def put_op_message(self, half: MessageExt) -> bool:
        """Java 4.9 ``putOpMessage(msg, REMOVETAG)``: record that *half* is resolved."""
        return self.put_op_body(half.queue_id, str(half.queue_offset).encode())

    def put_op_body(self, queue_id: int, body: bytes) -> bool:
        """Java 5.x ``writeOp``: an op message naming the half offsets in *body*."""
        controller = self.controller
        op = op_message_body(queue_id, body, self.ids.create_uniq_id(), controller.now_ms(), self.store_host)
        # put and put_ok, inlined (4.9's form writes one op message per END_TRANSACTION)
        try:
            result = controller.put_message(op, stats=False)
        except Exception:
            log.exception("put to %s failed", op.topic)
            result = None
        if result.__class__ is not PutMessageResult:
            result = None  # the put raised (a Deferred cannot come: WAIT false never waits)
        elif result.status is PutMessageStatus.PUT_OK:
            return True
        log.error("put message failed, topic: %s, queueId: %d, status: %s", op.topic, op.queue_id,
                  None if result is None else result.status.name)
        return False
