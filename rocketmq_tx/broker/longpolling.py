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

from collections import deque
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IDelayedCall, IReactorTime

__all__ = ["PullRequest", "PullRequestHoldService", "OVERLOAD_REMARK"]

#: Java's answer when a request cannot be queued (its pull pool is full): SYSTEM_BUSY.
OVERLOAD_REMARK = "[OVERLOAD]system busy, start flow control for a while"
_ABSENT = object()


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
    :param clock: schedules the suspend timeouts and the wake-up slices.
    :param execute: re-runs a parked request without suspension and returns the response
        (Java ``executeRequestWhenWakeup``).
    :param max_per_connection: parked pulls one connection may have (``maxHeldPullsPerConnection``);
        beyond it, and beyond *max_total*, :meth:`can_hold` says no and the pull is answered
        SYSTEM_BUSY, as Java answers when its pull pool is full. One connection parking
        50,000 pulls otherwise held 137 MB.
    :param wake_slice: pulls answered per reactor turn when many wake at once (one send
        woke 50,000 in a 2.3 s stall); the rest follow in the next turns.
    """

    def __init__(self, clock: IReactorTime, execute: Callable[[PullRequest], Any], max_per_connection: int = 4096,
                 max_total: int = 65536, wake_slice: int = 256) -> None:
        self.clock = clock
        self.execute = execute
        self.max_per_connection = max_per_connection
        self.max_total = max_total
        self.wake_slice = wake_slice
        # Insertion-ordered dicts as sets: removal is O(1) and wake order is arrival order.
        self.table: dict[tuple[str, int], dict[PullRequest, None]] = {}
        self._by_channel: dict[Hashable, dict[PullRequest, None]] = {}
        self._held = 0
        self._waking: deque[PullRequest] = deque()
        self._draining = False
        self._drain_call: IDelayedCall | None = None
        #: ``(topic, queue_id, offset) -> properties`` of a stored message, for held pulls whose
        #: filter checks properties (SQL92; Java's listener is handed them by the dispatch).
        self.properties_at: Callable[[str, int, int], Mapping[str, str] | None] | None = None

    def can_hold(self, channel: Hashable) -> bool:
        """Whether one more pull of *channel* may be parked."""
        if self._held >= self.max_total:
            return False
        mine = self._by_channel.get(channel)
        return mine is None or len(mine) < self.max_per_connection

    def suspend_pull_request(self, pr: PullRequest) -> Deferred:
        self.table.setdefault((pr.topic, pr.queue_id), {})[pr] = None
        self._by_channel.setdefault(pr.channel, {})[pr] = None
        self._held += 1
        pr.timer = self.clock.callLater(max(pr.timeout_ms, 0) / 1000.0, self._timed_out, pr)
        return pr.deferred

    def held(self) -> int:
        return self._held

    def _remove(self, pr: PullRequest) -> bool:
        key = (pr.topic, pr.queue_id)
        requests = self.table.get(key)
        if not requests or requests.pop(pr, _ABSENT) is _ABSENT:
            return False
        if not requests:
            del self.table[key]
        mine = self._by_channel.get(pr.channel)
        if mine is not None:
            mine.pop(pr, None)
            if not mine:
                del self._by_channel[pr.channel]
        self._held -= 1
        if pr.timer is not None and pr.timer.active():
            pr.timer.cancel()
        return True

    def _wake(self, pr: PullRequest) -> None:
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
        for pr in ready:
            self._remove(pr)
        self._waking.extend(ready)
        self._drain()

    def _drain(self) -> None:
        self._drain_call = None
        if self._draining:  # a wake's callbacks stored a message: the running drain goes on
            return
        self._draining = True
        try:
            waking = self._waking
            for _ in range(min(self.wake_slice, len(waking))):
                self._wake(waking.popleft())
        finally:
            self._draining = False
        if self._waking and self._drain_call is None:
            self._drain_call = self.clock.callLater(0, self._drain)

    def drop_channel(self, channel: Hashable) -> int:
        """The connection closed: forget its parked pulls (nobody is left to answer)."""
        mine = self._by_channel.get(channel)
        if not mine:
            return 0
        dropped = list(mine)
        for pr in dropped:
            self._remove(pr)
            pr.deferred.callback(None)
        return len(dropped)

    def shutdown(self) -> None:
        for requests in list(self.table.values()):
            for pr in list(requests):
                self._remove(pr)
                pr.deferred.callback(None)
        while self._waking:
            self._waking.popleft().deferred.callback(None)
        if self._drain_call is not None and self._drain_call.active():
            self._drain_call.cancel()
        self._drain_call = None
