# -*- test-case-name: rocketmq_tx.blocking.test.test_admin -*-
"""
:class:`BlockingAdmin`: Java's ``DefaultMQAdminExt`` without a reactor, for scripts,
notebooks and PySpark drivers. Every operation is a plan of
:mod:`rocketmq_tx.remoting.adminapi`, the same one the Twisted
:class:`~rocketmq_tx.client.admin.MQAdmin` runs; this class only sends its requests, one
after another, over the blocking connections of a :class:`BlockingMQClient`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from rocketmq_tx.acl import SessionCredentials
from rocketmq_tx.blocking.client import BlockingMQClient
from rocketmq_tx.common.message import MessageExt, MessageQueue
from rocketmq_tx.common.route import TopicConfig, TopicRouteData
from rocketmq_tx.common.subscription import SubscriptionGroupConfig
from rocketmq_tx.remoting import adminapi
from rocketmq_tx.remoting.adminapi import AclVersionInfo, Plan, QueryResult, RollbackStats
from rocketmq_tx.remoting.adminbodies import (
    ConsumerConnection,
    ConsumerRunningInfo,
    ConsumeStats,
    ProducerConnection,
    TopicStatsTable,
)
from rocketmq_tx.remoting.bodies import ClusterInfo, TopicList
from rocketmq_tx.remoting.headers.acl import CreateAccessConfigRequestHeader
from rocketmq_tx.tlsconfig import TlsSettings

__all__ = ["BlockingAdmin"]

T = TypeVar("T")


class BlockingAdmin:
    """
    The admin operations of issue 6, blocking. Failures raise
    :class:`~rocketmq_tx.remoting.errors.MQBrokerError` (the server's code and remark),
    :class:`~rocketmq_tx.remoting.api.MQClientError` (nothing found, no such cluster) or a
    :class:`~rocketmq_tx.remoting.errors.RemotingError` (the network).

    :param namesrv_addr: ``"a:9876;b:9876"``; a failing name server is skipped.
    :param timeout: seconds per request (Java ``timeoutMillis``; consumer stats and message
        queries get three times as much, as in Java).
    :param tls: talk TLS (``tls.client.*`` settings).
    :param access_key: ACL 1.0: sign every request with this AccessKey and *secret_key*
        (and *security_token*), or with one ``credentials``.
    """

    def __init__(self, namesrv_addr: str, *, timeout: float = 3.0, client_id: str | None = None,
                 tls: TlsSettings | None = None, access_key: str | None = None, secret_key: str | None = None,
                 security_token: str | None = None, credentials: SessionCredentials | None = None) -> None:
        self.client = BlockingMQClient.create(namesrv_addr, timeout=timeout, client_id=client_id, tls=tls,
                                              access_key=access_key, secret_key=secret_key,
                                              security_token=security_token, credentials=credentials)

    def __getstate__(self) -> dict[str, Any]:
        return {"namesrv_addr": self.client.namesrv_addr, "timeout": self.client.timeout,
                "client_id": self.client._given_client_id, "tls": self.client.tls,
                "credentials": self.client.credentials}

    def __setstate__(self, state: dict[str, Any]) -> None:
        type(self).__init__(self, state.pop("namesrv_addr"), **state)

    def __enter__(self) -> BlockingAdmin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connections (the object reconnects if used again)."""
        self.client.close()

    @property
    def namesrvs(self) -> list[str]:
        return list(self.client.namesrvs.addresses)

    def run(self, plan: Plan[T]) -> T:
        """Run any plan of :mod:`rocketmq_tx.remoting.adminapi` (on the client's driver)."""
        return self.client.run(plan)

    # ------------------------------------------------------------ cluster and topics
    def examine_broker_cluster_info(self) -> ClusterInfo:
        """Brokers by name (addresses by broker id) and broker names by cluster (mqadmin ``clusterList``)."""
        return self.run(adminapi.examine_broker_cluster_info())

    def fetch_master_addr_by_cluster_name(self, cluster: str) -> list[str]:
        """The master address of each broker of *cluster*."""
        return self.run(adminapi.fetch_master_addr_by_cluster_name(cluster))

    def examine_topic_route_info(self, topic: str) -> TopicRouteData:
        """The topic's route, fresh from the name server (mqadmin ``topicRoute``)."""
        return self.run(adminapi.examine_topic_route_info(topic))

    def fetch_all_topic_list(self) -> TopicList:
        """Every topic the name server routes (mqadmin ``topicList``); the names are ``.topic_list``."""
        return self.run(adminapi.fetch_all_topic_list())

    def create_and_update_topic_config(self, addr: str, config: TopicConfig) -> None:
        """Create or update a topic on one broker (mqadmin ``updateTopic -b``)."""
        self.run(adminapi.create_and_update_topic_config(addr, config))

    def create_topic_in_cluster(self, cluster: str, config: TopicConfig) -> list[str]:
        """Create or update a topic on every master of *cluster* (mqadmin ``updateTopic -c``); their addresses."""
        return self.run(adminapi.create_topic_in_cluster(cluster, config, self.namesrvs))

    def delete_topic_in_broker(self, addrs: Iterable[str], topic: str) -> None:
        """Delete *topic*'s configuration and queues on each broker of *addrs*."""
        self.run(adminapi.delete_topic_in_broker(list(addrs), topic))

    def delete_topic_in_name_server(self, addrs: Iterable[str] | None, topic: str, cluster: str | None = None) -> None:
        """Drop *topic* from the routes of *addrs* (``None``: every configured name server)."""
        self.run(adminapi.delete_topic_in_name_server(self.namesrvs if addrs is None else list(addrs), topic, cluster))

    def delete_topic(self, topic: str, cluster: str) -> None:
        """Delete *topic* from *cluster*'s brokers and every name server (mqadmin ``deleteTopic -c``)."""
        self.run(adminapi.delete_topic(topic, cluster, self.namesrvs))

    def examine_topic_stats(self, topic: str) -> TopicStatsTable:
        """Min and max offset and last store time of every queue (mqadmin ``topicStatus``)."""
        return self.run(adminapi.examine_topic_stats(topic))

    # ------------------------------------------------------------ consumers
    def examine_consume_stats(self, group: str, topic: str | None = None) -> ConsumeStats:
        """
        Broker offset, consumer offset and last consume time per queue (mqadmin
        ``consumerProgress -g``); ``compute_total_diff()`` is the total lag.
        """
        return self.run(adminapi.examine_consume_stats(group, topic))

    def examine_consumer_connection_info(self, group: str, addr: str | None = None) -> ConsumerConnection:
        """The group's connected clients and subscriptions (mqadmin ``consumerConnection``; *addr*: ask that broker)."""
        return self.run(adminapi.examine_consumer_connection_info(group, addr))

    def get_consumer_running_info(self, group: str, client_id: str, jstack: bool = False) -> ConsumerRunningInfo:
        """A connected consumer's properties, subscriptions and queues (mqadmin ``consumerStatus -i``)."""
        return self.run(adminapi.get_consumer_running_info(group, client_id, jstack))

    # ------------------------------------------------------------ messages
    def view_message(self, msg_id: str, topic: str | None = None) -> MessageExt:
        """By offsetMsgId (mqadmin ``queryMsgById``); with *topic* a UNIQ_KEY works too."""
        return self.run(adminapi.view_message(msg_id, topic))

    def query_message(self, topic: str, key: str, max_num: int = 32, begin_ms: int = 0,
                      end_ms: int | None = None) -> QueryResult:
        """Messages with *key* in ``KEYS`` (mqadmin ``queryMsgByKey``)."""
        return self.run(adminapi.query_message(topic, key, max_num, begin_ms, end_ms))

    def query_message_by_uniq_key(self, topic: str, key: str) -> MessageExt:
        """The message whose ``UNIQ_KEY`` (a producer's msgId) is *key* (mqadmin ``queryMsgByUniqueKey``)."""
        return self.run(adminapi.query_message_by_uniq_key(topic, key))

    # ------------------------------------------------------------ offsets
    def reset_offset_by_timestamp(self, topic: str, group: str, timestamp_ms: int, *,
                                  force: bool = True) -> dict[MessageQueue, int]:
        """Brokers reset the group's offsets to *timestamp_ms* (-1: the end) and tell its running consumers."""
        return self.run(adminapi.reset_offset_by_timestamp(topic, group, timestamp_ms, force))

    def reset_offset_by_timestamp_old(self, topic: str, group: str, timestamp_ms: int, *,
                                      force: bool = True) -> list[RollbackStats]:
        """The admin commits the offsets at *timestamp_ms* itself (for a group with no running consumer)."""
        return self.run(adminapi.reset_offset_by_timestamp_old(topic, group, timestamp_ms, force))

    def reset_offset_new(self, topic: str, group: str, timestamp_ms: int) -> dict[MessageQueue, int]:
        """mqadmin ``resetOffsetByTime``: through the brokers, or by the admin when no consumer is online."""
        return self.run(adminapi.reset_offset_new(topic, group, timestamp_ms))

    # ------------------------------------------------------------ configuration and permissions
    def get_broker_config(self, addr: str) -> dict[str, str]:
        """Every setting of the broker at *addr* (mqadmin ``getBrokerConfig``)."""
        return self.run(adminapi.get_broker_config(addr))

    def update_broker_config(self, addr: str, properties: dict[str, str]) -> None:
        """Change settings of the broker at *addr* at run time (mqadmin ``updateBrokerConfig``)."""
        self.run(adminapi.update_broker_config(addr, properties))

    def fetch_broker_runtime_stats(self, addr: str) -> dict[str, str]:
        """The runtime figures of the broker at *addr* (mqadmin ``brokerStatus``)."""
        return self.run(adminapi.fetch_broker_runtime_stats(addr))

    def get_name_server_config(self, addrs: Iterable[str] | None = None) -> dict[str, dict[str, str]]:
        """Each name server's settings by address (``None``: every configured one; mqadmin ``getNamesrvConfig``)."""
        return self.run(adminapi.get_name_server_config(self.namesrvs if addrs is None else list(addrs)))

    def update_name_server_config(self, properties: dict[str, str], addrs: Iterable[str] | None = None) -> None:
        """Change settings of the name servers (mqadmin ``updateNamesrvConfig``)."""
        self.run(adminapi.update_name_server_config(self.namesrvs if addrs is None else list(addrs), properties))

    def create_and_update_kv_config(self, namespace: str, key: str, value: str) -> None:
        """Put a KV config entry on every configured name server (mqadmin ``updateKvConfig``)."""
        self.run(adminapi.create_and_update_kv_config(self.namesrvs, namespace, key, value))

    def delete_kv_config(self, namespace: str, key: str) -> None:
        """Delete a KV config entry from every configured name server (mqadmin ``deleteKvConfig``)."""
        self.run(adminapi.delete_kv_config(self.namesrvs, namespace, key))

    def wipe_write_perm_of_broker(self, namesrv_addr: str, broker_name: str) -> int:
        """Take write permission from a broker's topics in one name server; how many topics (``wipeWritePerm``)."""
        return self.run(adminapi.wipe_write_perm_of_broker(namesrv_addr, broker_name))

    def add_write_perm_of_broker(self, namesrv_addr: str, broker_name: str) -> int:
        """Give write permission back to a broker's topics in one name server; how many topics (``addWritePerm``)."""
        return self.run(adminapi.add_write_perm_of_broker(namesrv_addr, broker_name))

    # ------------------------------------------------------------ subscription groups and producers
    def create_and_update_subscription_group_config(self, addr: str, config: SubscriptionGroupConfig) -> None:
        """Create or update a subscription group on one broker (mqadmin ``updateSubGroup``)."""
        self.run(adminapi.create_and_update_subscription_group_config(addr, config))

    def delete_subscription_group(self, addr: str, group: str, remove_offset: bool = False) -> None:
        """Delete a subscription group (and, with *remove_offset*, its offsets) on one broker."""
        self.run(adminapi.delete_subscription_group(addr, group, remove_offset))

    def examine_producer_connection_info(self, group: str, topic: str) -> ProducerConnection:
        """The producers of *group* connected to the brokers of *topic* (mqadmin ``producerConnection``)."""
        return self.run(adminapi.examine_producer_connection_info(group, topic))

    def set_message_request_mode(self, addr: str, topic: str, group: str, mode: str,
                                 pop_share_queue_num: int = 0) -> None:
        """How *group* consumes *topic* on one 5.x broker: ``"PULL"`` or ``"POP"`` (mqadmin ``setConsumeMode``)."""
        self.run(adminapi.set_message_request_mode(addr, topic, group, mode, pop_share_queue_num))

    # ------------------------------------------------------------ ACL 1.0 accounts
    def create_and_update_plain_access_config(self, addr: str, config: CreateAccessConfigRequestHeader) -> None:
        """Create or update an account in the broker's ACL file (mqadmin ``updateAclConfig``)."""
        self.run(adminapi.create_and_update_plain_access_config(addr, config))

    def delete_plain_access_config(self, addr: str, access_key: str) -> None:
        """Delete an account from the broker's ACL file (mqadmin ``deleteAclConfig``)."""
        self.run(adminapi.delete_plain_access_config(addr, access_key))

    def update_global_white_addrs_config(self, addr: str, global_white_addrs: str,
                                         acl_file_full_path: str | None = None) -> None:
        """Replace the global white addresses of the broker's ACL file (mqadmin ``updateGlobalWhiteAddr``)."""
        self.run(adminapi.update_global_white_addrs_config(addr, global_white_addrs, acl_file_full_path))

    def examine_broker_cluster_acl_version_info(self, addr: str) -> AclVersionInfo:
        """The broker's ACL files and their versions (mqadmin ``clusterAclConfigVersion``)."""
        return self.run(adminapi.examine_broker_cluster_acl_version_info(addr))
