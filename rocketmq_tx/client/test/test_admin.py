"""
MQAdmin against a real rocketmq-tx name server and broker in the same process: the
processors of both servers behind in-memory connections (loopback pumps), a memory
reactor, the broker's store in a temp directory. So the plans of
``rocketmq_tx.remoting.adminapi`` meet the request handlers they were written for.
"""

from __future__ import annotations

import time
from typing import Any

from twisted.internet.address import IPv4Address
from twisted.internet.defer import Deferred, fail, succeed
from twisted.trial.unittest import SynchronousTestCase
from zope.interface import implementer

from rocketmq_tx.broker.outerapi import BrokerOuterAPI
from rocketmq_tx.broker.service import BrokerService
from rocketmq_tx.broker.test.util import T0, FakeReactor, broker_settings
from rocketmq_tx.client import Message, MessageQueue, MQBrokerError, MQClientError, Producer
from rocketmq_tx.client.admin import MQAdmin
from rocketmq_tx.client.instance import MQClientInstance
from rocketmq_tx.common.route import TopicConfig
from rocketmq_tx.namesrv.config import NamesrvSettings
from rocketmq_tx.namesrv.controller import NamesrvController
from rocketmq_tx.namesrv.processors import processor_table as namesrv_table
from rocketmq_tx.net.client import RemotingClient
from rocketmq_tx.net.dispatch import IRequestProcessor, ProcessorTable
from rocketmq_tx.net.protocol import RemotingProtocol
from rocketmq_tx.remoting import RemotingCommand, RemotingConnectError, RequestCode, ResponseCode, api
from rocketmq_tx.remoting.adminapi import ORDER_TOPIC_CONFIG, Call
from rocketmq_tx.testing.loopback import Pump, connect

NS = "127.0.0.1:9876"
BROKER = "127.0.0.1:10911"
CLUSTER = "TxCluster"
TOPIC = "AdminTopic"
GROUP = "AdminGroup"


@implementer(IRequestProcessor)
class Recorder:
    """A client's handler for broker-to-client requests: keeps them."""

    def __init__(self) -> None:
        self.requests: list[RemotingCommand] = []

    def process_request(self, ctx: object, request: RemotingCommand) -> None:
        self.requests.append(request)
        return None

    def reject_request(self) -> bool:
        return False


class InProcessCluster:
    """A name server's processors and a BrokerService, reached through loopback pumps."""

    def __init__(self, case: SynchronousTestCase, **keys: object) -> None:
        self.reactor = FakeReactor()
        # Store times near the wall clock: a query by UNIQ_KEY starts at the time the key holds.
        self.reactor.advance(time.time() - T0)
        self.namesrv = NamesrvController(NamesrvSettings({"kvConfigPath": case.mktemp() + "/kv.json",
                                                           "orderMessageEnable": True}),
                                         now=lambda: int(self.reactor.seconds() * 1000))
        settings = broker_settings(case, listenPort=10911, namesrvAddr=NS, brokerClusterName=CLUSTER,
                                   brokerName="broker-a", **keys)
        self.service = BrokerService(settings, self.reactor, drive_store=False)
        self.service.namesrv_client = self.client()
        self.service.outer_api = BrokerOuterAPI(self.service.namesrv_client, 6000)
        self.pumps: list[Pump] = []
        self.pumps_to: dict[str, list[Pump]] = {}
        self.down: set[str] = set()
        self._port = 50000
        self.service.startService()
        self.settle()
        case.addCleanup(self.stop)

    def client(self, processors: ProcessorTable | None = None) -> RemotingClient:
        """A RemotingClient whose connections lead to the name server (NS) and the broker (BROKER)."""
        holder: dict[str, RemotingClient] = {}

        def connector(addr: str) -> Deferred:
            if addr in self.down or addr not in (NS, BROKER):
                return fail(RemotingConnectError(f"connection refused: {addr}"))
            self._port += 1
            if addr == NS:
                server = RemotingProtocol(self.reactor, namesrv_table(self.namesrv))
            else:
                server = self.service.factories[0].buildProtocol(IPv4Address("TCP", "127.0.0.1", self._port))
            proto = holder["client"]._new_protocol()
            pump = connect(proto, server, client_port=self._port)
            self.pumps.append(pump)
            self.pumps_to.setdefault(addr, []).append(pump)
            return succeed(proto)

        holder["client"] = RemotingClient(self.reactor, processors, connector=connector)
        return holder["client"]

    def kill(self, addr: str) -> None:
        """Close every connection to *addr* and refuse new ones."""
        self.down.add(addr)
        for pump in self.pumps_to.get(addr, []):
            if not pump._closed:
                pump.server_transport.loseConnection()
                pump.flush()

    def settle(self) -> None:
        """Deliver every byte and run every timer due now, until nothing moves."""
        for _ in range(20):
            busy = False
            for pump in self.pumps:
                if not pump._closed and (pump.client_transport.value() or pump.server_transport.value()
                                         or pump.client_transport.disconnecting
                                         or pump.server_transport.disconnecting):
                    busy = True
                    pump.flush()
            self.reactor.advance(0)
            if not busy:
                return

    def stop(self) -> None:
        if self.service.running:
            d = self.service.stopService()
            self.settle()
            self.reactor.advance(1)
            self.settle()
            assert d.called


class AdminTestCase(SynchronousTestCase):
    def setUp(self) -> None:
        self.cluster = InProcessCluster(self)
        self.instance = MQClientInstance(self.cluster.reactor, NS, remoting=self.cluster.client())
        self.admin = MQAdmin(instance=self.instance)
        self.producer = Producer("AdminPG", instance=self.instance)

    def result(self, d: Deferred) -> Any:
        self.cluster.settle()
        return self.successResultOf(d)

    def failure(self, d: Deferred, *types: type) -> Any:
        self.cluster.settle()
        return self.failureResultOf(d, *types).value

    def create_topic(self, topic: str = TOPIC, queues: int = 4, order: bool = False) -> None:
        config = TopicConfig(topic, queues, queues)
        config.order = order
        self.assertEqual(self.result(self.admin.create_topic_in_cluster(CLUSTER, config)), [BROKER])
        self.cluster.settle()  # the broker registers the new topic with the name server

    def send(self, queue_id: int, body: bytes, keys: str | None = None, topic: str = TOPIC) -> api.SendResult:
        msg = Message(topic, body)
        if keys:
            msg.keys = keys
        return self.result(self.producer.send(msg, queue=MessageQueue(topic, "broker-a", queue_id)))

    def consumer(self, group: str = GROUP, topic: str = TOPIC) -> tuple[RemotingClient, Recorder]:
        """A connected consumer of *group*: its heartbeat reached the broker (the retry topic exists)."""
        recorder = Recorder()
        table = ProcessorTable(default=recorder)
        client = self.cluster.client(table)
        data = api.HeartbeatData("10.1.1.1@consumer", [], [api.ConsumerData(
            group, "CONSUME_PASSIVELY", subscriptions=[api.SubscriptionData.build(topic)])])
        api.check_response(self.result(client.invoke(BROKER, api.heartbeat_request(data))))
        self.cluster.settle()
        return client, recorder

    def commit(self, queue_id: int, offset: int, group: str = GROUP, topic: str = TOPIC) -> None:
        mq = MessageQueue(topic, "broker-a", queue_id)
        api.check_response(self.result(self.instance.remoting.invoke(
            BROKER, api.update_consumer_offset_request(group, mq, offset))))


class ClusterAndTopicTests(AdminTestCase):
    def test_cluster_info(self) -> None:
        info = self.result(self.admin.examine_broker_cluster_info())
        self.assertEqual(info.cluster_addr_table, {CLUSTER: ["broker-a"]})
        broker = info.broker_addr_table["broker-a"]
        self.assertEqual((broker.cluster, broker.broker_addrs), (CLUSTER, {0: BROKER}))
        self.assertEqual(self.result(self.admin.fetch_master_addr_by_cluster_name(CLUSTER)), [BROKER])
        error = self.failure(self.admin.fetch_master_addr_by_cluster_name("Nope"), MQClientError)
        self.assertIn("Nope", str(error))

    def test_create_route_list_and_stats(self) -> None:
        self.create_topic(queues=3)
        route = self.result(self.admin.examine_topic_route_info(TOPIC))
        self.assertEqual([(q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm) for q in route.queue_datas],
                         [("broker-a", 3, 3, 6)])
        self.assertIn(TOPIC, self.result(self.admin.fetch_all_topic_list()).topic_list)
        stats = self.result(self.admin.examine_topic_stats(TOPIC))
        self.assertEqual({mq.queue_id: (o.min_offset, o.max_offset, o.last_update_timestamp)
                          for mq, o in stats.offset_table.items()}, {0: (0, 0, 0), 1: (0, 0, 0), 2: (0, 0, 0)})
        self.send(2, b"a")
        self.send(2, b"b")
        stats = self.result(self.admin.examine_topic_stats(TOPIC))
        q2 = stats.offset_table[MessageQueue(TOPIC, "broker-a", 2)]
        self.assertEqual((q2.min_offset, q2.max_offset), (0, 2))
        self.assertEqual(q2.last_update_timestamp, int(self.cluster.reactor.seconds() * 1000))
        self.assertEqual(list(stats.offset_table), sorted(stats.offset_table))

    def test_update_existing_topic(self) -> None:
        self.create_topic(queues=2)
        config = TopicConfig(TOPIC, 8, 6, perm=4)
        self.assertIsNone(self.result(self.admin.create_and_update_topic_config(BROKER, config)))
        tc = self.cluster.service.controller.topic_config_manager.select_topic_config(TOPIC)
        self.assertEqual((tc.read_queue_nums, tc.write_queue_nums, tc.perm), (8, 6, 4))

    def test_ordered_topic_layout_on_the_name_server(self) -> None:
        self.create_topic(queues=3, order=True)
        self.assertEqual(self.cluster.namesrv.kv_config_manager.get(ORDER_TOPIC_CONFIG, TOPIC), "broker-a:3")
        route = self.result(self.admin.examine_topic_route_info(TOPIC))
        self.assertEqual(route.order_topic_conf, "broker-a:3")

    def test_create_refused_with_broker_code(self) -> None:
        error = self.failure(self.admin.create_and_update_topic_config(BROKER, TopicConfig("TBW102")), MQBrokerError)
        self.assertEqual((error.code, error.remark),
                         (ResponseCode.SYSTEM_ERROR, "The topic[TBW102] is conflict with system topic."))

    def test_delete_topic(self) -> None:
        self.create_topic(order=True)
        self.send(0, b"gone")
        self.assertIsNone(self.result(self.admin.delete_topic(TOPIC, CLUSTER)))
        self.assertIsNone(self.cluster.service.controller.topic_config_manager.select_topic_config(TOPIC))
        self.assertIsNone(self.cluster.namesrv.kv_config_manager.get(ORDER_TOPIC_CONFIG, TOPIC))
        error = self.failure(self.admin.examine_topic_route_info(TOPIC), MQBrokerError)
        self.assertEqual(error.code, ResponseCode.TOPIC_NOT_EXIST)
        self.assertNotIn(TOPIC, self.result(self.admin.fetch_all_topic_list()).topic_list)

    def test_delete_in_broker_and_name_server_separately(self) -> None:
        self.create_topic()
        self.result(self.admin.delete_topic_in_broker([BROKER], TOPIC))
        self.assertIsNone(self.cluster.service.controller.topic_config_manager.select_topic_config(TOPIC))
        self.result(self.admin.delete_topic_in_name_server(None, TOPIC))
        self.assertNotIn(TOPIC, self.result(self.admin.fetch_all_topic_list()).topic_list)

    def test_stats_of_unknown_topic(self) -> None:
        error = self.failure(self.admin.examine_topic_stats("Nope"), MQBrokerError)
        self.assertEqual(error.code, ResponseCode.TOPIC_NOT_EXIST)

    def test_broker_down(self) -> None:
        self.create_topic()
        self.cluster.kill(BROKER)
        self.failure(self.admin.examine_topic_stats(TOPIC), RemotingConnectError)

    def test_name_server_failover(self) -> None:
        instance = MQClientInstance(self.cluster.reactor, f"127.0.0.2:9876;{NS}", remoting=self.cluster.client())
        admin = MQAdmin(instance=instance)
        info = self.result(admin.examine_broker_cluster_info())
        self.assertEqual(list(info.cluster_addr_table), [CLUSTER])
        self.flushLoggedErrors()


class ConsumerTests(AdminTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.create_topic(queues=2)
        self.sent = [self.send(i % 2, f"m{i}".encode()) for i in range(5)]  # queue 0: 3, queue 1: 2

    def test_consume_stats_and_lag(self) -> None:
        self.consumer()
        self.commit(0, 1)
        self.commit(1, 2)
        stats = self.result(self.admin.examine_consume_stats(GROUP))
        q0, q1 = (stats.offset_table[MessageQueue(TOPIC, "broker-a", i)] for i in (0, 1))
        self.assertEqual((q0.broker_offset, q0.consumer_offset, q1.broker_offset, q1.consumer_offset), (3, 1, 2, 2))
        self.assertEqual(q0.last_timestamp, int(self.cluster.reactor.seconds() * 1000))
        self.assertEqual(stats.compute_total_diff(), 2)
        by_topic = self.result(self.admin.examine_consume_stats(GROUP, TOPIC))
        self.assertEqual(by_topic.offset_table, stats.offset_table)

    def test_group_without_heartbeat_uses_the_topic_route(self) -> None:
        """A group that only commits (a Spark job) has no retry topic: the topic's route is used, as 5.x does."""
        self.commit(0, 3, group="SparkGroup")
        stats = self.result(self.admin.examine_consume_stats("SparkGroup", TOPIC))
        self.assertEqual(stats.compute_total_diff(), 2)
        error = self.failure(self.admin.examine_consume_stats("SparkGroup"), MQBrokerError)
        self.assertEqual(error.code, ResponseCode.TOPIC_NOT_EXIST)

    def test_empty_stats_of_offline_group(self) -> None:
        self.create_topic("%RETRY%Ghost", queues=1)
        error = self.failure(self.admin.examine_consume_stats("Ghost"), MQClientError)
        self.assertEqual(error.code, ResponseCode.CONSUMER_NOT_ONLINE)

    def test_consumer_connection(self) -> None:
        self.consumer()
        connection = self.result(self.admin.examine_consumer_connection_info(GROUP))
        self.assertEqual([c.client_id for c in connection.connection_set], ["10.1.1.1@consumer"])
        self.assertEqual((connection.message_model, connection.consume_type), ("CLUSTERING", "CONSUME_PASSIVELY"))
        self.assertIn(TOPIC, connection.subscription_table)

    def test_consumer_connection_offline(self) -> None:
        client, _ = self.consumer()
        self.result(client.close())
        self.cluster.settle()
        error = self.failure(self.admin.examine_consumer_connection_info(GROUP), MQBrokerError)
        self.assertEqual(error.code, ResponseCode.CONSUMER_NOT_ONLINE)

    def test_reset_offset_reaches_the_consumer(self) -> None:
        _, recorder = self.consumer()
        self.commit(0, 3)
        self.commit(1, 2)
        table = self.result(self.admin.reset_offset_by_timestamp(TOPIC, GROUP, 0))
        self.assertEqual(table, {MessageQueue(TOPIC, "broker-a", 0): 0, MessageQueue(TOPIC, "broker-a", 1): 0})
        (notice,) = [r for r in recorder.requests if r.code == RequestCode.RESET_CONSUMER_CLIENT_OFFSET]
        self.assertEqual((notice.code, api.parse_reset_offset_body(notice.body)),
                         (RequestCode.RESET_CONSUMER_CLIENT_OFFSET, table))
        # Not forced: an offset only moves back.
        table = self.result(self.admin.reset_offset_by_timestamp(TOPIC, GROUP, -1, force=False))
        self.assertEqual(list(table.values()), [3, 2])

    def test_reset_offset_offline_group(self) -> None:
        self.commit(0, 3)
        self.commit(1, 2)
        error = self.failure(self.admin.reset_offset_by_timestamp(TOPIC, GROUP, 0), MQBrokerError)
        self.assertEqual(error.code, ResponseCode.CONSUMER_NOT_ONLINE)
        # mqadmin resetOffsetByTime: the admin commits the offsets itself.
        table = self.result(self.admin.reset_offset_new(TOPIC, GROUP, 0))
        self.assertEqual(list(table.values()), [0, 0])
        offsets = self.cluster.service.controller.consumer_offset_manager
        self.assertEqual((offsets.query_offset(GROUP, TOPIC, 0), offsets.query_offset(GROUP, TOPIC, 1)), (0, 0))

    def test_reset_offset_old_not_forced(self) -> None:
        self.commit(0, 1)
        self.commit(1, 1)
        stats = self.result(self.admin.reset_offset_by_timestamp_old(TOPIC, GROUP, -1, force=False))
        self.assertEqual([(s.queue_id, s.broker_offset, s.consumer_offset, s.timestamp_offset, s.rollback_offset)
                          for s in stats], [(0, 3, 1, 3, 1), (1, 2, 1, 2, 1)])
        stats = self.result(self.admin.reset_offset_by_timestamp_old(TOPIC, GROUP, 0))
        self.assertEqual([s.rollback_offset for s in stats], [0, 0])

    def test_reset_offset_old_group_without_offsets(self) -> None:
        """Queues the group never committed come from the topic's stats (Java's fallback)."""
        stats = self.result(self.admin.reset_offset_by_timestamp_old(TOPIC, "NewGroup", -1))
        self.assertEqual([(s.queue_id, s.broker_offset, s.rollback_offset) for s in stats], [(0, 3, 3), (1, 2, 2)])
        offsets = self.cluster.service.controller.consumer_offset_manager
        self.assertEqual(offsets.query_offset("NewGroup", TOPIC, 0), 3)


class MessageTests(AdminTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.create_topic(queues=2)
        self.first = self.send(0, b"first", keys="order-1 shared")
        self.second = self.send(1, b"second", keys="order-2 shared")

    def test_view_by_offset_id(self) -> None:
        msg = self.result(self.admin.view_message(self.first.offset_msg_id))
        self.assertEqual((msg.body, msg.unique_key), (b"first", self.first.msg_id))

    def test_view_by_unique_key_with_topic(self) -> None:
        """A UNIQ_KEY decodes as an offset id of nowhere: with a topic it is queried as a unique key."""
        msg = self.result(self.admin.view_message(self.second.msg_id, TOPIC))
        self.assertEqual(msg.body, b"second")
        self.failure(self.admin.view_message(self.second.msg_id), RemotingConnectError)
        error = self.failure(self.admin.view_message("not-an-id"), MQClientError)
        self.assertEqual(error.code, ResponseCode.NO_MESSAGE)

    def test_query_by_key(self) -> None:
        result = self.result(self.admin.query_message(TOPIC, "shared"))
        self.assertEqual(sorted(m.body for m in result.message_list), [b"first", b"second"])
        self.assertGreater(result.index_last_update_timestamp, 0)
        self.assertEqual([m.body for m in self.result(self.admin.query_message(TOPIC, "order-2")).message_list],
                         [b"second"])
        error = self.failure(self.admin.query_message(TOPIC, "missing"), MQClientError)
        self.assertEqual(error.code, ResponseCode.NO_MESSAGE)

    def test_query_by_unique_key(self) -> None:
        msg = self.result(self.admin.query_message_by_uniq_key(TOPIC, self.first.msg_id))
        self.assertEqual(msg.body, b"first")


class DriverTests(AdminTestCase):
    def test_list_step_reports_failures_in_place(self) -> None:
        def plan():  # type: ignore[no-untyped-def]
            results = yield [Call(BROKER, api.get_max_offset_request(MessageQueue("TBW102", "broker-a", 0))),
                             Call("127.0.0.9:10911", api.get_max_offset_request(MessageQueue("T", "b", 0)))]
            return results

        ok, refused = self.result(self.admin.run(plan()))
        self.assertEqual(ok.code, ResponseCode.SUCCESS)
        self.assertIsInstance(refused, RemotingConnectError)

    def test_single_step_failure_raised_in_the_plan(self) -> None:
        def plan():  # type: ignore[no-untyped-def]
            try:
                yield Call("127.0.0.9:10911", api.get_max_offset_request(MessageQueue("T", "b", 0)))
            except RemotingConnectError:
                return "handled"
            return "not raised"

        self.assertEqual(self.result(self.admin.run(plan())), "handled")

    def test_own_instance_lifecycle(self) -> None:
        admin = MQAdmin(NS, self.cluster.reactor)
        admin.start()
        self.assertIsNone(self.result(admin.stop()))
