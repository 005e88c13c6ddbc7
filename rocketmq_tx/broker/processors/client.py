# -*- test-case-name: rocketmq_tx.broker.test.test_processors -*-
"""``ClientManageProcessor``: HEART_BEAT (34), UNREGISTER_CLIENT (35), CHECK_CLIENT_CONFIG (46)."""

from __future__ import annotations

from rocketmq_tx.broker.clientmanager import ClientChannelInfo, FilterCompileError, is_tag_type
from rocketmq_tx.broker.controller import BrokerController
from rocketmq_tx.broker.topicconfig import retry_topic
from rocketmq_tx.common import fastjson
from rocketmq_tx.common.route import PermName
from rocketmq_tx.common.validators import is_store_name_safe, validate_group, validate_topic
from rocketmq_tx.net.dispatch import HandlerProcessor, IRemotingContext
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.remoting.api import HeartbeatData, SubscriptionData
from rocketmq_tx.remoting.codes import LanguageCode
from rocketmq_tx.remoting.headers.client import UnregisterClientRequestHeader

__all__ = ["ClientManageProcessor"]

_RW = PermName.PERM_READ | PermName.PERM_WRITE


def _heartbeat_name_error(data: HeartbeatData) -> str | None:
    """
    The first group or subscribed topic a Java client would refuse to send (Java's broker
    takes any name here), else ``None``. A consumer group becomes ``%RETRY%<group>``, a
    directory of the store, so nothing of such a heartbeat is registered.
    """
    for consumer in data.consumers:
        bad = validate_group(consumer.group_name)
        if bad is not None:
            return bad
        for subscription in consumer.subscriptions:
            # Characters only: a 5.x client's %RETRY%<group> may be longer than a topic.
            if not is_store_name_safe(subscription.topic):
                return validate_topic(subscription.topic)
    for group in data.producer_groups:
        bad = validate_group(group)
        if bad is not None:
            return bad
    return None


class ClientManageProcessor(HandlerProcessor):
    def __init__(self, controller: BrokerController) -> None:
        self.controller = controller
        self.handlers = {
            RequestCode.HEART_BEAT: self.heart_beat,
            RequestCode.UNREGISTER_CLIENT: self.unregister_client,
            RequestCode.CHECK_CLIENT_CONFIG: self.check_client_config,
        }

    def _client(self, ctx: IRemotingContext, client_id: str, request: RemotingCommand) -> ClientChannelInfo:
        try:
            language = LanguageCode(request.language).name
        except ValueError:  # a language this codec does not know stays a number
            language = str(request.language)
        return ClientChannelInfo(ctx, client_id, language, request.version, self.controller.now_ms())

    def heart_beat(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        c = self.controller
        try:
            data = HeartbeatData.from_json(fastjson.loads(request.body))
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            return request.make_response(ResponseCode.SYSTEM_ERROR, f"bad heartbeat body: {e}")
        bad = _heartbeat_name_error(data)
        if bad is not None:
            return request.make_response(ResponseCode.SYSTEM_ERROR, bad)
        client = self._client(ctx, data.client_id, request)
        for consumer in data.consumers:
            sgc = c.subscription_group_manager.find_subscription_group_config(consumer.group_name)
            notify = True
            if sgc is not None:
                notify = sgc.notify_consumer_ids_changed_enable
                c.topic_config_manager.create_topic_in_send_message_back_method(
                    retry_topic(consumer.group_name), sgc.retry_queue_nums, _RW, 0x2 if consumer.unit_mode else 0)
            c.consumer_manager.register_consumer(consumer.group_name, client, consumer.consume_type,
                                                 consumer.message_model, consumer.consume_from_where,
                                                 consumer.subscriptions, notify)
        for group in data.producer_groups:
            c.producer_manager.register_producer(group, client)
        return request.make_response(ResponseCode.SUCCESS)

    def unregister_client(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        c = self.controller
        header = UnregisterClientRequestHeader.from_ext_fields(request.ext_fields)
        client = self._client(ctx, header.client_id, request)
        if header.producer_group:
            c.producer_manager.unregister_producer(header.producer_group, client)
        if header.consumer_group:
            sgc = c.subscription_group_manager.find_subscription_group_config(header.consumer_group)
            notify = sgc.notify_consumer_ids_changed_enable if sgc is not None else True
            c.consumer_manager.unregister_consumer(header.consumer_group, client, notify)
        return request.make_response(ResponseCode.SUCCESS)

    def check_client_config(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        """
        CHECK_CLIENT_CONFIG (Java ``checkClientConfig``): a TAG subscription passes; any other
        is refused when ``enablePropertyFilter`` is off, and otherwise compiled, a malformed
        expression answered SUBSCRIPTION_PARSE_FAILED with the parser's message.
        """
        try:
            body = fastjson.loads(request.body) if request.body else {}
            sub = body.get("subscriptionData") or {}
            expression_type = sub.get("expressionType")
            if is_tag_type(expression_type):
                SubscriptionData.build(str(sub.get("topic") or ""), sub.get("subString"))
                return request.make_response(ResponseCode.SUCCESS)
        except Exception as e:
            return request.make_response(ResponseCode.SUBSCRIPTION_PARSE_FAILED, f"Parse subscription failed: {e}")
        if not self.controller.settings["enablePropertyFilter"]:
            return request.make_response(
                ResponseCode.SYSTEM_ERROR,
                f"The broker does not support consumer to filter message by {expression_type}")
        try:
            # Compiled into the group's cache, where the pulls that follow find it.
            self.controller.consumer_manager.filters.get(str(body.get("group") or ""), str(sub.get("topic") or ""),
                                                        str(expression_type), str(sub.get("subString") or ""))
        except FilterCompileError as e:
            return request.make_response(ResponseCode.SUBSCRIPTION_PARSE_FAILED, str(e))
        return request.make_response(ResponseCode.SUCCESS)
