# -*- test-case-name: rocketmq_tx.store.timer.test.test_hook -*-
"""
The put hook of Java 5.x ``HookUtils.handleScheduleMessage`` for timer messages: a message
with ``TIMER_DELAY_SEC``, ``TIMER_DELAY_MS`` or ``TIMER_DELIVER_MS`` (and no delay level)
is rewritten, before the CommitLog append, to ``rmq_sys_wheel_timer`` queue 0 with
``TIMER_OUT_MS`` (the delivery time rounded down to the precision), ``REAL_TOPIC`` and
``REAL_QID``; a delivery time not in the future leaves the message as it is (stored at once).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from rocketmq_tx.common.message import MessageConst, properties_to_string
from rocketmq_tx.common.sysflag import MessageSysFlag
from rocketmq_tx.store.commitlog import MessageExtBrokerInner
from rocketmq_tx.store.status import PutMessageStatus

__all__ = ["TIMER_TOPIC", "transform_timer_message", "java_parse_long", "is_timer_message"]

#: Java ``TimerMessageStore.TIMER_TOPIC`` (``rmq_sys_`` + ``wheel_timer``)
TIMER_TOPIC = "rmq_sys_wheel_timer"

_LONG = re.compile(r"[+-]?[0-9]+")
_TIMER_KEYS = (MessageConst.PROPERTY_TIMER_DELIVER_MS, MessageConst.PROPERTY_TIMER_DELAY_SEC,
               MessageConst.PROPERTY_TIMER_DELAY_MS)


def java_parse_long(text: str | None) -> int:
    """Java ``Long.parseLong``: optional sign and ASCII digits, within 64 bits; else ``ValueError``."""
    if text is None or not _LONG.fullmatch(text):
        raise ValueError(f"not a long: {text!r}")
    value = int(text)
    if not -(2**63) <= value < 2**63:
        raise ValueError(f"out of range for a long: {text!r}")
    return value


def _delay_level(props: dict) -> int:
    try:
        return int(props.get(MessageConst.PROPERTY_DELAY_TIME_LEVEL, "0"))
    except ValueError:
        return 0


def is_timer_message(props: dict) -> bool:
    """
    Java ``checkIfTimerMessage``. A message with a delay level is not one, and loses its
    timer properties (the level wins); one already carrying ``TIMER_OUT_MS`` is not either.
    """
    if _delay_level(props) > 0:
        for key in _TIMER_KEYS:
            props.pop(key, None)
        return False
    if MessageConst.PROPERTY_TIMER_OUT_MS in props:
        return False
    return any(key in props for key in _TIMER_KEYS)


def transform_timer_message(msg: MessageExtBrokerInner, *, enabled: bool, precision_ms: int, max_delay_sec: int,
                            now_ms: int, is_reject: Callable[[int], bool] | None = None) -> PutMessageStatus | None:
    """
    Apply the hook to *msg* (in place). Returns the refusal, or ``None`` to go on with the put.

    :param enabled: ``timerWheelEnable``; off refuses timer messages (WHEEL_TIMER_NOT_ENABLE).
    :param is_reject: the wheel's flow control for a rounded delivery time (Java ``isReject``).
    """
    if msg.topic == TIMER_TOPIC:
        return None  # a rolled timer message going back to the wheel
    tx = msg.sys_flag & MessageSysFlag.TRANSACTION_MASK
    if tx not in (MessageSysFlag.TRANSACTION_NOT_TYPE, MessageSysFlag.TRANSACTION_COMMIT_TYPE):
        return None
    props = msg.get_properties()
    before = len(props)
    if not is_timer_message(props):
        if len(props) != before:
            msg.properties = properties_to_string(props).encode("utf-8")
        return None
    if not enabled:
        return PutMessageStatus.WHEEL_TIMER_NOT_ENABLE
    try:
        if MessageConst.PROPERTY_TIMER_DELAY_SEC in props:
            deliver_ms = now_ms + java_parse_long(props[MessageConst.PROPERTY_TIMER_DELAY_SEC]) * 1000
        elif MessageConst.PROPERTY_TIMER_DELAY_MS in props:
            deliver_ms = now_ms + java_parse_long(props[MessageConst.PROPERTY_TIMER_DELAY_MS])
        else:
            deliver_ms = java_parse_long(props[MessageConst.PROPERTY_TIMER_DELIVER_MS])
    except ValueError:
        return PutMessageStatus.WHEEL_TIMER_MSG_ILLEGAL
    if deliver_ms > now_ms:
        if deliver_ms - now_ms > max_delay_sec * 1000:
            return PutMessageStatus.WHEEL_TIMER_MSG_ILLEGAL
        # The slot of time T is read once the wheel's write time passes T, i.e. at T +
        # precision: an exact multiple goes one slot earlier so it is not a tick late.
        if deliver_ms % precision_ms == 0:
            deliver_ms -= precision_ms
        else:
            deliver_ms = deliver_ms // precision_ms * precision_ms
        if is_reject is not None and is_reject(deliver_ms):
            return PutMessageStatus.WHEEL_TIMER_FLOW_CONTROL
        props[MessageConst.PROPERTY_TIMER_OUT_MS] = str(deliver_ms)
        props[MessageConst.PROPERTY_REAL_TOPIC] = msg.topic
        props[MessageConst.PROPERTY_REAL_QUEUE_ID] = str(msg.queue_id)
        msg.properties = properties_to_string(props).encode("utf-8")
        msg.topic = TIMER_TOPIC
        msg.queue_id = 0
    elif MessageConst.PROPERTY_TIMER_DEL_UNIQKEY in props:
        return PutMessageStatus.WHEEL_TIMER_MSG_ILLEGAL
    return None
