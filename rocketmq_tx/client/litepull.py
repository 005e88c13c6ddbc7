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

from collections.abc import Callable, Iterable
from typing import Any, Unpack

from twisted.internet.defer import Deferred, DeferredList
from twisted.logger import Logger
from twisted.python.failure import Failure

from rocketmq_tx.client.clientprocessor import ClientRemotingProcessor
from rocketmq_tx.client.consumer import (
    CONSUME_FROM_FIRST_OFFSET,
    CONSUME_FROM_LAST_OFFSET,
    CONSUME_FROM_TIMESTAMP,
    ConsumerBase,
    InstanceOptions,
    sleep,
)
from rocketmq_tx.client.offsets import Failures
from rocketmq_tx.client.rebalance import RebalanceImpl
from rocketmq_tx.client.trace import CONSUME, AsyncTraceDispatcher
from rocketmq_tx.common.clientroute import subscribe_queues
from rocketmq_tx.common.message import MessageExt, MessageQueue
from rocketmq_tx.common.rebalance import STRATEGIES
from rocketmq_tx.common.route import TopicRouteData
from rocketmq_tx.common.trace import ConsumeReturnType
from rocketmq_tx.remoting import api, sendapi
from rocketmq_tx.remoting.api import ConsumerData, MessageSelector, MQClientError, PullStatus, SubscriptionData

__all__ = ["LitePullConsumer", "CONSUME_FROM_LAST_OFFSET", "CONSUME_FROM_FIRST_OFFSET", "CONSUME_FROM_TIMESTAMP"]

log = Logger()


class LitePullConsumer(ConsumerBase):
    """
    :param group: the consumer group (its offsets live on the brokers).
    :param namesrv_addr: ``"a:9876;b:9876"`` (ignored with ``instance``).
    :param reactor: the reactor (default: the global one).
    :param pull_batch_size: messages per pull of one queue (Java default 10).
    :param auto_commit: commit consumed offsets every *auto_commit_interval* seconds.
    :param consume_from_where: where an assigned queue without a committed offset starts:
        its last or first offset, or (``CONSUME_FROM_TIMESTAMP``) the first message stored at
        or after *consume_timestamp_ms* (default: half an hour before :meth:`start`).
    :param poll_interval: seconds between rounds of pulls while :meth:`poll` finds nothing.
    :param allocate: subscribe mode: ``"AVG"`` (Java's default), ``"AVG_BY_CIRCLE"`` or
        ``"CONSISTENT_HASH"``, rebalanced every *rebalance_interval* seconds.
    :param enable_msg_trace: Java's ``enableMsgTrace``: each pull that finds messages gives a
        SubBefore and a SubAfter trace record per message (success, as Java's lite-pull
        consumer records them right after the pull), sent to *trace_topic* (default
        ``RMQ_SYS_TRACE_TOPIC``).
    :param client: ``instance``, ``tls``, ``timeout`` and the ACL 1.0 credentials: see
        :class:`~rocketmq_tx.client.consumer.InstanceOptions`.
    """

    def __init__(self, group: str, namesrv_addr: str = "", reactor: Any = None, *, pull_batch_size: int = 10,
                 auto_commit: bool = True, auto_commit_interval: float = 5.0,
                 consume_from_where: str = CONSUME_FROM_LAST_OFFSET, consume_timestamp_ms: int | None = None,
                 poll_interval: float = 0.2, allocate: str = "AVG", rebalance_interval: float = 20.0,
                 enable_msg_trace: bool = False, trace_topic: str | None = None,
                 **client: Unpack[InstanceOptions]) -> None:
        ConsumerBase.__init__(self, group, namesrv_addr, reactor, consume_from_where=consume_from_where,
                              consume_timestamp_ms=consume_timestamp_ms, rebalance_interval=rebalance_interval,
                              **client)
        self.pull_batch_size = pull_batch_size
        self.auto_commit = auto_commit
        self.auto_commit_interval = auto_commit_interval
        self.poll_interval = poll_interval
        self.assigned: list[MessageQueue] = []
        #: queue -> the next offset to pull (``None`` until resolved)
        self.pull_offsets: dict[MessageQueue, int | None] = {}
        #: queue -> the next offset after what poll() handed out (what a commit stores)
        self.consumed: dict[MessageQueue, int] = {}
        self._subscriptions: dict[str, SubscriptionData] = {}
        self._next = 0
        #: None until assign() or subscribe() chooses the mode (Java allows one of them only)
        self._mode: str | None = None
        self._subscribed: dict[str, str | MessageSelector] = {}
        self.rebalance_impl = RebalanceImpl(self.instance, group, STRATEGIES[allocate])
        self._rebalancing = False
        self.trace_dispatcher = AsyncTraceDispatcher(self.instance, group, CONSUME, trace_topic) \
            if enable_msg_trace else None

    # ------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Register with the client instance (heartbeats as a pull consumer) and start auto-commit."""
        if self.trace_dispatcher is not None:
            self.trace_dispatcher.start()
        ConsumerBase.start(self)
        if self._mode == "subscribe":
            self._start_rebalancing()
        if self.auto_commit:
            self.every(self.auto_commit_interval, self._auto_commit, now=False)

    async def _shutdown(self) -> None:
        # stop(): commit (when auto-commit is on) before leaving the group.
        self._rebalancing = False
        if self.auto_commit:
            try:
                await self.commit()
            except Exception as e:  # stopping must not fail because a broker is gone
                log.warn("final commit failed: {error}", error=e)
        if self.trace_dispatcher is not None:
            await self.trace_dispatcher.stop()

    def _consumer_data(self) -> ConsumerData:
        topics = set(self._subscribed) | {q.topic for q in self.assigned}
        return ConsumerData(self.group, "CONSUME_ACTIVELY", "CLUSTERING", self.consume_from_where,
                            [self._subscription(t) for t in sorted(topics)])

    def _subscription(self, topic: str, expression: str | MessageSelector = "*") -> SubscriptionData:
        sub = self._subscriptions.get(topic)
        if sub is None:
            sub = self._subscriptions[topic] = SubscriptionData.of(topic, expression)
        return sub

    # ------------------------------------------------------------ assignment
    def fetch_queues(self, topic: str) -> Deferred[list[MessageQueue]]:
        """The topic's readable queues, sorted (its route is kept fresh from now on)."""
        def found(route: TopicRouteData) -> list[MessageQueue]:
            self.instance.watch_topic(topic)
            return subscribe_queues(topic, route)

        return self.instance.update_route(topic).addCallback(found)

    def _choose_mode(self, mode: str) -> None:
        if self._mode not in (None, mode):
            raise MQClientError("Subscribe and assign are mutually exclusive.")
        self._mode = mode

    def assign(self, queues: Iterable[MessageQueue], sub_expression: str | MessageSelector = "*") -> None:
        """
        Consume exactly *queues* from now on (with tags matching *sub_expression*, or what a
        :class:`~rocketmq_tx.remoting.api.MessageSelector` selects).
        """
        self._choose_mode("assign")
        queues = sorted(set(queues))
        for mq in queues:
            self._subscriptions[mq.topic] = SubscriptionData.of(mq.topic, sub_expression)
            self.instance.watch_topic(mq.topic)
        self._set_assigned(queues)

    def _set_assigned(self, queues: list[MessageQueue]) -> None:
        self.assigned = queues
        self.pull_offsets = {mq: self.pull_offsets.get(mq) for mq in queues}
        self.consumed = {mq: off for mq, off in self.consumed.items() if mq in self.pull_offsets}

    # ------------------------------------------------------------ subscribe mode
    def subscribe(self, topic: str, sub_expression: str | MessageSelector = "*") -> None:
        """
        Consume *topic* as a member of the group: its queues are shared with the other
        members (Java's averagely strategy by default) and follow them as they come and go.
        *sub_expression* is a TAG expression or a
        :class:`~rocketmq_tx.remoting.api.MessageSelector` (``MessageSelector.by_sql(...)``).
        """
        self._choose_mode("subscribe")
        self._subscribed[topic] = sub_expression
        self._subscriptions[topic] = SubscriptionData.of(topic, sub_expression)
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
        ClientRemotingProcessor.of(self.instance).add(self.group, self)
        if not self._rebalancing:
            self._rebalancing = True
            self.every(self.rebalance_interval, self.rebalance, now=True)

    def rebalance(self) -> Deferred[None]:
        """Recompute this member's queues now (one rebalance at a time)."""
        return self.rebalance_impl.run(self._rebalance)

    async def _rebalance(self) -> None:
        wanted = await self.rebalance_impl.allocate(list(self._subscribed), owned=self.assigned)
        if not self.running:
            return
        dropped = {mq: self.consumed[mq] for mq in self.assigned if mq not in wanted and mq in self.consumed}
        self._set_assigned(sorted(wanted))
        if dropped:
            # Java commits a queue's offset when a rebalance takes it away, so its next
            # owner starts where this member stopped.
            try:
                await self.commit(dropped)
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

    def seek_to_begin(self, mq: MessageQueue) -> Deferred[None]:
        return self._seek_to(mq, self.min_offset)

    def seek_to_end(self, mq: MessageQueue) -> Deferred[None]:
        return self._seek_to(mq, self.max_offset)

    def seek_to_timestamp(self, mq: MessageQueue, timestamp_ms: int) -> Deferred[None]:
        """Continue at the first message stored at or after *timestamp_ms*."""
        return self._seek_to(mq, lambda mq: self.offset_for_timestamp(mq, timestamp_ms))

    def _seek_to(self, mq: MessageQueue, find: Callable[[MessageQueue], Deferred[int]]) -> Deferred[None]:
        async def seek() -> None:
            self._check_assigned(mq)
            self.seek(mq, await find(mq))

        return Deferred.fromCoroutine(seek())

    # ------------------------------------------------------------ offsets
    def commit(self, offsets: dict[MessageQueue, int] | None = None) -> Deferred[None]:
        """
        Store the consumed offsets (or *offsets*) on the brokers and wait for every answer
        (Java ``commitSync``); raises the first failure. Unchanged consumed offsets are not
        sent again.
        """
        todo = dict(self.consumed if offsets is None else offsets)
        return self.offset_store.commit_all(todo, changed_only=offsets is None).addCallback(_raise_first)

    def _auto_commit(self) -> Deferred[None]:
        return self.commit().addErrback(lambda f: log.warn("auto commit failed: {error}", error=f.getErrorMessage()))

    async def _resolve_offset(self, mq: MessageQueue) -> int:
        offset = await self.start_offset(mq)
        resolved = self.pull_offsets.get(mq, 0)
        if resolved is None:
            self.pull_offsets[mq] = resolved = offset
            self.consumed.setdefault(mq, offset)
        return resolved

    # ------------------------------------------------------------ polling
    def poll(self, timeout: float = 5.0) -> Deferred[list[MessageExt]]:
        """
        Messages from the assigned queues: one round of pulls, repeated every
        ``poll_interval`` until something arrives or *timeout* seconds pass (then ``[]``).
        """
        return Deferred.fromCoroutine(self._poll(timeout))

    async def _poll(self, timeout: float) -> list[MessageExt]:
        if not self.running:
            raise MQClientError("The consumer is not running; call start() first")
        deadline = self.now() + timeout
        while True:
            messages = await self._pull_round()
            if messages or self.now() + self.poll_interval > deadline:
                return messages
            await sleep(self.reactor, self.poll_interval)

    async def _pull_round(self) -> list[MessageExt]:
        queues = list(self.assigned)
        if not queues:
            return []
        # Start at a different queue each round so one busy queue does not starve the rest.
        self._next = (self._next + 1) % len(queues)
        queues = queues[self._next:] + queues[:self._next]
        results = await DeferredList([Deferred.fromCoroutine(self._pull_one(mq)) for mq in queues],
                                     consumeErrors=True)
        messages: list[MessageExt] = []
        for mq, (_ok, value) in zip(queues, results):
            if isinstance(value, Failure):
                log.warn("pull of {mq} failed: {error}", mq=mq, error=value.getErrorMessage())
            else:
                messages += value
        return messages

    async def _pull_one(self, mq: MessageQueue) -> list[MessageExt]:
        offset = self.pull_offsets.get(mq)
        if offset is None:
            offset = await self._resolve_offset(mq)
        sub = self._subscription(mq.topic)
        result = await self.instance.run(sendapi.pull_call(
            self.instance.route_table, self.pull_nodes, mq,
            lambda slave: api.pull_request(self.group, mq, offset, self.pull_batch_size, sub, slave=slave), sub))
        if self.pull_offsets.get(mq) != offset:
            return []  # seeked or unassigned while the pull was in flight: drop it
        if result.pull_status is PullStatus.OFFSET_ILLEGAL:
            log.warn("offset {offset} of {mq} is illegal, moving to {next}", offset=offset, mq=mq,
                     next=result.next_begin_offset)
        self.pull_offsets[mq] = result.next_begin_offset
        self.consumed[mq] = result.next_begin_offset
        tracer = self.trace_dispatcher
        if tracer is not None and result.msg_found_list:
            # Java's lite-pull consumer runs both hooks right after the pull, as a success.
            before = tracer.before_consume(result.msg_found_list)
            if before is not None:
                tracer.after_consume_as(before, len(result.msg_found_list), True, ConsumeReturnType.SUCCESS)
        return result.msg_found_list


def _raise_first(failures: Failures) -> None:
    for failure in failures.values():  # the first queue's, in order
        failure.raiseException()
