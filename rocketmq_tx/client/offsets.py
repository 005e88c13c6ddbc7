# -*- test-case-name: rocketmq_tx.client.test.test_push,rocketmq_tx.client.test.test_litepull -*-
"""
A consumer group's committed offsets, one interface, two places (Java's ``OffsetStore``):
:class:`RemoteBrokerOffsetStore` (Java's ``RemoteBrokerOffsetStore``, clustering: on the
brokers, QUERY_CONSUMER_OFFSET and UPDATE_CONSUMER_OFFSET) and :class:`LocalFileOffsetStore`
(Java's ``LocalFileOffsetStore``, broadcasting: the file of
:class:`~rocketmq_tx.client.offsetstore.LocalOffsetStore`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from twisted.internet.defer import Deferred, DeferredList, succeed
from twisted.python.failure import Failure

from rocketmq_tx.client.instance import MQClientInstance
from rocketmq_tx.client.offsetstore import LocalOffsetStore
from rocketmq_tx.common.message import MessageQueue
from rocketmq_tx.remoting import api, sendapi

__all__ = ["OffsetStore", "RemoteBrokerOffsetStore", "LocalFileOffsetStore", "Failures"]

#: queue -> why its commit failed
Failures = dict[MessageQueue, Failure]


class OffsetStore(Protocol):
    """
    :ivar committed: queue -> the offset last committed.
    """

    committed: dict[MessageQueue, int]

    def read(self, mq: MessageQueue) -> Deferred[int | None]:
        """The committed offset of *mq*, ``None`` when the group has none."""

    def commit_all(self, offsets: Mapping[MessageQueue, int], *, oneway: bool = False,
                   changed_only: bool = True) -> Deferred[Failures]:
        """
        Commit *offsets* (skipping those already committed when *changed_only*); fires,
        once every commit is done, with the failures.
        """


class RemoteBrokerOffsetStore:
    """The group's offsets on the brokers, one UPDATE_CONSUMER_OFFSET per queue committed."""

    def __init__(self, instance: MQClientInstance, group: str) -> None:
        self.instance = instance
        self.group = group
        self.committed: dict[MessageQueue, int] = {}

    def read(self, mq: MessageQueue) -> Deferred[int | None]:
        request = api.query_consumer_offset_request(self.group, mq)
        # To the master, or while the route has none to its slave (Java's RemoteBrokerOffsetStore).
        return self.instance.run(sendapi.offset_call(self.instance.route_table, mq, request)).addCallback(
            api.parse_query_consumer_offset_response)

    async def commit(self, mq: MessageQueue, offset: int, *, oneway: bool = False) -> None:
        """UPDATE_CONSUMER_OFFSET, answered (raising what went wrong) or *oneway* (Java's periodic commits)."""
        request = api.update_consumer_offset_request(self.group, mq, offset, oneway=oneway)
        response = await self.instance.run(sendapi.offset_call(self.instance.route_table, mq, request, oneway=oneway))
        if response is not None:  # None answers a oneway call
            api.check_response(response)
        self.committed[mq] = offset

    def commit_all(self, offsets: Mapping[MessageQueue, int], *, oneway: bool = False,
                   changed_only: bool = True) -> Deferred[Failures]:
        todo = sorted((mq, offset) for mq, offset in offsets.items()
                      if not changed_only or self.committed.get(mq) != offset)
        calls = [Deferred.fromCoroutine(self.commit(mq, offset, oneway=oneway)) for mq, offset in todo]

        def failures(results: Sequence[tuple[bool, object]]) -> Failures:
            return {mq: value for (mq, _offset), (_ok, value) in zip(todo, results) if isinstance(value, Failure)}

        return DeferredList(calls, consumeErrors=True).addCallback(failures)


class LocalFileOffsetStore:
    """The same over one consumer's local file, written whole at each commit (of every offset given)."""

    def __init__(self, directory: Path | str, client_id: str, group: str) -> None:
        self.file = LocalOffsetStore(directory, client_id, group)
        self.committed: dict[MessageQueue, int] = {}

    def read(self, mq: MessageQueue) -> Deferred[int | None]:
        return succeed(self.file.read(mq))

    def commit_all(self, offsets: Mapping[MessageQueue, int], *, oneway: bool = False,
                   changed_only: bool = True) -> Deferred[Failures]:
        for mq, offset in offsets.items():
            self.file.update(mq, offset)
        try:
            self.file.persist()
        except OSError:
            failure = Failure()
            return succeed({mq: failure for mq in offsets})
        self.committed.update(offsets)
        return succeed({})
