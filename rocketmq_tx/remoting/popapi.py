# -*- test-case-name: rocketmq_tx.remoting.test.test_popapi -*-
"""
The simple consumer's POP calls without I/O, as plans (:mod:`rocketmq_tx.remoting.plans`)
that the Twisted :class:`~rocketmq_tx.client.simpleconsumer.SimpleConsumer` and the
:class:`~rocketmq_tx.blocking.simpleconsumer.BlockingSimpleConsumer` both run.

What Java's 5.x client does at the remoting level (``PullAPIWrapper.popAsync``,
``MQClientAPIImpl.popMessageAsync`` / ``processPopResponse``, ``DefaultMQPushConsumerImpl``'s
``processPopResult`` / ``ackAsync`` / ``changePopInvisibleTimeAsync``), with the queue choice
of the 5.x proxy's simple consumer (``MessageQueueSelector``): each receive goes to the next
readable broker of the next subscribed topic in turn, with queue id -1 (the broker pops from
every readable queue of the topic and of the group's POP retry topic).

* :func:`pop_request` / :func:`parse_pop_response`: POP_MESSAGE (200050) and its answer; each
  message carries its receipt handle (``POP_CK``, the extra-info string the broker checks in an
  ack) and is shown under the subscribed topic, the retry topic mapped back as Java maps it.
* :func:`ack_request`, :func:`change_invisible_time_request`: ACK_MESSAGE (200051) and
  CHANGE_MESSAGE_INVISIBLETIME (200053) from a receipt handle; the latter gives a new handle.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rocketmq_tx.common.clientroute import RouteTable
from rocketmq_tx.common.message import MessageConst, MessageExt
from rocketmq_tx.common.messagecodec import decode_messages
from rocketmq_tx.common.route import PermName, TopicRouteData
from rocketmq_tx.remoting.api import MessageSelector, MQClientError, SubscriptionData, check_response
from rocketmq_tx.remoting.codes import RequestCode, ResponseCode
from rocketmq_tx.remoting.command import RemotingCommand
from rocketmq_tx.remoting.errors import MQBrokerError, RemotingCommandError
from rocketmq_tx.remoting.extrainfo import (
    ExtraInfo,
    build_extra_info,
    parse_extra_info,
    parse_msg_offset_info,
    parse_order_count_info,
    parse_start_offset_info,
    queue_offset_key,
    retry_flag,
    start_offset_info_key,
)
from rocketmq_tx.remoting.headers.pop import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
)
from rocketmq_tx.remoting.plans import Call, Plan, Warn
from rocketmq_tx.remoting.popbodies import MAX_BATCH_ACK_BITS, BatchAck, BatchAckMessageRequestBody
from rocketmq_tx.remoting.sendapi import route

__all__ = ["CONSUME_INIT_MODE_MIN", "CONSUME_INIT_MODE_MAX", "MAX_RECEIVE_MESSAGES", "ReceivedMessage",
           "PopResult", "pop_request", "parse_pop_response", "ack_request", "batch_ack_request",
           "change_invisible_time_request",
           "SimpleConsumerBase"]

#: Java ``ConsumeInitMode``: where a group without an offset starts popping a queue.
CONSUME_INIT_MODE_MIN = 0
CONSUME_INIT_MODE_MAX = 1
#: Java's bound of ``popBatchNums`` (and of the proxy's receive batch).
MAX_RECEIVE_MESSAGES = 32
#: bits of one ``BatchAck`` (offsets from the checkpoint start) a broker takes
MAX_BATCH_ACK_BIT = MAX_BATCH_ACK_BITS
#: Java's ``popAsync`` gives a long-polling POP its poll time plus this, in seconds.
POLL_TIMEOUT_MARGIN = 10.0


@dataclass(slots=True)
class ReceivedMessage:
    """
    A received message (the gRPC client's ``MessageView``): the decoded message under the
    subscribed topic, and the receipt handle :meth:`ack` and ``change_invisible_duration``
    send back. A change of invisible duration replaces :attr:`receipt_handle`.
    """

    message: MessageExt
    receipt_handle: str
    group: str

    @property
    def topic(self) -> str:
        return self.message.topic

    @property
    def body(self) -> bytes:
        return self.message.body

    @property
    def tags(self) -> str | None:
        return self.message.tags

    @property
    def keys(self) -> list[str]:
        return self.message.keys

    @property
    def properties(self) -> dict[str, str]:
        return self.message.properties

    @property
    def message_id(self) -> str:
        return self.message.msg_id

    @property
    def broker_name(self) -> str:
        return self.handle.broker_name

    @property
    def queue_id(self) -> int:
        return self.message.queue_id

    @property
    def queue_offset(self) -> int:
        return self.message.queue_offset

    @property
    def reconsume_times(self) -> int:
        return self.message.reconsume_times

    @property
    def delivery_attempt(self) -> int:
        """1 on the first delivery (the gRPC client's ``getDeliveryAttempt``)."""
        return self.message.reconsume_times + 1

    @property
    def handle(self) -> ExtraInfo:
        return parse_extra_info(self.receipt_handle)

    def __repr__(self) -> str:
        return (f"ReceivedMessage(topic={self.topic!r}, message_id={self.message_id!r}, queue_id={self.queue_id}, "
                f"queue_offset={self.queue_offset}, reconsume_times={self.reconsume_times})")


@dataclass(slots=True)
class PopResult:
    """
    Java ``PopResult``: *status* ``FOUND``, ``POLLING_NOT_FOUND`` or ``POLLING_FULL``;
    *filtered*: found messages whose tag the subscription does not take (Java acks them).
    """

    status: str
    messages: list[ReceivedMessage] = field(default_factory=list)
    filtered: list[ReceivedMessage] = field(default_factory=list)
    rest_num: int = 0


_POP_STATUS: dict[int, str] = {ResponseCode.SUCCESS: "FOUND", ResponseCode.POLLING_FULL: "POLLING_FULL",
               ResponseCode.POLLING_TIMEOUT: "POLLING_NOT_FOUND", ResponseCode.PULL_NOT_FOUND: "POLLING_NOT_FOUND"}


def _now_ms() -> int:
    return int(time.time() * 1000)


def pop_request(group: str, topic: str, broker_name: str, subscription: SubscriptionData, *, max_nums: int,
                invisible_ms: int, poll_ms: int = 0, queue_id: int = -1, init_mode: int = CONSUME_INIT_MODE_MAX,
                order: bool = False, born_ms: int | None = None) -> RemotingCommand:
    """
    POP_MESSAGE (200050) as ``PullAPIWrapper.popAsync`` builds it: *poll_ms* > 0 asks the
    broker to hold the request that long while nothing is there (the caller waits
    :data:`POLL_TIMEOUT_MARGIN` more).

    :raises MQClientError: *max_nums* outside 1..32, or *invisible_ms* not positive.
    """
    if not 1 <= max_nums <= MAX_RECEIVE_MESSAGES:
        raise MQClientError(f"max messages {max_nums} out of range [1, {MAX_RECEIVE_MESSAGES}]")
    if invisible_ms <= 0:
        raise MQClientError(f"invisible duration must be positive, not {invisible_ms} ms")
    header = PopMessageRequestHeader(
        consumer_group=group, topic=topic, queue_id=queue_id, max_msg_nums=max_nums, invisible_time=invisible_ms,
        poll_time=max(poll_ms, 0), born_time=_now_ms() if born_ms is None else born_ms, init_mode=init_mode,
        exp_type=subscription.expression_type, exp=subscription.sub_string, order=order, broker_name=broker_name)
    return RemotingCommand.request(RequestCode.POP_MESSAGE, header.to_ext_fields())


def parse_pop_response(response: RemotingCommand, broker_name: str, group: str, subscription: SubscriptionData,
                       *, order: bool = False) -> PopResult:
    """
    Java ``processPopResponse`` then ``processPopResult``: decode the messages, give each its
    ``POP_CK`` receipt handle (checkpoint start offset, pop time, invisible time, revive queue,
    retry flag, broker, queue, queue offset), ``1ST_POP_TIME`` when absent, the FIFO
    redelivery count as reconsume times (*order*), and the subscribed topic in place of the
    POP retry topic; messages whose tag the subscription does not take go to ``filtered``.

    :raises MQBrokerError: an answer other than found / not found / polling timeout / full,
        or a found answer whose header Java would not parse.
    """
    status = _POP_STATUS.get(response.code)
    if status is None:
        raise MQBrokerError(response.code, response.remark)
    try:
        header = PopMessageResponseHeader.from_ext_fields(response.ext_fields)
    except RemotingCommandError as e:
        if status != "FOUND":
            return PopResult(status)
        raise MQBrokerError(response.code, f"malformed POP response: {e}") from None
    result = PopResult(status, rest_num=header.rest_num)
    if status != "FOUND":
        return result
    topic = subscription.topic
    try:
        decoded = decode_messages(response.body or b"")
        start_offsets = parse_start_offset_info(header.start_offset_info) if header.start_offset_info else None
        msg_offsets = parse_msg_offset_info(header.msg_offset_info)
        order_counts = parse_order_count_info(header.order_count_info)
    except ValueError as e:
        raise MQBrokerError(response.code, f"malformed POP response: {e}") from None
    # per "<retry>@<queueId>": the popped offsets in the order the body holds them
    sorted_offsets: dict[str, list[int]] = {}
    for msg in decoded:
        sorted_offsets.setdefault(_sort_key(msg), []).append(msg.queue_offset)
    first_ck: dict[tuple[str, int], str] = {}
    for msg in decoded:
        props = msg.properties
        key = start_offset_info_key(msg.topic, msg.queue_id)
        if start_offsets is None:  # a broker without startOffsetInfo: each message is its own checkpoint
            ck = first_ck.setdefault((msg.topic, msg.queue_id), build_extra_info(
                msg.queue_offset, header.pop_time, header.invisible_time, header.revive_qid, msg.topic,
                broker_name, msg.queue_id))
            handle = f"{ck} {msg.queue_offset}"
        elif MessageConst.PROPERTY_POP_CK in props:
            # a message the broker read from the POP retry topic comes under the original topic
            # with its handle already set (Java keeps it)
            handle = props[MessageConst.PROPERTY_POP_CK]
        else:
            if key not in start_offsets:
                raise MQBrokerError(response.code, f"malformed POP response: no start offset for {key}")
            offsets = msg_offsets.get(key, [])
            index = sorted_offsets[key].index(msg.queue_offset)
            queue_offset = offsets[index] if index < len(offsets) else msg.queue_offset
            handle = build_extra_info(start_offsets[key], header.pop_time, header.invisible_time, header.revive_qid,
                                      msg.topic, broker_name, msg.queue_id, queue_offset)
            if order:
                count = order_counts.get(f"{retry_flag(msg.topic)}@{queue_offset_key(msg.queue_id, msg.queue_offset)}")
                if count is None:
                    count = order_counts.get(key)
                if count is not None and count > 0:
                    msg.reconsume_times = count
        props[MessageConst.PROPERTY_POP_CK] = handle
        props.setdefault(MessageConst.PROPERTY_FIRST_POP_TIME, str(header.pop_time))
        msg.topic = topic
        received = ReceivedMessage(msg, handle, group)
        (result.messages if subscription.matches(msg) else result.filtered).append(received)
    return result


def _sort_key(msg: MessageExt) -> str:
    # ExtraInfoUtil.getStartOffsetInfoMapKey(topic, popCk, queueId): the retry flag of the
    # handle the broker set, else of the topic
    ck = msg.properties.get(MessageConst.PROPERTY_POP_CK)
    if ck is not None:
        fields = ck.split(" ")
        if len(fields) > 4:
            return f"{fields[4]}@{msg.queue_id}"
    return start_offset_info_key(msg.topic, msg.queue_id)


def _handle(receipt_handle: str) -> ExtraInfo:
    try:
        info = parse_extra_info(receipt_handle)
    except ValueError as e:
        raise MQClientError(f"invalid receipt handle {receipt_handle!r}: {e}") from None
    if info.queue_offset is None:
        raise MQClientError(f"invalid receipt handle {receipt_handle!r}: no queue offset")
    return info


def ack_request(group: str, topic: str, receipt_handle: str) -> RemotingCommand:
    """ACK_MESSAGE (200051) of a message of *topic* (the subscribed one) received with *receipt_handle*."""
    info = _handle(receipt_handle)
    assert info.queue_offset is not None
    header = AckMessageRequestHeader(consumer_group=group, topic=info.real_topic(topic, group), queue_id=info.queue_id,
                                     extra_info=receipt_handle, offset=info.queue_offset, broker_name=info.broker_name)
    return RemotingCommand.request(RequestCode.ACK_MESSAGE, header.to_ext_fields())


def batch_ack_request(group: str, acked: list[tuple[str, str]]) -> RemotingCommand:
    """
    BATCH_ACK_MESSAGE (200151) of *acked* ``(topic, receipt handle)`` pairs of one broker, as
    ``batchAckMessageAsync`` builds its body: one ``BatchAck`` per (topic, retry flag, queue,
    checkpoint start, pop time), a bit per message at its offset from the checkpoint start.

    :raises MQClientError: a malformed handle, handles of several brokers, or a message too
        far from its checkpoint start for a batch ack.
    """
    merged: dict[tuple[str, str, int, int, int], BatchAck] = {}
    broker_name: str | None = None
    for topic, receipt_handle in acked:
        info = _handle(receipt_handle)
        assert info.queue_offset is not None
        if broker_name not in (None, info.broker_name):
            raise MQClientError("a batch ack goes to one broker")
        broker_name = info.broker_name
        bit = info.queue_offset - info.ck_queue_offset
        if not 0 <= bit < MAX_BATCH_ACK_BIT:
            raise MQClientError(f"receipt handle {receipt_handle!r} out of a batch ack's reach")
        key = (topic, info.retry, info.queue_id, info.ck_queue_offset, info.pop_time)
        ack = merged.get(key)
        if ack is None:
            ack = merged[key] = BatchAck(group, topic, info.retry, info.ck_queue_offset, info.queue_id,
                                         info.revive_qid, info.pop_time, info.invisible_time, 0)
        ack.bit_set |= 1 << bit
    body = BatchAckMessageRequestBody(broker_name, list(merged.values()))
    return RemotingCommand.request(RequestCode.BATCH_ACK_MESSAGE, None, body.encode())


def change_invisible_time_request(group: str, topic: str, receipt_handle: str, invisible_ms: int) -> RemotingCommand:
    """CHANGE_MESSAGE_INVISIBLETIME (200053): invisible *invisible_ms* from now on."""
    if invisible_ms <= 0:
        raise MQClientError(f"invisible duration must be positive, not {invisible_ms} ms")
    info = _handle(receipt_handle)
    assert info.queue_offset is not None
    header = ChangeInvisibleTimeRequestHeader(
        consumer_group=group, topic=info.real_topic(topic, group), queue_id=info.queue_id, extra_info=receipt_handle,
        offset=info.queue_offset, invisible_time=invisible_ms, broker_name=info.broker_name)
    return RemotingCommand.request(RequestCode.CHANGE_MESSAGE_INVISIBLETIME, header.to_ext_fields())


def parse_change_invisible_time_response(response: RemotingCommand, request: RemotingCommand) -> str:
    """
    The new receipt handle, as ``changeInvisibleTimeAsync`` builds it: the request's offset
    as checkpoint start and queue offset, the answer's pop time, invisible time and revive queue.

    :raises MQBrokerError: the broker refused it (the old handle is then unchanged).
    """
    check_response(response)
    asked = ChangeInvisibleTimeRequestHeader.from_ext_fields(request.ext_fields)
    try:
        header = ChangeInvisibleTimeResponseHeader.from_ext_fields(response.ext_fields)
    except RemotingCommandError as e:
        raise MQBrokerError(response.code, f"malformed response: {e}") from None
    broker_name = parse_extra_info(asked.extra_info).broker_name
    return build_extra_info(asked.offset, header.pop_time, header.invisible_time, header.revive_qid, asked.topic,
                            broker_name, asked.queue_id, asked.offset)


def readable_brokers(topic_route: TopicRouteData) -> list[str]:
    """The brokers with a master and readable queues of the topic, sorted."""
    masters = {b.broker_name for b in topic_route.broker_datas if 0 in b.broker_addrs}
    return sorted({qd.broker_name for qd in topic_route.queue_datas
                   if PermName.is_readable(qd.perm) and qd.read_queue_nums > 0 and qd.broker_name in masters})


class SimpleConsumerBase:
    """
    A simple consumer without I/O: its subscriptions, the receive / ack / change plans. A
    subclass gives :meth:`_run` (run a plan; the result or a Deferred of it).

    :param group: the consumer group.
    :param routes: the client's route cache.
    :param subscriptions: ``{topic: tag expression or MessageSelector}``.
    :param await_duration: seconds a receive waits at the broker while nothing is there
        (long polling; 0: answer at once).
    :param fifo: POP with ``order=true`` (what the proxy does for a group with
        ``consumeMessageOrderly``): a queue gives nothing more while messages it handed out are
        neither acked nor visible again, and those come again in order, their deliveries
        counted (``orderCountInfo``) as reconsume times.
    :param init_mode: where a group without an offset starts (:data:`CONSUME_INIT_MODE_MAX`,
        the proxy's choice: the end of the queue, or its start while the queue's first
        message is still in memory, as a 5.x broker decides).
    """

    def __init__(self, group: str, routes: RouteTable, subscriptions: Mapping[str, str | MessageSelector], *,
                 await_duration: float = 30.0, init_mode: int = CONSUME_INIT_MODE_MAX, fifo: bool = False,
                 now_ms: Callable[[], int] = _now_ms) -> None:
        if not subscriptions:
            raise MQClientError("a simple consumer needs at least one subscription")
        self.group = group
        self.routes = routes
        self.await_duration = await_duration
        self.init_mode = init_mode
        self.fifo = fifo
        self.now_ms = now_ms
        self.subscriptions: dict[str, SubscriptionData] = {}
        for topic, expression in subscriptions.items():
            self.subscribe(topic, expression)
        self._topic_index = 0
        self._broker_index: dict[str, int] = {}

    def _run(self, plan: Plan[Any]) -> Any:
        raise NotImplementedError

    def subscribe(self, topic: str, expression: str | MessageSelector = "*") -> None:
        """Add or replace the subscription of *topic*."""
        self.subscriptions[topic] = SubscriptionData.of(topic, expression)

    def unsubscribe(self, topic: str) -> None:
        self.subscriptions.pop(topic, None)

    # ------------------------------------------------------------ the plans
    def receive_plan(self, max_messages: int, invisible_duration: float,
                     await_duration: float | None = None) -> Plan[list[ReceivedMessage]]:
        """
        One POP on the next (topic, readable broker) in turn; the messages found (none when
        the broker's long polling ran out). Messages the tag filter drops are acked.
        """
        if not self.subscriptions:
            raise MQClientError("no subscription")
        invisible_ms = int(invisible_duration * 1000)
        wait = self.await_duration if await_duration is None else await_duration
        topics = sorted(self.subscriptions)
        topic = topics[self._topic_index % len(topics)]
        self._topic_index += 1
        subscription = self.subscriptions[topic]
        topic_route = yield from route(self.routes, topic)
        self.routes.watch(topic)
        brokers = readable_brokers(topic_route)
        if not brokers:
            raise MQClientError(f"no readable queue of topic {topic}")
        index = self._broker_index.get(topic, 0)
        self._broker_index[topic] = index + 1
        broker_name = brokers[index % len(brokers)]
        addr = self.routes.master(broker_name)
        if addr is None:
            raise MQClientError(f"The broker[{broker_name}] not exist")
        poll_ms = int(wait * 1000)
        request = pop_request(self.group, topic, broker_name, subscription, max_nums=max_messages,
                              invisible_ms=invisible_ms, poll_ms=poll_ms, init_mode=self.init_mode,
                              order=self.fifo, born_ms=self.now_ms())
        response = yield Call(addr, request, timeout=wait + POLL_TIMEOUT_MARGIN if poll_ms > 0 else None)
        result = parse_pop_response(response, broker_name, self.group, subscription, order=self.fifo)
        if result.filtered:
            answers = yield [Call(addr, ack_request(self.group, topic, m.receipt_handle)) for m in result.filtered]
            for answer in answers:
                if not isinstance(answer, RemotingCommand) or answer.code != ResponseCode.SUCCESS:
                    yield Warn(f"ack of a message the filter dropped failed: {answer}")
        return result.messages

    def ack_plan(self, message: ReceivedMessage) -> Plan[None]:
        """ACK_MESSAGE of *message* to the broker its receipt handle names."""
        request = ack_request(self.group, message.topic, message.receipt_handle)
        addr = yield from self._broker(message)
        check_response((yield Call(addr, request)))

    def ack_batch_plan(self, messages: list[ReceivedMessage]) -> Plan[None]:
        """One BATCH_ACK_MESSAGE per broker the handles name, sent together."""
        by_broker: dict[str, list[ReceivedMessage]] = {}
        for m in messages:
            by_broker.setdefault(_handle(m.receipt_handle).broker_name, []).append(m)
        calls = []
        for broker_name in sorted(by_broker):
            group = by_broker[broker_name]
            request = batch_ack_request(self.group, [(m.topic, m.receipt_handle) for m in group])
            calls.append(Call((yield from self._broker(group[0])), request))
        if not calls:
            return
        answers = yield calls
        for answer in answers:
            if not isinstance(answer, RemotingCommand):
                raise answer
            check_response(answer)

    def change_invisible_duration_plan(self, message: ReceivedMessage, invisible_duration: float) -> Plan[str]:
        """CHANGE_MESSAGE_INVISIBLETIME; *message* gets (and the plan returns) the new receipt handle."""
        request = change_invisible_time_request(self.group, message.topic, message.receipt_handle,
                                                int(invisible_duration * 1000))
        addr = yield from self._broker(message)
        response = yield Call(addr, request)
        message.receipt_handle = parse_change_invisible_time_response(response, request)
        message.properties[MessageConst.PROPERTY_POP_CK] = message.receipt_handle
        return message.receipt_handle

    def _broker(self, message: ReceivedMessage) -> Plan[str]:
        broker_name = _handle(message.receipt_handle).broker_name
        addr = self.routes.master(broker_name)
        if addr is None:
            yield from route(self.routes, message.topic)
            addr = self.routes.master(broker_name)
        if addr is None:
            raise MQClientError(f"The broker[{broker_name}] not exist")
        return addr

    # ------------------------------------------------------------ the public methods
    def receive(self, max_messages: int = 16, invisible_duration: float = 30.0,
                await_duration: float | None = None) -> Any:
        """
        Up to *max_messages* (1..32) messages, invisible to the group for *invisible_duration*
        seconds: unless acked by then, they are delivered again (reconsume times + 1). Waits at
        the broker up to *await_duration* seconds (default: the consumer's) while there is none;
        an empty list then.
        """
        return self._run(self.receive_plan(max_messages, invisible_duration, await_duration))

    def ack(self, message: ReceivedMessage) -> Any:
        """
        Consumed: *message* is not delivered again.

        :raises MQBrokerError: the broker refused the ack (a handle no longer valid, e.g. after
            its invisible time passed and the message was received again).
        """
        return self._run(self.ack_plan(message))

    def ack_batch(self, messages: list[ReceivedMessage]) -> Any:
        """
        Ack several messages at once: one BATCH_ACK_MESSAGE (200151, a 5.x broker) per broker.

        :raises MQBrokerError: a broker refused its batch (the others may have been acked).
        """
        return self._run(self.ack_batch_plan(list(messages)))

    def change_invisible_duration(self, message: ReceivedMessage, invisible_duration: float) -> Any:
        """
        *message* stays invisible *invisible_duration* seconds from now; its receipt handle is
        replaced (ack with the new one).
        """
        return self._run(self.change_invisible_duration_plan(message, invisible_duration))
