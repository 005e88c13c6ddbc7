# -*- test-case-name: rocketmq_tx.common.test.test_clientroute -*-
"""
Client-side routing without I/O, shared by the Twisted and the blocking clients: the
name-server list and its fail-over order, the route cache (:class:`RouteTable`), a
topic's queues for publishing and for consuming, the producer's queue selection (Java
``TopicPublishInfo`` and ``MQFaultStrategy`` without latency tracking), and client ids.
"""

from __future__ import annotations

import itertools
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rocketmq_tx.common.message import MessageQueue
from rocketmq_tx.common.route import MASTER_ID, PermName, TopicRouteData

__all__ = [
    "POLL_NAME_SERVER_INTERVAL",
    "NameServerList",
    "RouteTable",
    "TopicPublishInfo",
    "publish_info",
    "select_by_hash",
    "subscribe_queues",
    "master_addresses",
    "broker_address",
    "FindBrokerResult",
    "PullFromWhichNode",
    "make_client_id",
    "local_ip",
]


class NameServerList:
    """
    The name servers of ``"a:9876;b:9876"``. Requests go to the one that last answered;
    when it fails the next is tried (Java keeps a chosen name server until its channel
    fails, then moves round the list).
    """

    def __init__(self, addresses: str | list[str]) -> None:
        if isinstance(addresses, str):
            addresses = [a.strip() for a in addresses.replace(",", ";").split(";")]
        self.addresses: list[str] = [a for a in addresses if a]
        if not self.addresses:
            raise ValueError("no name server address given")
        self._current = 0

    def ordered(self) -> list[str]:
        """Every address, the current one first: the order to try them in."""
        n = len(self.addresses)
        return [self.addresses[(self._current + i) % n] for i in range(n)]

    def succeeded(self, addr: str) -> None:
        """Stick to *addr* for the following requests."""
        if addr in self.addresses:
            self._current = self.addresses.index(addr)

    def __getstate__(self) -> dict[str, object]:
        return {"addresses": self.addresses, "_current": 0}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)


#: Java ``pollNameServerInterval``, seconds: how long a route is used before it is read again.
POLL_NAME_SERVER_INTERVAL = 30.0


class RouteTable:
    """
    One client's routes (Java ``MQClientInstance``'s ``topicRouteTable`` and
    ``brokerAddrTable``): the name servers, each topic's last route and when it was last
    read, and the brokers those routes name. Plain state on an injected clock; the plans of
    :mod:`rocketmq_tx.remoting.sendapi` read and fill it.

    A route is *fresh* for :attr:`interval` seconds after it was read, or after a read of it
    failed: Java re-reads every route every 30 s and keeps the old one when that fails, and
    a client without a timer (the blocking one) gets the same by re-reading on first use.

    :ivar brokers: broker name -> {broker id -> address}, from the current routes only (a
        broker that left every route is gone, Java ``cleanOfflineBroker``).
    :ivar watched: topics whose routes a timer keeps fresh (the Twisted client's 30 s round).
    """

    def __init__(self, namesrvs: NameServerList | str, *, now: Callable[[], float] = time.monotonic,
                 interval: float = POLL_NAME_SERVER_INTERVAL) -> None:
        self.namesrvs = namesrvs if isinstance(namesrvs, NameServerList) else NameServerList(namesrvs)
        self.now = now
        self.interval = interval
        self.routes: dict[str, TopicRouteData] = {}
        self.brokers: dict[str, dict[int, str]] = {}
        self.watched: set[str] = set()
        self._read_at: dict[str, float] = {}

    def cached(self, topic: str) -> TopicRouteData | None:
        """*topic*'s last route, however old."""
        return self.routes.get(topic)

    def fresh(self, topic: str) -> TopicRouteData | None:
        """*topic*'s route if it was read (or its re-read failed) less than :attr:`interval` ago."""
        route = self.routes.get(topic)
        if route is not None and self.now() - self._read_at.get(topic, float("-inf")) < self.interval:
            return route
        return None

    def put(self, topic: str, route: TopicRouteData) -> None:
        """*route* was just read for *topic*."""
        self.routes[topic] = route
        self._read_at[topic] = self.now()
        brokers: dict[str, dict[int, str]] = {}
        for known in list(self.routes.values()):  # a copy: another thread may put beside us
            for data in known.broker_datas:
                brokers.setdefault(data.broker_name, {}).update(data.broker_addrs)
        self.brokers = brokers

    def keep(self, topic: str) -> None:
        """A re-read of *topic* failed: its last route stays fresh for another interval."""
        if topic in self.routes:
            self._read_at[topic] = self.now()

    def master(self, broker_name: str) -> str | None:
        """The master address of *broker_name*, if a route names it."""
        return self.brokers.get(broker_name, {}).get(MASTER_ID)

    def master_addresses(self) -> list[str]:
        """Every master address the routes name, sorted."""
        return sorted({addrs[MASTER_ID] for addrs in self.brokers.values() if MASTER_ID in addrs})

    def find_broker_address_in_subscribe(self, broker_name: str, broker_id: int,
                                         only_this_broker: bool) -> FindBrokerResult | None:
        """
        Java 4.9 ``MQClientInstance.findBrokerAddressInSubscribe``: *broker_id*'s address of
        *broker_name*; for a slave id not there, the next id's; else, unless
        *only_this_broker*, the lowest id the routes name (Java's first entry of a small-keyed
        ``HashMap``), so a consumer reads from a slave while the master is out of the route.
        """
        addrs = self.brokers.get(broker_name)
        if not addrs:
            return None
        slave = broker_id != MASTER_ID
        addr = addrs.get(broker_id)
        if addr is None and slave:
            addr = addrs.get(broker_id + 1)
        if addr is None:
            if only_this_broker:
                return None
            first = min(addrs)
            addr, slave = addrs[first], first != MASTER_ID
        return FindBrokerResult(addr, slave)

    def all_addresses(self) -> list[str]:
        """Every broker address (masters and slaves) the routes name, sorted."""
        return sorted({addr for addrs in self.brokers.values() for addr in addrs.values()})

    def watch(self, topic: str) -> None:
        """Keep *topic*'s route fresh from now on (where a timer does that)."""
        self.watched.add(topic)


@dataclass(frozen=True, slots=True)
class FindBrokerResult:
    """Java ``FindBrokerResult``: a broker address and whether it is a slave's."""

    broker_addr: str
    slave: bool


class PullFromWhichNode:
    """
    Java 4.9 ``PullAPIWrapper``'s ``pullFromWhichNodeTable``: the broker id each queue's last
    pull answer suggested (``suggestWhichBrokerId``), where its next pull goes; with
    :attr:`connect_broker_by_user`, always :attr:`default_broker_id`. Bounded by the
    queues the consumer ever pulled, as Java's.
    """

    def __init__(self) -> None:
        self.table: dict[MessageQueue, int] = {}
        self.connect_broker_by_user = False
        self.default_broker_id = MASTER_ID

    def update(self, mq: MessageQueue, broker_id: int) -> None:
        """A pull answer of *mq* suggested *broker_id*."""
        self.table[mq] = broker_id

    def recalculate(self, mq: MessageQueue) -> int:
        """The broker id to pull *mq* from next (the master until an answer says otherwise)."""
        if self.connect_broker_by_user:
            return self.default_broker_id
        return self.table.get(mq, MASTER_ID)


def broker_address(route: TopicRouteData, broker_name: str, *, master_only: bool = True) -> str | None:
    """The address of *broker_name* in *route* (its master, else a slave unless *master_only*)."""
    for data in route.broker_datas:
        if data.broker_name == broker_name:
            if master_only:
                return data.broker_addrs.get(MASTER_ID)
            return data.select_broker_addr()
    return None


def master_addresses(route: TopicRouteData) -> dict[str, str]:
    """Broker name to master address, for the brokers of *route* that have a master."""
    return {b.broker_name: b.broker_addrs[MASTER_ID] for b in route.broker_datas if MASTER_ID in b.broker_addrs}


def subscribe_queues(topic: str, route: TopicRouteData) -> list[MessageQueue]:
    """The readable queues (``readQueueNums`` per broker), sorted (Java ``topicRouteData2TopicSubscribeInfo``)."""
    queues = []
    for qd in route.queue_datas:
        if PermName.is_readable(qd.perm):
            queues += [MessageQueue(topic, qd.broker_name, i) for i in range(qd.read_queue_nums)]
    return sorted(queues)


@dataclass(slots=True)
class TopicPublishInfo:
    """
    The writable queues of a topic (Java ``TopicPublishInfo``). :meth:`select_queue` goes
    round them; after a failure on a broker the retry avoids that broker if another exists.
    """

    topic: str
    queues: list[MessageQueue] = field(default_factory=list)
    order_topic: bool = False
    _counter: itertools.count = field(default_factory=lambda: itertools.count(int.from_bytes(os.urandom(2), "big")))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def ok(self) -> bool:
        """``True`` when there is a queue to send to."""
        return bool(self.queues)

    def select_queue(self, last_broker: str | None = None) -> MessageQueue:
        """
        The next queue in turn; with *last_broker* (the broker the previous attempt
        failed on) the first one on another broker, if there is any.

        :raises LookupError: no writable queue.
        """
        if not self.queues:
            raise LookupError(f"no writable queue for topic {self.topic}")
        n = len(self.queues)
        with self._lock:
            start = next(self._counter)
        if last_broker is not None:
            for i in range(n):
                mq = self.queues[(start + i) % n]
                if mq.broker_name != last_broker:
                    return mq
        return self.queues[start % n]

    def __getstate__(self) -> dict[str, object]:
        return {"topic": self.topic, "queues": self.queues, "order_topic": self.order_topic}

    def __setstate__(self, state: dict[str, Any]) -> None:
        TopicPublishInfo.__init__(self, **state)


def select_by_hash(queues: list[MessageQueue], msg: object, arg: object) -> MessageQueue:
    """
    A queue selector for ordered sends (Java ``SelectMessageQueueByHash``): the same *arg*
    (a sharding key, an order id) always picks the same queue. Strings hash as in Java.
    """
    from rocketmq_tx.common.messagecodec import java_string_hash

    value = java_string_hash(arg) if isinstance(arg, str) else hash(arg)
    # Java's remainder truncates toward zero and then takes abs: that is |h| mod n.
    return queues[abs(value) % len(queues)]


def publish_info(topic: str, route: TopicRouteData, *, template_queue_nums: int | None = None) -> TopicPublishInfo:
    """
    Java ``topicRouteData2TopicPublishInfo``: for an ordered topic (``orderTopicConf``
    ``"broker-a:4;broker-b:4"``) those queues; otherwise ``writeQueueNums`` queues of every
    writable broker that has a master, in route order.

    :param template_queue_nums: *route* is the auto-create template's (``TBW102``): use at
        most this many queues per broker, as Java does for a topic that does not exist yet.
    """
    if route.order_topic_conf:
        queues = []
        for part in route.order_topic_conf.split(";"):
            name, _, count_text = part.partition(":")
            if name and count_text.isdigit():
                queues += [MessageQueue(topic, name, i) for i in range(int(count_text))]
        return TopicPublishInfo(topic, queues, True)
    masters = master_addresses(route)
    queues = []
    for qd in sorted(route.queue_datas, key=lambda q: q.broker_name):
        if PermName.is_writeable(qd.perm) and qd.broker_name in masters:
            count = qd.write_queue_nums
            if template_queue_nums is not None:
                count = min(count, template_queue_nums)
            queues += [MessageQueue(topic, qd.broker_name, i) for i in range(count)]
    return TopicPublishInfo(topic, queues)


def local_ip() -> str:
    """The address this host reaches the network from (Java ``RemotingUtil.getLocalAddress``, roughly)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))  # TEST-NET-1: nothing is sent for a UDP connect
            return str(s.getsockname()[0])
    except OSError:
        return "127.0.0.1"


def make_client_id(ip: str | None = None, instance_name: str | None = None) -> str:
    """
    ``ip@instanceName``; the default instance name is ``pid#nanotime`` (Java's fix for two
    containers sharing pid 1 on one host).
    """
    if instance_name is None or instance_name == "DEFAULT":
        instance_name = f"{os.getpid()}#{time.monotonic_ns()}"
    return f"{ip or local_ip()}@{instance_name}"
