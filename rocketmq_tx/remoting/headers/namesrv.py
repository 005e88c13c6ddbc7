# -*- test-case-name: rocketmq_tx.namesrv.test.test_processors -*-
"""Headers of the name server's requests (codes 100-106, 205, 206, 216, 217, 219, 224, 322, 327, 901, 904)."""

from __future__ import annotations

from rocketmq_tx.remoting.header import CommandCustomHeader, custom_header, wire

__all__ = [
    "RegisterBrokerRequestHeader",
    "RegisterBrokerResponseHeader",
    "UnRegisterBrokerRequestHeader",
    "QueryDataVersionRequestHeader",
    "QueryDataVersionResponseHeader",
    "PutKVConfigRequestHeader",
    "GetKVConfigRequestHeader",
    "GetKVConfigResponseHeader",
    "DeleteKVConfigRequestHeader",
    "GetKVListByNamespaceRequestHeader",
    "WipeWritePermOfBrokerRequestHeader",
    "WipeWritePermOfBrokerResponseHeader",
    "AddWritePermOfBrokerRequestHeader",
    "AddWritePermOfBrokerResponseHeader",
    "DeleteTopicFromNamesrvRequestHeader",
    "GetTopicsByClusterRequestHeader",
    "RegisterTopicRequestHeader",
    "GetBrokerMemberGroupRequestHeader",
    "BrokerHeartbeatRequestHeader",
]


@custom_header
class RegisterBrokerRequestHeader(CommandCustomHeader):
    """``RegisterBrokerRequestHeader`` (103)."""

    broker_name: str = wire("brokerName", required=True)
    broker_addr: str = wire("brokerAddr", required=True)
    cluster_name: str = wire("clusterName", required=True)
    ha_server_addr: str = wire("haServerAddr", required=True)
    broker_id: int = wire("brokerId", required=True)
    compressed: bool | None = wire("compressed", default=False)
    body_crc32: int | None = wire("bodyCrc32", default=0)
    heartbeat_timeout_millis: int | None = wire("heartbeatTimeoutMillis")
    enable_acting_master: bool | None = wire("enableActingMaster")


@custom_header
class RegisterBrokerResponseHeader(CommandCustomHeader):
    """``RegisterBrokerResponseHeader``: filled for a slave whose master is alive."""

    ha_server_addr: str | None = wire("haServerAddr")
    master_addr: str | None = wire("masterAddr")


@custom_header
class UnRegisterBrokerRequestHeader(CommandCustomHeader):
    """``UnRegisterBrokerRequestHeader`` (104)."""

    broker_name: str = wire("brokerName", required=True)
    broker_addr: str = wire("brokerAddr", required=True)
    cluster_name: str = wire("clusterName", required=True)
    broker_id: int = wire("brokerId", required=True)


@custom_header
class QueryDataVersionRequestHeader(CommandCustomHeader):
    """``QueryDataVersionRequestHeader`` (322)."""

    broker_name: str = wire("brokerName", required=True)
    broker_addr: str = wire("brokerAddr", required=True)
    cluster_name: str = wire("clusterName", required=True)
    broker_id: int = wire("brokerId", required=True)


@custom_header
class QueryDataVersionResponseHeader(CommandCustomHeader):
    """``QueryDataVersionResponseHeader``."""

    changed: bool | None = wire("changed")


@custom_header
class PutKVConfigRequestHeader(CommandCustomHeader):
    """``PutKVConfigRequestHeader`` (100)."""

    namespace: str = wire("namespace", required=True)
    key: str = wire("key", required=True)
    value: str = wire("value", required=True)


@custom_header
class GetKVConfigRequestHeader(CommandCustomHeader):
    """``GetKVConfigRequestHeader`` (101)."""

    namespace: str = wire("namespace", required=True)
    key: str = wire("key", required=True)


@custom_header
class GetKVConfigResponseHeader(CommandCustomHeader):
    """``GetKVConfigResponseHeader``."""

    value: str | None = wire("value")


@custom_header
class DeleteKVConfigRequestHeader(CommandCustomHeader):
    """``DeleteKVConfigRequestHeader`` (102)."""

    namespace: str = wire("namespace", required=True)
    key: str = wire("key", required=True)


@custom_header
class GetKVListByNamespaceRequestHeader(CommandCustomHeader):
    """``GetKVListByNamespaceRequestHeader`` (219)."""

    namespace: str = wire("namespace", required=True)


@custom_header
class WipeWritePermOfBrokerRequestHeader(CommandCustomHeader):
    """``WipeWritePermOfBrokerRequestHeader`` (205)."""

    broker_name: str = wire("brokerName", required=True)


@custom_header
class WipeWritePermOfBrokerResponseHeader(CommandCustomHeader):
    """``WipeWritePermOfBrokerResponseHeader``."""

    wipe_topic_count: int = wire("wipeTopicCount", required=True)


@custom_header
class AddWritePermOfBrokerRequestHeader(CommandCustomHeader):
    """``AddWritePermOfBrokerRequestHeader`` (327)."""

    broker_name: str = wire("brokerName", required=True)


@custom_header
class AddWritePermOfBrokerResponseHeader(CommandCustomHeader):
    """``AddWritePermOfBrokerResponseHeader``."""

    add_topic_count: int = wire("addTopicCount", required=True)


@custom_header
class DeleteTopicFromNamesrvRequestHeader(CommandCustomHeader):
    """``DeleteTopicFromNamesrvRequestHeader`` (216); 4.9.x also takes the cluster."""

    topic: str = wire("topic", required=True)
    cluster_name: str | None = wire("clusterName")


@custom_header
class GetTopicsByClusterRequestHeader(CommandCustomHeader):
    """``GetTopicsByClusterRequestHeader`` (224)."""

    cluster: str = wire("cluster", required=True)


@custom_header
class RegisterTopicRequestHeader(CommandCustomHeader):
    """``RegisterTopicRequestHeader`` (217, 5.x): a broker registers one topic's queues."""

    topic: str = wire("topic", required=True)


@custom_header
class GetBrokerMemberGroupRequestHeader(CommandCustomHeader):
    """``GetBrokerMemberGroupRequestHeader`` (901, 5.x)."""

    cluster_name: str = wire("clusterName", required=True)
    broker_name: str = wire("brokerName", required=True)


@custom_header
class BrokerHeartbeatRequestHeader(CommandCustomHeader):
    """``BrokerHeartbeatRequestHeader`` (904, 5.x); the name server reads the first three fields,
    the rest are for the controller."""

    cluster_name: str = wire("clusterName", required=True)
    broker_addr: str = wire("brokerAddr", required=True)
    broker_name: str = wire("brokerName", required=True)
    broker_id: int | None = wire("brokerId")
    epoch: int | None = wire("epoch")
    max_offset: int | None = wire("maxOffset")
    confirm_offset: int | None = wire("confirmOffset")
    heartbeat_timeout_mills: int | None = wire("heartbeatTimeoutMills")
    election_priority: int | None = wire("electionPriority")
