"""
The name server's request processors and its one processor table.

:func:`processor_table` is the single place that says which codes the name server
answers (Java's ``NamesrvController.registerProcessor``); every other code gets
REQUEST_CODE_NOT_SUPPORTED, as from a 5.x name server.
"""

from __future__ import annotations

from rocketmq_tx.namesrv.controller import NamesrvController
from rocketmq_tx.namesrv.processors.client import ClientRequestProcessor
from rocketmq_tx.namesrv.processors.default import DefaultRequestProcessor
from rocketmq_tx.net.dispatch import ProcessorTable
from rocketmq_tx.remoting import RequestCode

__all__ = ["processor_table", "ClientRequestProcessor", "DefaultRequestProcessor"]


def processor_table(controller: NamesrvController) -> ProcessorTable:
    """Code -> processor for a name server."""
    default = DefaultRequestProcessor(controller)
    client = ClientRequestProcessor(controller)
    table = ProcessorTable()
    for code in (
        RequestCode.PUT_KV_CONFIG,
        RequestCode.GET_KV_CONFIG,
        RequestCode.DELETE_KV_CONFIG,
        RequestCode.QUERY_DATA_VERSION,
        RequestCode.REGISTER_BROKER,
        RequestCode.UNREGISTER_BROKER,
        RequestCode.GET_BROKER_CLUSTER_INFO,
        RequestCode.WIPE_WRITE_PERM_OF_BROKER,
        RequestCode.ADD_WRITE_PERM_OF_BROKER,
        RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
        RequestCode.DELETE_TOPIC_IN_NAMESRV,
        RequestCode.GET_KVLIST_BY_NAMESPACE,
        RequestCode.GET_TOPICS_BY_CLUSTER,
        RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS,
        RequestCode.GET_UNIT_TOPIC_LIST,
        RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST,
        RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST,
        RequestCode.UPDATE_NAMESRV_CONFIG,
        RequestCode.GET_NAMESRV_CONFIG,
    ):
        table.register(code, default)
    table.register(RequestCode.GET_ROUTEINFO_BY_TOPIC, client)
    return table
