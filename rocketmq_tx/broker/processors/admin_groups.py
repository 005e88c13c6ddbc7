# -*- test-case-name: rocketmq_tx.broker.test.test_admin -*-
"""
Subscription groups and the clients of a group: group configs, connections, who consumes a
topic, and the orderly-consumption queue locks.
"""

from __future__ import annotations

from typing import Any

from twisted.logger import Logger

from rocketmq_tx.broker.controller import BrokerController
from rocketmq_tx.broker.processors.admin import AdminProcessor, decode_body, illegal_body, run_sliced
from rocketmq_tx.broker.stats import GROUP_GET_NUMS, GROUP_GET_SIZE
from rocketmq_tx.common import fastjson
from rocketmq_tx.common.attribute import AttributeAlterError
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
    QuerySubscriptionResponseBody,
    SubscriptionGroupList,
    UnlockBatchRequestBody,
)
from rocketmq_tx.remoting.bodies import topic_list
from rocketmq_tx.remoting.headers.admin import (
    DeleteSubscriptionGroupRequestHeader,
    GetConsumerConnectionListRequestHeader,
    GetProducerConnectionListRequestHeader,
    GetSubscriptionGroupConfigRequestHeader,
    QuerySubscriptionByConsumerRequestHeader,
    QueryTopicConsumeByWhoRequestHeader,
    QueryTopicsByConsumerRequestHeader,
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
    UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (and its 5.x _LIST), GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
    GET_SUBSCRIPTIONGROUP_CONFIG (5.x), DELETE_SUBSCRIPTIONGROUP, the connection lists,
    QUERY_TOPIC_CONSUME_BY_WHO, QUERY_TOPICS_BY_CONSUMER and QUERY_SUBSCRIPTION_BY_CONSUMER (5.x),
    LOCK_BATCH_MQ, UNLOCK_BATCH_MQ.
    """

    def __init__(self, controller: BrokerController) -> None:
        super().__init__(controller)
        self.handlers = {
            RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: self.update_and_create_subscription_group,
            RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST: self.update_and_create_subscription_group_list,
            RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG: self.get_subscription_group,
            RequestCode.QUERY_TOPICS_BY_CONSUMER: self.query_topics_by_consumer,
            RequestCode.QUERY_SUBSCRIPTION_BY_CONSUMER: self.query_subscription_by_consumer,
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
                error = self._group_config_error(request, config)
                if error is not None:
                    return error
                self.controller.subscription_group_manager.update_subscription_group_config(config)
        return request.make_response()

    def _group_config_error(self, request: RemotingCommand, config: SubscriptionGroupConfig
                            ) -> RemotingCommand | None:
        """
        The name, the retry queue count, then 5.x's attribute modification applied to *config*
        (Java throws out of the processor there: SYSTEM_ERROR, the exception as remark,
        without Java's stack frame).
        """
        error = self._group_error(request, config.group_name)
        if error is None and config.retry_queue_nums > 0:
            # 0 (or less) is Java's "no retry": send-back answers SUCCESS and drops it.
            error = self._queue_nums_error(request, config.retry_queue_nums)
        if error is not None:
            return error
        try:
            self.controller.subscription_group_manager.alter_attributes(config)
        except AttributeAlterError as e:
            return request.make_response(ResponseCode.SYSTEM_ERROR, f"{e.java_class}: {e}")
        return None

    def update_and_create_subscription_group_list(self, ctx: IRemotingContext, request: RemotingCommand) -> Any:
        """
        UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST (225, 5.x): each group as by
        UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, in order; a refused one stops the list there (the
        ones before it stay, as in Java).
        """
        error = self._slave_error(request)
        if error is not None:
            return error
        d = decode_body(self.controller.reactor, request.body,
                        lambda body: SubscriptionGroupList.from_json(fastjson.loads(body or b"{}") or {}))
        return d.addCallbacks(lambda decoded: self._create_group_list(ctx, request, decoded.group_config_list),
                              illegal_body(request, "SubscriptionGroupList"))

    def _create_group_list(self, ctx: IRemotingContext, request: RemotingCommand,
                           configs: list[SubscriptionGroupConfig]) -> Any:
        log.info("updateAndCreateSubscriptionGroupList: {count} groups, called by {peer}", count=len(configs),
                 peer=ctx.peer)

        def apply(config: SubscriptionGroupConfig) -> RemotingCommand | None:
            error = self._group_config_error(request, config)
            if error is None:
                self.controller.subscription_group_manager.update_subscription_group_config(config)
            return error

        # In reactor slices: a body may hold ~150,000 configs.
        d = run_sliced(self.controller.reactor, configs, apply)
        return d.addCallback(lambda error: error if error is not None else request.make_response())

    def get_subscription_group(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        """
        GET_SUBSCRIPTIONGROUP_CONFIG (352, 5.x; the proxy asks it before every consumer
        starts): the group's config, created first under Java's auto-create rule.
        """
        header = GetSubscriptionGroupConfigRequestHeader.from_ext_fields(request.ext_fields)
        config = self.controller.subscription_group_manager.find_subscription_group_config(header.group)
        if config is None:
            log.error("No group in this broker, client: {peer} group: {group}", peer=ctx.peer,
                      group=header.group[:300])
            return request.make_response(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, "No group in this broker")
        return request.make_response(body=fastjson.dumps(config.to_json()))

    def query_topics_by_consumer(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        """QUERY_TOPICS_BY_CONSUMER (343, 5.x): the topics the group has offsets of, and this broker."""
        header = QueryTopicsByConsumerRequestHeader.from_ext_fields(request.ext_fields)
        topics = self.controller.consumer_offset_manager.which_topic_by_consumer(header.group)
        return request.make_response(body=topic_list(sorted(topics), self.controller.broker_addr))

    def query_subscription_by_consumer(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        """QUERY_SUBSCRIPTION_BY_CONSUMER (345, 5.x): an online group's subscription of a topic (none: left out)."""
        header = QuerySubscriptionByConsumerRequestHeader.from_ext_fields(request.ext_fields)
        sub = self.controller.consumer_manager.find_subscription_data(header.group, header.topic or "")
        body = QuerySubscriptionResponseBody(header.group, header.topic, sub)
        return request.make_response(body=fastjson.dumps(body.to_json()))

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
