"""The timer put hook: Java HookUtils.transformTimerMessage's rewrite, refusals and pass-throughs."""

from __future__ import annotations

from twisted.trial.unittest import TestCase

from rocketmq_tx.common.message import MessageConst
from rocketmq_tx.common.sysflag import MessageSysFlag
from rocketmq_tx.store.status import PutMessageStatus
from rocketmq_tx.store.test.util import message
from rocketmq_tx.store.timer.hook import TIMER_TOPIC, java_parse_long, transform_timer_message

NOW = 1_767_268_800_300


def hook(msg, **kw):
    args = dict(enabled=True, precision_ms=1000, max_delay_sec=3600 * 24 * 3, now_ms=NOW)
    args.update(kw)
    return transform_timer_message(msg, **args)


class HookTests(TestCase):
    def test_rewrite(self) -> None:
        """Topic and queue move to rmq_sys_wheel_timer/0; TIMER_OUT_MS is the time rounded down."""
        msg = message("T", queue_id=3, extra={MessageConst.PROPERTY_TIMER_DELIVER_MS: str(NOW + 2500)})
        self.assertIsNone(hook(msg))
        self.assertEqual((msg.topic, msg.queue_id), (TIMER_TOPIC, 0))
        props = msg.get_properties()
        self.assertEqual(props[MessageConst.PROPERTY_TIMER_OUT_MS], str((NOW + 2500) // 1000 * 1000))
        self.assertEqual(props[MessageConst.PROPERTY_REAL_TOPIC], "T")
        self.assertEqual(props[MessageConst.PROPERTY_REAL_QUEUE_ID], "3")
        self.assertIn(b"TIMER_OUT_MS\x01", msg.properties)

    def test_exact_multiple_goes_one_slot_earlier(self) -> None:
        """A time on a tick is stored one precision earlier (read at the tick, not a tick late)."""
        msg = message("T", extra={MessageConst.PROPERTY_TIMER_DELIVER_MS: "1767268805000"})
        self.assertIsNone(hook(msg))
        self.assertEqual(msg.get_properties()[MessageConst.PROPERTY_TIMER_OUT_MS], "1767268804000")

    def test_precedence_sec_then_ms_then_deliver(self) -> None:
        """TIMER_DELAY_SEC wins over TIMER_DELAY_MS, which wins over TIMER_DELIVER_MS."""
        msg = message("T", extra={MessageConst.PROPERTY_TIMER_DELAY_SEC: "10",
                                  MessageConst.PROPERTY_TIMER_DELAY_MS: "99999",
                                  MessageConst.PROPERTY_TIMER_DELIVER_MS: "1"})
        self.assertIsNone(hook(msg))
        self.assertEqual(msg.get_properties()[MessageConst.PROPERTY_TIMER_OUT_MS], str((NOW + 10000) // 1000 * 1000))

    def test_refusals(self) -> None:
        """Beyond timerMaxDelaySec, unparsable values and disabled wheels are refused as Java refuses."""
        far = message("T", extra={MessageConst.PROPERTY_TIMER_DELAY_SEC: str(3600 * 24 * 3 + 1)})
        self.assertIs(hook(far), PutMessageStatus.WHEEL_TIMER_MSG_ILLEGAL)
        for bad in ("abc", "1.5", " 5", "99999999999999999999", ""):
            msg = message("T", extra={MessageConst.PROPERTY_TIMER_DELAY_MS: bad} if bad else {
                MessageConst.PROPERTY_TIMER_DELAY_MS: "x"})
            self.assertIs(hook(msg), PutMessageStatus.WHEEL_TIMER_MSG_ILLEGAL, bad)
        msg = message("T", extra={MessageConst.PROPERTY_TIMER_DELAY_SEC: "5"})
        self.assertIs(hook(msg, enabled=False), PutMessageStatus.WHEEL_TIMER_NOT_ENABLE)
        past_delete = message("T", extra={MessageConst.PROPERTY_TIMER_DELIVER_MS: "5",
                                          MessageConst.PROPERTY_TIMER_DEL_UNIQKEY: "T+U"})
        self.assertIs(hook(past_delete), PutMessageStatus.WHEEL_TIMER_MSG_ILLEGAL)
        crowded = message("T", extra={MessageConst.PROPERTY_TIMER_DELAY_SEC: "5"})
        self.assertIs(hook(crowded, is_reject=lambda t: True), PutMessageStatus.WHEEL_TIMER_FLOW_CONTROL)

    def test_pass_through(self) -> None:
        """Past times, delay levels, TIMER_OUT_MS, the timer topic and prepared halves are left alone."""
        past = message("T", extra={MessageConst.PROPERTY_TIMER_DELIVER_MS: str(NOW)})
        self.assertIsNone(hook(past))
        self.assertEqual(past.topic, "T")
        level = message("T", extra={MessageConst.PROPERTY_DELAY_TIME_LEVEL: "3",
                                    MessageConst.PROPERTY_TIMER_DELAY_SEC: "5"})
        self.assertIsNone(hook(level))
        self.assertEqual(level.topic, "T")
        self.assertNotIn(b"TIMER_DELAY_SEC", level.properties)  # Java clears them: the level wins
        out = message("T", extra={MessageConst.PROPERTY_TIMER_OUT_MS: "1", MessageConst.PROPERTY_TIMER_DELAY_SEC: "5"})
        self.assertIsNone(hook(out))
        self.assertEqual(out.topic, "T")
        rolled = message(TIMER_TOPIC, extra={MessageConst.PROPERTY_TIMER_DELAY_SEC: "5"})
        self.assertIsNone(hook(rolled))
        half = message("T", extra={MessageConst.PROPERTY_TIMER_DELAY_SEC: "5"},
                       sys_flag=MessageSysFlag.TRANSACTION_PREPARED_TYPE)
        self.assertIsNone(hook(half))
        self.assertEqual(half.topic, "T")

    def test_java_parse_long(self) -> None:
        """Long.parseLong: sign and digits within 64 bits only."""
        self.assertEqual(java_parse_long("+12"), 12)
        self.assertEqual(java_parse_long("-9223372036854775808"), -(2**63))
        for bad in (None, "", "1_0", "٣", "9223372036854775808", "0x10"):
            with self.assertRaises(ValueError):
                java_parse_long(bad)
