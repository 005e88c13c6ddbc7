"""
The message store (Java ``rocketmq-store``), byte-compatible with Java's files: CommitLog,
ConsumeQueue, IndexFile, StoreCheckpoint, the ``abort`` marker and the config JSON files.

Standard library and :mod:`rocketmq_tx.common` only: no Twisted, no networking. Everything is
synchronous; the broker (or :class:`~rocketmq_tx.store.flush.StoreDriver`) drives the periodic
work. See docs/store-format.md for the layouts.
"""

from rocketmq_tx.store.checkpoint import StoreCheckpoint
from rocketmq_tx.store.commitlog import CommitLog, DispatchRequest, MessageExtBatch, MessageExtBrokerInner
from rocketmq_tx.store.config import BrokerRole, FlushDiskType, MessageStoreConfig
from rocketmq_tx.store.consumequeue import ConsumeQueue
from rocketmq_tx.store.flush import GroupCommitService, StoreDriver
from rocketmq_tx.store.index import IndexFile, IndexService
from rocketmq_tx.store.mappedfile import MappedFile, MappedFileQueue
from rocketmq_tx.store.reader import QueryMessageResult, TagsFilter
from rocketmq_tx.store.status import (
    AppendMessageResult,
    AppendMessageStatus,
    GetMessageResult,
    GetMessageStatus,
    PutMessageResult,
    PutMessageStatus,
)
from rocketmq_tx.store.store import DefaultMessageStore

__all__ = [
    "AppendMessageResult",
    "AppendMessageStatus",
    "BrokerRole",
    "CommitLog",
    "ConsumeQueue",
    "DefaultMessageStore",
    "DispatchRequest",
    "FlushDiskType",
    "GetMessageResult",
    "GetMessageStatus",
    "GroupCommitService",
    "IndexFile",
    "IndexService",
    "MappedFile",
    "MappedFileQueue",
    "MessageExtBatch",
    "MessageExtBrokerInner",
    "MessageStoreConfig",
    "PutMessageResult",
    "PutMessageStatus",
    "QueryMessageResult",
    "StoreCheckpoint",
    "StoreDriver",
    "TagsFilter",
]
