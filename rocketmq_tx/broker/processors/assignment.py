# -*- test-case-name: rocketmq_tx.broker.test.test_metadata5 -*-
"""
Java 5.x's ``QueryAssignmentProcessor``: QUERY_ASSIGNMENT (400), the allocation of a topic's
queues made by the broker for clients that do not rebalance themselves (POP mode, or
``clientRebalance=false``), and SET_MESSAGE_REQUEST_MODE (401) with its store
:class:`~rocketmq_tx.broker.messagerequestmode.MessageRequestModeManager`; also
GET_ALL_MESSAGE_REQUEST_MODE (402, Java's ``AdminBrokerProcessor``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from twisted.logger import Logger

from rocketmq_tx.broker.processors.admin import AdminProcessor
from rocketmq_tx.broker.topicconfig import RETRY_GROUP_TOPIC_PREFIX
from rocketmq_tx.common import fastjson
from rocketmq_tx.common.message import MessageQueue
from rocketmq_tx.common.rebalance import allocate_averagely, allocate_averagely_by_circle
from rocketmq_tx.net.dispatch import IRemotingContext
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.remoting.adminbodies import (
    MessageQueueAssignment,
    QueryAssignmentRequestBody,
    QueryAssignmentResponseBody,
    SetMessageRequestModeRequestBody,
)

__all__ = ["QueryAssignmentProcessor", "allocate_for_pop"]

#: The strategies Java's broker registers, by ``getName()``.
_STRATEGIES: dict[str, Callable[[str, Sequence[MessageQueue], Sequence[str]], list[MessageQueue]]] = {
    "AVG": allocate_averagely,
    "AVG_BY_CIRCLE": allocate_averagely_by_circle,
}


def allocate_for_pop(strategy: Callable[[str, Sequence[MessageQueue], Sequence[str]], list[MessageQueue]],
                     client_id: str, mq_all: list[MessageQueue], cid_all: list[str],
                     pop_share_queue_num: int) -> list[MessageQueue]:
    """
    Java ``allocate4Pop``: every client pops every queue (queue id -1 per broker) unless
    *pop_share_queue_num* is between 1 and ``len(cid_all) - 2``; then a client gets its own
    allocation plus that of the next *pop_share_queue_num* clients, or, with more clients than
    queues, one queue by its position.
    """
    if pop_share_queue_num <= 0 or pop_share_queue_num >= len(cid_all) - 1:
        return [MessageQueue(mq.topic, mq.broker_name, -1) for mq in mq_all]
    if len(cid_all) <= len(mq_all):
        result = list(strategy(client_id, mq_all, cid_all))
        if client_id in cid_all:
            index = cid_all.index(client_id)
            for _ in range(pop_share_queue_num):
                index = (index + 1) % len(cid_all)
                result.extend(strategy(cid_all[index], mq_all, cid_all))
        return result
    if client_id not in cid_all:
        return []
    return [mq_all[cid_all.index(client_id) % len(mq_all)]]

log = Logger()


class QueryAssignmentProcessor(AdminProcessor):
    """QUERY_ASSIGNMENT, SET_MESSAGE_REQUEST_MODE and GET_ALL_MESSAGE_REQUEST_MODE."""

    def __init__(self, controller) -> None:
        super().__init__(controller)
        self.handlers = {
            RequestCode.QUERY_ASSIGNMENT: self.query_assignment,
            RequestCode.SET_MESSAGE_REQUEST_MODE: self.set_message_request_mode,
            RequestCode.GET_ALL_MESSAGE_REQUEST_MODE: self.get_all_message_request_mode,
        }

    def query_assignment(self, ctx: IRemotingContext, request: RemotingCommand) -> Any:
        """
        The queues of the topic (every broker's, from the name servers) allocated among the
        group's live clients with the named strategy (AVG, AVG_BY_CIRCLE), each with the
        (topic, group)'s request mode (default PULL; a retry topic is always PULL). No route,
        an unknown strategy or an offline group: no assignments in the body (Java's null:
        the client keeps what it has). BROADCASTING: every queue.
        """
        try:
            body = QueryAssignmentRequestBody.from_json(fastjson.loads(request.body or b"{}") or {})
        except (ValueError, TypeError, AttributeError) as e:
            return request.make_response(ResponseCode.SYSTEM_ERROR, f"illegal QueryAssignmentRequestBody: {e}"[:512])
        if body.topic is None or body.consumer_group is None or body.message_model is None:
            # Java dereferences them (a NullPointerException, SYSTEM_ERROR).
            return request.make_response(ResponseCode.SYSTEM_ERROR,
                                         "topic, consumerGroup and messageModel are required")
        topic, group = body.topic, body.consumer_group
        mode = self.controller.message_request_mode_manager.get_message_request_mode(topic, group)
        if mode is None:
            # Java's defaults: defaultMessageRequestMode PULL (a retry topic is always PULL).
            mode = SetMessageRequestModeRequestBody(topic, group, "PULL", 0)
        d = self.controller.topic_route_info_manager.get_topic_subscribe_info(topic)
        d.addCallback(self._assign, request, body, mode)
        return d

    def _assign(self, mq_set: set[MessageQueue] | None, request: RemotingCommand, body: QueryAssignmentRequestBody,
                mode: SetMessageRequestModeRequestBody) -> RemotingCommand:
        queues = self._load_balance(mq_set, body, mode)
        # Java collects them in a HashSet: a queue allocated twice (POP's -1 per broker) is one.
        assignments = None if queues is None else [MessageQueueAssignment(mq, mode.mode)
                                                   for mq in dict.fromkeys(queues)]
        return request.make_response(body=fastjson.dumps(QueryAssignmentResponseBody(assignments).to_json()))

    def _load_balance(self, mq_set: set[MessageQueue] | None, body: QueryAssignmentRequestBody,
                      mode: SetMessageRequestModeRequestBody) -> list[MessageQueue] | None:
        topic, group = body.topic or "", body.consumer_group or ""
        if body.message_model not in ("BROADCASTING", "CLUSTERING"):
            return None
        if mq_set is None:
            if not topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                log.warn("QueryLoad: no assignment for group[{group}], the topic[{topic}] does not exist.",
                         group=group, topic=topic)
            return None
        if body.message_model == "BROADCASTING":
            return sorted(mq_set)
        info = self.controller.consumer_manager.get_consumer_group_info(group)
        if info is None:
            log.warn("QueryLoad: no assignment for group[{group}] topic[{topic}], get consumer id list failed",
                     group=group, topic=topic)
            return None
        strategy = _STRATEGIES.get(body.strategy_name or "")
        if strategy is None:
            log.warn("QueryLoad: unsupported strategy [{name}]", name=(body.strategy_name or "")[:100])
            return None
        mq_all, cid_all = sorted(mq_set), sorted(info.all_client_ids())
        client_id = body.client_id or ""
        if not mq_all or not cid_all or not client_id:
            return None  # Java's strategies throw here; the allocation is then null
        if mode.mode == "POP":
            return allocate_for_pop(strategy, client_id, mq_all, cid_all, mode.pop_share_queue_num)
        return strategy(client_id, mq_all, cid_all)

    def set_message_request_mode(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        """
        Java's checks in its order: a retry topic (NO_PERMISSION), an unknown topic
        (TOPIC_NOT_EXIST), a group that does not exist and may not be auto-created
        (SUBSCRIPTION_GROUP_NOT_EXIST); then the mode is kept and persisted.
        """
        try:
            body = SetMessageRequestModeRequestBody.from_json(fastjson.loads(request.body or b"{}") or {})
        except (ValueError, TypeError, AttributeError) as e:
            remark = f"illegal SetMessageRequestModeRequestBody: {e}"
            return request.make_response(ResponseCode.SYSTEM_ERROR, remark[:512])
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
