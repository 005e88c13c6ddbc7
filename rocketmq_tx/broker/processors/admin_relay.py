# -*- test-case-name: rocketmq_tx.broker.test.test_admin -*-
"""
Admin requests relayed to a client (Java"s ``Broker2Client`` and ``callConsumer``): reset
offset, consumer status, consumer running info, consume a message directly.
"""

from __future__ import annotations

from typing import Any

from twisted.internet import defer
from twisted.logger import Logger

from rocketmq_tx.broker.broker2client import V3_1_8_SNAPSHOT, Broker2Client, exception_simple_desc, version_desc
from rocketmq_tx.broker.controller import BrokerController
from rocketmq_tx.broker.processors.admin import AdminProcessor
from rocketmq_tx.common.msgid import decode_offset_msg_id
from rocketmq_tx.net.dispatch import IRemotingContext
from rocketmq_tx.remoting import LanguageCode, RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.remoting.errors import RemotingTimeoutError
from rocketmq_tx.remoting.headers.admin import (
    ConsumeMessageDirectlyResultRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetConsumerStatusRequestHeader,
    ResetOffsetRequestHeader,
)

__all__ = ["ClientRelayProcessor"]

log = Logger()


def _as_response(request: RemotingCommand, result: RemotingCommand) -> RemotingCommand:
    # Broker2Client builds bare commands; answer in the request's opaque and serialization.
    return request.make_response(result.code, result.remark, result.ext_fields, result.body)


class ClientRelayProcessor(AdminProcessor):
    """
    INVOKE_BROKER_TO_RESET_OFFSET, INVOKE_BROKER_TO_GET_CONSUMER_STATUS, GET_CONSUMER_RUNNING_INFO,
    CONSUME_MESSAGE_DIRECTLY.
    """

    def __init__(self, controller: BrokerController) -> None:
        super().__init__(controller)
        self.broker2client = Broker2Client(controller)
        self.handlers = {
            RequestCode.INVOKE_BROKER_TO_RESET_OFFSET: self.reset_offset,
            RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS: self.get_consumer_status,
            RequestCode.GET_CONSUMER_RUNNING_INFO: self.get_consumer_running_info,
            RequestCode.CONSUME_MESSAGE_DIRECTLY: self.consume_message_directly,
        }

    def reset_offset(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        header = ResetOffsetRequestHeader.from_ext_fields(request.ext_fields)
        log.info("[reset-offset] reset offset started by {peer}. topic={topic}, group={group}, timestamp={ts}, "
                 "isForce={force}", peer=ctx.peer, topic=header.topic, group=header.group, ts=header.timestamp,
                 force=header.is_force)
        is_c = request.language == LanguageCode.CPP
        result = self.broker2client.reset_offset(header.topic, header.group, header.timestamp, header.is_force, is_c)
        return _as_response(request, result)

    def get_consumer_status(self, ctx: IRemotingContext, request: RemotingCommand) -> Any:
        header = GetConsumerStatusRequestHeader.from_ext_fields(request.ext_fields)
        d = self.broker2client.get_consume_status(header.topic, header.group, header.client_addr)
        return d.addCallback(lambda result: _as_response(request, result))

    def get_consumer_running_info(self, ctx: IRemotingContext, request: RemotingCommand) -> Any:
        header = GetConsumerRunningInfoRequestHeader.from_ext_fields(request.ext_fields)
        return self._call_consumer(RequestCode.GET_CONSUMER_RUNNING_INFO, request, header.consumer_group,
                                   header.client_id)

    def consume_message_directly(self, ctx: IRemotingContext, request: RemotingCommand) -> Any:
        header = ConsumeMessageDirectlyResultRequestHeader.from_ext_fields(request.ext_fields)
        request.ext_fields["brokerName"] = self.broker_name
        try:
            _, _, offset = decode_offset_msg_id(header.msg_id or "")
        except Exception as e:
            return request.make_response(ResponseCode.SYSTEM_ERROR, exception_simple_desc(e))
        record = self.controller.store.select_one_message_by_offset(offset)
        if record is None:
            # Java fails with a NullPointerException here; say what is missing instead.
            return request.make_response(ResponseCode.SYSTEM_ERROR,
                                         f"can not find message by the offset, {offset}")
        request.body = bytes(record)
        return self._call_consumer(RequestCode.CONSUME_MESSAGE_DIRECTLY, request, header.consumer_group,
                                   header.client_id or "")

    def _call_consumer(self, code: int, request: RemotingCommand, group: str, client_id: str) -> Any:
        """Java ``callConsumer``: relay *request* to the client and answer with its response."""
        client = self.controller.consumer_manager.find_channel(group, client_id)
        if client is None:
            return request.make_response(ResponseCode.SYSTEM_ERROR, f"The Consumer <{group}> <{client_id}> not online")
        if client.version < V3_1_8_SNAPSHOT:
            return request.make_response(
                ResponseCode.SYSTEM_ERROR,
                f"The Consumer <{client_id}> Version <{version_desc(client.version)}> too low to finish, "
                "please upgrade it to V3_1_8_SNAPSHOT")
        relay = RemotingCommand.request(code, request.ext_fields, request.body)

        def answered(response: RemotingCommand) -> RemotingCommand:
            # The dispatcher gives it the admin's opaque and the response flag.
            return response

        def failed(failure: Any) -> RemotingCommand:
            if failure.check(RemotingTimeoutError, defer.TimeoutError):
                return request.make_response(
                    ResponseCode.CONSUME_MSG_TIMEOUT,
                    f"consumer <{group}> <{client_id}> Timeout: {exception_simple_desc(failure)}")
            return request.make_response(
                ResponseCode.SYSTEM_ERROR,
                f"invoke consumer <{group}> <{client_id}> Exception: {exception_simple_desc(failure)}")

        d = self.broker2client.call_client(client.channel, relay)
        return d.addCallbacks(answered, failed)
