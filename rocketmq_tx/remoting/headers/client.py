# -*- test-case-name: rocketmq_tx.remoting.test.test_api -*-
"""
Headers of the client-to-broker requests other than send and pull: offsets, heartbeat
membership, send-back and message queries (protocol notes §3.3 to §3.8).

Every request header here carries the 4.9.5+ ``bname`` key as ``broker_name`` where Java's
client sets it; older brokers ignore unknown keys.
"""

from __future__ import annotations

from rocketmq_tx.remoting.header import CommandCustomHeader, custom_header, wire

__all__ = [
    "QueryConsumerOffsetRequestHeader",
    "QueryConsumerOffsetResponseHeader",
    "UpdateConsumerOffsetRequestHeader",
    "GetMaxOffsetRequestHeader",
    "GetMinOffsetRequestHeader",
    "OffsetResponseHeader",
    "SearchOffsetRequestHeader",
    "GetEarliestMsgStoretimeRequestHeader",
    "GetEarliestMsgStoretimeResponseHeader",
    "UnregisterClientRequestHeader",
    "GetConsumerListByGroupRequestHeader",
    "ConsumerSendMsgBackRequestHeader",
    "ViewMessageRequestHeader",
    "QueryMessageRequestHeader",
    "QueryMessageResponseHeader",
]


@custom_header
class QueryConsumerOffsetRequestHeader(CommandCustomHeader):
    """``QueryConsumerOffsetRequestHeader`` (14); ``setZeroIfNotFound`` is 5.x only."""

    consumer_group: str = wire("consumerGroup", required=True)
    topic: str = wire("topic", required=True)
    queue_id: int = wire("queueId", required=True)
    set_zero_if_not_found: bool | None = wire("setZeroIfNotFound")
    broker_name: str | None = wire("bname")


@custom_header
class QueryConsumerOffsetResponseHeader(CommandCustomHeader):
    """``QueryConsumerOffsetResponseHeader``."""

    offset: int | None = wire("offset")


@custom_header
class UpdateConsumerOffsetRequestHeader(CommandCustomHeader):
    """``UpdateConsumerOffsetRequestHeader`` (15)."""

    consumer_group: str = wire("consumerGroup", required=True)
    topic: str = wire("topic", required=True)
    queue_id: int = wire("queueId", required=True)
    commit_offset: int = wire("commitOffset", required=True)
    broker_name: str | None = wire("bname")


@custom_header
class GetMaxOffsetRequestHeader(CommandCustomHeader):
    """``GetMaxOffsetRequestHeader`` (30); ``committed`` is 5.x only (default true there)."""

    topic: str = wire("topic", required=True)
    queue_id: int = wire("queueId", required=True)
    broker_name: str | None = wire("bname")


@custom_header
class GetMinOffsetRequestHeader(CommandCustomHeader):
    """``GetMinOffsetRequestHeader`` (31)."""

    topic: str = wire("topic", required=True)
    queue_id: int = wire("queueId", required=True)
    broker_name: str | None = wire("bname")


@custom_header
class OffsetResponseHeader(CommandCustomHeader):
    """The ``offset`` response header of GET_MAX_OFFSET, GET_MIN_OFFSET and SEARCH_OFFSET_BY_TIMESTAMP."""

    offset: int = wire("offset", required=True)


@custom_header
class SearchOffsetRequestHeader(CommandCustomHeader):
    """``SearchOffsetRequestHeader`` (29); ``boundaryType`` (``LOWER``/``UPPER``) is 5.x only."""

    topic: str = wire("topic", required=True)
    queue_id: int = wire("queueId", required=True)
    timestamp: int = wire("timestamp", required=True)
    boundary_type: str | None = wire("boundaryType")
    broker_name: str | None = wire("bname")


@custom_header
class GetEarliestMsgStoretimeRequestHeader(CommandCustomHeader):
    """``GetEarliestMsgStoretimeRequestHeader`` (32)."""

    topic: str = wire("topic", required=True)
    queue_id: int = wire("queueId", required=True)
    broker_name: str | None = wire("bname")


@custom_header
class GetEarliestMsgStoretimeResponseHeader(CommandCustomHeader):
    """``GetEarliestMsgStoretimeResponseHeader``."""

    timestamp: int = wire("timestamp", required=True)


@custom_header
class UnregisterClientRequestHeader(CommandCustomHeader):
    """``UnregisterClientRequestHeader`` (35); note Java's capital ``ID``."""

    client_id: str = wire("clientID", required=True)
    producer_group: str | None = wire("producerGroup")
    consumer_group: str | None = wire("consumerGroup")


@custom_header
class GetConsumerListByGroupRequestHeader(CommandCustomHeader):
    """``GetConsumerListByGroupRequestHeader`` (38)."""

    consumer_group: str = wire("consumerGroup", required=True)


@custom_header
class ConsumerSendMsgBackRequestHeader(CommandCustomHeader):
    """``ConsumerSendMsgBackRequestHeader`` (36): ``offset`` is the CommitLog offset."""

    offset: int = wire("offset", required=True)
    group: str = wire("group", required=True)
    delay_level: int = wire("delayLevel", required=True)
    origin_msg_id: str | None = wire("originMsgId")
    origin_topic: str | None = wire("originTopic")
    unit_mode: bool | None = wire("unitMode", default=False)
    max_reconsume_times: int | None = wire("maxReconsumeTimes")
    broker_name: str | None = wire("bname")


@custom_header
class ViewMessageRequestHeader(CommandCustomHeader):
    """``ViewMessageRequestHeader`` (33): the CommitLog offset; ``topic`` is 5.x only."""

    offset: int = wire("offset", required=True)
    topic: str | None = wire("topic")


@custom_header
class QueryMessageRequestHeader(CommandCustomHeader):
    """``QueryMessageRequestHeader`` (12)."""

    topic: str = wire("topic", required=True)
    key: str = wire("key", required=True)
    max_num: int = wire("maxNum", required=True)
    begin_timestamp: int = wire("beginTimestamp", required=True)
    end_timestamp: int = wire("endTimestamp", required=True)


@custom_header
class QueryMessageResponseHeader(CommandCustomHeader):
    """``QueryMessageResponseHeader``."""

    index_last_update_timestamp: int | None = wire("indexLastUpdateTimestamp")
    index_last_update_phyoffset: int | None = wire("indexLastUpdatePhyoffset")
