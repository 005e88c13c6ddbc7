# -*- test-case-name: rocketmq_tx.client.test.test_push -*-
"""
Which queues of its topics a consumer group member takes: Java's ``RebalanceImpl`` minus
the process-queue bookkeeping, shared by :class:`~rocketmq_tx.client.push.PushConsumer`
and the subscribe mode of :class:`~rocketmq_tx.client.litepull.LitePullConsumer`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from twisted.internet.defer import Deferred, inlineCallbacks
from twisted.logger import Logger
from zope.interface import implementer

from rocketmq_tx.common.clientroute import subscribe_queues
from rocketmq_tx.common.message import MessageQueue
from rocketmq_tx.net.dispatch import IRemotingContext, IRequestProcessor
from rocketmq_tx.remoting import RemotingCommand, api

__all__ = ["RebalanceImpl", "IdsChangedProcessor"]

log = Logger()

#: ``allocate(client_id, all_queues, all_client_ids) -> our queues`` (rocketmq_tx.common.rebalance)
Strategy = Callable[[str, list[MessageQueue], list[str]], list[MessageQueue]]


class RebalanceImpl:
    """
    :param instance: the client instance (routes, heartbeats, broker calls).
    :param strategy: one of :data:`rocketmq_tx.common.rebalance.STRATEGIES`.
    """

    def __init__(self, instance: Any, group: str, strategy: Strategy) -> None:
        self.instance = instance
        self.group = group
        self.strategy = strategy
        self._announced = False
        self._running: Deferred | None = None

    def run(self, rebalance: Callable[[], Deferred]) -> Deferred:
        """
        Run *rebalance* unless one is in progress, whose Deferred is then returned (a
        periodic rebalance and a broker's notification may coincide); failures are logged.
        """
        if self._running is not None:
            return self._running
        self._running = d = rebalance()

        def done(result: object) -> None:
            self._running = None

        d.addErrback(lambda f: log.warn("rebalance of {group} failed: {error}", group=self.group,
                                        error=f.getErrorMessage()))
        d.addBoth(done)
        return d

    @inlineCallbacks
    def allocate(self, topics: Iterable[str], *, broadcasting: bool = False,  # type: ignore[no-untyped-def]
                 owned: Iterable[MessageQueue] = ()):
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

        def keep(topic: str) -> set[MessageQueue]:
            return {mq for mq in owned if mq.topic == topic}

        routes = {}
        for topic in topics:
            try:
                routes[topic] = yield self.instance.route(topic)
            except Exception as e:
                log.warn("no route for {topic}: {error}", topic=topic, error=e)
        if not self._announced:
            # The brokers list us among the group's members only after a heartbeat, which
            # also makes them create our %RETRY% topic: fetch the routes that were missing.
            yield self.instance.send_heartbeat_to_all_brokers()
            self._announced = True
            for topic in [t for t in topics if t not in routes]:
                try:
                    routes[topic] = yield self.instance.update_route(topic)
                except Exception as e:
                    log.warn("no route for {topic}: {error}", topic=topic, error=e)
        wanted: set[MessageQueue] = set()
        for topic in topics:
            route = routes.get(topic)
            if route is None:
                wanted |= keep(topic)
                continue
            mq_all = subscribe_queues(topic, route)
            if not mq_all:
                continue
            if broadcasting:
                wanted.update(mq_all)
                continue
            cid_all = yield self.consumer_ids(mq_all[0])
            if cid_all is None:
                wanted |= keep(topic)
            else:
                wanted.update(self.strategy(self.instance.client_id, mq_all, cid_all))
        return wanted

    @inlineCallbacks
    def consumer_ids(self, mq: MessageQueue):  # type: ignore[no-untyped-def]
        """GET_CONSUMER_LIST_BY_GROUP from *mq*'s broker; ``None`` when it does not answer."""
        try:
            response = yield self.instance.invoke_broker(mq, api.consumer_list_request(self.group))
            return api.parse_consumer_list_response(response)
        except Exception as e:
            log.warn("consumer list of {group} failed: {error}", group=self.group, error=e)
            return None


@implementer(IRequestProcessor)
class IdsChangedProcessor:
    """
    NOTIFY_CONSUMER_IDS_CHANGED (40, oneway): the named group's member here (a push or a
    subscribing lite-pull consumer: anything with ``running`` and ``rebalance()``)
    rebalances now.
    """

    def __init__(self) -> None:
        self.consumers: dict[str, Any] = {}

    def process_request(self, ctx: IRemotingContext, request: RemotingCommand) -> None:
        consumer = self.consumers.get(request.ext_fields.get("consumerGroup", ""))
        if consumer is not None and consumer.running:
            consumer.rebalance()
        return None

    def reject_request(self) -> bool:
        return False
