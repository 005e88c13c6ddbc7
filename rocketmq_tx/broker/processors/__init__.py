"""
The broker's request processors and its one processor table.

:func:`processor_table` is the single place that says which processor answers which code
(Java's ``BrokerController.registerProcessor``); the admin processor is the default and
answers REQUEST_CODE_NOT_SUPPORTED for the codes it has no handler for (transactions among
them, see docs/compatibility.md). With ``aclEnable`` every request is checked first
(:class:`~rocketmq_tx.broker.processors.acl.AclServerHook`, docs/security.md).
"""

from __future__ import annotations

from rocketmq_tx.broker.controller import BrokerController
from rocketmq_tx.broker.processors.acl import ACL_CONFIG_CODES, AclConfigProcessor, AclServerHook
from rocketmq_tx.broker.processors.admin import AdminBrokerProcessor
from rocketmq_tx.broker.processors.client import ClientManageProcessor
from rocketmq_tx.broker.processors.consumer import ConsumerManageProcessor
from rocketmq_tx.broker.processors.pull import PullMessageProcessor
from rocketmq_tx.broker.processors.query import QueryMessageProcessor
from rocketmq_tx.broker.processors.reply import ReplyMessageProcessor
from rocketmq_tx.broker.processors.send import SendMessageProcessor
from rocketmq_tx.net.dispatch import ProcessorTable
from rocketmq_tx.remoting import RequestCode

__all__ = ["processor_table"]


def processor_table(controller: BrokerController, fast: bool = False) -> ProcessorTable:
    """
    Code -> processor for a broker port. *fast* is the VIP port (listenPort - 2), which
    serves everything but PULL_MESSAGE, as in Java.
    """
    send = SendMessageProcessor(controller)
    query = QueryMessageProcessor(controller)
    client = ClientManageProcessor(controller)
    consumer = ConsumerManageProcessor(controller)
    table = ProcessorTable()
    table.default = AdminBrokerProcessor(controller)
    if controller.acl is not None:
        table.before_request = AclServerHook(controller.acl)
    acl_config = AclConfigProcessor(controller)
    for code in ACL_CONFIG_CODES:
        table.register(code, acl_config)
    for code in (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE,
                 RequestCode.CONSUMER_SEND_MSG_BACK):
        table.register(code, send)
    if not fast:
        pull = PullMessageProcessor(controller)
        # 5.x's DefaultLitePullConsumer pulls with LITE_PULL_MESSAGE (361), same header and
        # processor as PULL_MESSAGE in Java 5.x's broker.
        table.register(RequestCode.PULL_MESSAGE, pull)
        table.register(RequestCode.LITE_PULL_MESSAGE, pull)
    reply = ReplyMessageProcessor(controller)
    for code in (RequestCode.SEND_REPLY_MESSAGE, RequestCode.SEND_REPLY_MESSAGE_V2):
        table.register(code, reply)
    for code in (RequestCode.QUERY_MESSAGE, RequestCode.VIEW_MESSAGE_BY_ID):
        table.register(code, query)
    for code in (RequestCode.HEART_BEAT, RequestCode.UNREGISTER_CLIENT, RequestCode.CHECK_CLIENT_CONFIG):
        table.register(code, client)
    for code in (RequestCode.GET_CONSUMER_LIST_BY_GROUP, RequestCode.UPDATE_CONSUMER_OFFSET,
                 RequestCode.QUERY_CONSUMER_OFFSET):
        table.register(code, consumer)
    return table
