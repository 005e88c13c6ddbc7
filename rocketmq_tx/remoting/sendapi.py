# -*- test-case-name: rocketmq_tx.remoting.test.test_sendapi -*-
"""
The client's routes and the producer's sends without I/O, as plans
(:mod:`rocketmq_tx.remoting.plans`) that the Twisted and the blocking client both run:
Java's ``MQClientInstance.updateTopicRouteInfoFromNameServer`` and
``DefaultMQProducerImpl.sendDefaultImpl`` / ``sendSelectImpl`` / ``sendKernelImpl``.

* :func:`namesrv_call`: the current name server, then the next ones in turn.
* :func:`update_route`, :func:`route`: read a topic's route into a
  :class:`~rocketmq_tx.common.clientroute.RouteTable`, or take the cached one while it
  is fresh (30 s); a failed re-read keeps the last route.
* :func:`broker_call`: a request to the master of a queue's broker, the topic's route read
  again first when no route names that broker; :func:`topic_broker_call`: to any broker
  of the topic, a slave while its master is down.
* :class:`ProducerBase`: a producer's settings and per-topic publish info, and every send
  (with retries, to a given or selected queue, batch, oneway) as a plan; the Twisted
  :class:`~rocketmq_tx.client.producer.Producer` and the
  :class:`~rocketmq_tx.blocking.client.BlockingProducer` only run them.

The requests and parsers are :mod:`rocketmq_tx.remoting.api`'s; queue selection is
:mod:`rocketmq_tx.common.clientroute`'s. ``docs/client.md`` states the rules.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import Any

from rocketmq_tx.common.clientroute import (
    FindBrokerResult,
    NameServerList,
    PullFromWhichNode,
    RouteTable,
    TopicPublishInfo,
    publish_info,
    select_by_hash,
)
from rocketmq_tx.common.message import Message, MessageQueue
from rocketmq_tx.common.msgid import UniqueKeyGenerator
from rocketmq_tx.common.route import MASTER_ID, TopicRouteData
from rocketmq_tx.remoting import api
from rocketmq_tx.remoting.api import AUTO_CREATE_TOPIC_KEY, DEFAULT_TOPIC_QUEUE_NUMS, MQClientError, SendResult
from rocketmq_tx.remoting.codes import ResponseCode
from rocketmq_tx.remoting.command import RemotingCommand
from rocketmq_tx.remoting.errors import MQBrokerError, RemotingError
from rocketmq_tx.remoting.plans import NAMESRV, Call, Plan, Warn

__all__ = ["MessageQueueSelector", "ProducerBase", "namesrv_call", "update_route", "route", "broker_addr",
           "subscribe_addr", "pull_call", "offset_call", "broker_call", "topic_broker_call"]

#: ``selector(queues, message, arg) -> queue`` for ordered sends (Java ``MessageQueueSelector``).
MessageQueueSelector = Callable[[list[MessageQueue], Message, Any], MessageQueue]


# --------------------------------------------------------------------------- routes

def namesrv_call(namesrvs: NameServerList, call: Call) -> Plan[RemotingCommand]:
    """
    *call* (addressed to :data:`~rocketmq_tx.remoting.plans.NAMESRV`) to the name server
    that answered last, then to the next ones in turn while one cannot be reached or times
    out; the one that answers is used first from then on.

    :raises RemotingError: every name server failed (the last failure).
    """
    last: RemotingError | None = None
    for addr in namesrvs.ordered():
        try:
            response = yield dataclasses.replace(call, addr=addr)
        except RemotingError as e:
            last = e
            yield Warn(f"name server {addr} failed: {e}")
            continue
        namesrvs.succeeded(addr)
        return response
    assert last is not None
    raise last


def update_route(routes: RouteTable, topic: str) -> Plan[TopicRouteData]:
    """
    Read *topic*'s route from the name servers into *routes*. When that fails the last
    route stays (fresh for another interval, as Java keeps it until its next 30 s round),
    and is returned when no name server answered.

    :raises MQBrokerError: TOPIC_NOT_EXIST (17) or another name-server answer.
    :raises RemotingError: no name server answered and *routes* has no route of *topic*.
    """
    try:
        response = yield from namesrv_call(routes.namesrvs, Call(NAMESRV, api.route_request(topic)))
        fetched = api.parse_route_response(response)
    except (RemotingError, MQBrokerError) as e:
        last = routes.cached(topic)
        routes.keep(topic)
        if last is not None and isinstance(e, RemotingError):
            return last
        raise
    routes.put(topic, fetched)
    return fetched


def route(routes: RouteTable, topic: str) -> Plan[TopicRouteData]:
    """*topic*'s route: the cached one while it is fresh, else :func:`update_route`."""
    cached = routes.fresh(topic)
    if cached is not None:
        return cached
    return (yield from update_route(routes, topic))


def broker_addr(routes: RouteTable, mq: MessageQueue) -> Plan[str]:
    """
    The master address of *mq*'s broker; when no cached route names it, *mq*'s topic's
    route is read first (Java ``findBrokerAddressInPublish`` then ``tryToFindTopicPublishInfo``).

    :raises MQClientError: still no such broker.
    """
    addr = routes.master(mq.broker_name)
    if addr is None:
        yield from update_route(routes, mq.topic)
        addr = routes.master(mq.broker_name)
        if addr is None:
            raise MQClientError(f"The broker[{mq.broker_name}] not exist")
    return addr


def broker_call(routes: RouteTable, mq: MessageQueue, request: RemotingCommand, timeout: float | None = None,
                *, oneway: bool = False) -> Plan[RemotingCommand | None]:
    """*request* to the master of *mq*'s broker (``None`` back when *oneway*)."""
    addr = yield from broker_addr(routes, mq)
    return (yield Call(addr, request, timeout=timeout, oneway=oneway))


def topic_broker_call(routes: RouteTable, mq: MessageQueue, request: RemotingCommand,
                      timeout: float | None = None) -> Plan[RemotingCommand]:
    """
    *request* for a question any broker of *mq*'s topic can answer (a group's members: Java
    4.9 ``findConsumerIdList`` through ``findBrokerAddrByTopic`` and ``selectBrokerAddr``):
    *mq*'s broker, else another broker of the topic's route, each by its master's address,
    else a slave's, so the answer still comes while a master is down. The route is read
    again first when it names no address.

    :raises MQClientError: the route names no broker address.
    """
    addr = _topic_broker_addr(routes, mq)
    if addr is None:
        yield from update_route(routes, mq.topic)
        addr = _topic_broker_addr(routes, mq)
        if addr is None:
            raise MQClientError(f"No broker of topic {mq.topic} has an address")
    response = yield Call(addr, request, timeout=timeout)
    assert response is not None  # not oneway
    return response


def _topic_broker_addr(routes: RouteTable, mq: MessageQueue) -> str | None:
    route = routes.cached(mq.topic)
    datas = sorted(route.broker_datas if route else (), key=lambda d: d.broker_name != mq.broker_name)
    for data in datas:
        addr = data.select_broker_addr()
        if addr is not None:
            return addr
    return None


def subscribe_addr(routes: RouteTable, mq: MessageQueue, broker_id: int, *,
                   only_this_broker: bool = False) -> Plan[FindBrokerResult]:
    """
    Where a consumer reaches *mq*'s broker (Java's pull and offset-store look-ups):
    :meth:`RouteTable.find_broker_address_in_subscribe`, and when that finds nothing the
    topic's route read again and any address of the broker name taken.

    :raises MQClientError: the broker name is in no route.
    """
    found = routes.find_broker_address_in_subscribe(mq.broker_name, broker_id, only_this_broker)
    if found is None:
        try:
            yield from update_route(routes, mq.topic)
        except (RemotingError, MQBrokerError):
            pass  # Java logs a failed route read and looks again in what it has
        found = routes.find_broker_address_in_subscribe(mq.broker_name, broker_id, False)
        if found is None:
            raise MQClientError(f"The broker[{mq.broker_name}] not exist")
    return found


def pull_call(routes: RouteTable, nodes: PullFromWhichNode, mq: MessageQueue,
              build: Callable[..., RemotingCommand], subscription: Any,
              timeout: float | None = None) -> Plan[api.PullResult]:
    """
    Java 4.9 ``PullAPIWrapper.pullKernelImpl`` + ``processPullResult``: pull *mq* from the
    broker id its last answer suggested (the master at first, any address of the broker
    when that id is gone), ``build(slave=...)`` the request knowing whether that is a slave
    (a slave is not asked to commit the offset), and remember the answer's suggestion.
    """
    found = yield from subscribe_addr(routes, mq, nodes.recalculate(mq))
    response = yield Call(found.broker_addr, build(slave=found.slave), timeout=timeout)
    result = api.parse_pull_response(response, mq, subscription)
    nodes.update(mq, result.suggest_which_broker_id)
    return result


def offset_call(routes: RouteTable, mq: MessageQueue, request: RemotingCommand, timeout: float | None = None,
                *, oneway: bool = False) -> Plan[Any]:
    """
    QUERY/UPDATE_CONSUMER_OFFSET as Java 4.9's ``RemoteBrokerOffsetStore``: to the master of
    *mq*'s broker; when the route has none, after a route read, to any address of it (a
    slave while its master is down). The answer, or ``None`` when *oneway*.
    """
    found = yield from subscribe_addr(routes, mq, MASTER_ID, only_this_broker=True)
    return (yield Call(found.broker_addr, request, timeout=timeout, oneway=oneway))


# --------------------------------------------------------------------------- producer

class ProducerBase:
    """
    Java ``DefaultMQProducer`` without I/O: the settings, the topics' publish info, and
    each send as a plan. A subclass gives :meth:`_run` (run a plan, return its result or a
    Deferred of it); every public method here returns what :meth:`_run` returns.

    :param group: the producer group.
    :param routes: the client's route cache (shared with its other producers and consumers).
    :param send_timeout: seconds for one send, retries included (Java ``sendMsgTimeout``).
    :param retry_times_when_send_failed: extra attempts of a send without a chosen queue,
        each on another broker when there is one.
    :param compress_over: bodies of at least this many bytes are zlib-compressed.
    :param max_message_size: larger bodies are refused before anything is sent.
    :param default_topic_queue_nums: queues per broker of a topic sent through ``TBW102``.
    """

    def __init__(self, group: str, routes: RouteTable, *, send_timeout: float = 3.0,
                 retry_times_when_send_failed: int = 2, compress_over: int = 4096,
                 max_message_size: int = 4 * 1024 * 1024,
                 default_topic_queue_nums: int = DEFAULT_TOPIC_QUEUE_NUMS) -> None:
        self.group = group
        self.routes = routes
        self.send_timeout = send_timeout
        self.retry_times_when_send_failed = retry_times_when_send_failed
        self.compress_over = compress_over
        self.max_message_size = max_message_size
        self.default_topic_queue_nums = default_topic_queue_nums
        self.ids = UniqueKeyGenerator()
        #: topic -> (the route it was made from, its publish info)
        self._publish: dict[str, tuple[TopicRouteData, TopicPublishInfo]] = {}
        #: topic the name server does not know -> (when checked, publish info from TBW102)
        self._templates: dict[str, tuple[float, TopicPublishInfo]] = {}
        #: Java's send-message hook for message trace: ``send_trace(prepared, broker_addr,
        #: result, started_ms)`` after each answered (not oneway) send attempt
        self.send_trace: Callable[[api.PreparedMessage, str, SendResult, int], object] | None = None

    def _run(self, plan: Plan[Any]) -> Any:
        raise NotImplementedError

    # ------------------------------------------------------------ the public methods
    def publish_info(self, topic: str) -> Any:
        """The topic's writable queues (through ``TBW102``'s route while the topic does not exist)."""
        return self._run(self.publish_info_plan(topic))

    def fetch_publish_queues(self, topic: str) -> Any:
        """The queues :meth:`send` chooses from."""
        return self._run(self._publish_queues(topic))

    def send(self, msg: Message, *, queue: MessageQueue | None = None, selector: MessageQueueSelector | None = None,
             arg: Any = None, timeout: float | None = None) -> Any:
        """
        Send *msg*; the :class:`~rocketmq_tx.remoting.api.SendResult`.

        Without *queue* or *selector* a failed attempt (connection error, timeout, broker
        codes of :data:`~rocketmq_tx.remoting.api.SEND_RETRY_CODES`) is retried up to
        ``retry_times_when_send_failed`` times, on another broker when there is one. With
        *queue* (or a *selector*, called as ``selector(queues, msg, arg)``) the message goes
        to that queue only, without retries, as Java's ordered sends do.

        :raises MQBrokerError: the broker refused it (``.code`` is its response code).
        :raises MQClientError: an invalid message, no route, or every attempt failed.
        :raises RemotingError: the connection failed or timed out (single-queue sends).
        """
        return self._run(self.send_plan(msg, queue, selector, arg, timeout))

    def send_orderly(self, msg: Message, sharding_key: Any, *, timeout: float | None = None) -> Any:
        """Send to the queue *sharding_key* hashes to: equal keys keep their order."""
        return self.send(msg, selector=select_by_hash, arg=sharding_key, timeout=timeout)

    def send_batch(self, messages: Sequence[Message], *, queue: MessageQueue | None = None,
                   timeout: float | None = None) -> Any:
        """Messages of one topic as one SEND_BATCH_MESSAGE; ``msg_id`` lists their ids."""
        return self._run(self.send_batch_plan(messages, queue, timeout))

    def send_oneway(self, msg: Message, *, queue: MessageQueue | None = None) -> Any:
        """
        Send without an answer (Java ``sendOneway``): one attempt, on *queue* or on the next
        queue in turn; done once the request is written.
        """
        return self._run(self.send_oneway_plan(msg, queue))

    # ------------------------------------------------------------ routes
    def publish_info_plan(self, topic: str) -> Plan[TopicPublishInfo]:
        """
        Java ``tryToFindTopicPublishInfo``: the fresh route's queues; else the route read
        again; a topic the name server does not know keeps its last route, or else goes
        through the ``TBW102`` template (at most ``default_topic_queue_nums`` queues per
        broker) until the broker has created it and the name server knows it.
        """
        routes = self.routes
        fetched = routes.fresh(topic)
        if fetched is not None:
            info = self._info(topic, fetched)
            if info.ok:
                return info
        template = self._templates.get(topic)
        if fetched is None and template is not None and routes.now() - template[0] < routes.interval:
            return template[1]
        try:
            fetched = yield from update_route(routes, topic)
        except MQBrokerError as e:
            if e.code != ResponseCode.TOPIC_NOT_EXIST:
                raise
            fetched = routes.cached(topic)
            if fetched is None:
                return (yield from self._template_info(topic))
        else:
            routes.watch(topic)
            self._templates.pop(topic, None)
        return self._info(topic, fetched)

    def _info(self, topic: str, fetched: TopicRouteData) -> TopicPublishInfo:
        # Rebuilt only when the route changed, so the round robin keeps its place.
        cached = self._publish.get(topic)
        if cached is None or cached[0] is not fetched:
            cached = self._publish[topic] = (fetched, publish_info(topic, fetched))
        return cached[1]

    def _template_info(self, topic: str) -> Plan[TopicPublishInfo]:
        kept = self._templates.get(topic)
        if kept is not None:  # the name server still does not know the topic: go on as before
            self._templates[topic] = (self.routes.now(), kept[1])
            return kept[1]
        template = yield from route(self.routes, AUTO_CREATE_TOPIC_KEY)
        info = publish_info(topic, template, template_queue_nums=self.default_topic_queue_nums)
        if info.ok:
            self._templates[topic] = (self.routes.now(), info)
        return info

    def _publish_queues(self, topic: str) -> Plan[list[MessageQueue]]:
        info = yield from self.publish_info_plan(topic)
        return list(info.queues)

    # ------------------------------------------------------------ sends
    def send_plan(self, msg: Message, queue: MessageQueue | None = None, selector: MessageQueueSelector | None = None,
                  arg: Any = None, timeout: float | None = None) -> Plan[SendResult]:
        """:meth:`send` as a plan."""
        prepared = api.prepare_message(msg, self.ids, compress_over=self.compress_over,
                                       max_message_size=self.max_message_size)
        return (yield from self._send(prepared, msg, queue, selector, arg, timeout))

    def send_batch_plan(self, messages: Sequence[Message], queue: MessageQueue | None = None,
                        timeout: float | None = None) -> Plan[SendResult]:
        """:meth:`send_batch` as a plan."""
        prepared = api.prepare_batch(messages, self.ids)
        return (yield from self._send(prepared, messages[0], queue, None, None, timeout))

    def send_oneway_plan(self, msg: Message, queue: MessageQueue | None = None) -> Plan[None]:
        """:meth:`send_oneway` as a plan."""
        prepared = api.prepare_message(msg, self.ids, compress_over=self.compress_over,
                                       max_message_size=self.max_message_size)
        yield from self._send(prepared, msg, queue, None, None, None, oneway=True)

    def _send(self, prepared: api.PreparedMessage, msg: Message, queue: MessageQueue | None,
              selector: MessageQueueSelector | None, arg: Any, timeout: float | None,
              oneway: bool = False) -> Plan[Any]:
        timeout = self.send_timeout if timeout is None else timeout
        if selector is not None:
            queues = yield from self._publish_queues(prepared.topic)
            if not queues:
                raise MQClientError(f"No route info for this topic, {prepared.topic}")
            queue = selector(queues, msg, arg)
        if queue is not None:
            return (yield from self._send_to(prepared, queue, timeout, oneway))
        info = yield from self.publish_info_plan(prepared.topic)
        if not info.ok:
            raise MQClientError(f"No route info of this topic: {prepared.topic}")
        # Java retries synchronous sends only; a oneway send has one attempt.
        attempts = api.SendRetryPlan(info, 0 if oneway else self.retry_times_when_send_failed, timeout,
                                     self.routes.now)
        while (step := attempts.next()) is not None:
            mq, remaining = step
            try:
                return (yield from self._send_to(prepared, mq, remaining, oneway))
            except (MQBrokerError, RemotingError, MQClientError) as e:
                attempts.failed(mq, e)
                yield Warn(f"send to {mq} failed (attempt {attempts.tried}): {e}")
        raise attempts.give_up()

    def _send_to(self, prepared: api.PreparedMessage, mq: MessageQueue, timeout: float,
                 oneway: bool) -> Plan[SendResult | None]:
        request = api.send_request(prepared, self.group, mq, oneway=oneway)
        addr = yield from broker_addr(self.routes, mq)
        started_ms = int(time.time() * 1000)
        response = yield Call(addr, request, timeout=timeout, oneway=oneway)
        if oneway:
            return None
        assert response is not None
        result = api.parse_send_response(response, mq, prepared.msg_id)
        if self.send_trace is not None:
            self.send_trace(prepared, addr, result, started_ms)
        return result
