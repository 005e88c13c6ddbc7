# -*- test-case-name: rocketmq_tx.common.test.test_validators -*-
"""
Java's rules for topic and consumer-group names (``TopicValidator`` and the client's
``Validators``), in the lowest layer because the store applies them too.

Names become directory names (``consumequeue/<topic>/<queueId>``, and a group's
``%RETRY%<group>`` / ``%DLQ%<group>`` topics), so a name outside ``^[%|a-zA-Z0-9_-]+$`` is
never let through: it could hold ``/`` or ``..`` and reach files outside the store.
"""

from __future__ import annotations

import re

__all__ = [
    "TOPIC_MAX_LENGTH",
    "GROUP_MAX_LENGTH",
    "LEGAL_NAME_PATTERN",
    "is_topic_or_group_illegal",
    "is_store_name_safe",
    "validate_topic",
    "validate_group",
]

#: ``TopicValidator.TOPIC_MAX_LENGTH``.
TOPIC_MAX_LENGTH = 127
#: ``Validators.CHARACTER_MAX_LENGTH``: the longest group a Java client (and the 5.x broker) takes.
GROUP_MAX_LENGTH = 255
LEGAL_NAME_PATTERN = "^[%|a-zA-Z0-9_-]+$"

# ASCII only: explicit ranges, no \w (which would take any Unicode letter or digit).
_ILLEGAL_CHAR = re.compile(r"[^%|a-zA-Z0-9_\-]")


def is_topic_or_group_illegal(name: str) -> bool:
    """``TopicValidator.isTopicOrGroupIllegal``: a character outside the legal set (``""`` is legal)."""
    return _ILLEGAL_CHAR.search(name) is not None


def is_store_name_safe(name: object) -> bool:
    """What the store accepts as a topic directory name: non-empty, legal characters only."""
    return isinstance(name, str) and bool(name) and _ILLEGAL_CHAR.search(name) is None


def validate_topic(topic: str | None) -> str | None:
    """``TopicValidator.validateTopic``: ``None`` if fine, else Java's remark (SYSTEM_ERROR)."""
    if topic is None or not topic.strip():
        return "The specified topic is blank."
    if is_topic_or_group_illegal(topic):
        return f"The specified topic contains illegal characters, allowing only {LEGAL_NAME_PATTERN}"
    if len(topic) > TOPIC_MAX_LENGTH:
        return "The specified topic is longer than topic max length."
    return None


def validate_group(group: str | None) -> str | None:
    """
    ``Validators.checkGroup``: ``None`` if fine, else the message a Java client gives for the
    same group. The 4.9 broker checks nothing; the 5.x broker refuses to auto-create such a
    group; here every entry point refuses it.
    """
    if group is None or not group.strip():
        return "the specified group is blank"
    if len(group) > GROUP_MAX_LENGTH:
        return f"the specified group is longer than group max length {GROUP_MAX_LENGTH}."
    if is_topic_or_group_illegal(group):
        return f"the specified group[{group}] contains illegal characters, allowing only {LEGAL_NAME_PATTERN}"
    return None
