"""The sans-IO POP client calls: requests as Java builds them, Java's ``processPopResponse`` on answers."""

from __future__ import annotations

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.common.message import MessageConst, MessageExt
from rocketmq_tx.common.messagecodec import encode_message
from rocketmq_tx.common.route import BrokerData, QueueData, TopicRouteData
from rocketmq_tx.remoting import MQBrokerError, RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.remoting.api import MQClientError, SubscriptionData
from rocketmq_tx.remoting.extrainfo import (
    build_msg_offset_info,
    build_queue_offset_order_count_info,
    build_start_offset_info,
)
from rocketmq_tx.remoting.headers.pop import PopMessageResponseHeader
from rocketmq_tx.remoting.popapi import (
    ack_request,
    change_invisible_time_request,
    parse_pop_response,
    pop_request,
    readable_brokers,
)

TOPIC, GROUP = "T", "G"


def message(queue_id: int, offset: int, tags: str = "A") -> MessageExt:
    m = MessageExt(TOPIC, b"x", queue_id=queue_id, queue_offset=offset, store_host=("127.0.0.1", 1),
                   born_host=("127.0.0.1", 2))
    m.tags = tags
    return m


def answer(msgs: list[MessageExt], code: int = ResponseCode.SUCCESS, **infos: str | None) -> RemotingCommand:
    header = PopMessageResponseHeader(100, 5000, 1, 0, infos.get("start"), infos.get("offsets"), infos.get("orders"))
    request = RemotingCommand.request(RequestCode.POP_MESSAGE, {})
    return request.make_response(code, None, header.to_ext_fields(), b"".join(encode_message(m) for m in msgs))


class PopApiTests(SynchronousTestCase):
    sub = SubscriptionData.of(TOPIC, "A || B")

    def test_request(self) -> None:
        r = pop_request(GROUP, TOPIC, "b", self.sub, max_nums=32, invisible_ms=5000, poll_ms=0, born_ms=7,
                        order=True)
        self.assertEqual(r.code, RequestCode.POP_MESSAGE)
        self.assertEqual(r.ext_fields, {"consumerGroup": GROUP, "topic": TOPIC, "queueId": "-1", "maxMsgNums": "32",
                                        "invisibleTime": "5000", "pollTime": "0", "bornTime": "7", "initMode": "1",
                                        "expType": "TAG", "exp": "A || B", "order": "true", "bname": "b"})
        for bad in ({"max_nums": 0, "invisible_ms": 1}, {"max_nums": 33, "invisible_ms": 1},
                    {"max_nums": 1, "invisible_ms": 0}):
            with self.assertRaises(MQClientError):
                pop_request(GROUP, TOPIC, "b", self.sub, **bad)

    def test_without_start_offset_info(self) -> None:
        """An older broker: each (topic, queue)'s first message is the checkpoint start."""
        got = parse_pop_response(answer([message(0, 4), message(0, 5), message(1, 9)]), "b", GROUP, self.sub)
        self.assertEqual([m.receipt_handle for m in got.messages],
                         ["4 100 5000 1 0 b 0 4", "4 100 5000 1 0 b 0 5", "9 100 5000 1 0 b 1 9"])

    def test_order_counts_and_filter(self) -> None:
        start = build_start_offset_info("", TOPIC, 0, 4)
        offsets = build_msg_offset_info("", TOPIC, 0, [4, 5])
        orders = build_queue_offset_order_count_info("", TOPIC, 0, 4, 2)
        response = answer([message(0, 4), message(0, 5, "C")], start=start, offsets=offsets, orders=orders)
        got = parse_pop_response(response, "b", GROUP, self.sub, order=True)
        self.assertEqual([(m.queue_offset, m.reconsume_times) for m in got.messages], [(4, 2)])
        self.assertEqual([m.queue_offset for m in got.filtered], [5])
        self.assertEqual(got.messages[0].properties[MessageConst.PROPERTY_FIRST_POP_TIME], "100")

    def test_not_found_and_refusals(self) -> None:
        for code in (ResponseCode.POLLING_TIMEOUT, ResponseCode.PULL_NOT_FOUND):
            self.assertEqual(parse_pop_response(answer([], code), "b", GROUP, self.sub).status, "POLLING_NOT_FOUND")
        self.assertEqual(parse_pop_response(answer([], ResponseCode.POLLING_FULL), "b", GROUP, self.sub).status,
                         "POLLING_FULL")
        with self.assertRaises(MQBrokerError):
            parse_pop_response(answer([], ResponseCode.SYSTEM_ERROR), "b", GROUP, self.sub)
        with self.assertRaises(MQBrokerError):  # a message whose queue the start offsets do not name
            parse_pop_response(answer([message(3, 1)], start="0 0 1"), "b", GROUP, self.sub)

    def test_ack_and_change(self) -> None:
        ack = ack_request(GROUP, TOPIC, "4 100 5000 1 1 b 0 5")
        self.assertEqual(ack.ext_fields, {"consumerGroup": GROUP, "topic": f"%RETRY%{GROUP}_{TOPIC}", "queueId": "0",
                                          "extraInfo": "4 100 5000 1 1 b 0 5", "offset": "5", "bname": "b"})
        change = change_invisible_time_request(GROUP, TOPIC, "4 100 5000 1 2 b 0 5", 9000)
        self.assertEqual((change.ext_fields["topic"], change.ext_fields["invisibleTime"]),
                         (f"%RETRY%{GROUP}+{TOPIC}", "9000"))
        for handle in ("4 100 5000 1 0 b 0", "garbage"):
            with self.assertRaises(MQClientError):
                ack_request(GROUP, TOPIC, handle)

    def test_readable_brokers(self) -> None:
        route = TopicRouteData(queue_datas=[QueueData("a", 4, 4, 6), QueueData("b", 4, 4, 2), QueueData("c", 0, 4, 6),
                                            QueueData("d", 4, 4, 4)],
                               broker_datas=[BrokerData("C", n, {0: f"{n}:1"}) for n in "abc"]
                               + [BrokerData("C", "d", {1: "d:1"})])
        self.assertEqual(readable_brokers(route), ["a"])
