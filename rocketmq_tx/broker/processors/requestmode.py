# -*- test-case-name: rocketmq_tx.broker.test.test_requestmode -*-
"""
Message request modes (5.x): SET_MESSAGE_REQUEST_MODE (401, Java's ``QueryAssignmentProcessor``)
and GET_ALL_MESSAGE_REQUEST_MODE (402, Java's ``AdminBrokerProcessor``), over
:class:`~rocketmq_tx.broker.messagerequestmode.MessageRequestModeManager`. QUERY_ASSIGNMENT
(400), the queue allocation of POP-mode clients, is not served (REQUEST_CODE_NOT_SUPPORTED).
"""

from __future__ import annotations

from twisted.logger import Logger

from rocketmq_tx.broker.processors.admin import AdminProcessor
from rocketmq_tx.broker.topicconfig import RETRY_GROUP_TOPIC_PREFIX
from rocketmq_tx.common import fastjson
from rocketmq_tx.net.dispatch import IRemotingContext
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.remoting.adminbodies import SetMessageRequestModeRequestBody

__all__ = ["MessageRequestModeProcessor"]

log = Logger()


class MessageRequestModeProcessor(AdminProcessor):
    """SET_MESSAGE_REQUEST_MODE and GET_ALL_MESSAGE_REQUEST_MODE."""

    def __init__(self, controller) -> None:
        super().__init__(controller)
        self.handlers = {
            RequestCode.SET_MESSAGE_REQUEST_MODE: self.set_message_request_mode,
            RequestCode.GET_ALL_MESSAGE_REQUEST_MODE: self.get_all_message_request_mode,
        }

    def set_message_request_mode(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        """
        Java's checks in its order: a retry topic (NO_PERMISSION), an unknown topic
        (TOPIC_NOT_EXIST), a group that does not exist and may not be auto-created
        (SUBSCRIPTION_GROUP_NOT_EXIST); then the mode is kept and persisted.
        """
        try:
            body = SetMessageRequestModeRequestBody.from_json(fastjson.loads(request.body or b"{}") or {})
        except (ValueError, TypeError, AttributeError) as e:
            return request.make_response(ResponseCode.SYSTEM_ERROR, f"illegal SetMessageRequestModeRequestBody: {e}")
        topic = body.topic
        if topic is None or body.consumer_group is None:
            # Java dereferences them (a NullPointerException, SYSTEM_ERROR).
            return request.make_response(ResponseCode.SYSTEM_ERROR, "topic and consumerGroup are required")
        if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            return request.make_response(ResponseCode.NO_PERMISSION, "retry topic is not allowed to set mode")
        c = self.controller
        if c.topic_config_manager.select_topic_config(topic) is None:
            return request.make_response(ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist")
        if c.subscription_group_manager.find_subscription_group_config(body.consumer_group) is None:
            return request.make_response(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                                         "subscription group does not exist")
        log.info("setMessageRequestMode {topic} {group} {mode} by {peer}", topic=topic, group=body.consumer_group,
                 mode=body.mode, peer=ctx.peer)
        c.message_request_mode_manager.set_message_request_mode(topic, body.consumer_group, body)
        return request.make_response()

    def get_all_message_request_mode(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        """Every mode set, as ``messageRequestMode.json`` holds them (Java's content is never empty)."""
        return request.make_response(body=fastjson.dumps(self.controller.message_request_mode_manager.encode()))
