# -*- test-case-name: rocketmq_tx.store.test.test_store -*-
"""
Result values of the store (Java ``PutMessageStatus``, ``GetMessageStatus``,
``AppendMessageStatus``, ``PutMessageResult``, ``GetMessageResult``).

Expected outcomes are statuses, never exceptions: the broker's processors map them to
response codes.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rocketmq_tx.common.msgid import create_offset_msg_id

if TYPE_CHECKING:
    from rocketmq_tx.store.flush import GroupCommitRequest

__all__ = [
    "PutMessageStatus",
    "AppendMessageStatus",
    "GetMessageStatus",
    "AppendMessageResult",
    "PutMessageResult",
    "GetMessageResult",
]


class PutMessageStatus(enum.Enum):
    """Java ``PutMessageStatus`` (4.9 names; the 5.x additions are listed too)."""

    PUT_OK = "PUT_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"
    SERVICE_NOT_AVAILABLE = "SERVICE_NOT_AVAILABLE"
    CREATE_MAPEDFILE_FAILED = "CREATE_MAPEDFILE_FAILED"
    MESSAGE_ILLEGAL = "MESSAGE_ILLEGAL"
    PROPERTIES_SIZE_EXCEEDED = "PROPERTIES_SIZE_EXCEEDED"
    OS_PAGECACHE_BUSY = "OS_PAGECACHE_BUSY"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"
    # 5.x
    IN_SYNC_REPLICAS_NOT_ENOUGH = "IN_SYNC_REPLICAS_NOT_ENOUGH"
    PUT_TO_REMOTE_BROKER_FAIL = "PUT_TO_REMOTE_BROKER_FAIL"
    LMQ_CONSUME_QUEUE_NUM_EXCEEDED = "LMQ_CONSUME_QUEUE_NUM_EXCEEDED"
    WHEEL_TIMER_FLOW_CONTROL = "WHEEL_TIMER_FLOW_CONTROL"
    WHEEL_TIMER_MSG_ILLEGAL = "WHEEL_TIMER_MSG_ILLEGAL"
    WHEEL_TIMER_NOT_ENABLE = "WHEEL_TIMER_NOT_ENABLE"


class AppendMessageStatus(enum.Enum):
    """Java ``AppendMessageStatus``: outcome of one append into one MappedFile."""

    PUT_OK = "PUT_OK"
    END_OF_FILE = "END_OF_FILE"
    MESSAGE_SIZE_EXCEEDED = "MESSAGE_SIZE_EXCEEDED"
    PROPERTIES_SIZE_EXCEEDED = "PROPERTIES_SIZE_EXCEEDED"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"


class GetMessageStatus(enum.Enum):
    """Java ``GetMessageStatus``."""

    FOUND = "FOUND"
    NO_MATCHED_MESSAGE = "NO_MATCHED_MESSAGE"
    MESSAGE_WAS_REMOVING = "MESSAGE_WAS_REMOVING"
    OFFSET_FOUND_NULL = "OFFSET_FOUND_NULL"
    OFFSET_OVERFLOW_BADLY = "OFFSET_OVERFLOW_BADLY"
    OFFSET_OVERFLOW_ONE = "OFFSET_OVERFLOW_ONE"
    OFFSET_TOO_SMALL = "OFFSET_TOO_SMALL"
    NO_MATCHED_LOGIC_QUEUE = "NO_MATCHED_LOGIC_QUEUE"
    NO_MESSAGE_IN_QUEUE = "NO_MESSAGE_IN_QUEUE"
    OFFSET_RESET = "OFFSET_RESET"  # 5.x


@dataclass(slots=True)
class AppendMessageResult:
    """
    Where an append landed (Java ``AppendMessageResult``).

    :ivar wrote_offset: physical offset of the first record written.
    :ivar wrote_bytes: bytes written (all records of a batch).
    :ivar msg_id: offsetMsgId(s), comma-separated for a batch.
    :ivar logics_offset: queue offset of the first record.
    :ivar msg_num: number of records written.
    """

    status: AppendMessageStatus
    wrote_offset: int = 0
    wrote_bytes: int = 0
    msg_id_text: str | None = None
    store_timestamp: int = 0
    logics_offset: int = 0
    msg_num: int = 1
    page_cache_rt: float = 0.0
    #: with ``msg_id_text`` None, :attr:`msg_id` is made from this and :attr:`wrote_offset`
    store_host: tuple | None = None

    def is_ok(self) -> bool:
        return self.status is AppendMessageStatus.PUT_OK

    @property
    def msg_id(self) -> str:
        """The offsetMsgId (comma-separated for a batch), computed on first use."""
        if self.msg_id_text is None:
            if self.store_host is None:
                return ""
            self.msg_id_text = create_offset_msg_id(self.store_host[0], self.store_host[1], self.wrote_offset)
        return self.msg_id_text


@dataclass(slots=True)
class PutMessageResult:
    """
    Java ``PutMessageResult``.

    With SYNC_FLUSH and ``wait_store_msg_ok``, :attr:`status` is final once returned by
    :meth:`DefaultMessageStore.put_message`. :meth:`DefaultMessageStore.async_put_message`
    instead returns a result whose :attr:`flush_future` (the future of its group commit,
    shared with the other puts of the batch) resolves to the final status.
    """

    status: PutMessageStatus
    append_result: AppendMessageResult | None = None
    flush_future: GroupCommitRequest | None = field(default=None, repr=False)

    def is_ok(self) -> bool:
        return self.append_result is not None and self.append_result.is_ok() and \
            self.status is PutMessageStatus.PUT_OK


@dataclass(slots=True)
class GetMessageResult:
    """
    Java ``GetMessageResult``: the raw records found (each a ``bytes`` copy of one CommitLog
    record, ready to be concatenated into a PULL_MESSAGE body), the status and the offsets.
    """

    status: GetMessageStatus = GetMessageStatus.NO_MESSAGE_IN_QUEUE
    next_begin_offset: int = 0
    min_offset: int = 0
    max_offset: int = 0
    message_buffers: list = field(default_factory=list)
    message_queue_offsets: list = field(default_factory=list)
    buffer_total_size: int = 0
    suggest_pulling_from_slave: bool = False
    msg_count_4_commercial: int = 0

    @property
    def message_count(self) -> int:
        return len(self.message_buffers)

    def body(self) -> bytes:
        """The records laid end to end: a PULL_MESSAGE response body."""
        return b"".join(self.message_buffers)
