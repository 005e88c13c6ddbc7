"""Tests for the PushConsumer against the fake cluster on a memory clock."""

from __future__ import annotations

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.client import Message, MessageQueue, Producer
from rocketmq_tx.client.instance import MQClientInstance
from rocketmq_tx.client.litepull import CONSUME_FROM_FIRST_OFFSET
from rocketmq_tx.client.push import ConsumeOrderlyStatus, ConsumeStatus, PushConsumer
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.remoting.headers.client import ConsumerSendMsgBackRequestHeader
from rocketmq_tx.remoting.headers.pull import PullMessageRequestHeader, PullSysFlag
from rocketmq_tx.testing.fakebroker import FakeCluster
from rocketmq_tx.testing.fakenet import FakeNetwork

BROKER = "10.0.0.1:10911"


class PushTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.cluster = FakeCluster({"broker-a": BROKER})
        self.cluster.add_topic("T", 4)
        self.net = FakeNetwork(self.cluster)
        self.instance = MQClientInstance(self.net.reactor, "127.0.0.1:9876", remoting=self.net.client)
        self.producer = Producer("PG", instance=self.instance)
        self.received: list = []
        self.status = ConsumeStatus.CONSUME_SUCCESS

    def send(self, body: bytes, queue_id: int, tags: str = "A") -> None:
        msg = Message("T", body)
        msg.tags = tags
        d = self.producer.send(msg, queue=MessageQueue("T", "broker-a", queue_id))
        self.net.flush()
        self.successResultOf(d)

    def consumer(self, expression: str = "*") -> PushConsumer:
        consumer = PushConsumer("CG", instance=self.instance, consume_from_where=CONSUME_FROM_FIRST_OFFSET)
        consumer.subscribe("T", expression)

        def listener(msgs):  # type: ignore[no-untyped-def]
            self.received.extend(msgs)
            return self.status

        consumer.register_listener(listener)
        return consumer

    def test_consumes_in_queue_order_and_commits(self) -> None:
        for i in range(3):
            self.send(f"q0-{i}".encode(), 0)
        self.send(b"q2-0", 2, tags="B")
        consumer = self.consumer("A")
        consumer.start()
        self.net.flush()
        self.assertEqual(sorted(q.queue_id for q in consumer.queues if q.topic == "T"), [0, 1, 2, 3])
        self.assertEqual([m.body for m in self.received], [b"q0-0", b"q0-1", b"q0-2"])
        self.send(b"q1-late", 1)
        self.net.advance(1.0)  # the held long poll answers
        self.assertEqual(self.received[-1].body, b"q1-late")
        self.net.advance(5.0)  # periodic oneway commit
        self.assertEqual(self.cluster.offsets[("CG", "T", 0)], 3)
        self.assertEqual(self.cluster.offsets[("CG", "T", 1)], 1)
        d = consumer.stop()
        self.net.flush()
        self.successResultOf(d)
        self.assertEqual(self.cluster.offsets[("CG", "T", 2)], 1)

    def test_reconsume_later_sends_back(self) -> None:
        self.send(b"bad", 0)
        self.status = ConsumeStatus.RECONSUME_LATER
        consumer = self.consumer()
        consumer.start()
        self.net.flush()
        (_, request), = self.cluster.requests(RequestCode.CONSUMER_SEND_MSG_BACK)
        header = ConsumerSendMsgBackRequestHeader.from_ext_fields(request.ext_fields)
        stored = self.cluster.messages[("broker-a", "T", 0)][0]
        self.assertEqual((header.offset, header.group, header.delay_level, header.max_reconsume_times,
                          header.origin_msg_id), (stored.commit_log_offset, "CG", 0, 16, stored.msg_id))
        self.assertEqual(consumer.queues[MessageQueue("T", "broker-a", 0)].offset, 1)

    def test_group_members_split_queues(self) -> None:
        """Another member's heartbeat halves our share (Java's averagely strategy)."""
        self.cluster.heartbeats[BROKER].append({"clientID": "0.0.0.0@other", "consumerDataSet": [{"groupName": "CG"}]})
        consumer = self.consumer()
        consumer.start()
        self.net.flush()
        mine = sorted(q.queue_id for q in consumer.queues if q.topic == "T")
        self.assertEqual(len(mine), 2)
        self.cluster.heartbeats[BROKER] = [h for h in self.cluster.heartbeats[BROKER]
                                           if h["clientID"] != "0.0.0.0@other"]
        # The broker says the membership changed: rebalance at once.
        self.net.servers[BROKER].send_oneway(RemotingCommand.request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED,
                                                                     {"consumerGroup": "CG"}, oneway=True))
        self.net.flush()
        self.assertEqual(sorted(q.queue_id for q in consumer.queues if q.topic == "T"), [0, 1, 2, 3])

    def test_rebalance_drops_and_commits(self) -> None:
        self.send(b"x", 3)
        consumer = self.consumer()
        consumer.start()
        self.net.flush()
        self.cluster.heartbeats[BROKER].append({"clientID": "zzz@other", "consumerDataSet": [{"groupName": "CG"}]})
        self.net.advance(20)
        self.assertNotIn(MessageQueue("T", "broker-a", 3), consumer.queues)
        self.assertEqual(self.cluster.offsets[("CG", "T", 3)], 1)

    def test_retry_topic_created_by_heartbeat(self) -> None:
        """The %RETRY% topic exists only after our heartbeat; the first rebalance still picks up its queue."""
        self.assertNotIn("%RETRY%CG", self.cluster.topics)
        consumer = self.consumer()
        consumer.start()
        self.net.flush()
        self.assertIn(MessageQueue("%RETRY%CG", "broker-a", 0), consumer.queues)
        retried = Message("%RETRY%CG", b"again")
        retried.put_property("RETRY_TOPIC", "T")
        d = self.producer.send(retried, queue=MessageQueue("%RETRY%CG", "broker-a", 0))
        self.net.flush()
        self.successResultOf(d)
        self.net.advance(1.0)
        self.assertEqual([(m.topic, m.body) for m in self.received], [("T", b"again")])

    def _consume_two(self) -> PushConsumer:
        """A started consumer that has consumed m0 and m1 from queue 0."""
        for i in range(2):
            self.send(f"m{i}".encode(), 0)
        consumer = self.consumer()
        consumer.start()
        self.net.flush()
        self.assertEqual([m.body for m in self.received], [b"m0", b"m1"])
        return consumer

    def _reset(self, body: bytes) -> None:
        """The broker sends RESET_CONSUMER_CLIENT_OFFSET for topic T with this ResetOffsetBody."""
        self.net.servers[BROKER].send_oneway(RemotingCommand.request(
            RequestCode.RESET_CONSUMER_CLIENT_OFFSET, {"topic": "T", "group": "CG", "timestamp": "0",
                                                       "isForce": "true"}, body, oneway=True))
        self.net.flush()
        self.net.advance(1.0)

    def test_reset_offset_from_broker(self) -> None:
        """RESET_CONSUMER_CLIENT_OFFSET with fastjson's MessageQueue-object keys rewinds a running consumer."""
        self._consume_two()
        self._reset(b'{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:0,'
                    b'{"brokerName":"broker-z","queueId":0,"topic":"T"}:5}}')
        self.assertEqual([m.body for m in self.received], [b"m0", b"m1", b"m0", b"m1"])
        self.assertNotIn(("CG", "T", 5), self.cluster.offsets)

    def test_reset_offset_survives_a_failed_commit(self) -> None:
        """The rewound queue pulls from the reset offset itself; a commit the broker refuses does not undo it."""
        consumer = self._consume_two()
        self.net.advance(5.0)  # offsets committed: a read-back would answer 2
        self.assertEqual(self.cluster.offsets[("CG", "T", 0)], 2)
        self.cluster.script(RequestCode.UPDATE_CONSUMER_OFFSET, ResponseCode.SYSTEM_ERROR)
        self._reset(b'{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:0}}')
        self.assertEqual([m.body for m in self.received], [b"m0", b"m1", b"m0", b"m1"])
        self.assertEqual(len([q for q in consumer.queues if q.topic == "T"]), 4)

    def test_unanswered_member_list_keeps_queues(self) -> None:
        """Java's rebalanceByTopic: no member list (the broker timed out), no change; not a drop of everything."""
        consumer = self.consumer()
        consumer.start()
        self.net.flush()
        before = dict(consumer.queues)
        asked = len(self.cluster.requests(RequestCode.GET_CONSUMER_LIST_BY_GROUP))
        self.cluster.script(RequestCode.GET_CONSUMER_LIST_BY_GROUP, ResponseCode.SYSTEM_ERROR,
                            ResponseCode.SYSTEM_ERROR)
        self.net.advance(20)  # the periodic rebalance, both topics' member lists refused
        self.assertEqual(len(self.cluster.requests(RequestCode.GET_CONSUMER_LIST_BY_GROUP)), asked + 2)
        self.assertEqual(consumer.queues, before)
        self.assertFalse(any(pq.dropped for pq in consumer.queues.values()))

    def test_consume_from_timestamp(self) -> None:
        for i in range(3):
            self.send(f"t{i}".encode(), 0)
        for i, msg in enumerate(self.cluster.messages[("broker-a", "T", 0)]):
            msg.store_timestamp = 1000 * (i + 1)
        consumer = self.consumer()
        consumer.consume_from_where = "CONSUME_FROM_TIMESTAMP"
        consumer.consume_timestamp_ms = 1500
        consumer.start()
        self.net.flush()
        self.assertEqual([m.body for m in self.received], [b"t1", b"t2"])

    def test_broadcasting(self) -> None:
        """BROADCASTING: every queue despite other members, offsets in a local file (fastjson shape), no send-back."""
        from pathlib import Path

        from rocketmq_tx.client.push import BROADCASTING

        self.send(b"b0", 0)
        self.send(b"b1", 3)
        self.cluster.heartbeats[BROKER].append({"clientID": "0.0.0.0@other", "consumerDataSet": [{"groupName": "CG"}]})
        directory = self.mktemp()
        consumer = PushConsumer("CG", instance=self.instance, consume_from_where=CONSUME_FROM_FIRST_OFFSET,
                                message_model=BROADCASTING, offset_store_dir=directory)
        consumer.subscribe("T")
        consumer.register_listener(lambda msgs: (self.received.extend(msgs), ConsumeStatus.RECONSUME_LATER)[1])
        consumer.start()
        self.net.flush()
        self.assertEqual(sorted(q.queue_id for q in consumer.queues), [0, 1, 2, 3])
        self.assertEqual(sorted(m.body for m in self.received), [b"b0", b"b1"])
        self.assertEqual(self.cluster.requests(RequestCode.CONSUMER_SEND_MSG_BACK), [])
        d = consumer.stop()
        self.net.flush()
        self.successResultOf(d)
        path = Path(directory) / self.instance.client_id / "CG" / "offsets.json"
        text = path.read_text()
        self.assertIn('{"brokerName":"broker-a","queueId":0,"topic":"T"}:1', text.replace(" ", ""))
        self.assertNotIn(("CG", "T", 0), self.cluster.offsets)
        # A new consumer with the same client id resumes from the file.
        again = PushConsumer("CG", instance=self.instance, consume_from_where=CONSUME_FROM_FIRST_OFFSET,
                             message_model=BROADCASTING, offset_store_dir=directory)
        again.subscribe("T")
        again.register_listener(lambda msgs: (self.received.extend(msgs), ConsumeStatus.CONSUME_SUCCESS)[1])
        again.start()
        self.net.flush()
        self.assertEqual(len(self.received), 2)


class OrderlyTests(SynchronousTestCase):
    """An orderly listener: consumption under the broker's queue locks."""

    setUp = PushTests.setUp
    send = PushTests.send

    def orderly(self, **kwargs: object) -> PushConsumer:
        consumer = PushConsumer("CG", instance=self.instance, consume_from_where=CONSUME_FROM_FIRST_OFFSET,
                                **kwargs)  # type: ignore[arg-type]
        consumer.subscribe("T")
        self.statuses: list = []

        def listener(msgs):  # type: ignore[no-untyped-def]
            self.received.extend(msgs)
            return self.statuses.pop(0) if self.statuses else ConsumeOrderlyStatus.SUCCESS

        consumer.register_listener(listener, orderly=True)
        return consumer

    def test_locks_then_consumes_in_order(self) -> None:
        for i in range(3):
            self.send(f"o{i}".encode(), 1)
        consumer = self.orderly()
        consumer.start()
        self.net.flush()
        client_id = self.instance.client_id
        self.assertEqual({mq.queue_id for (group, mq), holder in self.cluster.locks.items()
                          if group == "CG" and mq.topic == "T" and holder == client_id}, {0, 1, 2, 3})
        self.assertEqual([m.body for m in self.received], [b"o0", b"o1", b"o2"])
        d = consumer.stop()
        self.net.flush()
        self.successResultOf(d)
        self.assertEqual(self.cluster.offsets[("CG", "T", 1)], 3)
        self.assertEqual(self.cluster.locks, {}, "stop() gives the locks back")

    def test_suspend_redelivers_the_same_batch_later(self) -> None:
        self.send(b"first", 0)
        self.send(b"second", 0)
        consumer = self.orderly()
        self.statuses = [ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT]
        consumer.start()
        self.net.flush()
        self.assertEqual([m.body for m in self.received], [b"first"])
        self.net.advance(1.0)  # suspend_current_queue_time
        self.assertEqual([m.body for m in self.received], [b"first", b"first", b"second"])
        self.assertEqual(self.received[1].reconsume_times, 1)
        self.assertEqual(self.cluster.requests(RequestCode.CONSUMER_SEND_MSG_BACK), [])

    def test_past_max_reconsume_times_goes_to_dlq(self) -> None:
        self.send(b"poison", 2)
        self.send(b"next", 2)
        consumer = self.orderly(max_reconsume_times=2)
        self.statuses = [ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT] * 2
        consumer.start()
        self.net.flush()
        self.net.advance(1.0)
        (_, request), = self.cluster.requests(RequestCode.CONSUMER_SEND_MSG_BACK)
        self.assertEqual(ConsumerSendMsgBackRequestHeader.from_ext_fields(request.ext_fields).delay_level, -1)
        self.assertEqual([m.body for m in self.received], [b"poison", b"poison", b"next"])

    def test_a_queue_locked_by_another_member_waits(self) -> None:
        """Assigned but locked elsewhere: not consumed until the other member lets go."""
        mq = MessageQueue("T", "broker-a", 3)
        self.cluster.locks[("CG", mq)] = "10.0.0.9@other"
        self.send(b"held", 3)
        consumer = self.orderly()
        consumer.start()
        self.net.flush()
        self.assertNotIn(mq, consumer.queues)
        self.assertEqual(self.received, [])
        del self.cluster.locks[("CG", mq)]  # the other member unlocked it
        self.net.advance(20)  # next rebalance
        self.assertIn(mq, consumer.queues)
        self.assertEqual([m.body for m in self.received], [b"held"])

    def test_lost_lock_pauses_the_queue(self) -> None:
        consumer = self.orderly()
        consumer.start()
        self.net.flush()
        mq = MessageQueue("T", "broker-a", 0)
        self.cluster.locks[("CG", mq)] = "10.0.0.9@other"  # e.g. our lock expired on the broker
        self.net.advance(20)  # lock renewal: ours is gone
        self.send(b"late", 0)
        self.net.advance(1.0)
        self.assertEqual(self.received, [])
        del self.cluster.locks[("CG", mq)]
        self.net.advance(3.0)  # the paused loop retries the lock
        self.net.advance(1.0)
        self.assertEqual([m.body for m in self.received], [b"late"])


class RunningInfoTests(SynchronousTestCase):
    """GET_CONSUMER_RUNNING_INFO (307) relayed by a broker: what mqadmin consumerStatus reads."""

    setUp = PushTests.setUp
    send = PushTests.send

    def ask(self, group: str) -> RemotingCommand:
        responses: list = []
        request = RemotingCommand.request(RequestCode.GET_CONSUMER_RUNNING_INFO, {
            "consumerGroup": group, "clientId": self.instance.client_id, "jstackEnable": "false"})
        self.net.servers[BROKER].send_request(request, 3.0).addCallback(responses.append)
        self.net.flush()
        return responses[0]

    def test_running_info(self) -> None:
        from rocketmq_tx.common import fastjson

        self.send(b"x", 1)
        consumer = PushConsumer("CG", instance=self.instance, consume_from_where=CONSUME_FROM_FIRST_OFFSET)
        consumer.subscribe("T", "A || B")
        consumer.register_listener(lambda msgs: ConsumeOrderlyStatus.SUCCESS, orderly=True)
        consumer.start()
        self.net.flush()
        self.net.advance(5.0)  # a commit
        info = fastjson.loads(self.ask("CG").body)
        props = info["properties"]
        self.assertEqual((props["PROP_CONSUMEORDERLY"], props["PROP_CONSUME_TYPE"], props["PROP_NAMESERVER_ADDR"]),
                         ("true", "CONSUME_PASSIVELY", "127.0.0.1:9876"))
        int(props["PROP_CONSUMER_START_TIMESTAMP"])
        self.assertEqual(sorted(s["topic"] for s in info["subscriptionSet"]), ["%RETRY%CG", "T"])
        # fastjson writes MessageQueue keys as JSON objects: not parseable by json, so check the text.
        text = self.ask("CG").body.decode()
        self.assertIn('{"brokerName":"broker-a","queueId":1,"topic":"T"}:{"commitOffset":1,', text)
        self.assertIn('"locked":true', text)
        self.assertEqual(self.ask("OTHER").code, 1)



class SlaveFailoverTests(SynchronousTestCase):
    """Java 4.9's consumer with a master-slave pair: reads from the slave while the master is out of the route."""

    SLAVE = "10.0.0.11:10911"

    def setUp(self) -> None:
        self.cluster = FakeCluster({"broker-a": BROKER})
        self.cluster.slaves["broker-a"] = self.SLAVE
        self.cluster.add_topic("T", 1)
        self.net = FakeNetwork(self.cluster)
        self.instance = MQClientInstance(self.net.reactor, "127.0.0.1:9876", remoting=self.net.client)
        self.producer = Producer("PG", instance=self.instance)
        self.received: list[bytes] = []

    def send(self, body: bytes) -> None:
        d = self.producer.send(Message("T", body), queue=MessageQueue("T", "broker-a", 0))
        self.net.flush()
        self.successResultOf(d)

    def pulled_from(self) -> list[str]:
        return [addr for addr, _ in self.cluster.requests(RequestCode.PULL_MESSAGE)]

    def test_master_killed_then_back(self) -> None:
        self.send(b"m0")
        consumer = PushConsumer("CG", instance=self.instance, consume_from_where=CONSUME_FROM_FIRST_OFFSET)
        consumer.subscribe("T", "*")

        def listener(msgs):  # type: ignore[no-untyped-def]
            self.received.extend(m.body for m in msgs)
            return ConsumeStatus.CONSUME_SUCCESS

        consumer.register_listener(listener)
        consumer.start()
        self.net.flush()
        self.assertEqual(self.received, [b"m0"])
        self.assertEqual(set(self.pulled_from()), {BROKER})
        # a consumer's heartbeats go to the slave too (Java 4.9)
        self.assertEqual({a for a, _ in self.cluster.requests(RequestCode.HEART_BEAT)}, {BROKER, self.SLAVE})
        self.send(b"m1")  # replicated before the master dies (the fake's slave shares its messages)
        self.net.kill(BROKER)
        self.cluster.unrouted.add(BROKER)  # the name server drops the dead master
        self.net.advance(1.0)
        seen = len(self.cluster.seen)
        for _ in range(80):  # pulls fail every 3 s until the 30 s route refresh names the slave alone
            self.net.advance(1.0)
        self.assertEqual(self.received, [b"m0", b"m1"])
        self.assertEqual(self.pulled_from()[-1], self.SLAVE)
        slave_pulls = [PullMessageRequestHeader.from_ext_fields(r.ext_fields)
                       for a, r in self.cluster.seen[seen:] if a == self.SLAVE and r.code == RequestCode.PULL_MESSAGE]
        self.assertTrue(slave_pulls)
        self.assertFalse(any(h.sys_flag & PullSysFlag.COMMIT_OFFSET for h in slave_pulls))
        # the periodic commit goes to the slave while no master is in the route (Java's RemoteBrokerOffsetStore)
        self.assertIn(self.SLAVE, [a for a, _ in self.cluster.requests(RequestCode.UPDATE_CONSUMER_OFFSET)])
        self.assertEqual(self.cluster.offsets[("CG", "T", 0)], 2)
        # the master restarts and is routed again: pulls and commits go back to it
        self.cluster.down.discard(BROKER)
        self.cluster.unrouted.clear()
        for _ in range(40):
            self.net.advance(1.0)
        self.send(b"m2")
        self.net.advance(2.0)
        self.assertEqual(self.received, [b"m0", b"m1", b"m2"])
        self.net.advance(2.0)  # a pull held by the slave answers; the slave suggests the master (id 0)
        self.assertEqual(self.pulled_from()[-1], BROKER)
        self.assertEqual(self.cluster.requests(RequestCode.UPDATE_CONSUMER_OFFSET)[-1][0], BROKER)
        d = consumer.stop()
        self.net.flush()
        self.successResultOf(d)
