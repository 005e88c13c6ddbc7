# -*- test-case-name: rocketmq_tx.client.test.test_push,rocketmq_tx.client.test.test_litepull -*-
"""
Which queues of its topics a consumer group member takes, and the brokers' locks on them
(orderly consumption): Java's ``RebalanceImpl`` minus the process-queue bookkeeping, shared
by :class:`~rocketmq_tx.client.rebalancepush.RebalancePushImpl` (the push consumer) and the
subscribe mode of :class:`~rocketmq_tx.client.litepull.LitePullConsumer`.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterable
from typing import Any, TypeVar

from twisted.internet.defer import Deferred
from twisted.logger import Logger

from rocketmq_tx.client.instance import MQClientInstance
from rocketmq_tx.common.clientroute import subscribe_queues
from rocketmq_tx.common.message import MessageQueue
from rocketmq_tx.common.route import TopicRouteData
from rocketmq_tx.remoting import RemotingCommand, api, sendapi

__all__ = ["RebalanceImpl", "Strategy"]

log = Logger()
T = TypeVar("T")

#: ``allocate(client_id, all_queues, all_client_ids) -> our queues`` (rocketmq_tx.common.rebalance)
Strategy = Callable[[str, list[MessageQueue], list[str]], list[MessageQueue]]
#: ``lock_batch_request`` or ``unlock_batch_request`` of :mod:`rocketmq_tx.remoting.api`
_BatchRequest = Callable[[str, str, Iterable[MessageQueue]], RemotingCommand]


class RebalanceImpl:
    """
    :param instance: the client instance (routes, heartbeats, broker calls).
    :param strategy: one of :data:`rocketmq_tx.common.rebalance.STRATEGIES`.
    """

    def __init__(self, instance: MQClientInstance, group: str, strategy: Strategy) -> None:
        self.instance = instance
        self.group = group
        self.strategy = strategy
        self._announced = False
        self._running: Deferred[None] | None = None

    def run(self, rebalance: Callable[[], Coroutine[Any, Any, None]]) -> Deferred[None]:
        """
        Run *rebalance* unless one is in progress, whose Deferred is then returned (a
        periodic rebalance and a broker's notification may coincide); failures are logged.
        """
        if self._running is not None:
            return self._running
        self._running = d = Deferred.fromCoroutine(rebalance())

        def done(result: object) -> None:
            self._running = None

        d.addErrback(lambda f: log.warn("rebalance of {group} failed: {error}", group=self.group,
                                        error=f.getErrorMessage()))
        d.addBoth(done)
        return d

    async def allocate(self, topics: Iterable[str], *, broadcasting: bool = False,
                       owned: Iterable[MessageQueue] = ()) -> set[MessageQueue]:
        """
        The queues this member should own now: every readable queue of *topics* when
        *broadcasting*, else its share among the group's members as the brokers list them.
        A topic without a route or whose member list cannot be read keeps the queues of
        *owned* it has, as Java's ``rebalanceByTopic`` leaves a topic alone then: a slow
        broker must not make every member drop its queues (and a reset offset meant for
        them) until the next rebalance.
        """
        topics = list(topics)
        owned = list(owned)
        routes: dict[str, TopicRouteData] = {}
        for topic in topics:
            await self._route(routes, topic, self.instance.route)
        if not self._announced:
            # The brokers list us among the group's members only after a heartbeat, which
            # also makes them create our %RETRY% topic: fetch the routes that were missing.
            await self.instance.send_heartbeat_to_all_brokers()
            self._announced = True
            for topic in [t for t in topics if t not in routes]:
                await self._route(routes, topic, self.instance.update_route)
        wanted: set[MessageQueue] = set()
        for topic in topics:
            route = routes.get(topic)
            if route is None:
                wanted.update(mq for mq in owned if mq.topic == topic)
                continue
            mq_all = subscribe_queues(topic, route)
            if broadcasting or not mq_all:
                wanted.update(mq_all)
                continue
            cid_all = await self.consumer_ids(mq_all[0])
            if cid_all is None:
                wanted.update(mq for mq in owned if mq.topic == topic)
            else:
                wanted.update(self.strategy(self.instance.client_id, mq_all, cid_all))
        return wanted

    async def _route(self, routes: dict[str, TopicRouteData], topic: str,
                     fetch: Callable[[str], Deferred[Any]]) -> None:
        try:
            routes[topic] = await fetch(topic)
        except Exception as e:
            log.warn("no route for {topic}: {error}", topic=topic, error=e)

    async def consumer_ids(self, mq: MessageQueue) -> list[str] | None:
        """GET_CONSUMER_LIST_BY_GROUP from *mq*'s broker (a slave while the master is down,
        another broker of the topic while it has no address); ``None`` when none answers."""
        try:
            response = await self.instance.run(sendapi.topic_broker_call(
                self.instance.route_table, mq, api.consumer_list_request(self.group), self.instance.timeout))
            return api.parse_consumer_list_response(response)
        except Exception as e:
            log.warn("consumer list of {group} failed: {error}", group=self.group, error=e)
            return None

    # ------------------------------------------------------------ orderly locks
    async def lock(self, mqs: Iterable[MessageQueue]) -> set[MessageQueue]:
        """LOCK_BATCH_MQ to each queue's broker; the queues now locked by us."""
        locked: set[MessageQueue] = set()
        for mine in await self._per_broker(mqs, api.lock_batch_request, api.parse_lock_batch_response, "lock"):
            locked |= mine
        return locked

    async def unlock(self, mqs: Iterable[MessageQueue]) -> None:
        """UNLOCK_BATCH_MQ to each queue's broker (a dropped queue, a consumer stopping)."""
        await self._per_broker(mqs, api.unlock_batch_request, api.check_response, "unlock")

    async def _per_broker(self, mqs: Iterable[MessageQueue], build: _BatchRequest,
                          parse: Callable[[RemotingCommand], T], what: str) -> list[T]:
        # One request per broker, in turn; a broker that fails is logged and left out.
        mqs = list(mqs)
        results: list[T] = []
        for broker_name in sorted({mq.broker_name for mq in mqs}):
            mine = [mq for mq in mqs if mq.broker_name == broker_name]
            try:
                response = await self.instance.invoke_broker(mine[0], build(self.group, self.instance.client_id, mine))
                results.append(parse(response))
            except Exception as e:
                log.warn("{what} of {n} queues on {broker} failed: {error}", what=what, n=len(mine),
                         broker=broker_name, error=e)
        return results
