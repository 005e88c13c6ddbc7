# -*- test-case-name: rocketmq_tx.broker.test.test_pop -*-
"""
``ChangeInvisibleTimeProcessor``: CHANGE_MESSAGE_INVISIBLETIME (200053). As Java: a new
one-message checkpoint (popped now, invisible for the new time, same revive queue) is written,
then the message is acked against its old checkpoint; the answer carries the new pop time,
from which the client builds the message's new extra info. For a FIFO POP (revive queue 999)
only the message's next visible time moves (the answer keeps the POP's time).
"""

from __future__ import annotations

from typing import Any

from rocketmq_tx.broker.controller import BrokerController
from rocketmq_tx.broker.processors.ack import check_ack_target
from rocketmq_tx.net.dispatch import HandlerProcessor, IRemotingContext
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.remoting.extrainfo import POP_ORDER_REVIVE_QUEUE, parse_extra_info
from rocketmq_tx.remoting.headers.pop import ChangeInvisibleTimeRequestHeader, ChangeInvisibleTimeResponseHeader
from rocketmq_tx.remoting.popbodies import AckMsg, PopCheckPoint

__all__ = ["ChangeInvisibleTimeProcessor"]


class ChangeInvisibleTimeProcessor(HandlerProcessor):
    def __init__(self, controller: BrokerController) -> None:
        self.controller = controller
        self.handlers = {RequestCode.CHANGE_MESSAGE_INVISIBLETIME: self.change_invisible_time}

    def change_invisible_time(self, ctx: IRemotingContext, request: RemotingCommand) -> Any:
        c = self.controller
        header = ChangeInvisibleTimeRequestHeader.from_ext_fields(request.ext_fields)
        bad_target = check_ack_target(c, ctx, request, header.topic, header.queue_id)
        if bad_target is not None:
            return bad_target
        min_offset = c.store.get_min_offset_in_queue(header.topic, header.queue_id)
        max_offset = c.store.get_max_offset_in_queue(header.topic, header.queue_id)
        if header.offset < min_offset or header.offset >= max_offset:
            return request.make_response(ResponseCode.NO_MESSAGE)
        try:
            info = parse_extra_info(header.extra_info)
        except ValueError as e:
            return request.make_response(ResponseCode.SYSTEM_ERROR, str(e))
        if info.revive_qid == POP_ORDER_REVIVE_QUEUE:
            return self._change_orderly(request, header, info.pop_time, info.revive_qid)
        if not 0 <= info.revive_qid < c.pop_service.revive_queue_num:
            return request.make_response(ResponseCode.SYSTEM_ERROR, f"illegal revive queue {info.revive_qid}")
        now = c.now_ms()
        ck = PopCheckPoint(start_offset=header.offset, pop_time=now, invisible_time=header.invisible_time, num=1,
                           queue_id=header.queue_id, topic=header.topic, cid=header.consumer_group,
                           broker_name=info.broker_name)
        ck.add_diff(0)
        if not c.pop_service.append_checkpoint(ck, info.revive_qid):
            return request.make_response(ResponseCode.SYSTEM_ERROR)
        ack = AckMsg(header.offset, info.ck_queue_offset, header.consumer_group, header.topic, header.queue_id,
                     info.pop_time, info.broker_name)
        if not c.pop_service.ack(ack, [header.offset], info.revive_qid, info.invisible_time):
            return request.make_response(ResponseCode.SYSTEM_ERROR)
        response = request.make_response(ResponseCode.SUCCESS)
        response.ext_fields.update(
            ChangeInvisibleTimeResponseHeader(now, header.invisible_time, info.revive_qid).to_ext_fields())
        return response

    def _change_orderly(self, request: RemotingCommand, header: ChangeInvisibleTimeRequestHeader, pop_time: int,
                        revive_qid: int) -> RemotingCommand:
        """Java ``processChangeInvisibleTimeForOrder``: the message's visibility moves; the POP's time stays."""
        c = self.controller
        response = request.make_response(ResponseCode.SUCCESS)
        old = c.consumer_offset_manager.query_offset(header.consumer_group, header.topic, header.queue_id)
        if header.offset < old:
            return response  # acked already: Java answers SUCCESS without a header
        next_visible = c.now_ms() + header.invisible_time
        c.pop_service.order_info.update_next_visible_time(header.topic, header.consumer_group, header.queue_id,
                                                          header.offset, pop_time, next_visible)
        response.ext_fields.update(
            ChangeInvisibleTimeResponseHeader(pop_time, next_visible - pop_time, revive_qid).to_ext_fields())
        return response
