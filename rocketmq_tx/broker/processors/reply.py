# -*- test-case-name: rocketmq_tx.broker.test.test_admin -*-
"""
``ReplyMessageProcessor``: SEND_REPLY_MESSAGE (324) and SEND_REPLY_MESSAGE_V2 (325), the
reply half of request-reply messaging (Java 4.9.8's ``ReplyMessageProcessor``).

The reply is pushed at once to the requesting producer (PUSH_REPLY_MESSAGE_TO_CLIENT,
326), found by the ``REPLY_TO_CLIENT`` property among the producer connections, and, with
``storeReplyMessageEnable``, also stored in the reply topic. The answer's code says whether
the push worked; its header carries the stored message's id and offset when it was stored.
"""

from __future__ import annotations

import random
from typing import Any

from twisted.internet import defer
from twisted.logger import Logger

from rocketmq_tx.broker.broker2client import Broker2Client
from rocketmq_tx.broker.controller import BrokerController
from rocketmq_tx.broker.processors.send import SendMessageProcessor, _peer
from rocketmq_tx.common.message import MessageConst, properties_to_string, string_to_properties, wait_store_msg_ok
from rocketmq_tx.net.dispatch import IRemotingContext
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.remoting.headers import SendMessageRequestHeader, SendMessageRequestHeaderV2
from rocketmq_tx.store import MessageExtBrokerInner, PutMessageResult
from rocketmq_tx.store.status import PutMessageStatus

__all__ = ["ReplyMessageProcessor"]

log = Logger()

_PUT_OK = (PutMessageStatus.PUT_OK, PutMessageStatus.FLUSH_DISK_TIMEOUT, PutMessageStatus.FLUSH_SLAVE_TIMEOUT,
           PutMessageStatus.SLAVE_NOT_AVAILABLE)


class ReplyMessageProcessor(SendMessageProcessor):
    """Reuses the send processor's checks (Java's ``AbstractSendMessageProcessor.msgCheck``)."""

    def __init__(self, controller: BrokerController) -> None:
        super().__init__(controller)
        self.broker2client = Broker2Client(controller)
        self.random = random.Random()
        self.handlers = {
            RequestCode.SEND_REPLY_MESSAGE: self.reply_v1,
            RequestCode.SEND_REPLY_MESSAGE_V2: self.reply_v2,
        }

    def reply_v1(self, ctx: IRemotingContext, request: RemotingCommand) -> Any:
        """SEND_REPLY_MESSAGE (324): the V1 send header."""
        return self.process_reply(ctx, request, SendMessageRequestHeader.from_ext_fields(request.ext_fields))

    def reply_v2(self, ctx: IRemotingContext, request: RemotingCommand) -> Any:
        """SEND_REPLY_MESSAGE_V2 (325): the V2 send header."""
        return self.process_reply(ctx, request, SendMessageRequestHeaderV2.from_ext_fields(request.ext_fields).to_v1())

    @defer.inlineCallbacks
    def process_reply(self, ctx: IRemotingContext, request: RemotingCommand,
                      header: SendMessageRequestHeader) -> Any:
        error = self._msg_check(ctx, request, header)
        if error is not None:
            return error
        queue_id = self._queue_id(header)
        properties = header.properties or ""
        props = string_to_properties(properties)
        # Java stores the reply as received: no cluster property, sysFlag 0, the
        # properties string unchanged.
        msg = MessageExtBrokerInner(
            header.topic, request.body or b"", properties.encode("utf-8"), queue_id, header.flag, 0,
            header.born_timestamp, _peer(ctx), None, header.reconsume_times or 0, property_map=dict(props),
            wait_store_msg_ok=wait_store_msg_ok(props))
        response = self._response(request, ResponseCode.SYSTEM_ERROR)
        ok, remark = yield self._push_reply(ctx, header, props, request.body or b"")
        if ok:
            # Java's placeholders so a client decodes the header; a stored reply overwrites them.
            response.code, response.remark = ResponseCode.SUCCESS, None
            response.ext_fields.update(msgId="0", queueId=str(queue_id), queueOffset="0")
        else:
            response.remark = remark
        if self.settings["storeReplyMessageEnable"]:
            result = yield defer.maybeDeferred(self.controller.put_message, msg)
            self._stored(response, result, queue_id)
        return response

    def _stored(self, response: RemotingCommand, result: PutMessageResult | None, queue_id: int) -> None:
        if result is None or result.status not in _PUT_OK or result.append_result is None:
            log.warn("process reply message, store putMessage failed: {status}",
                     status=None if result is None else result.status.name)
            return
        append = result.append_result
        response.ext_fields.update(msgId=append.msg_id, queueId=str(queue_id), queueOffset=str(append.logics_offset))

    @defer.inlineCallbacks
    def _push_reply(self, ctx: IRemotingContext, header: SendMessageRequestHeader, props: dict[str, str],
                    body: bytes) -> Any:
        """Push to the requester; ``(ok, remark)``."""
        sender = props.get(MessageConst.PROPERTY_MESSAGE_REPLY_TO_CLIENT)
        if sender is None:
            log.warn("REPLY_TO_CLIENT is null, can not reply message")
            return False, f"reply message properties[{MessageConst.PROPERTY_MESSAGE_REPLY_TO_CLIENT}] is null"
        channel = self.controller.producer_manager.find_channel(sender)
        if channel is None:
            remark = f"push reply message fail, channel of <{sender}> not found."
            log.warn(remark)
            return False, remark
        now = self.controller.now_ms()
        pushed = dict(props)
        pushed[MessageConst.PROPERTY_PUSH_REPLY_TIME] = str(now)
        store_host = f"{self.settings['brokerIP1']}:{self.settings['listenPort']}"
        # Java's ReplyMessageRequestHeader: the send header plus where and when it was stored.
        fields = {
            "bornHost": _host_port(ctx),
            "bornTimestamp": str(header.born_timestamp),
            "defaultTopic": header.default_topic,
            "defaultTopicQueueNums": str(header.default_topic_queue_nums),
            "flag": str(header.flag),
            "producerGroup": header.producer_group,
            "properties": properties_to_string(pushed),
            "queueId": str(header.queue_id),
            "storeHost": store_host,
            "storeTimestamp": str(now),
            "sysFlag": str(header.sys_flag),
            "topic": header.topic,
            "unitMode": "true" if header.unit_mode else "false",
        }
        if header.reconsume_times is not None:
            fields["reconsumeTimes"] = str(header.reconsume_times)
        request = RemotingCommand.request(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, fields, body)
        try:
            answer = yield self.broker2client.call_client(channel, request)
        except Exception as e:
            log.warn("push reply message to <{sender}> fail. {error}", sender=sender, error=e)
            return False, f"push reply message to {sender}fail."
        if answer.code != ResponseCode.SUCCESS:
            log.warn("push reply message to <{sender}> return fail, response remark: {remark}", sender=sender,
                     remark=answer.remark)
            # Java's remark has no space before "fail".
            return False, f"push reply message to {sender}fail."
        return True, None


def _host_port(ctx: IRemotingContext) -> str:
    host, port = _peer(ctx)
    return f"{host}:{port}"
