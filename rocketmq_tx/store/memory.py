# -*- test-case-name: rocketmq_tx.store.test.test_contract -*-
"""
InMemoryMessageStore: the store contract without files, for processor tests and as the
reference the contract tests hold :class:`~rocketmq_tx.store.store.DefaultMessageStore` to.

It keeps real CommitLog records (same encoder) in one growing buffer, so bodies, ids and
offsets look exactly like the file store's; there are no file boundaries, flushing or expiry.
"""

from __future__ import annotations

import bisect
import threading
import time
from typing import Callable, Optional

from rocketmq_tx.common.errors import MessageFormatError
from rocketmq_tx.common.message import MessageConst, MessageExt
from rocketmq_tx.common.messagecodec import decode_message, pack_host
from rocketmq_tx.common.sysflag import MessageSysFlag
from rocketmq_tx.store.commitlog import (
    MessageExtBatch,
    MessageExtBrokerInner,
    encode_inner,
    iter_batch,
    offset_msg_id,
    tags_code_of,
)
from rocketmq_tx.store.config import parse_delay_levels
from rocketmq_tx.store.status import (
    AppendMessageResult,
    AppendMessageStatus,
    GetMessageResult,
    GetMessageStatus,
    PutMessageResult,
    PutMessageStatus,
)
from rocketmq_tx.store.store import QueryMessageResult

__all__ = ["InMemoryMessageStore"]

_TX_MASK = MessageSysFlag.TRANSACTION_MASK
_COUNTED = (MessageSysFlag.TRANSACTION_NOT_TYPE, MessageSysFlag.TRANSACTION_COMMIT_TYPE)


class InMemoryMessageStore:
    def __init__(self, now: Callable[[], float] = time.time, store_host: tuple[str, int] = ("127.0.0.1", 10911),
                 max_message_size: int = 4 * 1024 * 1024) -> None:
        self.now = now
        self.store_host = store_host
        self.max_message_size = max_message_size
        self.log = bytearray()
        self.offsets: list[int] = []  # physical offsets of records, ascending
        #: (topic, queue id) -> list of (phys, size, tags_code, store_timestamp)
        self.queues: dict[tuple[str, int], list[tuple[int, int, int, int]]] = {}
        self.keys: dict[tuple[str, str], list[int]] = {}
        self.lock = threading.Lock()
        self.delay_levels = parse_delay_levels("1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h")
        self.running = False

    # -- lifecycle

    def load(self) -> bool:
        return True

    def start(self) -> None:
        self.running = True

    def shutdown(self) -> None:
        self.running = False

    # -- put

    def put_message(self, msg: MessageExtBrokerInner) -> PutMessageResult:
        return self._put([msg])

    def put_messages(self, batch: MessageExtBatch) -> PutMessageResult:
        try:
            items = list(iter_batch(batch.body, batch.properties))
        except MessageFormatError:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL)
        if not items:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL)
        return self._put([MessageExtBrokerInner(batch.topic, body, props, batch.queue_id, flag, batch.sys_flag,
                                                batch.born_timestamp, batch.born_host, batch.store_host)
                          for flag, body, props in items])

    def _put(self, msgs: list[MessageExtBrokerInner]) -> PutMessageResult:
        if not self.running:
            return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE)
        for m in msgs:
            if not m.topic or len(m.topic.encode()) > 127 or len(m.body) > self.max_message_size:
                return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL)
            if len(m.properties) > 0x7FFF:
                return PutMessageResult(PutMessageStatus.PROPERTIES_SIZE_EXCEEDED)
        with self.lock:
            ts = int(self.now() * 1000)
            first_phys = len(self.log)
            ids = []
            first_qoff = None
            for m in msgs:
                host = m.store_host or self.store_host
                q = self.queues.setdefault((m.topic, m.queue_id), [])
                counted = m.sys_flag & _TX_MASK in _COUNTED
                qoff = len(q) if counted else 0
                first_qoff = qoff if first_qoff is None else first_qoff
                phys = len(self.log)
                record = encode_inner(m, queue_offset=qoff, phys=phys, store_timestamp=ts,
                                      store_host=pack_host(*host), properties=m.properties)
                self.log += record
                self.offsets.append(phys)
                props = m.get_properties()
                if counted:
                    q.append((phys, len(record), tags_code_of(m.topic, props, ts, self.delay_levels), ts))
                for key in [props.get(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)] + \
                        props.get(MessageConst.PROPERTY_KEYS, "").split(" "):
                    if key:
                        self.keys.setdefault((m.topic, key), []).append(phys)
                ids.append(offset_msg_id(host, phys))
            total = len(self.log) - first_phys
        return PutMessageResult(PutMessageStatus.PUT_OK, AppendMessageResult(
            AppendMessageStatus.PUT_OK, first_phys, total, ",".join(ids), ts, first_qoff or 0, len(msgs)))

    # -- read

    def get_message(self, group: str, topic: str, queue_id: int, offset: int, max_msg_nums: int,
                    message_filter=None) -> GetMessageResult:
        result = GetMessageResult(next_begin_offset=offset)
        q = self.queues.get((topic, queue_id))
        if q is None:
            result.status = GetMessageStatus.NO_MESSAGE_IN_QUEUE  # as Java, which creates the queue on lookup
            result.next_begin_offset = 0
            return result
        result.max_offset = len(q)
        if not q:
            result.status, result.next_begin_offset = GetMessageStatus.NO_MESSAGE_IN_QUEUE, 0
        elif offset < 0:
            result.status, result.next_begin_offset = GetMessageStatus.OFFSET_TOO_SMALL, 0
        elif offset == len(q):
            result.status = GetMessageStatus.OFFSET_OVERFLOW_ONE
        elif offset > len(q):
            result.status, result.next_begin_offset = GetMessageStatus.OFFSET_OVERFLOW_BADLY, len(q)
        else:
            result.status = GetMessageStatus.NO_MATCHED_MESSAGE
            i = offset
            while i < len(q) and len(result.message_buffers) < min(max_msg_nums, 32):
                phys, size, tags_code, _ = q[i]
                if message_filter is None or message_filter.is_matched_by_consume_queue(tags_code):
                    result.message_buffers.append(bytes(self.log[phys:phys + size]))
                    result.message_queue_offsets.append(i)
                    result.buffer_total_size += size
                    result.status = GetMessageStatus.FOUND
                i += 1
            result.next_begin_offset = i
        return result

    def look_message_by_offset(self, commit_log_offset: int, size: Optional[int] = None) -> Optional[MessageExt]:
        i = bisect.bisect_left(self.offsets, commit_log_offset)
        if i >= len(self.offsets) or self.offsets[i] != commit_log_offset:
            return None
        msg, _ = decode_message(self.log, commit_log_offset, decompress_body=False)
        return msg

    def query_message(self, topic: str, key: str, max_num: int, begin: int, end: int) -> QueryMessageResult:
        result = QueryMessageResult()
        for phys in reversed(self.keys.get((topic, key), [])):
            msg, stop = decode_message(self.log, phys, read_body=False)
            if begin <= msg.store_timestamp <= end and len(result.message_buffers) < max_num:
                result.message_buffers.append(bytes(self.log[phys:stop]))
                result.buffer_total_size += stop - phys
        return result

    # -- offsets

    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int:
        return len(self.queues.get((topic, queue_id), ()))

    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int:
        return 0

    def get_offset_in_queue_by_time(self, topic: str, queue_id: int, timestamp: int) -> int:
        q = self.queues.get((topic, queue_id), [])
        for i, entry in enumerate(q):
            if entry[3] >= timestamp:
                return i
        return max(len(q) - 1, 0)

    def get_earliest_message_time(self, topic: Optional[str] = None, queue_id: int = 0) -> int:
        if topic is None:
            if not self.offsets:
                return -1
            return decode_message(self.log, 0, read_body=False)[0].store_timestamp
        q = self.queues.get((topic, queue_id))
        return q[0][3] if q else -1
