# -*- test-case-name: rocketmq_tx.broker.test.test_pull,rocketmq_tx.broker.test.test_pop -*-
"""
What long polling of pulls (:mod:`.longpolling`) and of POPs (:mod:`.pop.polling`) share:
requests parked until an arrival or their timeout, indexed by what wakes them, bounded per
connection and in all, woken a slice per reactor turn (one send woke 50,000 pulls in a 2.3 s
stall before the slices), forgotten with their connection.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IDelayedCall, IReactorTime

__all__ = ["HeldRequest", "RequestHoldService"]

_ABSENT = object()


@dataclass(eq=False)
class HeldRequest:
    """A parked request and its connection (the fields after these are the kind's own)."""

    request: Any
    channel: Hashable
    deferred: Deferred = field(default_factory=Deferred, kw_only=True)
    timer: IDelayedCall | None = field(default=None, kw_only=True)
    #: woken by its timer, not by an arrival
    timed_out: bool = field(default=False, kw_only=True)
    #: when an arrival woke it (clock seconds), while it waits for its slice
    woken_at: float = field(default=0.0, kw_only=True)


R = TypeVar("R", bound=HeldRequest)


class RequestHoldService(Generic[R]):
    """
    :param clock: schedules the timeouts and the wake-up slices.
    :param execute: re-runs a woken request without parking it and returns the response
        (or the request's own Deferred when it parked it again).
    :param max_per_connection: requests one connection may park; beyond it, and beyond
        *max_total*, :meth:`can_hold` says no (the processor answers as Java does when full).
    :param wake_slice: requests answered per reactor turn when many wake at once.
    :ivar table: index key -> the requests it wakes (insertion-ordered dicts as sets: O(1)
        removal, arrival order kept).
    """

    def __init__(self, clock: IReactorTime, execute: Callable[[R], Any], max_per_connection: int = 4096,
                 max_total: int = 65536, wake_slice: int = 256) -> None:
        self.clock = clock
        self.execute = execute
        self.max_per_connection = max_per_connection
        self.max_total = max_total
        self.wake_slice = wake_slice
        self.table: dict[Hashable, dict[R, None]] = {}
        self._by_channel: dict[Hashable, dict[R, None]] = {}
        self._held = 0
        self._waking: deque[R] = deque()
        self._draining = False
        self._drain_call: IDelayedCall | None = None

    def index_keys(self, pr: R) -> Iterable[Hashable]:
        """The keys whose arrivals wake *pr*."""
        raise NotImplementedError

    def held(self) -> int:
        return self._held

    def can_hold(self, channel: Hashable) -> bool:
        """Whether one more request of *channel* may be parked."""
        if self._held >= self.max_total:
            return False
        mine = self._by_channel.get(channel)
        return mine is None or len(mine) < self.max_per_connection

    def _park(self, pr: R, delay: float) -> Deferred:
        for key in self.index_keys(pr):
            self.table.setdefault(key, {})[pr] = None
        self._by_channel.setdefault(pr.channel, {})[pr] = None
        self._held += 1
        pr.timer = self.clock.callLater(max(delay, 0), self._timed_out, pr)
        return pr.deferred

    def _remove(self, pr: R) -> bool:
        mine = self._by_channel.get(pr.channel)
        if mine is None or mine.pop(pr, _ABSENT) is _ABSENT:
            return False
        if not mine:
            del self._by_channel[pr.channel]
        for key in self.index_keys(pr):
            waiting = self.table.get(key)
            if waiting is not None:
                waiting.pop(pr, None)
                if not waiting:
                    del self.table[key]
        self._held -= 1
        if pr.timer is not None and pr.timer.active():
            pr.timer.cancel()
        return True

    def _run(self, pr: R) -> Any:
        return self.execute(pr)

    def _wake(self, pr: R) -> None:
        try:
            response = self._run(pr)
        except Exception as e:  # the dispatcher's errback turns this into SYSTEM_ERROR
            pr.deferred.errback(e)
            return
        if response is pr.deferred:  # parked again by the processor
            return
        pr.deferred.callback(response)

    def _timed_out(self, pr: R) -> None:
        if self._remove(pr):
            pr.timed_out = True
            self._wake(pr)

    def _wake_all(self, ready: Iterable[R]) -> None:
        """Unpark *ready* and answer them, a slice per reactor turn."""
        ready = list(ready)
        now = self.clock.seconds()
        for pr in ready:
            self._remove(pr)
            pr.woken_at = now
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

    def waking(self) -> int:
        """Woken requests waiting for their slice (Java would have queued them for its pool)."""
        return len(self._waking)

    def waking_head_wait_ms(self) -> int:
        """How long the first of :meth:`waking` has waited; 0 when none waits."""
        if not self._waking:
            return 0
        return max(0, int((self.clock.seconds() - self._waking[0].woken_at) * 1000))

    def drop_channel(self, channel: Hashable) -> int:
        """The connection closed: forget its parked requests (nobody is left to answer)."""
        mine = self._by_channel.get(channel)
        if not mine:
            return 0
        dropped = list(mine)
        for pr in dropped:
            self._remove(pr)
            pr.deferred.callback(None)
        return len(dropped)

    def shutdown(self) -> None:
        for pr in [pr for mine in self._by_channel.values() for pr in mine]:
            self._remove(pr)
            pr.deferred.callback(None)
        while self._waking:
            self._waking.popleft().deferred.callback(None)
        if self._drain_call is not None and self._drain_call.active():
            self._drain_call.cancel()
        self._drain_call = None
