# -*- test-case-name: rocketmq_tx.remoting.test.test_pop -*-
"""
The POP extra-info strings (Java ``ExtraInfoUtil``) and the POP retry topic names (``KeyBuilder``).

A popped message carries ``POP_CK`` = ``"<ckQueueOffset> <popTime> <invisibleTime> <reviveQid>
<retry> <brokerName> <queueId> <queueOffset>"``; the client echoes it back in ACK_MESSAGE and
CHANGE_MESSAGE_INVISIBLETIME as ``extraInfo``. ``<retry>`` is ``0`` for the topic itself, ``1``
for the V1 retry topic ``%RETRY%<group>_<topic>`` and ``2`` for the V2 form
``%RETRY%<group>+<topic>`` (``enableRetryTopicV2``). The POP response header's
``startOffsetInfo`` / ``msgOffsetInfo`` / ``orderCountInfo`` are ``;``-joined
``"<retry> <queueId> <value>"`` entries. Numbers parse as Java's ``Long.valueOf`` does; a
malformed string raises :class:`ValueError` with Java's text where Java has one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rocketmq_tx.common.native import speedups

__all__ = ["POP_ORDER_REVIVE_QUEUE", "NORMAL_TOPIC", "RETRY_TOPIC", "RETRY_TOPIC_V2", "ExtraInfo",
           "build_pop_retry_topic", "build_pop_retry_topic_v1", "build_pop_retry_topic_v2",
           "is_pop_retry_topic_v2", "parse_normal_topic", "retry_flag", "real_topic", "build_extra_info",
           "parse_extra_info", "java_split", "parse_java_long", "build_start_offset_info",
           "build_msg_offset_info", "build_queue_id_order_count_info", "build_queue_offset_order_count_info",
           "parse_start_offset_info", "parse_msg_offset_info", "parse_order_count_info", "queue_offset_key",
           "start_offset_info_key", "build_polling_key"]

#: ``KeyBuilder.POP_ORDER_REVIVE_QUEUE``: the revive queue id a FIFO (``order=true``) pop reports.
POP_ORDER_REVIVE_QUEUE = 999
RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"
NORMAL_TOPIC = "0"
RETRY_TOPIC = "1"
RETRY_TOPIC_V2 = "2"
_SEPARATOR = " "  # MessageConst.KEY_SEPARATOR
_JAVA_LONG = re.compile(r"[+-]?[0-9]+\Z")
_LONG_MIN, _LONG_MAX = -(2 ** 63), 2 ** 63 - 1
_INT_MIN, _INT_MAX = -(2 ** 31), 2 ** 31 - 1


def build_pop_retry_topic_v1(topic: str, group: str) -> str:
    """``%RETRY%<group>_<topic>``."""
    return f"{RETRY_GROUP_TOPIC_PREFIX}{group}_{topic}"


def build_pop_retry_topic_v2(topic: str, group: str) -> str:
    """``%RETRY%<group>+<topic>`` (``enableRetryTopicV2``)."""
    return f"{RETRY_GROUP_TOPIC_PREFIX}{group}+{topic}"


def build_pop_retry_topic(topic: str, group: str, enable_retry_v2: bool = False) -> str:
    """The POP retry topic of *group* on *topic* (``KeyBuilder.buildPopRetryTopic``)."""
    return build_pop_retry_topic_v2(topic, group) if enable_retry_v2 else build_pop_retry_topic_v1(topic, group)


def is_pop_retry_topic_v2(topic: str) -> bool:
    """``KeyBuilder.isPopRetryTopicV2``: a ``%RETRY%`` topic holding a ``+``."""
    return topic.startswith(RETRY_GROUP_TOPIC_PREFIX) and "+" in topic


def parse_normal_topic(topic: str, group: str) -> str:
    """The original topic of a POP retry topic of *group* (``KeyBuilder.parseNormalTopic``)."""
    if not topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return topic
    v2 = f"{RETRY_GROUP_TOPIC_PREFIX}{group}+"
    if topic.startswith(v2):
        return topic[len(v2):]
    return topic[len(RETRY_GROUP_TOPIC_PREFIX) + len(group) + 1:]


def build_polling_key(topic: str, group: str, queue_id: int) -> str:
    """``KeyBuilder.buildPollingKey``: ``<topic>@<group>@<queueId>``."""
    return f"{topic}@{group}@{queue_id}"


def retry_flag(topic: str) -> str:
    """The ``<retry>`` field for *topic* (``ExtraInfoUtil.getRetry``)."""
    if is_pop_retry_topic_v2(topic):
        return RETRY_TOPIC_V2
    if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return RETRY_TOPIC
    return NORMAL_TOPIC


def real_topic(topic: str, group: str, retry: str) -> str:
    """
    The topic a ``<retry>`` field names (``ExtraInfoUtil.getRealTopic``).

    :raises ValueError: *retry* is none of 0, 1, 2.
    """
    if retry == NORMAL_TOPIC:
        return topic
    if retry == RETRY_TOPIC:
        return build_pop_retry_topic_v1(topic, group)
    if retry == RETRY_TOPIC_V2:
        return build_pop_retry_topic_v2(topic, group)
    raise ValueError("getRetry fail, format is wrong")


def java_split(text: str, sep: str) -> list[str]:
    """``String.split`` on a literal: trailing empty strings are dropped, as Java drops them."""
    parts = text.split(sep)
    while len(parts) > 1 and parts[-1] == "":
        parts.pop()
    if parts == [""] and text:
        return []
    return parts


def parse_java_long(text: str, bits: int = 64) -> int:
    """
    ``Long.valueOf`` / ``Integer.parseInt``: optional sign, decimal digits, in range.

    :raises ValueError: ``For input string: "<text>"``, Java's ``NumberFormatException`` text.
    """
    if _JAVA_LONG.match(text):
        value = int(text)
        low, high = (_LONG_MIN, _LONG_MAX) if bits == 64 else (_INT_MIN, _INT_MAX)
        if low <= value <= high:
            return value
    raise ValueError(f'For input string: "{text}"')


@dataclass(slots=True)
class ExtraInfo:
    """
    One parsed extra-info string; *queue_offset* is absent in the 7-field form. A value:
    not frozen only because a frozen dataclass's ``__init__`` costs five times as much, and
    an ACK parses one per message.
    """

    ck_queue_offset: int
    pop_time: int
    invisible_time: int
    revive_qid: int
    retry: str
    broker_name: str
    queue_id: int
    queue_offset: int | None = None

    @property
    def is_order(self) -> bool:
        """``ExtraInfoUtil.isOrder``: popped with ``order=true``."""
        return self.revive_qid == POP_ORDER_REVIVE_QUEUE

    def real_topic(self, topic: str, group: str) -> str:
        """The topic the message was popped from (the retry topic for retry 1/2)."""
        return real_topic(topic, group, self.retry)

    def encode(self) -> str:
        """The string Java's ``buildExtraInfo`` writes."""
        fields = [self.ck_queue_offset, self.pop_time, self.invisible_time, self.revive_qid, self.retry,
                  self.broker_name, self.queue_id]
        if self.queue_offset is not None:
            fields.append(self.queue_offset)
        return _SEPARATOR.join(map(str, fields))


def build_extra_info(ck_queue_offset: int, pop_time: int, invisible_time: int, revive_qid: int, topic: str,
                     broker_name: str, queue_id: int, queue_offset: int | None = None) -> str:
    """``ExtraInfoUtil.buildExtraInfo``; *topic* is the topic popped from (its retry flag is written)."""
    return ExtraInfo(ck_queue_offset, pop_time, invisible_time, revive_qid, retry_flag(topic), broker_name,
                     queue_id, queue_offset).encode()


# The common shape, in one match (an ACK parses one per message: the hot path of POP): 7 or
# 8 fields whose numbers are short enough to be in range whatever their digits (18 digits
# for a long, 9 for an int). Anything else takes the general path below.
_L, _I = r"([+-]?[0-9]{1,18})", r"([+-]?[0-9]{1,9})"
_EXTRA_INFO = re.compile(rf"{_L} {_L} {_L} {_I} ([^ ]+) ([^ ]+) {_I}(?: {_L})?")


def parse_extra_info(text: str) -> ExtraInfo:
    """
    Parse an extra-info string the way the ACK and CHANGE_INVISIBLE processors read it: at
    least the seven fields ``buildExtraInfo`` writes; the eighth (queue offset) if present.

    :raises ValueError: fewer fields than that, or a number Java would not parse.
    """
    if _fast_parse is not None:  # the regex's shape in C
        info = _fast_parse(text)
        if info is not None:
            return info
    m = _EXTRA_INFO.fullmatch(text)
    if m is not None:
        ck, pop, inv, rq, retry, broker, qid, qo = m.groups()
        return ExtraInfo(int(ck), int(pop), int(inv), int(rq), retry, broker, int(qid),
                         None if qo is None else int(qo))
    return _parse_extra_info(text)


if speedups:
    speedups._setup("ExtraInfo", ExtraInfo)
#: the regex's shape parsed in C (its twin is the regex and the general path below)
_fast_parse: Callable[[str], ExtraInfo | None] | None = speedups.parse_extra_info if speedups else None


def _parse_extra_info(text: str) -> ExtraInfo:
    fields = java_split(text, _SEPARATOR)
    if len(fields) < 7:
        raise ValueError(f"getQueueId fail, extraInfoStrs length {len(fields)}")
    return ExtraInfo(
        ck_queue_offset=parse_java_long(fields[0]),
        pop_time=parse_java_long(fields[1]),
        invisible_time=parse_java_long(fields[2]),
        revive_qid=parse_java_long(fields[3], 32),
        retry=fields[4],
        broker_name=fields[5],
        queue_id=parse_java_long(fields[6], 32),
        queue_offset=parse_java_long(fields[7]) if len(fields) > 7 else None,
    )


def _append(info: str, entry: str) -> str:
    return f"{info};{entry}" if info else entry


def build_start_offset_info(info: str, topic: str, queue_id: int, start_offset: int) -> str:
    """*info* with one ``startOffsetInfo`` entry appended (``buildStartOffsetInfo``)."""
    return _append(info, f"{retry_flag(topic)} {queue_id} {start_offset}")


def build_queue_id_order_count_info(info: str, topic: str, queue_id: int, order_count: int) -> str:
    """*info* with one per-queue ``orderCountInfo`` entry appended."""
    return _append(info, f"{retry_flag(topic)} {queue_id} {order_count}")


def queue_offset_key(queue_id: int, queue_offset: int) -> str:
    """``getQueueOffsetKeyValueKey``: ``qo<queueId>%<queueOffset>``."""
    return f"qo{queue_id}%{queue_offset}"


def build_queue_offset_order_count_info(info: str, topic: str, queue_id: int, queue_offset: int,
                                        order_count: int) -> str:
    """*info* with one per-message ``orderCountInfo`` entry appended."""
    return _append(info, f"{retry_flag(topic)} {queue_offset_key(queue_id, queue_offset)} {order_count}")


def build_msg_offset_info(info: str, topic: str, queue_id: int, msg_offsets: Sequence[int]) -> str:
    """*info* with one ``msgOffsetInfo`` entry appended (offsets joined by commas)."""
    return _append(info, f"{retry_flag(topic)} {queue_id} {','.join(map(str, msg_offsets))}")


def start_offset_info_key(topic: str, queue_id: int) -> str:
    """The key :func:`parse_start_offset_info` files *topic*'s queue under (``<retry>@<queueId>``)."""
    return f"{retry_flag(topic)}@{queue_id}"


def _entries(info: str | None, what: str) -> dict[str, str]:
    out: dict[str, str] = {}
    if not info:
        return out
    for one in java_split(info, ";"):
        split = java_split(one, _SEPARATOR)
        if len(split) != 3:
            raise ValueError(f"parse {what} error, {info}")
        key = f"{split[0]}@{split[1]}"
        if key in out:
            raise ValueError(f"parse {what} error, duplicate, {info}")
        out[key] = split[2]
    return out


def parse_start_offset_info(info: str | None) -> dict[str, int]:
    """``parseStartOffsetInfo``: ``{"<retry>@<queueId>": startOffset}``."""
    return {k: parse_java_long(v) for k, v in _entries(info, "startOffsetInfo").items()}


def parse_order_count_info(info: str | None) -> dict[str, int]:
    """``parseOrderCountInfo``: ``{"<retry>@<queueId or qo key>": count}``."""
    return {k: parse_java_long(v, 32) for k, v in _entries(info, "orderCountInfo").items()}


def parse_msg_offset_info(info: str | None) -> dict[str, list[int]]:
    """``parseMsgOffsetInfo``: ``{"<retry>@<queueId>": [offsets]}``."""
    return {k: [parse_java_long(o) for o in java_split(v, ",")]
            for k, v in _entries(info, "msgOffsetMap").items()}
