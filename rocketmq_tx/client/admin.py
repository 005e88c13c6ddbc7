# -*- test-case-name: rocketmq_tx.client.test.test_admin -*-
"""
:class:`MQAdmin`: Java's ``DefaultMQAdminExt`` on Twisted. Every method returns a
Deferred; the operations are the plans of :mod:`rocketmq_tx.remoting.adminapi`, shared
with the blocking :class:`~rocketmq_tx.blocking.admin.BlockingAdmin`, run over an
:class:`~rocketmq_tx.client.instance.MQClientInstance` (name-server fail-over, pooled
connections). Requests to several brokers go out at once.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from twisted.internet.defer import Deferred

from rocketmq_tx.acl import SessionCredentials
from rocketmq_tx.client.instance import InstanceUser, MQClientInstance
from rocketmq_tx.common.route import TopicConfig
from rocketmq_tx.remoting import adminapi
from rocketmq_tx.remoting.adminapi import Plan
from rocketmq_tx.tlsconfig import TlsSettings

__all__ = ["MQAdmin"]

T = TypeVar("T")


class MQAdmin(InstanceUser):
    """
    The admin operations of issue 6; each method's Deferred fires with the value its
    blocking twin returns, or fails with the same
    :class:`~rocketmq_tx.remoting.errors.MQBrokerError` /
    :class:`~rocketmq_tx.remoting.api.MQClientError` / remoting error.

    :param namesrv_addr: ``"a:9876;b:9876"`` (ignored with *instance*).
    :param reactor: the reactor (default: the global one).
    :param instance: share a client instance with producers and consumers.
    :param timeout: seconds per request (consumer stats and message queries get three
        times as much, as in Java).
    :param access_key: ACL 1.0: sign every request with this AccessKey and *secret_key*
        (and *security_token*, if any); or give one ``credentials``
        (:class:`~rocketmq_tx.acl.SessionCredentials`). With a shared *instance*, give them
        to the instance.
    """

    def __init__(self, namesrv_addr: str = "", reactor: Any = None, *, instance: MQClientInstance | None = None,
                 timeout: float = 3.0, tls: TlsSettings | None = None,
                 access_key: str | None = None, secret_key: str | None = None, security_token: str | None = None,
                 credentials: SessionCredentials | None = None) -> None:
        super().__init__(namesrv_addr, reactor, instance=instance, timeout=timeout, tls=tls, access_key=access_key,
                         secret_key=secret_key, security_token=security_token, credentials=credentials)
        self.timeout = timeout

    def start(self) -> None:
        """Nothing to start: an admin has no group to announce and needs no timers."""

    @property
    def namesrvs(self) -> list[str]:
        return list(self.instance.namesrvs.addresses)

    def run(self, plan: Plan[T]) -> Deferred:
        """Run any plan of :mod:`rocketmq_tx.remoting.adminapi`; the calls of a list go out together."""
        return self.instance.run(plan, self.timeout)

    # ------------------------------------------------------------ cluster and topics
    def examine_broker_cluster_info(self) -> Deferred:
        """Deferred[ClusterInfo]: brokers by name and broker names by cluster."""
        return self.run(adminapi.examine_broker_cluster_info())

    def fetch_master_addr_by_cluster_name(self, cluster: str) -> Deferred:
        """Deferred[list[str]]: the master address of each broker of *cluster*."""
        return self.run(adminapi.fetch_master_addr_by_cluster_name(cluster))

    def examine_topic_route_info(self, topic: str) -> Deferred:
        """Deferred[TopicRouteData], fresh from the name server."""
        return self.run(adminapi.examine_topic_route_info(topic))

    def fetch_all_topic_list(self) -> Deferred:
        """Deferred[TopicList]: every topic the name server routes."""
        return self.run(adminapi.fetch_all_topic_list())

    def create_and_update_topic_config(self, addr: str, config: TopicConfig) -> Deferred:
        """Create or update a topic on one broker."""
        return self.run(adminapi.create_and_update_topic_config(addr, config))

    def create_topic_in_cluster(self, cluster: str, config: TopicConfig) -> Deferred:
        """Deferred[list[str]]: create or update a topic on every master of *cluster*."""
        return self.run(adminapi.create_topic_in_cluster(cluster, config, self.namesrvs))

    def delete_topic_in_broker(self, addrs: Iterable[str], topic: str) -> Deferred:
        return self.run(adminapi.delete_topic_in_broker(list(addrs), topic))

    def delete_topic_in_name_server(self, addrs: Iterable[str] | None, topic: str,
                                    cluster: str | None = None) -> Deferred:
        """Drop *topic* from the routes of *addrs* (``None``: every configured name server)."""
        return self.run(adminapi.delete_topic_in_name_server(self.namesrvs if addrs is None else list(addrs), topic,
                                                             cluster))

    def delete_topic(self, topic: str, cluster: str) -> Deferred:
        """Delete *topic* from *cluster*'s brokers and every name server."""
        return self.run(adminapi.delete_topic(topic, cluster, self.namesrvs))

    def examine_topic_stats(self, topic: str) -> Deferred:
        """Deferred[TopicStatsTable]: min/max offset and last store time per queue."""
        return self.run(adminapi.examine_topic_stats(topic))

    # ------------------------------------------------------------ consumers
    def examine_consume_stats(self, group: str, topic: str | None = None) -> Deferred:
        """Deferred[ConsumeStats]: the group's progress per queue; ``compute_total_diff()`` is the lag."""
        return self.run(adminapi.examine_consume_stats(group, topic))

    def examine_consumer_connection_info(self, group: str) -> Deferred:
        """Deferred[ConsumerConnection]: the group's connected clients and subscriptions."""
        return self.run(adminapi.examine_consumer_connection_info(group))

    # ------------------------------------------------------------ messages
    def view_message(self, msg_id: str, topic: str | None = None) -> Deferred:
        """Deferred[MessageExt] by offsetMsgId; with *topic* a UNIQ_KEY works too."""
        return self.run(adminapi.view_message(msg_id, topic))

    def query_message(self, topic: str, key: str, max_num: int = 32, begin_ms: int = 0,
                      end_ms: int | None = None) -> Deferred:
        """Deferred[QueryResult]: messages with *key* in ``KEYS``."""
        return self.run(adminapi.query_message(topic, key, max_num, begin_ms, end_ms))

    def query_message_by_uniq_key(self, topic: str, key: str) -> Deferred:
        """Deferred[MessageExt]: the message whose ``UNIQ_KEY`` is *key*."""
        return self.run(adminapi.query_message_by_uniq_key(topic, key))

    # ------------------------------------------------------------ offsets
    def reset_offset_by_timestamp(self, topic: str, group: str, timestamp_ms: int, *, force: bool = True) -> Deferred:
        """Deferred[dict[MessageQueue, int]]: the brokers reset the group and tell its running consumers."""
        return self.run(adminapi.reset_offset_by_timestamp(topic, group, timestamp_ms, force))

    def reset_offset_by_timestamp_old(self, topic: str, group: str, timestamp_ms: int, *,
                                      force: bool = True) -> Deferred:
        """Deferred[list[RollbackStats]]: the admin commits the offsets itself."""
        return self.run(adminapi.reset_offset_by_timestamp_old(topic, group, timestamp_ms, force))

    def reset_offset_new(self, topic: str, group: str, timestamp_ms: int) -> Deferred:
        """Deferred[dict[MessageQueue, int]]: mqadmin ``resetOffsetByTime``."""
        return self.run(adminapi.reset_offset_new(topic, group, timestamp_ms))
