# -*- test-case-name: rocketmq_tx.remoting.test.test_header -*-
"""Headers of PULL_MESSAGE (11) and its response."""

from __future__ import annotations

from enum import IntFlag

from rocketmq_tx.remoting.header import CommandCustomHeader, custom_header, wire

__all__ = ["PullSysFlag", "PullMessageRequestHeader", "PullMessageResponseHeader"]


class PullSysFlag(IntFlag):
    """``PullSysFlag`` bits of ``PullMessageRequestHeader.sysFlag``."""

    COMMIT_OFFSET = 0x1
    SUSPEND = 0x2
    SUBSCRIPTION = 0x4
    CLASS_FILTER = 0x8
    LITE_PULL_MESSAGE = 0x10


@custom_header
class PullMessageRequestHeader(CommandCustomHeader):
    """``PullMessageRequestHeader``."""

    consumer_group: str = wire("consumerGroup", required=True)
    topic: str = wire("topic", required=True)
    queue_id: int = wire("queueId", required=True)
    queue_offset: int = wire("queueOffset", required=True)
    max_msg_nums: int = wire("maxMsgNums", required=True)
    sys_flag: int = wire("sysFlag", required=True)
    commit_offset: int = wire("commitOffset", required=True)
    suspend_timeout_millis: int = wire("suspendTimeoutMillis", required=True)
    subscription: str | None = wire("subscription")
    sub_version: int = wire("subVersion", required=True)
    expression_type: str | None = wire("expressionType")
    broker_name: str | None = wire("bname")


@custom_header
class PullMessageResponseHeader(CommandCustomHeader):
    """``PullMessageResponseHeader``."""

    suggest_which_broker_id: int = wire("suggestWhichBrokerId", required=True)
    next_begin_offset: int = wire("nextBeginOffset", required=True)
    min_offset: int = wire("minOffset", required=True)
    max_offset: int = wire("maxOffset", required=True)
