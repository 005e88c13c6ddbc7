# -*- test-case-name: rocketmq_tx.client.test.test_admin,rocketmq_tx.blocking.test.test_admin -*-
"""
The admin side of the protocol without I/O (Java ``DefaultMQAdminExtImpl`` over
``MQClientAPIImpl``): a builder and a parser per admin request code, and every admin
operation written once as a *plan*.

A plan (:mod:`rocketmq_tx.remoting.plans`: ``yield Call(addr, request)``, ``yield [Call,
...]``) yields the requests it needs and is sent their responses, so the Twisted
:class:`~rocketmq_tx.client.admin.MQAdmin` and the blocking
:class:`~rocketmq_tx.blocking.admin.BlockingAdmin` take the same steps (which route to
read, which brokers to ask, how the answers merge, when to fall back) and differ only in
how they move commands.

Bodies and headers come from
:mod:`rocketmq_tx.remoting.adminbodies`, :mod:`rocketmq_tx.remoting.bodies` and
:mod:`rocketmq_tx.remoting.headers`, as the broker and name server use them.

Why one module of ~640 lines: one builder/parser pair and one short plan per admin command,
each independent of the others (a table read by command, as ``api`` is).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import javaproperties

from rocketmq_tx.common import fastjson
from rocketmq_tx.common.errors import MessageFormatError
from rocketmq_tx.common.message import MessageExt, MessageQueue
from rocketmq_tx.common.msgid import decode_offset_msg_id, unique_key_time
from rocketmq_tx.common.route import TopicConfig, TopicRouteData
from rocketmq_tx.common.subscription import SubscriptionGroupConfig
from rocketmq_tx.remoting import api
from rocketmq_tx.remoting.adminbodies import (
    ConsumerConnection,
    ConsumerRunningInfo,
    ConsumeStats,
    KVTable,
    OffsetWrapper,
    ProducerConnection,
    ResetOffsetBody,
    SetMessageRequestModeRequestBody,
    TopicStatsTable,
)
from rocketmq_tx.remoting.api import (
    AUTO_CREATE_TOPIC_KEY,
    RETRY_GROUP_TOPIC_PREFIX,
    MQClientError,
    check_response,
)
from rocketmq_tx.remoting.bodies import ClusterInfo, TopicList
from rocketmq_tx.remoting.codes import RequestCode, ResponseCode
from rocketmq_tx.remoting.command import RemotingCommand
from rocketmq_tx.remoting.errors import MQBrokerError, RemotingCommandError, RemotingError
from rocketmq_tx.remoting.headers.acl import (
    CreateAccessConfigRequestHeader,
    DeleteAccessConfigRequestHeader,
    GetBrokerAclConfigResponseHeader,
    UpdateGlobalWhiteAddrsConfigRequestHeader,
)
from rocketmq_tx.remoting.headers.admin import (
    CreateTopicRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    DeleteTopicRequestHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetConsumeStatsRequestHeader,
    GetProducerConnectionListRequestHeader,
    GetTopicStatsInfoRequestHeader,
    ResetOffsetRequestHeader,
)
from rocketmq_tx.remoting.headers.client import QueryMessageResponseHeader
from rocketmq_tx.remoting.headers.namesrv import (
    AddWritePermOfBrokerRequestHeader,
    AddWritePermOfBrokerResponseHeader,
    DeleteKVConfigRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    PutKVConfigRequestHeader,
    WipeWritePermOfBrokerRequestHeader,
    WipeWritePermOfBrokerResponseHeader,
)

# The plan vocabulary is shared with the send path; re-exported here for the admin drivers.
from rocketmq_tx.remoting.plans import NAMESRV, Call, Plan, run_plan

__all__ = [
    "NAMESRV",
    "ORDER_TOPIC_CONFIG",
    "Call",
    "Plan",
    "QueryResult",
    "RollbackStats",
    "run_plan",
    # builders and parsers
    "cluster_info_request",
    "parse_cluster_info_response",
    "topic_list_request",
    "parse_topic_list_response",
    "create_topic_request",
    "delete_topic_in_broker_request",
    "delete_topic_in_namesrv_request",
    "put_kv_config_request",
    "delete_kv_config_request",
    "topic_stats_request",
    "parse_topic_stats_response",
    "consume_stats_request",
    "parse_consume_stats_response",
    "consumer_connection_request",
    "parse_consumer_connection_response",
    "consumer_running_info_request",
    "parse_consumer_running_info_response",
    "reset_offset_request",
    "parse_reset_offset_response",
    "parse_query_message_response",
    "properties_text",
    "parse_properties_response",
    # plans
    "examine_broker_cluster_info",
    "fetch_master_addr_by_cluster_name",
    "examine_topic_route_info",
    "fetch_all_topic_list",
    "create_and_update_topic_config",
    "create_topic_in_cluster",
    "delete_topic_in_broker",
    "delete_topic_in_name_server",
    "delete_topic",
    "examine_topic_stats",
    "examine_consume_stats",
    "examine_consumer_connection_info",
    "get_consumer_running_info",
    "view_message",
    "query_message",
    "query_message_by_uniq_key",
    "reset_offset_by_timestamp",
    "reset_offset_by_timestamp_old",
    "reset_offset_new",
    "get_broker_config",
    "update_broker_config",
    "fetch_broker_runtime_stats",
    "get_name_server_config",
    "update_name_server_config",
    "create_and_update_kv_config",
    "delete_kv_config",
    "wipe_write_perm_of_broker",
    "add_write_perm_of_broker",
    "create_and_update_subscription_group_config",
    "delete_subscription_group",
    "examine_producer_connection_info",
    "set_message_request_mode",
    "AclVersionInfo",
    "create_and_update_plain_access_config",
    "delete_plain_access_config",
    "update_global_white_addrs_config",
    "examine_broker_cluster_acl_version_info",
]

T = TypeVar("T")

#: ``NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG``: the KV namespace of ordered topics' layouts.
ORDER_TOPIC_CONFIG = "ORDER_TOPIC_CONFIG"
#: Java's ``Long.MAX_VALUE``: the open end of a query by unique key.
_LONG_MAX = 2 ** 63 - 1


def _body_json(response: RemotingCommand, what: str) -> Any:
    check_response(response)
    try:
        return fastjson.loads(response.body) if response.body else {}
    except ValueError as e:
        raise MQBrokerError(response.code, f"malformed {what} body: {e}") from None


def _decoded(response: RemotingCommand, what: str, decode: Callable[[Any], T]) -> T:
    data = _body_json(response, what)
    try:
        return decode(data)
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        raise MQBrokerError(response.code, f"malformed {what} body: {e}") from None


def _ok_or_raise(result: RemotingCommand | RemotingError) -> RemotingCommand:
    """One entry of a list step: the response if it is SUCCESS, else raise what went wrong."""
    if isinstance(result, RemotingError):
        raise result
    return check_response(result)


def _retry_topic(group: str) -> str:
    return RETRY_GROUP_TOPIC_PREFIX + group


# --------------------------------------------------------------------------- results

@dataclass(slots=True)
class QueryResult:
    """Java ``QueryResult``: the messages a query by key found, and the newest index time of the brokers asked."""

    index_last_update_timestamp: int = 0
    message_list: list[MessageExt] = field(default_factory=list)


@dataclass(slots=True)
class RollbackStats:
    """
    Java ``RollbackStats``: one queue of a reset done by the admin itself
    (:func:`reset_offset_by_timestamp_old`). ``rollback_offset`` is the group's offset
    afterwards: ``timestamp_offset`` when the reset applied, else the unchanged one.
    """

    broker_name: str
    queue_id: int
    broker_offset: int
    consumer_offset: int
    timestamp_offset: int
    rollback_offset: int


# --------------------------------------------------------------------------- name server requests

def cluster_info_request() -> RemotingCommand:
    """GET_BROKER_CLUSTER_INFO (106)."""
    return RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO)


def parse_cluster_info_response(response: RemotingCommand) -> ClusterInfo:
    return _decoded(response, "ClusterInfo", ClusterInfo.from_json)


def topic_list_request() -> RemotingCommand:
    """GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206)."""
    return RemotingCommand.request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)


def parse_topic_list_response(response: RemotingCommand) -> TopicList:
    return _decoded(response, "TopicList", TopicList.from_json)


def delete_topic_in_namesrv_request(topic: str, cluster: str | None = None) -> RemotingCommand:
    """DELETE_TOPIC_IN_NAMESRV (216); *cluster* (5.x) limits it to that cluster's brokers, 4.x ignores it."""
    return RemotingCommand.request(RequestCode.DELETE_TOPIC_IN_NAMESRV,
                                   DeleteTopicFromNamesrvRequestHeader(topic, cluster).to_ext_fields())


def put_kv_config_request(namespace: str, key: str, value: str) -> RemotingCommand:
    """PUT_KV_CONFIG (100)."""
    return RemotingCommand.request(RequestCode.PUT_KV_CONFIG,
                                   PutKVConfigRequestHeader(namespace, key, value).to_ext_fields())


def delete_kv_config_request(namespace: str, key: str) -> RemotingCommand:
    """DELETE_KV_CONFIG (102)."""
    return RemotingCommand.request(RequestCode.DELETE_KV_CONFIG,
                                   DeleteKVConfigRequestHeader(namespace, key).to_ext_fields())


# --------------------------------------------------------------------------- broker requests

def _attributes_text(attributes: dict[str, str] | None) -> str:
    # 5.x AttributeParser.parseToString: "k=v" (or a bare key) joined by commas.
    return ",".join(k if not v else f"{k}={v}" for k, v in (attributes or {}).items())


def create_topic_request(config: TopicConfig, default_topic: str = AUTO_CREATE_TOPIC_KEY) -> RemotingCommand:
    """
    UPDATE_AND_CREATE_TOPIC (17). ``attributes`` goes as 5.x writes it (``+key=value``
    pairs); 4.x brokers ignore the key.
    """
    header = CreateTopicRequestHeader(
        config.topic_name, default_topic, config.read_queue_nums, config.write_queue_nums, config.perm,
        config.topic_filter_type, config.topic_sys_flag, config.order,
        _attributes_text(config.attributes) if config.attributes is not None else None)
    return RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, header.to_ext_fields())


def delete_topic_in_broker_request(topic: str) -> RemotingCommand:
    """DELETE_TOPIC_IN_BROKER (215)."""
    return RemotingCommand.request(RequestCode.DELETE_TOPIC_IN_BROKER, DeleteTopicRequestHeader(topic).to_ext_fields())


def topic_stats_request(topic: str) -> RemotingCommand:
    """GET_TOPIC_STATS_INFO (202)."""
    return RemotingCommand.request(RequestCode.GET_TOPIC_STATS_INFO,
                                   GetTopicStatsInfoRequestHeader(topic).to_ext_fields())


def parse_topic_stats_response(response: RemotingCommand) -> TopicStatsTable:
    """One broker's queues of the topic; TOPIC_NOT_EXIST (17) raises."""
    return _decoded(response, "TopicStatsTable", TopicStatsTable.from_json)


def consume_stats_request(group: str, topic: str | None = None) -> RemotingCommand:
    """GET_CONSUME_STATS (208); without *topic* the broker reports every topic the group has offsets for."""
    return RemotingCommand.request(RequestCode.GET_CONSUME_STATS,
                                   GetConsumeStatsRequestHeader(group, topic).to_ext_fields())


def parse_consume_stats_response(response: RemotingCommand) -> ConsumeStats:
    return _decoded(response, "ConsumeStats", ConsumeStats.from_json)


def consumer_connection_request(group: str) -> RemotingCommand:
    """GET_CONSUMER_CONNECTION_LIST (203)."""
    return RemotingCommand.request(RequestCode.GET_CONSUMER_CONNECTION_LIST,
                                   GetConsumerConnectionListRequestHeader(group).to_ext_fields())


def parse_consumer_connection_response(response: RemotingCommand) -> ConsumerConnection:
    """CONSUMER_NOT_ONLINE (206) raises with the broker's remark."""
    return _decoded(response, "ConsumerConnection", ConsumerConnection.from_json)


def consumer_running_info_request(group: str, client_id: str, jstack: bool = False) -> RemotingCommand:
    """GET_CONSUMER_RUNNING_INFO (307), which the broker relays to the client."""
    return RemotingCommand.request(RequestCode.GET_CONSUMER_RUNNING_INFO,
                                   GetConsumerRunningInfoRequestHeader(group, client_id, jstack).to_ext_fields())


def parse_consumer_running_info_response(response: RemotingCommand) -> ConsumerRunningInfo:
    """The client's answer as relayed (SYSTEM_ERROR "The Consumer <id> not online" raises)."""
    return _decoded(response, "ConsumerRunningInfo", ConsumerRunningInfo.from_json)


def reset_offset_request(topic: str, group: str, timestamp_ms: int, force: bool = True) -> RemotingCommand:
    """
    INVOKE_BROKER_TO_RESET_OFFSET (222): every queue of the group in *topic* to the first
    offset stored at *timestamp_ms* (-1: the queue's end). Sent as the 5.x client does
    (``queueId`` -1 and ``offset`` -1: all queues, by time), which 4.x brokers ignore.
    """
    header = ResetOffsetRequestHeader(topic, group, timestamp_ms, force, -1, -1)
    return RemotingCommand.request(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, header.to_ext_fields())


def parse_reset_offset_response(response: RemotingCommand) -> dict[MessageQueue, int]:
    """
    The new offset of each queue (``ResetOffsetBody``). Any other code, or a SUCCESS
    without a body, raises with the broker's code and remark (CONSUMER_NOT_ONLINE, 206,
    from a 4.x broker when no consumer of the group is connected).
    """
    if response.code != ResponseCode.SUCCESS or not response.body:
        raise MQBrokerError(response.code, response.remark)
    body = _decoded(response, "ResetOffsetBody", ResetOffsetBody.from_json)
    return dict(body.offset_table or {})


def parse_query_message_response(response: RemotingCommand) -> tuple[int, list[MessageExt]]:
    """QUERY_MESSAGE's ``indexLastUpdateTimestamp`` and records; QUERY_NOT_FOUND (22) is ``(0, [])``."""
    messages = api.parse_messages_response(response)
    if not messages:
        return 0, []
    try:
        header = QueryMessageResponseHeader.from_ext_fields(response.ext_fields)
    except RemotingCommandError:
        return 0, messages
    return int(header.index_last_update_timestamp or 0), messages


# --------------------------------------------------------------------------- plans: cluster and topics

def examine_broker_cluster_info() -> Plan[ClusterInfo]:
    """The brokers and clusters the name server knows."""
    return parse_cluster_info_response((yield Call(NAMESRV, cluster_info_request())))


def fetch_master_addr_by_cluster_name(cluster: str) -> Plan[list[str]]:
    """
    The master address of every broker of *cluster*.

    :raises MQClientError: the name server knows no such cluster.
    """
    info = yield from examine_broker_cluster_info()
    if cluster not in info.cluster_addr_table:
        raise MQClientError(f"the cluster [{cluster}] does not exist on the name server")
    return info.master_addrs(cluster)


def examine_topic_route_info(topic: str) -> Plan[TopicRouteData]:
    """The route, always fresh from the name server (an admin reads no cache)."""
    return api.parse_route_response((yield Call(NAMESRV, api.route_request(topic))))


def fetch_all_topic_list() -> Plan[TopicList]:
    """Every topic the name server routes."""
    return parse_topic_list_response((yield Call(NAMESRV, topic_list_request())))


def create_and_update_topic_config(addr: str, config: TopicConfig) -> Plan[None]:
    """Create or update *config* on the broker at *addr* (mqadmin ``updateTopic -b``)."""
    check_response((yield Call(addr, create_topic_request(config))))


def _put_order_conf(topic: str, order_conf: str, namesrvs: Sequence[str]) -> Plan[None]:
    # Java's createOrUpdateOrderConf with isCluster: every name server gets the layout.
    for result in (yield [Call(addr, put_kv_config_request(ORDER_TOPIC_CONFIG, topic, order_conf))
                          for addr in namesrvs]):
        _ok_or_raise(result)


def create_topic_in_cluster(cluster: str, config: TopicConfig, namesrvs: Sequence[str] = ()) -> Plan[list[str]]:
    """
    Create or update *config* on every master of *cluster* (mqadmin ``updateTopic -c``);
    returns their addresses. An ordered topic (``config.order``) also gets its layout
    (``brokerName:writeQueueNums;...``) in the ORDER_TOPIC_CONFIG namespace of each of
    *namesrvs* (routes carry it as ``orderTopicConf`` where the name server has
    ``orderMessageEnable``; brokers get it back when they register).
    """
    info = yield from examine_broker_cluster_info()
    if cluster not in info.cluster_addr_table:
        raise MQClientError(f"the cluster [{cluster}] does not exist on the name server")
    masters = info.master_addrs(cluster)
    for result in (yield [Call(addr, create_topic_request(config)) for addr in masters]):
        _ok_or_raise(result)
    if config.order and namesrvs:
        layout = ";".join(f"{name}:{config.write_queue_nums}" for name in info.broker_names(cluster))
        yield from _put_order_conf(config.topic_name, layout, namesrvs)
    return masters


def delete_topic_in_broker(addrs: Iterable[str], topic: str) -> Plan[None]:
    """DELETE_TOPIC_IN_BROKER on each of *addrs* (the topic's config and queues go)."""
    for result in (yield [Call(addr, delete_topic_in_broker_request(topic)) for addr in addrs]):
        _ok_or_raise(result)


def delete_topic_in_name_server(addrs: Iterable[str], topic: str, cluster: str | None = None) -> Plan[None]:
    """DELETE_TOPIC_IN_NAMESRV on each name server of *addrs*."""
    for result in (yield [Call(addr, delete_topic_in_namesrv_request(topic, cluster)) for addr in addrs]):
        _ok_or_raise(result)


def delete_topic(topic: str, cluster: str, namesrvs: Sequence[str]) -> Plan[None]:
    """
    Java 5.x ``deleteTopic`` (mqadmin ``deleteTopic -c``): from every broker of *cluster*
    (masters and slaves), from the routes of every name server, and its ordered-topic
    layout from their KV configuration.
    """
    info = yield from examine_broker_cluster_info()
    if cluster not in info.cluster_addr_table:
        raise MQClientError(f"the cluster [{cluster}] does not exist on the name server")
    yield from delete_topic_in_broker(info.retrieve_all_addr_by_cluster(cluster), topic)
    yield from delete_topic_in_name_server(namesrvs, topic)
    for result in (yield [Call(addr, delete_kv_config_request(ORDER_TOPIC_CONFIG, topic)) for addr in namesrvs]):
        _ok_or_raise(result)


def _broker_addrs(route: TopicRouteData) -> list[tuple[str, str]]:
    """(broker name, address) of each broker of *route*: its master, else a slave (``selectBrokerAddr``)."""
    out = []
    for data in route.broker_datas:
        addr = data.select_broker_addr()
        if addr is not None:
            out.append((data.broker_name, addr))
    return out


def examine_topic_stats(topic: str) -> Plan[TopicStatsTable]:
    """
    Every queue of *topic*: min and max offset and the last store time, from each of its
    brokers, merged.

    :raises MQClientError: no broker reported a queue.
    """
    route = yield from examine_topic_route_info(topic)
    merged = TopicStatsTable()
    results = yield [Call(addr, topic_stats_request(topic)) for _, addr in _broker_addrs(route)]
    for result in results:
        merged.offset_table.update(parse_topic_stats_response(_ok_or_raise(result)).offset_table)
    if not merged.offset_table:
        raise MQClientError("Not found the topic stats info")
    merged.offset_table = dict(sorted(merged.offset_table.items()))
    return merged


# --------------------------------------------------------------------------- plans: consumers

def _group_route(group: str, topic: str | None) -> Plan[TopicRouteData]:
    # 5.x: the group's retry topic, else (a group that never sent a heartbeat, such as
    # one committing offsets from Spark) the topic itself.
    candidates = [_retry_topic(group)] + ([topic] if topic else [])
    for i, name in enumerate(candidates):
        try:
            return (yield from examine_topic_route_info(name))
        except MQBrokerError:
            if i == len(candidates) - 1:
                raise
    raise AssertionError("unreachable")


def examine_consume_stats(group: str, topic: str | None = None) -> Plan[ConsumeStats]:
    """
    The group's progress (every topic it has offsets for, or only *topic*): per queue the
    broker offset, the consumer offset and the store time of the last consumed message,
    from every broker of the group's retry topic, merged. ``compute_total_diff()`` is the lag.

    :raises MQClientError: CONSUMER_NOT_ONLINE (206) when no broker has an offset and no
        consumer is connected; BROADCAST_CONSUMPTION (213) when the connected group
        broadcasts (its offsets live in the clients), as Java 5.x reports.
    """
    route = yield from _group_route(group, topic)
    merged = ConsumeStats()
    results = yield [Call(addr, consume_stats_request(group, topic), 3.0) for _, addr in _broker_addrs(route)]
    for result in results:
        stats = parse_consume_stats_response(_ok_or_raise(result))
        merged.offset_table.update(stats.offset_table)
        merged.consume_tps += stats.consume_tps
    merged.offset_table = dict(sorted(merged.offset_table.items()))
    if merged.offset_table:
        return merged
    try:
        connection = yield from examine_consumer_connection_info(group)
    except (MQBrokerError, MQClientError, RemotingError):
        raise MQClientError("Not found the consumer group consume stats, because return offset table is empty, "
                            "maybe the consumer not consume any message", ResponseCode.CONSUMER_NOT_ONLINE) from None
    if connection.message_model == "BROADCASTING":
        raise MQClientError("Not found the consumer group consume stats, because return offset table is empty, "
                            "the consumer is under the broadcast mode", ResponseCode.BROADCAST_CONSUMPTION)
    return merged


def examine_consumer_connection_info(group: str, addr: str | None = None) -> Plan[ConsumerConnection]:
    """
    The group's connected clients and subscriptions, from a broker of its retry topic (every
    broker gets every client's heartbeat; Java asks one at random, here the first that answers),
    or from the broker at *addr* (mqadmin ``consumerConnection -b``).

    :raises MQBrokerError: CONSUMER_NOT_ONLINE (206) from the broker.
    :raises MQClientError: CONSUMER_NOT_ONLINE when the answer lists no connection.
    """
    if addr is not None:
        connection = parse_consumer_connection_response((yield Call(addr, consumer_connection_request(group))))
        if not connection.connection_set:
            raise MQClientError("Not found the consumer group connection", ResponseCode.CONSUMER_NOT_ONLINE)
        return connection
    route = yield from examine_topic_route_info(_retry_topic(group))
    error: Exception | None = None
    for _, addr in _broker_addrs(route):
        try:
            connection = parse_consumer_connection_response((yield Call(addr, consumer_connection_request(group))))
        except (MQBrokerError, RemotingError) as e:
            error = e
            continue
        if connection.connection_set:
            return connection
    if error is not None:
        raise error
    raise MQClientError("Not found the consumer group connection", ResponseCode.CONSUMER_NOT_ONLINE)


def get_consumer_running_info(group: str, client_id: str, jstack: bool = False) -> Plan[ConsumerRunningInfo]:
    """
    A consumer's running state (mqadmin ``consumerStatus``), asked of the first broker of the
    group's retry topic (its master, else a slave), which relays it to the client, as Java's
    ``DefaultMQAdminExtImpl.getConsumerRunningInfo``.

    :raises MQClientError: the retry topic's route names no broker.
    """
    route = yield from examine_topic_route_info(_retry_topic(group))
    for _, addr in _broker_addrs(route):
        # Java gives the relay three times its usual timeout: the broker waits for the client
        return parse_consumer_running_info_response(
            (yield Call(addr, consumer_running_info_request(group, client_id, jstack), 9.0)))
    raise MQClientError(f"No broker of {_retry_topic(group)} has an address")


# --------------------------------------------------------------------------- plans: messages

def view_message(msg_id: str, topic: str | None = None) -> Plan[MessageExt]:
    """
    The message with this offsetMsgId, read from the broker whose address the id holds
    (VIEW_MESSAGE_BY_ID). With *topic*, an id that is not one, or finds nothing, is tried
    as a ``UNIQ_KEY`` (Java ``viewMessage(topic, msgId)``; both are 32 hex digits).

    :raises MQClientError: NO_MESSAGE (208) for an id that cannot be decoded.
    :raises MQBrokerError: the broker's answer (e.g. SYSTEM_ERROR for an offset it does not hold).
    """
    try:
        host, port, offset = decode_offset_msg_id(msg_id)
    except MessageFormatError:
        if topic is None:
            raise MQClientError("query message by id finished, but no message.", ResponseCode.NO_MESSAGE) from None
        return (yield from query_message_by_uniq_key(topic, msg_id))
    addr = f"{host}:{port}"  # Java's form, IPv6 without brackets; split_address reads both
    try:
        response = yield Call(addr, api.view_message_request(offset, topic))
        messages = api.parse_messages_response(response, not_found_ok=False)
        if messages:
            return messages[0]
        raise MQClientError("query message by id finished, but no message.", ResponseCode.NO_MESSAGE)
    except (RemotingError, MQBrokerError, MQClientError, MessageFormatError):
        if topic is None:
            raise
    return (yield from query_message_by_uniq_key(topic, msg_id))


def query_message(topic: str, key: str, max_num: int = 32, begin_ms: int = 0, end_ms: int | None = None,
                  *, unique_key: bool = False) -> Plan[QueryResult]:
    """
    QUERY_MESSAGE (12) on every broker of *topic*: messages whose ``KEYS`` hold *key*
    (or, with *unique_key*, whose ``UNIQ_KEY`` is *key*: then only the earliest stored),
    stored between *begin_ms* and *end_ms*. The index is a hash, so every hit is checked
    again here; a broker that fails or finds nothing is skipped, as in Java.

    :raises MQClientError: NO_MESSAGE (208) when no broker found a match.
    """
    route = yield from examine_topic_route_info(topic)
    calls = [Call(addr, api.query_message_request(topic, key, max_num, begin_ms, end_ms, unique_key=unique_key), 3.0)
             for _, addr in _broker_addrs(route)]
    newest_index = 0
    found: list[MessageExt] = []
    for result in (yield calls):
        if isinstance(result, RemotingError) or result.code != ResponseCode.SUCCESS:
            continue
        try:
            index_ts, messages = parse_query_message_response(result)
        except (MQBrokerError, MessageFormatError):
            continue
        newest_index = max(newest_index, index_ts)
        for msg in messages:
            if unique_key:
                if msg.msg_id == key and (not found or msg.store_timestamp < found[0].store_timestamp):
                    found = [msg]
            elif key in msg.keys and msg.topic == topic:
                found.append(msg)
    if not found:
        raise MQClientError("query message by key finished, but no message.", ResponseCode.NO_MESSAGE)
    return QueryResult(newest_index, found)


def query_message_by_uniq_key(topic: str, key: str) -> Plan[MessageExt]:
    """
    The message whose ``UNIQ_KEY`` (what producers report as msgId) is *key*: a query by
    unique key from a second before the time the key encodes.

    :raises MQClientError: NO_MESSAGE (208).
    """
    try:
        begin = max(unique_key_time(key) - 1000, 0)
    except MessageFormatError:
        begin = 0
    result = yield from query_message(topic, key, 32, begin, _LONG_MAX, unique_key=True)
    return result.message_list[0]


# --------------------------------------------------------------------------- plans: offsets

def reset_offset_by_timestamp(topic: str, group: str, timestamp_ms: int, force: bool = True
                              ) -> Plan[dict[MessageQueue, int]]:
    """
    Java ``resetOffsetByTimestamp``: each broker of *topic* moves *group*'s offsets to the
    first message stored at or after *timestamp_ms* (-1: the end) and tells the group's
    running consumers (a 4.x broker; 5.x brokers reset on their side by default). Without
    *force* an offset only moves back. Returns every queue's new offset.

    :raises MQBrokerError: the broker's code and remark, e.g. CONSUMER_NOT_ONLINE (206)
        from a 4.x broker when no consumer of the group is connected.
    """
    route = yield from examine_topic_route_info(topic)
    table: dict[MessageQueue, int] = {}
    for result in (yield [Call(addr, reset_offset_request(topic, group, timestamp_ms, force))
                          for _, addr in _broker_addrs(route)]):
        if isinstance(result, RemotingError):
            raise result
        table.update(parse_reset_offset_response(result))
    return dict(sorted(table.items()))


def reset_offset_by_timestamp_old(topic: str, group: str, timestamp_ms: int, force: bool = True
                                  ) -> Plan[list[RollbackStats]]:
    """
    Java ``resetOffsetByTimestampOld``: the admin finds each queue's offset at
    *timestamp_ms* (-1: the end) and commits it for *group* itself (UPDATE_CONSUMER_OFFSET),
    for a group with no running consumer. Queues the group has no offset in are taken from
    the topic's stats. Without *force* an offset only moves back.
    """
    route = yield from examine_topic_route_info(topic)
    read_queues = {q.broker_name: q.read_queue_nums for q in route.queue_datas}
    out: list[RollbackStats] = []
    for broker_name, addr in _broker_addrs(route):
        stats = parse_consume_stats_response((yield Call(addr, consume_stats_request(group), 3.0)))
        entries = [(mq, w) for mq, w in sorted(stats.offset_table.items()) if mq.topic == topic]
        if not entries:
            table = parse_topic_stats_response((yield Call(addr, topic_stats_request(topic)))).offset_table
            for qid in range(read_queues.get(broker_name, 0)):
                mq = MessageQueue(topic, broker_name, qid)
                offsets = table.get(mq)
                if offsets is not None:
                    entries.append((mq, OffsetWrapper(offsets.max_offset, offsets.min_offset)))
        for mq, wrapper in entries:
            if timestamp_ms == -1:
                request = api.get_max_offset_request(mq)
            else:
                request = api.search_offset_request(mq, timestamp_ms)
            reset = api.parse_offset_response((yield Call(addr, request)))
            stat = RollbackStats(broker_name, mq.queue_id, wrapper.broker_offset, wrapper.consumer_offset, reset,
                                 wrapper.consumer_offset)
            if force or reset <= wrapper.consumer_offset:
                stat.rollback_offset = reset
                check_response((yield Call(addr, api.update_consumer_offset_request(group, mq, reset))))
            out.append(stat)
    return out


def reset_offset_new(topic: str, group: str, timestamp_ms: int) -> Plan[dict[MessageQueue, int]]:
    """
    Java ``resetOffsetNew`` (what mqadmin ``resetOffsetByTime`` does): a forced
    :func:`reset_offset_by_timestamp`, and :func:`reset_offset_by_timestamp_old` when the
    broker answers that no consumer is online. Returns every queue's new offset.
    """
    try:
        return (yield from reset_offset_by_timestamp(topic, group, timestamp_ms, True))
    except MQBrokerError as e:
        if e.code != ResponseCode.CONSUMER_NOT_ONLINE:
            raise
    stats = yield from reset_offset_by_timestamp_old(topic, group, timestamp_ms, True)
    return {MessageQueue(topic, s.broker_name, s.queue_id): s.rollback_offset for s in stats}


# --------------------------------------------------------------------------- configuration and permissions

def properties_text(properties: dict[str, str]) -> bytes:
    """A ``key=value`` line per entry, the body UPDATE_BROKER_CONFIG / UPDATE_NAMESRV_CONFIG carry
    (Java ``MixAll.properties2String``, which escapes nothing either)."""
    for key, value in properties.items():
        if any(c in key + value for c in "\r\n") or "=" in key:
            raise ValueError(f"a config key or value may hold no line break (and a key no '='): {key!r}")
    return "".join(f"{k}={v}\n" for k, v in properties.items()).encode("utf-8")


def parse_properties_response(response: RemotingCommand, what: str = "properties") -> dict[str, str]:
    """GET_BROKER_CONFIG / GET_NAMESRV_CONFIG's body: properties text (Java's ``string2Properties``)."""
    check_response(response)
    try:
        return dict(javaproperties.loads(response.body.decode("utf-8"))) if response.body else {}
    except (ValueError, UnicodeDecodeError) as e:
        raise MQBrokerError(response.code, f"malformed {what} body: {e}") from None


def get_broker_config(addr: str) -> Plan[dict[str, str]]:
    """Every setting of the broker at *addr* (GET_BROKER_CONFIG, 26; mqadmin ``getBrokerConfig``)."""
    return parse_properties_response((yield Call(addr, RemotingCommand.request(RequestCode.GET_BROKER_CONFIG))),
                                     "broker config")


def update_broker_config(addr: str, properties: dict[str, str]) -> Plan[None]:
    """Change settings of the broker at *addr* at run time (UPDATE_BROKER_CONFIG, 25)."""
    request = RemotingCommand.request(RequestCode.UPDATE_BROKER_CONFIG, body=properties_text(properties))
    check_response((yield Call(addr, request)))


def fetch_broker_runtime_stats(addr: str) -> Plan[dict[str, str]]:
    """The broker's runtime figures (GET_BROKER_RUNTIME_INFO, 28; mqadmin ``brokerStatus``)."""
    response = yield Call(addr, RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO))
    return _decoded(response, "KVTable", KVTable.from_json).table


def get_name_server_config(addrs: Iterable[str]) -> Plan[dict[str, dict[str, str]]]:
    """Each name server's settings, by address (GET_NAMESRV_CONFIG, 319; mqadmin ``getNamesrvConfig``)."""
    addrs = list(addrs)
    results = yield [Call(a, RemotingCommand.request(RequestCode.GET_NAMESRV_CONFIG)) for a in addrs]
    return {a: parse_properties_response(_ok_or_raise(r), "name server config") for a, r in zip(addrs, results)}


def update_name_server_config(addrs: Iterable[str], properties: dict[str, str]) -> Plan[None]:
    """Change settings of every name server of *addrs* (UPDATE_NAMESRV_CONFIG, 318)."""
    body = properties_text(properties)
    results = yield [Call(a, RemotingCommand.request(RequestCode.UPDATE_NAMESRV_CONFIG, body=body)) for a in addrs]
    for result in results:
        _ok_or_raise(result)


def create_and_update_kv_config(addrs: Iterable[str], namespace: str, key: str, value: str) -> Plan[None]:
    """PUT_KV_CONFIG on every name server (mqadmin ``updateKvConfig``)."""
    results = yield [Call(a, put_kv_config_request(namespace, key, value)) for a in addrs]
    for result in results:
        _ok_or_raise(result)


def delete_kv_config(addrs: Iterable[str], namespace: str, key: str) -> Plan[None]:
    """DELETE_KV_CONFIG on every name server (mqadmin ``deleteKvConfig``)."""
    results = yield [Call(a, delete_kv_config_request(namespace, key)) for a in addrs]
    for result in results:
        _ok_or_raise(result)


def wipe_write_perm_of_broker(addr: str, broker_name: str) -> Plan[int]:
    """Take write permission from *broker_name*'s topics in the name server at *addr*; how many topics."""
    request = RemotingCommand.request(RequestCode.WIPE_WRITE_PERM_OF_BROKER,
                                      WipeWritePermOfBrokerRequestHeader(broker_name).to_ext_fields())
    response = check_response((yield Call(addr, request)))
    return WipeWritePermOfBrokerResponseHeader.from_ext_fields(response.ext_fields).wipe_topic_count


def add_write_perm_of_broker(addr: str, broker_name: str) -> Plan[int]:
    """Give write permission back to *broker_name*'s topics in the name server at *addr*; how many topics."""
    request = RemotingCommand.request(RequestCode.ADD_WRITE_PERM_OF_BROKER,
                                      AddWritePermOfBrokerRequestHeader(broker_name).to_ext_fields())
    response = check_response((yield Call(addr, request)))
    return AddWritePermOfBrokerResponseHeader.from_ext_fields(response.ext_fields).add_topic_count


# --------------------------------------------------------------------------- plans: subscription groups

def create_and_update_subscription_group_config(addr: str, config: SubscriptionGroupConfig) -> Plan[None]:
    """UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200) on the broker at *addr* (mqadmin ``updateSubGroup``)."""
    request = RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
                                      body=fastjson.dumps(config.to_json()))
    check_response((yield Call(addr, request)))


def delete_subscription_group(addr: str, group: str, remove_offset: bool = False) -> Plan[None]:
    """
    DELETE_SUBSCRIPTIONGROUP (207) on the broker at *addr*. The flag goes under both of its
    names (4.x ``removeOffset``, 5.x ``cleanOffset``); each broker reads its own.
    """
    header = DeleteSubscriptionGroupRequestHeader(group, remove_offset, remove_offset)
    check_response((yield Call(addr, RemotingCommand.request(RequestCode.DELETE_SUBSCRIPTIONGROUP,
                                                             header.to_ext_fields()))))


def examine_producer_connection_info(group: str, topic: str) -> Plan[ProducerConnection]:
    """The producers of *group* connected to a broker of *topic* (GET_PRODUCER_CONNECTION_LIST, 204)."""
    route = yield from examine_topic_route_info(topic)
    merged = ProducerConnection()
    request = GetProducerConnectionListRequestHeader(group).to_ext_fields()
    for _, addr in _broker_addrs(route):
        response = yield Call(addr, RemotingCommand.request(RequestCode.GET_PRODUCER_CONNECTION_LIST, dict(request)))
        merged.connection_set += _decoded(response, "ProducerConnection", ProducerConnection.from_json).connection_set
    return merged


def set_message_request_mode(addr: str, topic: str, group: str, mode: str, pop_share_queue_num: int = 0
                             ) -> Plan[None]:
    """SET_MESSAGE_REQUEST_MODE (401, 5.x): how *group* consumes *topic* on the broker at *addr* (PULL / POP)."""
    body = SetMessageRequestModeRequestBody(topic, group, mode, pop_share_queue_num)
    request = RemotingCommand.request(RequestCode.SET_MESSAGE_REQUEST_MODE, body=fastjson.dumps(body.to_json()))
    check_response((yield Call(addr, request)))


# --------------------------------------------------------------------------- plans: ACL 1.0 accounts

@dataclass(slots=True)
class AclVersionInfo:
    """
    Java ``ClusterAclVersionInfo``: who answered GET_BROKER_CLUSTER_ACL_INFO and the
    ``DataVersion`` (``counter``, ``timestamp``) of each of its ACL files, by path.
    """

    cluster_name: str | None
    broker_name: str | None
    broker_addr: str | None
    all_acl_config_data_version: dict[str, dict[str, Any]] = field(default_factory=dict)


def create_and_update_plain_access_config(addr: str, header: CreateAccessConfigRequestHeader) -> Plan[None]:
    """UPDATE_AND_CREATE_ACL_CONFIG (50) on the broker at *addr* (mqadmin ``updateAclConfig``)."""
    request = RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, header.to_ext_fields())
    check_response((yield Call(addr, request)))


def delete_plain_access_config(addr: str, access_key: str) -> Plan[None]:
    """DELETE_ACL_CONFIG (51) on the broker at *addr* (mqadmin ``deleteAclConfig``)."""
    request = RemotingCommand.request(RequestCode.DELETE_ACL_CONFIG,
                                      DeleteAccessConfigRequestHeader(access_key).to_ext_fields())
    check_response((yield Call(addr, request)))


def update_global_white_addrs_config(addr: str, global_white_addrs: str, acl_file_full_path: str | None = None
                                     ) -> Plan[None]:
    """UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (53) on the broker at *addr* (mqadmin ``updateGlobalWhiteAddr``)."""
    header = UpdateGlobalWhiteAddrsConfigRequestHeader(global_white_addrs, acl_file_full_path)
    request = RemotingCommand.request(RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, header.to_ext_fields())
    check_response((yield Call(addr, request)))


def examine_broker_cluster_acl_version_info(addr: str) -> Plan[AclVersionInfo]:
    """GET_BROKER_CLUSTER_ACL_INFO (52): the broker's ACL files and their versions (``clusterAclConfigVersion``)."""
    response = check_response((yield Call(addr, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_ACL_INFO))))
    try:
        header = GetBrokerAclConfigResponseHeader.from_ext_fields(response.ext_fields)
        versions = fastjson.loads(header.all_acl_file_version) if header.all_acl_file_version else {}
        if not isinstance(versions, dict) or not all(isinstance(v, dict) for v in versions.values()):
            raise ValueError("allAclFileVersion is not a map of DataVersion objects")
    except (RemotingCommandError, ValueError) as e:
        raise MQBrokerError(response.code, f"malformed GET_BROKER_CLUSTER_ACL_INFO response: {e}") from None
    return AclVersionInfo(header.cluster_name, header.broker_name, header.broker_addr,
                          {str(k): dict(v) for k, v in versions.items()})
