# -*- test-case-name: rocketmq_tx.broker.test.test_pop -*-
"""
POP consumption's broker state (Java's ``PopBufferMergeService`` + ``PopReviveService`` in one):
the checkpoints of popped messages, acks against them, and their revival.

Every checkpoint (tag ``ck``) and ack (``ack``, ``bAck``) is written, with Java's JSON
body, to the revive topic ``rmq_sys_REVIVE_LOG_<cluster>`` queue ``reviveQid`` before it takes
effect, so a restart rebuilds the table by reading the revive queues from the revive group's
committed offset (``CID_RMQ_SYS_REVIVE_GROUP``), which moves past a checkpoint once it is
fully acked or revived. Java writes these records as timer messages due at the revive time;
without a timer store we write them at once and keep the due times here (docs/compatibility.md).

When a checkpoint's invisible time has passed, each message not acked is re-put to the POP
retry topic (``%RETRY%<group>_<topic>``, or ``+`` with ``enableRetryTopicV2``) with its
reconsume count + 1, ``1ST_POP_TIME`` and ``ORIGIN_GROUP``, as Java 5.5.0's ``reviveRetry``. Java's broker never
sends POP messages to the DLQ: the 5.x clients and the proxy do (``sendMessageBack``).

All work runs on the reactor in bounded slices: :meth:`revive_due` handles at most
*revive_batch* checkpoints (and about as many messages) a call and recovery reads
*recover_batch* records a call.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from rocketmq_tx.broker.pop.orderinfo import ConsumerOrderInfoManager
from rocketmq_tx.common.message import MessageConst, properties_to_string
from rocketmq_tx.common.messagecodec import decode_message, java_string_hash
from rocketmq_tx.common.route import PermName
from rocketmq_tx.remoting.extrainfo import build_pop_retry_topic
from rocketmq_tx.remoting.popbodies import (
    ACK_TAG,
    BATCH_ACK_TAG,
    CK_TAG,
    AckMsg,
    BatchAckMsg,
    PopCheckPoint,
    revive_topic,
)
from rocketmq_tx.store import MessageExtBrokerInner
from rocketmq_tx.store.status import GetMessageStatus, PutMessageStatus

__all__ = ["PopService", "REVIVE_GROUP", "CheckpointKey"]

log = logging.getLogger("rocketmq_tx.broker.pop")

#: ``PopAckConstants.REVIVE_GROUP``: the group whose offsets on the revive topic say how far it is done.
REVIVE_GROUP = "CID_RMQ_SYS_REVIVE_GROUP"
#: POP retry topics have one queue (``PopAckConstants.retryQueueNum``).
RETRY_QUEUE_NUM = 1
_RW = PermName.PERM_READ | PermName.PERM_WRITE

#: (group, topic, queue id, start offset, pop time): what an ack names its checkpoint by.
CheckpointKey = tuple[str, str, int, int, int]


@dataclass(eq=False, slots=True)
class _Pending:
    ck: PopCheckPoint
    revive_qid: int
    revive_offset: int  # the ck record's offset in its revive queue
    done: bool = False


class PopService:
    """
    :param controller: the broker (store, settings, topic/offset/subscription managers). A
        revived message wakes the POPs waiting on its retry topic through the store's arrival
        events, as any stored message does.
    """

    def __init__(self, controller: Any, revive_batch: int = 256, recover_batch: int = 1024) -> None:
        self.controller = controller
        self.settings = controller.settings
        self.store = controller.store
        self.revive_topic = revive_topic(self.settings["brokerClusterName"])
        self.revive_queue_num = self.settings["reviveQueueNum"]
        self.revive_batch = revive_batch
        self.recover_batch = recover_batch
        self.table: dict[CheckpointKey, _Pending] = {}
        #: FIFO POP's blocked queues (no checkpoints: see :mod:`.orderinfo`)
        self.order_info = ConsumerOrderInfoManager(
            os.path.join(controller.store_config.config_dir, "consumerOrderInfo.json"))
        topics, groups = controller.topic_config_manager, controller.subscription_group_manager
        self.order_info.read_queue_nums = lambda t: None if (tc := topics.select_topic_config(t)) is None \
            else tc.read_queue_nums
        self.order_info.group_exists = lambda g: g in groups.subscription_group_table
        self._due: list[tuple[int, int, CheckpointKey]] = []
        self._by_queue: dict[int, list[tuple[int, int, CheckpointKey]]] = {}
        self._seq = itertools.count()
        self._ck_counter = itertools.count()
        #: revive queue -> next offset to read while recovering (absent once caught up)
        self._recover_cursor: dict[int, int] = {}
        #: a record tag -> its properties text and tag hash (the same three tags every time)
        self._record_props: dict[str, tuple[bytes, int]] = {}
        self._host: tuple[str, tuple[str, int]] | None = None

    # ------------------------------------------------------------------ setup

    def load(self) -> None:
        """Prepare recovery from the revive group's offsets (the revive topic is a system topic)."""
        offsets = self.controller.consumer_offset_manager
        for qid in range(self.revive_queue_num):
            start = offsets.query_offset(REVIVE_GROUP, self.revive_topic, qid)
            start = max(start, self.store.get_min_offset_in_queue(self.revive_topic, qid), 0)
            if start < self.store.get_max_offset_in_queue(self.revive_topic, qid):
                self._recover_cursor[qid] = start

    @property
    def recovering(self) -> bool:
        """Whether revive records written before the start are still being read back."""
        return bool(self._recover_cursor)

    def recover_slice(self) -> bool:
        """Read at most *recover_batch* revive records back; ``True`` once all are read."""
        budget = self.recover_batch
        for qid in list(self._recover_cursor):
            offset = self._recover_cursor[qid]
            while budget > 0:
                result = self.store.get_message(REVIVE_GROUP, self.revive_topic, qid, offset, min(budget, 32))
                if result.status is not GetMessageStatus.FOUND or not result.message_buffers:
                    if result.next_begin_offset > offset and result.status is not GetMessageStatus.OFFSET_OVERFLOW_ONE:
                        offset = result.next_begin_offset
                        continue
                    break
                for raw, queue_offset in zip(result.message_buffers, result.message_queue_offsets, strict=False):
                    self._replay(qid, queue_offset, raw)
                budget -= len(result.message_buffers)
                offset = result.next_begin_offset
            if offset >= self.store.get_max_offset_in_queue(self.revive_topic, qid):
                del self._recover_cursor[qid]
            else:
                self._recover_cursor[qid] = offset
            if budget <= 0:
                break
        return not self._recover_cursor

    def _replay(self, qid: int, queue_offset: int, raw: bytes) -> None:
        try:
            msg, _ = decode_message(raw)
            tag = msg.properties.get(MessageConst.PROPERTY_TAGS)
            if tag == CK_TAG:
                ck = PopCheckPoint.from_json(msg.body)
                if ck.cid is not None and ck.topic is not None and ck.num > 0:
                    self._track(ck, qid, queue_offset)
                    self._restore_offset(ck)
            elif tag == ACK_TAG:
                ack = AckMsg.from_json(msg.body)
                self._apply_ack(ack, [ack.ack_offset])
            elif tag == BATCH_ACK_TAG:
                back = BatchAckMsg.from_json(msg.body)
                self._apply_ack(back, back.ack_offset_list)
        except ValueError as e:  # Java logs a record it cannot parse and goes on
            log.warning("revive queue %d offset %d: unreadable record skipped: %s", qid, queue_offset, e)

    def _restore_offset(self, ck: PopCheckPoint) -> None:
        """
        The POP that wrote *ck* had moved the group's offset past its messages; after a kill -9
        ``consumerOffset.json`` may predate that, so the offset is moved up again here (ours:
        Java pops such messages a second time from the topic, besides reviving them).
        """
        assert ck.cid is not None and ck.topic is not None
        past = ck.ack_offset_by_index(ck.num - 1) + 1
        offsets = self.controller.consumer_offset_manager
        if past > offsets.query_offset(ck.cid, ck.topic, ck.queue_id):
            offsets.commit_offset(ck.cid, ck.topic, ck.queue_id, past)

    # ------------------------------------------------------------------ records

    def next_revive_qid(self) -> int:
        """The revive queue of the next checkpoint (Java: a counter modulo ``reviveQueueNum``)."""
        return next(self._ck_counter) % self.revive_queue_num

    def _store_host(self) -> tuple[str, int]:
        addr = self.controller.broker_addr
        if self._host is None or self._host[0] != addr:  # parsed once per address (one record per ack)
            ip, _, port = addr.rpartition(":")
            self._host = addr, (ip, int(port))
        return self._host[1]

    def _write(self, tag: str, body: bytes, revive_qid: int, deliver_ms: int) -> int | None:
        """Append one revive record; its queue offset, or ``None`` if the store refused it."""
        if not 0 <= revive_qid < self.revive_queue_num:
            # From a client's extra info: no queue outside the revive topic's may be created.
            log.warning("a %s record for revive queue %d refused: the revive topic has %d queues", tag, revive_qid,
                        self.revive_queue_num)
            return None
        # Java's record is a timer message due at *deliver_ms*; ours carries no timer
        # property, so no timer store (ours or Java's) holds it back: the due time is kept here.
        del deliver_ms
        props = {MessageConst.PROPERTY_TAGS: tag, MessageConst.PROPERTY_WAIT_STORE_MSG_OK: "false"}
        cached = self._record_props.get(tag)
        if cached is None:
            cached = self._record_props[tag] = properties_to_string(props).encode(), java_string_hash(tag)
        host = self._store_host()
        msg = MessageExtBrokerInner(self.revive_topic, body, cached[0], revive_qid, 0, 0,
                                    self.controller.now_ms(), host, host, 0, tags_code=cached[1],
                                    property_map=props, wait_store_msg_ok=False)
        # Appended now; a SYNC_FLUSH wait is not needed (Java's merge service does not wait either).
        begin = self.controller.reactor.seconds()
        result = self.store.async_put_message(msg)
        self.controller.put_time(result, begin)
        if result.status is not PutMessageStatus.PUT_OK or result.append_result is None:
            log.error("cannot write a %s record to %s: %s", tag, self.revive_topic, result.status.name)
            return None
        return int(result.append_result.logics_offset)

    def append_checkpoint(self, ck: PopCheckPoint, revive_qid: int) -> bool:
        """Write *ck* to the revive log and track it; ``False`` if the store refused it."""
        offset = self._write(CK_TAG, ck.to_json(), revive_qid, ck.revive_time - 1000)
        if offset is None:
            return False
        ck.revive_offset = offset
        self._track(ck, revive_qid, offset)
        return True

    def _track(self, ck: PopCheckPoint, revive_qid: int, revive_offset: int) -> None:
        assert ck.cid is not None and ck.topic is not None
        key = (ck.cid, ck.topic, ck.queue_id, ck.start_offset, ck.pop_time)
        if key in self.table:  # read back during recovery after it was tracked live
            return
        pending = _Pending(ck, revive_qid, revive_offset)
        self.table[key] = pending
        seq = next(self._seq)
        heapq.heappush(self._due, (ck.revive_time, seq, key))
        heapq.heappush(self._by_queue.setdefault(revive_qid, []), (revive_offset, seq, key))

    def ack(self, ack: AckMsg, offsets: Iterable[int], revive_qid: int, invisible_time: int) -> bool:
        """Write an ack (or a batch ack when *ack* is a :class:`BatchAckMsg`) and apply it."""
        offsets = list(offsets)
        tag = BATCH_ACK_TAG if isinstance(ack, BatchAckMsg) else ACK_TAG
        if self._write(tag, ack.to_json(), revive_qid, ack.pop_time + invisible_time) is None:
            return False
        self._apply_ack(ack, offsets)
        return True

    def _apply_ack(self, ack: AckMsg, offsets: list[int]) -> None:
        if ack.consumer_group is None or ack.topic is None:
            return
        pending = self.table.get((ack.consumer_group, ack.topic, ack.queue_id, ack.start_offset, ack.pop_time))
        if pending is None or pending.done:
            return
        ck = pending.ck
        for offset in offsets:
            index = ck.index_of_ack(offset)
            if 0 <= index < 32:
                ck.bit_map |= 1 << index
        if ck.bit_map == (1 << ck.num) - 1:
            self._finish(pending)

    def _finish(self, pending: _Pending) -> None:
        pending.done = True
        ck = pending.ck
        assert ck.cid is not None and ck.topic is not None
        self.table.pop((ck.cid, ck.topic, ck.queue_id, ck.start_offset, ck.pop_time), None)

    # ------------------------------------------------------------------ revive

    def next_due_ms(self) -> int | None:
        """When the earliest pending checkpoint is due (``None``: none pending)."""
        while self._due and self.table.get(self._due[0][2]) is None:
            heapq.heappop(self._due)
        return self._due[0][0] if self._due else None

    def revive_due(self, now_ms: int) -> int:
        """Revive at most *revive_batch* checkpoints due by *now_ms*; the messages re-put."""
        if self.recovering:
            return 0  # acks not yet read back would otherwise revive acked messages
        revived = 0
        handled = 0
        # Bounded by checkpoints and by messages re-put (a checkpoint holds up to 32): one tick
        # stays within a few ms however much is due; the rest goes next tick.
        while self._due and handled < self.revive_batch and revived < self.revive_batch:
            due, _, key = self._due[0]
            pending = self.table.get(key)
            if pending is None:
                heapq.heappop(self._due)
                continue
            if due > now_ms:
                break
            heapq.heappop(self._due)
            handled += 1
            ok, count = self._revive(pending)
            revived += count
            if ok:
                self._finish(pending)
            else:  # the store refused: try again next round, as Java retries the checkpoint
                heapq.heappush(self._due, (now_ms + 1000, next(self._seq), key))
        self.commit_revive_offsets()
        return revived

    def _revive(self, pending: _Pending) -> tuple[bool, int]:
        ck = pending.ck
        assert ck.cid is not None and ck.topic is not None
        count = 0
        for index in range(ck.num):
            if ck.bit_map & (1 << index):
                continue
            offset = ck.ack_offset_by_index(index)
            result = self.store.get_message(ck.cid, ck.topic, ck.queue_id, offset, 1)
            if result.status is not GetMessageStatus.FOUND or not result.message_buffers:
                # Java skips a message no longer in the store (expired or removed)
                log.warning("revive %s: no message at %s/%d offset %d", ck.cid, ck.topic, ck.queue_id, offset)
                ck.bit_map |= 1 << index
                continue
            msg, _ = decode_message(result.message_buffers[0])
            if not self._revive_retry(ck, msg):
                return False, count
            ck.bit_map |= 1 << index  # a retry of the retry would duplicate it
            count += 1
        return True, count

    def _revive_retry(self, ck: PopCheckPoint, msg: Any) -> bool:
        assert ck.cid is not None and ck.topic is not None
        if ck.topic.startswith("%RETRY%"):
            topic = ck.topic
        else:
            topic = build_pop_retry_topic(ck.topic, ck.cid, self.settings["enableRetryTopicV2"])
        props = dict(msg.properties)
        if msg.reconsume_times == 0 or MessageConst.PROPERTY_FIRST_POP_TIME not in props:
            props[MessageConst.PROPERTY_FIRST_POP_TIME] = str(ck.pop_time)
        # 5.5.0's reviveRetry names the group on every revived message (5.3.3 did not)
        props[MessageConst.PROPERTY_ORIGIN_GROUP] = ck.cid
        tc = self.controller.topic_config_manager.create_topic_in_send_message_back_method(topic, RETRY_QUEUE_NUM,
                                                                                        _RW)
        if tc is None:
            log.error("revive %s: cannot create the POP retry topic %r", ck.cid, topic)
            return False
        host = self._store_host()
        tags = props.get(MessageConst.PROPERTY_TAGS)
        inner = MessageExtBrokerInner(topic, msg.body, properties_to_string(props).encode(), 0, msg.flag, msg.sys_flag,
                                      msg.born_timestamp, host, host, msg.reconsume_times + 1,
                                      tags_code=java_string_hash(tags) if tags else 0, property_map=props,
                                      wait_store_msg_ok=False)
        begin = self.controller.reactor.seconds()
        result = self.store.async_put_message(inner)
        self.controller.put_time(result, begin)
        if result.status is not PutMessageStatus.PUT_OK:
            log.error("revive %s: put to %s failed: %s", ck.cid, topic, result.status.name)
            return False
        return True

    def commit_revive_offsets(self) -> None:
        """Move the revive group's offset of each queue up to its oldest checkpoint still pending."""
        offsets = self.controller.consumer_offset_manager
        for qid in range(self.revive_queue_num):
            if qid in self._recover_cursor:
                continue
            heap = self._by_queue.get(qid)
            while heap and self.table.get(heap[0][2]) is None:
                heapq.heappop(heap)
            if heap:
                target = heap[0][0]
            else:
                target = self.store.get_max_offset_in_queue(self.revive_topic, qid)
            # Nothing written yet (target 0): no entry, so consumerOffset.json is not touched.
            if target > max(offsets.query_offset(REVIVE_GROUP, self.revive_topic, qid), 0):
                offsets.commit_offset(REVIVE_GROUP, self.revive_topic, qid, target)
