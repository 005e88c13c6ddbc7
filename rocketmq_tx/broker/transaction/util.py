# -*- test-case-name: rocketmq_tx.broker.test.test_transaction -*-
"""
The transaction layout (Java ``TransactionalMessageUtil`` and the message shapes of
``TransactionalMessageBridge``), pure functions without Twisted or a store.

A half message is the producer's message stored in ``RMQ_SYS_TRANS_HALF_TOPIC`` queue 0 with
``REAL_TOPIC``/``REAL_QID`` added to its properties and its transaction sysFlag bits reset
to NOT_TYPE (so the half topic has a ConsumeQueue the check can walk). An op message, in
``RMQ_SYS_TRANS_OP_HALF_TOPIC`` (same queue id as the half queue), tag ``d``, has the
resolved half message's queue offset as decimal text for body.
"""

from __future__ import annotations

from typing import TypeVar

from rocketmq_tx.broker.topicconfig import TRANS_CHECK_MAX_TIME_TOPIC, TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC
from rocketmq_tx.common.message import MessageConst, MessageExt, properties_to_string, wait_store_msg_ok
from rocketmq_tx.common.messagecodec import java_string_hash
from rocketmq_tx.common.sysflag import MessageSysFlag, reset_transaction_value
from rocketmq_tx.store import MessageExtBrokerInner

__all__ = [
    "CID_SYS_RMQ_TRANS",
    "REMOVE_TAG",
    "TRANS_CHECK_MAX_TIME_TOPIC",
    "TRANS_HALF_TOPIC",
    "TRANS_OP_HALF_TOPIC",
    "half_message",
    "op_message",
    "op_message_body",
    "parse_op_body",
    "java_long",
    "renew_half_message",
    "final_message",
    "java_hashmap_order",
]

#: ``MixAll.CID_SYS_RMQ_TRANS``: the group the check's progress is kept under (consume
#: offsets of the half and op queues in ``consumerOffset.json``).
CID_SYS_RMQ_TRANS = "CID_RMQ_SYS_TRANS"
#: ``TransactionalMessageUtil.REMOVETAG``
REMOVE_TAG = "d"


def java_long(text: str | None) -> int:
    """Java ``Long.parseLong`` as the service's ``getLong`` uses it: -1 for anything else."""
    if not text or text != text.strip() or "_" in text:
        return -1
    try:
        value = int(text)
    except ValueError:
        return -1
    return value if -(1 << 63) <= value < (1 << 63) else -1


def parse_op_body(body: bytes) -> list[int]:
    """
    The half queue offsets an op message names: 4.9 writes one (``"7"``), 5.x a
    comma-terminated list (``"7,"``, merged as ``"7,8,9,"``); like Java's ``split(",")``
    trailing empty parts are dropped, and an unreadable part is -1 (Java's ``getLong``).
    """
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return [-1]
    parts = text.split(",")
    while parts and parts[-1] == "":
        parts.pop()
    return [java_long(part) for part in parts] or [-1]


_V = TypeVar("_V")


def _java_hash_index(key: str, capacity: int) -> int:
    h = java_string_hash(key) & 0xFFFFFFFF
    h ^= h >> 16
    return h & (capacity - 1)


def java_hashmap_order(props: dict[str, _V]) -> dict[str, _V]:
    """
    *props* in the order a ``java.util.HashMap`` holding them iterates (bucket order, then
    insertion within a bucket; default capacity 16, doubling at 0.75 load). Only for the
    small maps the broker builds itself (op messages), so its records match Java's bytes.
    """
    capacity = 16
    while len(props) > capacity * 3 // 4:
        capacity *= 2
    return dict(sorted(props.items(), key=lambda kv: _java_hash_index(kv[0], capacity)))


def half_message(msg: MessageExtBrokerInner, props: dict[str, str]) -> MessageExtBrokerInner:
    """
    Java ``parseHalfMessageInner``: *msg* (what SEND_MESSAGE built, *props* its properties)
    moved to the half queue. Changes and returns *msg*.
    """
    props[MessageConst.PROPERTY_REAL_TOPIC] = msg.topic
    props[MessageConst.PROPERTY_REAL_QUEUE_ID] = str(msg.queue_id)
    msg.sys_flag = reset_transaction_value(msg.sys_flag, MessageSysFlag.TRANSACTION_NOT_TYPE)
    msg.topic = TRANS_HALF_TOPIC
    msg.queue_id = 0
    msg.properties = properties_to_string(props).encode()
    msg.property_map = props
    return msg


def _tags_code(props: dict[str, str]) -> int:
    tags = props.get(MessageConst.PROPERTY_TAGS)
    return java_string_hash(tags) if tags else 0


def renew_half_message(msg: MessageExt) -> MessageExtBrokerInner:
    """
    Java ``renewHalfMessageInner``: a stored half message written again at the end of its
    queue (before a check, with its TRANSACTION_CHECK_TIMES raised). As in Java the flag and
    reconsumeTimes are not carried over (they restart at 0) and the producer's born time is kept.
    """
    props = dict(msg.properties)
    return MessageExtBrokerInner(
        topic=msg.topic, body=msg.body, properties=properties_to_string(props).encode(), queue_id=msg.queue_id,
        flag=0, sys_flag=msg.sys_flag, born_timestamp=msg.born_timestamp, born_host=msg.born_host,
        store_host=msg.store_host, reconsume_times=0, tags_code=_tags_code(props), property_map=props,
        wait_store_msg_ok=False)


def immunity_half_message(msg: MessageExt) -> MessageExtBrokerInner:
    """Java ``renewImmunityHalfMessageInner``: the renewed copy remembers the first queue offset."""
    inner = renew_half_message(msg)
    props = inner.property_map
    assert props is not None
    if MessageConst.PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET not in props:
        props[MessageConst.PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET] = str(msg.queue_offset)
    inner.properties = properties_to_string(props).encode()
    return inner


def op_message(half: MessageExt, uniq_key: str, now_ms: int, broker_host: tuple[str, int]) -> MessageExtBrokerInner:
    """
    Java 4.9 ``addRemoveTagInTransactionOp`` + ``makeOpMessageInner``: the ``d`` op message for
    *half* (its queue offset as text) in the op queue of the same id.
    """
    return op_message_body(half.queue_id, str(half.queue_offset).encode(), uniq_key, now_ms, broker_host)


def op_message_body(queue_id: int, body: bytes, uniq_key: str, now_ms: int, broker_host: tuple[str, int]
                    ) -> MessageExtBrokerInner:
    """
    Java ``makeOpMessageInner``: an op message (tag ``d``) with *body* (the half offsets it
    names) in op queue *queue_id*. ``new Message(topic, tags, body)`` sets WAIT=true, and the
    bridge a fresh UNIQ_KEY; born and stored by the broker.
    """
    props = dict(_OP_PROPERTIES)
    props[_OP_KEY] = uniq_key  # in place: the map keeps HashMap's order
    # positional, in field order: on every op message
    return MessageExtBrokerInner(
        TRANS_OP_HALF_TOPIC, body, _OP_TEXT_HEAD + uniq_key.encode() + _OP_TEXT_TAIL,
        queue_id, 0, 0, now_ms, broker_host, broker_host, 0, 0, _REMOVE_TAG_CODE, props, False)


#: an op message's properties in java.util.HashMap's order (the same three names every time,
#: so the order is worked out once); ``None`` stands for the message's UNIQ_KEY
_OP_PROPERTIES = tuple(java_hashmap_order({MessageConst.PROPERTY_TAGS: REMOVE_TAG,
                                           MessageConst.PROPERTY_WAIT_STORE_MSG_OK: "true",
                                           MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX: None}).items())
_REMOVE_TAG_CODE = java_string_hash(REMOVE_TAG)
_OP_KEY = MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX
#: the op message's properties text around its UNIQ_KEY value (the rest never changes)
_OP_TEXT_HEAD, _OP_TEXT_TAIL = (part.encode() for part in properties_to_string(
    {name: "\x00" if value is None else value for name, value in _OP_PROPERTIES}).split("\x00"))


def final_message(half: MessageExt, transaction_type: int, commit_log_offset: int) -> MessageExtBrokerInner:
    """
    Java ``EndTransactionProcessor.endMessageTransaction`` plus what ``processRequest`` sets:
    the committed message for its real topic and queue.

    Java serialises the half message's properties *before* it clears REAL_TOPIC, REAL_QID
    and TRAN_MSG from the map, so the stored record keeps all of them (consumers see
    TRAN_MSG=true and PGROUP); only the in-memory map, which the store consults, loses them.

    :raises ValueError: REAL_TOPIC or REAL_QID missing or not a number (Java throws too).
    """
    props = dict(half.properties)
    topic = props.get(MessageConst.PROPERTY_REAL_TOPIC)
    if not topic:
        raise ValueError("the half message has no REAL_TOPIC")
    queue_id = int(props[MessageConst.PROPERTY_REAL_QUEUE_ID])
    text = properties_to_string(props)
    pop = props.pop
    pop(MessageConst.PROPERTY_REAL_TOPIC, None)
    pop(MessageConst.PROPERTY_REAL_QUEUE_ID, None)
    pop(MessageConst.PROPERTY_TRANSACTION_PREPARED, None)
    # Positional, in field order (one per commit). Java's setWaitStoreMsgOK(false) comes
    # before setProperties(half's map): the half's WAIT rules.
    return MessageExtBrokerInner(
        topic, half.body, text.encode(), queue_id, half.flag, reset_transaction_value(half.sys_flag, transaction_type),
        half.born_timestamp, half.born_host, half.store_host, half.reconsume_times, commit_log_offset,
        _tags_code(props), props, wait_store_msg_ok(props))


def check_max_message(msg: MessageExt, queue_id: int = 0) -> MessageExtBrokerInner:
    """4.9.8 ``DefaultTransactionalMessageCheckListener.toMessageExtBrokerInner``: a half
    message checked too often, kept in TRANS_CHECK_MAX_TIME_TOPIC."""
    props = dict(msg.properties)
    return MessageExtBrokerInner(
        topic=TRANS_CHECK_MAX_TIME_TOPIC, body=msg.body, properties=properties_to_string(props).encode(),
        queue_id=queue_id, flag=msg.flag, sys_flag=msg.sys_flag, born_timestamp=msg.born_timestamp,
        born_host=msg.born_host, store_host=msg.store_host, reconsume_times=msg.reconsume_times,
        tags_code=_tags_code(props), property_map=props, wait_store_msg_ok=False)


def resume_half_message(msg: MessageExt) -> MessageExtBrokerInner:
    """4.9.8 ``AdminBrokerProcessor.toMessageExtBrokerInner`` (RESUME_CHECK_HALF_MESSAGE):
    the message back in the half queue with TRANSACTION_CHECK_TIMES=0."""
    props = dict(msg.properties)
    props[MessageConst.PROPERTY_TRANSACTION_CHECK_TIMES] = "0"
    return MessageExtBrokerInner(
        topic=TRANS_HALF_TOPIC, body=msg.body, properties=properties_to_string(props).encode(), queue_id=0,
        flag=msg.flag, sys_flag=msg.sys_flag, born_timestamp=msg.born_timestamp, born_host=msg.born_host,
        store_host=msg.store_host, reconsume_times=msg.reconsume_times, tags_code=_tags_code(props),
        property_map=props, wait_store_msg_ok=False)
