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

from dataclasses import dataclass, field
from typing import Any, Callable, Hashable

from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IDelayedCall, IReactorTime

__all__ = ["PullRequest", "PullRequestHoldService"]


@dataclass(eq=False)
class PullRequest:
    """One parked pull: the original request and connection, and where it reads from."""

    request: Any
    channel: Hashable
    topic: str
    queue_id: int
    pull_from_this_offset: int
    timeout_ms: int
    message_filter: Any = None
    deferred: Deferred = field(default_factory=Deferred)
    timer: IDelayedCall | None = None


class PullRequestHoldService:
    """
    :param clock: schedules the suspend timeouts.
    :param execute: re-runs a parked request without suspension and returns the response
        (Java ``executeRequestWhenWakeup``).
    """

    def __init__(self, clock: IReactorTime, execute: Callable[[PullRequest], Any]) -> None:
        self.clock = clock
        self.execute = execute
        self.table: dict[tuple[str, int], list[PullRequest]] = {}

    def suspend_pull_request(self, pr: PullRequest) -> Deferred:
        self.table.setdefault((pr.topic, pr.queue_id), []).append(pr)
        pr.timer = self.clock.callLater(max(pr.timeout_ms, 0) / 1000.0, self._timed_out, pr)
        return pr.deferred

    def held(self) -> int:
        return sum(len(v) for v in self.table.values())

    def _remove(self, pr: PullRequest) -> bool:
        key = (pr.topic, pr.queue_id)
        requests = self.table.get(key)
        if not requests or pr not in requests:
            return False
        requests.remove(pr)
        if not requests:
            del self.table[key]
        return True

    def _wake(self, pr: PullRequest) -> None:
        if pr.timer is not None and pr.timer.active():
            pr.timer.cancel()
        try:
            response = self.execute(pr)
        except Exception as e:  # the dispatcher's errback turns this into SYSTEM_ERROR
            pr.deferred.errback(e)
            return
        pr.deferred.callback(response)

    def _timed_out(self, pr: PullRequest) -> None:
        if self._remove(pr):
            self._wake(pr)

    def notify_message_arriving(self, topic: str, queue_id: int, max_offset: int,
                                tags_code: int | None = None) -> None:
        """A message was stored: answer the parked pulls it satisfies."""
        requests = self.table.get((topic, queue_id))
        if not requests:
            return
        ready = []
        for pr in requests:
            if max_offset <= pr.pull_from_this_offset:
                continue
            flt = pr.message_filter
            if tags_code is not None and flt is not None and not flt.is_matched_by_consume_queue(tags_code):
                continue
            ready.append(pr)
        for pr in ready:
            self._remove(pr)
            self._wake(pr)

    def drop_channel(self, channel: Hashable) -> int:
        """The connection closed: forget its parked pulls (nobody is left to answer)."""
        dropped = 0
        for key, requests in list(self.table.items()):
            for pr in [p for p in requests if p.channel is channel]:
                self._remove(pr)
                if pr.timer is not None and pr.timer.active():
                    pr.timer.cancel()
                pr.deferred.callback(None)
                dropped += 1
        return dropped

    def shutdown(self) -> None:
        for requests in list(self.table.values()):
            for pr in list(requests):
                self._remove(pr)
                if pr.timer is not None and pr.timer.active():
                    pr.timer.cancel()
                pr.deferred.callback(None)
