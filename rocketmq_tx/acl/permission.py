# -*- test-case-name: rocketmq_tx.acl.test.test_permission -*-
"""
Permission bits and strings of ACL 1.0 (Java's ``Permission``).

An account's permission on a topic or a group is a bit set: DENY (1), ANY (2), PUB (4),
SUB (8). In ``plain_acl.yml`` it is written ``DENY``, ``PUB``, ``SUB``, ``PUB|SUB`` or
``SUB|PUB``; anything else (a typo, lower case, ``ANY``) reads as DENY. Group
permissions are kept under the group's retry topic, ``%RETRY%<group>``, which is also how
requests name the group they act for.
"""

from __future__ import annotations

from collections.abc import Iterable

from rocketmq_tx.acl.errors import AclError

__all__ = [
    "DENY", "ANY", "PUB", "SUB", "RETRY_GROUP_TOPIC_PREFIX", "java_trim", "java_tokens", "parse_perm",
    "check_permission", "retry_topic", "is_retry_topic", "print_resource", "parse_resource_perms",
    "check_resource_perms",
]

DENY = 1
ANY = 1 << 1
PUB = 1 << 2
SUB = 1 << 3

#: ``MixAll.RETRY_GROUP_TOPIC_PREFIX``
RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"

_PERMS = {"PUB": PUB, "SUB": SUB, "PUB|SUB": PUB | SUB, "SUB|PUB": PUB | SUB, "DENY": DENY}
#: What Java's ``String.trim`` removes: every char up to and including the space.
_JAVA_BLANKS = "".join(map(chr, range(0x21)))


def java_trim(text: str) -> str:
    """Java ``String.trim``: strip characters <= U+0020 at both ends (not Unicode spaces)."""
    return text.strip(_JAVA_BLANKS)


def java_tokens(text: str, separator: str) -> list[str]:
    """commons-lang ``StringUtils.split(text, separatorChar)``: empty tokens dropped."""
    return [t for t in text.split(separator) if t]


def parse_perm(text: str | None) -> int:
    """Java ``Permission.parsePermFromString``: unknown or missing text is DENY."""
    if text is None:
        return DENY
    return _PERMS.get(java_trim(text), DENY)


def check_permission(needed: int, owned: int) -> bool:
    """Java ``Permission.checkPermission``: DENY wins; ANY needs PUB or SUB."""
    if owned & DENY:
        return False
    if needed & ANY:
        return bool(owned & (PUB | SUB))
    return bool(needed & owned)


def retry_topic(group: str) -> str:
    return RETRY_GROUP_TOPIC_PREFIX + group


def is_retry_topic(topic: str | None) -> bool:
    return topic is not None and topic.startswith(RETRY_GROUP_TOPIC_PREFIX)


def print_resource(resource: str, is_group: bool) -> str:
    """Java ``PlainAccessResource.printStr``: ``group:<name>`` or ``topic:<name>``."""
    if is_group:
        return f"group:{resource[len(RETRY_GROUP_TOPIC_PREFIX):]}"
    return f"topic:{resource}"


def parse_resource_perms(into: dict[str, int], is_topic: bool, resources: Iterable[str | None] | None) -> None:
    """
    Java ``Permission.parseResourcePerms``: ``name=PERM`` entries into *into* (groups under
    their retry topic). An entry that is not exactly two ``=``-separated parts is refused.

    :raises AclError: an entry does not parse.
    """
    for resource in resources or ():
        items = java_tokens(resource, "=") if resource is not None else []
        if len(items) != 2:
            raise AclError(f"Parse resource permission failed for {'topic' if is_topic else 'group'}:{resource}")
        name = java_trim(items[0])
        into[name if is_topic else retry_topic(name)] = parse_perm(java_trim(items[1]))


def check_resource_perms(resources: Iterable[str | None] | None) -> None:
    """
    Java ``Permission.checkResourcePerms``, the stricter check of an admin update: every
    entry ``name=PERM`` with PERM one of the five spellings.

    :raises AclError: with Java's message.
    """
    for resource in resources or ():
        items = java_tokens(resource, "=") if resource is not None else []
        if len(items) != 2:
            raise AclError(f"Parse Resource format error for {resource}.\n"
                           "The expected resource format is 'Res=Perm'. For example: topicA=SUB")
        perm = java_trim(items[1])
        if perm != "DENY" and parse_perm(perm) == DENY:
            raise AclError(f"Parse resource permission error for {resource}.\n"
                           "The expected permissions are 'SUB' or 'PUB' or 'SUB|PUB' or 'PUB|SUB'.")
