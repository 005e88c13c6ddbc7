# -*- test-case-name: rocketmq_tx.client.test.test_trace,rocketmq_tx.blocking.test.test_trace -*-
"""
What the Twisted (:mod:`rocketmq_tx.client.trace`) and the blocking
(:mod:`rocketmq_tx.blocking.trace`) trace dispatchers share: the trace producer (a
:class:`~rocketmq_tx.remoting.sendapi.ProducerBase` of its own group, Java's
``getAndCreateTraceProducer``), the Pub record of an answered send (Java
``SendMessageTraceHookImpl``) and the trace message of a batch.
"""

from __future__ import annotations

import itertools

from rocketmq_tx.common import trace
from rocketmq_tx.common.message import Message, string_to_properties
from rocketmq_tx.common.trace import TraceContext
from rocketmq_tx.remoting.api import PreparedMessage, SendResult, SendStatus

__all__ = ["PRODUCE", "CONSUME", "trace_group", "pub_record", "trace_message", "TRACE_SEND_TIMEOUT",
           "TRACE_MAX_MESSAGE_SIZE"]

#: Java ``TraceDispatcher.Type``.
PRODUCE, CONSUME = "PRODUCE", "CONSUME"
#: The trace producer's send timeout, seconds, and largest message (Java's).
TRACE_SEND_TIMEOUT, TRACE_MAX_MESSAGE_SIZE = 5.0, 128000
_COUNTER = itertools.count(1)


def trace_group(group: str, kind: str) -> str:
    """Java ``genGroupNameForTrace``: ``_INNER_TRACE_PRODUCER-<group>-<kind>-<n>``."""
    return f"{trace.GROUP_NAME_PREFIX}-{group}-{kind}-{next(_COUNTER)}"


def pub_record(group: str, trace_topic: str, prepared: PreparedMessage, broker_addr: str, result: SendResult,
               started_ms: int) -> TraceContext | None:
    """The Pub record of a send attempt answered with *result*; ``None`` for a trace message
    or when the broker switched trace off (``TRACE_ON=false``)."""
    if prepared.topic.startswith(trace_topic) or not result.trace_on:
        return None
    return trace.pub_context(group, prepared.topic, string_to_properties(prepared.properties), len(prepared.body),
                             broker_addr, result.msg_id, result.offset_msg_id,
                             result.send_status is SendStatus.SEND_OK, result.region_id, started_ms)


def trace_message(topic: str, body: bytes, keys: str) -> Message:
    """The message of one batch (:class:`~rocketmq_tx.common.trace.TraceBatcher`)."""
    msg = Message(topic, body)
    msg.keys = keys
    return msg
