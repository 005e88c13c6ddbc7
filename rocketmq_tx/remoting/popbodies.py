# -*- test-case-name: rocketmq_tx.remoting.test.test_pop -*-
"""
The JSON forms of POP consumption: the checkpoint, ack and batch-ack records a broker writes
to its revive topic (Java ``PopCheckPoint``, ``AckMsg``, ``BatchAckMsg``, tags ``ck``,
``ack``, ``bAck``), and the BATCH_ACK_MESSAGE body (``BatchAckMessageRequestBody`` of
``BatchAck``).

Written as a 5.5 broker writes them (fastjson2: short field names, fields sorted by name,
nulls left out, the derived ``reviveTime`` of a checkpoint included); read leniently, as
fastjson2 reads them: a record's long ``alternateNames`` (``ackOffset``, ``consumerGroup``...)
are accepted too, unknown fields are ignored. A batch ack's ``b`` is the base64 of Java's
``BitSet.toByteArray`` (bit *i* = byte *i*/8, bit *i*%8, little-endian, trailing zero bytes
dropped). Every record read is validated here: a field of the wrong type raises
:class:`ValueError`, as fastjson2 refuses it.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rocketmq_tx.common import fastjson

__all__ = ["PopCheckPoint", "AckMsg", "BatchAckMsg", "BatchAck", "BatchAckMessageRequestBody",
           "CK_TAG", "ACK_TAG", "BATCH_ACK_TAG", "REVIVE_TOPIC_PREFIX", "revive_topic", "bitset_to_bytes",
           "bitset_from_bytes", "MAX_BATCH_ACK_BITS"]

CK_TAG = "ck"
ACK_TAG = "ack"
BATCH_ACK_TAG = "bAck"
#: ``PopAckConstants.REVIVE_TOPIC``; the cluster's revive topic appends its name.
REVIVE_TOPIC_PREFIX = "rmq_sys_REVIVE_LOG_"
#: The widest batch-ack bitset we accept: a pop returns at most 32 messages per queue in
#: Java, so a checkpoint spans at most that; bigger sets are refused before they are expanded.
MAX_BATCH_ACK_BITS = 1024
_LONG_MIN, _LONG_MAX = -(2 ** 63), 2 ** 63 - 1


def revive_topic(cluster_name: str) -> str:
    """``PopAckConstants.buildClusterReviveTopic``: ``rmq_sys_REVIVE_LOG_<cluster>``."""
    return REVIVE_TOPIC_PREFIX + cluster_name


def _get(data: Mapping[str, Any], short: str, long: str | None = None) -> Any:
    value = data.get(short)
    if value is None and long is not None:
        value = data.get(long)
    return value


def _long(data: Mapping[str, Any], short: str, long: str | None = None, bits: int = 64) -> int:
    value = _get(data, short, long)
    if value is None:
        return 0
    if isinstance(value, str):  # fastjson2 reads "12" into a long field
        try:
            value = int(value)
        except ValueError:
            raise ValueError(f"field {short}: not a number: {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"field {short}: not an integer: {value!r}")
    if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        raise ValueError(f"field {short}: out of range: {value}")
    return value


def _str(data: Mapping[str, Any], short: str, long: str | None = None) -> str | None:
    value = _get(data, short, long)
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    raise ValueError(f"field {short}: not a string: {value!r}")


def _long_list(data: Mapping[str, Any], short: str, long: str | None = None, bits: int = 64) -> list[int] | None:
    value = _get(data, short, long)
    if value is None:
        return None
    if not isinstance(value, list):
        raise ValueError(f"field {short}: not a list: {value!r}")
    return [_long({"v": v}, "v", bits=bits) for v in value]


def _object(raw: bytes | str | Mapping[str, Any], what: str) -> Mapping[str, Any]:
    if isinstance(raw, Mapping):
        return raw
    try:
        data = fastjson.loads(raw)
    except (fastjson.JSONDecodeError, RecursionError, UnicodeDecodeError) as e:
        raise ValueError(f"{what}: not JSON: {e}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{what}: not a JSON object")
    return data


#: Names whose JSON string is the name itself between quotes (topic and group names are of this form).
_PLAIN = re.compile(r"[A-Za-z0-9%|_.:-]*")


def _compact(items: dict[str, Any]) -> dict[str, Any]:
    return {k: items[k] for k in sorted(items) if items[k] is not None}


@dataclass(slots=True)
class PopCheckPoint:
    """
    ``PopCheckPoint``: *num* messages popped together from *topic*/*queue_id* at *pop_time*,
    invisible for *invisible_time* ms; bit *i* of *bit_map* is set once message *i* is acked.
    *queue_offset_diff* holds each message's offset minus *start_offset* (None in the old form,
    where the messages are consecutive).
    """

    start_offset: int = 0
    pop_time: int = 0
    invisible_time: int = 0
    bit_map: int = 0
    num: int = 0
    queue_id: int = 0
    topic: str | None = None
    cid: str | None = None
    revive_offset: int = 0
    queue_offset_diff: list[int] | None = None
    broker_name: str | None = None
    re_put_times: str | None = None
    suspend: bool = False

    @property
    def revive_time(self) -> int:
        """When the unacked messages are due again (``getReviveTime``)."""
        return self.pop_time + self.invisible_time

    def add_diff(self, diff: int) -> None:
        """Record the next message's offset difference from *start_offset*."""
        if self.queue_offset_diff is None:
            self.queue_offset_diff = []
        self.queue_offset_diff.append(diff)

    def index_of_ack(self, ack_offset: int) -> int:
        """Which message of the checkpoint *ack_offset* is, or -1 (``indexOfAck``)."""
        if ack_offset < self.start_offset:
            return -1
        if not self.queue_offset_diff:
            return ack_offset - self.start_offset if ack_offset - self.start_offset < self.num else -1
        try:
            return self.queue_offset_diff.index(ack_offset - self.start_offset)
        except ValueError:
            return -1

    def ack_offset_by_index(self, index: int) -> int:
        """The queue offset of message *index* (``ackOffsetByIndex``)."""
        if not self.queue_offset_diff:
            return self.start_offset + index
        return self.start_offset + self.queue_offset_diff[index]

    def parse_re_put_times(self) -> int:
        """``parseRePutTimes``: the re-put count; an unparsable one counts as the maximum."""
        if self.re_put_times is None:
            return 0
        try:
            return int(self.re_put_times)
        except ValueError:
            return 2 ** 31 - 1

    def to_json(self) -> bytes:
        """The JSON a 5.5 broker writes as the body of a ``ck`` revive message."""
        return fastjson.dumps(_compact({
            "bm": self.bit_map, "bn": self.broker_name, "c": self.cid, "d": self.queue_offset_diff,
            "it": self.invisible_time, "n": self.num, "pt": self.pop_time, "q": self.queue_id,
            "reviveTime": self.revive_time, "ro": self.revive_offset, "rp": self.re_put_times,
            "so": self.start_offset, "sp": self.suspend, "t": self.topic}))

    @classmethod
    def from_json(cls, raw: bytes | str | Mapping[str, Any]) -> PopCheckPoint:
        """:raises ValueError: not a checkpoint's JSON."""
        data = _object(raw, "PopCheckPoint")
        sp = data.get("sp")
        return cls(start_offset=_long(data, "so"), pop_time=_long(data, "pt"), invisible_time=_long(data, "it"),
                   bit_map=_long(data, "bm", bits=32), num=_long(data, "n", bits=8), queue_id=_long(data, "q", bits=32),
                   topic=_str(data, "t"), cid=_str(data, "c"), revive_offset=_long(data, "ro"),
                   queue_offset_diff=_long_list(data, "d", bits=32), broker_name=_str(data, "bn"),
                   re_put_times=_str(data, "rp"), suspend=sp is True)


@dataclass(slots=True)
class AckMsg:
    """``AckMsg``: message *ack_offset* of the checkpoint (*start_offset*, *pop_time*) is acked."""

    ack_offset: int = 0
    start_offset: int = 0
    consumer_group: str | None = None
    topic: str | None = None
    queue_id: int = 0
    pop_time: int = 0
    broker_name: str | None = None

    def _fields(self) -> dict[str, Any]:
        return {"ao": self.ack_offset, "bn": self.broker_name, "c": self.consumer_group, "pt": self.pop_time,
                "q": self.queue_id, "so": self.start_offset, "t": self.topic}

    def to_json(self) -> bytes:
        """The JSON a 5.5 broker writes as the body of an ``ack`` revive message."""
        group, topic, broker = self.consumer_group, self.topic, self.broker_name
        if group is not None and topic is not None and broker is not None \
                and _PLAIN.fullmatch(group) and _PLAIN.fullmatch(topic) and _PLAIN.fullmatch(broker):
            # one per ACK: names that need no escaping are written directly (the same bytes)
            return (f'{{"ao":{self.ack_offset},"bn":"{broker}","c":"{group}","pt":{self.pop_time},'
                    f'"q":{self.queue_id},"so":{self.start_offset},"t":"{topic}"}}').encode()
        return fastjson.dumps(_compact(self._fields()))

    @classmethod
    def _read(cls, data: Mapping[str, Any]) -> dict[str, Any]:
        return {"ack_offset": _long(data, "ao", "ackOffset"), "start_offset": _long(data, "so", "startOffset"),
                "consumer_group": _str(data, "c", "consumerGroup"), "topic": _str(data, "t", "topic"),
                "queue_id": _long(data, "q", "queueId", bits=32), "pop_time": _long(data, "pt", "popTime"),
                "broker_name": _str(data, "bn", "brokerName")}

    @classmethod
    def from_json(cls, raw: bytes | str | Mapping[str, Any]) -> AckMsg:
        """:raises ValueError: not an ack's JSON."""
        return cls(**cls._read(_object(raw, "AckMsg")))


@dataclass(slots=True)
class BatchAckMsg(AckMsg):
    """``BatchAckMsg``: several offsets of one checkpoint acked at once (``ackOffset`` stays 0)."""

    ack_offset_list: list[int] = field(default_factory=list)

    def to_json(self) -> bytes:
        """The JSON a 5.5 broker writes as the body of a ``bAck`` revive message."""
        return fastjson.dumps(_compact({**self._fields(), "aol": self.ack_offset_list}))

    @classmethod
    def from_json(cls, raw: bytes | str | Mapping[str, Any]) -> BatchAckMsg:
        """:raises ValueError: not a batch ack's JSON."""
        data = _object(raw, "BatchAckMsg")
        return cls(**cls._read(data), ack_offset_list=_long_list(data, "aol", "ackOffsetList") or [])


def bitset_to_bytes(bits: int) -> bytes:
    """``BitSet.toByteArray`` of the set whose members are the 1 bits of *bits*."""
    return bits.to_bytes((bits.bit_length() + 7) // 8, "little")


def bitset_from_bytes(data: bytes) -> int:
    """``BitSet.valueOf``: the inverse of :func:`bitset_to_bytes`."""
    return int.from_bytes(data, "little")


@dataclass(slots=True)
class BatchAck:
    """
    ``BatchAck``: the offsets ``start_offset + i`` for every bit *i* of *bit_set* of one pop
    (*retry* is the extra-info retry flag ``"0"``/``"1"``/``"2"``).
    """

    consumer_group: str | None = None
    topic: str | None = None
    retry: str | None = None
    start_offset: int = 0
    queue_id: int = 0
    revive_queue_id: int = 0
    pop_time: int = 0
    invisible_time: int = 0
    bit_set: int = 0

    def offsets(self) -> list[int]:
        """The acked queue offsets, ascending."""
        bits, out, i = self.bit_set, [], 0
        while bits:
            if bits & 1:
                out.append(self.start_offset + i)
            bits >>= 1
            i += 1
        return out

    def to_dict(self) -> dict[str, Any]:
        """The JSON object Java writes for it."""
        return _compact({"b": base64.b64encode(bitset_to_bytes(self.bit_set)).decode("ascii"),
                         "c": self.consumer_group, "it": self.invisible_time, "pt": self.pop_time,
                         "q": self.queue_id, "r": self.retry, "rq": self.revive_queue_id,
                         "so": self.start_offset, "t": self.topic})

    @classmethod
    def from_dict(cls, data: Any) -> BatchAck:
        """:raises ValueError: not a ``BatchAck`` object, or a bitset wider than :data:`MAX_BATCH_ACK_BITS`."""
        if not isinstance(data, dict):
            raise ValueError("BatchAck: not a JSON object")
        raw = _get(data, "b", "bitSet")
        bits = 0
        if raw is not None:
            if isinstance(raw, str):
                try:
                    packed = base64.b64decode(raw, validate=True)
                except (binascii.Error, ValueError):
                    raise ValueError("BatchAck: bitSet is not base64") from None
            elif isinstance(raw, list) and all(isinstance(b, int) and not isinstance(b, bool) for b in raw):
                packed = bytes(b & 0xFF for b in raw)  # fastjson also reads a byte[] as an array
            else:
                raise ValueError("BatchAck: bitSet is neither base64 nor bytes")
            if len(packed) * 8 > MAX_BATCH_ACK_BITS:
                raise ValueError(f"BatchAck: bitSet wider than {MAX_BATCH_ACK_BITS} bits")
            bits = bitset_from_bytes(packed)
        return cls(consumer_group=_str(data, "c", "consumerGroup"), topic=_str(data, "t", "topic"),
                   retry=_str(data, "r", "retry"), start_offset=_long(data, "so", "startOffset"),
                   queue_id=_long(data, "q", "queueId", bits=32),
                   revive_queue_id=_long(data, "rq", "reviveQueueId", bits=32),
                   pop_time=_long(data, "pt", "popTime"), invisible_time=_long(data, "it", "invisibleTime"),
                   bit_set=bits)


@dataclass(slots=True)
class BatchAckMessageRequestBody:
    """The body of BATCH_ACK_MESSAGE (200151)."""

    broker_name: str | None = None
    acks: list[BatchAck] = field(default_factory=list)

    def encode(self) -> bytes:
        """The JSON a 5.x client writes."""
        return fastjson.dumps(_compact({"acks": [a.to_dict() for a in self.acks], "brokerName": self.broker_name}))

    @classmethod
    def decode(cls, body: bytes) -> BatchAckMessageRequestBody:
        """:raises ValueError: not a batch-ack body."""
        data = _object(body, "BatchAckMessageRequestBody")
        acks = data.get("acks")
        if acks is not None and not isinstance(acks, list):
            raise ValueError("BatchAckMessageRequestBody: acks is not a list")
        return cls(broker_name=_str(data, "brokerName"), acks=[BatchAck.from_dict(a) for a in acks or []])
