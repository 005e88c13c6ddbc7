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
import time
from collections.abc import Sequence
from typing import Any, TypeVar

from rocketmq_tx.acl import AclClientRPCHook, SessionCredentials, credentials_from
from rocketmq_tx.blocking.connection import BlockingRemotingClient
from rocketmq_tx.blocking.trace import BlockingTraceDispatcher
from rocketmq_tx.common.clientroute import (
    POLL_NAME_SERVER_INTERVAL,
    NameServerList,
    PullFromWhichNode,
    RouteTable,
    make_client_id,
    subscribe_queues,
)
from rocketmq_tx.common.message import MessageExt, MessageQueue
from rocketmq_tx.common.msgid import decode_offset_msg_id
from rocketmq_tx.common.route import TopicRouteData
from rocketmq_tx.remoting import api, sendapi
from rocketmq_tx.remoting.api import MessageSelector, MQClientError, PullResult, SubscriptionData
from rocketmq_tx.remoting.command import RemotingCommand
from rocketmq_tx.remoting.errors import MQBrokerError, RemotingError
from rocketmq_tx.remoting.plans import NAMESRV, Call, Plan, run_plan
from rocketmq_tx.remoting.sendapi import MessageQueueSelector, ProducerBase
from rocketmq_tx.tlsconfig import TlsSettings

__all__ = ["BlockingMQClient", "BlockingProducer", "BlockingPullClient", "MessageQueueSelector"]

log = logging.getLogger(__name__)
T = TypeVar("T")

#: Cached routes are used this long, in seconds (Java's ``pollNameServerInterval``).
ROUTE_TTL = POLL_NAME_SERVER_INTERVAL


class BlockingMQClient:
    """
    Routes and connections shared by a producer or pull client, and the blocking driver of
    the plans of :mod:`rocketmq_tx.remoting.sendapi` and :mod:`~rocketmq_tx.remoting.adminapi`.

    :param namesrv_addr: ``"host:port;host:port"``; a failing name server is skipped.
    :param timeout: seconds per request (Java ``mqClientApiTimeout``).
    :param client_id: defaults to ``ip@pid#nanotime``.
    :param route_ttl: seconds a route is used before it is read again on its next use.
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
        #: routes, brokers and name servers (:mod:`rocketmq_tx.remoting.sendapi` keeps it)
        self.route_table = RouteTable(namesrv_addr, now=time.monotonic, interval=route_ttl)
        self.tls = tls
        self.credentials = credentials
        self.remoting = BlockingRemotingClient(
            connect_timeout=connect_timeout, tls=tls,
            rpc_hook=AclClientRPCHook(credentials) if credentials is not None else None)

    @classmethod
    def create(cls, namesrv_addr: str, *, access_key: str | None = None, secret_key: str | None = None,
               security_token: str | None = None, credentials: SessionCredentials | None = None,
               **options: Any) -> BlockingMQClient:
        """A client for a producer, pull client or admin given ACL 1.0 keys or ``credentials``."""
        return cls(namesrv_addr, credentials=credentials_from(access_key, secret_key, security_token, credentials),
                   **options)

    def __getstate__(self) -> dict[str, Any]:
        return {"namesrv_addr": self.namesrv_addr, "timeout": self.timeout, "connect_timeout": self.connect_timeout,
                "client_id": self._given_client_id, "route_ttl": self.route_ttl, "tls": self.tls,
                "credentials": self.credentials}

    def __setstate__(self, state: dict[str, Any]) -> None:
        type(self).__init__(self, state.pop("namesrv_addr"), **state)

    def __enter__(self) -> BlockingMQClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close every connection (the object can be used again; it reconnects)."""
        self.remoting.close()

    @property
    def namesrvs(self) -> NameServerList:
        return self.route_table.namesrvs

    # ------------------------------------------------------------ the driver of plans
    def run(self, plan: Plan[T], timeout: float | None = None) -> T:
        """
        Run a plan of :mod:`rocketmq_tx.remoting.sendapi` or :mod:`~rocketmq_tx.remoting.adminapi`.

        :param timeout: seconds per request unless a call says otherwise (default :attr:`timeout`).
        """
        default = self.timeout if timeout is None else timeout

        def invoke(call: Call) -> RemotingCommand | None:
            if call.addr is NAMESRV:
                return self.run(sendapi.namesrv_call(self.namesrvs, call), default)
            if call.oneway:
                self.remoting.invoke_oneway(call.addr, call.request)
                return None
            return self.remoting.invoke(call.addr, call.request, call.seconds(default))

        return run_plan(plan, invoke, log.warning)

    # ------------------------------------------------------------ name server and brokers
    def invoke_namesrv(self, request: RemotingCommand, timeout: float | None = None) -> RemotingCommand:
        """
        Send *request* to the current name server, moving on to the next when one cannot
        be reached or times out.

        :raises RemotingError: every name server failed (the last failure).
        """
        return self.run(sendapi.namesrv_call(self.namesrvs, Call(NAMESRV, request)), timeout)

    def route(self, topic: str, *, refresh: bool = False) -> TopicRouteData:
        """
        The topic's route, cached for :attr:`route_ttl` seconds (*refresh*: read it now).
        When no name server answers, a cached route is used however old it is.

        :raises MQBrokerError: TOPIC_NOT_EXIST (17) and other name-server answers.
        """
        plan = sendapi.update_route if refresh else sendapi.route
        return self.run(plan(self.route_table, topic))

    def broker_addr(self, broker_name: str, topic: str | None = None) -> str:
        """
        The master address of *broker_name*, from the routes seen so far (refreshing
        *topic*'s route if the broker is unknown).

        :raises MQClientError: the broker is in no route.
        """
        addr = self.route_table.master(broker_name)
        if addr is None and topic is not None:
            addr = self.run(sendapi.broker_addr(self.route_table, MessageQueue(topic, broker_name, 0)))
        if addr is None:
            raise MQClientError(f"The broker[{broker_name}] not exist")
        return addr

    def invoke_broker(self, mq: MessageQueue, request: RemotingCommand,
                      timeout: float | None = None) -> RemotingCommand:
        """Send *request* to the master of *mq*'s broker."""
        response = self.run(sendapi.broker_call(self.route_table, mq, request, timeout))
        assert response is not None  # None only answers a oneway call
        return response

    def fetch_queues(self, topic: str) -> list[MessageQueue]:
        """The topic's readable queues, sorted."""
        return subscribe_queues(topic, self.route(topic))

    def heartbeat(self, data: api.HeartbeatData, topic: str) -> None:
        """
        Send *data* to every master of *topic*'s route, and when it has a consumer group to
        every slave too, as Java 4.9 (a slave that fails is logged: the master's answer is
        the one that counts).
        """
        for broker in self.route(topic).broker_datas:
            for broker_id, addr in sorted(broker.broker_addrs.items()):
                if broker_id == 0:
                    api.check_response(self.remoting.invoke(addr, api.heartbeat_request(data), self.timeout))
                elif data.consumers:
                    try:
                        api.check_response(self.remoting.invoke(addr, api.heartbeat_request(data), self.timeout))
                    except (RemotingError, MQBrokerError) as e:
                        log.warning("heartbeat to slave %s failed: %s", addr, e)

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


class BlockingProducer(ProducerBase):
    """
    A producer (Java ``DefaultMQProducer`` in blocking form): the methods of
    :class:`~rocketmq_tx.remoting.sendapi.ProducerBase` (``send``, ``send_orderly``,
    ``send_batch``, ``send_oneway``, ``publish_info``, ``fetch_publish_queues``), whose
    plans the Twisted :class:`~rocketmq_tx.client.producer.Producer` runs too.

    :param group: the producer group.
    :param namesrv_addr: ``"a:9876;b:9876"``.
    :param send_timeout: seconds for one send, retries included (Java ``sendMsgTimeout``).
    :param settings: ``retry_times_when_send_failed``, ``compress_over``,
        ``max_message_size``, ``default_topic_queue_nums`` (see ``ProducerBase``).
    :param access_key: ACL 1.0: sign every request with this AccessKey and *secret_key*
        (and *security_token*), or with one ``credentials``.
    :param enable_msg_trace: Java's ``enableMsgTrace``: a Pub trace record per answered send,
        sent to *trace_topic* (default ``RMQ_SYS_TRACE_TOPIC``) after a later send or at
        :meth:`close` (:mod:`rocketmq_tx.blocking.trace`).
    """

    def __init__(self, group: str, namesrv_addr: str, *, send_timeout: float = 3.0, client_id: str | None = None,
                 tls: TlsSettings | None = None, access_key: str | None = None, secret_key: str | None = None,
                 security_token: str | None = None, credentials: SessionCredentials | None = None,
                 enable_msg_trace: bool = False, trace_topic: str | None = None, **settings: Any) -> None:
        self.client = BlockingMQClient.create(namesrv_addr, timeout=send_timeout, client_id=client_id, tls=tls,
                                              access_key=access_key, secret_key=secret_key,
                                              security_token=security_token, credentials=credentials)
        super().__init__(group, self.client.route_table, send_timeout=send_timeout, **settings)
        self.trace_topic = trace_topic
        self.trace_dispatcher = BlockingTraceDispatcher(self.client, group, trace_topic) \
            if enable_msg_trace else None
        if self.trace_dispatcher is not None:
            self.send_trace = self.trace_dispatcher.on_send

    def _run(self, plan: Plan[T]) -> T:
        try:
            return self.client.run(plan)
        finally:
            if self.trace_dispatcher is not None:
                self.trace_dispatcher.send_due()

    def flush_traces(self) -> None:
        """Send the trace records waiting now (``close()`` does it too)."""
        if self.trace_dispatcher is not None:
            self.trace_dispatcher.flush()

    def __getstate__(self) -> dict[str, Any]:
        return {"group": self.group, "namesrv_addr": self.client.namesrv_addr, "send_timeout": self.send_timeout,
                "retry_times_when_send_failed": self.retry_times_when_send_failed,
                "compress_over": self.compress_over, "max_message_size": self.max_message_size,
                "client_id": self.client._given_client_id, "default_topic_queue_nums": self.default_topic_queue_nums,
                "tls": self.client.tls, "credentials": self.client.credentials,
                "enable_msg_trace": self.trace_dispatcher is not None, "trace_topic": self.trace_topic}

    def __setstate__(self, state: dict[str, Any]) -> None:
        type(self).__init__(self, state.pop("group"), state.pop("namesrv_addr"), **state)

    def __enter__(self) -> BlockingProducer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Send the trace records waiting (if tracing), then close the connections."""
        try:
            self.flush_traces()
        finally:
            self.client.close()


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
        self.client = BlockingMQClient.create(namesrv_addr, timeout=timeout, client_id=client_id, tls=tls,
                                              access_key=access_key, secret_key=secret_key,
                                              security_token=security_token, credentials=credentials)
        self._subscriptions: dict[tuple[str, MessageSelector], SubscriptionData] = {}
        #: where each queue's next pull goes (Java ``PullAPIWrapper``'s table)
        self.pull_nodes = PullFromWhichNode()

    def __getstate__(self) -> dict[str, Any]:
        return {"group": self.group, "namesrv_addr": self.client.namesrv_addr, "timeout": self.client.timeout,
                "client_id": self.client._given_client_id, "tls": self.client.tls,
                "credentials": self.client.credentials}

    def __setstate__(self, state: dict[str, Any]) -> None:
        type(self).__init__(self, state.pop("group"), state.pop("namesrv_addr"), **state)

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

    def _subscription(self, topic: str, expression: str | MessageSelector) -> SubscriptionData:
        key = (topic, MessageSelector.of(expression))
        sub = self._subscriptions.get(key)
        if sub is None:
            if len(self._subscriptions) >= 1024:  # callers that vary the expression: keep it bounded
                self._subscriptions.clear()
            sub = self._subscriptions[key] = SubscriptionData.of(topic, key[1])
        return sub

    def pull(self, mq: MessageQueue, offset: int, max_nums: int = 32,
             sub_expression: str | MessageSelector = "*", *, timeout: float | None = None) -> PullResult:
        """
        Up to *max_nums* messages of *mq* from *offset* whose tag matches *sub_expression*
        (``"*"`` or ``"TagA || TagB"``), or that a :class:`~rocketmq_tx.remoting.api.MessageSelector`
        selects (``MessageSelector.by_sql("a > 5")``: the broker evaluates it on each message's
        properties, and answers PULL_RETRY_IMMEDIATELY, ``NO_MATCHED_MSG``, with the offset past
        a stretch that does not match). Continue at ``result.next_begin_offset``.

        :raises MQBrokerError: the broker answered something other than found / not found /
            no match / offset illegal.
        """
        sub = self._subscription(mq.topic, sub_expression)
        return self.client.run(sendapi.pull_call(
            self.client.route_table, self.pull_nodes, mq,
            lambda slave: api.pull_request(self.group, mq, offset, max_nums, sub, slave=slave), sub), timeout)

    def check_selector(self, topic: str, selector: str | MessageSelector) -> None:
        """
        Ask a broker of *topic* whether it serves *selector* (CHECK_CLIENT_CONFIG, as Java's
        consumers do at start): a TAG expression always passes.

        :raises MQBrokerError: SYSTEM_ERROR when the broker filters by tags only
            (``enablePropertyFilter=false``), SUBSCRIPTION_PARSE_FAILED for a malformed expression.
        """
        sub = self._subscription(topic, selector)
        queues = self.fetch_queues(topic)
        if sub.expression_type == api.TAG or not queues:
            return
        request = api.check_client_config_request(self.group, self.client.client_id, sub)
        api.check_response(self.client.invoke_broker(queues[0], request))

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
        # The master, or while the route has none its slave (Java's RemoteBrokerOffsetStore).
        response = self.client.run(sendapi.offset_call(
            self.client.route_table, mq, api.query_consumer_offset_request(self.group, mq)))
        return api.parse_query_consumer_offset_response(response)

    def commit_offset(self, mq: MessageQueue, offset: int) -> None:
        """Store *offset* (the next offset to consume) as the group's position in *mq*."""
        response = self.client.run(sendapi.offset_call(
            self.client.route_table, mq, api.update_consumer_offset_request(self.group, mq, offset)))
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
