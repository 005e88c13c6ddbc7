"""
SimpleConsumer against a real rocketmq-tx name server and broker in the same process
(:class:`~rocketmq_tx.client.test.test_admin.InProcessCluster`: loopback connections, a
memory reactor): POP receive, ack, redelivery after the invisible duration, a changed
invisible duration, the heartbeat it sends, and the requests as Java's client builds them.
"""

from __future__ import annotations

from typing import Any

from twisted.internet.defer import Deferred
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.client import Message, MessageQueue, MQClientError, Producer
from rocketmq_tx.client.admin import MQAdmin
from rocketmq_tx.client.instance import MQClientInstance
from rocketmq_tx.client.simpleconsumer import SimpleConsumer
from rocketmq_tx.client.test.test_admin import BROKER, CLUSTER, NS, InProcessCluster
from rocketmq_tx.common.message import MessageConst
from rocketmq_tx.common.route import TopicConfig
from rocketmq_tx.remoting import RequestCode
from rocketmq_tx.remoting.extrainfo import parse_extra_info
from rocketmq_tx.remoting.popapi import ReceivedMessage
from rocketmq_tx.remoting.popbodies import BatchAckMessageRequestBody

TOPIC = "SimpleTopic"
GROUP = "SimpleGroup"


class SimpleConsumerTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.cluster = InProcessCluster(self)
        self.requests: list[Any] = []
        remoting = self.cluster.client()
        invoke = remoting.invoke

        def recording(addr: str, request: Any, timeout: float) -> Deferred:
            self.requests.append((addr, request, timeout))
            return invoke(addr, request, timeout)

        remoting.invoke = recording  # type: ignore[method-assign]
        self.instance = MQClientInstance(self.cluster.reactor, NS, remoting=remoting)
        admin = MQAdmin(instance=self.instance)
        self.producer = Producer("SimplePG", instance=self.instance)
        self.assertEqual(self.result(admin.create_topic_in_cluster(CLUSTER, TopicConfig(TOPIC, 2, 2))), [BROKER])
        self.consumer = SimpleConsumer(GROUP, instance=self.instance, subscriptions={TOPIC: "*"}, await_duration=2.0)
        self.consumer.start()
        self.instance.start()
        self.addCleanup(self.stop)

    def stop(self) -> None:
        d = self.instance.stop()
        self.cluster.settle()
        self.successResultOf(d)

    def result(self, d: Deferred) -> Any:
        self.cluster.settle()
        return self.successResultOf(d)

    def send(self, body: bytes, queue_id: int = 0, tags: str | None = None) -> None:
        msg = Message(TOPIC, body)
        if tags:
            msg.tags = tags
        self.result(self.producer.send(msg, queue=MessageQueue(TOPIC, "broker-a", queue_id)))

    def receive(self, invisible: float = 5.0, max_messages: int = 32, waited: float = 3.0) -> list[ReceivedMessage]:
        """A receive; the reactor is advanced *waited* seconds (long polling) in small steps."""
        d = self.consumer.receive(max_messages, invisible)
        self.cluster.settle()
        steps = 0
        while not d.called and steps < waited * 10:
            self.cluster.reactor.advance(0.1)
            self.cluster.settle()
            steps += 1
        return self.successResultOf(d)

    def receive_until(self, seconds: float, invisible: float = 5.0) -> tuple[float, list[ReceivedMessage]]:
        """Receive again and again until something comes or *seconds* of reactor time pass: (when, messages)."""
        start = self.cluster.reactor.seconds()
        while self.cluster.reactor.seconds() - start < seconds:
            got = self.receive(invisible)
            if got:
                return self.cluster.reactor.seconds() - start, got
        return self.cluster.reactor.seconds() - start, []

    def advance(self, seconds: float) -> None:
        for _ in range(int(seconds * 10)):
            self.cluster.reactor.advance(0.1)
            self.cluster.settle()

    def pops(self) -> list[Any]:
        return [r for _, r, _ in self.requests if r.code == RequestCode.POP_MESSAGE]

    def test_receive_and_ack_not_redelivered(self) -> None:
        self.send(b"a", 0)
        self.send(b"b", 1)
        got = self.receive()
        self.assertEqual(sorted(m.body for m in got), [b"a", b"b"])
        for m in got:
            self.assertEqual((m.topic, m.reconsume_times, m.delivery_attempt), (TOPIC, 0, 1))
            info = parse_extra_info(m.receipt_handle)
            self.assertEqual((info.broker_name, info.queue_id, info.queue_offset, info.retry, info.invisible_time),
                             ("broker-a", m.queue_id, m.queue_offset, "0", 5000))
            self.assertEqual(m.properties[MessageConst.PROPERTY_POP_CK], m.receipt_handle)
            self.assertIn(MessageConst.PROPERTY_FIRST_POP_TIME, m.properties)
            self.assertIsNone(self.result(self.consumer.ack(m)))
        self.advance(7)
        self.assertEqual(self.receive(waited=3), [])
        # as Java's popAsync: queue -1, the poll time, the expression, and 10 s more to wait for the answer
        pop = self.pops()[0]
        self.assertEqual({k: pop.ext_fields[k] for k in ("queueId", "maxMsgNums", "invisibleTime", "pollTime",
                                                          "initMode", "expType", "exp", "bname", "consumerGroup")},
                         {"queueId": "-1", "maxMsgNums": "32", "invisibleTime": "5000", "pollTime": "2000",
                          "initMode": "1", "expType": "TAG", "exp": "*", "bname": "broker-a",
                          "consumerGroup": GROUP})
        self.assertEqual([t for _, r, t in self.requests if r.code == RequestCode.POP_MESSAGE][0], 12.0)
        acks = [r for _, r, _ in self.requests if r.code == RequestCode.ACK_MESSAGE]
        self.assertEqual([a.ext_fields["topic"] for a in acks], [TOPIC, TOPIC])

    def test_not_acked_is_redelivered_with_reconsume_times(self) -> None:
        self.send(b"a")
        first = self.receive(invisible=5)
        self.assertEqual([m.body for m in first], [b"a"])
        waited, again = self.receive_until(20)
        self.assertGreaterEqual(waited, 5 - 0.5)
        self.assertEqual([(m.body, m.topic, m.reconsume_times) for m in again], [(b"a", TOPIC, 1)])
        # from the POP retry topic: the handle's retry flag is 1, the ack goes to the retry topic
        self.assertEqual(parse_extra_info(again[0].receipt_handle).retry, "1")
        self.result(self.consumer.ack(again[0]))
        ack = [r for _, r, _ in self.requests if r.code == RequestCode.ACK_MESSAGE][-1]
        self.assertEqual(ack.ext_fields["topic"], f"%RETRY%{GROUP}_{TOPIC}")
        self.advance(5)
        self.assertEqual(self.receive(waited=3), [])

    def test_change_invisible_duration(self) -> None:
        self.send(b"a")
        (m,) = self.receive(invisible=2)
        old = m.receipt_handle
        # a change in the pop's own millisecond would checkpoint under the same key as the ack
        # of the old checkpoint (Java's too); the frozen test clock would make that certain
        self.advance(0.5)
        new = self.result(self.consumer.change_invisible_duration(m, 8))
        self.assertEqual(m.receipt_handle, new)
        self.assertNotEqual(new, old)
        self.assertEqual(parse_extra_info(new).invisible_time, 8000)
        waited, again = self.receive_until(20, invisible=2)
        self.assertGreaterEqual(waited, 8 - 0.5)  # not back after the first duration
        self.assertEqual([(x.body, x.reconsume_times) for x in again], [(b"a", 1)])

    def test_ack_of_a_malformed_handle_is_refused_before_sending(self) -> None:
        self.send(b"a")
        (m,) = self.receive(invisible=2)
        for handle in ("", "1 2 3", "0 1 2000 0 0 broker-a 0", "0 x 2000 0 0 broker-a 0 0"):
            d = self.consumer.ack(ReceivedMessage(m.message, handle, GROUP))
            self.cluster.settle()
            self.failureResultOf(d, MQClientError)
        self.assertEqual([r for _, r, _ in self.requests if r.code == RequestCode.ACK_MESSAGE], [])

    def test_tag_filter_and_heartbeat(self) -> None:
        self.consumer.subscribe(TOPIC, "TagA")
        self.send(b"a", tags="TagA")
        self.send(b"b", tags="TagB")
        self.assertEqual([m.body for m in self.receive()], [b"a"])
        self.advance(1.5)  # the first heartbeat
        heartbeats = [r for _, r, _ in self.requests if r.code == RequestCode.HEART_BEAT]
        self.assertTrue(heartbeats)
        self.assertIn(b'"consumeType":"CONSUME_ACTIVELY"', heartbeats[-1].body)
        self.assertIn(b'"subString":"TagA"', heartbeats[-1].body)

    def test_fifo(self) -> None:
        """order=true: a queue held while its messages are out, acks move it on, redelivery in order, counted."""
        fifo = SimpleConsumer("FifoGroup", instance=self.instance, subscriptions={TOPIC: "*"}, await_duration=2.0,
                              fifo=True)
        fifo.start()
        self.consumer = fifo
        for body in (b"a", b"b", b"c"):
            self.send(body)
        (a,) = self.receive(max_messages=1)
        self.assertEqual((a.body, a.reconsume_times), (b"a", 0))
        self.assertEqual(self.pops()[-1].ext_fields["order"], "true")
        self.assertEqual(self.receive(), [])  # the queue is held while "a" is out
        self.result(fifo.ack(a))
        got = self.receive(max_messages=2)
        self.assertEqual([m.body for m in got], [b"b", b"c"])
        waited, again = self.receive_until(20)  # not acked: the same two, in order, counted
        self.assertGreaterEqual(waited, 5 - 0.5)
        self.assertEqual([(m.body, m.reconsume_times) for m in again], [(b"b", 1), (b"c", 1)])
        for m in again:
            self.result(fifo.ack(m))
        self.assertEqual(self.receive(), [])

    def test_ack_batch(self) -> None:
        """One BATCH_ACK_MESSAGE for the messages of both queues; none comes back."""
        for i in range(4):
            self.send(b"m%d" % i, i % 2)
        got = self.receive(invisible=3)
        self.assertEqual(len(got), 4)
        self.assertIsNone(self.result(self.consumer.ack_batch(got)))
        (batch,) = [r for _, r, _ in self.requests if r.code == RequestCode.BATCH_ACK_MESSAGE]
        body = BatchAckMessageRequestBody.decode(batch.body)
        self.assertEqual(sorted((a.queue_id, a.offsets()) for a in body.acks), [(0, [0, 1]), (1, [0, 1])])
        self.assertEqual(self.receive_until(8)[1], [])  # past the invisible time: nothing comes back

    def test_validation(self) -> None:
        for d in (self.consumer.receive(33, 5), self.consumer.receive(0, 5), self.consumer.receive(1, 0)):
            self.cluster.settle()
            self.failureResultOf(d, MQClientError)
        stopped = SimpleConsumer(GROUP, instance=self.instance, subscriptions={TOPIC: "*"})
        self.failureResultOf(stopped.receive(1, 5), MQClientError)
        with self.assertRaises(MQClientError):
            SimpleConsumer(GROUP, instance=self.instance, subscriptions={})
