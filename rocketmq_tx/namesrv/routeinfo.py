# -*- test-case-name: rocketmq_tx.namesrv.test.test_routeinfo -*-
"""
:class:`RouteInfoManager`: the name server's whole state, and nothing else.

Five tables, as in Java:

* ``topic_queue_table``: topic -> broker name -> :class:`QueueData`;
* ``broker_addr_table``: broker name -> :class:`BrokerData` (addresses by broker id);
* ``cluster_addr_table``: cluster -> broker names;
* ``broker_live_table``: broker address -> :class:`BrokerLiveInfo` (last heartbeat,
  DataVersion, connection, HA address);
* ``filter_server_table``: broker address -> filter server addresses.

Pure state: no reactor, no I/O; time comes from the injected ``now`` (milliseconds) and a
connection is any hashable object. One method per Java operation, with Java's semantics
(including its quirks, noted where they matter). Everything runs on the reactor thread,
so Java's read-write lock has no counterpart.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field

from rocketmq_tx.common.route import (
    MASTER_ID,
    BrokerData,
    DataVersion,
    PermName,
    QueueData,
    TopicConfig,
    TopicRouteData,
    TopicSysFlag,
)

__all__ = ["RouteInfoManager", "BrokerLiveInfo", "RegisterBrokerResult", "BROKER_CHANNEL_EXPIRED_TIME"]

#: A broker silent this long (ms) is removed by the scan (Java ``BROKER_CHANNEL_EXPIRED_TIME``).
BROKER_CHANNEL_EXPIRED_TIME = 1000 * 60 * 2


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(slots=True)
class BrokerLiveInfo:
    """When a broker (by address) was last heard of, and what it said."""

    last_update_timestamp: int
    data_version: DataVersion
    channel: Hashable | None
    ha_server_addr: str | None
    #: 5.x: the broker's own expiry (``heartbeatTimeoutMillis`` of its registration; a broker
    #: in ``enableSlaveActingMaster`` mode sends 10 s and keeps alive with BROKER_HEARTBEAT);
    #: ``None``: the name server's ``expired_time``
    heartbeat_timeout_millis: int | None = None


@dataclass(slots=True)
class RegisterBrokerResult:
    """For a slave: its live master's HA and broker addresses; for a master, what became of its topics."""

    ha_server_addr: str | None = None
    master_addr: str | None = None
    #: the registration's topics were (or are being) applied to the route table
    topics_applied: bool = False
    #: topics past ``apply_limit``, for :meth:`RouteInfoManager.apply_topic_configs` in later turns
    pending_topics: list[TopicConfig] = field(default_factory=list)


class RouteInfoManager:
    """
    :param now: milliseconds since the epoch (inject a clock in tests).
    :param expired_time: ms of silence after which :meth:`scan_not_active_broker` drops a broker.
    :param on_close_channel: called with a broker's connection when the scan expires it
        (the server closes it, as Java's ``RemotingUtil.closeChannel``).
    """

    def __init__(
        self,
        now: Callable[[], int] = _now_ms,
        expired_time: int = BROKER_CHANNEL_EXPIRED_TIME,
        on_close_channel: Callable[[Hashable], object] | None = None,
    ) -> None:
        self.now = now
        self.expired_time = expired_time
        self.on_close_channel = on_close_channel
        self.topic_queue_table: dict[str, dict[str, QueueData]] = {}
        self.broker_addr_table: dict[str, BrokerData] = {}
        self.cluster_addr_table: dict[str, set[str]] = {}
        self.broker_live_table: dict[str, BrokerLiveInfo] = {}
        self.filter_server_table: dict[str, list[str]] = {}
        #: Bumped by every change that can alter a route, so readers may cache derived bytes.
        self.generation = 0

    # -- registration ------------------------------------------------------------

    def register_broker(
        self,
        cluster_name: str,
        broker_addr: str,
        broker_name: str,
        broker_id: int,
        ha_server_addr: str | None,
        data_version: DataVersion,
        topic_config_table: dict[str, TopicConfig] | None,
        filter_server_list: list[str] | None,
        channel: Hashable | None,
        enable_acting_master: bool | None = None,
        apply_limit: int | None = None,
        heartbeat_timeout_millis: int | None = None,
    ) -> RegisterBrokerResult:
        """
        REGISTER_BROKER: add or refresh a broker and, from a master, its topics. With
        *apply_limit*, at most that many topics are applied now and the rest are left in
        the result's ``pending_topics`` (a registration of 450,000 topics costs the reactor
        about a second).
        """
        self.generation += 1
        result = RegisterBrokerResult()
        self.cluster_addr_table.setdefault(cluster_name, set()).add(broker_name)
        register_first = False
        broker_data = self.broker_addr_table.get(broker_name)
        if broker_data is None:
            register_first = True
            broker_data = self.broker_addr_table[broker_name] = BrokerData(cluster_name, broker_name, {})
        if enable_acting_master is not None:
            broker_data.enable_acting_master = enable_acting_master
        addrs = broker_data.broker_addrs
        # A slave switching to master (or back) on the same address keeps one record.
        for other_id in [i for i, a in addrs.items() if a == broker_addr and i != broker_id]:
            del addrs[other_id]
        old_addr = addrs.get(broker_id)
        addrs[broker_id] = broker_addr
        register_first = register_first or old_addr is None

        if topic_config_table is not None and broker_id == MASTER_ID:
            if self.is_broker_topic_config_changed(broker_addr, data_version) or register_first:
                result.topics_applied = True
                configs: Iterable[TopicConfig] = topic_config_table.values()
                if apply_limit is not None and len(topic_config_table) > apply_limit:
                    listed = list(topic_config_table.values())
                    configs, result.pending_topics = listed[:apply_limit], listed[apply_limit:]
                for config in configs:
                    self._create_and_update_queue_data(broker_name, config)

        self.broker_live_table[broker_addr] = BrokerLiveInfo(self.now(), data_version, channel, ha_server_addr,
                                                             heartbeat_timeout_millis)
        if filter_server_list is not None:
            if filter_server_list:
                self.filter_server_table[broker_addr] = list(filter_server_list)
            else:
                self.filter_server_table.pop(broker_addr, None)

        if broker_id != MASTER_ID:
            master_addr = addrs.get(MASTER_ID)
            if master_addr is not None:
                master = self.broker_live_table.get(master_addr)
                if master is not None:
                    result.ha_server_addr = master.ha_server_addr
                    result.master_addr = master_addr
        return result

    def register_topic(self, topic: str, queue_datas: list[QueueData]) -> bool:
        """
        REGISTER_TOPIC_IN_NAMESRV (5.x): one topic's queues from the brokers that serve it. Every
        broker name must be registered; at the first unknown one Java stops, so a new topic is
        not created at all while an existing topic keeps the entries put before it. Returns
        whether every queue data was applied.
        """
        if not queue_datas:
            return True
        self.generation += 1
        existing = self.topic_queue_table.get(topic)
        target = existing if existing is not None else {}
        for queue_data in queue_datas:
            if queue_data.broker_name not in self.broker_addr_table:
                return False
            target[queue_data.broker_name] = queue_data
        if existing is None:
            self.topic_queue_table[topic] = target
        return True

    def get_broker_member_group(self, broker_name: str) -> dict[int, str]:
        """GET_BROKER_MEMBER_GROUP (5.x): the addresses of *broker_name* by broker id (a copy)."""
        broker_data = self.broker_addr_table.get(broker_name)
        return dict(broker_data.broker_addrs) if broker_data is not None else {}

    def apply_topic_configs(self, broker_name: str, configs: Iterable[TopicConfig]) -> None:
        """The rest of a registration's topics (:class:`RegisterBrokerResult` ``pending_topics``)."""
        self.generation += 1
        for config in configs:
            self._create_and_update_queue_data(broker_name, config)

    def _create_and_update_queue_data(self, broker_name: str, config: TopicConfig) -> None:
        queue_data = QueueData(broker_name, config.read_queue_nums, config.write_queue_nums, config.perm,
                               config.topic_sys_flag)
        self.topic_queue_table.setdefault(config.topic_name, {})[broker_name] = queue_data

    def is_broker_topic_config_changed(self, broker_addr: str, data_version: DataVersion) -> bool:
        """``True`` unless the broker is known with exactly this DataVersion."""
        previous = self.query_broker_topic_config(broker_addr)
        return previous is None or not previous.same_as(data_version)

    def query_broker_topic_config(self, broker_addr: str) -> DataVersion | None:
        """The DataVersion the broker last registered with."""
        live = self.broker_live_table.get(broker_addr)
        return live.data_version if live is not None else None

    def update_broker_info_update_timestamp(self, broker_addr: str, timestamp: int | None = None,
                                            cluster_name: str | None = None) -> None:
        """
        Keep a broker alive (QUERY_DATA_VERSION with nothing changed, BROKER_HEARTBEAT). With
        *cluster_name* (5.x keys live brokers by cluster and address), only a broker of that cluster.
        """
        live = self.broker_live_table.get(broker_addr)
        if live is None:
            return
        if cluster_name is not None and not self._in_cluster(cluster_name, broker_addr):
            return
        live.last_update_timestamp = self.now() if timestamp is None else timestamp

    def _in_cluster(self, cluster_name: str, broker_addr: str) -> bool:
        for name in self.cluster_addr_table.get(cluster_name) or ():
            broker_data = self.broker_addr_table.get(name)
            if broker_data is not None and broker_addr in broker_data.broker_addrs.values():
                return True
        return False

    def unregister_broker(self, cluster_name: str, broker_addr: str, broker_name: str, broker_id: int) -> None:
        """UNREGISTER_BROKER: forget one broker id; the name goes when its last address does."""
        self.generation += 1
        self.broker_live_table.pop(broker_addr, None)
        self.filter_server_table.pop(broker_addr, None)
        broker_data = self.broker_addr_table.get(broker_name)
        if broker_data is None:
            return
        broker_data.broker_addrs.pop(broker_id, None)
        if broker_data.broker_addrs:
            return
        del self.broker_addr_table[broker_name]
        names = self.cluster_addr_table.get(cluster_name)
        if names is not None:
            names.discard(broker_name)
            if not names:
                del self.cluster_addr_table[cluster_name]
        self._remove_topic_by_broker_name(broker_name)

    def _remove_topic_by_broker_name(self, broker_name: str) -> None:
        for topic in list(self.topic_queue_table):
            queues = self.topic_queue_table[topic]
            queues.pop(broker_name, None)
            if not queues:
                del self.topic_queue_table[topic]

    # -- liveness ---------------------------------------------------------------

    def scan_not_active_broker(self) -> int:
        """Drop every broker silent for longer than its expiry; returns how many."""
        now = self.now()
        expired = [(addr, live) for addr, live in self.broker_live_table.items()
                   if live.last_update_timestamp + (self.expired_time if live.heartbeat_timeout_millis is None
                                                    else live.heartbeat_timeout_millis) < now]
        for addr, live in expired:
            if live.channel is not None and self.on_close_channel is not None:
                self.on_close_channel(live.channel)
            self.broker_live_table.pop(addr, None)
            self._destroy_broker_addr(addr)
        return len(expired)

    def on_channel_destroy(self, channel: Hashable) -> str | None:
        """
        A connection closed: remove the broker that registered over it, at once.
        Returns the broker address removed, if any.
        """
        for addr, live in self.broker_live_table.items():
            if live.channel is channel:
                self._destroy_broker_addr(addr)
                return addr
        return None

    def _destroy_broker_addr(self, broker_addr: str) -> None:
        self.generation += 1
        self.broker_live_table.pop(broker_addr, None)
        self.filter_server_table.pop(broker_addr, None)
        found_name = None
        remove_name = False
        for name, broker_data in list(self.broker_addr_table.items()):
            for broker_id, addr in list(broker_data.broker_addrs.items()):
                if addr == broker_addr:
                    found_name = name
                    del broker_data.broker_addrs[broker_id]
                    break
            if not broker_data.broker_addrs:
                remove_name = True
                del self.broker_addr_table[name]
            if found_name is not None:
                break
        if found_name is not None and remove_name:
            for cluster in list(self.cluster_addr_table):
                names = self.cluster_addr_table[cluster]
                if found_name in names:
                    names.discard(found_name)
                    if not names:
                        del self.cluster_addr_table[cluster]
                    break
            self._remove_topic_by_broker_name(found_name)

    # -- discovery --------------------------------------------------------------

    def pickup_topic_route_data(self, topic: str) -> TopicRouteData | None:
        """The route of *topic*, or ``None`` when no live broker serves it."""
        queues = self.topic_queue_table.get(topic)
        if not queues:
            return None
        route = TopicRouteData(queue_datas=[QueueData(q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm,
                                                      q.topic_sys_flag) for q in queues.values()])
        for name in queues:
            broker_data = self.broker_addr_table.get(name)
            if broker_data is None:
                continue
            clone = BrokerData(broker_data.cluster, broker_data.broker_name, dict(broker_data.broker_addrs),
                               broker_data.enable_acting_master)
            route.broker_datas.append(clone)
            for addr in clone.broker_addrs.values():
                servers = self.filter_server_table.get(addr)
                if servers is not None:
                    route.filter_server_table[addr] = list(servers)
        return route if route.broker_datas else None

    def get_all_cluster_info(self) -> tuple[dict[str, BrokerData], dict[str, set[str]]]:
        """ClusterInfo's two tables (live views; encode before yielding the reactor)."""
        return self.broker_addr_table, self.cluster_addr_table

    def get_all_topic_list(self) -> list[str]:
        return list(self.topic_queue_table)

    def delete_topic(self, topic: str, cluster_name: str | None = None) -> None:
        """DELETE_TOPIC_IN_NAMESRV: everywhere, or only from one cluster's brokers."""
        self.generation += 1
        if not cluster_name:
            self.topic_queue_table.pop(topic, None)
            return
        queues = self.topic_queue_table.get(topic)
        names = self.cluster_addr_table.get(cluster_name)
        if queues is None or not names:
            return
        for name in names:
            queues.pop(name, None)
        if not queues:
            del self.topic_queue_table[topic]

    def wipe_write_perm_of_broker(self, broker_name: str) -> int:
        """Remove write permission from every topic of *broker_name*; returns the topic count."""
        return self._operate_write_perm(broker_name, lambda perm: perm & ~PermName.PERM_WRITE)

    def add_write_perm_of_broker(self, broker_name: str) -> int:
        """Give every topic of *broker_name* read and write permission (Java sets exactly RW)."""
        return self._operate_write_perm(broker_name, lambda perm: PermName.PERM_READ | PermName.PERM_WRITE)

    def _operate_write_perm(self, broker_name: str, change: Callable[[int], int]) -> int:
        self.generation += 1
        count = 0
        for queues in self.topic_queue_table.values():
            queue_data = queues.get(broker_name)
            if queue_data is not None:
                queue_data.perm = change(queue_data.perm)
                count += 1
        return count

    def get_system_topic_list(self) -> tuple[list[str], str | None]:
        """Cluster and broker names (they are topics too), and one broker address."""
        topics: list[str] = []
        for cluster, names in self.cluster_addr_table.items():
            topics.append(cluster)
            topics.extend(names)
        broker_addr = None
        for broker_data in self.broker_addr_table.values():
            if broker_data.broker_addrs:
                broker_addr = next(iter(broker_data.broker_addrs.values()))
                break
        return _unique(topics), broker_addr

    def get_topics_by_cluster(self, cluster: str) -> list[str]:
        names = self.cluster_addr_table.get(cluster) or set()
        return _unique(topic for name in names for topic, queues in self.topic_queue_table.items() if name in queues)

    def get_unit_topics(self) -> list[str]:
        return self._topics_where(lambda q: TopicSysFlag.has_unit_flag(q.topic_sys_flag))

    def get_has_unit_sub_topic_list(self) -> list[str]:
        return self._topics_where(lambda q: TopicSysFlag.has_unit_sub_flag(q.topic_sys_flag))

    def get_has_unit_sub_un_unit_topic_list(self) -> list[str]:
        return self._topics_where(lambda q: not TopicSysFlag.has_unit_flag(q.topic_sys_flag)
                                  and TopicSysFlag.has_unit_sub_flag(q.topic_sys_flag))

    def _topics_where(self, condition: Callable[[QueueData], bool]) -> list[str]:
        # Java looks at one queue data per topic only.
        return [topic for topic, queues in self.topic_queue_table.items()
                if queues and condition(next(iter(queues.values())))]


def _unique(items: Iterable[str]) -> list[str]:
    # TopicList is a Set in Java.
    return list(dict.fromkeys(items))
