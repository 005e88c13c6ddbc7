# -*- test-case-name: rocketmq_tx.common.test.test_trace -*-
"""
Message trace records in Java's layout (``TraceDataEncoder``, ``TraceContext``,
``TraceBean``, ``TraceConstants``), without I/O, and the batching rule of Java's
``AsyncTraceDispatcher`` (:class:`TraceBatcher`); the Twisted dispatcher
(:mod:`rocketmq_tx.client.trace`) sends what it batches.

A record is its fields joined by :data:`CONTENT_SPLITOR` (``\\x01``) and ended by
:data:`FIELD_SPLITOR` (``\\x02``); a trace message's body is records laid end to end and
its ``KEYS`` are the traced messages' ids and keys, so ``mqadmin queryMsgTraceById``
finds them. Fields are written as Java's ``StringBuilder.append`` writes them: a missing
string is ``null``, booleans are ``true``/``false``, enums by ordinal where Java writes
the ordinal (message type) and by name elsewhere.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from rocketmq_tx.common.message import KEY_SEPARATOR, Message, MessageConst, MessageExt

__all__ = [
    "CONTENT_SPLITOR",
    "FIELD_SPLITOR",
    "RMQ_SYS_TRACE_TOPIC",
    "GROUP_NAME_PREFIX",
    "DEFAULT_TRACE_REGION_ID",
    "TraceType",
    "MessageType",
    "ConsumeReturnType",
    "TraceBean",
    "TraceContext",
    "TraceTransferBean",
    "encode",
    "decode",
    "TraceBatcher",
    "pub_context",
    "sub_before_context",
    "sub_after_context",
    "end_transaction_context",
    "message_type",
]

#: ``TraceConstants.CONTENT_SPLITOR``: between the fields of a record.
CONTENT_SPLITOR = "\x01"
#: ``TraceConstants.FIELD_SPLITOR``: after each record.
FIELD_SPLITOR = "\x02"
#: ``TopicValidator.RMQ_SYS_TRACE_TOPIC``: the default trace topic.
RMQ_SYS_TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"
#: ``TraceConstants.GROUP_NAME_PREFIX``: the trace producer's group starts with it.
GROUP_NAME_PREFIX = "_INNER_TRACE_PRODUCER"
#: ``MixAll.DEFAULT_TRACE_REGION_ID``.
DEFAULT_TRACE_REGION_ID = "DefaultRegion"


class TraceType(enum.Enum):
    """Java ``TraceType``."""

    Pub = "Pub"
    SubBefore = "SubBefore"
    SubAfter = "SubAfter"
    EndTransaction = "EndTransaction"


class MessageType(enum.IntEnum):
    """Java ``MessageType``; records carry the ordinal."""

    Normal_Msg = 0
    Trans_Msg_Half = 1
    Trans_msg_Commit = 2
    Delay_Msg = 3


class ConsumeReturnType(enum.IntEnum):
    """Java ``ConsumeReturnType``; SubAfter's context code is the ordinal."""

    SUCCESS = 0
    TIME_OUT = 1
    EXCEPTION = 2
    RETURNNULL = 3
    FAILED = 4


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(slots=True)
class TraceBean:
    """Java ``TraceBean``: one traced message. ``None`` strings are written ``null``."""

    topic: str | None = ""
    msg_id: str | None = ""
    offset_msg_id: str | None = ""
    tags: str | None = ""
    keys: str | None = ""
    store_host: str | None = ""
    client_host: str | None = ""
    store_time: int = 0
    retry_times: int = 0
    body_length: int = 0
    msg_type: MessageType = MessageType.Normal_Msg
    transaction_state: str | None = None
    transaction_id: str | None = None
    from_transaction_check: bool = False


@dataclass(slots=True)
class TraceContext:
    """Java ``TraceContext``: one record (SubBefore and SubAfter: one per bean)."""

    trace_type: TraceType
    time_stamp: int = field(default_factory=_now_ms)
    region_id: str | None = ""
    group_name: str | None = ""
    cost_time: int = 0
    success: bool = True
    request_id: str | None = ""
    context_code: int = 0
    beans: list[TraceBean] = field(default_factory=list)


@dataclass(slots=True)
class TraceTransferBean:
    """Java ``TraceTransferBean``: a context's records and the keys it is found by."""

    data: str
    keys: list[str]


def _text(value: object) -> str:
    # Java StringBuilder.append: null is "null", a boolean is "true"/"false".
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _record(*values: object, end: str = FIELD_SPLITOR) -> str:
    return CONTENT_SPLITOR.join(_text(v) for v in values) + end


def encode(ctx: TraceContext) -> TraceTransferBean:
    """Java ``encoderFromContextBean``: the records of *ctx* and its keys (ids, then keys)."""
    t = ctx.trace_type
    if t is TraceType.Pub:
        b = ctx.beans[0]
        data = _record(t.value, ctx.time_stamp, ctx.region_id, ctx.group_name, b.topic, b.msg_id, b.tags, b.keys,
                       b.store_host, b.body_length, ctx.cost_time, int(b.msg_type), b.offset_msg_id, ctx.success)
    elif t is TraceType.SubBefore:
        data = "".join(_record(t.value, ctx.time_stamp, ctx.region_id, ctx.group_name, ctx.request_id, b.msg_id,
                               b.retry_times, b.keys) for b in ctx.beans)
    elif t is TraceType.SubAfter:
        # Java writes the time stamp and group unless the access channel is CLOUD (never here).
        data = "".join(_record(t.value, ctx.request_id, b.msg_id, ctx.cost_time, ctx.success, b.keys,
                               ctx.context_code, ctx.time_stamp, ctx.group_name) for b in ctx.beans)
    else:
        b = ctx.beans[0]
        data = _record(t.value, ctx.time_stamp, ctx.region_id, ctx.group_name, b.topic, b.msg_id, b.tags, b.keys,
                       b.store_host, int(b.msg_type), b.transaction_id, b.transaction_state,
                       b.from_transaction_check)
    keys: list[str] = []
    for b in ctx.beans:
        keys.append(_text(b.msg_id))
        if b.keys:
            keys.extend(b.keys.split(KEY_SEPARATOR))
    return TraceTransferBean(data, keys)


def _bool(text: str) -> bool:
    return text.lower() == "true"  # Java Boolean.parseBoolean


def decode(data: str) -> list[TraceContext]:
    """
    Java ``decoderFromTraceDataString``: the records of a trace message body, the old
    layouts included (Pub of 13 to 15 fields, SubAfter of 6 to 9). Unknown types are
    skipped as Java skips them; ``null`` stays the text ``"null"``, as in Java.

    :raises ValueError: a record of a known type with missing or non-numeric fields.
    """
    out: list[TraceContext] = []
    if not data:
        return out
    for record in _java_split(data, FIELD_SPLITOR):
        line = _java_split(record, CONTENT_SPLITOR)
        try:
            kind = TraceType(line[0])
        except ValueError:
            continue
        try:
            out.append(_decode(kind, line))
        except IndexError:
            raise ValueError(f"trace record {record!r} has too few fields") from None
    return out


def _java_split(text: str, sep: str) -> list[str]:
    # String.split drops trailing empty strings.
    parts = text.split(sep)
    while len(parts) > 1 and parts[-1] == "":
        parts.pop()
    return parts


def _decode(kind: TraceType, line: list[str]) -> TraceContext:
    if kind is TraceType.Pub:
        bean = TraceBean(topic=line[4], msg_id=line[5], tags=line[6], keys=line[7], store_host=line[8],
                         body_length=int(line[9]), msg_type=MessageType(int(line[11])))
        ctx = TraceContext(kind, int(line[1]), line[2], line[3], cost_time=int(line[10]), beans=[bean])
        if len(line) == 13:
            ctx.success = _bool(line[12])
        elif len(line) >= 14:
            bean.offset_msg_id, ctx.success = line[12], _bool(line[13])
            if len(line) >= 15:
                bean.client_host = line[14]
        return ctx
    if kind is TraceType.SubBefore:
        bean = TraceBean(msg_id=line[5], retry_times=int(line[6]), keys=line[7])
        return TraceContext(kind, int(line[1]), line[2], line[3], request_id=line[4], beans=[bean])
    if kind is TraceType.SubAfter:
        ctx = TraceContext(kind, 0, "", "", cost_time=int(line[3]), success=_bool(line[4]), request_id=line[1],
                           beans=[TraceBean(msg_id=line[2], keys=line[5])])
        if len(line) >= 7:
            ctx.context_code = int(line[6])
        if len(line) >= 9:
            ctx.time_stamp, ctx.group_name = int(line[7]), line[8]
        return ctx
    bean = TraceBean(topic=line[4], msg_id=line[5], tags=line[6], keys=line[7], store_host=line[8],
                     msg_type=MessageType(int(line[9])), transaction_id=line[10], transaction_state=line[11],
                     from_transaction_check=_bool(line[12]))
    return TraceContext(kind, int(line[1]), line[2], line[3], beans=[bean])


# --------------------------------------------------------------------------- records from clients

def message_type(properties: dict[str, str]) -> MessageType:
    """What Java's ``sendKernelImpl`` puts in the send context: half, delayed, or normal."""
    if properties.get("__STARTDELIVERTIME") is not None or \
            properties.get(MessageConst.PROPERTY_DELAY_TIME_LEVEL) is not None:
        return MessageType.Delay_Msg
    if properties.get(MessageConst.PROPERTY_TRANSACTION_PREPARED) == "true":
        return MessageType.Trans_Msg_Half
    return MessageType.Normal_Msg


def pub_context(group: str, topic: str, properties: dict[str, str], body_length: int, broker_addr: str,
                msg_id: str, offset_msg_id: str, success: bool, region_id: str, started_ms: int,
                now_ms: int | None = None) -> TraceContext:
    """
    Java ``SendMessageTraceHookImpl``'s Pub record of one answered send attempt (*started_ms*
    when the attempt began; the body length as sent, compressed or not).
    """
    now = _now_ms() if now_ms is None else now_ms
    bean = TraceBean(topic=topic, msg_id=msg_id, offset_msg_id=offset_msg_id,
                     tags=properties.get(MessageConst.PROPERTY_TAGS), keys=properties.get(MessageConst.PROPERTY_KEYS),
                     store_host=broker_addr, body_length=body_length, msg_type=message_type(properties))
    cost = now - started_ms
    bean.store_time = started_ms + cost // 2
    return TraceContext(TraceType.Pub, started_ms, region_id, group, cost, success, beans=[bean])


def sub_before_context(group: str, messages: Iterable[MessageExt], request_id: str,
                       now_ms: int | None = None) -> TraceContext | None:
    """
    Java ``ConsumeMessageTraceHookImpl.consumeMessageBefore``: one SubBefore record per
    message whose broker did not switch trace off; ``None`` when none is left.
    """
    beans = []
    region = ""
    for msg in messages:
        if msg.properties.get(MessageConst.PROPERTY_TRACE_SWITCH) == "false":
            continue
        region = msg.properties.get(MessageConst.PROPERTY_MSG_REGION)  # type: ignore[assignment]
        beans.append(TraceBean(topic=msg.topic, msg_id=msg.msg_id, tags=msg.tags,
                               keys=msg.properties.get(MessageConst.PROPERTY_KEYS), store_time=msg.store_timestamp,
                               body_length=msg.store_size, retry_times=msg.reconsume_times))
    if not beans:
        return None
    return TraceContext(TraceType.SubBefore, _now_ms() if now_ms is None else now_ms, region, group,
                        request_id=request_id, beans=beans)


def sub_after_context(before: TraceContext, count: int, success: bool, return_type: ConsumeReturnType,
                      now_ms: int | None = None) -> TraceContext:
    """Java ``consumeMessageAfter``: the SubAfter records of a batch of *count* messages."""
    now = _now_ms() if now_ms is None else now_ms
    return TraceContext(TraceType.SubAfter, now, before.region_id, before.group_name,
                        (now - before.time_stamp) // max(count, 1), success, before.request_id,
                        int(return_type), before.beans)


def end_transaction_context(group: str, msg: Message, msg_id: str | None, broker_addr: str, state: str,
                            from_check: bool, now_ms: int | None = None) -> TraceContext:
    """
    Java ``EndTransactionTraceHookImpl``'s EndTransaction record: the transaction of *msg*
    (its ``transaction_id``) ended with *state* (``LocalTransactionState``'s name) at
    *broker_addr*; the region is the message's ``MSG_REGION`` or ``DefaultRegion``.
    """
    bean = TraceBean(topic=msg.topic, msg_id=msg_id, tags=msg.properties.get(MessageConst.PROPERTY_TAGS),
                     keys=msg.properties.get(MessageConst.PROPERTY_KEYS), store_host=broker_addr,
                     msg_type=MessageType.Trans_msg_Commit, transaction_id=msg.transaction_id,
                     transaction_state=state, from_transaction_check=from_check)
    region = msg.properties.get(MessageConst.PROPERTY_MSG_REGION) or DEFAULT_TRACE_REGION_ID
    return TraceContext(TraceType.EndTransaction, _now_ms() if now_ms is None else now_ms, region, group,
                        beans=[bean])


# --------------------------------------------------------------------------- batching

@dataclass(slots=True)
class _Segment:
    first_ms: int = 0
    size: int = 0
    beans: list[TraceTransferBean] = field(default_factory=list)


class TraceBatcher:
    """
    ``AsyncTraceDispatcher``'s rule: records gather per trace topic; a batch leaves when
    its text reaches ``max_msg_size - 10000`` characters, or when its first record has
    waited ``wait_ms`` (checked every ``polling`` interval by the driver), or on
    :meth:`flush`. A batch is ``(topic, body, keys)``: the records laid end to end and
    the keys of every record, first-seen order, no repeats (Java: a ``HashSet``).

    :ivar discarded: records refused because ``queue_size`` records were waiting.
    """

    def __init__(self, topic: str = RMQ_SYS_TRACE_TOPIC, *, max_msg_size: int = 128000, wait_ms: int = 500,
                 queue_size: int = 1024) -> None:
        self.topic = topic
        self.max_msg_size = max_msg_size
        self.wait_ms = wait_ms
        self.queue_size = queue_size
        self.discarded = 0
        self._segment = _Segment()

    @property
    def pending(self) -> int:
        """Records waiting."""
        return len(self._segment.beans)

    def add(self, ctx: TraceContext, now_ms: int | None = None) -> list[tuple[str, bytes, str]]:
        """Take *ctx*; the batches that are full now."""
        if not ctx.beans:
            return []
        seg = self._segment
        if len(seg.beans) >= self.queue_size:
            self.discarded += 1
            return []
        bean = encode(ctx)
        if not seg.beans:
            seg.first_ms = _now_ms() if now_ms is None else now_ms
        seg.beans.append(bean)
        seg.size += len(bean.data)
        if seg.size >= self.max_msg_size - 10 * 1000:
            return self.flush()
        return []

    def due(self, now_ms: int | None = None) -> list[tuple[str, bytes, str]]:
        """The batch whose first record waited long enough, if any."""
        now = _now_ms() if now_ms is None else now_ms
        if self._segment.beans and now - self._segment.first_ms >= self.wait_ms:
            return self.flush()
        return []

    def flush(self) -> list[tuple[str, bytes, str]]:
        """Everything waiting, as one batch."""
        seg, self._segment = self._segment, _Segment()
        if not seg.beans:
            return []
        keys = dict.fromkeys(k for bean in seg.beans for k in bean.keys)
        body = "".join(bean.data for bean in seg.beans).encode("utf-8")
        return [(self.topic, body, KEY_SEPARATOR.join(keys))]
