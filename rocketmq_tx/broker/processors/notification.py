# -*- test-case-name: rocketmq_tx.broker.test.test_pop -*-
"""
``NotificationProcessor``: NOTIFICATION (200054), whether a POP of the group would find a
message in the topic (or its POP retry topic), without popping. As Java: the retry topic first
one time in five; nothing there and a ``pollTime``: the request waits like a POP (woken by an
arrival, or answered at its deadline); the answer is always SUCCESS with ``hasMsg``, and
``pollingFull`` when the waiting requests are at their bound. With ``order=true`` a FIFO-blocked
queue has nothing.
"""

from __future__ import annotations

import random
from typing import Any

from rocketmq_tx.broker.controller import BrokerController
from rocketmq_tx.broker.pop import PopRequest
from rocketmq_tx.broker.processors.pop import MAX_POLL_TIME_MS, pop_request_checks
from rocketmq_tx.net.dispatch import HandlerProcessor, IRemotingContext
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.remoting.extrainfo import build_polling_key, build_pop_retry_topic
from rocketmq_tx.remoting.headers.pop import NotificationRequestHeader, NotificationResponseHeader

__all__ = ["NotificationProcessor"]


class NotificationProcessor(HandlerProcessor):
    def __init__(self, controller: BrokerController, rng: random.Random | None = None) -> None:
        self.controller = controller
        self.random = rng or random.Random()
        self.handlers = {RequestCode.NOTIFICATION: self.notification}

    def notification(self, ctx: IRemotingContext, request: RemotingCommand) -> Any:
        return self._run(ctx, request, None)

    def _rerun(self, pr: PopRequest) -> Any:
        return self._run(pr.channel, pr.request, pr)

    def _run(self, ctx: Any, request: RemotingCommand, held: PopRequest | None) -> Any:
        c = self.controller
        header = NotificationRequestHeader.from_ext_fields(request.ext_fields)
        refused = pop_request_checks(c, ctx, request, header.topic, header.queue_id, header.consumer_group)
        if refused is not None:
            return refused
        random_q = self.random.randrange(100)
        need_retry = random_q % 5 == 0
        retry_topic = build_pop_retry_topic(header.topic, header.consumer_group, c.settings["enableRetryTopicV2"])
        has_msg = need_retry and self._topic_has_msg(retry_topic, header.consumer_group, random_q)
        if not has_msg:
            order = bool(header.order)
            if header.queue_id < 0:
                has_msg = self._topic_has_msg(header.topic, header.consumer_group, random_q, order,
                                              header.attempt_id)
            else:
                has_msg = self._queue_has_msg(header.topic, header.consumer_group, header.queue_id, order,
                                              header.attempt_id)
            if not need_retry and not has_msg:
                has_msg = self._topic_has_msg(retry_topic, header.consumer_group, random_q)
        polling_full = False
        if not has_msg:
            polling = c.pop_long_polling
            if held is not None and not held.timed_out:
                return polling.hold(held)  # woken for nothing: wait on till its deadline
            if held is None and header.poll_time > 0:
                if polling.can_hold(ctx):
                    pr = PopRequest(request, ctx, (header.topic, retry_topic), min(header.poll_time, MAX_POLL_TIME_MS),
                                    key=build_polling_key(header.topic, header.consumer_group, header.queue_id),
                                    rerun=self._rerun)
                    return polling.hold(pr)
                polling_full = True
        response = request.make_response(ResponseCode.SUCCESS)
        response.ext_fields.update(NotificationResponseHeader(has_msg, polling_full).to_ext_fields())
        return response

    def _topic_has_msg(self, topic: str, group: str, random_q: int, order: bool = False,
                       attempt_id: str | None = None) -> bool:
        tc = self.controller.topic_config_manager.select_topic_config(topic)
        if tc is None:
            return False
        return any(self._queue_has_msg(topic, group, (random_q + i) % tc.read_queue_nums, order, attempt_id)
                   for i in range(tc.read_queue_nums))

    def _queue_has_msg(self, topic: str, group: str, queue_id: int, order: bool = False,
                       attempt_id: str | None = None) -> bool:
        c = self.controller
        if order and c.pop_service.order_info.check_block(attempt_id, topic, group, queue_id, 0, c.now_ms()):
            return False
        store = self.controller.store
        offset = self.controller.consumer_offset_manager.query_offset(group, topic, queue_id)
        if offset < 0:
            offset = store.get_min_offset_in_queue(topic, queue_id)
        return store.get_max_offset_in_queue(topic, queue_id) - offset > 0
