"""The broker's timer service on a fake clock: sends held until their time, sliced ticks, restart,
GET_TIMER_CHECK_POINT / GET_TIMER_METRICS and the WHEEL_TIMER_* answers."""

from __future__ import annotations

import json
import struct

from rocketmq_tx.broker.processors.send import put_result_response
from rocketmq_tx.broker.test.test_processors import BrokerTestCase, props
from rocketmq_tx.broker.test.util import T0, FakeReactor, make_controller
from rocketmq_tx.common.message import MessageConst
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.store import PutMessageResult
from rocketmq_tx.store.config import MessageStoreConfig
from rocketmq_tx.store.status import PutMessageStatus
from rocketmq_tx.store.timer.hook import TIMER_TOPIC

T0_MS = T0 * 1000


class TimerServiceTests(BrokerTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.service = self.controller.timer_message_service
        assert self.service is not None
        self.service.startService()
        self.addCleanup(lambda: self.service.running and self.service.stopService())

    def send_timer(self, deliver_ms: int, body: bytes = b"hello", queue_id: int = 1) -> RemotingCommand:
        return self.send(body=body, queue_id=queue_id,
                         body_props=props(UNIQ_KEY=f"U{deliver_ms}", TIMER_DELIVER_MS=str(deliver_ms)))

    def count(self, queue_id: int = 1) -> int:
        return self.store.get_max_offset_in_queue("TopicTest", queue_id)

    def advance_to(self, seconds: float) -> None:
        """Move the clock to T0 + *seconds* in 100 ms steps (each tick sees its own time)."""
        while self.reactor.seconds() < T0 + seconds - 1e-9:
            self.reactor.advance(min(0.1, T0 + seconds - self.reactor.seconds()))

    def test_delivered_on_time_not_earlier(self) -> None:
        """A send with TIMER_DELIVER_MS answers SUCCESS, stays out of its queue until its time,
        and is in it within one 100 ms tick after."""
        response = self.send_timer(T0_MS + 3000)
        self.assertEqual(response.code, ResponseCode.SUCCESS)
        self.assertEqual(self.store.get_max_offset_in_queue(TIMER_TOPIC, 0), 1)
        for t in (0.1, 1.0, 2.9, 2.99):
            self.advance_to(t)
            self.assertEqual(self.count(), 0, t)
        self.advance_to(3.0)
        self.reactor.advance(0.1)
        self.assertEqual(self.count(), 1)

    def test_delivered_just_after_the_boundary(self) -> None:
        """A slot due at a precision boundary is delivered 1 ms after it, not at the next 100 ms
        poll: here the polls are moved to fall at .x5 s (T0 + 2.95 s, 3.05 s without the fix)."""
        call = self.service._call
        assert call is not None
        call.cancel()
        self.service._call = self.reactor.callLater(0.05, self.service._tick)
        self.send_timer(T0_MS + 2500)  # its slot is T0 + 2 s: due once the clock passes T0 + 3 s
        while self.reactor.seconds() < T0 + 2.999:
            self.reactor.advance(0.01)
            self.assertEqual(self.count(), 0, self.reactor.seconds() - T0)
        self.reactor.advance(T0 + 3.0015 - self.reactor.seconds())
        self.assertEqual(self.count(), 1)

    def test_many_in_one_slot_sliced(self) -> None:
        """1000 timers of one slot: each reactor turn delivers at most one budget of them."""
        self.service.slice_seconds = 0  # one budget per turn, whatever the machine's speed
        for i in range(1000):
            self.send_timer(T0_MS + 2000, body=b"%d" % i, queue_id=i % 4)
        self.advance_to(1.0)  # enqueued by now
        per_turn: list[int] = []
        tick = self.service._tick

        def counting_tick() -> None:
            before = sum(self.count(q) for q in range(4))
            tick()
            per_turn.append(sum(self.count(q) for q in range(4)) - before)
        self.service._tick = counting_tick  # type: ignore[method-assign]
        self.advance_to(2.2)
        self.assertEqual(sum(self.count(q) for q in range(4)), 1000)
        self.assertLessEqual(max(per_turn), self.service.slice_budget)
        self.assertGreaterEqual(len([n for n in per_turn if n]), 1000 // self.service.slice_budget)

    def test_restart_keeps_pending(self) -> None:
        """Stopped and started again on the same store, a pending timer is delivered on time, once."""
        self.send_timer(T0_MS + 5000)
        self.advance_to(1.5)
        self.successResultOf(self.service.stopService())
        root = self.controller.store_config.store_path_root_dir
        self.controller.shutdown()
        reactor = FakeReactor()
        reactor.advance(1.5)
        controller = make_controller(self, reactor, root)
        service = controller.timer_message_service
        assert service is not None
        service.startService()
        self.addCleanup(lambda: service.running and service.stopService())
        reactor.advance(3.4)  # T0 + 4.9 s
        self.assertEqual(controller.store.get_max_offset_in_queue("TopicTest", 1), 0)
        reactor.advance(0.2)
        self.assertEqual(controller.store.get_max_offset_in_queue("TopicTest", 1), 1)
        reactor.advance(10)
        self.assertEqual(controller.store.get_max_offset_in_queue("TopicTest", 1), 1)

    def test_check_point_and_metrics_codes(self) -> None:
        """GET_TIMER_CHECK_POINT answers the 56-byte checkpoint, GET_TIMER_METRICS the JSON."""
        self.send_timer(T0_MS + 60_000)
        self.advance_to(1.5)
        response = self.call(RequestCode.GET_TIMER_CHECK_POINT)
        self.assertEqual(response.code, ResponseCode.SUCCESS)
        self.assertIsNone(response.remark)
        self.assertEqual(len(response.body), 56)
        read, _flush, qoff, master, state, _ts, counter = struct.unpack(">7q", response.body)
        self.assertEqual((qoff, master, state), (1, 1, 0))
        self.assertIn(read, (T0_MS, T0_MS + 1000))  # the read time at the last flush (T0 + 1 s)
        self.assertGreater(counter, 0)
        response = self.call(RequestCode.GET_TIMER_METRICS)
        self.assertEqual(response.code, ResponseCode.SUCCESS)
        doc = json.loads(response.body)
        self.assertEqual(doc["timingCount"]["TopicTest"]["count"], 1)
        self.assertEqual(sorted(doc["dataVersion"]), ["counter", "stateVersion", "timestamp"])

    def test_timer_topic_in_table(self) -> None:
        """timerWheelEnable: rmq_sys_wheel_timer is a system topic of one queue, as Java 5.x adds it."""
        manager = self.controller.topic_config_manager
        tc = manager.select_topic_config("rmq_sys_wheel_timer")
        self.assertEqual((tc.read_queue_nums, tc.write_queue_nums, tc.perm), (1, 1, 6))
        self.assertTrue(manager.is_system_topic("rmq_sys_wheel_timer"))

    def test_runtime_info_keys(self) -> None:
        """GET_BROKER_RUNTIME_INFO has Java 5.x's timer keys: pending count, read lag, offset lag, rates."""
        self.send_timer(T0_MS + 3000)
        self.send_timer(T0_MS + 4000)
        self.advance_to(1.5)
        info = self.controller.runtime_info()
        self.assertEqual((info["timerCongestNum"], info["timerOffsetBehind"], info["timerReadBehind"]),
                         ("2", "0", "0"))
        # both in the first second (measured at the flush round, a 100 ms step late at most)
        self.assertTrue(1.7 <= float(info["timerEnqueueTps"]) <= 2.0, info["timerEnqueueTps"])
        self.advance_to(4.5)
        info = self.controller.runtime_info()
        self.assertEqual(info["timerCongestNum"], "0")
        self.assertEqual(info["timerEnqueueTps"], "0.0")

    def test_too_far_refused_with_java_remark(self) -> None:
        """Beyond timerMaxDelaySec: MESSAGE_ILLEGAL with Java's remark; nothing stored."""
        response = self.send(body_props=props(TIMER_DELAY_SEC=str(3 * 86400 + 10)))
        self.assertEqual(response.code, ResponseCode.MESSAGE_ILLEGAL)
        self.assertEqual(response.remark, (
            "timer message illegal, the delay time should not be bigger than the max delay 259200000ms; "
            "or if set del msg, the delay time should be bigger than the current time"))
        self.assertEqual(self.store.get_max_phy_offset(), 0)


class DisabledTests(BrokerTestCase):
    keys = {"timerWheelEnable": False}

    def test_refused_and_codes_without_store(self) -> None:
        """timerWheelEnable=false: timer sends refused (SYSTEM_ERROR), 60/61 answer Java's null remarks."""
        self.assertIsNone(self.controller.timer_message_service)
        self.assertNotIn("rmq_sys_wheel_timer", self.controller.topic_config_manager.topic_config_table)
        response = self.send(body_props=props(TIMER_DELAY_SEC="5"))
        self.assertEqual((response.code, response.remark), (
            ResponseCode.SYSTEM_ERROR, "accurate timer message is not enabled, timerWheelEnable is false"))
        self.assertEqual(self.send(body_props=props(TAGS="a")).code, ResponseCode.SUCCESS)
        response = self.call(RequestCode.GET_TIMER_CHECK_POINT)
        self.assertEqual((response.code, response.remark), (ResponseCode.SYSTEM_ERROR, "The checkpoint is null"))
        response = self.call(RequestCode.GET_TIMER_METRICS)
        self.assertEqual((response.code, response.remark),
                         (ResponseCode.SYSTEM_ERROR, "The timer message store is null"))
        info = self.controller.runtime_info()
        self.assertEqual({k: info[k] for k in info if k.startswith("timer")}, {
            "timerReadBehind": "0", "timerOffsetBehind": "0", "timerCongestNum": "0", "timerEnqueueTps": "0.0",
            "timerDequeueTps": "0.0"})


class RemarkTests(BrokerTestCase):
    def test_flow_control_remark(self) -> None:
        """WHEEL_TIMER_FLOW_CONTROL: SYSTEM_ERROR and Java's remark with timerCongestNumEachSlot."""
        cfg = MessageStoreConfig(store_path_root_dir="/nonexistent", timer_congest_num_each_slot=10)
        code, remark = put_result_response(RemotingCommand.request(10), PutMessageResult(
            PutMessageStatus.WHEEL_TIMER_FLOW_CONTROL), 100, cfg)
        self.assertEqual((code, remark), (ResponseCode.SYSTEM_ERROR, (
            "timer message is under flow control, max num limit is 20 or the current value is greater than 10 "
            "and less than 20, trigger random flow control")))
        self.assertEqual(MessageConst.PROPERTY_TIMER_DELIVER_MS, "TIMER_DELIVER_MS")


class TransactionTimerTests(BrokerTestCase):
    def test_half_message_with_timer(self) -> None:
        """As Java 5.x (the half is put with sysFlag NOT_TYPE, then the timer hook runs): a half
        message with a timer is held in the wheel for the half topic."""
        from rocketmq_tx.broker.test.test_transaction import TransactionTestCase

        case = TransactionTestCase("run")
        case.setUp()
        self.addCleanup(case.doCleanups)
        case.send_half(TIMER_DELAY_SEC="30")
        self.assertEqual(case.queue("RMQ_SYS_TRANS_HALF_TOPIC"), [])
        [held] = case.queue(TIMER_TOPIC)
        self.assertEqual((held.properties["REAL_TOPIC"], held.properties["REAL_QID"]),
                         ("RMQ_SYS_TRANS_HALF_TOPIC", "0"))

    def test_commit_refusal_remark(self) -> None:
        """END_TRANSACTION answers WHEEL_TIMER_* with Java's (send processor's) codes and remarks."""
        from rocketmq_tx.broker.processors.endtransaction import EndTransactionProcessor

        processor = EndTransactionProcessor(self.controller)
        code, remark = processor._final_response(PutMessageResult(PutMessageStatus.WHEEL_TIMER_MSG_ILLEGAL))
        self.assertEqual(code, ResponseCode.MESSAGE_ILLEGAL)
        self.assertTrue(remark.startswith("timer message illegal, the delay time should not be bigger than the max "
                                          "delay 259200000ms"))
        code, remark = processor._final_response(PutMessageResult(PutMessageStatus.WHEEL_TIMER_NOT_ENABLE))
        self.assertEqual((code, remark), (ResponseCode.SYSTEM_ERROR,
                                          "accurate timer message is not enabled, timerWheelEnable is true"))
