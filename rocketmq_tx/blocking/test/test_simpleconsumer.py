"""
BlockingSimpleConsumer against the scripted fake cluster over TCP: POP answered as a 5.x
broker answers (``startOffsetInfo`` / ``msgOffsetInfo``, a revived message already under its
original topic with the handle the broker gave it), brokers taken in turn, acks and changes
sent to the broker the handle names, the heartbeat and unregistration of the group.
"""

from __future__ import annotations

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.blocking import BlockingSimpleConsumer
from rocketmq_tx.common.message import MessageConst, MessageExt
from rocketmq_tx.common.messagecodec import encode_message
from rocketmq_tx.remoting import MQBrokerError, RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.remoting.api import MQClientError
from rocketmq_tx.remoting.extrainfo import build_extra_info, build_msg_offset_info, build_start_offset_info
from rocketmq_tx.remoting.headers.pop import ChangeInvisibleTimeResponseHeader, PopMessageResponseHeader
from rocketmq_tx.remoting.popapi import ReceivedMessage
from rocketmq_tx.remoting.popbodies import BatchAckMessageRequestBody
from rocketmq_tx.testing.fakebroker import ThreadedFakeServer

TOPIC, GROUP = "T", "G"
RETRY = f"%RETRY%{GROUP}_{TOPIC}"
POP_TIME = 1_700_000_000_000


def popped(addr: str, request: RemotingCommand, *, broker: str) -> RemotingCommand:
    """Two messages of queue 1 at offsets 5 and 6 (checkpoint from 5), one revived of the retry topic's queue 0."""
    msgs, start, offsets = [], "", ""
    for i, offset in enumerate((5, 6)):
        m = MessageExt(TOPIC, f"m{i}".encode(), queue_id=1, queue_offset=offset, store_host=("127.0.0.1", 1),
                       born_host=("127.0.0.1", 2))
        m.tags = "TagA" if i == 0 else "TagB"
        msgs.append(m)
    start = build_start_offset_info(start, TOPIC, 1, 5)
    offsets = build_msg_offset_info(offsets, TOPIC, 1, [5, 6])
    revived = MessageExt(TOPIC, b"r", queue_id=0, queue_offset=3, store_host=("127.0.0.1", 1),
                         born_host=("127.0.0.1", 2), reconsume_times=1)
    revived.tags = "TagA"
    revived.properties[MessageConst.PROPERTY_POP_CK] = build_extra_info(3, POP_TIME, 4000, 2, RETRY, broker, 0, 3)
    msgs.append(revived)
    start = build_start_offset_info(start, RETRY, 0, 3)
    offsets = build_msg_offset_info(offsets, RETRY, 0, [3])
    header = PopMessageResponseHeader(POP_TIME, 4000, 2, 0, start, offsets, None)
    return request.make_response(ResponseCode.SUCCESS, None, header.to_ext_fields(),
                                 b"".join(encode_message(m) for m in msgs))


class BlockingSimpleConsumerTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.server = ThreadedFakeServer(("broker-a", "broker-b"))
        self.addCleanup(self.server.close)
        self.cluster = self.server.cluster
        self.cluster.add_topic(TOPIC, 2)
        self.consumer = BlockingSimpleConsumer(GROUP, self.server.namesrv_addr, subscriptions={TOPIC: "TagA"},
                                               await_duration=1.5)
        self.addCleanup(self.consumer.close)

    def test_receive_ack_change(self) -> None:
        addr_a, addr_b = self.cluster.brokers["broker-a"], self.cluster.brokers["broker-b"]
        self.cluster.script(RequestCode.POP_MESSAGE, lambda a, r: popped(a, r, broker="broker-a"),
                            ResponseCode.POLLING_TIMEOUT)
        self.cluster.script(RequestCode.ACK_MESSAGE, ResponseCode.SUCCESS, ResponseCode.SUCCESS,
                            ResponseCode.SUCCESS)
        change = ChangeInvisibleTimeResponseHeader(POP_TIME + 10, 9000, 3)
        self.cluster.script(RequestCode.CHANGE_MESSAGE_INVISIBLETIME,
                            lambda a, r: r.make_response(ResponseCode.SUCCESS, None, change.to_ext_fields()))
        with self.consumer:
            got = self.consumer.receive(8, 4)
            self.assertEqual(self.consumer.receive(8, 4), [])  # the next broker: nothing there
        # TagB was dropped by the client's tag filter and acked, as Java's processPopResult does
        self.assertEqual([(m.body, m.topic, m.reconsume_times, m.queue_id, m.queue_offset) for m in got],
                         [(b"m0", TOPIC, 0, 1, 5), (b"r", TOPIC, 1, 0, 3)])
        self.assertEqual(got[0].receipt_handle, f"5 {POP_TIME} 4000 2 0 broker-a 1 5")
        self.assertEqual(got[1].receipt_handle, f"3 {POP_TIME} 4000 2 1 broker-a 0 3")
        self.assertEqual(got[0].properties[MessageConst.PROPERTY_FIRST_POP_TIME], str(POP_TIME))
        pops = self.cluster.requests(RequestCode.POP_MESSAGE)
        self.assertEqual([a for a, _ in pops], [addr_a, addr_b])
        self.assertEqual({k: pops[0][1].ext_fields[k] for k in ("queueId", "maxMsgNums", "invisibleTime", "pollTime",
                                                                 "expType", "exp", "bname", "initMode")},
                         {"queueId": "-1", "maxMsgNums": "8", "invisibleTime": "4000", "pollTime": "1500",
                          "expType": "TAG", "exp": "TagA", "bname": "broker-a", "initMode": "1"})
        acks = self.cluster.requests(RequestCode.ACK_MESSAGE)
        self.assertEqual([(a, r.ext_fields["topic"], r.ext_fields["offset"]) for a, r in acks],
                         [(addr_a, TOPIC, "6")])
        with self.consumer:
            self.consumer.ack(got[1])
            new = self.consumer.change_invisible_duration(got[0], 9)
        acks = self.cluster.requests(RequestCode.ACK_MESSAGE)
        self.assertEqual([(a, r.ext_fields["topic"], r.ext_fields["queueId"], r.ext_fields["offset"],
                           r.ext_fields["extraInfo"]) for a, r in acks[1:]],
                         [(addr_a, RETRY, "0", "3", got[1].receipt_handle)])
        (_, changed), = self.cluster.requests(RequestCode.CHANGE_MESSAGE_INVISIBLETIME)
        self.assertEqual((changed.ext_fields["invisibleTime"], changed.ext_fields["topic"]), ("9000", TOPIC))
        # Java's changeInvisibleTimeAsync: the request's offset, the answer's pop time and revive queue
        self.assertEqual(new, f"5 {POP_TIME + 10} 9000 3 0 broker-a 1 5")
        self.assertEqual(got[0].receipt_handle, new)
        heartbeats = self.cluster.heartbeats[addr_a]
        consumer = heartbeats[-1]["consumerDataSet"][0]
        self.assertEqual((consumer["groupName"], consumer["consumeType"], consumer["messageModel"]),
                         (GROUP, "CONSUME_ACTIVELY", "CLUSTERING"))
        self.assertTrue(self.cluster.requests(RequestCode.UNREGISTER_CLIENT))

    def test_ack_batch_one_request_per_broker(self) -> None:
        handles = [f"5 {POP_TIME} 4000 2 0 broker-a 1 5", f"5 {POP_TIME} 4000 2 0 broker-a 1 7",
                   f"3 {POP_TIME} 4000 2 1 broker-a 0 3", f"9 {POP_TIME} 4000 2 0 broker-b 1 9"]
        messages = [ReceivedMessage(MessageExt(TOPIC, b"x"), h, GROUP) for h in handles]
        self.cluster.script(RequestCode.BATCH_ACK_MESSAGE, ResponseCode.SUCCESS, ResponseCode.SUCCESS)
        with self.consumer:
            self.consumer.ack_batch(messages)
        sent = {a: BatchAckMessageRequestBody.decode(r.body) for a, r in
                self.cluster.requests(RequestCode.BATCH_ACK_MESSAGE)}
        a, b = sent[self.cluster.brokers["broker-a"]], sent[self.cluster.brokers["broker-b"]]
        self.assertEqual(a.broker_name, "broker-a")
        # Java's batchAckMessageAsync: one BatchAck per (retry, queue, checkpoint start, pop time)
        self.assertEqual(sorted((x.topic, x.retry, x.queue_id, x.start_offset, x.revive_queue_id, x.pop_time,
                                 x.invisible_time, x.consumer_group, x.offsets()) for x in a.acks),
                         [(TOPIC, "0", 1, 5, 2, POP_TIME, 4000, GROUP, [5, 7]),
                          (TOPIC, "1", 0, 3, 2, POP_TIME, 4000, GROUP, [3])])
        self.assertEqual([(x.queue_id, x.offsets()) for x in b.acks], [(1, [9])])
        self.cluster.script(RequestCode.BATCH_ACK_MESSAGE, ResponseCode.SYSTEM_ERROR)
        with self.consumer, self.assertRaises(MQBrokerError):
            self.consumer.ack_batch(messages[:1])

    def test_acl_signed(self) -> None:
        """ACL 1.0: every request of the consumer carries the AccessKey and a signature."""
        consumer = BlockingSimpleConsumer(GROUP, self.server.namesrv_addr, subscriptions={TOPIC: "*"},
                                          await_duration=0, access_key="ak", secret_key="sk-secret")
        self.cluster.script(RequestCode.POP_MESSAGE, ResponseCode.POLLING_TIMEOUT)
        with consumer:
            self.assertEqual(consumer.receive(1, 5), [])
        for code in (RequestCode.POP_MESSAGE, RequestCode.HEART_BEAT, RequestCode.GET_ROUTEINFO_BY_TOPIC):
            requests = self.cluster.requests(code)
            self.assertTrue(requests, code)
            for _, request in requests:
                self.assertEqual(request.ext_fields["AccessKey"], "ak")
                self.assertTrue(request.ext_fields["Signature"])

    def test_refusals(self) -> None:
        self.cluster.script(RequestCode.POP_MESSAGE, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST)
        with self.assertRaises(MQClientError):
            self.consumer.receive(1, 5)  # not started
        with self.consumer:
            with self.assertRaises(MQBrokerError) as raised:
                self.consumer.receive(1, 5)
            self.assertEqual(raised.exception.code, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST)
            with self.assertRaises(MQClientError):
                self.consumer.receive(33, 5)
