# -*- test-case-name: rocketmq_tx.client.test.test_simpleconsumer -*-
"""
:class:`SimpleConsumer`: the 5.x simple consumer (the gRPC clients' ``SimpleConsumer``) over
the broker's POP calls, on Twisted. The application receives messages, each invisible to the
group for a duration it chooses, and acks each one it has consumed; a message not acked in
time is delivered again (reconsume times + 1), and its invisible duration can be changed while
it is being worked on. No queues are assigned and no offsets kept by the client: the broker
does both. The calls are the plans of :class:`rocketmq_tx.remoting.popapi.SimpleConsumerBase`,
which the blocking :class:`~rocketmq_tx.blocking.simpleconsumer.BlockingSimpleConsumer` runs too.

It heartbeats as the proxy registers a gRPC simple consumer (``CONSUME_ACTIVELY``,
``CLUSTERING``, ``CONSUME_FROM_LAST_OFFSET``, its subscriptions).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Unpack

from twisted.internet.defer import Deferred, fail

from rocketmq_tx.client.consumer import InstanceOptions
from rocketmq_tx.client.instance import InstanceUser
from rocketmq_tx.remoting.api import ConsumerData, MessageSelector, MQClientError
from rocketmq_tx.remoting.plans import Plan
from rocketmq_tx.remoting.popapi import CONSUME_INIT_MODE_MAX, ReceivedMessage, SimpleConsumerBase

__all__ = ["SimpleConsumer", "ReceivedMessage"]


class SimpleConsumer(InstanceUser, SimpleConsumerBase):
    """
    ``receive``, ``ack`` and ``change_invisible_duration`` of
    :class:`~rocketmq_tx.remoting.popapi.SimpleConsumerBase`, each returning a Deferred.

    :param group: the consumer group.
    :param namesrv_addr: ``"a:9876;b:9876"`` (ignored with ``instance``).
    :param reactor: the reactor (default: the global one).
    :param subscriptions: ``{topic: tag expression or MessageSelector}``.
    :param await_duration: seconds a receive waits at the broker while there is nothing (30).
    :param fifo: FIFO receive (POP ``order=true``), see
        :class:`~rocketmq_tx.remoting.popapi.SimpleConsumerBase`.
    :param client: ``instance``, ``tls``, ``timeout`` and the ACL 1.0 credentials: see
        :class:`~rocketmq_tx.client.consumer.InstanceOptions`.
    """

    def __init__(self, group: str, namesrv_addr: str = "", reactor: Any = None, *,
                 subscriptions: Mapping[str, str | MessageSelector], await_duration: float = 30.0,
                 init_mode: int = CONSUME_INIT_MODE_MAX, fifo: bool = False,
                 **client: Unpack[InstanceOptions]) -> None:
        InstanceUser.__init__(self, namesrv_addr, reactor, **client)
        SimpleConsumerBase.__init__(self, group, self.instance.route_table, subscriptions,
                                    await_duration=await_duration, init_mode=init_mode, fifo=fifo,
                                    now_ms=lambda: int(self.reactor.seconds() * 1000))
        self.running = False

    def _run(self, plan: Plan[Any]) -> Deferred:
        if not self.running:
            plan.close()
            return fail(MQClientError("the simple consumer is not started"))
        return self.instance.run(plan)

    def _consumer_data(self) -> ConsumerData:
        return ConsumerData(self.group, "CONSUME_ACTIVELY", "CLUSTERING", "CONSUME_FROM_LAST_OFFSET",
                            [self.subscriptions[t] for t in sorted(self.subscriptions)])

    def start(self) -> None:
        """Join the group's heartbeats; the subscribed topics' routes are read at once."""
        self.running = True
        for topic in self.subscriptions:
            self.instance.watch_topic(topic)
        self.instance.register_consumer(self.group, self._consumer_data)
        InstanceUser.start(self)

    def stop(self) -> Deferred:
        """Leave the group (unregistered from the brokers when the instance is ours)."""
        self.running = False
        self.instance.unregister_consumer(self.group)
        return InstanceUser.stop(self)

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
