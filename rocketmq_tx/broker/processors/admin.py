# -*- test-case-name: rocketmq_tx.broker.test.test_admin -*-
"""
``AdminBrokerProcessor``: the broker's default processor — offsets and store queries, topic
and subscription-group administration, queue locks, broker configuration and statistics,
and the admin requests relayed to clients. One method per request code; :attr:`handlers`
maps codes to them. Codes and remarks are Java 4.9.8's.
"""

from __future__ import annotations

from typing import Any, Callable

from zope.interface import implementer

from rocketmq_tx.broker.controller import BrokerController
from rocketmq_tx.broker.topicconfig import validate_topic
from rocketmq_tx.common import fastjson
from rocketmq_tx.common.route import TopicConfig
from rocketmq_tx.net.dispatch import IRemotingContext, IRequestProcessor
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.remoting.adminbodies import LockBatchRequestBody, LockBatchResponseBody, UnlockBatchRequestBody
from rocketmq_tx.remoting.headers.admin import CreateTopicRequestHeader
from rocketmq_tx.remoting.headers.client import (
    GetEarliestMsgStoretimeRequestHeader,
    GetEarliestMsgStoretimeResponseHeader,
    GetMaxOffsetRequestHeader,
    GetMinOffsetRequestHeader,
    OffsetResponseHeader,
    SearchOffsetRequestHeader,
)

__all__ = ["AdminBrokerProcessor"]

Handler = Callable[[IRemotingContext, RemotingCommand], Any]


@implementer(IRequestProcessor)
class AdminBrokerProcessor:
    def __init__(self, controller: BrokerController) -> None:
        self.controller = controller
        self.settings = controller.settings
        self.handlers: dict[int, Handler] = {
            RequestCode.GET_MAX_OFFSET: self.get_max_offset,
            RequestCode.GET_MIN_OFFSET: self.get_min_offset,
            RequestCode.SEARCH_OFFSET_BY_TIMESTAMP: self.search_offset_by_timestamp,
            RequestCode.GET_EARLIEST_MSG_STORETIME: self.get_earliest_msg_storetime,
            RequestCode.LOCK_BATCH_MQ: self.lock_batch_mq,
            RequestCode.UNLOCK_BATCH_MQ: self.unlock_batch_mq,
            RequestCode.UPDATE_AND_CREATE_TOPIC: self.update_and_create_topic,
            RequestCode.GET_ALL_TOPIC_CONFIG: self.get_all_topic_config,
            RequestCode.GET_BROKER_RUNTIME_INFO: self.get_broker_runtime_info,
        }

    def reject_request(self) -> bool:
        return False

    def process_request(self, ctx: IRemotingContext, request: RemotingCommand) -> Any:
        handler = self.handlers.get(request.code)
        if handler is None:
            return request.make_unsupported_response()
        return handler(ctx, request)

    # ------------------------------------------------------------------ offsets and store queries

    def get_max_offset(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        header = GetMaxOffsetRequestHeader.from_ext_fields(request.ext_fields)
        offset = self.controller.store.get_max_offset_in_queue(header.topic, header.queue_id)
        return request.make_response(ext_fields=OffsetResponseHeader(offset).to_ext_fields())

    def get_min_offset(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        header = GetMinOffsetRequestHeader.from_ext_fields(request.ext_fields)
        offset = self.controller.store.get_min_offset_in_queue(header.topic, header.queue_id)
        return request.make_response(ext_fields=OffsetResponseHeader(offset).to_ext_fields())

    def search_offset_by_timestamp(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        header = SearchOffsetRequestHeader.from_ext_fields(request.ext_fields)
        offset = self.controller.store.get_offset_in_queue_by_time(header.topic, header.queue_id, header.timestamp)
        return request.make_response(ext_fields=OffsetResponseHeader(offset).to_ext_fields())

    def get_earliest_msg_storetime(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        header = GetEarliestMsgStoretimeRequestHeader.from_ext_fields(request.ext_fields)
        ts = self.controller.store.get_earliest_message_time(header.topic, header.queue_id)
        return request.make_response(ext_fields=GetEarliestMsgStoretimeResponseHeader(ts).to_ext_fields())

    # ------------------------------------------------------------------ queue locks

    def lock_batch_mq(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        body = LockBatchRequestBody.from_json(fastjson.loads(request.body))
        locked = self.controller.rebalance_lock_manager.try_lock_batch(body.consumer_group or "", body.mq_set,
                                                                       body.client_id or "")
        ordered = [mq for mq in body.mq_set if mq in locked]
        return request.make_response(body=fastjson.dumps(LockBatchResponseBody(ordered).to_json()))

    def unlock_batch_mq(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        body = UnlockBatchRequestBody.from_json(fastjson.loads(request.body))
        self.controller.rebalance_lock_manager.unlock_batch(body.consumer_group or "", body.mq_set,
                                                            body.client_id or "")
        return request.make_response()

    # ------------------------------------------------------------------ topics

    def update_and_create_topic(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        header = CreateTopicRequestHeader.from_ext_fields(request.ext_fields)
        topic = header.topic
        bad = validate_topic(topic)
        if bad is not None:
            return request.make_response(ResponseCode.SYSTEM_ERROR, bad)
        if topic == self.settings["brokerClusterName"]:
            return request.make_response(ResponseCode.SYSTEM_ERROR,
                                         f"The specified topic[{topic}] is conflict with cluster name.")
        tc = TopicConfig(topic, header.read_queue_nums, header.write_queue_nums, header.perm,
                         header.topic_filter_type, header.topic_sys_flag or 0, bool(header.order))
        self.controller.topic_config_manager.update_topic_config(tc)
        self.controller.on_topic_created(tc)
        return request.make_response()

    def get_all_topic_config(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        body = fastjson.dumps(self.controller.topic_config_manager.encode())
        return request.make_response(body=body)

    # ------------------------------------------------------------------ broker

    def get_broker_runtime_info(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        return request.make_response(body=fastjson.dumps({"table": self.controller.runtime_info()}))
