# -*- test-case-name: rocketmq_tx.broker.test.test_pop -*-
"""
``AckMessageProcessor``: ACK_MESSAGE (200051) and BATCH_ACK_MESSAGE (200151). An ack names
its message by topic (the real one: the POP retry topic for a retried message), queue and
offset, and its checkpoint by the extra-info string the POP handed out (start offset, pop
time, revive queue). It is written to the revive log and marks the checkpoint's bit, so the
message is not revived. Java's checks, codes and remarks. An ack of a FIFO POP (revive queue
999) moves the group's offset instead (:func:`ack_orderly`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rocketmq_tx.broker.controller import BrokerController
from rocketmq_tx.broker.remarks import suggest_todo
from rocketmq_tx.net.dispatch import HandlerProcessor, IRemotingContext
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.remoting.extrainfo import POP_ORDER_REVIVE_QUEUE, parse_extra_info, real_topic
from rocketmq_tx.remoting.headers.pop import AckMessageRequestHeader
from rocketmq_tx.remoting.popbodies import AckMsg, BatchAckMessageRequestBody, BatchAckMsg

__all__ = ["AckMessageProcessor", "MAX_BATCH_ACKS", "ack_orderly", "check_ack_target"]

#: Most ``BatchAck`` entries one BATCH_ACK_MESSAGE may carry (ours: Java has no bound; a
#: client batches the acks of one POP, at most 32 queues' worth).
MAX_BATCH_ACKS = 1024


def check_ack_target(c: BrokerController, ctx: IRemotingContext, request: RemotingCommand, topic: str,
                     queue_id: int) -> RemotingCommand | None:
    """ACK_MESSAGE's and CHANGE_MESSAGE_INVISIBLETIME's first checks (Java's, the same remarks):
    the topic exists and the queue id is within its read queues; the refusal, or ``None``."""
    tc = c.topic_config_manager.select_topic_config(topic)
    if tc is None:
        return request.make_response(ResponseCode.TOPIC_NOT_EXIST,
                                     f"topic[{topic}] not exist, apply first please! " + suggest_todo())
    if queue_id >= tc.read_queue_nums or queue_id < 0:
        return request.make_response(
            ResponseCode.MESSAGE_ILLEGAL,
            f"queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:"
            f"[{tc.read_queue_nums}] consumer:[/{getattr(ctx, 'peer', '?')}]")
    return None


def ack_orderly(c: BrokerController, topic: str, group: str, queue_id: int, offset: int, pop_time: int,
                invisible_time: int, peer: str) -> Callable[[RemotingCommand], RemotingCommand] | None:
    """
    Java ``ackOrderly``: the group's offset moves to the first message of the FIFO POP not yet
    acked; once the queue is no longer blocked, waiting POPs are woken. ``None`` when done (or an
    ack of an offset already past), else the refusal to answer with.
    """
    offsets = c.consumer_offset_manager
    old = offsets.query_offset(group, topic, queue_id)
    if offset < old:
        return None
    next_offset = c.pop_service.order_info.commit_and_next(topic, group, queue_id, offset, pop_time)
    if next_offset > -1:
        offsets.commit_offset(group, topic, queue_id, next_offset)
        if not c.pop_service.order_info.check_block(None, topic, group, queue_id, invisible_time, c.now_ms()):
            c.reactor.callLater(0, c.pop_long_polling.notify_message_arriving, topic)
        return None
    if next_offset == -1:
        remark = (f"offset is illegal, key:{topic}@{group}@{queue_id}, old:{old}, commit:{offset}, "
                  f"next:{next_offset}, /{peer}")
        return lambda request: request.make_response(ResponseCode.MESSAGE_ILLEGAL, remark)
    return None  # -2: an ack from an older POP of the queue, ignored as Java does


class AckMessageProcessor(HandlerProcessor):
    def __init__(self, controller: BrokerController) -> None:
        self.controller = controller
        self.handlers = {
            RequestCode.ACK_MESSAGE: self.ack_message,
            RequestCode.BATCH_ACK_MESSAGE: self.batch_ack_message,
        }

    def ack_message(self, ctx: IRemotingContext, request: RemotingCommand) -> Any:
        c = self.controller
        header = AckMessageRequestHeader.from_ext_fields(request.ext_fields)
        bad_target = check_ack_target(c, ctx, request, header.topic, header.queue_id)
        if bad_target is not None:
            return bad_target
        min_offset = c.store.get_min_offset_in_queue(header.topic, header.queue_id)
        max_offset = c.store.get_max_offset_in_queue(header.topic, header.queue_id)
        if header.offset < min_offset or header.offset > max_offset:
            return request.make_response(
                ResponseCode.NO_MESSAGE,
                f"offset is illegal, key:{header.topic}@{header.queue_id}, commit:{header.offset}, "
                f"store:{min_offset}~{max_offset}")
        try:
            info = parse_extra_info(header.extra_info)
        except ValueError as e:  # Java: the exception's text, as SYSTEM_ERROR
            return request.make_response(ResponseCode.SYSTEM_ERROR, str(e))
        if info.revive_qid == POP_ORDER_REVIVE_QUEUE:
            refused = ack_orderly(c, header.topic, header.consumer_group, header.queue_id, header.offset,
                                  info.pop_time, info.invisible_time, getattr(ctx, "peer", "?"))
            return refused(request) if refused is not None else request.make_response(ResponseCode.SUCCESS)
        ack = AckMsg(header.offset, info.ck_queue_offset, header.consumer_group, header.topic, header.queue_id,
                     info.pop_time, info.broker_name)
        if not c.pop_service.ack(ack, [header.offset], info.revive_qid, info.invisible_time):
            return request.make_response(ResponseCode.SYSTEM_ERROR, "cannot write the ack to the revive log")
        return request.make_response(ResponseCode.SUCCESS)

    def batch_ack_message(self, ctx: IRemotingContext, request: RemotingCommand) -> Any:
        c = self.controller
        try:
            body = BatchAckMessageRequestBody.decode(request.body) if request.body else None
        except ValueError as e:
            return request.make_response(ResponseCode.SYSTEM_ERROR, str(e))
        if body is None or not body.acks:
            return request.make_response(ResponseCode.NO_MESSAGE)
        if len(body.acks) > MAX_BATCH_ACKS:
            return request.make_response(ResponseCode.INVALID_PARAMETER,
                                         f"too many acks in one batch: {len(body.acks)} > {MAX_BATCH_ACKS}")
        for back in body.acks:
            if back.consumer_group is None or back.topic is None or back.retry is None:
                continue  # Java fails on the null and answers SYSTEM_ERROR for the whole batch
            try:
                topic = real_topic(back.topic, back.consumer_group, back.retry)
            except ValueError as e:
                return request.make_response(ResponseCode.SYSTEM_ERROR, str(e))
            min_offset = c.store.get_min_offset_in_queue(topic, back.queue_id)
            max_offset = c.store.get_max_offset_in_queue(topic, back.queue_id)
            offsets = [o for o in back.offsets() if min_offset <= o <= max_offset]
            if back.revive_queue_id == POP_ORDER_REVIVE_QUEUE:
                for offset in offsets:
                    # Java goes on past a refused one and answers SUCCESS (its remark overwritten)
                    ack_orderly(c, topic, back.consumer_group, back.queue_id, offset, back.pop_time,
                                back.invisible_time, getattr(ctx, "peer", "?"))
                continue
            if not offsets:
                continue
            ack = BatchAckMsg(0, back.start_offset, back.consumer_group, topic, back.queue_id, back.pop_time,
                              body.broker_name, offsets)
            if not c.pop_service.ack(ack, offsets, back.revive_queue_id, back.invisible_time):
                return request.make_response(ResponseCode.SYSTEM_ERROR, "cannot write the ack to the revive log")
        return request.make_response(ResponseCode.SUCCESS)
