"""Tests for message trace on the Twisted producer and push consumer, against the fake cluster on a memory clock."""

from __future__ import annotations

from typing import Any

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.client import LocalTransactionState, Message, MessageQueue, Producer, TransactionProducer
from rocketmq_tx.client.instance import MQClientInstance
from rocketmq_tx.client.litepull import CONSUME_FROM_FIRST_OFFSET, LitePullConsumer
from rocketmq_tx.client.push import ConsumeStatus, PushConsumer
from rocketmq_tx.common import trace
from rocketmq_tx.common.message import MessageExt
from rocketmq_tx.common.trace import ConsumeReturnType, MessageType, TraceContext, TraceType
from rocketmq_tx.testing.fakebroker import HALF_TOPIC, FakeCluster
from rocketmq_tx.testing.fakenet import FakeNetwork

BROKER = "10.0.0.1:10911"
TRACE = trace.RMQ_SYS_TRACE_TOPIC


class TraceTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.cluster = FakeCluster({"broker-a": BROKER})
        self.cluster.add_topic("T", 1)
        self.cluster.add_topic(TRACE, 1)
        self.net = FakeNetwork(self.cluster)
        self.instance = MQClientInstance(self.net.reactor, "127.0.0.1:9876", remoting=self.net.client)

    def traces(self) -> list[MessageExt]:
        return list(self.cluster.messages[("broker-a", TRACE, 0)])

    def records(self) -> list[TraceContext]:
        return [ctx for m in self.traces() for ctx in trace.decode(m.body.decode())]

    def producer(self, **kwargs: Any) -> Producer:
        producer = Producer("PG", instance=self.instance, enable_msg_trace=True, **kwargs)
        producer.start()
        return producer

    def send(self, producer: Producer, body: bytes, **props: str) -> Any:
        msg = Message("T", body)
        for k, v in props.items():
            msg.put_property(k, v)
        d = producer.send(msg)
        self.net.flush()
        return self.successResultOf(d)

    def test_pub_records_batched(self) -> None:
        """Two sends make one trace message after 500 ms, its keys the ids and the keys."""
        producer = self.producer()
        first = self.send(producer, b"one", KEYS="k1 k2", TAGS="TagA")
        second = self.send(producer, b"two")
        self.net.advance(0.3)
        self.assertEqual(self.traces(), [])
        self.net.advance(0.3)
        (message,) = self.traces()
        self.assertEqual(message.keys, [first.msg_id, "k1", "k2", second.msg_id])
        one, two = self.records()
        self.assertEqual((one.trace_type, one.group_name, one.region_id, one.success), (TraceType.Pub, "PG",
                                                                                        "DefaultRegion", True))
        self.assertEqual((one.beans[0].topic, one.beans[0].msg_id, one.beans[0].offset_msg_id, one.beans[0].tags,
                          one.beans[0].keys, one.beans[0].store_host, one.beans[0].body_length),
                         ("T", first.msg_id, first.offset_msg_id, "TagA", "k1 k2", BROKER, 3))
        self.assertEqual((two.beans[0].tags, two.beans[0].keys, two.beans[0].msg_type),
                         ("null", "null", MessageType.Normal_Msg))
        # The trace message itself is not traced, and the trace producer has its own group.
        self.net.advance(1.0)
        self.assertEqual(len(self.traces()), 1)
        (trace_group,) = [g for g in self.instance.heartbeat_data().producer_groups if g != "PG"]
        self.assertRegex(trace_group, r"^_INNER_TRACE_PRODUCER-PG-PRODUCE-\d+$")

    def test_stop_flushes(self) -> None:
        """stop() sends the records still waiting before the producer leaves."""
        producer = self.producer(trace_topic=TRACE)
        result = self.send(producer, b"x", DELAY="2")
        d = producer.stop()
        self.net.flush()
        self.successResultOf(d)
        (record,) = self.records()
        self.assertEqual((record.beans[0].msg_id, record.beans[0].msg_type), (result.msg_id, MessageType.Delay_Msg))

    def test_trace_off_by_broker_and_oneway(self) -> None:
        """A broker answering TRACE_ON=false, and oneway sends, make no record (Java)."""
        producer = self.producer()

        def no_trace(addr: str, request: Any) -> Any:
            response = self.cluster._send(addr, request)
            response.ext_fields["TRACE_ON"] = "false"
            return response
        self.cluster.script(310, no_trace)
        self.send(producer, b"x")
        producer.send_oneway(Message("T", b"y"))
        self.net.advance(1.0)
        self.assertEqual(self.traces(), [])

    def test_failed_trace_send_is_only_logged(self) -> None:
        """A trace message that cannot be sent is dropped and nothing stays pending."""
        producer = self.producer()
        self.send(producer, b"x")
        self.cluster.script(310, 14, 14, 14)  # SERVICE_NOT_AVAILABLE for every attempt of the trace message
        self.net.advance(0.6)
        self.net.advance(6.0)
        self.assertEqual(self.traces(), [])
        assert producer.trace_dispatcher is not None
        self.assertEqual(producer.trace_dispatcher._sending, set())

    def test_push_consumer_records(self) -> None:
        """Each consumed message gets a SubBefore and a SubAfter with the listener's outcome."""
        producer = Producer("PG", instance=self.instance)
        sent = []
        for body in (b"ok", b"bad"):
            msg = Message("T", body)
            msg.keys = body.decode() + "-key"
            d = producer.send(msg, queue=MessageQueue("T", "broker-a", 0))
            self.net.flush()
            sent.append(self.successResultOf(d))
        consumer = PushConsumer("CG", instance=self.instance, consume_from_where=CONSUME_FROM_FIRST_OFFSET,
                                enable_msg_trace=True)
        consumer.subscribe("T")

        def listener(msgs: list[MessageExt]) -> ConsumeStatus:
            if msgs[0].body == b"bad":
                return ConsumeStatus.RECONSUME_LATER
            return ConsumeStatus.CONSUME_SUCCESS
        consumer.register_listener(listener)
        consumer.start()
        self.net.flush()
        self.net.advance(0.6)
        records = self.records()
        befores = [r for r in records if r.trace_type is TraceType.SubBefore]
        afters = [r for r in records if r.trace_type is TraceType.SubAfter]
        self.assertEqual([r.beans[0].msg_id for r in befores], [s.msg_id for s in sent])
        self.assertEqual([r.beans[0].keys for r in befores], ["ok-key", "bad-key"])
        self.assertEqual({r.group_name for r in befores + afters}, {"CG"})
        self.assertEqual([(r.beans[0].msg_id, r.success, r.context_code) for r in afters],
                         [(sent[0].msg_id, True, ConsumeReturnType.SUCCESS),
                          (sent[1].msg_id, False, ConsumeReturnType.FAILED)])
        self.assertEqual([a.request_id for a in afters], [b.request_id for b in befores])
        d = consumer.stop()
        self.net.flush()
        self.successResultOf(d)

    def test_lite_pull_consumer_records(self) -> None:
        """A pull that finds messages gives one SubBefore and one SubAfter (success) per message."""
        producer = Producer("PG", instance=self.instance)
        sent = []
        for body in (b"a", b"b"):
            d = producer.send(Message("T", body), queue=MessageQueue("T", "broker-a", 0))
            self.net.flush()
            sent.append(self.successResultOf(d))
        consumer = LitePullConsumer("LG", instance=self.instance, consume_from_where=CONSUME_FROM_FIRST_OFFSET,
                                    enable_msg_trace=True, auto_commit=False)
        consumer.assign([MessageQueue("T", "broker-a", 0)])
        consumer.start()
        d = consumer.poll(timeout=1.0)
        self.net.flush()
        self.assertEqual([m.body for m in self.successResultOf(d)], [b"a", b"b"])
        d = consumer.poll(timeout=0.5)  # nothing more: no records
        for _ in range(5):
            self.net.advance(0.2)
        self.assertEqual(self.successResultOf(d), [])
        self.net.advance(0.6)
        records = self.records()
        befores = [r for r in records if r.trace_type is TraceType.SubBefore]
        afters = [r for r in records if r.trace_type is TraceType.SubAfter]
        self.assertEqual([r.beans[0].msg_id for r in befores], [s.msg_id for s in sent])
        self.assertEqual([r.beans[0].msg_id for r in afters], [s.msg_id for s in sent])
        self.assertEqual({r.group_name for r in befores + afters}, {"LG"})
        self.assertEqual({r.request_id for r in befores + afters}, {befores[0].request_id})  # one pull
        self.assertEqual({(r.success, r.context_code) for r in afters}, {(True, ConsumeReturnType.SUCCESS)})
        d = consumer.stop()
        self.net.flush()
        self.successResultOf(d)

    def test_transaction_producer_records(self) -> None:
        """A traced TransactionProducer: Pub of the half message, EndTransaction after it and after a check."""
        producer = TransactionProducer("TXG", instance=self.instance, enable_msg_trace=True,
                                       local_transaction=lambda msg, arg: arg,
                                       check_listener=lambda msg: LocalTransactionState.ROLLBACK_MESSAGE)
        producer.start()
        d = producer.send_message_in_transaction(Message("T", b"tx", properties={"KEYS": "tk"}),
                                                 LocalTransactionState.COMMIT_MESSAGE)
        self.net.flush()
        committed = self.successResultOf(d)
        d = producer.send_message_in_transaction(Message("T", b"tx2"), LocalTransactionState.UNKNOW)
        self.net.flush()
        unknown = self.successResultOf(d)
        (half,) = self.cluster.messages[("broker-a", HALF_TOPIC, 0)]
        self.net.servers[BROKER].send_oneway(self.cluster.check_request("broker-a", half.commit_log_offset))
        self.net.flush()
        self.net.advance(0.6)
        records = self.records()
        self.assertEqual([(r.trace_type, r.beans[0].msg_id) for r in records],
                         [(TraceType.Pub, committed.msg_id), (TraceType.EndTransaction, committed.msg_id),
                          (TraceType.Pub, unknown.msg_id), (TraceType.EndTransaction, unknown.msg_id),
                          (TraceType.EndTransaction, unknown.msg_id)])
        self.assertEqual(records[0].beans[0].msg_type, MessageType.Trans_Msg_Half)
        ends = [(r.beans[0].transaction_state, r.beans[0].from_transaction_check, r.beans[0].transaction_id)
                for r in records if r.trace_type is TraceType.EndTransaction]
        self.assertEqual(ends, [("COMMIT_MESSAGE", False, committed.msg_id), ("UNKNOW", False, unknown.msg_id),
                                ("ROLLBACK_MESSAGE", True, unknown.msg_id)])
        self.assertEqual((records[1].beans[0].keys, records[1].beans[0].store_host, records[1].region_id),
                         ("tk", BROKER, "DefaultRegion"))
