"""Tests for the client-side routing helpers."""

from __future__ import annotations

import pickle
import re
from collections import Counter

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.common.clientroute import (
    FindBrokerResult,
    NameServerList,
    PullFromWhichNode,
    RouteTable,
    make_client_id,
    publish_info,
    select_by_hash,
    subscribe_queues,
)
from rocketmq_tx.common.message import MessageQueue
from rocketmq_tx.common.route import BrokerData, QueueData, TopicRouteData

ROUTE = TopicRouteData(
    [QueueData("broker-b", 2, 3, 6), QueueData("broker-a", 4, 2, 6), QueueData("broker-c", 2, 2, 4)],
    [BrokerData("C", "broker-a", {0: "a:1"}), BrokerData("C", "broker-b", {0: "b:1"}),
     BrokerData("C", "broker-c", {0: "c:1"})],
)


class NameServerListTests(SynchronousTestCase):
    def test_order_and_stickiness(self) -> None:
        servers = NameServerList("a:1; b:2;c:3")
        self.assertEqual(servers.ordered(), ["a:1", "b:2", "c:3"])
        servers.succeeded("b:2")
        self.assertEqual(servers.ordered(), ["b:2", "c:3", "a:1"])
        self.assertEqual(pickle.loads(pickle.dumps(servers)).ordered(), ["a:1", "b:2", "c:3"])
        self.assertRaises(ValueError, NameServerList, " ; ")


class QueueTests(SynchronousTestCase):
    def test_publish_queues(self) -> None:
        """Writable brokers with a master only, write queue counts, sorted by broker."""
        info = publish_info("T", ROUTE)
        self.assertEqual(info.queues, [MessageQueue("T", "broker-a", 0), MessageQueue("T", "broker-a", 1),
                                       MessageQueue("T", "broker-b", 0), MessageQueue("T", "broker-b", 1),
                                       MessageQueue("T", "broker-b", 2)])
        self.assertEqual(len(publish_info("T", ROUTE, template_queue_nums=1).queues), 2)

    def test_order_topic_conf(self) -> None:
        route = TopicRouteData(ROUTE.queue_datas, ROUTE.broker_datas, order_topic_conf="broker-b:2;broker-a:1")
        info = publish_info("T", route)
        self.assertTrue(info.order_topic)
        self.assertEqual([(q.broker_name, q.queue_id) for q in info.queues],
                         [("broker-b", 0), ("broker-b", 1), ("broker-a", 0)])

    def test_round_robin_and_avoidance(self) -> None:
        info = publish_info("T", ROUTE)
        counts = Counter(info.select_queue() for _ in range(50))
        self.assertEqual(set(counts.values()), {10})
        for _ in range(10):
            self.assertEqual(info.select_queue("broker-a").broker_name, "broker-b")
        copy = pickle.loads(pickle.dumps(info))
        self.assertEqual(copy.queues, info.queues)
        copy.select_queue()

    def test_subscribe_queues(self) -> None:
        queues = subscribe_queues("T", ROUTE)
        self.assertEqual(len(queues), 8)
        self.assertEqual(queues, sorted(queues))

    def test_select_by_hash(self) -> None:
        """Java's SelectMessageQueueByHash: |String.hashCode()| mod n."""
        queues = [MessageQueue("T", "b", i) for i in range(4)]
        self.assertEqual(select_by_hash(queues, None, "order-1").queue_id, abs(-1207111310) % 4)
        self.assertEqual(select_by_hash(queues, None, "order-1"), select_by_hash(queues, None, "order-1"))

    def test_client_id(self) -> None:
        self.assertRegex(make_client_id("1.2.3.4"), re.compile(r"^1\.2\.3\.4@\d+#\d+$"))
        self.assertEqual(make_client_id("1.2.3.4", "inst"), "1.2.3.4@inst")
        self.assertNotEqual(make_client_id("h"), make_client_id("h"))


class FindBrokerTests(SynchronousTestCase):
    """Java 4.9 ``findBrokerAddressInSubscribe`` and ``PullAPIWrapper``'s node table."""

    def routes(self, addrs: dict[int, str]) -> RouteTable:
        routes = RouteTable("ns:1")
        routes.put("T", TopicRouteData([QueueData("broker-a", 4, 4, 6)], [BrokerData("C", "broker-a", addrs)]))
        return routes

    def test_requested_id(self) -> None:
        routes = self.routes({0: "m:1", 1: "s:1"})
        self.assertEqual(routes.find_broker_address_in_subscribe("broker-a", 0, False), FindBrokerResult("m:1", False))
        self.assertEqual(routes.find_broker_address_in_subscribe("broker-a", 1, True), FindBrokerResult("s:1", True))
        self.assertIsNone(routes.find_broker_address_in_subscribe("broker-b", 0, False))

    def test_next_slave_id(self) -> None:
        """A slave id not in the route: the next id's address, still a slave."""
        routes = self.routes({0: "m:1", 2: "s:2"})
        self.assertEqual(routes.find_broker_address_in_subscribe("broker-a", 1, True), FindBrokerResult("s:2", True))

    def test_any_address_unless_only_this_broker(self) -> None:
        """The master out of the route: the lowest id there is, flagged as a slave; none with only_this_broker."""
        routes = self.routes({1: "s:1", 2: "s:2"})
        self.assertIsNone(routes.find_broker_address_in_subscribe("broker-a", 0, True))
        self.assertEqual(routes.find_broker_address_in_subscribe("broker-a", 0, False), FindBrokerResult("s:1", True))
        # a slave id gone, the master back: the master, not a slave
        routes = self.routes({0: "m:1"})
        self.assertEqual(routes.find_broker_address_in_subscribe("broker-a", 1, False), FindBrokerResult("m:1", False))

    def test_pull_from_which_node(self) -> None:
        nodes = PullFromWhichNode()
        mq = MessageQueue("T", "broker-a", 0)
        self.assertEqual(nodes.recalculate(mq), 0)
        nodes.update(mq, 1)
        self.assertEqual((nodes.recalculate(mq), nodes.recalculate(MessageQueue("T", "broker-a", 1))), (1, 0))
        nodes.connect_broker_by_user, nodes.default_broker_id = True, 2
        self.assertEqual(nodes.recalculate(mq), 2)
