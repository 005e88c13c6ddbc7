# -*- test-case-name: rocketmq_tx.broker.test.test_processors -*-
"""
``ConsumerManageProcessor``: GET_CONSUMER_LIST_BY_GROUP (38), UPDATE_CONSUMER_OFFSET (15),
QUERY_CONSUMER_OFFSET (14).
"""

from __future__ import annotations

from rocketmq_tx.broker.controller import BrokerController
from rocketmq_tx.common import fastjson
from rocketmq_tx.common.validators import is_store_name_safe, validate_group
from rocketmq_tx.net.dispatch import HandlerProcessor, IRemotingContext
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.remoting.headers.client import (
    GetConsumerListByGroupRequestHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    UpdateConsumerOffsetRequestHeader,
)

__all__ = ["ConsumerManageProcessor"]


class ConsumerManageProcessor(HandlerProcessor):
    def __init__(self, controller: BrokerController) -> None:
        self.controller = controller
        self.handlers = {
            RequestCode.GET_CONSUMER_LIST_BY_GROUP: self.get_consumer_list_by_group,
            RequestCode.UPDATE_CONSUMER_OFFSET: self.update_consumer_offset,
            RequestCode.QUERY_CONSUMER_OFFSET: self.query_consumer_offset,
        }

    def get_consumer_list_by_group(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        header = GetConsumerListByGroupRequestHeader.from_ext_fields(request.ext_fields)
        info = self.controller.consumer_manager.get_consumer_group_info(header.consumer_group)
        ids = info.all_client_ids() if info is not None else []
        if ids:
            return request.make_response(body=fastjson.dumps({"consumerIdList": ids}))
        return request.make_response(ResponseCode.SYSTEM_ERROR, f"no consumer for this group, {header.consumer_group}")

    def update_consumer_offset(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        header = UpdateConsumerOffsetRequestHeader.from_ext_fields(request.ext_fields)
        # 5.x's checks (4.9 stores any pair): the offset table only grows with real topics
        # and with groups a Java client could have.
        if validate_group(header.consumer_group) is not None:
            return request.make_response(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                                         f"Group {header.consumer_group} not exist!")
        if self.controller.topic_config_manager.select_topic_config(header.topic) is None:
            return request.make_response(ResponseCode.TOPIC_NOT_EXIST, f"Topic {header.topic} not exist!")
        self.controller.consumer_offset_manager.commit_offset(header.consumer_group, header.topic, header.queue_id,
                                                              header.commit_offset)
        return request.make_response(ResponseCode.SUCCESS)

    def query_consumer_offset(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        header = QueryConsumerOffsetRequestHeader.from_ext_fields(request.ext_fields)
        c = self.controller
        if not is_store_name_safe(header.topic) or validate_group(header.consumer_group) is not None:
            # No offset can exist under such names; answer as for a group that has none.
            return request.make_response(ResponseCode.QUERY_NOT_FOUND,
                                         "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first")
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
