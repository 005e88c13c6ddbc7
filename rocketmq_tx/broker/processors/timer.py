# -*- test-case-name: rocketmq_tx.broker.test.test_timer -*-
"""
The timer store's admin codes (Java 5.x ``AdminBrokerProcessor``): GET_TIMER_CHECK_POINT
(60), the 56-byte ``TimerCheckpoint.encode`` of the live checkpoint, and GET_TIMER_METRICS
(61), the ``timermetrics`` JSON. With ``timerWheelEnable=false`` there is no timer store and
both answer SYSTEM_ERROR with Java's remarks.
"""

from __future__ import annotations

from typing import Any

from twisted.logger import Logger

from rocketmq_tx.broker.controller import BrokerController
from rocketmq_tx.net.dispatch import HandlerProcessor, IRemotingContext
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode

__all__ = ["TimerAdminProcessor"]

log = Logger()


class TimerAdminProcessor(HandlerProcessor):
    def __init__(self, controller: BrokerController) -> None:
        self.controller = controller
        self.handlers = {
            RequestCode.GET_TIMER_CHECK_POINT: self.get_timer_check_point,
            RequestCode.GET_TIMER_METRICS: self.get_timer_metrics,
        }

    def get_timer_check_point(self, ctx: IRemotingContext, request: RemotingCommand) -> Any:
        service = self.controller.timer_message_service
        if service is None:
            log.error("getTimerCheckPoint: checkpoint is null, caller={peer}", peer=ctx.peer)
            return request.make_response(ResponseCode.SYSTEM_ERROR, "The checkpoint is null")
        return request.make_response(body=service.timer_store.checkpoint_bytes())

    def get_timer_metrics(self, ctx: IRemotingContext, request: RemotingCommand) -> Any:
        service = self.controller.timer_message_service
        if service is None:
            log.error("The timer message store is null, client: {peer}", peer=ctx.peer)
            return request.make_response(ResponseCode.SYSTEM_ERROR, "The timer message store is null")
        return request.make_response(body=service.timer_store.metrics.encode().encode("utf-8"))
