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

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any

from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IReactorTime

from rocketmq_tx.broker.holding import HeldRequest, RequestHoldService

__all__ = ["PopRequest", "PopLongPollingService"]


@dataclass(eq=False)
class PopRequest(HeldRequest):
    """One waiting POP: the request, its connection and the topics whose arrivals wake it."""

    topics: tuple[str, ...]
    timeout_ms: int
    #: when the wait ends (the clock's seconds), set by the first hold and kept by later ones
    deadline: float | None = None
    #: Java's polling key ``topic@group@queueId`` (POLLING_INFO counts by it)
    key: str = ""
    #: runs it again when woken (NOTIFICATION's processor); ``None``: the service's *execute* (POP)
    rerun: Callable[[PopRequest], Any] | None = None


class PopLongPollingService(RequestHoldService[PopRequest]):
    """Waiting POPs by topic (see :class:`~rocketmq_tx.broker.holding.RequestHoldService`)."""

    def __init__(self, clock: IReactorTime, execute: Callable[[PopRequest], Any], max_per_connection: int = 4096,
                 max_total: int = 65536, wake_slice: int = 256) -> None:
        super().__init__(clock, execute, max_per_connection, max_total, wake_slice)
        self._by_key: dict[str, int] = {}

    def index_keys(self, pr: PopRequest) -> Iterable[Hashable]:
        return pr.topics

    def polling_num(self, key: str) -> int:
        """How many POPs wait under polling key *key* (POLLING_INFO)."""
        return self._by_key.get(key, 0)

    def hold(self, pr: PopRequest) -> Deferred:
        """Wait until an arrival in one of *pr*'s topics or its deadline (a second hold keeps the first deadline)."""
        now = self.clock.seconds()
        if pr.deadline is None:
            pr.deadline = now + max(pr.timeout_ms, 0) / 1000.0
        self._by_key[pr.key] = self._by_key.get(pr.key, 0) + 1
        return self._park(pr, pr.deadline - now)

    def _remove(self, pr: PopRequest) -> bool:
        if not super()._remove(pr):
            return False
        left = self._by_key.pop(pr.key) - 1
        if left:
            self._by_key[pr.key] = left
        return True

    def _run(self, pr: PopRequest) -> Any:
        return (pr.rerun or self.execute)(pr)

    def notify_message_arriving(self, topic: str) -> None:
        """A message was stored in *topic*: run the POPs waiting on it, a slice per turn."""
        waiting = self.table.get(topic)
        if waiting:
            self._wake_all(waiting)
