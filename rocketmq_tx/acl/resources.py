# -*- test-case-name: rocketmq_tx.acl.test.test_resources -*-
"""
What a request needs, per request code (Java 4.9.8's ``PlainAccessValidator.parse``).

========================================  =====================================================
SEND_MESSAGE (10)                         ``topic`` PUB; a retry topic: ``%RETRY%``+``group`` SUB
SEND_MESSAGE_V2 (310)                     ``b`` PUB; a retry topic: ``%RETRY%``+``a`` SUB
CONSUMER_SEND_MSG_BACK (36)               ``%RETRY%``+``group`` SUB
PULL_MESSAGE (11)                         ``topic`` SUB and ``%RETRY%``+``consumerGroup`` SUB
QUERY_MESSAGE (12)                        ``topic`` SUB
HEART_BEAT (34)                           per consumer group: its retry topic SUB, each
                                          subscribed topic SUB (from the body)
UNREGISTER_CLIENT (35),                   ``%RETRY%``+``consumerGroup`` SUB
GET_CONSUMER_LIST_BY_GROUP (38)
UPDATE_CONSUMER_OFFSET (15)               ``%RETRY%``+``consumerGroup`` SUB and ``topic`` SUB
anything else                             nothing (the request is still authenticated)
========================================  =====================================================

A missing ext field adds nothing (Java's header decoding only logs a missing field).
Admin-only codes (``admin: true`` needed): UPDATE_AND_CREATE_TOPIC (17),
UPDATE_BROKER_CONFIG (25), UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200),
DELETE_SUBSCRIPTIONGROUP (207), DELETE_TOPIC_IN_BROKER (215).

*strict* (the default; ``aclStrict=false`` gives 4.9.8 exactly) closes gaps Java 4.9.8
leaves open, each the way a later Java does or the obvious way:

* SEND_BATCH_MESSAGE (320) needs what SEND_MESSAGE_V2 needs (5.x checks it; 4.9.8 lets
  any account send batches to any topic);
* LITE_PULL_MESSAGE (361), which this broker serves like PULL_MESSAGE, needs what
  PULL_MESSAGE needs;
* SEND_MESSAGE (10) to a retry topic needs SUB on that topic, i.e. on its group (5.x's
  rule; 4.9.8 reads an ext field ``group`` this header does not have, so needs nothing);
* the ACL admin codes 50-53 are admin-only (5.x makes 50-52 admin-only; 4.9.8 lets any
  account create, change and delete accounts, itself an admin included; 53 rewrites the
  global white list, which skips authentication altogether);
* the POP family (5.x, ``@RocketMQAction(SUB)`` on topic and group there): POP_MESSAGE,
  PEEK_MESSAGE, NOTIFICATION, POLLING_INFO, ACK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME need
  ``topic`` SUB (a POP retry topic counts as its original topic) and ``%RETRY%``+``consumerGroup``
  SUB, as PULL_MESSAGE; BATCH_ACK_MESSAGE the same for each ack of its body.
"""

from __future__ import annotations

from typing import Any

from rocketmq_tx.acl.errors import PARSE_FRAME, AclError
from rocketmq_tx.acl.permission import PUB, SUB, is_retry_topic, retry_topic
from rocketmq_tx.common import fastjson
from rocketmq_tx.common.messagecodec import java_string_hash
from rocketmq_tx.remoting import RemotingCommand, RequestCode
from rocketmq_tx.remoting.extrainfo import parse_normal_topic
from rocketmq_tx.remoting.popbodies import BatchAckMessageRequestBody

__all__ = ["needed_resources", "ADMIN_CODES", "STRICT_ADMIN_CODES", "TRACE_TOPIC"]

#: ``TopicValidator.RMQ_SYS_TRACE_TOPIC``: PUB on it is always allowed (message traces).
TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"

#: ``Permission.ADMIN_CODE`` of 4.9.8.
ADMIN_CODES = frozenset({
    RequestCode.UPDATE_AND_CREATE_TOPIC, RequestCode.UPDATE_BROKER_CONFIG, RequestCode.DELETE_TOPIC_IN_BROKER,
    RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, RequestCode.DELETE_SUBSCRIPTIONGROUP,
})
#: With *strict*: the ACL administration codes too.
STRICT_ADMIN_CODES = ADMIN_CODES | {
    RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, RequestCode.DELETE_ACL_CONFIG,
    RequestCode.GET_BROKER_CLUSTER_ACL_INFO, RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
}

_SEND = RequestCode.SEND_MESSAGE
_SEND_V2 = RequestCode.SEND_MESSAGE_V2
_SEND_BATCH = RequestCode.SEND_BATCH_MESSAGE
_SEND_BACK = RequestCode.CONSUMER_SEND_MSG_BACK
_PULL = RequestCode.PULL_MESSAGE
_LITE_PULL = RequestCode.LITE_PULL_MESSAGE
_QUERY = RequestCode.QUERY_MESSAGE
_HEART_BEAT = RequestCode.HEART_BEAT
_GROUP_SUB = frozenset({RequestCode.UNREGISTER_CLIENT, RequestCode.GET_CONSUMER_LIST_BY_GROUP})
_UPDATE_OFFSET = RequestCode.UPDATE_CONSUMER_OFFSET
_POP_CODES = frozenset({RequestCode.POP_MESSAGE, RequestCode.PEEK_MESSAGE, RequestCode.NOTIFICATION,
                        RequestCode.POLLING_INFO, RequestCode.ACK_MESSAGE, RequestCode.CHANGE_MESSAGE_INVISIBLETIME})
_BATCH_ACK = RequestCode.BATCH_ACK_MESSAGE


def _add(needed: dict[str, int], resource: str | None, perm: int) -> None:
    if resource is not None:  # Java's addResourceAndPerm ignores null
        needed[resource] = perm


def _group(group: str | None) -> str | None:
    return None if group is None else retry_topic(group)


def needed_resources(request: RemotingCommand, strict: bool = True) -> dict[str, int]:
    """
    ``resource -> PUB or SUB`` that *request* needs, in the order Java adds them (a
    ``HashMap``: a resource added twice keeps its last permission).

    :raises AclError: the HEART_BEAT body does not decode (Java's parse failure).
    """
    ext = request.ext_fields
    code = request.code
    needed: dict[str, int] = {}
    if code == _SEND_V2 or (strict and code == _SEND_BATCH):
        topic = ext.get("b")
        if is_retry_topic(topic):
            _add(needed, _group(ext.get("a")), SUB)
        else:
            _add(needed, topic, PUB)
    elif code == _SEND:
        topic = ext.get("topic")
        if is_retry_topic(topic):
            _add(needed, topic if strict else _group(ext.get("group")), SUB)
        else:
            _add(needed, topic, PUB)
    elif code == _PULL or (strict and code == _LITE_PULL):
        _add(needed, ext.get("topic"), SUB)
        _add(needed, _group(ext.get("consumerGroup")), SUB)
    elif code == _SEND_BACK:
        _add(needed, _group(ext.get("group")), SUB)
    elif code == _QUERY:
        _add(needed, ext.get("topic"), SUB)
    elif code == _HEART_BEAT:
        _heartbeat(request.body, needed)
    elif code in _GROUP_SUB:
        _add(needed, _group(ext.get("consumerGroup")), SUB)
    elif code == _UPDATE_OFFSET:
        _add(needed, _group(ext.get("consumerGroup")), SUB)
        _add(needed, ext.get("topic"), SUB)
    elif strict and code in _POP_CODES:
        _pop_resources(needed, ext.get("topic"), ext.get("consumerGroup"))
    elif strict and code == _BATCH_ACK:
        try:
            body = BatchAckMessageRequestBody.decode(request.body or b"{}")
        except ValueError as e:
            raise AclError(str(e), PARSE_FRAME) from None
        for ack in body.acks:
            _pop_resources(needed, ack.topic, ack.consumer_group)
    return needed


def _pop_resources(needed: dict[str, int], topic: str | None, group: str | None) -> None:
    if topic is not None and group is not None:
        topic = parse_normal_topic(topic, group)  # an ack names the POP retry topic of its message
    _add(needed, topic, SUB)
    _add(needed, _group(group), SUB)


def _heartbeat(body: bytes, needed: dict[str, int]) -> None:
    """Java decodes the whole ``HeartbeatData``; a failure is an AclException from parse
    (its message, or none for a NullPointerException: an absent body, a null set).

    The resources go in in Java's order, which decides the refusal reported when several
    refused resources share a bucket of the check's ``HashMap``: each group's subscriptions
    in the order of the ``HashSet<SubscriptionData>`` fastjson decodes them into
    (:func:`_java_set_order`); the groups themselves in body order (``ConsumerData`` has no
    ``hashCode``, so Java's order of groups is its objects' identity hashes: any order,
    body order included)."""
    if not body:
        raise AclError(None, PARSE_FRAME)
    try:
        data: Any = fastjson.loads(body)
    except ValueError as e:
        raise AclError(f"syntax error, {e}".replace("\n", " "), PARSE_FRAME) from None
    if not isinstance(data, dict):
        raise AclError(f"syntax error, expect {{, actual {_json_kind(data)}", PARSE_FRAME)
    consumers = data.get("consumerDataSet", [])
    if consumers is None:
        raise AclError(None, PARSE_FRAME)
    if not isinstance(consumers, list):
        raise AclError(f"syntax error, expect [, actual {_json_kind(consumers)}", PARSE_FRAME)
    for consumer in consumers:
        if not isinstance(consumer, dict):
            raise AclError(None if consumer is None else f"syntax error, expect {{, actual {_json_kind(consumer)}",
                           PARSE_FRAME)
        group = consumer.get("groupName")
        _add(needed, None if group is None else retry_topic(str(group)), SUB)
        subscriptions = consumer.get("subscriptionDataSet", [])
        if subscriptions is None:
            raise AclError(None, PARSE_FRAME)
        if not isinstance(subscriptions, list):
            raise AclError(f"syntax error, expect [, actual {_json_kind(subscriptions)}", PARSE_FRAME)
        for sub in subscriptions:
            if not isinstance(sub, dict):
                raise AclError(None if sub is None else f"syntax error, expect {{, actual {_json_kind(sub)}",
                               PARSE_FRAME)
        for sub in _java_set_order(subscriptions):
            topic = sub.get("topic")
            _add(needed, None if topic is None else str(topic), SUB)


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def _set_hash(items: Any, element_hash: Any) -> int | None:
    """``AbstractSet.hashCode`` of a decoded JSON array (null: 0); None if not computable."""
    if items is None:
        return 0
    if not isinstance(items, list):
        return None
    total = 0
    for item in items:
        h = element_hash(item)
        if h is None:
            return None
        total += h
    return _int32(total)


def _string_hash(value: Any) -> int | None:
    if value is None:
        return 0
    return java_string_hash(value) if isinstance(value, str) else None


def _code_hash(value: Any) -> int | None:
    if value is None:
        return 0
    return _int32(value) if isinstance(value, int) and not isinstance(value, bool) else None


def _subscription_hash(sub: dict[str, Any]) -> int | None:
    """4.9.8's ``SubscriptionData.hashCode`` of one decoded subscription (a missing field has
    the class's default: no filter class, empty sets, ``TAG``); None when a value is not of
    the type Java's field would hold as is."""
    mode = sub.get("classFilterMode", False)
    parts = [
        (1231 if mode else 1237) if isinstance(mode, bool) else None,
        _set_hash(sub.get("codeSet", []), _code_hash),
        _string_hash(sub.get("subString")),
        _set_hash(sub.get("tagsSet", []), _string_hash),
        _string_hash(sub.get("topic")),
        _string_hash(sub.get("expressionType", "TAG")),
    ]
    result = 1
    for part in parts:
        if part is None:
            return None
        result = _int32(31 * result + part)
    return result


def _java_set_order(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """*items* (added in this order to a fresh ``HashSet<SubscriptionData>``) in the order Java
    iterates them: by bucket, then in insertion order. Body order when a hash is not
    computable (a value of an unexpected type, which fastjson would convert)."""
    if len(items) < 2:
        return items
    maybe_hashes = [_subscription_hash(item) for item in items]
    hashes = [h for h in maybe_hashes if h is not None]
    if len(hashes) < len(items):
        return items
    capacity = 16
    while len(items) > capacity * 3 // 4:
        capacity *= 2

    def bucket(i: int) -> int:
        h = hashes[i] & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    return [items[i] for i in sorted(range(len(items)), key=bucket)]


def _json_kind(value: Any) -> str:
    if isinstance(value, list):
        return "["
    if isinstance(value, str):
        return "string"
    return type(value).__name__
