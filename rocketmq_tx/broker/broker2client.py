# -*- test-case-name: rocketmq_tx.broker.test.test_admin -*-
"""
:class:`Broker2Client`: the requests the broker sends to its clients (Java's
``Broker2Client``): offset resets, consumer status, relayed admin calls and reply pushes.

A *channel* is the connection object the client managers hold (the broker's
:class:`~rocketmq_tx.net.protocol.RemotingProtocol`): ``send_request(request, timeout)``
returns a Deferred of the client's answer, ``send_oneway(request)`` sends and forgets.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from twisted.internet import defer
from twisted.logger import Logger

from rocketmq_tx.common import fastjson
from rocketmq_tx.common.message import MessageExt, MessageQueue
from rocketmq_tx.common.messagecodec import encode_message
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.remoting.adminbodies import ResetOffsetBody, message_queue_from_key, message_queue_key
from rocketmq_tx.remoting.headers.admin import (
    GetConsumerStatusRequestHeader,
    NotifyConsumerIdsChangedRequestHeader,
    ResetOffsetRequestHeader,
)
from rocketmq_tx.remoting.headers.transaction import CheckTransactionStateRequestHeader

if TYPE_CHECKING:
    from rocketmq_tx.broker.controller import BrokerController

__all__ = ["Broker2Client", "version_desc", "V3_0_7_SNAPSHOT", "V3_1_8_SNAPSHOT", "CALL_CLIENT_TIMEOUT"]

log = Logger()

#: ``MQVersion.Version`` ordinals the broker checks clients against.
V3_0_7_SNAPSHOT = 28
V3_1_8_SNAPSHOT = 62

#: Java's ``callClient`` waits 10 s; the consumer-status query 5 s.
CALL_CLIENT_TIMEOUT = 10.0
CONSUMER_STATUS_TIMEOUT = 5.0

# MQVersion.Version names up to V3_1_8_SNAPSHOT: the only ones an error message names
# (clients older than the feature they lack).
_OLD_VERSIONS = (
    ["V3_0_0_SNAPSHOT", "V3_0_0_ALPHA1"]
    + [f"V3_0_0_BETA{i}" for i in range(1, 6)]
    + [v for i in range(6, 10) for v in (f"V3_0_0_BETA{i}_SNAPSHOT", f"V3_0_0_BETA{i}")]
    + ["V3_0_0_FINAL"]
    + [v for i in range(1, 16) for v in (f"V3_0_{i}_SNAPSHOT", f"V3_0_{i}")]
    + [v for i in range(0, 8) for v in (f"V3_1_{i}_SNAPSHOT", f"V3_1_{i}")]
    + ["V3_1_8_SNAPSHOT"]
)
assert _OLD_VERSIONS.index("V3_0_7_SNAPSHOT") == V3_0_7_SNAPSHOT
assert _OLD_VERSIONS.index("V3_1_8_SNAPSHOT") == V3_1_8_SNAPSHOT


def version_desc(version: int) -> str:
    """Java ``MQVersion.getVersionDesc`` for the old versions error remarks name."""
    if 0 <= version < len(_OLD_VERSIONS):
        return _OLD_VERSIONS[version]
    return f"V{version}"


def exception_simple_desc(error: Any) -> str:
    """Roughly Java's ``RemotingHelper.exceptionSimpleDesc``: the error's class and text."""
    value = getattr(error, "value", error)
    return f"{type(value).__name__}: {value}"


class Broker2Client:
    """:param controller: the broker (its managers, topics and store)."""

    def __init__(self, controller: BrokerController) -> None:
        self.controller = controller

    # ------------------------------------------------------------------ plain calls

    @staticmethod
    def call_client(channel: Hashable, request: RemotingCommand, timeout: float = CALL_CLIENT_TIMEOUT) -> Any:
        """Java ``callClient``: a request to the client, a Deferred of its answer."""
        send = getattr(channel, "send_request", None)
        if send is None:
            return defer.fail(ConnectionError(f"channel {channel!r} cannot carry requests"))
        return defer.maybeDeferred(send, request, timeout)

    @staticmethod
    def send_oneway(channel: Hashable, request: RemotingCommand) -> bool:
        """A oneway request; ``False`` (logged) when it could not be written."""
        try:
            channel.send_oneway(request)  # type: ignore[attr-defined]
        except Exception as e:
            log.info("oneway request {code} to {peer} failed: {error}", code=request.code,
                     peer=getattr(channel, "peer", channel), error=e)
            return False
        return True

    def notify_consumer_ids_changed(self, channel: Hashable, group: str) -> None:
        """NOTIFY_CONSUMER_IDS_CHANGED (40), oneway: the group's members changed, rebalance now."""
        request = RemotingCommand.request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED,
                                          NotifyConsumerIdsChangedRequestHeader(group).to_ext_fields())
        self.send_oneway(channel, request)

    def check_producer_transaction_state(self, group: str, channel: Hashable,
                                         header: CheckTransactionStateRequestHeader, msg: MessageExt) -> bool:
        """CHECK_TRANSACTION_STATE (39), oneway: ask a producer of *group* about a half message
        (the body is the message as one record, Java ``MessageDecoder.encode(msg, false)``)."""
        request = RemotingCommand.request(RequestCode.CHECK_TRANSACTION_STATE, header.to_ext_fields(),
                                          encode_message(msg))
        if self.send_oneway(channel, request):
            return True
        log.error("Check transaction failed because invoke producer exception. group={group}, msgId={id}",
                  group=group, id=header.msg_id)
        return False

    # ------------------------------------------------------------------ offset reset

    def reset_offset(self, topic: str, group: str, timestamp: int, is_force: bool,
                     is_c: bool = False) -> RemotingCommand:
        """
        INVOKE_BROKER_TO_RESET_OFFSET: compute each queue's new offset, tell every online
        client of *group* (RESET_CONSUMER_CLIENT_OFFSET, oneway) and answer with the table.
        *timestamp* -1 means each queue's max offset; without *is_force* an offset only moves back.
        """
        c = self.controller
        response = RemotingCommand(code=ResponseCode.SUCCESS)
        tc = c.topic_config_manager.select_topic_config(topic)
        if tc is None:
            return _error(f"[reset-offset] reset offset failed, no topic in this broker. topic={topic}")
        broker_name = c.settings["brokerName"]
        table: dict[MessageQueue, int] = {}
        for qid in range(tc.write_queue_nums):
            consumer_offset = c.consumer_offset_manager.query_offset(group, topic, qid)
            if consumer_offset == -1:
                # Java's remark, capital H included.
                return _error(f"THe consumer group <{group}> not exist")
            if timestamp == -1:
                new_offset = c.store.get_max_offset_in_queue(topic, qid)
            else:
                new_offset = c.store.get_offset_in_queue_by_time(topic, qid, timestamp)
            if new_offset < 0:
                new_offset = 0
            mq = MessageQueue(topic, broker_name, qid)
            table[mq] = new_offset if (is_force or new_offset < consumer_offset) else consumer_offset
        header = ResetOffsetRequestHeader(topic, group, timestamp, False)
        if is_c:
            # A C++ client reads a list of queues with their offsets (ResetOffsetBodyForC).
            body = fastjson.dumps({"offsetTable": [
                {"brokerName": mq.broker_name, "offset": off, "queueId": mq.queue_id, "topic": mq.topic}
                for mq, off in table.items()]})
        else:
            body = fastjson.dumps(ResetOffsetBody(table).to_json())
        info = c.consumer_manager.get_consumer_group_info(group)
        if info is None or not info.channel_info_table:
            return RemotingCommand(
                code=ResponseCode.CONSUMER_NOT_ONLINE,
                remark=(f"Consumer not online, so can not reset offset, Group: {group} Topic: {topic} "
                        f"Timestamp: {timestamp}"))
        for channel, client in list(info.channel_info_table.items()):
            if client.version < V3_0_7_SNAPSHOT:
                return _error(f"the client does not support this feature. version={version_desc(client.version)}")
            request = RemotingCommand.request(RequestCode.RESET_CONSUMER_CLIENT_OFFSET, header.to_ext_fields(),
                                              body)
            if self.send_oneway(channel, request):
                log.info("[reset-offset] reset offset success. topic={topic}, group={group}, clientId={client}",
                         topic=topic, group=group, client=client.client_id)
        response.body = fastjson.dumps(ResetOffsetBody(table).to_json())
        return response

    # ------------------------------------------------------------------ consumer status

    @defer.inlineCallbacks
    def get_consume_status(self, topic: str, group: str, origin_client_id: str | None) -> Any:
        """
        INVOKE_BROKER_TO_GET_CONSUMER_STATUS: ask the group's clients (all, or the one named)
        for their queue offsets (GET_CONSUMER_STATUS_FROM_CLIENT, one after another as Java
        does) and answer ``GetConsumerStatusBody`` keyed by client id. A client that fails
        or times out is left out.
        """
        info = self.controller.consumer_manager.get_consumer_group_info(group)
        if info is None or not info.channel_info_table:
            return _error(f"No Any Consumer online in the consumer group: [{group}]")
        header = GetConsumerStatusRequestHeader(topic, group)
        table: dict[str, dict] = {}
        for channel, client in list(info.channel_info_table.items()):
            if client.version < V3_0_7_SNAPSHOT:
                return _error(f"the client does not support this feature. version={version_desc(client.version)}")
            if origin_client_id and origin_client_id != client.client_id:
                continue
            request = RemotingCommand.request(RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT, header.to_ext_fields())
            try:
                answer = yield self.call_client(channel, request, CONSUMER_STATUS_TIMEOUT)
                if answer.code == ResponseCode.SUCCESS and answer.body:
                    data = fastjson.loads(answer.body)
                    queues = dict(data.get("messageQueueTable") or {})
                    table[client.client_id] = {message_queue_key(message_queue_from_key(k)): int(v)
                                               for k, v in queues.items()}
            except Exception as e:
                log.info("[get-consumer-status] get consumer status exception. topic={topic}, group={group}, "
                         "error={error}", topic=topic, group=group, error=e)
            if origin_client_id:
                break
        return RemotingCommand(code=ResponseCode.SUCCESS,
                               body=fastjson.dumps({"consumerTable": table, "messageQueueTable": {}}))


def _error(remark: str) -> RemotingCommand:
    return RemotingCommand(code=ResponseCode.SYSTEM_ERROR, remark=remark)
