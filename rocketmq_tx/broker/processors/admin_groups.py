# -*- test-case-name: rocketmq_tx.broker.test.test_admin -*-
"""
Subscription groups and the clients of a group: group configs, connections, who consumes a
topic, and the orderly-consumption queue locks.
"""

from __future__ import annotations

from typing import Any

from twisted.logger import Logger

from rocketmq_tx.broker.controller import BrokerController
from rocketmq_tx.broker.processors.admin import AdminProcessor
from rocketmq_tx.broker.stats import GROUP_GET_NUMS, GROUP_GET_SIZE
from rocketmq_tx.common import fastjson
from rocketmq_tx.common.subscription import SubscriptionGroupConfig
from rocketmq_tx.net.dispatch import IRemotingContext
from rocketmq_tx.remoting import LanguageCode, RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.remoting.adminbodies import (
    Connection,
    ConsumerConnection,
    GroupList,
    LockBatchRequestBody,
    LockBatchResponseBody,
    ProducerConnection,
    ProducerInfo,
    ProducerTableInfo,
    UnlockBatchRequestBody,
)
from rocketmq_tx.remoting.headers.admin import (
    DeleteSubscriptionGroupRequestHeader,
    GetConsumerConnectionListRequestHeader,
    GetProducerConnectionListRequestHeader,
    QueryTopicConsumeByWhoRequestHeader,
)

__all__ = ["GroupAdminProcessor"]

log = Logger()


def _language_name(language: Any) -> str:
    """A ``LanguageCode`` name for a connection: the heartbeat may have kept the number."""
    text = str(language)
    if text.isdigit():
        try:
            return LanguageCode(int(text)).name
        except ValueError:
            return "OTHER"
    return text


class GroupAdminProcessor(AdminProcessor):
    """
    UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, GET_ALL_SUBSCRIPTIONGROUP_CONFIG, DELETE_SUBSCRIPTIONGROUP,
    the connection lists, QUERY_TOPIC_CONSUME_BY_WHO, LOCK_BATCH_MQ, UNLOCK_BATCH_MQ.
    """

    def __init__(self, controller: BrokerController) -> None:
        super().__init__(controller)
        self.handlers = {
            RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: self.update_and_create_subscription_group,
            RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG: self.get_all_subscription_group,
            RequestCode.DELETE_SUBSCRIPTIONGROUP: self.delete_subscription_group,
            RequestCode.GET_CONSUMER_CONNECTION_LIST: self.get_consumer_connection_list,
            RequestCode.GET_PRODUCER_CONNECTION_LIST: self.get_producer_connection_list,
            RequestCode.GET_ALL_PRODUCER_INFO: self.get_all_producer_info,
            RequestCode.QUERY_TOPIC_CONSUME_BY_WHO: self.query_topic_consume_by_who,
            RequestCode.LOCK_BATCH_MQ: self.lock_batch_mq,
            RequestCode.UNLOCK_BATCH_MQ: self.unlock_batch_mq,
        }

    def update_and_create_subscription_group(self, ctx: IRemotingContext, request: RemotingCommand
                                             ) -> RemotingCommand:
        error = self._slave_error(request)
        if error is not None:
            return error
        log.info("updateAndCreateSubscriptionGroup called by {peer}", peer=ctx.peer)
        if request.body:
            data = fastjson.loads(request.body)
            if data is not None:
                config = SubscriptionGroupConfig.from_json(data)
                error = self._group_error(request, config.group_name)
                if error is None and config.retry_queue_nums > 0:
                    # 0 (or less) is Java's "no retry": send-back answers SUCCESS and drops it.
                    error = self._queue_nums_error(request, config.retry_queue_nums)
                if error is not None:
                    return error
                self.controller.subscription_group_manager.update_subscription_group_config(config)
        return request.make_response()

    def get_all_subscription_group(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        return request.make_response(body=fastjson.dumps(self.controller.subscription_group_manager.encode()))

    def delete_subscription_group(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        error = self._slave_error(request)
        if error is not None:
            return error
        header = DeleteSubscriptionGroupRequestHeader.from_ext_fields(request.ext_fields)
        c = self.controller
        c.subscription_group_manager.delete_subscription_group_config(header.group_name)
        if header.should_remove_offset:
            c.consumer_offset_manager.remove_offset(header.group_name)
        if self.settings["autoDeleteUnusedStats"]:
            suffix = "@" + header.group_name
            for name in (GROUP_GET_NUMS, GROUP_GET_SIZE):
                table = c.stats.items.get(name, {})
                for key in [k for k in table if k.endswith(suffix)]:
                    del table[key]
        return request.make_response()

    def get_consumer_connection_list(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        header = GetConsumerConnectionListRequestHeader.from_ext_fields(request.ext_fields)
        info = self.controller.consumer_manager.get_consumer_group_info(header.consumer_group)
        if info is None:
            return request.make_response(ResponseCode.CONSUMER_NOT_ONLINE,
                                         f"the consumer group[{header.consumer_group}] not online")
        body = ConsumerConnection(
            [Connection(ci.client_id, ci.address, _language_name(ci.language), ci.version)
             for ci in info.channel_info_table.values()],
            dict(info.subscription_table), info.consume_type, info.message_model, info.consume_from_where)
        return request.make_response(body=fastjson.dumps(body.to_json()))

    def get_producer_connection_list(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        header = GetProducerConnectionListRequestHeader.from_ext_fields(request.ext_fields)
        channels = self.controller.producer_manager.group_channel_table.get(header.producer_group)
        if channels is None:
            return request.make_response(ResponseCode.SYSTEM_ERROR,
                                         f"the producer group[{header.producer_group}] not exist")
        body = ProducerConnection([Connection(ci.client_id, ci.address, _language_name(ci.language), ci.version)
                                   for ci in channels.values()])
        return request.make_response(body=fastjson.dumps(body.to_json()))

    def get_all_producer_info(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        table: dict[str, list[ProducerInfo]] = {}
        for group, channels in self.controller.producer_manager.group_channel_table.items():
            # Java prints the channel's InetSocketAddress: a leading slash.
            table[group] = [ProducerInfo(ci.client_id, "/" + ci.address, _language_name(ci.language), ci.version,
                                         ci.last_update_timestamp) for ci in channels.values()]
        return request.make_response(body=fastjson.dumps(ProducerTableInfo(table).to_json()))

    def query_topic_consume_by_who(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        header = QueryTopicConsumeByWhoRequestHeader.from_ext_fields(request.ext_fields)
        c = self.controller
        groups = c.consumer_manager.query_topic_consume_by_who(header.topic)
        groups |= c.consumer_offset_manager.which_group_by_topic(header.topic)
        return request.make_response(body=fastjson.dumps(GroupList(sorted(groups)).to_json()))

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
