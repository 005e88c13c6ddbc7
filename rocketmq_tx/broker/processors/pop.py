# -*- test-case-name: rocketmq_tx.broker.test.test_pop -*-
"""
``PopMessageProcessor``: POP_MESSAGE (200050), 5.x's broker-side load balancing. The broker
picks the queues, hands the messages out invisible for ``invisibleTime`` and writes a
checkpoint per queue read (:class:`~rocketmq_tx.broker.pop.PopService`); the group's offset
moves past them at once, and what is not acked in time comes back through the POP retry topic.

Java's checks and answers, in its order. ``order=true`` (FIFO POP): no checkpoint and no
retry topic; a queue whose handed-out messages are not acked and not yet visible again is
skipped (:class:`~rocketmq_tx.broker.pop.orderinfo.ConsumerOrderInfoManager`), and the answer
carries ``orderCountInfo`` (how often each message was handed out) and revive queue 999.
A POP that finds nothing waits up to ``pollTime`` for a message
(:class:`~rocketmq_tx.broker.pop.PopLongPollingService`), then is answered POLLING_TIMEOUT; the
waiting POPs are bounded and beyond that answered POLLING_FULL.
"""

from __future__ import annotations

import random
from typing import Any

from rocketmq_tx.broker.clientmanager import CompiledFilter, is_tag_type
from rocketmq_tx.broker.controller import BrokerController
from rocketmq_tx.broker.pop import PopRequest
from rocketmq_tx.broker.processors.pull import SqlFilter, SubscriptionFilter
from rocketmq_tx.broker.remarks import suggest_todo
from rocketmq_tx.common.message import MessageConst
from rocketmq_tx.common.messagecodec import decode_message, encode_message
from rocketmq_tx.common.route import PermName
from rocketmq_tx.net.dispatch import HandlerProcessor, IRemotingContext
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.remoting.api import SubscriptionData
from rocketmq_tx.remoting.extrainfo import (
    POP_ORDER_REVIVE_QUEUE,
    build_extra_info,
    build_msg_offset_info,
    build_polling_key,
    build_pop_retry_topic,
    build_queue_id_order_count_info,
    build_queue_offset_order_count_info,
    build_start_offset_info,
)
from rocketmq_tx.remoting.headers.pop import PopMessageRequestHeader, PopMessageResponseHeader
from rocketmq_tx.remoting.popbodies import PopCheckPoint
from rocketmq_tx.store.status import GetMessageStatus

__all__ = ["pop_request_checks", "PopMessageProcessor", "MAX_POP_MSG_NUMS", "MAX_POLL_TIME_MS"]

#: Java refuses a POP for more than 32 messages (INVALID_PARAMETER).
MAX_POP_MSG_NUMS = 32
#: The longest a POP waits here (ours: Java waits whatever pollTime says; clients send 15-20 s).
MAX_POLL_TIME_MS = 60_000
_INIT_MODE_MIN = 0  # ConsumeInitMode.MIN
_RESTART_STATUSES = (GetMessageStatus.OFFSET_TOO_SMALL, GetMessageStatus.OFFSET_OVERFLOW_BADLY,
                     GetMessageStatus.OFFSET_FOUND_NULL)
_SKIP_STATUSES = (GetMessageStatus.NO_MATCHED_MESSAGE, GetMessageStatus.OFFSET_FOUND_NULL,
                  GetMessageStatus.MESSAGE_WAS_REMOVING, GetMessageStatus.NO_MATCHED_LOGIC_QUEUE)


def pop_request_checks(controller: BrokerController, ctx: Any, request: RemotingCommand, topic: str, queue_id: int,
                       group: str, verb: str = "peeking", max_nums: int = 0) -> RemotingCommand | None:
    """
    The checks POP_MESSAGE, PEEK_MESSAGE and POLLING_INFO share in Java, in its order and with
    its remarks: only the broker's refusal names the request (*verb*); the topic's says
    "peeking" for all three. *max_nums*: POP's count, refused past 32.
    """
    s = controller.settings
    if not PermName.is_readable(s["brokerPermission"]):
        return request.make_response(ResponseCode.NO_PERMISSION,
                                     f"the broker[{s['brokerIP1']}] {verb} message is forbidden")
    if max_nums > MAX_POP_MSG_NUMS:
        return request.make_response(ResponseCode.INVALID_PARAMETER,
                                     f"the broker[{s['brokerIP1']}] pop message's num is greater than 32")
    tc = controller.topic_config_manager.select_topic_config(topic)
    if tc is None:
        return request.make_response(ResponseCode.TOPIC_NOT_EXIST,
                                     f"topic[{topic}] not exist, apply first please! " + suggest_todo())
    if not PermName.is_readable(tc.perm):
        return request.make_response(ResponseCode.NO_PERMISSION, f"the topic[{topic}] peeking message is forbidden")
    if queue_id >= tc.read_queue_nums:
        return request.make_response(
            ResponseCode.INVALID_PARAMETER,
            f"queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:[{tc.read_queue_nums}] "
            f"consumer:[/{getattr(ctx, 'peer', '?')}]")
    sgc = controller.subscription_group_manager.find_subscription_group_config(group)
    if sgc is None:
        return request.make_response(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                                     f"subscription group [{group}] does not exist, " + suggest_todo())
    if not sgc.consume_enable:
        return request.make_response(ResponseCode.NO_PERMISSION, f"subscription group no permission, {group}")
    return None


class _Pop:
    """What one POP collected so far (Java's GetMessageResult and the three info builders)."""

    __slots__ = ("buffers", "rest", "start_offset_info", "msg_offset_info", "order_count_info")

    def __init__(self) -> None:
        self.buffers: list[bytes] = []
        self.rest = 0
        self.start_offset_info = ""
        self.msg_offset_info = ""
        self.order_count_info = ""


class PopMessageProcessor(HandlerProcessor):
    def __init__(self, controller: BrokerController, rng: random.Random | None = None) -> None:
        self.controller = controller
        self.settings = controller.settings
        self.random = rng or random.Random()
        controller.execute_held_pop = self._wake
        self.handlers = {RequestCode.POP_MESSAGE: self.pop_message}

    def pop_message(self, ctx: IRemotingContext, request: RemotingCommand) -> Any:
        return self.pop(ctx, request, allow_suspend=True)

    def _wake(self, pr: PopRequest) -> Any:
        return self.pop(pr.channel, pr.request, allow_suspend=not pr.timed_out, held=pr)

    def pop(self, ctx: Any, request: RemotingCommand, allow_suspend: bool, held: PopRequest | None = None) -> Any:
        c = self.controller
        s = self.settings
        header = PopMessageRequestHeader.from_ext_fields(request.ext_fields)
        refused = pop_request_checks(c, ctx, request, header.topic, header.queue_id, header.consumer_group, "pop",
                                     header.max_msg_nums)
        if refused is not None:
            return refused
        message_filter: SubscriptionFilter | SqlFilter | None = None
        if header.exp:
            try:
                expression_type = header.exp_type or "TAG"
                subscription = SubscriptionData.build(header.topic, header.exp, expression_type=expression_type)
                if is_tag_type(subscription.expression_type):
                    message_filter = SubscriptionFilter(subscription)
                else:
                    compiled: CompiledFilter = c.consumer_manager.filters.get(
                        header.consumer_group, header.topic, subscription.expression_type, subscription.sub_string)
                    message_filter = SqlFilter(compiled)
            except Exception:
                return request.make_response(ResponseCode.SUBSCRIPTION_PARSE_FAILED,
                                             "parse the consumer's subscription failed")
        if c.pop_service.recovering:
            # The revive log is still being read back after a start: the group's offsets may
            # not yet be past what was popped before, so nothing is popped until it is done.
            got_nothing = PopMessageResponseHeader(c.now_ms(), header.invisible_time, 0, 0)
            return request.make_response(ResponseCode.POLLING_TIMEOUT, GetMessageStatus.NO_MESSAGE_IN_QUEUE.name,
                                         got_nothing.to_ext_fields())
        pop_time = c.now_ms()
        order = header.is_order
        revive_qid = POP_ORDER_REVIVE_QUEUE if order else c.pop_service.next_revive_qid()
        random_q = self.random.randrange(100)
        # FIFO POP never reads the retry topic: its messages come again from the queue itself.
        need_retry = random_q < s["popFromRetryProbability"] and not order
        retry_topic = build_pop_retry_topic(header.topic, header.consumer_group, s["enableRetryTopicV2"])
        got = _Pop()
        if need_retry:
            self._pop_topic(retry_topic, True, header, got, revive_qid, pop_time, message_filter, random_q)
        if header.queue_id < 0:
            self._pop_topic(header.topic, False, header, got, revive_qid, pop_time, message_filter, random_q)
        else:
            self._pop_queue(header.topic, False, header, got, header.queue_id, revive_qid, pop_time, message_filter)
        if not need_retry and not order and len(got.buffers) < header.max_msg_nums:
            self._pop_topic(retry_topic, True, header, got, revive_qid, pop_time, message_filter, random_q)
        response_header = PopMessageResponseHeader(pop_time, header.invisible_time, revive_qid, got.rest,
                                                   got.start_offset_info, got.msg_offset_info,
                                                   got.order_count_info if order else None)
        if got.buffers:
            c.stats.get(header.consumer_group, header.topic, len(got.buffers), sum(map(len, got.buffers)))
            return request.make_response(ResponseCode.SUCCESS, GetMessageStatus.FOUND.name,
                                         response_header.to_ext_fields(), b"".join(got.buffers))
        if held is not None and allow_suspend:
            return c.pop_long_polling.hold(held)  # woken, nothing for it: wait on till its deadline
        if allow_suspend and header.poll_time > 0:
            if not c.pop_long_polling.can_hold(ctx):
                return request.make_response(ResponseCode.POLLING_FULL, GetMessageStatus.NO_MESSAGE_IN_QUEUE.name,
                                             response_header.to_ext_fields())
            pr = PopRequest(request, ctx, (header.topic, retry_topic), min(header.poll_time, MAX_POLL_TIME_MS),
                            key=build_polling_key(header.topic, header.consumer_group, header.queue_id))
            return c.pop_long_polling.hold(pr)
        return request.make_response(ResponseCode.POLLING_TIMEOUT, GetMessageStatus.NO_MESSAGE_IN_QUEUE.name,
                                     response_header.to_ext_fields())

    def _pop_topic(self, topic: str, is_retry: bool, header: PopMessageRequestHeader, got: _Pop, revive_qid: int,
                   pop_time: int, message_filter: Any, random_q: int) -> None:
        tc = self.controller.topic_config_manager.select_topic_config(topic)
        if tc is None:
            return
        for i in range(tc.read_queue_nums):
            queue_id = (random_q + i) % tc.read_queue_nums
            self._pop_queue(topic, is_retry, header, got, queue_id, revive_qid, pop_time, message_filter)

    def _pop_offset(self, topic: str, group: str, queue_id: int, init_mode: int) -> int:
        """Java ``getPopOffset``: the committed offset, or the initial one (committed at once)."""
        c = self.controller
        offset = c.consumer_offset_manager.query_offset(group, topic, queue_id)
        if offset >= 0:
            return offset
        store = c.store
        if init_mode == _INIT_MODE_MIN or topic.startswith("%RETRY%"):
            offset = store.get_min_offset_in_queue(topic, queue_id)
        else:
            # Java's default initPopOffsetByCheckMsgInMem: a queue that still holds its first
            # message starts at 0, else at the last message.
            if store.get_min_offset_in_queue(topic, queue_id) <= 0:
                offset = 0
            else:
                offset = max(store.get_max_offset_in_queue(topic, queue_id) - 1, 0)
        c.consumer_offset_manager.commit_offset(group, topic, queue_id, offset)
        return offset

    def _pop_queue(self, topic: str, is_retry: bool, header: PopMessageRequestHeader, got: _Pop, queue_id: int,
                   revive_qid: int, pop_time: int, message_filter: Any) -> None:
        c = self.controller
        group = header.consumer_group
        order = header.is_order
        if order and c.pop_service.order_info.check_block(header.attempt_id, topic, group, queue_id,
                                                          header.invisible_time, c.now_ms()):
            return  # FIFO: messages of this queue are out and not yet visible again
        offset = self._pop_offset(topic, group, queue_id, header.init_mode)
        want = header.max_msg_nums - len(got.buffers)
        if want <= 0:
            got.rest += max(c.store.get_max_offset_in_queue(topic, queue_id) - offset, 0)
            return
        if offset == c.store.get_max_offset_in_queue(topic, queue_id):
            return  # nothing new: the common case of a POP over many queues, at the cost of one lookup
        result = c.store.get_message(group, topic, queue_id, offset, want, message_filter)
        if result.status in _RESTART_STATUSES:
            # The stored offset is not in the queue: start again where the store says (Java commits it).
            c.consumer_offset_manager.commit_offset(group, topic, queue_id, result.next_begin_offset)
            offset = result.next_begin_offset
            result = c.store.get_message(group, topic, queue_id, offset, want, message_filter)
        if result.message_buffers and order:
            counts, minimum = c.pop_service.order_info.update(header.attempt_id, topic, group, queue_id, pop_time,
                                                              header.invisible_time, result.message_queue_offsets)
            for queue_offset, count in counts.items():
                got.order_count_info = build_queue_offset_order_count_info(got.order_count_info, topic, queue_id,
                                                                           queue_offset, count)
            got.order_count_info = build_queue_id_order_count_info(got.order_count_info, topic, queue_id, minimum)
            # The group's offset stays at the first message handed out until it is acked.
            c.consumer_offset_manager.commit_offset(group, topic, queue_id, offset)
            got.start_offset_info = build_start_offset_info(got.start_offset_info, topic, queue_id, offset)
            got.msg_offset_info = build_msg_offset_info(got.msg_offset_info, topic, queue_id,
                                                        result.message_queue_offsets)
        elif result.message_buffers:
            ck = PopCheckPoint(start_offset=offset, pop_time=pop_time, invisible_time=header.invisible_time,
                               num=len(result.message_buffers), queue_id=queue_id, topic=topic, cid=group,
                               broker_name=self.settings["brokerName"])
            for queue_offset in result.message_queue_offsets:
                ck.add_diff(queue_offset - offset)
            if not c.pop_service.append_checkpoint(ck, revive_qid):
                # Java leaves the offset where it was: the messages are popped again later.
                got.rest += max(result.max_offset - offset, 0)
                return
            c.consumer_offset_manager.commit_offset(group, topic, queue_id, result.next_begin_offset)
            got.start_offset_info = build_start_offset_info(got.start_offset_info, topic, queue_id, offset)
            got.msg_offset_info = build_msg_offset_info(got.msg_offset_info, topic, queue_id,
                                                        result.message_queue_offsets)
        elif result.status in _SKIP_STATUSES and result.next_begin_offset > -1:
            # Nothing for this POP up to there (filtered out): move past it, as Java's mock checkpoint does.
            c.consumer_offset_manager.commit_offset(group, topic, queue_id, result.next_begin_offset)
        got.rest += max(result.max_offset - result.next_begin_offset, 0)
        if result.message_buffers and c.metrics is not None:
            c.metrics.pop_out(header.topic, group, is_retry, len(result.message_buffers), result.buffer_total_size)
        if not is_retry:
            got.buffers.extend(result.message_buffers)
            return
        # A retry message goes out under its original topic with its POP_CK, as Java
        # re-encodes it (popResponseReturnActualRetryTopic=false).
        broker_name = self.settings["brokerName"]
        for raw in result.message_buffers:
            msg, _ = decode_message(raw)
            ck_info = build_extra_info(offset, pop_time, header.invisible_time, revive_qid, msg.topic, broker_name,
                                       msg.queue_id, msg.queue_offset)
            msg.properties.setdefault(MessageConst.PROPERTY_POP_CK, ck_info)
            msg.topic = header.topic
            got.buffers.append(encode_message(msg))
