# -*- test-case-name: rocketmq_tx.broker.ha.test.test_ha_status -*-
"""
GET_BROKER_HA_STATUS (907, Java 5.x ``AdminBrokerProcessor.getBrokerHaStatus``, ``mqadmin
haStatus``): the replication state as ``HARuntimeInfo`` JSON, a master's view of its slaves or
a slave's of its master.
"""

from __future__ import annotations

from typing import Any

from rocketmq_tx.broker.controller import BrokerController
from rocketmq_tx.common import fastjson
from rocketmq_tx.net.dispatch import HandlerProcessor, IRemotingContext
from rocketmq_tx.remoting import RemotingCommand, RequestCode

__all__ = ["HAStatusProcessor"]


class HAStatusProcessor(HandlerProcessor):
    def __init__(self, controller: BrokerController) -> None:
        self.controller = controller
        self.handlers = {RequestCode.GET_BROKER_HA_STATUS: self.get_broker_ha_status}

    def get_broker_ha_status(self, ctx: IRemotingContext, request: RemotingCommand) -> Any:
        c = self.controller
        if c.ha_client is not None:
            info = c.ha_client.runtime_info()
        else:
            assert c.ha_service is not None  # a master always has one
            info = c.ha_service.runtime_info()
        return request.make_response(body=fastjson.dumps(info))
