# -*- test-case-name: rocketmq_tx.blocking.test.test_client -*-
"""
The blocking RocketMQ client: route lookup with name-server fail-over, a producer, and the
offset-addressed pull API PySpark executors use. No reactor, no threads of its own.

Every request is built and every response parsed by :mod:`rocketmq_tx.remoting.api`, the
same functions the Twisted client uses. Objects pickle as their configuration only (no
sockets, no caches), so a driver can ship them to executors.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from rocketmq_tx.acl import AclClientRPCHook, SessionCredentials, credentials_from
from rocketmq_tx.blocking.connection import BlockingRemotingClient
from rocketmq_tx.common.clientroute import (
    NameServerList,
    TopicPublishInfo,
    broker_address,
    make_client_id,
    publish_info,
    select_by_hash,
    subscribe_queues,
)
from rocketmq_tx.common.message import Message, MessageExt, MessageQueue
from rocketmq_tx.common.msgid import UniqueKeyGenerator, decode_offset_msg_id
from rocketmq_tx.common.route import TopicRouteData
from rocketmq_tx.remoting import api
from rocketmq_tx.remoting.api import (
    AUTO_CREATE_TOPIC_KEY,
    DEFAULT_TOPIC_QUEUE_NUMS,
    MQClientError,
    PullResult,
    SendResult,
    SubscriptionData,
)
from rocketmq_tx.remoting.codes import ResponseCode
from rocketmq_tx.remoting.command import RemotingCommand
from rocketmq_tx.remoting.errors import MQBrokerError, RemotingError
from rocketmq_tx.tlsconfig import TlsSettings

__all__ = ["BlockingMQClient", "BlockingProducer", "BlockingPullClient", "MessageQueueSelector"]

log = logging.getLogger(__name__)

#: ``selector(queues, message, arg) -> queue`` for ordered sends.
MessageQueueSelector = Callable[[list[MessageQueue], Message, Any], MessageQueue]

#: Java's ``pollNameServerInterval``: cached routes are used this long, in seconds.
ROUTE_TTL = 30.0


class BlockingMQClient:
    """
    Routes and connections shared by a producer or pull client.

    :param namesrv_addr: ``"host:port;host:port"``; a failing name server is skipped.
    :param timeout: seconds per request (Java ``mqClientApiTimeout``).
    :param client_id: defaults to ``ip@pid#nanotime``.
    :param tls: talk TLS to name servers and brokers (Java's ``setUseTLS(true)``) with these
        ``tls.client.*`` settings.
    :param credentials: ACL 1.0: sign every request with these (Java's ``AclClientRPCHook``).
    """

    def __init__(self, namesrv_addr: str, *, timeout: float = 3.0, connect_timeout: float = 3.0,
                 client_id: str | None = None, route_ttl: float = ROUTE_TTL, tls: TlsSettings | None = None,
                 credentials: SessionCredentials | None = None) -> None:
        self.namesrv_addr = namesrv_addr
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.route_ttl = route_ttl
        self._given_client_id = client_id
        self.client_id = client_id or make_client_id()
        self.namesrvs = NameServerList(namesrv_addr)
        self.tls = tls
        self.credentials = credentials
        self.remoting = BlockingRemotingClient(
            connect_timeout=connect_timeout, tls=tls,
            rpc_hook=AclClientRPCHook(credentials) if credentials is not None else None)
        self._routes: dict[str, tuple[float, TopicRouteData]] = {}
        self._brokers: dict[str, str] = {}
        self._lock = threading.RLock()

    def __getstate__(self) -> dict[str, Any]:
        return {"namesrv_addr": self.namesrv_addr, "timeout": self.timeout, "connect_timeout": self.connect_timeout,
                "client_id": self._given_client_id, "route_ttl": self.route_ttl, "tls": self.tls,
                "credentials": self.credentials}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state.pop("namesrv_addr"), **state)  # type: ignore[misc]

    def __enter__(self) -> BlockingMQClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close every connection (the object can be used again; it reconnects)."""
        self.remoting.close()

    # ------------------------------------------------------------ name server
    def invoke_namesrv(self, request: RemotingCommand, timeout: float | None = None) -> RemotingCommand:
        """
        Send *request* to the current name server, moving on to the next when one cannot
        be reached or times out.

        :raises RemotingError: every name server failed (the last failure).
        """
        last: Exception | None = None
        for addr in self.namesrvs.ordered():
            try:
                response = self.remoting.invoke(addr, request, self.timeout if timeout is None else timeout)
            except RemotingError as e:
                log.warning("name server %s failed: %s", addr, e)
                last = e
                continue
            self.namesrvs.succeeded(addr)
            return response
        assert last is not None
        raise last

    def route(self, topic: str, *, refresh: bool = False) -> TopicRouteData:
        """
        The topic's route, cached for :attr:`route_ttl` seconds. When no name server
        answers, a cached route is used however old it is.

        :raises MQBrokerError: TOPIC_NOT_EXIST (17) and other name-server answers.
        """
        with self._lock:
            cached = self._routes.get(topic)
            if cached is not None and not refresh and time.monotonic() - cached[0] < self.route_ttl:
                return cached[1]
        try:
            route = api.parse_route_response(self.invoke_namesrv(api.route_request(topic)))
        except RemotingError:
            if cached is not None:
                return cached[1]
            raise
        with self._lock:
            self._routes[topic] = (time.monotonic(), route)
            for data in route.broker_datas:
                addr = data.broker_addrs.get(0)
                if addr:
                    self._brokers[data.broker_name] = addr
        return route

    def broker_addr(self, broker_name: str, topic: str | None = None) -> str:
        """
        The master address of *broker_name*, from the routes seen so far (refreshing
        *topic*'s route if the broker is unknown).

        :raises MQClientError: the broker is in no route.
        """
        addr = self._brokers.get(broker_name)
        if addr is None and topic is not None:
            addr = broker_address(self.route(topic, refresh=True), broker_name)
        if addr is None:
            raise MQClientError(f"The broker[{broker_name}] not exist")
        return addr

    def invoke_broker(self, mq: MessageQueue, request: RemotingCommand, timeout: float | None = None) -> RemotingCommand:
        """Send *request* to the master of *mq*'s broker."""
        addr = self.broker_addr(mq.broker_name, mq.topic)
        return self.remoting.invoke(addr, request, self.timeout if timeout is None else timeout)

    def fetch_queues(self, topic: str) -> list[MessageQueue]:
        """The topic's readable queues, sorted."""
        return subscribe_queues(topic, self.route(topic))

    def heartbeat(self, data: api.HeartbeatData, topic: str) -> None:
        """Send *data* to every master of *topic*'s route."""
        for broker in self.route(topic).broker_datas:
            addr = broker.broker_addrs.get(0)
            if addr:
                api.check_response(self.remoting.invoke(addr, api.heartbeat_request(data), self.timeout))

    # ------------------------------------------------------------ queries
    def view_message(self, offset_msg_id: str) -> MessageExt:
        """The message with this offsetMsgId, read from the broker the id names."""
        host, port, offset = decode_offset_msg_id(offset_msg_id)
        response = self.remoting.invoke(f"{host}:{port}", api.view_message_request(offset), self.timeout)
        messages = api.parse_messages_response(response, not_found_ok=False)
        if not messages:
            raise MQClientError(f"no message for id {offset_msg_id}")
        return messages[0]

    def query_messages(self, topic: str, key: str, *, max_num: int = 32, begin_ms: int = 0,
                       end_ms: int | None = None, unique_key: bool = False) -> list[MessageExt]:
        """Messages of *topic* with *key* in ``KEYS`` (or as ``UNIQ_KEY``), from every broker."""
        found: list[MessageExt] = []
        for broker in self.route(topic).broker_datas:
            addr = broker.select_broker_addr()
            if addr is None:
                continue
            request = api.query_message_request(topic, key, max_num, begin_ms, end_ms, unique_key=unique_key)
            found += api.parse_messages_response(self.remoting.invoke(addr, request, self.timeout))
        return api.messages_with_keys(found, key)


class BlockingProducer:
    """
    A producer (Java ``DefaultMQProducer`` in blocking form).

    :param group: the producer group.
    :param namesrv_addr: ``"a:9876;b:9876"``.
    :param send_timeout: seconds for one send, retries included (Java ``sendMsgTimeout``).
    :param retry_times_when_send_failed: extra attempts, each on another broker if possible.
    :param compress_over: bodies of at least this many bytes are zlib-compressed.
    :param access_key: ACL 1.0: sign every request with this AccessKey and *secret_key*
        (and *security_token*), or with one ``credentials``.
    """

    def __init__(self, group: str, namesrv_addr: str, *, send_timeout: float = 3.0,
                 retry_times_when_send_failed: int = 2, compress_over: int = 4096,
                 max_message_size: int = 4 * 1024 * 1024, client_id: str | None = None,
                 default_topic_queue_nums: int = DEFAULT_TOPIC_QUEUE_NUMS, tls: TlsSettings | None = None,
                 access_key: str | None = None, secret_key: str | None = None,
                 security_token: str | None = None, credentials: SessionCredentials | None = None) -> None:
        self.group = group
        self.send_timeout = send_timeout
        self.retry_times_when_send_failed = retry_times_when_send_failed
        self.compress_over = compress_over
        self.max_message_size = max_message_size
        self.default_topic_queue_nums = default_topic_queue_nums
        self.client = BlockingMQClient(namesrv_addr, timeout=send_timeout, client_id=client_id, tls=tls,
                                       credentials=credentials_from(access_key, secret_key, security_token,
                                                                    credentials))
        self.ids = UniqueKeyGenerator()
        self._publish: dict[str, tuple[float, TopicPublishInfo]] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {"group": self.group, "namesrv_addr": self.client.namesrv_addr, "send_timeout": self.send_timeout,
                "retry_times_when_send_failed": self.retry_times_when_send_failed,
                "compress_over": self.compress_over, "max_message_size": self.max_message_size,
                "client_id": self.client._given_client_id, "default_topic_queue_nums": self.default_topic_queue_nums,
                "tls": self.client.tls, "credentials": self.client.credentials}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state.pop("group"), state.pop("namesrv_addr"), **state)  # type: ignore[misc]

    def __enter__(self) -> BlockingProducer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connections."""
        self.client.close()

    def publish_info(self, topic: str) -> TopicPublishInfo:
        """
        The topic's writable queues. A topic the name server does not know is sent through
        the ``TBW102`` template's route so that the broker creates it (Java's behaviour).
        """
        cached = self._publish.get(topic)
        if cached is not None and time.monotonic() - cached[0] < self.client.route_ttl:
            return cached[1]
        try:
            info = publish_info(topic, self.client.route(topic, refresh=True))
        except MQBrokerError as e:
            if e.code != ResponseCode.TOPIC_NOT_EXIST:
                raise
            info = publish_info(topic, self.client.route(AUTO_CREATE_TOPIC_KEY),
                                template_queue_nums=self.default_topic_queue_nums)
        except RemotingError:
            if cached is not None:
                return cached[1]
            raise
        if info.ok:
            self._publish[topic] = (time.monotonic(), info)
        return info

    def fetch_publish_queues(self, topic: str) -> list[MessageQueue]:
        """The queues :meth:`send` chooses from."""
        return list(self.publish_info(topic).queues)

    def send(self, msg: Message, *, queue: MessageQueue | None = None, selector: MessageQueueSelector | None = None,
             arg: Any = None, timeout: float | None = None) -> SendResult:
        """
        Send *msg* and wait for the broker's answer.

        Without *queue* or *selector* a failed attempt is retried up to
        ``retry_times_when_send_failed`` times on another broker when there is one. With
        *queue* (or a *selector*, called as ``selector(queues, msg, arg)``) the message goes to
        that queue only, without retries, as Java's ordered sends do.

        :raises MQBrokerError: the broker refused it (``.code`` is its response code).
        :raises MQClientError: an invalid message, no route, or every attempt failed.
        :raises RemotingError: the connection failed or timed out (single-queue sends).
        """
        prepared = api.prepare_message(msg, self.ids, compress_over=self.compress_over,
                                       max_message_size=self.max_message_size)
        return self._send(prepared, queue, selector, arg, msg, timeout)

    def send_orderly(self, msg: Message, sharding_key: Any, *, timeout: float | None = None) -> SendResult:
        """Send to the queue *sharding_key* hashes to: equal keys keep their order."""
        return self.send(msg, selector=select_by_hash, arg=sharding_key, timeout=timeout)

    def send_batch(self, messages: Sequence[Message], *, queue: MessageQueue | None = None,
                   timeout: float | None = None) -> SendResult:
        """Send messages of one topic as one SEND_BATCH_MESSAGE; ``msg_id`` lists their ids."""
        prepared = api.prepare_batch(messages, self.ids)
        return self._send(prepared, queue, None, None, messages[0], timeout)

    def send_oneway(self, msg: Message, *, queue: MessageQueue | None = None) -> None:
        """Send without waiting for (or getting) an answer."""
        prepared = api.prepare_message(msg, self.ids, compress_over=self.compress_over,
                                       max_message_size=self.max_message_size)
        mq = queue or self.publish_info(prepared.topic).select_queue()
        request = api.send_request(prepared, self.group, mq, oneway=True)
        self.client.remoting.invoke_oneway(self.client.broker_addr(mq.broker_name, mq.topic), request)

    def _send(self, prepared: api.PreparedMessage, queue: MessageQueue | None, selector: MessageQueueSelector | None,
              arg: Any, msg: Message, timeout: float | None) -> SendResult:
        timeout = self.send_timeout if timeout is None else timeout
        if selector is not None:
            queues = self.fetch_publish_queues(prepared.topic)
            if not queues:
                raise MQClientError(f"No route info for this topic, {prepared.topic}")
            queue = selector(queues, msg, arg)
        if queue is not None:
            return self._send_to(prepared, queue, timeout)
        info = self.publish_info(prepared.topic)
        if not info.ok:
            raise MQClientError(f"No route info of this topic: {prepared.topic}")
        plan = api.SendRetryPlan(info, self.retry_times_when_send_failed, timeout, time.monotonic)
        while (step := plan.next()) is not None:
            mq, remaining = step
            try:
                return self._send_to(prepared, mq, remaining)
            except (MQBrokerError, RemotingError, MQClientError) as e:
                plan.failed(mq, e)
                log.warning("send to %s failed (attempt %d): %s", mq, plan.tried, e)
        raise plan.give_up()

    def _send_to(self, prepared: api.PreparedMessage, mq: MessageQueue, timeout: float) -> SendResult:
        request = api.send_request(prepared, self.group, mq)
        response = self.client.invoke_broker(mq, request, timeout)
        return api.parse_send_response(response, mq, prepared.msg_id)


class BlockingPullClient:
    """
    Pull by queue and offset, read queue offsets, and keep a consumer group's committed
    offsets on the broker (what a Spark source needs).

    :param group: the consumer group (offsets and the broker's subscription bookkeeping).
    :param access_key: ACL 1.0: sign every request with this AccessKey and *secret_key*
        (and *security_token*), or with one ``credentials``.
    """

    def __init__(self, group: str, namesrv_addr: str, *, timeout: float = 3.0, client_id: str | None = None,
                 tls: TlsSettings | None = None, access_key: str | None = None, secret_key: str | None = None,
                 security_token: str | None = None, credentials: SessionCredentials | None = None) -> None:
        self.group = group
        self.client = BlockingMQClient(namesrv_addr, timeout=timeout, client_id=client_id, tls=tls,
                                       credentials=credentials_from(access_key, secret_key, security_token,
                                                                    credentials))
        self._subscriptions: dict[tuple[str, str], SubscriptionData] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {"group": self.group, "namesrv_addr": self.client.namesrv_addr, "timeout": self.client.timeout,
                "client_id": self.client._given_client_id, "tls": self.client.tls,
                "credentials": self.client.credentials}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state.pop("group"), state.pop("namesrv_addr"), **state)  # type: ignore[misc]

    def __enter__(self) -> BlockingPullClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connections."""
        self.client.close()

    def fetch_queues(self, topic: str) -> list[MessageQueue]:
        """The topic's readable queues, sorted."""
        return self.client.fetch_queues(topic)

    def _subscription(self, topic: str, expression: str) -> SubscriptionData:
        key = (topic, expression)
        sub = self._subscriptions.get(key)
        if sub is None:
            sub = self._subscriptions[key] = SubscriptionData.build(topic, expression)
        return sub

    def pull(self, mq: MessageQueue, offset: int, max_nums: int = 32, sub_expression: str = "*", *,
             timeout: float | None = None) -> PullResult:
        """
        Up to *max_nums* messages of *mq* from *offset* whose tag matches *sub_expression*
        (``"*"`` or ``"TagA || TagB"``). Continue at ``result.next_begin_offset``.

        :raises MQBrokerError: the broker answered something other than found / not found /
            no match / offset illegal.
        """
        sub = self._subscription(mq.topic, sub_expression)
        request = api.pull_request(self.group, mq, offset, max_nums, sub)
        return api.parse_pull_response(self.client.invoke_broker(mq, request, timeout), mq, sub)

    def max_offset(self, mq: MessageQueue) -> int:
        """One past the last message of *mq*."""
        return api.parse_offset_response(self.client.invoke_broker(mq, api.get_max_offset_request(mq)))

    def min_offset(self, mq: MessageQueue) -> int:
        """The first offset still stored in *mq*."""
        return api.parse_offset_response(self.client.invoke_broker(mq, api.get_min_offset_request(mq)))

    def search_offset(self, mq: MessageQueue, timestamp_ms: int) -> int:
        """The first offset of *mq* stored at or after *timestamp_ms* (the max offset if none)."""
        return api.parse_offset_response(self.client.invoke_broker(mq, api.search_offset_request(mq, timestamp_ms)))

    def earliest_msg_store_time(self, mq: MessageQueue) -> int:
        """Store timestamp (ms) of the first message in *mq*."""
        response = self.client.invoke_broker(mq, api.earliest_msg_storetime_request(mq))
        return api.parse_earliest_msg_storetime_response(response)

    def committed_offset(self, mq: MessageQueue) -> int | None:
        """The group's committed offset of *mq*, ``None`` if it never committed one."""
        response = self.client.invoke_broker(mq, api.query_consumer_offset_request(self.group, mq))
        return api.parse_query_consumer_offset_response(response)

    def commit_offset(self, mq: MessageQueue, offset: int) -> None:
        """Store *offset* (the next offset to consume) as the group's position in *mq*."""
        response = self.client.invoke_broker(mq, api.update_consumer_offset_request(self.group, mq, offset))
        api.check_response(response)

    def send_heartbeat(self, topics: Sequence[str]) -> None:
        """
        Announce this client as a pull consumer of *topics*. The broker then knows the group
        (its ``%RETRY%`` topic is created, mqadmin lists its progress).
        """
        data = api.HeartbeatData(self.client.client_id, [], [api.ConsumerData(
            self.group, subscriptions=[SubscriptionData.build(t) for t in topics])])
        for topic in topics:
            self.client.heartbeat(data, topic)
