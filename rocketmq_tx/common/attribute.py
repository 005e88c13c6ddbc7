# -*- test-case-name: rocketmq_tx.common.test.test_attribute -*-
"""
Topic and subscription-group attributes of RocketMQ 5.x (Java common ``attribute/*``,
``TopicAttributes``, ``SubscriptionGroupAttributes``, ``TopicMessageType``).

An admin request carries a modification as one string, ``+key=value,+key2=value2,-key3``
(:func:`parse_to_map`, Java's ``AttributeParser``); the broker applies it to the stored map
(:func:`alter_current_attributes`, Java's ``AttributeUtil``): on creation only ``+`` keys,
afterwards ``+`` adds or changes and ``-`` removes; every key must be known and every value
legal. A refusal raises :class:`AttributeAlterError` whose text is the exception message the
Java 5.5.0 broker puts in its SYSTEM_ERROR remark. The attribute sets are 5.5.0's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

__all__ = [
    "AttributeAlterError",
    "Attribute",
    "EnumAttribute",
    "LongRangeAttribute",
    "BooleanAttribute",
    "StringAttribute",
    "TopicMessageType",
    "TOPIC_ATTRIBUTES",
    "SUBSCRIPTION_GROUP_ATTRIBUTES",
    "MESSAGE_TYPE",
    "CLEANUP_POLICY",
    "parse_to_map",
    "parse_to_string",
    "alter_current_attributes",
]

#: Java's ``Long.MAX_VALUE``.
_LONG_MAX = (1 << 63) - 1
_JAVA_LONG = re.compile(r"[+-]?[0-9]+")


class AttributeAlterError(ValueError):
    """
    A modification Java refuses; ``str()`` is Java's exception message, :attr:`java_class`
    the class of the exception Java throws (a remark built by Java's remoting layer names it).
    """

    def __init__(self, message: str, java_class: str = "java.lang.RuntimeException") -> None:
        super().__init__(message)
        self.java_class = java_class


class Attribute:
    """One known attribute: its name and whether it may change after creation."""

    def __init__(self, name: str, changeable: bool) -> None:
        self.name = name
        self.changeable = changeable

    def verify(self, value: str) -> None:
        """:raises AttributeAlterError: *value* is not legal for this attribute."""


class EnumAttribute(Attribute):
    """
    One of a fixed set of strings. *universe* is in the order Java's ``HashSet`` prints it,
    because the refusal quotes it.
    """

    def __init__(self, name: str, changeable: bool, universe: Iterable[str], default: str) -> None:
        super().__init__(name, changeable)
        self.universe = tuple(universe)
        self.default = default

    def verify(self, value: str) -> None:
        if value not in self.universe:
            raise AttributeAlterError(f"value is not in set: [{', '.join(self.universe)}]")


class LongRangeAttribute(Attribute):
    """A Java ``long`` in ``[minimum, maximum]``."""

    def __init__(self, name: str, changeable: bool, minimum: int, maximum: int, default: int) -> None:
        super().__init__(name, changeable)
        self.minimum = minimum
        self.maximum = maximum
        self.default = default

    def verify(self, value: str) -> None:
        # Long.parseLong: an optional sign and ASCII digits, within 64 bits.
        number = int(value) if _JAVA_LONG.fullmatch(value) else None
        if number is None or not -_LONG_MAX - 1 <= number <= _LONG_MAX:
            raise AttributeAlterError(f'For input string: "{value}"', "java.lang.NumberFormatException")
        if not self.minimum <= number <= self.maximum:
            raise AttributeAlterError(f"value is not in range({self.minimum}, {self.maximum})")


class BooleanAttribute(Attribute):
    """``true`` or ``false``, any case."""

    def __init__(self, name: str, changeable: bool, default: bool) -> None:
        super().__init__(name, changeable)
        self.default = default

    def verify(self, value: str) -> None:
        if value.lower() not in ("true", "false"):
            raise AttributeAlterError("boolean attribute format is wrong.")


class StringAttribute(Attribute):
    """Any string."""


class TopicMessageType:
    """``TopicMessageType`` values (5.5.0), the ``message.type`` attribute's universe."""

    UNSPECIFIED = "UNSPECIFIED"
    NORMAL = "NORMAL"
    FIFO = "FIFO"
    DELAY = "DELAY"
    TRANSACTION = "TRANSACTION"
    PRIORITY = "PRIORITY"
    LITE = "LITE"
    MIXED = "MIXED"


# Universes in the order 5.5.0's HashSets print (read from the running JVM).
MESSAGE_TYPE = EnumAttribute("message.type", True, (
    "UNSPECIFIED", "MIXED", "TRANSACTION", "PRIORITY", "FIFO", "DELAY", "LITE", "NORMAL"), "NORMAL")
CLEANUP_POLICY = EnumAttribute("cleanup.policy", False, ("DELETE", "COMPACTION"), "DELETE")
QUEUE_TYPE = EnumAttribute("queue.type", False, ("SimpleCQ", "BatchCQ"), "SimpleCQ")
RESERVE_TIME = LongRangeAttribute("reserve.time", True, -1, _LONG_MAX, -1)
LITE_TOPIC_EXPIRATION = LongRangeAttribute("lite.topic.expiration", True, -1, 30 * 24 * 60, -1)

#: ``TopicAttributes.ALL`` of 5.5.0.
TOPIC_ATTRIBUTES: Mapping[str, Attribute] = {a.name: a for a in (
    CLEANUP_POLICY, MESSAGE_TYPE, LITE_TOPIC_EXPIRATION, QUEUE_TYPE, RESERVE_TIME)}

#: ``SubscriptionGroupAttributes.ALL`` of 5.5.0 (empty in 5.3.x).
SUBSCRIPTION_GROUP_ATTRIBUTES: Mapping[str, Attribute] = {a.name: a for a in (
    LongRangeAttribute("lite.sub.client.max.event.cnt", True, 10, _LONG_MAX, 400),
    LongRangeAttribute("lite.sub.client.quota", True, -1, _LONG_MAX, 2000),
    BooleanAttribute("lite.sub.reset.offset.exclusive", True, False),
    StringAttribute("lite.bind.topic", True),
    BooleanAttribute("lite.sub.reset.offset.unsubscribe", True, False),
    LongRangeAttribute("priority.factor", True, 0, 100, 100),
    EnumAttribute("lite.sub.model", True, ("Shared", "Exclusive"), "Shared"),
    StringAttribute("lite.sub.wildcard", True),
)}


def _java_split(text: str, separator: str) -> list[str]:
    """Java's ``String.split`` on a literal: trailing empty strings dropped."""
    if separator not in text:
        return [text]
    parts = text.split(separator)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def _index(parts: list[str], i: int) -> str:
    if i >= len(parts):
        # What Java's array access throws; the broker passes its message on.
        raise AttributeAlterError(f"Index {i} out of bounds for length {len(parts)}",
                                  "java.lang.ArrayIndexOutOfBoundsException")
    return parts[i]


def parse_to_map(modification: str | None) -> dict[str, str]:
    """
    Java ``AttributeParser.parseToMap``: ``"+a=1,-b"`` → ``{"+a": "1", "-b": ""}`` (the signs
    stay on the keys).

    :raises AttributeAlterError: a pair without ``=`` and without ``-``, a ``key=value`` whose key
        has no ``+``, or a key given twice.
    """
    attributes: dict[str, str] = {}
    if not modification:
        return attributes
    for kv in _java_split(modification, ","):
        if "=" in kv:
            parts = _java_split(kv, "=")
            key, value = _index(parts, 0), _index(parts, 1)
            if "+" not in key:
                raise AttributeAlterError(f"add/alter attribute format is wrong: {key}")
        else:
            key, value = kv, ""
            if "-" not in key:
                raise AttributeAlterError(f"delete attribute format is wrong: {key}")
        if key in attributes:
            raise AttributeAlterError(f"key duplication: {key}")
        attributes[key] = value
    return attributes


def parse_to_string(attributes: Mapping[str, str] | None) -> str:
    """Java ``AttributeParser.parseToString``: the inverse, ``key`` alone for an empty value."""
    if not attributes:
        return ""
    return ",".join(k if not v else f"{k}={v}" for k, v in attributes.items())


def alter_current_attributes(create: bool, known: Mapping[str, Attribute], current: Mapping[str, str],
                             new: Mapping[str, str]) -> dict[str, str]:
    """
    Java ``AttributeUtil.alterCurrentAttributes``: *current* (plain keys) changed by *new*
    (signed keys, as :func:`parse_to_map` returns them).

    :param create: the topic or group does not exist yet: only ``+`` keys are allowed.
    :returns: the attributes to store.
    :raises AttributeAlterError: with Java's message, for the first refusal found.
    """
    init: dict[str, str] = {}
    add: dict[str, str] = {}
    update: dict[str, str] = {}
    delete: dict[str, str] = {}
    seen: set[str] = set()
    for key, value in new.items():
        real = key[1:]
        if not real or "+" in real or "-" in real:
            raise AttributeAlterError("kv string format wrong.")
        if real in seen:
            raise AttributeAlterError(f"alter duplication key. key: {real}")
        seen.add(real)
        if create:
            if not key.startswith("+"):
                raise AttributeAlterError(f"only add attribute is supported while creating topic. key: {real}")
            init[real] = value
        elif key.startswith("+"):
            (update if real in current else add)[real] = value
        elif key.startswith("-"):
            if real not in current:
                raise AttributeAlterError(f"attempt to delete a nonexistent key: {real}")
            delete[real] = value
        else:
            raise AttributeAlterError(f"wrong format key: {real}")
    for group, is_init, is_delete in ((init, True, False), (add, False, False), (update, False, False),
                                      (delete, False, True)):
        for key, value in group.items():
            attribute = known.get(key)
            if attribute is None:
                raise AttributeAlterError(f"unsupported key: {key}")
            if not is_init and not attribute.changeable:
                raise AttributeAlterError(f"attempt to update an unchangeable attribute. key: {key}")
            if not is_delete:
                attribute.verify(value)
    result = dict(current)
    result.update(init)
    result.update(add)
    result.update(update)
    for key in delete:
        result.pop(key, None)
    return result
