"""
Narrow capability Protocols of a message store (style guide §3.6). Broker processors depend
on the narrowest one they need; :class:`~rocketmq_tx.store.store.DefaultMessageStore`
implements all of them (``store/test/test_contract.py`` checks it).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from rocketmq_tx.common.message import MessageExt
from rocketmq_tx.store.commitlog import MessageExtBatch, MessageExtBrokerInner
from rocketmq_tx.store.status import GetMessageResult, PutMessageResult

__all__ = ["IMessageAppender", "IMessageReader", "IOffsetIndex", "IStoreLifecycle", "IMessageFilter"]


@runtime_checkable
class IMessageFilter(Protocol):
    def is_matched_by_consume_queue(self, tags_code: int) -> bool: ...


@runtime_checkable
class IMessageAppender(Protocol):
    def put_message(self, msg: MessageExtBrokerInner) -> PutMessageResult: ...

    def put_messages(self, batch: MessageExtBatch) -> PutMessageResult: ...


@runtime_checkable
class IMessageReader(Protocol):
    def get_message(self, group: str, topic: str, queue_id: int, offset: int, max_msg_nums: int,
                    message_filter: IMessageFilter | None = None) -> GetMessageResult: ...

    def look_message_by_offset(self, commit_log_offset: int, size: int | None = None) -> MessageExt | None: ...

    def query_message(self, topic: str, key: str, max_num: int, begin: int, end: int): ...


@runtime_checkable
class IOffsetIndex(Protocol):
    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int: ...

    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int: ...

    def get_offset_in_queue_by_time(self, topic: str, queue_id: int, timestamp: int) -> int: ...

    def get_earliest_message_time(self, topic: str | None = None, queue_id: int = 0) -> int: ...


@runtime_checkable
class IStoreLifecycle(Protocol):
    def load(self) -> bool: ...

    def start(self) -> None: ...

    def shutdown(self) -> None: ...
