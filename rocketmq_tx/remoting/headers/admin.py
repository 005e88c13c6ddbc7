# -*- test-case-name: rocketmq_tx.remoting.test.test_admin_headers -*-
"""
Headers of the broker's admin and client-management requests: topic and group
administration, statistics, offset reset and the broker-to-client calls (codes 17, 40,
202-223, 300-351).

Wire keys are Java 4.9.8's field names. A Java ``boolean``/``int``/``long`` field is
always sent by Java (primitives are never null), so such fields default to Java's value
here rather than ``None`` and are always written. Fields only 5.x sends are optional and
documented as such; 4.x peers ignore unknown keys.
"""

from __future__ import annotations

from rocketmq_tx.remoting.header import CommandCustomHeader, custom_header, wire

__all__ = [
    "CreateTopicRequestHeader",
    "DeleteTopicRequestHeader",
    "GetTopicConfigRequestHeader",
    "GetSubscriptionGroupConfigRequestHeader",
    "GetTopicStatsInfoRequestHeader",
    "GetConsumeStatsRequestHeader",
    "GetConsumerConnectionListRequestHeader",
    "GetProducerConnectionListRequestHeader",
    "DeleteSubscriptionGroupRequestHeader",
    "ResetOffsetRequestHeader",
    "GetConsumerStatusRequestHeader",
    "QueryTopicConsumeByWhoRequestHeader",
    "QueryTopicsByConsumerRequestHeader",
    "QuerySubscriptionByConsumerRequestHeader",
    "QueryConsumeTimeSpanRequestHeader",
    "GetConsumerRunningInfoRequestHeader",
    "ConsumeMessageDirectlyResultRequestHeader",
    "QueryCorrectionOffsetHeader",
    "CloneGroupOffsetRequestHeader",
    "ViewBrokerStatsDataRequestHeader",
    "GetConsumeStatsInBrokerHeader",
    "QueryConsumeQueueRequestHeader",
    "NotifyConsumerIdsChangedRequestHeader",
    "GetBrokerConfigResponseHeader",
]


@custom_header
class CreateTopicRequestHeader(CommandCustomHeader):
    """
    ``CreateTopicRequestHeader`` (UPDATE_AND_CREATE_TOPIC, 17).

    ``attributes`` (``+key=value`` pairs as one string) and ``force`` are 5.x only.
    """

    topic: str = wire("topic", required=True)
    default_topic: str = wire("defaultTopic", required=True)
    read_queue_nums: int = wire("readQueueNums", required=True)
    write_queue_nums: int = wire("writeQueueNums", required=True)
    perm: int = wire("perm", required=True)
    topic_filter_type: str = wire("topicFilterType", required=True)
    topic_sys_flag: int | None = wire("topicSysFlag")
    order: bool = wire("order", required=True, default=False)
    attributes: str | None = wire("attributes")
    force: bool | None = wire("force")


@custom_header
class DeleteTopicRequestHeader(CommandCustomHeader):
    """``DeleteTopicRequestHeader`` (DELETE_TOPIC_IN_BROKER, 215)."""

    topic: str = wire("topic", required=True)


@custom_header
class GetTopicConfigRequestHeader(CommandCustomHeader):
    """``GetTopicConfigRequestHeader`` (GET_TOPIC_CONFIG, 351; 5.x only)."""

    topic: str = wire("topic", required=True)


@custom_header
class GetSubscriptionGroupConfigRequestHeader(CommandCustomHeader):
    """``GetSubscriptionGroupConfigRequestHeader`` (GET_SUBSCRIPTIONGROUP_CONFIG, 352; 5.x only)."""

    group: str = wire("group", required=True)


@custom_header
class GetTopicStatsInfoRequestHeader(CommandCustomHeader):
    """``GetTopicStatsInfoRequestHeader`` (GET_TOPIC_STATS_INFO, 202)."""

    topic: str = wire("topic", required=True)


@custom_header
class GetConsumeStatsRequestHeader(CommandCustomHeader):
    """
    ``GetConsumeStatsRequestHeader`` (GET_CONSUME_STATS, 208): no topic means all the
    group's topics. ``topicList`` (``;``-separated) is 5.x only.
    """

    consumer_group: str = wire("consumerGroup", required=True)
    topic: str | None = wire("topic")
    topic_list: str | None = wire("topicList")


@custom_header
class GetConsumerConnectionListRequestHeader(CommandCustomHeader):
    """``GetConsumerConnectionListRequestHeader`` (GET_CONSUMER_CONNECTION_LIST, 203)."""

    consumer_group: str = wire("consumerGroup", required=True)


@custom_header
class GetProducerConnectionListRequestHeader(CommandCustomHeader):
    """``GetProducerConnectionListRequestHeader`` (GET_PRODUCER_CONNECTION_LIST, 204)."""

    producer_group: str = wire("producerGroup", required=True)


@custom_header
class DeleteSubscriptionGroupRequestHeader(CommandCustomHeader):
    """
    ``DeleteSubscriptionGroupRequestHeader`` (DELETE_SUBSCRIPTIONGROUP, 207).

    4.9.8 calls the flag ``removeOffset``; 5.x renamed it ``cleanOffset``. Both are
    primitives Java always sends, but only the one of its own version, so each is kept
    optional here; :attr:`should_remove_offset` reads whichever came.
    """

    group_name: str = wire("groupName", required=True)
    remove_offset: bool | None = wire("removeOffset")
    clean_offset: bool | None = wire("cleanOffset")

    @property
    def should_remove_offset(self) -> bool:
        """Whether the group's consumer offsets are to go too (either spelling)."""
        return bool(self.remove_offset or self.clean_offset)


@custom_header
class ResetOffsetRequestHeader(CommandCustomHeader):
    """
    ``ResetOffsetRequestHeader``: INVOKE_BROKER_TO_RESET_OFFSET (222, admin to broker) and
    RESET_CONSUMER_CLIENT_OFFSET (220, broker to client). The key really is ``isForce``.

    ``queueId`` (-1 for all queues) and ``offset`` are 5.x only; ``None`` reads as 4.x's
    "every queue, by timestamp".
    """

    topic: str = wire("topic", required=True)
    group: str = wire("group", required=True)
    timestamp: int = wire("timestamp", required=True)
    is_force: bool = wire("isForce", required=True, default=False)
    queue_id: int | None = wire("queueId")
    offset: int | None = wire("offset")


@custom_header
class GetConsumerStatusRequestHeader(CommandCustomHeader):
    """
    ``GetConsumerStatusRequestHeader``: INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223) and
    GET_CONSUMER_STATUS_FROM_CLIENT (221, broker to client).
    """

    topic: str = wire("topic", required=True)
    group: str = wire("group", required=True)
    client_addr: str | None = wire("clientAddr")


@custom_header
class QueryTopicConsumeByWhoRequestHeader(CommandCustomHeader):
    """``QueryTopicConsumeByWhoRequestHeader`` (QUERY_TOPIC_CONSUME_BY_WHO, 300)."""

    topic: str = wire("topic", required=True)


@custom_header
class QueryTopicsByConsumerRequestHeader(CommandCustomHeader):
    """``QueryTopicsByConsumerRequestHeader`` (QUERY_TOPICS_BY_CONSUMER, 343; 5.x only)."""

    group: str = wire("group", required=True)


@custom_header
class QuerySubscriptionByConsumerRequestHeader(CommandCustomHeader):
    """``QuerySubscriptionByConsumerRequestHeader`` (QUERY_SUBSCRIPTION_BY_CONSUMER, 345; 5.x only)."""

    group: str = wire("group", required=True)
    topic: str | None = wire("topic")


@custom_header
class QueryConsumeTimeSpanRequestHeader(CommandCustomHeader):
    """``QueryConsumeTimeSpanRequestHeader`` (QUERY_CONSUME_TIME_SPAN, 303)."""

    topic: str = wire("topic", required=True)
    group: str = wire("group", required=True)


@custom_header
class GetConsumerRunningInfoRequestHeader(CommandCustomHeader):
    """``GetConsumerRunningInfoRequestHeader`` (GET_CONSUMER_RUNNING_INFO, 307; relayed to the client)."""

    consumer_group: str = wire("consumerGroup", required=True)
    client_id: str = wire("clientId", required=True)
    jstack_enable: bool = wire("jstackEnable", default=False)


@custom_header
class ConsumeMessageDirectlyResultRequestHeader(CommandCustomHeader):
    """
    ``ConsumeMessageDirectlyResultRequestHeader`` (CONSUME_MESSAGE_DIRECTLY, 309; relayed
    to the client). ``topic``, ``topicSysFlag`` and ``groupSysFlag`` are 5.x only.
    """

    consumer_group: str = wire("consumerGroup", required=True)
    client_id: str | None = wire("clientId")
    msg_id: str | None = wire("msgId")
    broker_name: str | None = wire("brokerName")
    topic: str | None = wire("topic")
    topic_sys_flag: int | None = wire("topicSysFlag")
    group_sys_flag: int | None = wire("groupSysFlag")


@custom_header
class QueryCorrectionOffsetHeader(CommandCustomHeader):
    """``QueryCorrectionOffsetHeader`` (QUERY_CORRECTION_OFFSET, 308); ``filterGroups`` is comma-separated."""

    filter_groups: str | None = wire("filterGroups")
    compare_group: str = wire("compareGroup", required=True)
    topic: str = wire("topic", required=True)


@custom_header
class CloneGroupOffsetRequestHeader(CommandCustomHeader):
    """``CloneGroupOffsetRequestHeader`` (CLONE_GROUP_OFFSET, 314)."""

    src_group: str = wire("srcGroup", required=True)
    dest_group: str = wire("destGroup", required=True)
    topic: str | None = wire("topic")
    offline: bool = wire("offline", default=False)


@custom_header
class ViewBrokerStatsDataRequestHeader(CommandCustomHeader):
    """``ViewBrokerStatsDataRequestHeader`` (VIEW_BROKER_STATS_DATA, 315)."""

    stats_name: str = wire("statsName", required=True)
    stats_key: str = wire("statsKey", required=True)


@custom_header
class GetConsumeStatsInBrokerHeader(CommandCustomHeader):
    """``GetConsumeStatsInBrokerHeader`` (GET_BROKER_CONSUME_STATS, 317); the key is ``isOrder``."""

    is_order: bool = wire("isOrder", required=True, default=False)


@custom_header
class QueryConsumeQueueRequestHeader(CommandCustomHeader):
    """``QueryConsumeQueueRequestHeader`` (QUERY_CONSUME_QUEUE, 321): nothing is @CFNotNull in Java."""

    topic: str | None = wire("topic")
    queue_id: int = wire("queueId", default=0)
    index: int = wire("index", default=0)
    count: int = wire("count", default=0)
    consumer_group: str | None = wire("consumerGroup")


@custom_header
class NotifyConsumerIdsChangedRequestHeader(CommandCustomHeader):
    """``NotifyConsumerIdsChangedRequestHeader`` (NOTIFY_CONSUMER_IDS_CHANGED, 40; broker to client, oneway)."""

    consumer_group: str = wire("consumerGroup", required=True)


@custom_header
class GetBrokerConfigResponseHeader(CommandCustomHeader):
    """``GetBrokerConfigResponseHeader`` of GET_BROKER_CONFIG (26): the config's data version as JSON text."""

    version: str = wire("version", required=True)
