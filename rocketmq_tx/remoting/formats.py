# -*- test-case-name: rocketmq_tx.remoting.test.test_serialization,rocketmq_tx.remoting.test.test_framing -*-
"""
The remoting wire formats declared once, with construct: the specification and the
test oracle of the hand-written ``struct`` codecs in :mod:`.framing` and
:mod:`.serialization` (construct costs 3-15 µs per header, too slow for every frame).
"""

from __future__ import annotations

from construct import (
    Bytes,
    GreedyBytes,
    GreedyRange,
    Int8ub,
    Int16sb,
    Int24ub,
    Int32sb,
    Int32ub,
    PascalString,
    Prefixed,
    PrefixedArray,
    Struct,
    Terminated,
    this,
)

__all__ = ["Frame", "RocketMQHeader", "ExtField", "RegisterBrokerBodyCompressed"]

#: One frame: the length counts everything after itself.
Frame = Prefixed(
    Int32ub,
    Struct(
        "serialize_type" / Int8ub,
        "header_length" / Int24ub,
        "header" / Bytes(this.header_length),
        "body" / GreedyBytes,
    ),
)

#: One ``extFields`` entry of the ROCKETMQ header.
ExtField = Struct(
    "key" / PascalString(Int16sb, "utf8"),
    "value" / PascalString(Int32sb, "utf8"),
)

#: The ROCKETMQ binary header (``RocketMQSerializable``); 21 bytes at the least.
RocketMQHeader = Struct(
    "code" / Int16sb,
    "language" / Int8ub,
    "version" / Int16sb,
    "opaque" / Int32sb,
    "flag" / Int32sb,
    "remark" / PascalString(Int32sb, "utf8"),
    "ext_fields" / Prefixed(Int32sb, GreedyRange(ExtField)),
    Terminated,
)


def _length_prefixed_text() -> Prefixed:
    return PascalString(Int32sb, "utf8")


#: The inflated body of REGISTER_BROKER with ``compressed=true`` (``RegisterBrokerBody.encode(true)``):
#: the DataVersion JSON, each TopicConfig as its space-separated line, the filter-server list
#: as a JSON array; a 5.x broker appends topic-queue mappings, which 4.9 ignores (so do we).
RegisterBrokerBodyCompressed = Struct(
    "data_version" / _length_prefixed_text(),
    "topic_configs" / PrefixedArray(Int32sb, _length_prefixed_text()),
    "filter_server_list" / _length_prefixed_text(),
    "rest" / GreedyBytes,
)
