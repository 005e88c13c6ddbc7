# -*- test-case-name: rocketmq_tx.broker.test.test_admin -*-
"""
Topic administration: create, delete, the topic configs, per-queue stats, the system topics.
"""

from __future__ import annotations

from typing import Any

from twisted.logger import Logger

from rocketmq_tx.broker.controller import BrokerController
from rocketmq_tx.broker.processors.admin import (
    AdminProcessor,
    clean_unused_topic,
    decode_body,
    illegal_body,
    run_sliced,
)
from rocketmq_tx.broker.topicconfig import validate_topic
from rocketmq_tx.common import fastjson
from rocketmq_tx.common.attribute import MESSAGE_TYPE, AttributeAlterError, TopicMessageType, parse_to_map
from rocketmq_tx.common.message import MessageQueue
from rocketmq_tx.common.route import PermName, TopicConfig
from rocketmq_tx.net.dispatch import IRemotingContext
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.remoting.adminbodies import CreateTopicListRequestBody, TopicOffset, TopicStatsTable
from rocketmq_tx.remoting.bodies import topic_list
from rocketmq_tx.remoting.headers.admin import (
    CreateTopicRequestHeader,
    DeleteTopicRequestHeader,
    GetTopicConfigRequestHeader,
    GetTopicStatsInfoRequestHeader,
)

__all__ = ["TopicAdminProcessor"]

_LMQ_PREFIX = "%LMQ%"

log = Logger()


class TopicAdminProcessor(AdminProcessor):
    """
    UPDATE_AND_CREATE_TOPIC (and its 5.x _LIST), DELETE_TOPIC_IN_BROKER, GET_ALL_TOPIC_CONFIG, GET_TOPIC_CONFIG,
    GET_TOPIC_STATS_INFO, GET_SYSTEM_TOPIC_LIST_FROM_BROKER.
    """

    def __init__(self, controller: BrokerController) -> None:
        super().__init__(controller)
        self.handlers = {
            RequestCode.UPDATE_AND_CREATE_TOPIC: self.update_and_create_topic,
            RequestCode.UPDATE_AND_CREATE_TOPIC_LIST: self.update_and_create_topic_list,
            RequestCode.DELETE_TOPIC_IN_BROKER: self.delete_topic,
            RequestCode.GET_ALL_TOPIC_CONFIG: self.get_all_topic_config,
            RequestCode.GET_TOPIC_CONFIG: self.get_topic_config,
            RequestCode.GET_TOPIC_STATS_INFO: self.get_topic_stats_info,
            RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER: self.get_system_topic_list_from_broker,
        }

    def _topic_error(self, request: RemotingCommand, topic: str | None) -> RemotingCommand | None:
        """Java ``TopicValidator.validateTopic`` then ``isSystemTopic`` (SYSTEM_ERROR either way)."""
        bad = validate_topic(topic)
        if bad is not None:
            return request.make_response(ResponseCode.SYSTEM_ERROR, bad)
        assert topic is not None
        if self.controller.topic_config_manager.is_system_topic(topic):
            return request.make_response(ResponseCode.SYSTEM_ERROR,
                                         f"The topic[{topic}] is conflict with system topic.")
        return None

    def update_and_create_topic(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        error = self._slave_error(request)
        if error is not None:
            return error
        header = CreateTopicRequestHeader.from_ext_fields(request.ext_fields)
        topic = header.topic
        error = self._topic_error(request, topic)
        if error is not None:
            return error
        error = self._queue_nums_error(request, header.read_queue_nums, header.write_queue_nums)
        if error is not None:
            return error
        if not 0 <= header.perm < PermName.PERM_PRIORITY:
            # Java checks this in the admin client (Validators.checkTopicConfig); the broker is
            # the last place that sees every caller.
            return request.make_response(ResponseCode.SYSTEM_ERROR,
                                         f"topicPermission value: {header.perm} is invalid.")
        # Java 4.9.8 ignores the header's order flag: a topic becomes ordered through the
        # name server's ORDER_TOPIC_CONFIG namespace (mqadmin updateTopic -o writes it there).
        tc = TopicConfig(topic, header.read_queue_nums, header.write_queue_nums, header.perm,
                         header.topic_filter_type, header.topic_sys_flag or 0)
        error = self._apply_attributes(request, tc, header.attributes)
        if error is not None:
            return error
        self.controller.topic_config_manager.update_topic_config(tc)
        self.controller.on_topic_created(tc)
        return request.make_response()

    def update_and_create_topic_list(self, ctx: IRemotingContext, request: RemotingCommand) -> Any:
        """
        UPDATE_AND_CREATE_TOPIC_LIST (18, 5.x): every name, queue count, permission and MIXED
        type is checked first (INVALID_PARAMETER for names, as 5.x), then each topic is created
        or changed in order with its attributes; an attribute refusal stops the list there (the
        ones before it stay, as in Java); the name servers hear of all of them at once. Both
        passes run in reactor slices (a body may hold ~150,000 configs).
        """
        error = self._slave_error(request)
        if error is not None:
            return error
        d = decode_body(self.controller.reactor, request.body,
                        lambda body: CreateTopicListRequestBody.from_json(fastjson.loads(body or b"{}") or {}))
        return d.addCallbacks(lambda decoded: self._create_topic_list(ctx, request, decoded.topic_config_list),
                              illegal_body(request, "CreateTopicListRequestBody"))

    def _create_topic_list(self, ctx: IRemotingContext, request: RemotingCommand, configs: list[TopicConfig]) -> Any:
        log.info("updateAndCreateTopicList: {count} topics, called by {peer}", count=len(configs), peer=ctx.peer)
        manager = self.controller.topic_config_manager

        def check(tc: TopicConfig) -> RemotingCommand | None:
            bad = validate_topic(tc.topic_name)
            if bad is None and manager.is_system_topic(tc.topic_name):
                bad = f"The topic[{tc.topic_name}] is conflict with system topic."
            if bad is not None:
                return request.make_response(ResponseCode.INVALID_PARAMETER, bad)
            error = self._queue_nums_error(request, tc.read_queue_nums, tc.write_queue_nums)
            if error is not None:
                return error
            if not 0 <= tc.perm < PermName.PERM_PRIORITY:
                return request.make_response(ResponseCode.SYSTEM_ERROR, f"topicPermission value: {tc.perm} is invalid.")
            if ((tc.attributes or {}).get("+" + MESSAGE_TYPE.name) == TopicMessageType.MIXED
                    and not self.settings["enableMixedMessageType"]):
                return request.make_response(ResponseCode.INVALID_PARAMETER, "MIXED message type is not supported.")
            return None

        done: list[TopicConfig] = []

        def apply(tc: TopicConfig) -> RemotingCommand | None:
            error = self._apply_attributes(request, tc, dict(tc.attributes or {}))
            if error is None:
                manager.update_topic_config(tc)
                done.append(tc)
            return error

        def checked(error: RemotingCommand | None) -> Any:
            return error if error is not None else run_sliced(self.controller.reactor, configs, apply)

        def applied(error: RemotingCommand | None) -> RemotingCommand:
            if done:
                self.controller.register_increment(done)
            return error if error is not None else request.make_response()

        return run_sliced(self.controller.reactor, configs, check).addCallback(checked).addCallback(applied)

    def _apply_attributes(self, request: RemotingCommand, tc: TopicConfig,
                          modification: str | dict[str, str] | None) -> RemotingCommand | None:
        """
        5.x topic attributes (``+message.type=FIFO,-reserve.time``): parsed and applied to the
        stored ones as Java 5.5.0 does. MIXED is refused with INVALID_PARAMETER unless
        ``enableMixedMessageType``; every other refusal is Java's exception
        message under SYSTEM_ERROR. *modification* is the header string, or the signed-key map
        a TopicConfig of UPDATE_AND_CREATE_TOPIC_LIST carries.
        """
        try:
            requested = parse_to_map(modification) if not isinstance(modification, dict) else modification
            if (requested.get("+" + MESSAGE_TYPE.name) == TopicMessageType.MIXED
                    and not self.settings["enableMixedMessageType"]):
                return request.make_response(ResponseCode.INVALID_PARAMETER, "MIXED message type is not supported.")
            self.controller.topic_config_manager.alter_attributes(tc, requested)
        except AttributeAlterError as e:
            return request.make_response(ResponseCode.SYSTEM_ERROR, str(e))
        return None

    def delete_topic(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        error = self._slave_error(request)
        if error is not None:
            return error
        header = DeleteTopicRequestHeader.from_ext_fields(request.ext_fields)
        topic = header.topic
        error = self._topic_error(request, topic)
        if error is not None:
            return error
        c = self.controller
        if topic.startswith(_LMQ_PREFIX):
            clean_unused_topic(c, (), only=topic)
            return request.make_response()
        c.topic_config_manager.delete_topic_config(topic)
        clean_unused_topic(c, c.topic_config_manager.topic_config_table)
        # Java 4.9.8 keeps the offsets of a deleted topic; 5.x drops them, so a topic
        # created again under the same name does not inherit stale positions.
        c.consumer_offset_manager.remove_topic(topic)
        if self.settings["autoDeleteUnusedStats"]:
            c.stats.forget_topic(topic)
        return request.make_response()

    def get_all_topic_config(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        body = fastjson.dumps(self.controller.topic_config_manager.encode())
        return request.make_response(body=body)

    def get_topic_config(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        """
        GET_TOPIC_CONFIG (351), a 5.x code a 4.9.8 broker does not know. Answered as 5.x
        does (``TopicConfigAndQueueMapping`` without a mapping: static topics do not exist
        here) because 5.x mqadmin topicStatus and consumerProgress -g fail without it.
        """
        header = GetTopicConfigRequestHeader.from_ext_fields(request.ext_fields)
        tc = self.controller.topic_config_manager.select_topic_config(header.topic)
        if tc is None:
            return request.make_response(ResponseCode.TOPIC_NOT_EXIST,
                                         f"No topic in this broker. topic: {header.topic}")
        return request.make_response(body=fastjson.dumps(tc.to_json()))

    def get_topic_stats_info(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        header = GetTopicStatsInfoRequestHeader.from_ext_fields(request.ext_fields)
        topic = header.topic
        tc = self.controller.topic_config_manager.select_topic_config(topic)
        if tc is None:
            return request.make_response(ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist")
        store = self.controller.store
        table = TopicStatsTable()
        for qid in range(tc.write_queue_nums):
            low = max(store.get_min_offset_in_queue(topic, qid), 0)
            high = max(store.get_max_offset_in_queue(topic, qid), 0)
            ts = store.get_message_store_timestamp(topic, qid, high - 1) if high > 0 else 0
            table.offset_table[MessageQueue(topic, self.broker_name, qid)] = TopicOffset(low, high, ts)
        return request.make_response(body=fastjson.dumps(table.to_json()))

    def get_system_topic_list_from_broker(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        # Java's TopicValidator set: the fixed system topics plus those this broker added
        # (cluster, broker name, reply and trace topics).
        return request.make_response(body=topic_list(sorted(self.controller.topic_config_manager.system_topics)))
