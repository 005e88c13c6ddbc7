"""Tests for the Twisted LitePullConsumer against the fake cluster on a memory clock."""

from __future__ import annotations

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.client import (
    CONSUME_FROM_FIRST_OFFSET,
    LitePullConsumer,
    Message,
    MessageQueue,
    MQClientError,
    Producer,
)
from rocketmq_tx.client.instance import MQClientInstance
from rocketmq_tx.remoting import RequestCode, ResponseCode
from rocketmq_tx.remoting.headers.client import UpdateConsumerOffsetRequestHeader
from rocketmq_tx.testing.fakebroker import FakeCluster
from rocketmq_tx.testing.fakenet import FakeNetwork

MQ0 = MessageQueue("T", "broker-a", 0)
MQ1 = MessageQueue("T", "broker-a", 1)


class LitePullTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.cluster = FakeCluster({"broker-a": "10.0.0.1:10911"})
        self.cluster.add_topic("T", 2)
        self.net = FakeNetwork(self.cluster)
        self.instance = MQClientInstance(self.net.reactor, "127.0.0.1:9876", remoting=self.net.client)
        producer = Producer("PG", instance=self.instance)
        for i in range(6):
            msg = Message("T", f"m{i}".encode())
            msg.tags = "A" if i % 2 == 0 else "B"
            d = producer.send(msg, queue=MQ0 if i < 4 else MQ1)
            self.net.flush()
            self.successResultOf(d)
        self.consumer = LitePullConsumer("CG", instance=self.instance, consume_from_where=CONSUME_FROM_FIRST_OFFSET,
                                         auto_commit=False)

    def poll(self, timeout: float = 1.0) -> list[bytes]:
        d = self.consumer.poll(timeout)
        self.net.flush()
        for _ in range(int(timeout / 0.2) + 2):
            if d.called:
                break
            self.net.advance(0.2)
        return sorted(m.body for m in self.successResultOf(d))

    def test_poll_from_first_and_commit(self) -> None:
        self.consumer.start()
        self.consumer.assign([MQ0, MQ1])
        self.assertEqual(self.poll(), [b"m0", b"m1", b"m2", b"m3", b"m4", b"m5"])
        self.assertEqual(self.poll(0.5), [])
        d = self.consumer.commit()
        self.net.flush()
        self.successResultOf(d)
        self.assertEqual((self.cluster.offsets[("CG", "T", 0)], self.cluster.offsets[("CG", "T", 1)]), (4, 2))
        d = self.consumer.committed(MQ0)
        self.net.flush()
        self.assertEqual(self.successResultOf(d), 4)

    def test_committed_offset_is_the_start(self) -> None:
        self.cluster.offsets[("CG", "T", 0)] = 3
        self.consumer.start()
        self.consumer.assign([MQ0])
        self.assertEqual(self.poll(), [b"m3"])

    def test_last_offset_default(self) -> None:
        self.consumer.consume_from_where = "CONSUME_FROM_LAST_OFFSET"
        self.consumer.start()
        self.consumer.assign([MQ0])
        self.assertEqual(self.poll(0.4), [])

    def test_seek_and_tags(self) -> None:
        self.consumer.start()
        self.consumer.assign([MQ0], "A")
        self.consumer.seek(MQ0, 1)
        self.assertEqual(self.poll(), [b"m2"])
        d = self.consumer.seek_to_begin(MQ0)
        self.net.flush()
        self.successResultOf(d)
        self.assertEqual(self.poll(), [b"m0", b"m2"])
        d = self.consumer.seek_to_end(MQ0)
        self.net.flush()
        self.successResultOf(d)
        self.assertEqual(self.consumer.pull_offsets[MQ0], 4)
        d = self.consumer.seek_to_timestamp(MQ0, 0)
        self.net.flush()
        self.successResultOf(d)
        self.assertEqual(self.consumer.pull_offsets[MQ0], 0)
        self.assertRaises(MQClientError, self.consumer.seek, MQ1, 0)

    def test_auto_commit_on_clock_and_stop(self) -> None:
        self.consumer.auto_commit = True
        self.consumer.start()
        self.consumer.assign([MQ0])
        self.poll()
        self.assertEqual(self.cluster.requests(RequestCode.UPDATE_CONSUMER_OFFSET), [])
        self.net.advance(5)
        (_, request), = self.cluster.requests(RequestCode.UPDATE_CONSUMER_OFFSET)
        self.assertEqual(UpdateConsumerOffsetRequestHeader.from_ext_fields(request.ext_fields).commit_offset, 4)
        self.net.advance(5)  # unchanged: not sent again
        self.assertEqual(len(self.cluster.requests(RequestCode.UPDATE_CONSUMER_OFFSET)), 1)
        d = self.consumer.stop()
        self.net.flush()
        self.successResultOf(d)

    def test_heartbeat_names_the_group(self) -> None:
        self.consumer.start()
        self.consumer.assign([MQ0])
        d = self.instance.send_heartbeat_to_all_brokers()
        self.net.flush()
        self.successResultOf(d)
        body = self.cluster.heartbeats["10.0.0.1:10911"][-1]
        consumer = body["consumerDataSet"][0]
        self.assertEqual((consumer["groupName"], consumer["consumeType"], consumer["subscriptionDataSet"][0]["topic"]),
                         ("CG", "CONSUME_ACTIVELY", "T"))

    def test_pull_error_is_logged_not_raised(self) -> None:
        self.consumer.start()
        self.consumer.assign([MQ0])
        self.consumer.seek(MQ0, 0)
        self.cluster.script(RequestCode.PULL_MESSAGE, ResponseCode.SYSTEM_ERROR)
        self.assertEqual(self.poll(), [b"m0", b"m1", b"m2", b"m3"])
        self.flushLoggedErrors()

    def test_poll_before_start(self) -> None:
        self.failureResultOf(self.consumer.poll(), MQClientError)

    def test_consume_from_timestamp(self) -> None:
        """Without a committed offset, CONSUME_FROM_TIMESTAMP starts at the first message stored at or after it."""
        stored = self.cluster.messages[("broker-a", "T", 0)]
        for i, msg in enumerate(stored):
            msg.store_timestamp = 1000 * (i + 1)
        consumer = LitePullConsumer("CG", instance=self.instance, consume_from_where="CONSUME_FROM_TIMESTAMP",
                                    consume_timestamp_ms=2500, auto_commit=False)
        consumer.start()
        consumer.assign([MQ0])
        self.consumer = consumer
        self.assertEqual(self.poll(), [b"m2", b"m3"])


class SubscribeTests(SynchronousTestCase):
    """subscribe(): the group's members share the topic's queues."""

    setUp = LitePullTests.setUp
    poll = LitePullTests.poll

    def test_subscribe_takes_every_queue_alone(self) -> None:
        self.consumer.subscribe("T")
        self.consumer.start()
        self.net.flush()
        self.assertEqual(self.consumer.assigned, [MQ0, MQ1])
        self.assertEqual(self.poll(), [b"m0", b"m1", b"m2", b"m3", b"m4", b"m5"])
        (_, heartbeat), = [h for h in self.cluster.heartbeats.items()]
        self.assertEqual(heartbeat[-1]["consumerDataSet"][0]["consumeType"], "CONSUME_ACTIVELY")

    def test_members_split_and_dropped_queue_committed(self) -> None:
        self.consumer.subscribe("T", "A")
        self.consumer.start()
        self.net.flush()
        self.assertEqual(self.poll(), [b"m0", b"m2", b"m4"])
        broker = self.cluster.brokers["broker-a"]
        self.cluster.heartbeats[broker].append({"clientID": "zzz@other", "consumerDataSet": [{"groupName": "CG"}]})
        self.net.advance(20)  # the periodic rebalance: the other member takes queue 1
        self.assertEqual(self.consumer.assigned, [MQ0])
        self.assertEqual(self.cluster.offsets[("CG", "T", 1)], 2, "the dropped queue's offset is committed")
        self.cluster.heartbeats[broker] = [h for h in self.cluster.heartbeats[broker] if h["clientID"] != "zzz@other"]
        from rocketmq_tx.remoting import RemotingCommand

        self.net.servers[broker].send_oneway(RemotingCommand.request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED,
                                                                     {"consumerGroup": "CG"}, oneway=True))
        self.net.flush()
        self.assertEqual(self.consumer.assigned, [MQ0, MQ1])

    def test_unanswered_member_list_keeps_the_assignment(self) -> None:
        self.consumer.subscribe("T")
        self.consumer.start()
        self.net.flush()
        self.cluster.script(RequestCode.GET_CONSUMER_LIST_BY_GROUP, ResponseCode.SYSTEM_ERROR)
        self.net.advance(20)  # the periodic rebalance meets the refusal
        self.assertEqual(len(self.cluster.requests(RequestCode.GET_CONSUMER_LIST_BY_GROUP)), 2)
        self.assertEqual(self.consumer.assigned, [MQ0, MQ1])

    def test_subscribe_and_assign_exclude_each_other(self) -> None:
        self.consumer.subscribe("T")
        with self.assertRaisesRegex(MQClientError, "mutually exclusive"):
            self.consumer.assign([MQ0])
