"""BlockingAdmin against the scripted fake cluster (two brokers) over real TCP: merging, fan-out, errors, pickling."""

from __future__ import annotations

import pickle

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.blocking import BlockingProducer, BlockingPullClient
from rocketmq_tx.blocking.admin import BlockingAdmin
from rocketmq_tx.common.message import Message, MessageQueue
from rocketmq_tx.common.route import TopicConfig
from rocketmq_tx.remoting import MQBrokerError, RemotingTimeoutError, RequestCode, ResponseCode
from rocketmq_tx.remoting.adminapi import ORDER_TOPIC_CONFIG
from rocketmq_tx.remoting.api import MQClientError
from rocketmq_tx.testing.fakebroker import SILENT, ThreadedFakeServer

GROUP = "CG"


class Base(SynchronousTestCase):
    namesrvs = 1

    def setUp(self) -> None:
        self.server = ThreadedFakeServer(("broker-a", "broker-b"), self.namesrvs)
        self.addCleanup(self.server.close)
        self.cluster = self.server.cluster
        self.cluster.add_topic("T", 2)
        self.addr_a, self.addr_b = self.cluster.brokers["broker-a"], self.cluster.brokers["broker-b"]
        self.admin = self.make_admin()

    def make_admin(self, **kwargs: object) -> BlockingAdmin:
        admin = BlockingAdmin(self.server.namesrv_addr, **kwargs)  # type: ignore[arg-type]
        self.addCleanup(admin.close)
        return admin

    def send(self, broker: str, queue_id: int, body: bytes, keys: str | None = None):  # type: ignore[no-untyped-def]
        with BlockingProducer("PG", self.server.namesrv_addr) as producer:
            msg = Message("T", body)
            if keys:
                msg.keys = keys
            return producer.send(msg, queue=MessageQueue("T", broker, queue_id))

    def codes_to(self, code: int) -> list[str]:
        return sorted(a for a, _ in self.cluster.requests(code))


class ClusterAndTopicTests(Base):
    def test_cluster_info(self) -> None:
        info = self.admin.examine_broker_cluster_info()
        self.assertEqual(info.cluster_addr_table, {"DefaultCluster": ["broker-a", "broker-b"]})
        self.assertEqual(info.broker_addr_table["broker-b"].broker_addrs, {0: self.addr_b})
        self.assertEqual(self.admin.fetch_master_addr_by_cluster_name("DefaultCluster"), [self.addr_a, self.addr_b])
        self.assertRaises(MQClientError, self.admin.fetch_master_addr_by_cluster_name, "Nope")

    def test_route_and_topic_list(self) -> None:
        route = self.admin.examine_topic_route_info("T")
        self.assertEqual([b.broker_name for b in route.broker_datas], ["broker-a", "broker-b"])
        self.assertEqual(self.admin.fetch_all_topic_list().topic_list, ["T"])
        error = self.assertRaises(MQBrokerError, self.admin.examine_topic_route_info, "Nope")
        self.assertEqual(error.code, ResponseCode.TOPIC_NOT_EXIST)

    def test_create_in_cluster_reaches_every_master(self) -> None:
        config = TopicConfig("New", 3, 5)
        config.order = True
        self.assertEqual(self.admin.create_topic_in_cluster("DefaultCluster", config), [self.addr_a, self.addr_b])
        self.assertEqual(self.codes_to(RequestCode.UPDATE_AND_CREATE_TOPIC), sorted([self.addr_a, self.addr_b]))
        (_, request), _ = self.cluster.requests(RequestCode.UPDATE_AND_CREATE_TOPIC)
        self.assertEqual({k: request.ext_fields[k] for k in ("topic", "defaultTopic", "readQueueNums",
                                                            "writeQueueNums", "perm", "topicFilterType", "order")},
                         {"topic": "New", "defaultTopic": "TBW102", "readQueueNums": "3", "writeQueueNums": "5",
                          "perm": "6", "topicFilterType": "SINGLE_TAG", "order": "true"})
        self.assertEqual(self.cluster.kv[(ORDER_TOPIC_CONFIG, "New")], "broker-a:5;broker-b:5")

    def test_create_refused(self) -> None:
        self.cluster.script(RequestCode.UPDATE_AND_CREATE_TOPIC, ResponseCode.SYSTEM_ERROR, addr=self.addr_b)
        error = self.assertRaises(MQBrokerError, self.admin.create_topic_in_cluster, "DefaultCluster",
                                  TopicConfig("New"))
        self.assertEqual((error.code, error.remark), (ResponseCode.SYSTEM_ERROR, "scripted"))

    def test_attributes_as_5x_writes_them(self) -> None:
        config = TopicConfig("New", attributes={"+message.type": "FIFO", "-delete.me": ""})
        self.admin.create_and_update_topic_config(self.addr_a, config)
        (_, request), = self.cluster.requests(RequestCode.UPDATE_AND_CREATE_TOPIC)
        self.assertEqual(request.ext_fields["attributes"], "+message.type=FIFO,-delete.me")

    def test_delete_topic(self) -> None:
        self.cluster.kv[(ORDER_TOPIC_CONFIG, "T")] = "broker-a:2"
        self.admin.delete_topic("T", "DefaultCluster")
        self.assertEqual(self.codes_to(RequestCode.DELETE_TOPIC_IN_BROKER), sorted([self.addr_a, self.addr_b]))
        self.assertEqual(self.codes_to(RequestCode.DELETE_TOPIC_IN_NAMESRV), self.cluster.namesrvs)
        self.assertNotIn((ORDER_TOPIC_CONFIG, "T"), self.cluster.kv)
        self.assertRaises(MQBrokerError, self.admin.examine_topic_route_info, "T")

    def test_topic_stats_merged_over_brokers(self) -> None:
        self.send("broker-a", 1, b"x")
        self.send("broker-b", 0, b"y")
        self.send("broker-b", 0, b"z")
        stats = self.admin.examine_topic_stats("T")
        got = {(mq.broker_name, mq.queue_id): (o.min_offset, o.max_offset) for mq, o in stats.offset_table.items()}
        self.assertEqual(got, {("broker-a", 0): (0, 0), ("broker-a", 1): (0, 1), ("broker-b", 0): (0, 2),
                               ("broker-b", 1): (0, 0)})
        self.assertGreater(stats.offset_table[MessageQueue("T", "broker-b", 0)].last_update_timestamp, 0)

    def test_timeout(self) -> None:
        admin = self.make_admin(timeout=0.3)
        self.cluster.script(RequestCode.GET_TOPIC_STATS_INFO, SILENT, addr=self.addr_b)
        self.assertRaises(RemotingTimeoutError, admin.examine_topic_stats, "T")


class FailoverTests(Base):
    namesrvs = 2

    def test_dead_name_server_skipped(self) -> None:
        self.cluster.down.add(self.cluster.namesrvs[0])
        self.assertEqual(self.admin.fetch_all_topic_list().topic_list, ["T"])
        self.assertEqual(self.admin.client.namesrvs.ordered()[0], self.cluster.namesrvs[1])


class ConsumerTests(Base):
    # The fake keeps one offset per (group, topic, queue id) for all brokers: queue 0 of
    # both brokers holds 3 messages, so one commit describes both.
    def setUp(self) -> None:
        super().setUp()
        for broker in ("broker-a", "broker-b"):
            for i in range(3):
                self.send(broker, 0, f"{broker}-{i}".encode())

    def online(self) -> BlockingPullClient:
        puller = BlockingPullClient(GROUP, self.server.namesrv_addr)
        self.addCleanup(puller.close)
        puller.send_heartbeat(["T"])
        return puller

    def test_consume_stats_and_lag(self) -> None:
        puller = self.online()
        puller.commit_offset(MessageQueue("T", "broker-a", 0), 1)
        stats = self.admin.examine_consume_stats(GROUP)
        got = {(mq.broker_name, mq.queue_id): (w.broker_offset, w.consumer_offset)
               for mq, w in stats.offset_table.items()}
        self.assertEqual(got, {("broker-a", 0): (3, 1), ("broker-a", 1): (0, 0), ("broker-b", 0): (3, 1),
                               ("broker-b", 1): (0, 0)})
        self.assertEqual(stats.compute_total_diff(), 4)
        self.assertEqual(list(stats.offset_table), sorted(stats.offset_table))
        self.assertEqual(self.codes_to(RequestCode.GET_CONSUME_STATS), sorted([self.addr_a, self.addr_b]))
        (_, request), _ = self.cluster.requests(RequestCode.GET_CONSUME_STATS)
        self.assertEqual(request.ext_fields, {"consumerGroup": GROUP})

    def test_consume_stats_broker_error(self) -> None:
        self.online()
        self.cluster.script(RequestCode.GET_CONSUME_STATS, ResponseCode.SYSTEM_ERROR, addr=self.addr_a)
        error = self.assertRaises(MQBrokerError, self.admin.examine_consume_stats, GROUP)
        self.assertEqual(error.code, ResponseCode.SYSTEM_ERROR)

    def test_consume_stats_of_group_never_seen(self) -> None:
        error = self.assertRaises(MQBrokerError, self.admin.examine_consume_stats, "Nobody")
        self.assertEqual(error.code, ResponseCode.TOPIC_NOT_EXIST)  # no %RETRY%Nobody route

    def test_consumer_connection(self) -> None:
        puller = self.online()
        connection = self.admin.examine_consumer_connection_info(GROUP)
        self.assertEqual([c.client_id for c in connection.connection_set], [puller.client.client_id])
        self.assertEqual((connection.message_model, list(connection.subscription_table)), ("CLUSTERING", ["T"]))

    def test_reset_offset(self) -> None:
        puller = self.online()
        puller.commit_offset(MessageQueue("T", "broker-a", 0), 3)
        table = self.admin.reset_offset_by_timestamp("T", GROUP, 0)
        self.assertEqual(table[MessageQueue("T", "broker-a", 0)], 0)
        self.assertEqual(len(table), 4)
        self.assertEqual(self.codes_to(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET), sorted([self.addr_a, self.addr_b]))
        (_, request), _ = self.cluster.requests(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET)
        self.assertEqual({k: request.ext_fields[k] for k in ("topic", "group", "timestamp", "isForce")},
                         {"topic": "T", "group": GROUP, "timestamp": "0", "isForce": "true"})

    def test_reset_offset_new_when_offline(self) -> None:
        error = self.assertRaises(MQBrokerError, self.admin.reset_offset_by_timestamp, "T", GROUP, 0)
        self.assertEqual(error.code, ResponseCode.CONSUMER_NOT_ONLINE)
        table = self.admin.reset_offset_new("T", GROUP, -1)
        self.assertEqual(table, {MessageQueue("T", b, q): 3 if q == 0 else 0
                                 for b in ("broker-a", "broker-b") for q in (0, 1)})
        self.assertEqual(self.cluster.offsets[(GROUP, "T", 0)], 3)
        self.assertEqual(len(self.cluster.requests(RequestCode.UPDATE_CONSUMER_OFFSET)), 4)


class MessageTests(Base):
    def test_view_query_and_unique_key(self) -> None:
        first = self.send("broker-a", 0, b"first", keys="k1 shared")
        second = self.send("broker-b", 1, b"second", keys="k2 shared")
        self.assertEqual(self.admin.view_message(first.offset_msg_id).body, b"first")
        result = self.admin.query_message("T", "shared")
        self.assertEqual(sorted(m.body for m in result.message_list), [b"first", b"second"])
        self.assertEqual(self.admin.query_message_by_uniq_key("T", second.msg_id).body, b"second")
        error = self.assertRaises(MQClientError, self.admin.query_message, "T", "missing")
        self.assertEqual(error.code, ResponseCode.NO_MESSAGE)

    def test_query_skips_a_failing_broker(self) -> None:
        self.send("broker-a", 0, b"first", keys="k1")
        self.cluster.script(RequestCode.QUERY_MESSAGE, ResponseCode.SYSTEM_ERROR, addr=self.addr_b)
        self.assertEqual([m.body for m in self.admin.query_message("T", "k1").message_list], [b"first"])

    def test_view_unknown_offset(self) -> None:
        sent = self.send("broker-a", 0, b"first")
        self.cluster.messages.clear()
        error = self.assertRaises(MQBrokerError, self.admin.view_message, sent.offset_msg_id)
        self.assertEqual(error.code, ResponseCode.SYSTEM_ERROR)


class LifecycleTests(Base):
    def test_pickles_as_configuration(self) -> None:
        admin = self.make_admin(timeout=1.5)
        admin.fetch_all_topic_list()
        clone = pickle.loads(pickle.dumps(admin))
        self.addCleanup(clone.close)
        self.assertEqual((clone.client.namesrv_addr, clone.client.timeout), (self.server.namesrv_addr, 1.5))
        self.assertEqual(clone.fetch_all_topic_list().topic_list, ["T"])

    def test_context_manager_closes_and_reconnects(self) -> None:
        with BlockingAdmin(self.server.namesrv_addr) as admin:
            admin.fetch_all_topic_list()
        self.assertEqual(admin.fetch_all_topic_list().topic_list, ["T"])
        admin.close()
