# -*- test-case-name: rocketmq_tx.client.test.test_litepull -*-
"""
:class:`LitePullConsumer`: Java's ``DefaultLitePullConsumer`` on Twisted. The application
either assigns queues itself (and may seek) or subscribes to topics, whose queues are then
shared with the group's other members (rebalanced every 20 s and when a broker says the
membership changed); it polls, and consumed offsets are committed to the broker on
request and every 5 s.

Pulls use PULL_MESSAGE (11) with the subscription in the header, which every 4.9 and 5.x
broker serves (5.x Java sends LITE_PULL_MESSAGE, 361, which a 4.9 broker refuses).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from twisted.internet.defer import Deferred, DeferredList, inlineCallbacks
from twisted.internet.task import LoopingCall, deferLater
from twisted.logger import Logger

from rocketmq_tx.acl import SessionCredentials
from rocketmq_tx.client.instance import MQClientInstance, client_credentials
from rocketmq_tx.client.rebalance import IdsChangedProcessor, RebalanceImpl
from rocketmq_tx.common.clientroute import subscribe_queues
from rocketmq_tx.common.message import MessageExt, MessageQueue
from rocketmq_tx.common.rebalance import STRATEGIES
from rocketmq_tx.remoting import RequestCode, api
from rocketmq_tx.remoting.api import ConsumerData, MQClientError, PullStatus, SubscriptionData
from rocketmq_tx.tlsconfig import TlsSettings

__all__ = ["LitePullConsumer", "CONSUME_FROM_LAST_OFFSET", "CONSUME_FROM_FIRST_OFFSET", "CONSUME_FROM_TIMESTAMP"]

log = Logger()

CONSUME_FROM_LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
CONSUME_FROM_FIRST_OFFSET = "CONSUME_FROM_FIRST_OFFSET"
CONSUME_FROM_TIMESTAMP = "CONSUME_FROM_TIMESTAMP"
#: Java's default ``consumeTimestamp``: half an hour before the consumer starts.
DEFAULT_CONSUME_TIMESTAMP_AGO = 30 * 60.0


class LitePullConsumer:
    """
    :param group: the consumer group (its offsets live on the brokers).
    :param namesrv_addr: ``"a:9876;b:9876"`` (ignored with *instance*).
    :param pull_batch_size: messages per pull of one queue (Java default 10).
    :param auto_commit: commit consumed offsets every *auto_commit_interval* seconds.
    :param consume_from_where: where an assigned queue without a committed offset starts:
        its last or first offset, or (``CONSUME_FROM_TIMESTAMP``) the first message stored at
        or after *consume_timestamp_ms* (default: half an hour before :meth:`start`).
    :param poll_interval: seconds between rounds of pulls while :meth:`poll` finds nothing.
    :param access_key: ACL 1.0: sign every request with this AccessKey and *secret_key*
        (and *security_token*, if any); or give one ``credentials``
        (:class:`~rocketmq_tx.acl.SessionCredentials`). With a shared *instance*, give them
        to the instance.
    """

    def __init__(self, group: str, namesrv_addr: str = "", reactor: Any = None, *,
                 instance: MQClientInstance | None = None, tls: TlsSettings | None = None,
                 pull_batch_size: int = 10, auto_commit: bool = True,
                 auto_commit_interval: float = 5.0, consume_from_where: str = CONSUME_FROM_LAST_OFFSET,
                 poll_interval: float = 0.2, timeout: float = 3.0, consume_timestamp_ms: int | None = None,
                 allocate: str = "AVG", rebalance_interval: float = 20.0,
                 access_key: str | None = None, secret_key: str | None = None, security_token: str | None = None,
                 credentials: SessionCredentials | None = None) -> None:
        if reactor is None and instance is None:
            from twisted.internet import reactor as default_reactor

            reactor = default_reactor
        self.group = group
        self._own_instance = instance is None
        creds = client_credentials(instance, access_key, secret_key, security_token, credentials)
        self.instance = instance or MQClientInstance(reactor, namesrv_addr, timeout=timeout, tls=tls, credentials=creds)
        self.reactor = self.instance.reactor
        self.pull_batch_size = pull_batch_size
        self.auto_commit = auto_commit
        self.auto_commit_interval = auto_commit_interval
        self.consume_from_where = consume_from_where
        self.poll_interval = poll_interval
        self.consume_timestamp_ms = consume_timestamp_ms
        self.assigned: list[MessageQueue] = []
        #: queue -> the next offset to pull (``None`` until resolved)
        self.pull_offsets: dict[MessageQueue, int | None] = {}
        #: queue -> the next offset after what poll() handed out (what a commit stores)
        self.consumed: dict[MessageQueue, int] = {}
        self._committed: dict[MessageQueue, int] = {}
        self._subscriptions: dict[str, SubscriptionData] = {}
        self._commit_loop: LoopingCall | None = None
        self._next = 0
        self.running = False
        #: None until assign() or subscribe() chooses the mode (Java allows one of them only)
        self._mode: str | None = None
        self._subscribed: dict[str, str] = {}
        self.rebalance_impl = RebalanceImpl(self.instance, group, STRATEGIES[allocate])
        self.rebalance_interval = rebalance_interval
        self._rebalance_loop: LoopingCall | None = None

    # ------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Register with the client instance (heartbeats as a pull consumer) and start auto-commit."""
        self.running = True
        if self.consume_timestamp_ms is None:
            self.consume_timestamp_ms = int((self.reactor.seconds() - DEFAULT_CONSUME_TIMESTAMP_AGO) * 1000)
        self.instance.register_consumer(self.group, self._consumer_data)
        if self._own_instance:
            self.instance.start()
        if self._mode == "subscribe":
            self._start_rebalancing()
        if self.auto_commit:
            self._commit_loop = LoopingCall(self._auto_commit)
            self._commit_loop.clock = self.reactor
            self._commit_loop.start(self.auto_commit_interval, now=False)

    @inlineCallbacks
    def stop(self):  # type: ignore[no-untyped-def]
        """Commit (when auto-commit is on), unregister, and close the instance if it is ours."""
        self.running = False
        for loop in (self._commit_loop, self._rebalance_loop):
            if loop is not None and loop.running:
                loop.stop()
        if self.auto_commit:
            try:
                yield self.commit()
            except Exception as e:  # stopping must not fail because a broker is gone
                log.warn("final commit failed: {error}", error=e)
        self.instance.unregister_consumer(self.group)
        if self._own_instance:
            yield self.instance.stop()

    async def __aenter__(self) -> LitePullConsumer:
        self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def _consumer_data(self) -> ConsumerData:
        topics = set(self._subscribed) | {q.topic for q in self.assigned}
        return ConsumerData(self.group, "CONSUME_ACTIVELY", "CLUSTERING", self.consume_from_where,
                            [self._subscription(t) for t in sorted(topics)])

    def _subscription(self, topic: str, expression: str = "*") -> SubscriptionData:
        sub = self._subscriptions.get(topic)
        if sub is None:
            sub = self._subscriptions[topic] = SubscriptionData.build(topic, expression)
        return sub

    # ------------------------------------------------------------ assignment
    @inlineCallbacks
    def fetch_queues(self, topic: str):  # type: ignore[no-untyped-def]
        """The topic's readable queues, sorted."""
        route = yield self.instance.update_route(topic)
        self.instance.watch_topic(topic)
        return subscribe_queues(topic, route)

    def _choose_mode(self, mode: str) -> None:
        if self._mode not in (None, mode):
            raise MQClientError("Subscribe and assign are mutually exclusive.")
        self._mode = mode

    def assign(self, queues: Iterable[MessageQueue], sub_expression: str = "*") -> None:
        """Consume exactly *queues* from now on (with tags matching *sub_expression*)."""
        self._choose_mode("assign")
        queues = sorted(set(queues))
        for mq in queues:
            self._subscriptions[mq.topic] = SubscriptionData.build(mq.topic, sub_expression)
            self.instance.watch_topic(mq.topic)
        self._set_assigned(queues)

    def _set_assigned(self, queues: list[MessageQueue]) -> None:
        self.assigned = queues
        self.pull_offsets = {mq: self.pull_offsets.get(mq) for mq in queues}
        self.consumed = {mq: off for mq, off in self.consumed.items() if mq in self.pull_offsets}

    # ------------------------------------------------------------ subscribe mode
    def subscribe(self, topic: str, sub_expression: str = "*") -> None:
        """
        Consume *topic* as a member of the group: its queues are shared with the other
        members (Java's averagely strategy by default) and follow them as they come and go.
        """
        self._choose_mode("subscribe")
        self._subscribed[topic] = sub_expression
        self._subscriptions[topic] = SubscriptionData.build(topic, sub_expression)
        self.instance.watch_topic(topic)
        if self.running:
            self._start_rebalancing()
            self.rebalance()

    def unsubscribe(self, topic: str) -> None:
        """Stop consuming *topic* (its queues go at the next rebalance)."""
        self._subscribed.pop(topic, None)
        if self.running:
            self.rebalance()

    def _start_rebalancing(self) -> None:
        processor = self.instance.processors.lookup(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED)
        if not isinstance(processor, IdsChangedProcessor):
            processor = IdsChangedProcessor()
            self.instance.processors.register(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, processor)
        processor.consumers[self.group] = self
        if self._rebalance_loop is None or not self._rebalance_loop.running:
            self._rebalance_loop = LoopingCall(self.rebalance)
            self._rebalance_loop.clock = self.reactor
            self._rebalance_loop.start(self.rebalance_interval, now=True)

    def rebalance(self) -> Deferred:
        """Recompute this member's queues now (one rebalance at a time)."""
        return self.rebalance_impl.run(self._rebalance)

    @inlineCallbacks
    def _rebalance(self):  # type: ignore[no-untyped-def]
        wanted = yield self.rebalance_impl.allocate(list(self._subscribed), owned=self.assigned)
        if not self.running:
            return
        dropped = {mq: self.consumed[mq] for mq in self.assigned if mq not in wanted and mq in self.consumed}
        self._set_assigned(sorted(wanted))
        if dropped:
            # Java commits a queue's offset when a rebalance takes it away, so its next
            # owner starts where this member stopped.
            try:
                yield self.commit(dropped)
            except Exception as e:
                log.warn("commit of dropped queues failed: {error}", error=e)

    def _check_assigned(self, mq: MessageQueue) -> None:
        if mq not in self.pull_offsets:
            raise MQClientError(f"The message queue is not in assigned list, message queue: {mq}")

    def seek(self, mq: MessageQueue, offset: int) -> None:
        """Continue *mq* at *offset*."""
        self._check_assigned(mq)
        self.pull_offsets[mq] = offset
        self.consumed[mq] = offset

    @inlineCallbacks
    def seek_to_begin(self, mq: MessageQueue):  # type: ignore[no-untyped-def]
        self._check_assigned(mq)
        offset = yield self.min_offset(mq)
        self.seek(mq, offset)

    @inlineCallbacks
    def seek_to_end(self, mq: MessageQueue):  # type: ignore[no-untyped-def]
        self._check_assigned(mq)
        offset = yield self.max_offset(mq)
        self.seek(mq, offset)

    @inlineCallbacks
    def seek_to_timestamp(self, mq: MessageQueue, timestamp_ms: int):  # type: ignore[no-untyped-def]
        """Continue at the first message stored at or after *timestamp_ms*."""
        self._check_assigned(mq)
        offset = yield self.offset_for_timestamp(mq, timestamp_ms)
        self.seek(mq, offset)

    # ------------------------------------------------------------ offsets
    @inlineCallbacks
    def max_offset(self, mq: MessageQueue):  # type: ignore[no-untyped-def]
        response = yield self.instance.invoke_broker(mq, api.get_max_offset_request(mq))
        return api.parse_offset_response(response)

    @inlineCallbacks
    def min_offset(self, mq: MessageQueue):  # type: ignore[no-untyped-def]
        response = yield self.instance.invoke_broker(mq, api.get_min_offset_request(mq))
        return api.parse_offset_response(response)

    @inlineCallbacks
    def offset_for_timestamp(self, mq: MessageQueue, timestamp_ms: int):  # type: ignore[no-untyped-def]
        response = yield self.instance.invoke_broker(mq, api.search_offset_request(mq, timestamp_ms))
        return api.parse_offset_response(response)

    @inlineCallbacks
    def committed(self, mq: MessageQueue):  # type: ignore[no-untyped-def]
        """The group's committed offset of *mq* on the broker, ``None`` if there is none."""
        response = yield self.instance.invoke_broker(mq, api.query_consumer_offset_request(self.group, mq))
        return api.parse_query_consumer_offset_response(response)

    @inlineCallbacks
    def commit(self, offsets: dict[MessageQueue, int] | None = None):  # type: ignore[no-untyped-def]
        """
        Store the consumed offsets (or *offsets*) on the brokers and wait for every answer
        (Java ``commitSync``). Unchanged offsets are not sent again.
        """
        todo = dict(self.consumed if offsets is None else offsets)
        calls = []
        for mq, offset in sorted(todo.items()):
            if offsets is None and self._committed.get(mq) == offset:
                continue
            request = api.update_consumer_offset_request(self.group, mq, offset)
            d = self.instance.invoke_broker(mq, request)
            d.addCallback(api.check_response)
            d.addCallback(lambda _, mq=mq, offset=offset: self._committed.__setitem__(mq, offset))
            calls.append(d)
        results = yield DeferredList(calls, consumeErrors=True)
        for ok, value in results:
            if not ok:
                value.raiseException()

    def _auto_commit(self) -> Deferred:
        return self.commit().addErrback(lambda f: log.warn("auto commit failed: {error}", error=f.getErrorMessage()))

    @inlineCallbacks
    def _resolve_offset(self, mq: MessageQueue):  # type: ignore[no-untyped-def]
        # Java computePullFromWhere: the committed offset, else the configured start.
        offset = yield self.committed(mq)
        if offset is None or offset < 0:
            if self.consume_from_where == CONSUME_FROM_FIRST_OFFSET:
                offset = yield self.min_offset(mq)
            elif self.consume_from_where == CONSUME_FROM_TIMESTAMP and self.consume_timestamp_ms is not None:
                offset = yield self.offset_for_timestamp(mq, self.consume_timestamp_ms)
            else:
                offset = yield self.max_offset(mq)
        if self.pull_offsets.get(mq, 0) is None:
            self.pull_offsets[mq] = offset
            self.consumed.setdefault(mq, offset)
        return self.pull_offsets[mq]

    # ------------------------------------------------------------ polling
    @inlineCallbacks
    def poll(self, timeout: float = 5.0):  # type: ignore[no-untyped-def]
        """
        Messages from the assigned queues: one round of pulls, repeated every
        ``poll_interval`` until something arrives or *timeout* seconds pass (then ``[]``).
        """
        if not self.running:
            raise MQClientError("The consumer is not running; call start() first")
        deadline = self.reactor.seconds() + timeout
        while True:
            messages = yield self._pull_round()
            if messages or self.reactor.seconds() + self.poll_interval > deadline:
                return messages
            yield deferLater(self.reactor, self.poll_interval, lambda: None)

    @inlineCallbacks
    def _pull_round(self):  # type: ignore[no-untyped-def]
        queues = list(self.assigned)
        if not queues:
            return []
        # Start at a different queue each round so one busy queue does not starve the rest.
        self._next = (self._next + 1) % len(queues)
        queues = queues[self._next:] + queues[:self._next]
        results = yield DeferredList([self._pull_one(mq) for mq in queues], consumeErrors=True)
        messages: list[MessageExt] = []
        for mq, (ok, value) in zip(queues, results):
            if ok:
                messages += value
            else:
                log.warn("pull of {mq} failed: {error}", mq=mq, error=value.getErrorMessage())
        return messages

    @inlineCallbacks
    def _pull_one(self, mq: MessageQueue):  # type: ignore[no-untyped-def]
        offset = self.pull_offsets.get(mq)
        if offset is None:
            offset = yield self._resolve_offset(mq)
        sub = self._subscription(mq.topic)
        response = yield self.instance.invoke_broker(mq, api.pull_request(self.group, mq, offset,
                                                                          self.pull_batch_size, sub))
        result = api.parse_pull_response(response, mq, sub)
        if self.pull_offsets.get(mq) != offset:
            return []  # seeked or unassigned while the pull was in flight: drop it
        if result.pull_status is PullStatus.OFFSET_ILLEGAL:
            log.warn("offset {offset} of {mq} is illegal, moving to {next}", offset=offset, mq=mq,
                     next=result.next_begin_offset)
        self.pull_offsets[mq] = result.next_begin_offset
        self.consumed[mq] = result.next_begin_offset
        return result.msg_found_list
