# -*- test-case-name: rocketmq_tx.broker.test.test_metadata5 -*-
"""
``TopicRouteInfoManager`` (5.x): the queues of a topic across every broker, as the name servers
route it, for the broker's own allocation (QUERY_ASSIGNMENT). A topic's queues are asked for on
first use and again once they are older than ``loadBalancePollNameServerInterval`` (Java's
30 s refresh); while a name server does not answer, the last known queues stay in use.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from twisted.internet.defer import Deferred, succeed

from rocketmq_tx.common.message import MessageQueue
from rocketmq_tx.common.route import PermName, TopicRouteData

__all__ = ["TopicRouteInfoManager", "topic_subscribe_info"]

#: Java ``loadBalancePollNameServerInterval`` (ms).
POLL_INTERVAL_MS = 30_000
#: Topics remembered at most; the oldest goes first (Java keeps every topic ever asked).
MAX_TOPICS = 65_536


def topic_subscribe_info(topic: str, route: TopicRouteData) -> set[MessageQueue]:
    """Java ``topicRouteData2TopicSubscribeInfo``: every readable queue of every broker of the route."""
    return {MessageQueue(topic, qd.broker_name, i) for qd in route.queue_datas
            if PermName.is_readable(qd.perm) for i in range(qd.read_queue_nums)}


class TopicRouteInfoManager:
    """
    :param lookup: the route of a topic from the name servers: a Deferred firing with a
        :class:`~rocketmq_tx.common.route.TopicRouteData` or ``None`` (no route, no answer).
    :param now_ms: the clock.
    """

    def __init__(self, lookup: Callable[[str], Deferred] | None, now_ms: Callable[[], int]) -> None:
        self.lookup = lookup
        self.now_ms = now_ms
        self._table: dict[str, tuple[int, set[MessageQueue]]] = {}

    def get_topic_subscribe_info(self, topic: str) -> Deferred:
        """Fires with the topic's readable queues (a set, maybe empty) or ``None`` when it has no route."""
        cached = self._table.get(topic)
        if cached is not None and self.now_ms() - cached[0] < POLL_INTERVAL_MS:
            return succeed(set(cached[1]))
        if self.lookup is None:
            return succeed(None if cached is None else set(cached[1]))
        return self.lookup(topic).addCallback(self._update, topic)

    def _update(self, route: TopicRouteData | None, topic: str) -> set[MessageQueue] | None:
        if route is None:
            cached = self._table.get(topic)
            return None if cached is None else set(cached[1])
        queues = topic_subscribe_info(topic, route)
        self._table.pop(topic, None)
        if not queues:
            # Java asks again next time for a topic with no readable queue.
            return queues
        self._table[topic] = (self.now_ms(), queues)
        while len(self._table) > MAX_TOPICS:
            del self._table[next(iter(self._table))]
        return set(queues)

    def forget(self, topic: Any) -> None:
        self._table.pop(topic, None)
