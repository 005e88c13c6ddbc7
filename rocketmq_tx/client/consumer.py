# -*- test-case-name: rocketmq_tx.client.test.test_litepull,rocketmq_tx.client.test.test_push -*-
"""
:class:`ConsumerBase`: what :class:`~rocketmq_tx.client.push.PushConsumer` and
:class:`~rocketmq_tx.client.litepull.LitePullConsumer` share, as Java's
``DefaultMQPushConsumerImpl`` and ``DefaultLitePullConsumerImpl`` share ``MQConsumerInner``
and ``computePullFromWhere``: the client instance (built by
:class:`~rocketmq_tx.client.instance.InstanceUser`), the group's place in the heartbeats,
its offsets on the brokers, where a queue without a committed offset starts, and the
periodic tasks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Self, TypedDict, Unpack

from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IReactorTime
from twisted.internet.task import LoopingCall, deferLater
from twisted.logger import Logger
from twisted.python.failure import Failure

from rocketmq_tx.acl import SessionCredentials
from rocketmq_tx.client.instance import InstanceUser, MQClientInstance
from rocketmq_tx.client.offsets import OffsetStore, RemoteBrokerOffsetStore
from rocketmq_tx.common.clientroute import PullFromWhichNode
from rocketmq_tx.common.message import MessageQueue
from rocketmq_tx.remoting import RemotingCommand, api
from rocketmq_tx.remoting.api import RETRY_GROUP_TOPIC_PREFIX, TAG, ConsumerData
from rocketmq_tx.remoting.errors import MQBrokerError
from rocketmq_tx.tlsconfig import TlsSettings

__all__ = ["ConsumerBase", "InstanceOptions", "CONSUME_FROM_LAST_OFFSET", "CONSUME_FROM_FIRST_OFFSET",
           "CONSUME_FROM_TIMESTAMP", "CLUSTERING", "BROADCASTING", "sleep"]

log = Logger()

CONSUME_FROM_LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
CONSUME_FROM_FIRST_OFFSET = "CONSUME_FROM_FIRST_OFFSET"
CONSUME_FROM_TIMESTAMP = "CONSUME_FROM_TIMESTAMP"
#: Java's default ``consumeTimestamp``: half an hour before the consumer starts.
DEFAULT_CONSUME_TIMESTAMP_AGO = 30 * 60.0

#: Java's ``MessageModel``: the group shares the queues (offsets on the brokers), or every
#: member reads every queue.
CLUSTERING = "CLUSTERING"
BROADCASTING = "BROADCASTING"


class InstanceOptions(TypedDict, total=False):
    """
    The keyword arguments a consumer hands to :class:`~rocketmq_tx.client.instance.InstanceUser`:

    * ``instance``: share this client instance with other producers and consumers (then
      *namesrv_addr*, ``tls``, ``timeout`` and the credentials are not used);
    * ``tls``: use TLS (Java's ``setUseTLS(true)``) with these ``tls.client.*`` settings;
    * ``timeout``: seconds per request (3);
    * ``access_key``, ``secret_key`` (and ``security_token``), or one ``credentials``
      (:class:`~rocketmq_tx.acl.SessionCredentials`): ACL 1.0, sign every request. With a
      shared ``instance``, give them to the instance.
    """

    instance: MQClientInstance | None
    tls: TlsSettings | None
    timeout: float
    access_key: str | None
    secret_key: str | None
    security_token: str | None
    credentials: SessionCredentials | None


def sleep(clock: IReactorTime, seconds: float) -> Deferred[None]:
    """A Deferred that fires with ``None`` after *seconds* on *clock*."""
    return deferLater(clock, seconds, lambda: None)


class ConsumerBase(InstanceUser):
    """
    A consumer of *group* on a client instance. A subclass gives :meth:`_consumer_data`
    (its heartbeat entry) and :meth:`_shutdown`, and calls :meth:`start` from its own.

    :ivar offset_store: the group's committed offsets (Java ``OffsetStore``).
    """

    def __init__(self, group: str, namesrv_addr: str, reactor: Any, *, consume_from_where: str,
                 consume_timestamp_ms: int | None, rebalance_interval: float,
                 **client: Unpack[InstanceOptions]) -> None:
        InstanceUser.__init__(self, namesrv_addr, reactor, **client)
        self.group = group
        self.consume_from_where = consume_from_where
        self.consume_timestamp_ms = consume_timestamp_ms
        self.rebalance_interval = rebalance_interval
        self.offset_store: OffsetStore = RemoteBrokerOffsetStore(self.instance, group)
        #: where each queue's next pull goes (Java ``PullAPIWrapper``'s table)
        self.pull_nodes = PullFromWhichNode()
        self.running = False
        self._loops: list[LoopingCall] = []

    # ------------------------------------------------------------ time and timers
    def now(self) -> float:
        """The reactor's time, seconds."""
        return self.reactor.seconds()

    def now_ms(self) -> int:
        return int(self.now() * 1000)

    def every(self, seconds: float, work: Callable[[], object], *, now: bool) -> None:
        """Run *work* every *seconds* (first at once when *now*) until :meth:`stop`."""
        loop = LoopingCall(work)
        loop.clock = self.reactor
        self._loops.append(loop)
        loop.start(seconds, now=now)

    # ------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Running: the group goes into the heartbeats, and the instance starts if it is ours."""
        self.running = True
        if self.consume_timestamp_ms is None:
            self.consume_timestamp_ms = int((self.now() - DEFAULT_CONSUME_TIMESTAMP_AGO) * 1000)
        self.instance.register_consumer(self.group, self._consumer_data)
        InstanceUser.start(self)
        if any(sub.expression_type != TAG for sub in self._consumer_data().subscriptions):
            self.check_subscriptions().addErrback(self._subscription_refused)

    def check_subscriptions(self) -> Deferred[None]:
        """
        Java ``checkClientInBroker``: ask one broker of each topic subscribed with an SQL92
        selector whether it serves it (CHECK_CLIENT_CONFIG). :meth:`start` does this itself
        and stops the consumer when a broker refuses, as Java's ``start()`` fails.

        :raises MQBrokerError: the refusal (SYSTEM_ERROR when the broker filters by tags
            only, SUBSCRIPTION_PARSE_FAILED for a malformed expression).
        """
        return Deferred.fromCoroutine(self._check_subscriptions())

    async def _check_subscriptions(self) -> None:
        for sub in self._consumer_data().subscriptions:
            if sub.expression_type == TAG:
                continue
            route = await self.instance.route(sub.topic)
            if not route.broker_datas:
                continue
            mq = MessageQueue(sub.topic, route.broker_datas[0].broker_name, 0)
            request = api.check_client_config_request(self.group, self.instance.client_id, sub)
            api.check_response(await self.instance.invoke_broker(mq, request))

    def _subscription_refused(self, failure: Failure) -> None:
        if not failure.check(MQBrokerError):  # no route or no answer: the pulls will tell
            log.warn("consumer group {group}: subscriptions not checked: {error}", group=self.group,
                     error=failure.getErrorMessage())
            return
        log.error("consumer group {group}: a broker refused the subscriptions ({error}); stopping",
                  group=self.group, error=failure.getErrorMessage())
        if self.running:
            self.stop().addErrback(lambda f: log.warn("stop failed: {error}", error=f.getErrorMessage()))

    async def __aenter__(self) -> Self:
        self.start()
        return self

    def stop(self) -> Deferred[None]:
        """
        Stop the timers, do the consumer's last work (:meth:`_shutdown`: its final commits),
        leave the heartbeats, and stop and close the instance if it is ours.
        """
        return Deferred.fromCoroutine(self._stop())

    async def _stop(self) -> None:
        self.running = False
        for loop in self._loops:
            if loop.running:
                loop.stop()
        self._loops = []
        await self._shutdown()
        self.instance.unregister_consumer(self.group)
        await InstanceUser.stop(self)

    async def _shutdown(self) -> None:
        """What a subclass does on :meth:`stop` while still in the group."""

    def _consumer_data(self) -> ConsumerData:
        raise NotImplementedError

    # ------------------------------------------------------------ offsets
    def committed(self, mq: MessageQueue) -> Deferred[int | None]:
        """The group's committed offset of *mq*, ``None`` if there is none."""
        return self.offset_store.read(mq)

    def max_offset(self, mq: MessageQueue) -> Deferred[int]:
        return self._ask_offset(mq, api.get_max_offset_request(mq))

    def min_offset(self, mq: MessageQueue) -> Deferred[int]:
        return self._ask_offset(mq, api.get_min_offset_request(mq))

    def offset_for_timestamp(self, mq: MessageQueue, timestamp_ms: int) -> Deferred[int]:
        """The offset of the first message of *mq* stored at or after *timestamp_ms*."""
        return self._ask_offset(mq, api.search_offset_request(mq, timestamp_ms))

    def _ask_offset(self, mq: MessageQueue, request: RemotingCommand) -> Deferred[int]:
        return self.instance.invoke_broker(mq, request).addCallback(api.parse_offset_response)

    async def start_offset(self, mq: MessageQueue) -> int:
        """
        Java ``computePullFromWhere``: the committed offset, else the first offset (a retry
        topic always), the last one, or the first stored at ``consume_timestamp_ms``.
        """
        offset = await self.committed(mq)
        if offset is not None and offset >= 0:
            return offset
        if mq.topic.startswith(RETRY_GROUP_TOPIC_PREFIX) or self.consume_from_where == CONSUME_FROM_FIRST_OFFSET:
            return await self.min_offset(mq)
        if self.consume_from_where == CONSUME_FROM_TIMESTAMP:
            return await self.offset_for_timestamp(mq, self.consume_timestamp_ms or 0)
        return await self.max_offset(mq)
