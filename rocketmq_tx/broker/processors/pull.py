# -*- test-case-name: rocketmq_tx.broker.test.test_pull -*-
"""
``PullMessageProcessor``: PULL_MESSAGE (11) with Java 4.9.8's checks and status mapping,
long polling through :class:`~rocketmq_tx.broker.longpolling.PullRequestHoldService`, and
the commit-offset flag.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rocketmq_tx.broker.clientmanager import CompiledFilter, FilterCompileError, is_tag_type
from rocketmq_tx.broker.controller import BrokerController
from rocketmq_tx.broker.longpolling import OVERLOAD_REMARK, PullRequest
from rocketmq_tx.broker.remarks import suggest_todo
from rocketmq_tx.common.messagecodec import java_string_hash
from rocketmq_tx.common.route import PermName
from rocketmq_tx.net.dispatch import HandlerProcessor, IRemotingContext
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.remoting.api import SubscriptionData
from rocketmq_tx.remoting.headers import PullMessageRequestHeader, PullMessageResponseHeader, PullSysFlag
from rocketmq_tx.store.status import GetMessageStatus

__all__ = ["PullMessageProcessor", "SubscriptionFilter", "SqlFilter"]

_SUB_ALL = "*"


class SubscriptionFilter:
    """Java ``ExpressionMessageFilter`` for TAG subscriptions: the ConsumeQueue tag hash."""

    __slots__ = ("codes",)

    def __init__(self, subscription: SubscriptionData | None) -> None:
        if (subscription is None or subscription.class_filter_mode or subscription.sub_string == _SUB_ALL
                or subscription.expression_type != "TAG"):
            self.codes = None
        else:
            self.codes = frozenset(subscription.code_set)

    def is_matched_by_consume_queue(self, tags_code: int) -> bool:
        return self.codes is None or tags_code in self.codes


class SqlFilter:
    """
    Java ``ExpressionMessageFilter`` for SQL92 subscriptions. The ConsumeQueue check is the
    tag hash when the expression requires TAGS at its top level (a cheap first cut, which
    Java does with its bloom filter bit map instead); every message that passes it is then
    evaluated on the properties of its CommitLog record. A record whose properties cannot
    be read does not match (Java's evaluation fails and counts as false).
    """

    __slots__ = ("codes", "compiled")

    def __init__(self, compiled: CompiledFilter) -> None:
        tags = compiled.tags
        self.codes = None if tags is None else frozenset(java_string_hash(t) for t in tags)
        self.compiled = compiled

    def is_matched_by_consume_queue(self, tags_code: int) -> bool:
        return self.codes is None or tags_code in self.codes

    def is_matched_by_commit_log(self, properties: Mapping[str, str] | None) -> bool:
        return properties is not None and self.compiled.matches(properties)


# GetMessageStatus -> response code when the pull did not find messages (Java's switch).
_NOT_FOUND_CODES = {
    GetMessageStatus.MESSAGE_WAS_REMOVING: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetMessageStatus.NO_MATCHED_MESSAGE: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetMessageStatus.OFFSET_FOUND_NULL: ResponseCode.PULL_NOT_FOUND,
    GetMessageStatus.OFFSET_OVERFLOW_BADLY: ResponseCode.PULL_OFFSET_MOVED,
    GetMessageStatus.OFFSET_OVERFLOW_ONE: ResponseCode.PULL_NOT_FOUND,
    GetMessageStatus.OFFSET_TOO_SMALL: ResponseCode.PULL_OFFSET_MOVED,
}


class PullMessageProcessor(HandlerProcessor):
    def __init__(self, controller: BrokerController) -> None:
        self.controller = controller
        self.settings = controller.settings
        controller.execute_held_pull = self._wake
        # Long polling's SQL92 check reads the arriving message's properties from the store.
        controller.pull_request_hold_service.properties_at = controller.store.reader.properties_in_queue
        # 5.x's DefaultLitePullConsumer pulls with LITE_PULL_MESSAGE (361), same header and
        # processor as PULL_MESSAGE in Java 5.x's broker.
        self.handlers = {
            RequestCode.PULL_MESSAGE: self.pull_message,
            RequestCode.LITE_PULL_MESSAGE: self.pull_message,
        }

    def pull_message(self, ctx: IRemotingContext, request: RemotingCommand) -> Any:
        """A pull from the network: it may be held (long polling) and may commit an offset."""
        return self.pull(ctx, request, allow_suspend=True)

    def _wake(self, pr: PullRequest) -> Any:
        return self.pull(pr.channel, pr.request, allow_suspend=False)

    def pull(self, ctx: Any, request: RemotingCommand, allow_suspend: bool) -> Any:
        c = self.controller
        s = self.settings
        header = PullMessageRequestHeader.from_ext_fields(request.ext_fields)
        if not PermName.is_readable(s["brokerPermission"]):
            return request.make_response(ResponseCode.NO_PERMISSION,
                                         f"the broker[{s['brokerIP1']}] pulling message is forbidden")
        sgc = c.subscription_group_manager.find_subscription_group_config(header.consumer_group)
        if sgc is None:
            return request.make_response(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                                         f"subscription group [{header.consumer_group}] does not exist, "
                                         + suggest_todo())
        if not sgc.consume_enable:
            return request.make_response(ResponseCode.NO_PERMISSION,
                                         f"subscription group no permission, {header.consumer_group}")
        flags = header.sys_flag
        has_suspend = bool(flags & PullSysFlag.SUSPEND)
        has_commit = bool(flags & PullSysFlag.COMMIT_OFFSET)
        has_subscription = bool(flags & PullSysFlag.SUBSCRIPTION)
        tc = c.topic_config_manager.select_topic_config(header.topic)
        if tc is None:
            return request.make_response(ResponseCode.TOPIC_NOT_EXIST,
                                         f"topic[{header.topic}] not exist, apply first please! " + suggest_todo())
        if not PermName.is_readable(tc.perm):
            return request.make_response(ResponseCode.NO_PERMISSION,
                                         f"the topic[{header.topic}] pulling message is forbidden")
        if header.queue_id < 0 or header.queue_id >= tc.read_queue_nums:
            return request.make_response(
                ResponseCode.SYSTEM_ERROR,
                f"queueId[{header.queue_id}] is illegal, topic:[{header.topic}] topicConfig.readQueueNums:"
                f"[{tc.read_queue_nums}] consumer:[/{getattr(ctx, 'peer', '?')}]")
        subscription: SubscriptionData | None
        compiled: CompiledFilter | None = None
        filters = c.consumer_manager.filters
        if has_subscription:
            try:
                subscription = SubscriptionData.build(header.topic, header.subscription,
                                                      expression_type=header.expression_type or "TAG",
                                                      sub_version=header.sub_version)
                if not is_tag_type(subscription.expression_type) and s["enablePropertyFilter"]:
                    # A malformed expression is refused here; Java's production build (its
                    # assertion off) goes on without filter data and delivers every message.
                    compiled = filters.get(header.consumer_group, header.topic, subscription.expression_type,
                                           subscription.sub_string)
            except Exception:
                return request.make_response(ResponseCode.SUBSCRIPTION_PARSE_FAILED,
                                             "parse the consumer's subscription failed")
        else:
            group_info = c.consumer_manager.get_consumer_group_info(header.consumer_group)
            if group_info is None:
                return request.make_response(ResponseCode.SUBSCRIPTION_NOT_EXIST,
                                             "the consumer's group info not exist" + suggest_todo())
            if not sgc.consume_broadcast_enable and group_info.message_model == "BROADCASTING":
                return request.make_response(
                    ResponseCode.NO_PERMISSION,
                    f"the consumer group[{header.consumer_group}] can not consume by broadcast way")
            subscription = group_info.subscription_table.get(header.topic)
            if subscription is None:
                return request.make_response(ResponseCode.SUBSCRIPTION_NOT_EXIST,
                                             "the consumer's subscription not exist" + suggest_todo())
            if subscription.sub_version < header.sub_version:
                return request.make_response(ResponseCode.SUBSCRIPTION_NOT_LATEST,
                                             "the consumer's subscription not latest")
            if not is_tag_type(subscription.expression_type):
                # The heartbeat's subscription, compiled once (Java's filter data; its version
                # is the subscription's, so "not latest" was answered just above).
                try:
                    compiled = filters.get(header.consumer_group, header.topic, subscription.expression_type,
                                           subscription.sub_string)
                except FilterCompileError:
                    return request.make_response(
                        ResponseCode.FILTER_DATA_NOT_EXIST,
                        "The broker's consumer filter data is not exist!Your expression may be wrong!")
        message_filter: SubscriptionFilter | SqlFilter
        if is_tag_type(subscription.expression_type):
            message_filter = SubscriptionFilter(subscription)
        elif not s["enablePropertyFilter"]:
            return request.make_response(
                ResponseCode.SYSTEM_ERROR,
                f"The broker does not support consumer to filter message by {subscription.expression_type}")
        else:
            assert compiled is not None
            message_filter = SqlFilter(compiled)
        result = c.store.get_message(header.consumer_group, header.topic, header.queue_id, header.queue_offset,
                                     header.max_msg_nums, message_filter)
        status = result.status
        if status is GetMessageStatus.FOUND:
            code = ResponseCode.SUCCESS
        elif status in (GetMessageStatus.NO_MATCHED_LOGIC_QUEUE, GetMessageStatus.NO_MESSAGE_IN_QUEUE):
            code = ResponseCode.PULL_OFFSET_MOVED if header.queue_offset != 0 else ResponseCode.PULL_NOT_FOUND
        else:
            code = _NOT_FOUND_CODES.get(status, ResponseCode.SYSTEM_ERROR)
        # Java: the master (0) unless slaveReadEnable. (Java 4.9's "SLAVE without slaveReadEnable
        # answers PULL_RETRY_IMMEDIATELY" is overwritten by its status switch: a slave serves pulls.)
        suggest = 0
        if s["slaveReadEnable"]:
            suggest = sgc.which_broker_when_consume_slowly if result.suggest_pulling_from_slave else sgc.broker_id
        slave = c.is_slave
        if code == ResponseCode.PULL_OFFSET_MOVED and slave and not c.store_config.offset_check_in_slave:
            # a slave behind its master must not move a consumer's offset (Java: retry, no event)
            code = ResponseCode.PULL_RETRY_IMMEDIATELY
            suggest = sgc.broker_id
        response_header = PullMessageResponseHeader(suggest, result.next_begin_offset, result.min_offset,
                                                    result.max_offset)
        if allow_suspend and has_commit and not slave:  # a slave's offsets come from its master
            c.consumer_offset_manager.commit_offset(header.consumer_group, header.topic, header.queue_id,
                                                    header.commit_offset)
        metrics = c.metrics
        if metrics is not None:
            metrics.pulled(header.consumer_group, header.topic, header.queue_id, result.next_begin_offset)
        if code == ResponseCode.SUCCESS:
            c.stats.get(header.consumer_group, header.topic, result.message_count, result.buffer_total_size)
            if metrics is not None:
                metrics.message_out(header.topic, header.consumer_group, result.message_count,
                                    result.buffer_total_size)
            return request.make_response(code, status.name, response_header.to_ext_fields(), result.body())
        if code == ResponseCode.PULL_NOT_FOUND and allow_suspend and has_suspend:
            if not c.pull_request_hold_service.can_hold(ctx):
                return request.make_response(ResponseCode.SYSTEM_BUSY, OVERLOAD_REMARK)
            timeout = header.suspend_timeout_millis if s["longPollingEnable"] else s["shortPollingTimeMills"]
            pr = PullRequest(request, ctx, header.topic, header.queue_id, header.queue_offset, timeout,
                             message_filter)
            return c.pull_request_hold_service.suspend_pull_request(pr)
        if code == ResponseCode.PULL_OFFSET_MOVED:
            c.log_offset_moved(header.consumer_group, header.topic, header.queue_id, header.queue_offset,
                               result.next_begin_offset)
        return request.make_response(code, status.name, response_header.to_ext_fields())
