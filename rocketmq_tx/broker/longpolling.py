# -*- test-case-name: rocketmq_tx.broker.test.test_pull -*-
"""
``PullRequestHoldService``: long polling. A pull that finds nothing and carries the
suspend flag is parked here until a message arrives for its queue (answered at once) or
its suspend time passes (answered with whatever the queue then holds).

Java polls the parked requests every 5 s and is woken by the store's dispatch; here each
request has its own timer on the injected clock and the broker calls
:meth:`notify_message_arriving` after every put, so answers go out as soon as possible.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IReactorTime

from rocketmq_tx.broker.holding import HeldRequest, RequestHoldService

__all__ = ["PullRequest", "PullRequestHoldService", "OVERLOAD_REMARK"]

#: Java's answer when a request cannot be queued (its pull pool is full): SYSTEM_BUSY.
OVERLOAD_REMARK = "[OVERLOAD]system busy, start flow control for a while"
_ABSENT = object()


@dataclass(eq=False)
class PullRequest(HeldRequest):
    """One parked pull: the original request and connection, and where it reads from."""

    topic: str
    queue_id: int
    pull_from_this_offset: int
    timeout_ms: int
    message_filter: Any = None


class PullRequestHoldService(RequestHoldService[PullRequest]):
    """
    Parked pulls by ``(topic, queue_id)``; see :class:`~rocketmq_tx.broker.holding.RequestHoldService`
    for the bounds (``maxHeldPullsPerConnection``, ``maxHeldPulls``: beyond them the pull is
    answered SYSTEM_BUSY, as Java answers when its pull pool is full; one connection parking
    50,000 pulls otherwise held 137 MB).
    """

    def __init__(self, clock: IReactorTime, execute: Callable[[PullRequest], Any], max_per_connection: int = 4096,
                 max_total: int = 65536, wake_slice: int = 256) -> None:
        super().__init__(clock, execute, max_per_connection, max_total, wake_slice)
        #: ``(topic, queue_id, offset) -> properties`` of a stored message, for held pulls whose
        #: filter checks properties (SQL92; Java's listener is handed them by the dispatch).
        self.properties_at: Callable[[str, int, int], Mapping[str, str] | None] | None = None

    def index_keys(self, pr: PullRequest) -> Iterable[Hashable]:
        return ((pr.topic, pr.queue_id),)

    def suspend_pull_request(self, pr: PullRequest) -> Deferred:
        return self._park(pr, pr.timeout_ms / 1000.0)

    def notify_message_arriving(self, topic: str, queue_id: int, max_offset: int,
                                tags_code: int | None = None) -> None:
        """A message was stored: answer the parked pulls it satisfies, a slice per reactor turn."""
        requests = self.table.get((topic, queue_id))
        if not requests:
            return
        ready = []
        properties: Mapping[str, str] | None | object = _ABSENT
        for pr in requests:
            if max_offset <= pr.pull_from_this_offset:
                continue
            flt = pr.message_filter
            if tags_code is not None and flt is not None and not flt.is_matched_by_consume_queue(tags_code):
                continue
            by_log = getattr(flt, "is_matched_by_commit_log", None)
            if by_log is not None and self.properties_at is not None:
                # SQL92: only a message that matches wakes the pull (read once per arrival).
                if properties is _ABSENT:
                    properties = self.properties_at(topic, queue_id, max_offset - 1)
                if not by_log(properties):
                    continue
            ready.append(pr)
        self._wake_all(ready)
