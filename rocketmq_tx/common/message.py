# -*- test-case-name: rocketmq_tx.common.test.test_message -*-
"""
Message values shared by the store, the wire codecs and the clients.

:class:`Message` is what a producer sends, :class:`MessageExt` is a stored message with the
broker-assigned fields, :class:`MessageQueue` names one queue of a topic on one broker.
Properties are a ``dict[str, str]``; :func:`properties_to_string` and
:func:`string_to_properties` convert them to and from the ``name\\x01value\\x02...`` text used
in CommitLog records and send headers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from rocketmq_tx.common.msgid import HostPort, create_offset_msg_id
from rocketmq_tx.common.native import speedups

__all__ = [
    "KEY_SEPARATOR",
    "NAME_VALUE_SEPARATOR",
    "PROPERTY_SEPARATOR",
    "MAX_PROPERTIES_LENGTH",
    "MessageConst",
    "properties_to_string",
    "string_to_properties",
    "java_parse_boolean",
    "wait_store_msg_ok",
    "Message",
    "MessageExt",
    "MessageQueue",
]

#: Separates several keys inside the ``KEYS`` property.
KEY_SEPARATOR: Final = " "
#: Between a property's name and its value.
NAME_VALUE_SEPARATOR: Final = "\x01"
#: Between two properties.
PROPERTY_SEPARATOR: Final = "\x02"
#: Longest encoded properties string in bytes: its length is a Java ``short`` in every
#: binary format (Java rejects longer ones with PROPERTIES_SIZE_EXCEEDED).
MAX_PROPERTIES_LENGTH: Final = 0x7FFF


class MessageConst:
    """
    Well-known property names (Java ``MessageConst``). They are stored on disk and sent on the
    wire, so the values never change. Names marked "5.x" are only written by 5.x peers.
    """

    PROPERTY_KEYS: Final = "KEYS"
    PROPERTY_TAGS: Final = "TAGS"
    PROPERTY_WAIT_STORE_MSG_OK: Final = "WAIT"
    PROPERTY_DELAY_TIME_LEVEL: Final = "DELAY"
    PROPERTY_RETRY_TOPIC: Final = "RETRY_TOPIC"
    PROPERTY_REAL_TOPIC: Final = "REAL_TOPIC"
    PROPERTY_REAL_QUEUE_ID: Final = "REAL_QID"
    PROPERTY_TRANSACTION_PREPARED: Final = "TRAN_MSG"
    PROPERTY_PRODUCER_GROUP: Final = "PGROUP"
    PROPERTY_MIN_OFFSET: Final = "MIN_OFFSET"
    PROPERTY_MAX_OFFSET: Final = "MAX_OFFSET"
    PROPERTY_BUYER_ID: Final = "BUYER_ID"
    PROPERTY_ORIGIN_MESSAGE_ID: Final = "ORIGIN_MESSAGE_ID"
    PROPERTY_ORIGIN_GROUP: Final = "ORIGIN_GROUP"
    PROPERTY_TRANSFER_FLAG: Final = "TRANSFER_FLAG"
    PROPERTY_CORRECTION_FLAG: Final = "CORRECTION_FLAG"
    PROPERTY_MQ2_FLAG: Final = "MQ2_FLAG"
    PROPERTY_RECONSUME_TIME: Final = "RECONSUME_TIME"
    PROPERTY_MSG_REGION: Final = "MSG_REGION"
    PROPERTY_TRACE_SWITCH: Final = "TRACE_ON"
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX: Final = "UNIQ_KEY"
    PROPERTY_MAX_RECONSUME_TIMES: Final = "MAX_RECONSUME_TIMES"
    PROPERTY_CONSUME_START_TIMESTAMP: Final = "CONSUME_START_TIME"
    PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET: Final = "TRAN_PREPARED_QUEUE_OFFSET"
    PROPERTY_TRANSACTION_CHECK_TIMES: Final = "TRANSACTION_CHECK_TIMES"
    PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS: Final = "CHECK_IMMUNITY_TIME_IN_SECONDS"
    PROPERTY_INSTANCE_ID: Final = "INSTANCE_ID"
    PROPERTY_CORRELATION_ID: Final = "CORRELATION_ID"
    PROPERTY_MESSAGE_REPLY_TO_CLIENT: Final = "REPLY_TO_CLIENT"
    PROPERTY_MESSAGE_TTL: Final = "TTL"
    PROPERTY_REPLY_MESSAGE_ARRIVE_TIME: Final = "ARRIVE_TIME"
    PROPERTY_PUSH_REPLY_TIME: Final = "PUSH_REPLY_TIME"
    PROPERTY_CLUSTER: Final = "CLUSTER"
    PROPERTY_MESSAGE_TYPE: Final = "MSG_TYPE"
    PROPERTY_INNER_MULTI_DISPATCH: Final = "INNER_MULTI_DISPATCH"
    PROPERTY_INNER_MULTI_QUEUE_OFFSET: Final = "INNER_MULTI_QUEUE_OFFSET"

    # 5.x
    PROPERTY_TRANSACTION_ID: Final = "__transactionId__"
    PROPERTY_EXTEND_UNIQ_INFO: Final = "EXTEND_UNIQ_INFO"
    PROPERTY_INNER_NUM: Final = "INNER_NUM"
    PROPERTY_INNER_BASE: Final = "INNER_BASE"
    DUP_INFO: Final = "DUP_INFO"
    PROPERTY_POP_CK: Final = "POP_CK"
    PROPERTY_POP_CK_OFFSET: Final = "POP_CK_OFFSET"
    PROPERTY_FIRST_POP_TIME: Final = "1ST_POP_TIME"
    PROPERTY_SHARDING_KEY: Final = "__SHARDINGKEY"
    PROPERTY_FORWARD_QUEUE_ID: Final = "PROPERTY_FORWARD_QUEUE_ID"
    PROPERTY_REDIRECT: Final = "REDIRECT"
    PROPERTY_TRACE_CONTEXT: Final = "TRACE_CONTEXT"
    PROPERTY_TIMER_DELAY_SEC: Final = "TIMER_DELAY_SEC"
    PROPERTY_TIMER_DELIVER_MS: Final = "TIMER_DELIVER_MS"
    PROPERTY_TIMER_DELAY_MS: Final = "TIMER_DELAY_MS"
    PROPERTY_TIMER_ENQUEUE_MS: Final = "TIMER_ENQUEUE_MS"
    PROPERTY_TIMER_DEQUEUE_MS: Final = "TIMER_DEQUEUE_MS"
    PROPERTY_TIMER_ROLL_TIMES: Final = "TIMER_ROLL_TIMES"
    PROPERTY_TIMER_OUT_MS: Final = "TIMER_OUT_MS"
    PROPERTY_TIMER_DEL_UNIQKEY: Final = "TIMER_DEL_UNIQKEY"
    PROPERTY_TIMER_DELAY_LEVEL: Final = "TIMER_DELAY_LEVEL"
    PROPERTY_BORN_HOST: Final = "__BORNHOST"
    PROPERTY_BORN_TIMESTAMP: Final = "BORN_TIMESTAMP"
    PROPERTY_CRC32: Final = "__CRC32#"
    PROPERTY_DLQ_ORIGIN_TOPIC: Final = "DLQ_ORIGIN_TOPIC"
    PROPERTY_DLQ_ORIGIN_MESSAGE_ID: Final = "DLQ_ORIGIN_MESSAGE_ID"
    #: Properties whose names start with this are never stored (5.x).
    PROPERTY_TRANSIENT_PREFIX: Final = "__RMQ.TRANSIENT."


def properties_to_string(
    properties: Mapping[str, str | None], *, trailing_separator: bool = False
) -> str:
    """
    Serialise properties like Java 4.9.1+ ``messageProperties2String``: ``name 0x01 value``
    joined by 0x02. Entries whose value is ``None`` are skipped.

    Order follows the mapping; Java's follows ``HashMap`` and carries no meaning.

    :param trailing_separator: end with 0x02 as well, as Java 4.9.0 and (observed with
        5.5.1) 5.x write it. Every reader accepts both forms.
    """
    if _native_to_string is not None and type(properties) is dict:
        text = _native_to_string(properties)
    else:
        text = PROPERTY_SEPARATOR.join(
            [f"{name}{NAME_VALUE_SEPARATOR}{value}" for name, value in properties.items() if value is not None]
        )
    if trailing_separator and text:
        text += PROPERTY_SEPARATOR
    return text


def _string_to_properties(text: str) -> dict[str, str]:
    """
    Parse a properties string with the tolerant rules of Java 4.9.1+
    ``string2messageProperties``: split on 0x02; keep a segment only if its first 0x01 leaves
    a non-empty name before it and a non-empty value after it. The value is everything after
    that first 0x01 (it may contain further 0x01). A trailing 0x02 (4.9.0 and Go writers) and
    empty segments are ignored; a repeated name keeps the last value.
    """
    if not isinstance(text, str):  # the C version's TypeError (None is not an empty string)
        raise TypeError("string_to_properties() needs a str")
    properties: dict[str, str] = {}
    if not text:
        return properties
    for segment in text.split(PROPERTY_SEPARATOR):
        # Empty name or value (including "no 0x01 at all") drops the segment.
        name, _, value = segment.partition(NAME_VALUE_SEPARATOR)
        if name and value:
            properties[name] = value
    return properties


string_to_properties: Callable[[str], dict[str, str]] = \
    speedups.string_to_properties if speedups else _string_to_properties
_native_to_string = speedups.properties_to_string if speedups else None


def java_parse_boolean(text: str | None) -> bool:
    """Java ``Boolean.parseBoolean``: ``true`` in any letter case is true; anything else, ``None`` too, false."""
    return text is not None and text.lower() == "true"


def wait_store_msg_ok(properties: Mapping[str, str]) -> bool:
    """
    The ``WAIT`` property (``PROPERTY_WAIT_STORE_MSG_OK``) as Java's
    ``Message.isWaitStoreMsgOK``: true when absent, else ``Boolean.parseBoolean`` of it.
    Every reader of ``WAIT`` (broker, store, clients) goes through this.
    """
    value = properties.get(MessageConst.PROPERTY_WAIT_STORE_MSG_OK)
    return value is None or java_parse_boolean(value)


@dataclass(slots=True)
class Message:
    """
    A message as a producer builds it (Java ``Message``).

    Unlike Java's constructor this one does not add ``WAIT=true``: a value type should hold
    what is on the wire, and the broker treats a missing ``WAIT`` as true anyway.

    :ivar topic: the topic name.
    :ivar body: the payload as the producer passes it (compression is a codec concern).
    :ivar flag: application-defined ``int``, stored as is.
    :ivar properties: string properties; see :class:`MessageConst` for reserved names.
    :ivar transaction_id: set by transactional producers; not part of any binary format.
    """

    topic: str = ""
    body: bytes = b""
    flag: int = 0
    properties: dict[str, str] = field(default_factory=dict)
    transaction_id: str | None = None

    def get_property(self, name: str) -> str | None:
        """
        :return: the value of property *name*, or ``None``.
        """
        return self.properties.get(name)

    def put_property(self, name: str, value: str) -> None:
        """
        Set property *name* to *value*.
        """
        self.properties[name] = value

    def clear_property(self, name: str) -> None:
        """
        Remove property *name* if present.
        """
        self.properties.pop(name, None)

    @property
    def tags(self) -> str | None:
        """
        The ``TAGS`` property (the tag consumers filter on), or ``None``.
        """
        return self.properties.get(MessageConst.PROPERTY_TAGS)

    @tags.setter
    def tags(self, value: str | None) -> None:
        self._set_or_clear(MessageConst.PROPERTY_TAGS, value)

    @property
    def keys(self) -> list[str]:
        """
        The ``KEYS`` property split on :data:`KEY_SEPARATOR` (empty list if absent). Assign a
        string (stored as is) or an iterable of keys (joined with spaces).
        """
        value = self.properties.get(MessageConst.PROPERTY_KEYS)
        if not value:
            return []
        return [key for key in value.split(KEY_SEPARATOR) if key]

    @keys.setter
    def keys(self, value: str | Iterable[str] | None) -> None:
        if value is not None and not isinstance(value, str):
            value = KEY_SEPARATOR.join(value)
        self._set_or_clear(MessageConst.PROPERTY_KEYS, value)

    @property
    def delay_time_level(self) -> int:
        """
        The ``DELAY`` level (1..18 with the default broker configuration), 0 if absent.
        """
        value = self.properties.get(MessageConst.PROPERTY_DELAY_TIME_LEVEL)
        return int(value) if value else 0

    @delay_time_level.setter
    def delay_time_level(self, level: int) -> None:
        self.properties[MessageConst.PROPERTY_DELAY_TIME_LEVEL] = str(level)

    @property
    def deliver_time_ms(self) -> int:
        """
        The 5.x timer delivery time, ms since the epoch (``TIMER_DELIVER_MS``, Java
        ``setDeliverTimeMs``), 0 if absent. A 5.x broker holds the message until then.
        """
        return _long_property(self.properties, MessageConst.PROPERTY_TIMER_DELIVER_MS)

    @deliver_time_ms.setter
    def deliver_time_ms(self, value: int) -> None:
        self.properties[MessageConst.PROPERTY_TIMER_DELIVER_MS] = str(int(value))

    @property
    def delay_time_sec(self) -> int:
        """The 5.x timer delay in seconds from the send (``TIMER_DELAY_SEC``), 0 if absent."""
        return _long_property(self.properties, MessageConst.PROPERTY_TIMER_DELAY_SEC)

    @delay_time_sec.setter
    def delay_time_sec(self, value: int) -> None:
        self.properties[MessageConst.PROPERTY_TIMER_DELAY_SEC] = str(int(value))

    @property
    def delay_time_ms(self) -> int:
        """The 5.x timer delay in ms from the send (``TIMER_DELAY_MS``), 0 if absent."""
        return _long_property(self.properties, MessageConst.PROPERTY_TIMER_DELAY_MS)

    @delay_time_ms.setter
    def delay_time_ms(self, value: int) -> None:
        self.properties[MessageConst.PROPERTY_TIMER_DELAY_MS] = str(int(value))

    @property
    def unique_key(self) -> str | None:
        """
        The client-generated ``UNIQ_KEY``, or ``None``.
        """
        return self.properties.get(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)

    @unique_key.setter
    def unique_key(self, value: str | None) -> None:
        self._set_or_clear(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, value)

    @property
    def wait_store_msg_ok(self) -> bool:
        """
        The ``WAIT`` property; true when absent, as in Java (:func:`wait_store_msg_ok`).
        """
        return wait_store_msg_ok(self.properties)

    @wait_store_msg_ok.setter
    def wait_store_msg_ok(self, value: bool) -> None:
        self.properties[MessageConst.PROPERTY_WAIT_STORE_MSG_OK] = "true" if value else "false"

    def _set_or_clear(self, name: str, value: str | None) -> None:
        if value is None:
            self.properties.pop(name, None)
        else:
            self.properties[name] = value


def _long_property(properties: Mapping[str, str], name: str) -> int:
    value = properties.get(name)
    return int(value) if value else 0


_UNSET_HOST: HostPort = ("0.0.0.0", 0)


@dataclass(slots=True)
class MessageExt(Message):
    """
    A stored message: the :class:`Message` fields plus what the broker assigned (Java
    ``MessageExt``). One CommitLog record decodes to one of these.

    :ivar queue_id: the queue within the topic.
    :ivar store_size: the record's total length in bytes.
    :ivar queue_offset: the logical offset in the consume queue.
    :ivar sys_flag: :class:`~rocketmq_tx.common.sysflag.MessageSysFlag` bits as stored; the
        codec sets the IPv6 bits from the addresses when it encodes.
    :ivar born_timestamp: ms since the epoch when the producer created the message.
    :ivar born_host: the producer's ``(ip, port)``.
    :ivar store_timestamp: ms since the epoch when the broker stored it.
    :ivar store_host: the broker's ``(ip, port)``.
    :ivar commit_log_offset: the record's physical offset in the CommitLog.
    :ivar body_crc: ``CRC32(stored body) & 0x7FFFFFFF`` as read from the record.
    :ivar reconsume_times: how many times the message was redelivered.
    :ivar prepared_transaction_offset: for commit/rollback records, the half message's offset.
    """

    queue_id: int = 0
    store_size: int = 0
    queue_offset: int = 0
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: HostPort = _UNSET_HOST
    store_timestamp: int = 0
    store_host: HostPort = _UNSET_HOST
    commit_log_offset: int = 0
    body_crc: int = 0
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0

    @property
    def offset_msg_id(self) -> str:
        """
        The broker's id for this record: hex of store host and commit log offset (computed on
        demand, so decoding does not pay for it).
        """
        host, port = self.store_host
        return create_offset_msg_id(host, port, self.commit_log_offset)

    @property
    def msg_id(self) -> str:
        """
        The id a Java consumer reports: ``UNIQ_KEY`` when present, else :attr:`offset_msg_id`.
        """
        return self.unique_key or self.offset_msg_id


@dataclass(frozen=True, slots=True, order=True)
class MessageQueue:
    """
    One queue of a topic on one broker. Hashable; orders like Java's ``compareTo`` (topic,
    then broker name, then queue id).
    """

    topic: str
    broker_name: str
    queue_id: int
