# -*- test-case-name: rocketmq_tx.broker.test.test_processors -*-
"""
``SendMessageProcessor``: SEND_MESSAGE (10), SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE
(320) and CONSUMER_SEND_MSG_BACK (36), with Java 4.9.8's checks, retry/DLQ routing, codes
and remarks.
"""

from __future__ import annotations

import random
from functools import lru_cache
from typing import Any

from rocketmq_tx.broker.controller import BrokerController
from rocketmq_tx.broker.remarks import suggest_todo
from rocketmq_tx.broker.timer import timer_put_result_response
from rocketmq_tx.broker.topicconfig import (
    RETRY_GROUP_TOPIC_PREFIX,
    dlq_topic,
    is_not_allowed_send_topic,
    retry_topic,
    validate_topic,
)
from rocketmq_tx.common.attribute import CLEANUP_POLICY
from rocketmq_tx.common.message import MessageConst, properties_to_string, string_to_properties, wait_store_msg_ok
from rocketmq_tx.common.route import PermName
from rocketmq_tx.common.sysflag import MessageSysFlag
from rocketmq_tx.net.dispatch import HandlerProcessor, IRemotingContext
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.remoting.command import split_address
from rocketmq_tx.remoting.headers import SendMessageRequestHeader, SendMessageRequestHeaderV2, SendMessageResponseHeader
from rocketmq_tx.remoting.headers.client import ConsumerSendMsgBackRequestHeader
from rocketmq_tx.store import MessageExtBatch, MessageExtBrokerInner, PutMessageResult
from rocketmq_tx.store.status import PutMessageStatus

__all__ = ["SendMessageProcessor", "put_result_response"]

#: ``MQVersion.Version.V3_4_9.ordinal()``: from here on the client's maxReconsumeTimes counts.
V3_4_9 = 49
DLQ_NUMS_PER_GROUP = 1
#: Both send headers carry the same attributes under different wire keys.
SendHeader = SendMessageRequestHeader | SendMessageRequestHeaderV2
_RW = PermName.PERM_READ | PermName.PERM_WRITE
# The codes of a send the store took (its answer names the message), as plain ints: an
# IntEnum member read costs its metaclass's attribute hook, and this is read on every send.
_SUCCESS = int(ResponseCode.SUCCESS)
_STORED = frozenset(int(c) for c in (ResponseCode.SUCCESS, ResponseCode.FLUSH_DISK_TIMEOUT,
                                     ResponseCode.FLUSH_SLAVE_TIMEOUT, ResponseCode.SLAVE_NOT_AVAILABLE))


def _passing_through(result: Any, call: Any, *args: Any) -> Any:
    """A callback that calls ``call(*args, result)`` and passes *result* on."""
    call(*args, result)
    return result


def _peer(ctx: IRemotingContext) -> tuple[str, int]:
    try:
        return _split_peer(ctx.peer)
    except (ValueError, AttributeError, TypeError):
        return ("127.0.0.1", 0)


@lru_cache(maxsize=4096)
def _split_peer(peer: str) -> tuple[str, int]:
    # A connection sends many messages from one address.
    return split_address(peer)


def _topic_config_text(tc: Any) -> str:
    """Java ``TopicConfig.toString()``, which the queueId remark embeds."""
    return (f"TopicConfig [topicName={tc.topic_name}, readQueueNums={tc.read_queue_nums}, "
            f"writeQueueNums={tc.write_queue_nums}, perm={PermName.perm_to_string(tc.perm)}, "
            f"topicFilterType={tc.topic_filter_type}, topicSysFlag={tc.topic_sys_flag}, "
            f"order={'true' if tc.order else 'false'}]")


def put_result_response(request: RemotingCommand, result: PutMessageResult | None, max_message_size: int,
                        store_config: Any = None) -> tuple[int, str | None]:
    """Java ``handlePutMessageResult``'s code and remark for a store status."""
    if result is None:
        return ResponseCode.SYSTEM_ERROR, "store putMessage return null"
    status = result.status
    if store_config is not None and (timer := timer_put_result_response(status, store_config)) is not None:
        return timer
    if status is PutMessageStatus.PUT_OK:
        return ResponseCode.SUCCESS, None
    if status is PutMessageStatus.FLUSH_DISK_TIMEOUT:
        return ResponseCode.FLUSH_DISK_TIMEOUT, None
    if status is PutMessageStatus.FLUSH_SLAVE_TIMEOUT:
        return ResponseCode.FLUSH_SLAVE_TIMEOUT, None
    if status is PutMessageStatus.SLAVE_NOT_AVAILABLE:
        return ResponseCode.SLAVE_NOT_AVAILABLE, None
    if status is PutMessageStatus.CREATE_MAPEDFILE_FAILED:
        return ResponseCode.SYSTEM_ERROR, "create mapped file failed, server is busy or broken."
    if status in (PutMessageStatus.MESSAGE_ILLEGAL, PutMessageStatus.PROPERTIES_SIZE_EXCEEDED):
        return ResponseCode.MESSAGE_ILLEGAL, (
            "the message is illegal, maybe msg body or properties length not matched. "
            f"msg body length limit {max_message_size}B, msg properties length limit 32KB.")
    if status is PutMessageStatus.SERVICE_NOT_AVAILABLE:
        return ResponseCode.SERVICE_NOT_AVAILABLE, (
            "service not available now. It may be caused by one of the following reasons: the broker's disk is "
            "full, messages are put to the slave, message store has been shut down, etc.")
    if status is PutMessageStatus.OS_PAGECACHE_BUSY:
        return ResponseCode.SYSTEM_ERROR, "[PC_SYNCHRONIZED]broker busy, start flow control for a while"
    if status is PutMessageStatus.UNKNOWN_ERROR:
        return ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR"
    return ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR DEFAULT"


class SendMessageProcessor(HandlerProcessor):
    def __init__(self, controller: BrokerController) -> None:
        self.controller = controller
        self.settings = controller.settings
        self.topics = controller.topic_config_manager
        self.random = random.Random()
        self.handlers = {
            RequestCode.SEND_MESSAGE: self.send_v1,
            RequestCode.SEND_MESSAGE_V2: self.send_v2,
            RequestCode.SEND_BATCH_MESSAGE: self.send_v2,
            RequestCode.CONSUMER_SEND_MSG_BACK: self.consumer_send_msg_back,
        }

    def send_v1(self, ctx: IRemotingContext, request: RemotingCommand) -> Any:
        """SEND_MESSAGE (10): the V1 header."""
        header = SendMessageRequestHeader.from_ext_fields(request.ext_fields)
        if header.batch:
            return self.send_batch_message(ctx, request, header)
        return self.send_message(ctx, request, header)

    def send_v2(self, ctx: IRemotingContext, request: RemotingCommand) -> Any:
        """SEND_MESSAGE_V2 (310) and SEND_BATCH_MESSAGE (320): the V2 header."""
        # The V2 header has the V1 attribute names; no need to convert (to_v1 costs ~6 us).
        header = SendMessageRequestHeaderV2.from_ext_fields(request.ext_fields)
        if request.code == RequestCode.SEND_BATCH_MESSAGE or header.batch:
            return self.send_batch_message(ctx, request, header)
        return self.send_message(ctx, request, header)

    # ------------------------------------------------------------------ checks

    def _response(self, request: RemotingCommand, code: int, remark: str | None = None) -> RemotingCommand:
        response = request.make_response(code, remark)
        # Java sets these on every send response, failures included.
        response.ext_fields[MessageConst.PROPERTY_MSG_REGION] = self.settings["regionId"]
        response.ext_fields[MessageConst.PROPERTY_TRACE_SWITCH] = "true" if self.settings["traceOn"] else "false"
        return response

    def _msg_check(self, ctx: IRemotingContext, request: RemotingCommand,
                   header: SendHeader) -> Any:
        """Java ``preSend`` + ``msgCheck``: an error response, or ``None`` to go on; a topic it
        creates: a Deferred of the whole send's response, sent once the name servers have it."""
        s = self.settings
        if s["startAcceptSendRequestTimeStamp"] > self.controller.now_ms():
            return self._response(request, ResponseCode.SYSTEM_ERROR, "broker unable to service, until "
                                  f"{s['startAcceptSendRequestTimeStamp']}")
        topic = header.topic
        if not PermName.is_writeable(s["brokerPermission"]) and self.topics.is_order_topic(topic):
            return self._response(request, ResponseCode.NO_PERMISSION,
                                  f"the broker[{s['brokerIP1']}] sending message is forbidden")
        bad = validate_topic(topic)
        if bad is not None:
            return self._response(request, ResponseCode.SYSTEM_ERROR, bad)
        if is_not_allowed_send_topic(topic):
            return self._response(request, ResponseCode.NO_PERMISSION,
                                  f"Sending message to topic[{topic}] is forbidden.")
        tc = self.topics.select_topic_config(topic)
        if tc is None:
            sys_flag = 0
            if header.unit_mode:
                sys_flag = 0x2 if topic.startswith(RETRY_GROUP_TOPIC_PREFIX) else 0x1
            tc = self.topics.create_topic_in_send_message_method(
                topic, header.default_topic, header.default_topic_queue_nums, sys_flag)
            if tc is None and topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                tc = self.topics.create_topic_in_send_message_back_method(topic, 1, _RW, sys_flag)
            if tc is None:
                return self._response(request, ResponseCode.TOPIC_NOT_EXIST,
                                      f"topic[{topic}] not exist, apply first please!" + suggest_todo())
            registered = self.controller.when_registered(topic)
            if registered is not None:
                # Created here: as Java (createTopicInSendMessageMethod registers before the send
                # is answered), answer once the name servers have the topic (or failed, or timed
                # out), so the producer's next route lookup finds it. The send then goes on as a
                # fresh request, which finds its topic.
                return registered.addCallback(lambda _: self.process_request(ctx, request))
        valid = max(tc.write_queue_nums, tc.read_queue_nums)
        if header.queue_id >= valid:
            return self._response(request, ResponseCode.SYSTEM_ERROR,
                                  f"request queueId[{header.queue_id}] is illegal, {_topic_config_text(tc)} "
                                  f"Producer: {ctx.peer}")
        if not PermName.is_writeable(tc.perm):
            return self._response(request, ResponseCode.NO_PERMISSION,
                                  f"the topic[{topic}] sending message is forbidden")
        return None

    def _queue_id(self, header: SendHeader) -> int:
        if header.queue_id >= 0:
            return header.queue_id
        tc = self.topics.select_topic_config(header.topic)
        assert tc is not None
        return self.random.randrange(99999999) % max(tc.write_queue_nums, 1)

    def _retry_and_dlq(self, request: RemotingCommand, header: SendHeader,
                       msg: MessageExtBrokerInner, props: dict[str, str]) -> RemotingCommand | None:
        """Java ``handleRetryAndDLQ``: a send to %RETRY%group past its max times goes to the DLQ."""
        topic = msg.topic
        if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            group = topic[len(RETRY_GROUP_TOPIC_PREFIX):]
            sgc = self.controller.subscription_group_manager.find_subscription_group_config(group)
            if sgc is None:
                return self._response(request, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                                      f"subscription group not exist, {group} " + suggest_todo())
            max_times = sgc.retry_max_times
            if request.version >= V3_4_9 and header.max_reconsume_times is not None:
                max_times = header.max_reconsume_times
            if (header.reconsume_times or 0) >= max_times:
                if self.controller.metrics is not None:  # Java labels it with the sender's group and topic
                    self.controller.metrics.dlq(header.producer_group, header.topic)
                msg.topic = dlq_topic(group)
                msg.queue_id = self.random.randrange(99999999) % DLQ_NUMS_PER_GROUP
                if self.topics.create_topic_in_send_message_back_method(msg.topic, DLQ_NUMS_PER_GROUP, _RW) is None:
                    return self._response(request, ResponseCode.SYSTEM_ERROR, f"topic[{msg.topic}] not exist")
                # Java's msg.setDelayTimeLevel(0) here is undone when the request's properties
                # are copied onto the message afterwards: a DELAY the sender set (an orderly
                # consumer's 3 + reconsumeTimes) stays, so the message reaches the DLQ through
                # the schedule topic, with DELAY, REAL_TOPIC and REAL_QID in its properties.
        tc = self.topics.select_topic_config(msg.topic)
        if tc is not None and tc.topic_filter_type == "MULTI_TAG":
            msg.sys_flag |= MessageSysFlag.MULTI_TAGS_FLAG
        return None

    # ------------------------------------------------------------------ send

    def send_message(self, ctx: IRemotingContext, request: RemotingCommand,
                     header: SendHeader) -> Any:
        error = self._msg_check(ctx, request, header)
        if error is not None:
            return error
        props = string_to_properties(header.properties or "")
        msg = MessageExtBrokerInner(
            header.topic, request.body or b"", b"", self._queue_id(header), header.flag, header.sys_flag,
            header.born_timestamp, _peer(ctx), None, header.reconsume_times or 0)
        error = self._retry_and_dlq(request, header, msg, props)
        if error is not None:
            return error
        tc = self.topics.select_topic_config(header.topic)
        if tc is not None and tc.attributes and tc.attributes.get(CLEANUP_POLICY.name) == "COMPACTION" and not (
                props.get(MessageConst.PROPERTY_KEYS) or "").strip():
            # The one send check 5.x ties to a topic attribute (a message type is not checked).
            return self._response(request, ResponseCode.MESSAGE_ILLEGAL, "Required message key is missing")
        props[MessageConst.PROPERTY_CLUSTER] = self.settings["brokerClusterName"]
        msg.wait_store_msg_ok = wait_store_msg_ok(props)
        if props.get(MessageConst.PROPERTY_TRANSACTION_PREPARED, "").lower() == "true":
            # A half message (Java: TRAN_MSG decides, the sysFlag bits do not).
            if self.settings["rejectTransactionMessage"]:
                return self._response(request, ResponseCode.NO_PERMISSION,
                                      f"the broker[{self.settings['brokerIP1']}] sending transaction message is "
                                      "forbidden")
            # Java re-serialises the map, in which WAIT was put back: the half record keeps it.
            # The answer names the real queue and the half message's offsets, as Java's.
            real_queue_id = msg.queue_id
            uniq_key = props.get(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
            self.controller.transactional_message_bridge.prepare_half_message(msg, props)
            result = self.controller.put_message(msg)
            stored = self.controller.transactional_message_service.half_message_stored
            if hasattr(result, "addCallback"):
                result.addCallback(_passing_through, stored, msg)
            else:
                stored(msg, result)
            return self._finish(request, result, real_queue_id, uniq_key, msg.topic, props)
        # Java 4.9.8 drops WAIT from the stored string whatever its value (9 bytes a message
        # for WAIT=true) but honours it.
        props.pop(MessageConst.PROPERTY_WAIT_STORE_MSG_OK, None)
        msg.properties = properties_to_string(props).encode()
        msg.property_map = props
        queue_id = msg.queue_id
        return self._finish(request, self.controller.put_message(msg), queue_id,
                            props.get(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX), msg.topic, props)

    def send_batch_message(self, ctx: IRemotingContext, request: RemotingCommand,
                           header: SendHeader) -> Any:
        error = self._msg_check(ctx, request, header)
        if error is not None:
            return error
        if header.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            return self._response(request, ResponseCode.MESSAGE_ILLEGAL,
                                  f"batch request does not support retry group {header.topic}")
        if len(header.topic) > 127:
            return self._response(request, ResponseCode.MESSAGE_ILLEGAL,
                                  f"message topic length too long {len(header.topic)}")
        tc = self.topics.select_topic_config(header.topic)
        sys_flag = header.sys_flag
        if tc is not None and tc.topic_filter_type == "MULTI_TAG":
            sys_flag |= MessageSysFlag.MULTI_TAGS_FLAG
        props = string_to_properties(header.properties or "")
        props[MessageConst.PROPERTY_CLUSTER] = self.settings["brokerClusterName"]
        queue_id = self._queue_id(header)
        # Java keeps the batch's WAIT in its properties and honours it, as for one message.
        batch = MessageExtBatch(header.topic, request.body or b"", properties_to_string(props).encode(), queue_id,
                                sys_flag, header.born_timestamp, _peer(ctx), None, header.reconsume_times or 0,
                                wait_store_msg_ok=wait_store_msg_ok(props))
        return self._finish(request, self.controller.put_messages(batch), queue_id,
                            props.get(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX), header.topic, props)

    def _finish(self, request: RemotingCommand, result: Any, queue_id: int, transaction_id: str | None,
                topic: str = "", props: dict[str, str] | None = None) -> Any:
        if hasattr(result, "addCallback"):
            return result.addCallback(self._send_response, request, queue_id, transaction_id, topic, props)
        return self._send_response(result, request, queue_id, transaction_id, topic, props)

    def _send_response(self, result: PutMessageResult, request: RemotingCommand, queue_id: int,
                       transaction_id: str | None, topic: str = "",
                       props: dict[str, str] | None = None) -> RemotingCommand:
        """*topic* and *props*: a stored send's, for rocketmq_messages_in (by its message type)."""
        code, remark = put_result_response(request, result, self.controller.store_config.max_message_size,
                                           self.controller.store_config)
        response = self._response(request, code, remark)
        append = result.append_result if result is not None else None
        metrics = self.controller.metrics
        if metrics is not None and props is not None and code == _SUCCESS and append is not None:
            metrics.count_in(topic, props, append.msg_num, append.wrote_bytes)
        if code in _STORED and append is not None:
            # transactionId: the message's UNIQ_KEY, as 5.x answers every send (4.9 never did). The
            # 5.x proxy takes a half message's transaction id from it and refuses END_TRANSACTION
            # without one ("transaction id cannot be empty").
            response.ext_fields.update(SendMessageResponseHeader(append.msg_id, queue_id, append.logics_offset,
                                                                 transaction_id).to_ext_fields())
        return response

    # ------------------------------------------------------------------ send back

    def consumer_send_msg_back(self, ctx: IRemotingContext, request: RemotingCommand) -> Any:
        header = ConsumerSendMsgBackRequestHeader.from_ext_fields(request.ext_fields)
        s = self.settings
        sgc = self.controller.subscription_group_manager.find_subscription_group_config(header.group)
        if sgc is None:
            return request.make_response(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                                         f"subscription group not exist, {header.group} " + suggest_todo())
        if not PermName.is_writeable(s["brokerPermission"]):
            return request.make_response(ResponseCode.NO_PERMISSION,
                                         f"the broker[{s['brokerIP1']}] sending message is forbidden")
        if sgc.retry_queue_nums <= 0:
            return request.make_response(ResponseCode.SUCCESS)
        new_topic = retry_topic(header.group)
        queue_id = self.random.randrange(99999999) % sgc.retry_queue_nums
        tc = self.topics.create_topic_in_send_message_back_method(new_topic, sgc.retry_queue_nums, _RW,
                                                                  0x2 if header.unit_mode else 0)
        if tc is None:
            return request.make_response(ResponseCode.SYSTEM_ERROR, f"topic[{new_topic}] not exist")
        if not PermName.is_writeable(tc.perm):
            return request.make_response(ResponseCode.NO_PERMISSION,
                                         f"the topic[{new_topic}] sending message is forbidden")
        ext = self.controller.store.look_message_by_offset(header.offset)
        if ext is None:
            return request.make_response(ResponseCode.SYSTEM_ERROR, f"look message by offset failed, {header.offset}")
        props = dict(ext.properties)
        if MessageConst.PROPERTY_RETRY_TOPIC not in props:
            props[MessageConst.PROPERTY_RETRY_TOPIC] = ext.topic
        props[MessageConst.PROPERTY_WAIT_STORE_MSG_OK] = "false"
        delay_level = header.delay_level
        max_times = sgc.retry_max_times
        if request.version >= V3_4_9 and header.max_reconsume_times is not None:
            max_times = header.max_reconsume_times
        if ext.reconsume_times >= max_times or delay_level < 0:
            if self.controller.metrics is not None:
                self.controller.metrics.dlq(header.group, header.origin_topic or "")
            new_topic = dlq_topic(header.group)
            queue_id = self.random.randrange(99999999) % DLQ_NUMS_PER_GROUP
            if self.topics.create_topic_in_send_message_back_method(new_topic, DLQ_NUMS_PER_GROUP, _RW) is None:
                return request.make_response(ResponseCode.SYSTEM_ERROR, f"topic[{new_topic}] not exist")
            # Java 4.9.8: msgExt.setDelayTimeLevel(0), so the DLQ record carries DELAY=0.
            props[MessageConst.PROPERTY_DELAY_TIME_LEVEL] = "0"
        else:
            if delay_level == 0:
                delay_level = 3 + ext.reconsume_times
            props[MessageConst.PROPERTY_DELAY_TIME_LEVEL] = str(delay_level)
        if not props.get(MessageConst.PROPERTY_ORIGIN_MESSAGE_ID):
            props[MessageConst.PROPERTY_ORIGIN_MESSAGE_ID] = ext.offset_msg_id
        msg = MessageExtBrokerInner(
            new_topic, ext.body, properties_to_string(props).encode(), queue_id, ext.flag, ext.sys_flag,
            ext.born_timestamp, ext.born_host, ext.store_host, ext.reconsume_times + 1, property_map=props,
            wait_store_msg_ok=False)
        result = self.controller.put_message(msg)
        if hasattr(result, "addCallback"):
            return result.addCallback(self._send_back_response, request)
        return self._send_back_response(result, request)

    @staticmethod
    def _send_back_response(result: PutMessageResult, request: RemotingCommand) -> RemotingCommand:
        if result is not None and result.status is PutMessageStatus.PUT_OK:
            return request.make_response(ResponseCode.SUCCESS)
        return request.make_response(ResponseCode.SYSTEM_ERROR,
                                     result.status.name if result is not None else "UNKNOWN_ERROR")
