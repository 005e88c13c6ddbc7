# -*- test-case-name: rocketmq_tx.broker.test.test_processors -*-
"""
``ConsumerManageProcessor``: GET_CONSUMER_LIST_BY_GROUP (38), UPDATE_CONSUMER_OFFSET (15),
QUERY_CONSUMER_OFFSET (14).
"""

from __future__ import annotations

from zope.interface import implementer

from rocketmq_tx.broker.controller import BrokerController
from rocketmq_tx.common import fastjson
from rocketmq_tx.net.dispatch import IRemotingContext, IRequestProcessor
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.remoting.headers.client import (
    GetConsumerListByGroupRequestHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    UpdateConsumerOffsetRequestHeader,
)

__all__ = ["ConsumerManageProcessor"]


@implementer(IRequestProcessor)
class ConsumerManageProcessor:
    def __init__(self, controller: BrokerController) -> None:
        self.controller = controller

    def reject_request(self) -> bool:
        return False

    def process_request(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        if request.code == RequestCode.GET_CONSUMER_LIST_BY_GROUP:
            return self.get_consumer_list_by_group(request)
        if request.code == RequestCode.UPDATE_CONSUMER_OFFSET:
            return self.update_consumer_offset(request)
        return self.query_consumer_offset(request)

    def get_consumer_list_by_group(self, request: RemotingCommand) -> RemotingCommand:
        header = GetConsumerListByGroupRequestHeader.from_ext_fields(request.ext_fields)
        info = self.controller.consumer_manager.get_consumer_group_info(header.consumer_group)
        ids = info.all_client_ids() if info is not None else []
        if ids:
            return request.make_response(body=fastjson.dumps({"consumerIdList": ids}))
        return request.make_response(ResponseCode.SYSTEM_ERROR, f"no consumer for this group, {header.consumer_group}")

    def update_consumer_offset(self, request: RemotingCommand) -> RemotingCommand:
        header = UpdateConsumerOffsetRequestHeader.from_ext_fields(request.ext_fields)
        self.controller.consumer_offset_manager.commit_offset(header.consumer_group, header.topic, header.queue_id,
                                                              header.commit_offset)
        return request.make_response(ResponseCode.SUCCESS)

    def query_consumer_offset(self, request: RemotingCommand) -> RemotingCommand:
        header = QueryConsumerOffsetRequestHeader.from_ext_fields(request.ext_fields)
        c = self.controller
        offset = c.consumer_offset_manager.query_offset(header.consumer_group, header.topic, header.queue_id)
        if offset >= 0:
            return request.make_response(ext_fields=QueryConsumerOffsetResponseHeader(offset).to_ext_fields())
        min_offset = c.store.get_min_offset_in_queue(header.topic, header.queue_id)
        # Java also requires the queue's first message to still be in memory; a queue that
        # starts at 0 is read from its beginning by a new group.
        if min_offset <= 0:
            return request.make_response(ext_fields=QueryConsumerOffsetResponseHeader(0).to_ext_fields())
        return request.make_response(ResponseCode.QUERY_NOT_FOUND,
                                     "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first")
