# -*- test-case-name: rocketmq_tx.broker.test.test_pop -*-
"""
``PeekMessageProcessor``: PEEK_MESSAGE (200052), the messages a POP would get next, without
popping them (no checkpoint, no offset moved). As Java: the POP retry topic first one time in
five, else after the topic; retried messages as stored (under the retry topic); the answer is
a POP response header with only ``restNum`` meaningful, PULL_NOT_FOUND when nothing is there.
"""

from __future__ import annotations

import random
from typing import Any

from rocketmq_tx.broker.controller import BrokerController
from rocketmq_tx.broker.processors.pop import MAX_POP_MSG_NUMS, pop_request_checks
from rocketmq_tx.net.dispatch import HandlerProcessor, IRemotingContext
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.remoting.extrainfo import build_pop_retry_topic
from rocketmq_tx.remoting.headers.pop import PeekMessageRequestHeader, PopMessageResponseHeader
from rocketmq_tx.store.status import GetMessageStatus

__all__ = ["PeekMessageProcessor"]


class PeekMessageProcessor(HandlerProcessor):
    def __init__(self, controller: BrokerController, rng: random.Random | None = None) -> None:
        self.controller = controller
        self.random = rng or random.Random()
        self.handlers = {RequestCode.PEEK_MESSAGE: self.peek_message}

    def peek_message(self, ctx: IRemotingContext, request: RemotingCommand) -> Any:
        c = self.controller
        header = PeekMessageRequestHeader.from_ext_fields(request.ext_fields)
        refused = pop_request_checks(c, ctx, request, header.topic, header.queue_id, header.consumer_group)
        if refused is not None:
            return refused
        # Java has no bound here (its GetMessageResult is sized by maxMsgNums); POP's bound of 32 applies.
        max_nums = min(header.max_msg_nums, MAX_POP_MSG_NUMS)
        random_q = self.random.randrange(100)
        need_retry = random_q % 5 == 0
        retry_topic = build_pop_retry_topic(header.topic, header.consumer_group, c.settings["enableRetryTopicV2"])
        buffers: list[bytes] = []
        rest = 0
        tc = c.topic_config_manager.select_topic_config(header.topic)
        assert tc is not None  # checked above

        def peek_topic(topic: str) -> None:
            nonlocal rest
            rtc = c.topic_config_manager.select_topic_config(topic)
            if rtc is None:
                return
            for i in range(rtc.read_queue_nums):
                rest = self._peek_queue(topic, header.consumer_group, (random_q + i) % rtc.read_queue_nums, max_nums,
                                        buffers, rest)

        if need_retry:
            peek_topic(retry_topic)
        if header.queue_id < 0:
            peek_topic(header.topic)
        else:
            rest = self._peek_queue(header.topic, header.consumer_group, header.queue_id, max_nums, buffers, rest)
        if not need_retry and len(buffers) < max_nums:
            peek_topic(retry_topic)
        response_header = PopMessageResponseHeader(0, 0, 0, rest).to_ext_fields()
        if buffers:
            return request.make_response(ResponseCode.SUCCESS, GetMessageStatus.FOUND.name, response_header,
                                         b"".join(buffers))
        return request.make_response(ResponseCode.PULL_NOT_FOUND, GetMessageStatus.NO_MESSAGE_IN_QUEUE.name,
                                     response_header)

    def _peek_queue(self, topic: str, group: str, queue_id: int, max_nums: int, buffers: list[bytes],
                    rest: int) -> int:
        store = self.controller.store
        offset = self.controller.consumer_offset_manager.query_offset(group, topic, queue_id)
        if offset < 0:
            offset = store.get_min_offset_in_queue(topic, queue_id)
        rest += store.get_max_offset_in_queue(topic, queue_id) - offset
        want = max_nums - len(buffers)
        if want <= 0:
            return rest
        result = store.get_message(group, topic, queue_id, offset, want)
        if result.status in (GetMessageStatus.OFFSET_TOO_SMALL, GetMessageStatus.OFFSET_OVERFLOW_BADLY):
            result = store.get_message(group, topic, queue_id, result.next_begin_offset, want)
        buffers.extend(result.message_buffers)
        return rest
