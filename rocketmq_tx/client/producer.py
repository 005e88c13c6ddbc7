# -*- test-case-name: rocketmq_tx.client.test.test_producer -*-
"""
:class:`Producer`: Java's ``DefaultMQProducer`` on Twisted. ``send`` returns a Deferred
of :class:`~rocketmq_tx.remoting.api.SendResult`; retries move to another broker; the
request and response are the shared ones of :mod:`rocketmq_tx.remoting.api`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from twisted.internet.defer import Deferred, fail, inlineCallbacks, succeed
from twisted.logger import Logger
from twisted.python.failure import Failure

from rocketmq_tx.acl import SessionCredentials
from rocketmq_tx.client.instance import MQClientInstance, client_credentials
from rocketmq_tx.common.clientroute import TopicPublishInfo, publish_info, select_by_hash
from rocketmq_tx.common.message import Message, MessageQueue
from rocketmq_tx.common.msgid import UniqueKeyGenerator
from rocketmq_tx.common.route import TopicRouteData
from rocketmq_tx.remoting import api
from rocketmq_tx.remoting.api import AUTO_CREATE_TOPIC_KEY, MQClientError, SendResult
from rocketmq_tx.remoting.codes import ResponseCode
from rocketmq_tx.remoting.errors import MQBrokerError, RemotingError
from rocketmq_tx.tlsconfig import TlsSettings

__all__ = ["Producer"]

log = Logger()

MessageQueueSelector = Callable[[list[MessageQueue], Message, Any], MessageQueue]


class Producer:
    """
    :param group: the producer group.
    :param namesrv_addr: ``"a:9876;b:9876"`` (ignored when *instance* is given).
    :param reactor: the reactor (default: the global one).
    :param instance: share a client instance with other producers and consumers.
    :param tls: use TLS (Java's ``setUseTLS(true)``) with these ``tls.client.*`` settings.
    :param send_timeout: seconds for one send, retries included.
    :param retry_times_when_send_failed: extra attempts, on another broker when possible.
    :param compress_over: bodies of at least this many bytes are zlib-compressed.
    :param access_key: ACL 1.0: sign every request with this AccessKey and *secret_key*
        (and *security_token*, if any); or give one ``credentials``
        (:class:`~rocketmq_tx.acl.SessionCredentials`). With a shared *instance*, give them
        to the instance.
    """

    def __init__(self, group: str, namesrv_addr: str = "", reactor: Any = None, *,
                 instance: MQClientInstance | None = None, tls: TlsSettings | None = None,
                 send_timeout: float = 3.0,
                 retry_times_when_send_failed: int = 2, compress_over: int = 4096,
                 max_message_size: int = 4 * 1024 * 1024, default_topic_queue_nums: int = 4,
                 access_key: str | None = None, secret_key: str | None = None, security_token: str | None = None,
                 credentials: SessionCredentials | None = None) -> None:
        if reactor is None and instance is None:
            from twisted.internet import reactor as default_reactor

            reactor = default_reactor
        self.group = group
        self._own_instance = instance is None
        creds = client_credentials(instance, access_key, secret_key, security_token, credentials)
        self.instance = instance or MQClientInstance(reactor, namesrv_addr, timeout=send_timeout, tls=tls,
                                                     credentials=creds)
        self.reactor = self.instance.reactor
        self.send_timeout = send_timeout
        self.retry_times_when_send_failed = retry_times_when_send_failed
        self.compress_over = compress_over
        self.max_message_size = max_message_size
        self.default_topic_queue_nums = default_topic_queue_nums
        self.ids = UniqueKeyGenerator()
        self.publish: dict[str, tuple[TopicRouteData, TopicPublishInfo]] = {}

    # ------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Register the group with the client instance (and start it if it is ours)."""
        self.instance.register_producer(self.group)
        if self._own_instance:
            self.instance.start()

    def stop(self) -> Deferred:
        """Unregister; stops and closes the instance if it is ours."""
        self.instance.unregister_producer(self.group)
        if self._own_instance:
            return self.instance.stop()
        return succeed(None)

    async def __aenter__(self) -> Producer:
        self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # ------------------------------------------------------------ routes
    @inlineCallbacks
    def publish_info(self, topic: str):  # type: ignore[no-untyped-def]
        """The topic's writable queues (through ``TBW102`` for a topic not created yet)."""
        route = self.instance.routes.get(topic)
        if route is not None:
            # The instance refreshes watched routes every 30 s; follow its latest one.
            cached = self.publish.get(topic)
            if cached is None or cached[0] is not route:
                cached = self.publish[topic] = (route, publish_info(topic, route))
            return cached[1]
        try:
            route = yield self.instance.update_route(topic)
        except MQBrokerError as e:
            if e.code != ResponseCode.TOPIC_NOT_EXIST:
                raise
            route = yield self.instance.route(AUTO_CREATE_TOPIC_KEY)
            # The instance caches the template's route, so its brokers are known by name.
            return publish_info(topic, route, template_queue_nums=self.default_topic_queue_nums)
        self.instance.watch_topic(topic)
        info = publish_info(topic, route)
        self.publish[topic] = (route, info)
        return info

    @inlineCallbacks
    def fetch_publish_queues(self, topic: str):  # type: ignore[no-untyped-def]
        info = yield self.publish_info(topic)
        return list(info.queues)

    # ------------------------------------------------------------ sends
    def send(self, msg: Message, *, queue: MessageQueue | None = None, selector: MessageQueueSelector | None = None,
             arg: Any = None, timeout: float | None = None) -> Deferred:
        """
        Send *msg*; fires with the SendResult.

        Without *queue*/*selector* a failed attempt is retried up to
        ``retry_times_when_send_failed`` times, on another broker when there is one. With
        *queue*, or *selector* (``selector(queues, msg, arg)``), exactly that queue, no retry.
        Fails with :class:`MQBrokerError` (``.code``), :class:`MQClientError` or a remoting error.
        """
        try:
            prepared = api.prepare_message(msg, self.ids, compress_over=self.compress_over,
                                           max_message_size=self.max_message_size)
        except MQClientError as e:
            return fail(e)
        return self._send(prepared, msg, queue, selector, arg, timeout)

    def send_orderly(self, msg: Message, sharding_key: Any, *, timeout: float | None = None) -> Deferred:
        """Send to the queue *sharding_key* hashes to, so equal keys stay in order."""
        return self.send(msg, selector=select_by_hash, arg=sharding_key, timeout=timeout)

    def send_batch(self, messages: Sequence[Message], *, queue: MessageQueue | None = None,
                   timeout: float | None = None) -> Deferred:
        """One SEND_BATCH_MESSAGE for messages of one topic."""
        try:
            prepared = api.prepare_batch(messages, self.ids)
        except MQClientError as e:
            return fail(e)
        return self._send(prepared, messages[0], queue, None, None, timeout)

    def send_callback(self, msg: Message, on_success: Callable[[SendResult], object],
                      on_exception: Callable[[BaseException], object], **kwargs: Any) -> None:
        """Java's ``send(msg, SendCallback)``: exactly one of the callbacks is called."""
        def failed(failure: Failure) -> None:
            on_exception(failure.value)

        self.send(msg, **kwargs).addCallbacks(on_success, failed)

    @inlineCallbacks
    def send_oneway(self, msg: Message, *, queue: MessageQueue | None = None):  # type: ignore[no-untyped-def]
        """Send without an answer; fires once the request is written."""
        prepared = api.prepare_message(msg, self.ids, compress_over=self.compress_over,
                                       max_message_size=self.max_message_size)
        if queue is None:
            info = yield self.publish_info(prepared.topic)
            queue = info.select_queue()
        request = api.send_request(prepared, self.group, queue, oneway=True)
        yield self.instance.remoting.invoke_oneway(self.instance.broker_addr(queue.broker_name), request)

    @inlineCallbacks
    def _send(self, prepared: api.PreparedMessage, msg: Message, queue: MessageQueue | None,
              selector: MessageQueueSelector | None, arg: Any, timeout: float | None):  # type: ignore[no-untyped-def]
        timeout = self.send_timeout if timeout is None else timeout
        if selector is not None:
            queues = yield self.fetch_publish_queues(prepared.topic)
            if not queues:
                raise MQClientError(f"No route info for this topic, {prepared.topic}")
            queue = selector(queues, msg, arg)
        if queue is not None:
            result = yield self._send_to(prepared, queue, timeout)
            return result
        info = yield self.publish_info(prepared.topic)
        if not info.ok:
            raise MQClientError(f"No route info of this topic: {prepared.topic}")
        plan = api.SendRetryPlan(info, self.retry_times_when_send_failed, timeout, self.reactor.seconds)
        while (step := plan.next()) is not None:
            mq, remaining = step
            try:
                result = yield self._send_to(prepared, mq, remaining)
                return result
            except (MQBrokerError, RemotingError, MQClientError) as e:
                plan.failed(mq, e)
                log.warn("send to {mq} failed (attempt {n}): {error}", mq=mq, n=plan.tried, error=e)
        raise plan.give_up()

    @inlineCallbacks
    def _send_to(self, prepared: api.PreparedMessage, mq: MessageQueue, timeout: float):  # type: ignore[no-untyped-def]
        request = api.send_request(prepared, self.group, mq)
        response = yield self.instance.invoke_broker(mq, request, timeout)
        return api.parse_send_response(response, mq, prepared.msg_id)
