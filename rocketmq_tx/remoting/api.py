# -*- test-case-name: rocketmq_tx.remoting.test.test_api -*-
"""
The client side of the broker and name-server protocol, without I/O: for each request code
one function that builds the request and one that turns the response into a value or an
:class:`MQBrokerError` (Java ``MQClientAPIImpl`` and ``PullAPIWrapper.processPullResult``).

Both the Twisted client (:mod:`rocketmq_tx.client`) and the blocking one
(:mod:`rocketmq_tx.blocking`) send what these functions build and parse what comes back
with them, so the two can never disagree about the protocol.

Why one module of ~900 lines: it is a table, one short builder/parser pair per request code
(routes, send, heartbeat, subscriptions, pull, offsets, locks, queries, transactions), read by looking a code up; each
section is independent and small, and splitting it would only spread the lookup.
"""

from __future__ import annotations

import enum
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rocketmq_tx.common import fastjson
from rocketmq_tx.common.message import Message, MessageConst, MessageExt, MessageQueue, properties_to_string
from rocketmq_tx.common.messagecodec import compress_body, decode_messages, encode_batch, java_string_hash
from rocketmq_tx.common.msgid import UniqueKeyGenerator
from rocketmq_tx.common.route import TopicRouteData
from rocketmq_tx.common.sysflag import COMPRESS_MSG_BODY_OVER_HOWMUCH, DEFAULT_COMPRESS_LEVEL, MessageSysFlag
from rocketmq_tx.remoting.codes import RequestCode, ResponseCode
from rocketmq_tx.remoting.command import RemotingCommand
from rocketmq_tx.remoting.errors import MQBrokerError, RemotingCommandError, RocketMQError
from rocketmq_tx.remoting.headers.client import (
    ConsumerSendMsgBackRequestHeader,
    GetConsumerListByGroupRequestHeader,
    GetEarliestMsgStoretimeRequestHeader,
    GetEarliestMsgStoretimeResponseHeader,
    GetMaxOffsetRequestHeader,
    GetMinOffsetRequestHeader,
    OffsetResponseHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    QueryMessageRequestHeader,
    SearchOffsetRequestHeader,
    UnregisterClientRequestHeader,
    UpdateConsumerOffsetRequestHeader,
    ViewMessageRequestHeader,
)
from rocketmq_tx.remoting.headers.pull import PullMessageRequestHeader, PullMessageResponseHeader, PullSysFlag
from rocketmq_tx.remoting.headers.route import GetRouteInfoRequestHeader
from rocketmq_tx.remoting.headers.send import SendMessageRequestHeaderV2, SendMessageResponseHeader
from rocketmq_tx.remoting.headers.transaction import CheckTransactionStateRequestHeader, EndTransactionRequestHeader

__all__ = [
    "AUTO_CREATE_TOPIC_KEY",
    "DEFAULT_TOPIC_QUEUE_NUMS",
    "SUB_ALL",
    "MAX_SUBSCRIPTION_EXPRESSION_LENGTH",
    "SEND_RETRY_CODES",
    "SendRetryPlan",
    "MQClientError",
    "RETRY_GROUP_TOPIC_PREFIX",
    "SendStatus",
    "SendResult",
    "PullStatus",
    "PullResult",
    "SubscriptionData",
    "MessageSelector",
    "check_client_config_request",
    "ConsumerData",
    "HeartbeatData",
    "PreparedMessage",
    "check_response",
    "route_request",
    "parse_route_response",
    "prepare_message",
    "prepare_batch",
    "send_request",
    "parse_send_response",
    "pull_request",
    "parse_pull_response",
    "query_consumer_offset_request",
    "parse_query_consumer_offset_response",
    "update_consumer_offset_request",
    "get_max_offset_request",
    "get_min_offset_request",
    "search_offset_request",
    "parse_offset_response",
    "earliest_msg_storetime_request",
    "parse_earliest_msg_storetime_response",
    "heartbeat_request",
    "unregister_client_request",
    "consumer_list_request",
    "parse_consumer_list_response",
    "send_back_request",
    "view_message_request",
    "query_message_request",
    "parse_messages_response",
    "messages_with_keys",
    "parse_reset_offset_body",
    "UNIQUE_MSG_QUERY_FLAG",
    "end_transaction_request",
    "parse_check_transaction_state",
]

#: ``TopicValidator.AUTO_CREATE_TOPIC_KEY_TOPIC``: the template of auto-created topics.
AUTO_CREATE_TOPIC_KEY = "TBW102"
#: ``DefaultMQProducer.defaultTopicQueueNums``.
DEFAULT_TOPIC_QUEUE_NUMS = 4
#: The expression that subscribes to every tag.
SUB_ALL = "*"
#: The longest TAG expression :meth:`SubscriptionData.build` accepts (ours: Java has no
#: limit but the frame's). 64 Ki characters hold thousands of tags; a broker refuses a
#: longer one as a subscription that does not parse.
MAX_SUBSCRIPTION_EXPRESSION_LENGTH = 64 * 1024
#: ``MixAll.RETRY_GROUP_TOPIC_PREFIX``.
RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"
#: Broker codes after which a producer retries on another queue (Java ``retryResponseCodes``):
#: TOPIC_NOT_EXIST, SERVICE_NOT_AVAILABLE, SYSTEM_ERROR, NO_PERMISSION, NO_BUYER_ID, NOT_IN_CURRENT_UNIT.
SEND_RETRY_CODES = frozenset({17, 14, 1, 16, 204, 205})


class SendRetryPlan:
    """
    Java's rule for a send without a chosen queue, shared by the blocking and the Twisted
    producer: up to ``1 + retries`` attempts within the timeout, each on a queue that
    avoids the broker that just failed; connection errors, timeouts and the codes in
    :data:`SEND_RETRY_CODES` are retried, any other broker answer is final.

    :param info: the topic's publish info (its ``select_queue(avoid_broker)`` picks).
    :param now: seconds, from the caller's clock.
    """

    def __init__(self, info: Any, retries: int, timeout: float, now: Callable[[], float]) -> None:
        self.info = info
        self.attempts = 1 + retries
        self.now = now
        self.deadline = now() + timeout
        self.tried = 0
        self.last_broker: str | None = None
        self.last_error: Exception | None = None

    def next(self) -> tuple[MessageQueue, float] | None:
        """The queue to try next and the time left for it, or ``None`` to give up."""
        remaining = self.deadline - self.now()
        if self.tried >= self.attempts or remaining <= 0:
            return None
        self.tried += 1
        return self.info.select_queue(self.last_broker), remaining

    def failed(self, mq: MessageQueue, error: Exception) -> None:
        """
        Record a failed attempt.

        :raises MQBrokerError: *error* itself when it is a broker answer not worth retrying.
        """
        if isinstance(error, MQBrokerError) and error.code not in SEND_RETRY_CODES:
            raise error
        self.last_error = error
        self.last_broker = mq.broker_name

    def give_up(self) -> MQClientError:
        """The error to raise once :meth:`next` returned ``None``."""
        error = MQClientError(f"Send [{self.attempts}] times, still failed: {self.last_error}",
                              getattr(self.last_error, "code", None))
        error.__cause__ = self.last_error
        return error
#: ``MixAll.UNIQUE_MSG_QUERY_FLAG``: ext field marking a QUERY_MESSAGE by UNIQ_KEY.
UNIQUE_MSG_QUERY_FLAG = "_UNIQUE_KEY_QUERY"


class MQClientError(RocketMQError):
    """
    The client could not do what was asked (no route, no queue, every retry failed) — Java
    ``MQClientException``. :attr:`code` is the last broker response code involved, if any.
    """

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


def _now_ms() -> int:
    return int(time.time() * 1000)


def check_response(response: RemotingCommand, *ok: int) -> RemotingCommand:
    """
    :return: *response* when its code is one of *ok* (SUCCESS if none given).
    :raises MQBrokerError: otherwise, with the server's code and remark.
    """
    if response.code not in (ok or (ResponseCode.SUCCESS,)):
        raise MQBrokerError(response.code, response.remark)
    return response


def _header(cls: Any, response: RemotingCommand) -> Any:
    try:
        return cls.from_ext_fields(response.ext_fields)
    except RemotingCommandError as e:
        # A success without its header is the server's fault; report it with its code.
        raise MQBrokerError(response.code, f"malformed response: {e}") from None


# --------------------------------------------------------------------------- routes

def route_request(topic: str) -> RemotingCommand:
    """GET_ROUTEINFO_BY_TOPIC. Our version (409 ≥ 401) asks for standard-JSON routes."""
    return RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC,
                                   GetRouteInfoRequestHeader(topic).to_ext_fields())


def parse_route_response(response: RemotingCommand) -> TopicRouteData:
    """
    The route in either JSON form (quoted or fastjson's bare numeric keys).

    :raises MQBrokerError: TOPIC_NOT_EXIST (17) and any other failure.
    """
    check_response(response)
    if not response.body:
        raise MQBrokerError(ResponseCode.TOPIC_NOT_EXIST, "empty route body")
    try:
        return TopicRouteData.from_json(fastjson.loads(response.body))
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        raise MQBrokerError(response.code, f"malformed route body: {e}") from None


# --------------------------------------------------------------------------- send

class SendStatus(enum.Enum):
    """Java ``SendStatus``: how well the broker stored a sent message."""

    SEND_OK = "SEND_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"


_SEND_STATUS: dict[int, SendStatus] = {
    ResponseCode.SUCCESS: SendStatus.SEND_OK,
    ResponseCode.FLUSH_DISK_TIMEOUT: SendStatus.FLUSH_DISK_TIMEOUT,
    ResponseCode.FLUSH_SLAVE_TIMEOUT: SendStatus.FLUSH_SLAVE_TIMEOUT,
    ResponseCode.SLAVE_NOT_AVAILABLE: SendStatus.SLAVE_NOT_AVAILABLE,
}


@dataclass(slots=True)
class SendResult:
    """
    Java ``SendResult``.

    :ivar msg_id: the message's ``UNIQ_KEY`` (a batch's keys joined by ``,``), what consumers see.
    :ivar offset_msg_id: the broker's id (store host + CommitLog offset; comma-joined for a batch).
    :ivar queue_offset: the consume-queue offset (a batch's first message).
    """

    send_status: SendStatus
    msg_id: str
    message_queue: MessageQueue
    queue_offset: int
    offset_msg_id: str
    transaction_id: str | None = None
    region_id: str = "DefaultRegion"
    trace_on: bool = True


@dataclass(slots=True)
class PreparedMessage:
    """
    What goes on the wire for one send: the (possibly compressed) body, the sysFlag, the
    properties string, and the id reported back as :attr:`SendResult.msg_id`.
    """

    topic: str
    body: bytes
    sys_flag: int
    properties: str
    flag: int
    msg_id: str
    batch: bool = False
    reconsume_times: int | None = None
    max_reconsume_times: int | None = None


def _check_topic(topic: str) -> None:
    # Java's Validators.checkTopic, before anything is sent.
    if not topic:
        raise MQClientError("the specified topic is blank")
    if len(topic) > 127:
        raise MQClientError("the specified topic is longer than topic max length 127")
    if not all(c.isascii() and (c.isalnum() or c in "%|-_") for c in topic):
        raise MQClientError(
            f"the specified topic[{topic}] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$")


def prepare_message(
    msg: Message,
    ids: UniqueKeyGenerator,
    *,
    compress_over: int = COMPRESS_MSG_BODY_OVER_HOWMUCH,
    compress_level: int = DEFAULT_COMPRESS_LEVEL,
    max_message_size: int = 4 * 1024 * 1024,
) -> PreparedMessage:
    """
    Java ``sendKernelImpl``'s preparation: give *msg* a ``UNIQ_KEY`` unless it has one (it is
    written into *msg*, as Java does, so a retry keeps the id), and zlib-compress a body of
    *compress_over* bytes or more (sysFlag ``COMPRESSED_FLAG | COMPRESSION_ZLIB_TYPE``).
    A ``%RETRY%`` topic's reconsume counters go to the header as Java puts them there.

    :raises MQClientError: a bad topic, an empty body or one above *max_message_size*.
    """
    _check_topic(msg.topic)
    if not msg.body:
        raise MQClientError("the message body is empty")
    if len(msg.body) > max_message_size:
        raise MQClientError(f"the message body size over max value, MAX: {max_message_size}")
    if not msg.unique_key:
        msg.unique_key = ids.create_uniq_id()
    body, sys_flag = msg.body, 0
    if len(body) >= compress_over:
        body = compress_body(body, compress_level)
        sys_flag |= MessageSysFlag.COMPRESSED_FLAG | MessageSysFlag.COMPRESSION_ZLIB_TYPE
    if msg.get_property(MessageConst.PROPERTY_TRANSACTION_PREPARED) == "true":
        sys_flag |= MessageSysFlag.TRANSACTION_PREPARED_TYPE
    reconsume = max_reconsume = None
    if msg.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        value = msg.properties.pop(MessageConst.PROPERTY_RECONSUME_TIME, None)
        reconsume = int(value) if value else None
        value = msg.properties.pop(MessageConst.PROPERTY_MAX_RECONSUME_TIMES, None)
        max_reconsume = int(value) if value else None
    return PreparedMessage(msg.topic, body, sys_flag, properties_to_string(msg.properties), msg.flag,
                           msg.unique_key, False, reconsume, max_reconsume)


def prepare_batch(messages: Sequence[Message], ids: UniqueKeyGenerator) -> PreparedMessage:
    """
    Java ``MessageBatch.generateFromList`` plus the per-message ids: one topic, no delay
    level, no retry topic, never compressed; each message gets its own ``UNIQ_KEY`` and the
    batch's ``msg_id`` lists them joined by ``,``.

    :raises MQClientError: an empty batch or one breaking those rules.
    """
    if not messages:
        raise MQClientError("a batch needs at least one message")
    topic = messages[0].topic
    _check_topic(topic)
    for msg in messages:
        if msg.topic != topic:
            raise MQClientError("the topic of the messages in one batch should be the same")
        if msg.delay_time_level > 0:
            raise MQClientError("TimeDelayLevel is not supported for batching")
        if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            raise MQClientError("Retry Group is not supported for batching")
        if not msg.body:
            raise MQClientError("the message body is empty")
        if not msg.unique_key:
            msg.unique_key = ids.create_uniq_id()
    wait = "true" if messages[0].wait_store_msg_ok else "false"
    return PreparedMessage(topic, encode_batch(messages),
                           0, properties_to_string({MessageConst.PROPERTY_WAIT_STORE_MSG_OK: wait}),
                           0, ",".join(m.unique_key or "" for m in messages), True)


def send_request(
    prepared: PreparedMessage,
    producer_group: str,
    mq: MessageQueue,
    *,
    born_timestamp: int | None = None,
    default_topic: str = AUTO_CREATE_TOPIC_KEY,
    default_topic_queue_nums: int = DEFAULT_TOPIC_QUEUE_NUMS,
    oneway: bool = False,
) -> RemotingCommand:
    """SEND_MESSAGE_V2 (310), or SEND_BATCH_MESSAGE (320) for a prepared batch, to queue *mq*."""
    header = SendMessageRequestHeaderV2(
        producer_group, prepared.topic, default_topic, default_topic_queue_nums, mq.queue_id,
        prepared.sys_flag, _now_ms() if born_timestamp is None else born_timestamp, prepared.flag,
        prepared.properties, prepared.reconsume_times if prepared.reconsume_times is not None else 0,
        False, prepared.max_reconsume_times, prepared.batch, mq.broker_name,
    )
    ext = header.to_ext_fields()
    ext["bname"] = mq.broker_name  # what 4.9.5+ Java writes in JSON mode as well as "n"
    code = RequestCode.SEND_BATCH_MESSAGE if prepared.batch else RequestCode.SEND_MESSAGE_V2
    return RemotingCommand.request(code, ext, prepared.body, oneway=oneway)


def parse_send_response(response: RemotingCommand, mq: MessageQueue, msg_id: str) -> SendResult:
    """
    Java ``processSendResponse``: codes 0/10/11/12 give a :class:`SendResult`.

    :param mq: the queue the request went to (its topic and broker name are kept).
    :param msg_id: :attr:`PreparedMessage.msg_id`.
    :raises MQBrokerError: any other code.
    """
    status = _SEND_STATUS.get(response.code)
    if status is None:
        raise MQBrokerError(response.code, response.remark)
    header = _header(SendMessageResponseHeader, response)
    ext = response.ext_fields
    return SendResult(
        status, msg_id, MessageQueue(mq.topic, mq.broker_name, header.queue_id), header.queue_offset,
        header.msg_id, header.transaction_id, ext.get(MessageConst.PROPERTY_MSG_REGION) or "DefaultRegion",
        ext.get(MessageConst.PROPERTY_TRACE_SWITCH) != "false",
    )


# --------------------------------------------------------------------------- subscriptions

#: Java ``ExpressionType``: the two kinds of subscription expression.
TAG = "TAG"
SQL92 = "SQL92"


@dataclass(frozen=True, slots=True)
class MessageSelector:
    """
    Java ``MessageSelector``: what a consumer subscribes with. :meth:`by_tag` takes a TAG
    expression (``"*"``, ``"A || B"``), :meth:`by_sql` an SQL92 expression over the
    message's properties (``TAGS`` among them), evaluated by the broker, which needs
    ``enablePropertyFilter=true``. Every consumer's ``subscribe`` takes one, or a plain
    string as a TAG expression.
    """

    expression_type: str
    expression: str

    @classmethod
    def by_sql(cls, sql: str) -> MessageSelector:
        return cls(SQL92, sql)

    @classmethod
    def by_tag(cls, tag: str | None = SUB_ALL) -> MessageSelector:
        return cls(TAG, tag or SUB_ALL)

    @classmethod
    def of(cls, selector: str | MessageSelector | None) -> MessageSelector:
        """A selector as given, a string as a TAG expression (``None``: every tag)."""
        return selector if isinstance(selector, MessageSelector) else cls.by_tag(selector)


@dataclass(slots=True)
class SubscriptionData:
    """
    Java ``SubscriptionData`` built like ``FilterAPI.buildSubscriptionData``: a TAG
    expression ``"A || B"`` becomes the tag set and their Java hash codes; ``*`` matches all.
    Java's sets are ``HashSet``s; here they are lists in first-seen order without repeats.
    """

    topic: str
    sub_string: str = SUB_ALL
    tags_set: list[str] = field(default_factory=list)
    code_set: list[int] = field(default_factory=list)
    sub_version: int = 0
    expression_type: str = "TAG"
    class_filter_mode: bool = False

    @classmethod
    def build(cls, topic: str, expression: str | None = SUB_ALL, *, expression_type: str = "TAG",
              sub_version: int | None = None) -> SubscriptionData:
        version = _now_ms() if sub_version is None else sub_version
        expression = (expression or "").strip()
        if expression_type != "TAG":
            return cls(topic, expression, [], [], version, expression_type)
        if not expression or expression == SUB_ALL:
            return cls(topic, SUB_ALL, [], [], version)
        if len(expression) > MAX_SUBSCRIPTION_EXPRESSION_LENGTH:
            raise MQClientError(f"subscription expression of {len(expression)} characters exceeds "
                                f"{MAX_SUBSCRIPTION_EXPRESSION_LENGTH}")
        # First-seen order without repeats; a dict keeps it in linear time (a list's
        # membership test made 100,000 tags take minutes).
        tags = list(dict.fromkeys(t for t in (tag.strip() for tag in expression.split("||")) if t))
        if not tags:
            raise MQClientError(f"subString split error: {expression!r}")
        return cls(topic, expression, tags, [java_string_hash(t) for t in tags], version)

    @classmethod
    def of(cls, topic: str, selector: str | MessageSelector | None = SUB_ALL,
           sub_version: int | None = None) -> SubscriptionData:
        """Java ``FilterAPI.build``: the subscription for a selector (a string is a TAG expression)."""
        selector = MessageSelector.of(selector)
        return cls.build(topic, selector.expression, expression_type=selector.expression_type or TAG,
                         sub_version=sub_version)

    def matches(self, msg: Message) -> bool:
        """The client-side filter of ``processPullResult``: no tag set, or the tag is in it."""
        if not self.tags_set or self.class_filter_mode or self.expression_type != "TAG":
            return True
        tags = msg.tags
        return tags is not None and tags in self.tags_set

    def to_json(self) -> dict[str, Any]:
        return {"classFilterMode": self.class_filter_mode, "codeSet": list(self.code_set),
                "expressionType": self.expression_type, "subString": self.sub_string,
                "subVersion": self.sub_version, "tagsSet": list(self.tags_set), "topic": self.topic}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SubscriptionData:
        return cls(str(data["topic"]), str(data.get("subString") or SUB_ALL),
                   [str(t) for t in data.get("tagsSet") or []],
                   [int(c) for c in data.get("codeSet") or []], int(data.get("subVersion") or 0),
                   str(data.get("expressionType") or "TAG"), bool(data.get("classFilterMode", False)))


@dataclass(slots=True)
class ConsumerData:
    """Java ``ConsumerData`` of a heartbeat; enums travel by name."""

    group_name: str
    consume_type: str = "CONSUME_ACTIVELY"
    message_model: str = "CLUSTERING"
    consume_from_where: str = "CONSUME_FROM_LAST_OFFSET"
    subscriptions: list[SubscriptionData] = field(default_factory=list)
    unit_mode: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"consumeFromWhere": self.consume_from_where, "consumeType": self.consume_type,
                "groupName": self.group_name, "messageModel": self.message_model,
                "subscriptionDataSet": [s.to_json() for s in self.subscriptions], "unitMode": self.unit_mode}


@dataclass(slots=True)
class HeartbeatData:
    """Java ``HeartbeatData``: who this client is and which groups it serves."""

    client_id: str
    producer_groups: list[str] = field(default_factory=list)
    consumers: list[ConsumerData] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"clientID": self.client_id,
                "consumerDataSet": [c.to_json() for c in self.consumers],
                "producerDataSet": [{"groupName": g} for g in self.producer_groups]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> HeartbeatData:
        consumers = [ConsumerData(str(c["groupName"]), str(c.get("consumeType")), str(c.get("messageModel")),
                                  str(c.get("consumeFromWhere")),
                                  [SubscriptionData.from_json(s) for s in c.get("subscriptionDataSet") or []],
                                  bool(c.get("unitMode", False)))
                     for c in data.get("consumerDataSet") or []]
        return cls(str(data["clientID"]), [str(p["groupName"]) for p in data.get("producerDataSet") or []], consumers)


def heartbeat_request(data: HeartbeatData) -> RemotingCommand:
    """HEART_BEAT (34): no header, the fastjson body. The answer is a plain SUCCESS."""
    return RemotingCommand.request(RequestCode.HEART_BEAT, body=fastjson.dumps(data.to_json()))


def unregister_client_request(client_id: str, producer_group: str | None = None,
                              consumer_group: str | None = None) -> RemotingCommand:
    """UNREGISTER_CLIENT (35) for one group."""
    return RemotingCommand.request(RequestCode.UNREGISTER_CLIENT, UnregisterClientRequestHeader(
        client_id, producer_group, consumer_group).to_ext_fields())


def consumer_list_request(group: str) -> RemotingCommand:
    """GET_CONSUMER_LIST_BY_GROUP (38)."""
    return RemotingCommand.request(RequestCode.GET_CONSUMER_LIST_BY_GROUP,
                                   GetConsumerListByGroupRequestHeader(group).to_ext_fields())


def parse_consumer_list_response(response: RemotingCommand) -> list[str]:
    """
    The group's client ids (``{"consumerIdList":[...]}``).

    :raises MQBrokerError: a code other than SUCCESS, or a body that is not such a list.
    """
    check_response(response)
    if not response.body:
        return []
    try:
        return [str(c) for c in fastjson.loads(response.body).get("consumerIdList") or []]
    except (ValueError, TypeError, AttributeError) as e:
        raise MQBrokerError(response.code, f"malformed consumer list body: {e}") from None


# --------------------------------------------------------------------------- pull

class PullStatus(enum.Enum):
    """Java ``PullStatus``."""

    FOUND = "FOUND"
    NO_NEW_MSG = "NO_NEW_MSG"
    NO_MATCHED_MSG = "NO_MATCHED_MSG"
    OFFSET_ILLEGAL = "OFFSET_ILLEGAL"


_PULL_STATUS: dict[int, PullStatus] = {
    ResponseCode.SUCCESS: PullStatus.FOUND,
    ResponseCode.PULL_NOT_FOUND: PullStatus.NO_NEW_MSG,
    ResponseCode.PULL_RETRY_IMMEDIATELY: PullStatus.NO_MATCHED_MSG,
    ResponseCode.PULL_OFFSET_MOVED: PullStatus.OFFSET_ILLEGAL,
}


@dataclass(slots=True)
class PullResult:
    """
    Java ``PullResult``.

    :ivar next_begin_offset: where the next pull of this queue starts.
    :ivar msg_found_list: the messages after client-side tag filtering (empty unless FOUND).
    """

    pull_status: PullStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    msg_found_list: list[MessageExt] = field(default_factory=list)
    suggest_which_broker_id: int = 0


def check_client_config_request(group: str, client_id: str, subscription: SubscriptionData) -> RemotingCommand:
    """
    CHECK_CLIENT_CONFIG (46), Java's ``checkClientInBroker``: may this broker serve
    *subscription* (an SQL92 one compiles, and the broker filters by properties)? Answered
    SUCCESS, or SYSTEM_ERROR / SUBSCRIPTION_PARSE_FAILED with the broker's remark.
    """
    body = {"clientId": client_id, "group": group, "subscriptionData": subscription.to_json()}
    return RemotingCommand.request(RequestCode.CHECK_CLIENT_CONFIG, body=fastjson.dumps(body))


def pull_request(
    consumer_group: str,
    mq: MessageQueue,
    offset: int,
    max_nums: int,
    subscription: SubscriptionData,
    *,
    commit_offset: int = 0,
    suspend_timeout_ms: int = 0,
    slave: bool = False,
) -> RemotingCommand:
    """
    PULL_MESSAGE (11), with the subscription in the header so the broker filters without a
    heartbeat. Code 11 rather than 5.x's LITE_PULL_MESSAGE (361), which 4.9 brokers refuse.

    :param commit_offset: > 0 also commits that offset (``FLAG_COMMIT_OFFSET``).
    :param suspend_timeout_ms: > 0 asks the broker to hold the request that long when there
        is nothing new (long polling); the caller's timeout must exceed it.
    :param slave: the request goes to a slave: the commit flag is left out but the
        ``commitOffset`` field kept, as Java's ``clearCommitOffsetFlag`` does.
    """
    sys_flag = PullSysFlag.SUBSCRIPTION
    if commit_offset > 0 and not slave:
        sys_flag |= PullSysFlag.COMMIT_OFFSET
    if suspend_timeout_ms > 0:
        sys_flag |= PullSysFlag.SUSPEND
    header = PullMessageRequestHeader(
        consumer_group, mq.topic, mq.queue_id, offset, max_nums, int(sys_flag), commit_offset,
        suspend_timeout_ms, subscription.sub_string, subscription.sub_version, subscription.expression_type,
        mq.broker_name,
    )
    return RemotingCommand.request(RequestCode.PULL_MESSAGE, header.to_ext_fields())


def parse_pull_response(response: RemotingCommand, mq: MessageQueue, subscription: SubscriptionData) -> PullResult:
    """
    Java ``processPullResponse`` + ``processPullResult``: decode the records, filter them
    again by tag, add ``MIN_OFFSET``/``MAX_OFFSET``, and set a transactional message's
    transaction id to its ``UNIQ_KEY``.

    :raises MQBrokerError: a code other than 0, 19, 20, 21.
    :raises MessageFormatError: the body is not a sequence of records.
    """
    status = _PULL_STATUS.get(response.code)
    if status is None:
        raise MQBrokerError(response.code, response.remark)
    header = _header(PullMessageResponseHeader, response)
    found: list[MessageExt] = []
    if status is PullStatus.FOUND and response.body:
        min_text, max_text = str(header.min_offset), str(header.max_offset)
        for msg in decode_messages(response.body):
            if not subscription.matches(msg):
                continue
            props = msg.properties
            if props.get(MessageConst.PROPERTY_TRANSACTION_PREPARED, "").lower() == "true":
                msg.transaction_id = props.get(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
            props[MessageConst.PROPERTY_MIN_OFFSET] = min_text
            props[MessageConst.PROPERTY_MAX_OFFSET] = max_text
            found.append(msg)
    return PullResult(status, header.next_begin_offset, header.min_offset, header.max_offset, found,
                      header.suggest_which_broker_id)


# --------------------------------------------------------------------------- offsets

def query_consumer_offset_request(group: str, mq: MessageQueue) -> RemotingCommand:
    """QUERY_CONSUMER_OFFSET (14)."""
    return RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET, QueryConsumerOffsetRequestHeader(
        group, mq.topic, mq.queue_id, None, mq.broker_name).to_ext_fields())


def parse_query_consumer_offset_response(response: RemotingCommand) -> int | None:
    """The committed offset, or ``None`` when the group has none (QUERY_NOT_FOUND, 22)."""
    if response.code == ResponseCode.QUERY_NOT_FOUND:
        return None
    check_response(response)
    offset = _header(QueryConsumerOffsetResponseHeader, response).offset
    return None if offset is None else offset


def update_consumer_offset_request(group: str, mq: MessageQueue, offset: int, *,
                                   oneway: bool = False) -> RemotingCommand:
    """UPDATE_CONSUMER_OFFSET (15); Java's periodic commits go oneway."""
    return RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, UpdateConsumerOffsetRequestHeader(
        group, mq.topic, mq.queue_id, offset, mq.broker_name).to_ext_fields(), oneway=oneway)


def get_max_offset_request(mq: MessageQueue) -> RemotingCommand:
    """GET_MAX_OFFSET (30): the offset one past the queue's last message."""
    return RemotingCommand.request(RequestCode.GET_MAX_OFFSET, GetMaxOffsetRequestHeader(
        mq.topic, mq.queue_id, mq.broker_name).to_ext_fields())


def get_min_offset_request(mq: MessageQueue) -> RemotingCommand:
    """GET_MIN_OFFSET (31)."""
    return RemotingCommand.request(RequestCode.GET_MIN_OFFSET, GetMinOffsetRequestHeader(
        mq.topic, mq.queue_id, mq.broker_name).to_ext_fields())


def search_offset_request(mq: MessageQueue, timestamp_ms: int, boundary_type: str | None = None) -> RemotingCommand:
    """SEARCH_OFFSET_BY_TIMESTAMP (29); *boundary_type* ``LOWER``/``UPPER`` only means something to 5.x."""
    return RemotingCommand.request(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, SearchOffsetRequestHeader(
        mq.topic, mq.queue_id, timestamp_ms, boundary_type, mq.broker_name).to_ext_fields())


def parse_offset_response(response: RemotingCommand) -> int:
    """The ``offset`` of GET_MAX_OFFSET, GET_MIN_OFFSET and SEARCH_OFFSET_BY_TIMESTAMP."""
    check_response(response)
    return int(_header(OffsetResponseHeader, response).offset)


def earliest_msg_storetime_request(mq: MessageQueue) -> RemotingCommand:
    """GET_EARLIEST_MSG_STORETIME (32)."""
    return RemotingCommand.request(RequestCode.GET_EARLIEST_MSG_STORETIME, GetEarliestMsgStoretimeRequestHeader(
        mq.topic, mq.queue_id, mq.broker_name).to_ext_fields())


def parse_earliest_msg_storetime_response(response: RemotingCommand) -> int:
    """The store timestamp (ms) of the queue's first message."""
    check_response(response)
    return int(_header(GetEarliestMsgStoretimeResponseHeader, response).timestamp)


# --------------------------------------------------------------------------- send-back and queries

# The lock bodies live in adminbodies, which imports this module: imported where used.

def lock_batch_request(group: str, client_id: str, mqs: Iterable[MessageQueue]) -> RemotingCommand:
    """LOCK_BATCH_MQ (41): ask one broker to lock *mqs* (all of its own) for orderly consumption."""
    from rocketmq_tx.remoting.adminbodies import LockBatchRequestBody

    body = LockBatchRequestBody(group, client_id, sorted(mqs))
    return RemotingCommand.request(RequestCode.LOCK_BATCH_MQ, body=fastjson.dumps(body.to_json()))


def parse_lock_batch_response(response: RemotingCommand) -> set[MessageQueue]:
    """
    The queues the broker locked for us (the others are held by another member).

    :raises MQBrokerError: a code other than SUCCESS, or a body that is not a LockBatchResponseBody.
    """
    from rocketmq_tx.remoting.adminbodies import LockBatchResponseBody

    check_response(response)
    if not response.body:
        return set()
    try:
        return set(LockBatchResponseBody.from_json(fastjson.loads(response.body)).lock_ok_mq_set)
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        raise MQBrokerError(response.code, f"malformed LockBatchResponseBody: {e}") from None


def unlock_batch_request(group: str, client_id: str, mqs: Iterable[MessageQueue]) -> RemotingCommand:
    """UNLOCK_BATCH_MQ (42): give up the locks of *mqs* (a dropped queue, a consumer stopping)."""
    from rocketmq_tx.remoting.adminbodies import UnlockBatchRequestBody

    body = UnlockBatchRequestBody(group, client_id, sorted(mqs))
    return RemotingCommand.request(RequestCode.UNLOCK_BATCH_MQ, body=fastjson.dumps(body.to_json()))


def send_back_request(msg: MessageExt, group: str, delay_level: int, *, max_reconsume_times: int | None = None,
                      broker_name: str | None = None) -> RemotingCommand:
    """
    CONSUMER_SEND_MSG_BACK (36): the broker re-stores *msg* (found by its CommitLog offset)
    in ``%RETRY%<group>``, or in ``%DLQ%<group>`` once it was retried too often.
    """
    return RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, ConsumerSendMsgBackRequestHeader(
        msg.commit_log_offset, group, delay_level, msg.msg_id, msg.topic, False, max_reconsume_times,
        broker_name).to_ext_fields())


def view_message_request(commit_log_offset: int, topic: str | None = None) -> RemotingCommand:
    """VIEW_MESSAGE_BY_ID (33): send it to the store host decoded from the offsetMsgId."""
    return RemotingCommand.request(RequestCode.VIEW_MESSAGE_BY_ID,
                                   ViewMessageRequestHeader(commit_log_offset, topic).to_ext_fields())


def query_message_request(topic: str, key: str, max_num: int = 32, begin_ms: int = 0, end_ms: int | None = None,
                          *, unique_key: bool = False) -> RemotingCommand:
    """QUERY_MESSAGE (12) by ``KEYS`` (or, with *unique_key*, by ``UNIQ_KEY``) in a time range."""
    ext = QueryMessageRequestHeader(topic, key, max_num, begin_ms,
                                    _now_ms() if end_ms is None else end_ms).to_ext_fields()
    ext[UNIQUE_MSG_QUERY_FLAG] = "true" if unique_key else "false"
    return RemotingCommand.request(RequestCode.QUERY_MESSAGE, ext)


def parse_messages_response(response: RemotingCommand, *, not_found_ok: bool = True) -> list[MessageExt]:
    """
    The records of a VIEW_MESSAGE_BY_ID or QUERY_MESSAGE answer; QUERY_NOT_FOUND (22) is an
    empty list unless *not_found_ok* is false.
    """
    if not_found_ok and response.code == ResponseCode.QUERY_NOT_FOUND:
        return []
    check_response(response)
    return decode_messages(response.body) if response.body else []


_MQ_TO_STRING = re.compile(r"MessageQueue \[topic=(?P<topic>.*), brokerName=(?P<broker>.*), queueId=(?P<qid>-?\d+)\]")


def _message_queue_key(key: Any) -> MessageQueue:
    if isinstance(key, Mapping):
        return MessageQueue(str(key["topic"]), str(key["brokerName"]), int(key["queueId"]))
    match = _MQ_TO_STRING.fullmatch(str(key))  # a writer that used MessageQueue.toString()
    if match is None:
        data = fastjson.loads(str(key))
        return MessageQueue(str(data["topic"]), str(data["brokerName"]), int(data["queueId"]))
    return MessageQueue(match["topic"], match["broker"], int(match["qid"]))


def parse_reset_offset_body(body: bytes) -> dict[MessageQueue, int]:
    """
    ``ResetOffsetBody`` of RESET_CONSUMER_CLIENT_OFFSET (220, broker to client): the queues
    and their new offsets. fastjson writes its ``Map<MessageQueue, Long>`` with the queue
    objects themselves as keys.

    :raises RemotingCommandError: the body is not such a table.
    """
    if not body:
        return {}
    try:
        table = fastjson.loads(body).get("offsetTable") or {}
        return {_message_queue_key(k): int(v) for k, v in table.items()}
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        raise RemotingCommandError(f"malformed ResetOffsetBody: {e}") from None


def messages_with_keys(messages: Iterable[MessageExt], key: str) -> list[MessageExt]:
    """Java's client-side recheck of QUERY_MESSAGE hits: the index is a hash, so drop collisions."""
    return [m for m in messages if key in m.keys or m.unique_key == key]


# --------------------------------------------------------------------------- transactions

def end_transaction_request(header: EndTransactionRequestHeader, remark: str | None = None) -> RemotingCommand:
    """
    END_TRANSACTION (37), sent oneway as Java's ``endTransactionOneway`` does; *remark*
    names a local failure.
    """
    request = RemotingCommand.request(RequestCode.END_TRANSACTION, header.to_ext_fields(), oneway=True)
    request.remark = remark
    return request


def parse_check_transaction_state(request: RemotingCommand) -> tuple[CheckTransactionStateRequestHeader, MessageExt]:
    """
    A broker's CHECK_TRANSACTION_STATE (39): its header and the half message it asks about
    (the body is one stored record, as Java's ``MessageDecoder.decode`` reads it).

    :raises RemotingCommandError: a header without its required fields.
    :raises MessageFormatError: a body that is not one record.
    """
    header = CheckTransactionStateRequestHeader.from_ext_fields(request.ext_fields)
    messages = decode_messages(request.body or b"")
    if len(messages) != 1:
        raise RemotingCommandError(f"CHECK_TRANSACTION_STATE carries {len(messages)} messages, not one")
    return header, messages[0]
