# -*- test-case-name: rocketmq_tx.broker.test.test_pop -*-
"""
``PopLongPollingService``: POP requests that found nothing wait here until a message is
stored in their topic (or its POP retry topic) or their poll time passes; then they are
run again: one woken by an arrival that still finds nothing (another consumer took it, a
filter dropped it) waits again until the same deadline; a timed-out one is answered
POLLING_TIMEOUT by the processor.

Bounded as the pull holds are: per connection and in all (beyond, POLLING_FULL, as Java
answers when its polling map is full); wakes go out a slice per reactor turn.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IDelayedCall, IReactorTime

__all__ = ["PopRequest", "PopLongPollingService"]


@dataclass(eq=False)
class PopRequest:
    """One waiting POP: the request, its connection and the topics whose arrivals wake it."""

    request: Any
    channel: Hashable
    topics: tuple[str, ...]
    timeout_ms: int
    deferred: Deferred = field(default_factory=Deferred)
    timer: IDelayedCall | None = None
    #: when the wait ends (the clock's seconds), set by the first hold and kept by later ones
    deadline: float | None = None
    #: woken by its timer (answered then), not by an arrival (which may wait again)
    timed_out: bool = False
    #: Java's polling key ``topic@group@queueId`` (POLLING_INFO counts by it)
    key: str = ""
    #: runs it again when woken (NOTIFICATION's processor); ``None``: the service's *execute* (POP)
    rerun: Callable[[PopRequest], Any] | None = None


class PopLongPollingService:
    """
    :param execute: re-runs a woken request without waiting; returns its response.
    """

    def __init__(self, clock: IReactorTime, execute: Callable[[PopRequest], Any], max_per_connection: int = 4096,
                 max_total: int = 65536, wake_slice: int = 256) -> None:
        self.clock = clock
        self.execute = execute
        self.max_per_connection = max_per_connection
        self.max_total = max_total
        self.wake_slice = wake_slice
        self.by_topic: dict[str, dict[PopRequest, None]] = {}
        self._by_channel: dict[Hashable, dict[PopRequest, None]] = {}
        self._held = 0
        self._by_key: dict[str, int] = {}
        self._waking: deque[PopRequest] = deque()
        self._drain_call: IDelayedCall | None = None

    def held(self) -> int:
        return self._held

    def polling_num(self, key: str) -> int:
        """How many POPs wait under polling key *key* (POLLING_INFO)."""
        return self._by_key.get(key, 0)

    def can_hold(self, channel: Hashable) -> bool:
        """Whether one more POP of *channel* may wait."""
        if self._held >= self.max_total:
            return False
        mine = self._by_channel.get(channel)
        return mine is None or len(mine) < self.max_per_connection

    def hold(self, pr: PopRequest) -> Deferred:
        """Wait until an arrival in one of *pr*'s topics or its deadline (a second hold keeps the first deadline)."""
        now = self.clock.seconds()
        if pr.deadline is None:
            pr.deadline = now + max(pr.timeout_ms, 0) / 1000.0
        for topic in pr.topics:
            self.by_topic.setdefault(topic, {})[pr] = None
        self._by_channel.setdefault(pr.channel, {})[pr] = None
        self._held += 1
        self._by_key[pr.key] = self._by_key.get(pr.key, 0) + 1
        pr.timer = self.clock.callLater(max(pr.deadline - now, 0), self._timed_out, pr)
        return pr.deferred

    def _remove(self, pr: PopRequest) -> bool:
        mine = self._by_channel.get(pr.channel)
        if mine is None or mine.pop(pr, False) is False:
            return False
        if not mine:
            del self._by_channel[pr.channel]
        for topic in pr.topics:
            waiting = self.by_topic.get(topic)
            if waiting is not None:
                waiting.pop(pr, None)
                if not waiting:
                    del self.by_topic[topic]
        self._held -= 1
        left = self._by_key.pop(pr.key) - 1
        if left:
            self._by_key[pr.key] = left
        if pr.timer is not None and pr.timer.active():
            pr.timer.cancel()
        return True

    def _wake(self, pr: PopRequest) -> None:
        try:
            response = (pr.rerun or self.execute)(pr)
        except Exception as e:  # the dispatcher's errback turns this into SYSTEM_ERROR
            pr.deferred.errback(e)
            return
        if response is pr.deferred:  # it waits again (held anew by the processor)
            return
        pr.deferred.callback(response)

    def _timed_out(self, pr: PopRequest) -> None:
        if self._remove(pr):
            pr.timed_out = True
            self._wake(pr)

    def notify_message_arriving(self, topic: str) -> None:
        """A message was stored in *topic*: run the POPs waiting on it, a slice per turn."""
        waiting = self.by_topic.get(topic)
        if not waiting:
            return
        ready = list(waiting)
        for pr in ready:
            self._remove(pr)
        self._waking.extend(ready)
        self._drain()

    def _drain(self) -> None:
        self._drain_call = None
        for _ in range(min(self.wake_slice, len(self._waking))):
            self._wake(self._waking.popleft())
        if self._waking and self._drain_call is None:
            self._drain_call = self.clock.callLater(0, self._drain)

    def drop_channel(self, channel: Hashable) -> int:
        """The connection closed: forget its waiting POPs."""
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
