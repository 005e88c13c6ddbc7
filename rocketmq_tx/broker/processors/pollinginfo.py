# -*- test-case-name: rocketmq_tx.broker.test.test_pop -*-
"""
``PollingInfoProcessor``: POLLING_INFO (200055), how many POPs of a group wait on a topic's
queue (``queueId`` -1: the POPs for every queue), Java's polling key ``topic@group@queueId``.
"""

from __future__ import annotations

from typing import Any

from rocketmq_tx.broker.controller import BrokerController
from rocketmq_tx.broker.processors.pop import pop_request_checks
from rocketmq_tx.net.dispatch import HandlerProcessor, IRemotingContext
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.remoting.extrainfo import build_polling_key
from rocketmq_tx.remoting.headers.pop import PollingInfoRequestHeader, PollingInfoResponseHeader

__all__ = ["PollingInfoProcessor"]


class PollingInfoProcessor(HandlerProcessor):
    def __init__(self, controller: BrokerController) -> None:
        self.controller = controller
        self.handlers = {RequestCode.POLLING_INFO: self.polling_info}

    def polling_info(self, ctx: IRemotingContext, request: RemotingCommand) -> Any:
        c = self.controller
        header = PollingInfoRequestHeader.from_ext_fields(request.ext_fields)
        refused = pop_request_checks(c, ctx, request, header.topic, header.queue_id, header.consumer_group)
        if refused is not None:
            return refused
        key = build_polling_key(header.topic, header.consumer_group, header.queue_id)
        response = request.make_response(ResponseCode.SUCCESS)
        response.ext_fields.update(PollingInfoResponseHeader(c.pop_long_polling.polling_num(key)).to_ext_fields())
        return response
