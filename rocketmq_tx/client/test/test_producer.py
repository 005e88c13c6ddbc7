"""Tests for the Twisted Producer against the fake cluster over the in-memory network."""

from __future__ import annotations

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.client import Message, MessageQueue, MQBrokerError, MQClientError, Producer, SendStatus
from rocketmq_tx.client.instance import MQClientInstance
from rocketmq_tx.remoting import RemotingTimeoutError, RequestCode, ResponseCode
from rocketmq_tx.remoting.headers.send import SendMessageRequestHeaderV2
from rocketmq_tx.testing.fakebroker import SILENT, FakeCluster
from rocketmq_tx.testing.fakenet import FakeNetwork


class ProducerTests(SynchronousTestCase):
    chunk: int | None = None

    def setUp(self) -> None:
        self.cluster = FakeCluster({"broker-a": "10.0.0.1:10911", "broker-b": "10.0.0.2:10911"})
        self.cluster.add_topic("T", 2)
        self.net = FakeNetwork(self.cluster, chunk=self.chunk)
        self.instance = MQClientInstance(self.net.reactor, "127.0.0.1:9876", remoting=self.net.client)
        self.producer = Producer("PG", instance=self.instance)
        self.producer.start()

    def run_send(self, d):  # type: ignore[no-untyped-def]
        self.net.flush()
        return self.successResultOf(d)

    def sent_to(self) -> list[str]:
        return [a for a, _ in self.cluster.requests(RequestCode.SEND_MESSAGE_V2)]

    def test_send(self) -> None:
        msg = Message("T", b"hello")
        msg.tags, msg.keys = "TagA", "k1 k2"
        msg.put_property("p", "v")
        result = self.run_send(self.producer.send(msg))
        self.assertEqual((result.send_status, result.msg_id), (SendStatus.SEND_OK, msg.unique_key))
        mq = result.message_queue
        stored = self.cluster.messages[(mq.broker_name, "T", mq.queue_id)][0]
        self.assertEqual((stored.body, stored.tags, stored.keys, stored.properties["p"], stored.unique_key),
                         (b"hello", "TagA", ["k1", "k2"], "v", msg.unique_key))
        self.assertEqual(result.offset_msg_id, stored.offset_msg_id)

    def test_round_robin(self) -> None:
        queues = {self.run_send(self.producer.send(Message("T", b"x"))).message_queue for _ in range(8)}
        self.assertEqual(len(queues), 4)

    def test_retry_moves_broker(self) -> None:
        self.cluster.script(RequestCode.SEND_MESSAGE_V2, ResponseCode.SYSTEM_ERROR)
        result = self.run_send(self.producer.send(Message("T", b"x")))
        first, second = self.sent_to()
        self.assertNotEqual(first, second)
        self.assertEqual(self.cluster.brokers[result.message_queue.broker_name], second)

    def test_non_retryable_code(self) -> None:
        self.cluster.script(RequestCode.SEND_MESSAGE_V2, ResponseCode.MESSAGE_ILLEGAL)
        d = self.producer.send(Message("T", b"x"))
        self.net.flush()
        self.assertEqual(self.failureResultOf(d, MQBrokerError).value.code, ResponseCode.MESSAGE_ILLEGAL)

    def test_timeout_on_clock(self) -> None:
        """A silent broker times out on the clock; the whole send timeout is spent, as in Java."""
        self.cluster.script(RequestCode.SEND_MESSAGE_V2, SILENT)
        d = self.producer.send(Message("T", b"x"), timeout=2.0)
        self.net.flush()
        self.assertNoResult(d)
        self.net.advance(2.1)
        failure = self.failureResultOf(d, MQClientError)
        self.assertIsInstance(failure.value.__cause__, RemotingTimeoutError)

    def test_broker_down_avoided(self) -> None:
        """A refused broker costs one attempt; the retry goes to the other broker."""
        self.run_send(self.producer.send(Message("T", b"warm")))
        self.net.kill("10.0.0.1:10911")
        for _ in range(4):
            result = self.run_send(self.producer.send(Message("T", b"x")))
            self.assertEqual(result.message_queue.broker_name, "broker-b")

    def test_ordered_batch_oneway_callback(self) -> None:
        queues = {self.run_send(self.producer.send_orderly(Message("T", b"o"), "order-9")).message_queue
                  for _ in range(3)}
        self.assertEqual(len(queues), 1)
        mq = MessageQueue("T", "broker-b", 1)
        self.assertEqual(self.run_send(self.producer.send(Message("T", b"q"), queue=mq)).message_queue, mq)
        msgs = [Message("T", b"1"), Message("T", b"2")]
        batch = self.run_send(self.producer.send_batch(msgs, queue=mq))
        self.assertEqual(batch.msg_id, f"{msgs[0].unique_key},{msgs[1].unique_key}")
        self.run_send(self.producer.send_oneway(Message("T", b"one"), queue=mq))
        self.assertEqual([m.body for m in self.cluster.messages[("broker-b", "T", 1)]][-3:], [b"1", b"2", b"one"])
        got: list[object] = []
        self.producer.send_callback(Message("T", b"cb"), got.append, got.append)
        self.producer.send_callback(Message("", b"cb"), got.append, got.append)
        self.net.flush()
        self.assertIsInstance(got[0], MQClientError)  # the invalid one fails at once
        self.assertEqual(got[1].send_status, SendStatus.SEND_OK)  # type: ignore[attr-defined]

    def test_headers(self) -> None:
        self.run_send(self.producer.send(Message("T", b"x" * 5000)))
        (_, request), = self.cluster.requests(RequestCode.SEND_MESSAGE_V2)
        header = SendMessageRequestHeaderV2.from_ext_fields(request.ext_fields)
        self.assertEqual((header.producer_group, header.sys_flag, header.default_topic), ("PG", 0x301, "TBW102"))

    def test_auto_create(self) -> None:
        self.cluster.add_topic("TBW102", 8)
        result = self.run_send(self.producer.send(Message("NEW", b"x")))
        self.assertEqual(result.message_queue.topic, "NEW")


class PartialFrameProducerTests(ProducerTests):
    """The same, with every byte stream delivered in 5-byte pieces."""

    chunk = 5
