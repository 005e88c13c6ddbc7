# -*- test-case-name: rocketmq_tx.remoting.test.test_header -*-
"""Headers of SEND_MESSAGE (10), SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320) and their response."""

from __future__ import annotations

from rocketmq_tx.remoting.header import CommandCustomHeader, custom_header, wire

__all__ = ["SendMessageRequestHeader", "SendMessageRequestHeaderV2", "SendMessageResponseHeader"]


@custom_header
class SendMessageRequestHeader(CommandCustomHeader):
    """``SendMessageRequestHeader`` (V1: code 10, 324), keys are Java field names."""

    producer_group: str = wire("producerGroup", required=True)
    topic: str = wire("topic", required=True)
    default_topic: str = wire("defaultTopic", required=True)
    default_topic_queue_nums: int = wire("defaultTopicQueueNums", required=True)
    queue_id: int = wire("queueId", required=True)
    sys_flag: int = wire("sysFlag", required=True)
    born_timestamp: int = wire("bornTimestamp", required=True)
    flag: int = wire("flag", required=True)
    properties: str | None = wire("properties")
    reconsume_times: int | None = wire("reconsumeTimes")
    unit_mode: bool | None = wire("unitMode")
    batch: bool | None = wire("batch")
    max_reconsume_times: int | None = wire("maxReconsumeTimes")
    broker_name: str | None = wire("bname")

    def to_v2(self) -> SendMessageRequestHeaderV2:
        """The single-letter twin (Java ``createSendMessageRequestHeaderV2``)."""
        return SendMessageRequestHeaderV2(
            **{name: getattr(self, name) for name, *_ in SendMessageRequestHeaderV2._wire_fields}
        )


@custom_header
class SendMessageRequestHeaderV2(CommandCustomHeader):
    """
    ``SendMessageRequestHeaderV2`` (codes 310, 320, 325): the V1 fields under the keys
    ``a`` .. ``n``; ``a`` .. ``h`` are required (Java ``@CFNotNull``).
    """

    producer_group: str = wire("a", required=True)
    topic: str = wire("b", required=True)
    default_topic: str = wire("c", required=True)
    default_topic_queue_nums: int = wire("d", required=True)
    queue_id: int = wire("e", required=True)
    sys_flag: int = wire("f", required=True)
    born_timestamp: int = wire("g", required=True)
    flag: int = wire("h", required=True)
    properties: str | None = wire("i")
    reconsume_times: int | None = wire("j")
    unit_mode: bool | None = wire("k")
    max_reconsume_times: int | None = wire("l")
    batch: bool | None = wire("m")
    broker_name: str | None = wire("n")

    def to_v1(self) -> SendMessageRequestHeader:
        """The long-named form (Java ``createSendMessageRequestHeaderV1``)."""
        return SendMessageRequestHeader(
            **{name: getattr(self, name) for name, *_ in SendMessageRequestHeaderV2._wire_fields}
        )


@custom_header
class SendMessageResponseHeader(CommandCustomHeader):
    """``SendMessageResponseHeader``: ``msgId`` is the offsetMsgId (comma-joined for a batch)."""

    msg_id: str = wire("msgId", required=True)
    queue_id: int = wire("queueId", required=True)
    queue_offset: int = wire("queueOffset", required=True)
    transaction_id: str | None = wire("transactionId")
    batch_uniq_id: str | None = wire("batchUniqId")
