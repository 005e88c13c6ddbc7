"""
SQL92 subscriptions in the Python clients: ``MessageSelector.by_sql`` given to the push and
lite-pull consumers, the blocking pull client and the Spark source's ``sql92`` option goes
to the broker as ``expressionType=SQL92`` (heartbeats and PULL_MESSAGE headers), and a
plain string stays a TAG expression. The broker's side is ``broker/test/test_sql92.py``.
"""

from __future__ import annotations

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.blocking.client import BlockingPullClient
from rocketmq_tx.client import LitePullConsumer, MessageQueue
from rocketmq_tx.client.instance import MQClientInstance
from rocketmq_tx.client.litepull import CONSUME_FROM_FIRST_OFFSET
from rocketmq_tx.client.push import ConsumeStatus, PushConsumer
from rocketmq_tx.common import fastjson
from rocketmq_tx.remoting import RequestCode, ResponseCode, api
from rocketmq_tx.remoting.api import MessageSelector, SubscriptionData
from rocketmq_tx.remoting.headers import PullMessageRequestHeader
from rocketmq_tx.spark.options import OptionError, ReadOptions
from rocketmq_tx.testing.fakebroker import FakeCluster
from rocketmq_tx.testing.fakenet import FakeNetwork

SQL = "a > 5 AND TAGS IN ('A', 'B')"
MQ0 = MessageQueue("T", "broker-a", 0)


class SelectorTests(SynchronousTestCase):
    def test_selectors(self) -> None:
        self.assertEqual(MessageSelector.by_sql(SQL), MessageSelector("SQL92", SQL))
        self.assertEqual(MessageSelector.by_tag("A || B"), MessageSelector("TAG", "A || B"))
        self.assertEqual(MessageSelector.by_tag(None), MessageSelector("TAG", "*"))
        self.assertEqual(MessageSelector.of("A"), MessageSelector("TAG", "A"))

    def test_subscription_data(self) -> None:
        """An SQL92 expression is kept whole (no tag split on ``||``, no tag codes), as Java's FilterAPI.build."""
        sub = SubscriptionData.of("T", MessageSelector.by_sql("a = 1 || b"), sub_version=7)
        self.assertEqual((sub.expression_type, sub.sub_string, sub.tags_set, sub.code_set, sub.sub_version),
                         ("SQL92", "a = 1 || b", [], [], 7))
        tags = SubscriptionData.of("T", "A || B", sub_version=7)
        self.assertEqual((tags.expression_type, tags.tags_set), ("TAG", ["A", "B"]))
        self.assertEqual(SubscriptionData.of("T", MessageSelector.by_tag("A || B"), sub_version=7), tags)

    def test_pull_header(self) -> None:
        sub = SubscriptionData.of("T", MessageSelector.by_sql(SQL), sub_version=3)
        header = PullMessageRequestHeader.from_ext_fields(api.pull_request("CG", MQ0, 0, 32, sub).ext_fields)
        self.assertEqual((header.subscription, header.expression_type, header.sub_version), (SQL, "SQL92", 3))


class ConsumerTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.cluster = FakeCluster({"broker-a": "10.0.0.1:10911"})
        self.cluster.add_topic("T", 1)
        self.net = FakeNetwork(self.cluster)
        self.instance = MQClientInstance(self.net.reactor, "127.0.0.1:9876", remoting=self.net.client)
        # the fake broker does not serve CHECK_CLIENT_CONFIG: it accepts these consumers' selectors
        self.cluster.script(RequestCode.CHECK_CLIENT_CONFIG, *[ResponseCode.SUCCESS] * 4)

    def heartbeat_subscriptions(self, group: str) -> dict[str, tuple[str, str]]:
        found = {}
        for bodies in self.cluster.heartbeats.values():
            for body in bodies:
                for consumer in body.get("consumerDataSet") or []:
                    if consumer["groupName"] == group:
                        for sub in consumer["subscriptionDataSet"]:
                            found[sub["topic"]] = (sub["expressionType"], sub["subString"])
        return found

    def pulls(self) -> list[PullMessageRequestHeader]:
        return [PullMessageRequestHeader.from_ext_fields(r.ext_fields)
                for _, r in self.cluster.requests(RequestCode.PULL_MESSAGE)]

    def test_push_consumer(self) -> None:
        consumer = PushConsumer("CG", instance=self.instance, consume_from_where=CONSUME_FROM_FIRST_OFFSET)
        consumer.subscribe("T", MessageSelector.by_sql(SQL))
        consumer.register_listener(lambda msgs: ConsumeStatus.CONSUME_SUCCESS)
        consumer.start()
        self.net.flush()
        subs = self.heartbeat_subscriptions("CG")
        self.assertEqual(subs["T"], ("SQL92", SQL))
        self.assertEqual(subs["%RETRY%CG"], ("TAG", "*"))
        pulls = [h for h in self.pulls() if h.topic == "T"]
        self.assertTrue(pulls)
        self.assertEqual({(h.expression_type, h.subscription) for h in pulls}, {("SQL92", SQL)})
        d = consumer.stop()
        self.net.flush()
        self.successResultOf(d)

    def push_consumer(self, selector: MessageSelector) -> PushConsumer:
        consumer = PushConsumer("CG", instance=self.instance, consume_from_where=CONSUME_FROM_FIRST_OFFSET)
        consumer.subscribe("T", selector)
        consumer.register_listener(lambda msgs: ConsumeStatus.CONSUME_SUCCESS)
        return consumer

    def test_check_client_config_at_start(self) -> None:
        """Java's checkClientInBroker: one CHECK_CLIENT_CONFIG per SQL92 subscription, none for tags."""
        consumer = self.push_consumer(MessageSelector.by_sql(SQL))
        consumer.start()
        self.net.flush()
        (_, request), = self.cluster.requests(RequestCode.CHECK_CLIENT_CONFIG)
        body = fastjson.loads(request.body)
        self.assertEqual((body["group"], body["clientId"]), ("CG", self.instance.client_id))
        self.assertEqual((body["subscriptionData"]["expressionType"], body["subscriptionData"]["subString"]),
                         ("SQL92", SQL))
        self.assertTrue(consumer.running)
        d = consumer.check_subscriptions()
        self.net.flush()
        self.successResultOf(d)
        d = consumer.stop()
        self.net.flush()
        self.successResultOf(d)

    def test_refused_selector_stops_the_consumer(self) -> None:
        self.cluster = FakeCluster({"broker-a": "10.0.0.1:10911"})
        self.cluster.add_topic("T", 1)
        self.net = FakeNetwork(self.cluster)
        self.instance = MQClientInstance(self.net.reactor, "127.0.0.1:9876", remoting=self.net.client)
        self.cluster.script(RequestCode.CHECK_CLIENT_CONFIG, ResponseCode.SUBSCRIPTION_PARSE_FAILED)
        consumer = self.push_consumer(MessageSelector.by_sql("a >"))
        consumer.start()
        self.net.flush()
        self.assertFalse(consumer.running)
        tags = self.push_consumer(MessageSelector.by_tag("A"))
        tags.start()
        self.net.flush()
        self.assertTrue(tags.running)
        self.assertEqual(len(self.cluster.requests(RequestCode.CHECK_CLIENT_CONFIG)), 1)
        d = tags.stop()
        self.net.flush()
        self.successResultOf(d)

    def poll(self, consumer: LitePullConsumer) -> None:
        d = consumer.poll(0.6)
        self.net.flush()
        for _ in range(5):
            if d.called:
                break
            self.net.advance(0.2)
        self.successResultOf(d)

    def test_lite_pull_subscribe_and_assign(self) -> None:
        consumer = LitePullConsumer("CG", instance=self.instance, consume_from_where=CONSUME_FROM_FIRST_OFFSET)
        consumer.subscribe("T", MessageSelector.by_sql(SQL))
        consumer.start()
        self.net.flush()
        self.poll(consumer)
        self.assertEqual(self.heartbeat_subscriptions("CG")["T"], ("SQL92", SQL))
        self.assertIn(("SQL92", SQL), {(h.expression_type, h.subscription) for h in self.pulls()})
        other = LitePullConsumer("CG2", instance=self.instance, consume_from_where=CONSUME_FROM_FIRST_OFFSET)
        other.start()
        other.assign([MQ0], MessageSelector.by_sql("b IS NULL"))
        self.poll(other)
        self.assertIn(("SQL92", "b IS NULL"), {(h.expression_type, h.subscription) for h in self.pulls()})
        for c in (consumer, other):
            d = c.stop()
            self.net.flush()
            self.successResultOf(d)


class BlockingAndSparkTests(SynchronousTestCase):
    def test_blocking_pull_client_subscriptions(self) -> None:
        client = BlockingPullClient("CG", "127.0.0.1:9876")
        self.addCleanup(client.close)
        sql = client._subscription("T", MessageSelector.by_sql(SQL))
        self.assertEqual((sql.expression_type, sql.sub_string), ("SQL92", SQL))
        self.assertIs(client._subscription("T", MessageSelector.by_sql(SQL)), sql)  # built once
        tags = client._subscription("T", "A || B")
        self.assertEqual((tags.expression_type, tags.tags_set), ("TAG", ["A", "B"]))
        self.assertIs(client._subscription("T", MessageSelector.by_tag("A || B")), tags)

    def test_spark_option(self) -> None:
        base = {"nameServer": "127.0.0.1:9876", "topic": "T"}
        options = ReadOptions.parse({**base, "sql92": f" {SQL} "}, streaming=False)
        self.assertEqual(options.sub_expression, MessageSelector.by_sql(SQL))
        self.assertEqual(ReadOptions.parse(base, streaming=False).sub_expression, "*")
        with self.assertRaises(OptionError):
            ReadOptions.parse({**base, "sql92": "a > 1", "subExpression": "A"}, streaming=False)
        with self.assertRaises(OptionError):
            ReadOptions.parse({**base, "sql92": "  "}, streaming=True)
