# -*- test-case-name: rocketmq_tx.broker.test.test_processors -*-
"""``QueryMessageProcessor``: QUERY_MESSAGE (12) by key through the index, VIEW_MESSAGE_BY_ID (33)."""

from __future__ import annotations

from rocketmq_tx.broker.controller import BrokerController
from rocketmq_tx.net.dispatch import HandlerProcessor, IRemotingContext
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.remoting.headers.client import (
    QueryMessageRequestHeader,
    QueryMessageResponseHeader,
    ViewMessageRequestHeader,
)

__all__ = ["QueryMessageProcessor", "UNIQUE_MSG_QUERY_FLAG"]

UNIQUE_MSG_QUERY_FLAG = "_UNIQUE_KEY_QUERY"


class QueryMessageProcessor(HandlerProcessor):
    def __init__(self, controller: BrokerController) -> None:
        self.controller = controller
        self.handlers = {
            RequestCode.QUERY_MESSAGE: self.query_message,
            RequestCode.VIEW_MESSAGE_BY_ID: self.view_message_by_id,
        }

    def query_message(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        header = QueryMessageRequestHeader.from_ext_fields(request.ext_fields)
        store = self.controller.store
        max_num = header.max_num
        if request.ext_fields.get(UNIQUE_MSG_QUERY_FLAG) == "true":
            max_num = store.config.default_query_max_num
        result = store.query_message(header.topic, header.key, max_num, header.begin_timestamp,
                                     header.end_timestamp)
        ext = QueryMessageResponseHeader(result.index_last_update_timestamp,
                                         result.index_last_update_phyoffset).to_ext_fields()
        if result.buffer_total_size > 0:
            return request.make_response(ResponseCode.SUCCESS, None, ext, b"".join(result.message_buffers))
        return request.make_response(ResponseCode.QUERY_NOT_FOUND, "can not find message, maybe time range not correct",
                                     ext)

    def view_message_by_id(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        header = ViewMessageRequestHeader.from_ext_fields(request.ext_fields)
        record = self.controller.store.select_one_message_by_offset(header.offset)
        if record is None:
            return request.make_response(ResponseCode.SYSTEM_ERROR,
                                         f"can not find message by the offset, {header.offset}")
        return request.make_response(ResponseCode.SUCCESS, body=bytes(record))
