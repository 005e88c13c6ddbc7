"""Tests for MQClientInstance on a memory clock: routes, fail-over, heartbeats, offline brokers."""

from __future__ import annotations

import re

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.client.instance import MQClientInstance
from rocketmq_tx.remoting import MQBrokerError, RemotingTimeoutError, RequestCode
from rocketmq_tx.remoting.api import ConsumerData
from rocketmq_tx.testing.fakebroker import SILENT, FakeCluster
from rocketmq_tx.testing.fakenet import FakeNetwork


class InstanceTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.cluster = FakeCluster({"broker-a": "10.0.0.1:10911", "broker-b": "10.0.0.2:10911"},
                                   ("10.0.0.9:9876", "10.0.0.10:9876"))
        self.cluster.add_topic("T", 2)
        self.net = FakeNetwork(self.cluster)
        self.instance = MQClientInstance(self.net.reactor, "10.0.0.9:9876;10.0.0.10:9876", remoting=self.net.client)

    def test_heartbeat_to_slaves_with_a_consumer_only(self) -> None:
        """Java 4.9's sendHeartbeatToAllBroker: slaves get heartbeats only from a client with a consumer group."""
        self.cluster.slaves["broker-a"] = "10.0.0.11:10911"
        d = self.instance.update_route("T")
        self.net.flush()
        self.successResultOf(d)
        self.instance.register_producer("PG")
        self.instance.send_heartbeat_to_all_brokers()
        self.net.flush()
        self.assertEqual(sorted(self.cluster.heartbeats), ["10.0.0.1:10911", "10.0.0.2:10911"])
        self.instance.register_consumer("CG", lambda: ConsumerData("CG"))
        self.instance.send_heartbeat_to_all_brokers()
        self.net.flush()
        self.assertEqual(sorted(self.cluster.heartbeats), ["10.0.0.11:10911", "10.0.0.1:10911", "10.0.0.2:10911"])

    def test_client_id(self) -> None:
        self.assertRegex(self.instance.client_id, re.compile(r"^[0-9a-f.:]+@\d+#\d+$"))

    def test_route_and_brokers(self) -> None:
        d = self.instance.update_route("T")
        self.net.flush()
        route = self.successResultOf(d)
        self.assertEqual(len(route.queue_datas), 2)
        self.assertEqual(self.instance.broker_addr("broker-b"), "10.0.0.2:10911")

    def test_unknown_topic(self) -> None:
        d = self.instance.update_route("NOPE")
        self.net.flush()
        self.assertEqual(self.failureResultOf(d, MQBrokerError).value.code, 17)

    def test_namesrv_failover(self) -> None:
        """A refused name server is skipped; a silent one times out on the clock, then the next answers."""
        self.cluster.down.add("10.0.0.9:9876")
        d = self.instance.update_route("T")
        self.net.flush()
        self.successResultOf(d)
        self.assertEqual(self.instance.namesrvs.ordered()[0], "10.0.0.10:9876")
        self.cluster.script(RequestCode.GET_ROUTEINFO_BY_TOPIC, SILENT, addr="10.0.0.10:9876")
        self.cluster.down.clear()
        d = self.instance.update_route("T")
        self.net.flush()
        self.assertNoResult(d)
        self.net.advance(3.1)
        self.successResultOf(d)
        self.assertEqual(self.instance.namesrvs.ordered()[0], "10.0.0.9:9876")

    def test_cached_route_survives_namesrv_outage(self) -> None:
        d = self.instance.update_route("T")
        self.net.flush()
        route = self.successResultOf(d)
        self.cluster.down.update(self.cluster.namesrvs)
        for addr in self.cluster.namesrvs:
            self.net.kill(addr)
        d = self.instance.update_route("T")
        self.net.flush()
        self.assertIs(self.successResultOf(d), route)

    def test_periodic_refresh_heartbeat_and_offline_broker(self) -> None:
        """Every 30 s routes are refreshed and every master gets a heartbeat; a broker gone from routes is dropped."""
        self.instance.register_producer("PG")
        self.instance.register_consumer("CG", lambda: ConsumerData("CG"))
        self.instance.watch_topic("T")
        self.instance.start()
        self.net.flush()
        self.assertEqual(len(self.cluster.requests(RequestCode.GET_ROUTEINFO_BY_TOPIC)), 1)
        self.assertEqual(self.cluster.requests(RequestCode.HEART_BEAT), [])
        self.net.advance(1)
        heartbeats = self.cluster.requests(RequestCode.HEART_BEAT)
        self.assertEqual(sorted(a for a, _ in heartbeats), ["10.0.0.1:10911", "10.0.0.2:10911"])
        body = self.cluster.heartbeats["10.0.0.1:10911"][0]
        self.assertEqual((body["producerDataSet"], body["consumerDataSet"][0]["groupName"]),
                         ([{"groupName": "PG"}], "CG"))
        del self.cluster.brokers["broker-b"]
        self.net.advance(29)
        self.assertEqual(len(self.cluster.requests(RequestCode.GET_ROUTEINFO_BY_TOPIC)), 2)
        self.assertEqual(sorted(self.instance.brokers), ["broker-a"])
        self.net.advance(1)
        self.assertEqual(len(self.cluster.requests(RequestCode.HEART_BEAT)), 3)
        d = self.instance.stop()
        self.net.flush()
        self.successResultOf(d)
        unregister = self.cluster.requests(RequestCode.UNREGISTER_CLIENT)
        self.assertEqual(sorted(r.ext_fields.get("producerGroup") or r.ext_fields["consumerGroup"]
                                for _, r in unregister), ["CG", "PG"])

    def test_broker_timeout(self) -> None:
        from rocketmq_tx.common.message import MessageQueue
        from rocketmq_tx.remoting.api import get_max_offset_request

        self.cluster.script(RequestCode.GET_MAX_OFFSET, SILENT)
        mq = MessageQueue("T", "broker-a", 0)
        d = self.instance.invoke_broker(mq, get_max_offset_request(mq), 2.0)
        self.net.flush()
        self.net.advance(2.1)
        self.failureResultOf(d, RemotingTimeoutError)
