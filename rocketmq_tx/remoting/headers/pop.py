# -*- test-case-name: rocketmq_tx.remoting.test.test_pop -*-
"""
Headers of the 5.x POP family: POP_MESSAGE (200050), ACK_MESSAGE (200051), PEEK_MESSAGE
(200052), CHANGE_MESSAGE_INVISIBLETIME (200053), NOTIFICATION (200054), POLLING_INFO
(200055). BATCH_ACK_MESSAGE (200151) has no custom header (its body is
:class:`~rocketmq_tx.remoting.popbodies.BatchAckMessageRequestBody`).

Request headers carry the ``RpcRequestHeader`` broker name ``bname`` as ``broker_name``.
Java's primitive (``int``/``long``) fields are required here as its ``@CFNotNull`` makes them.
"""

from __future__ import annotations

from rocketmq_tx.remoting.header import CommandCustomHeader, custom_header, wire

__all__ = ["PopMessageRequestHeader", "PopMessageResponseHeader", "AckMessageRequestHeader",
           "ChangeInvisibleTimeRequestHeader", "ChangeInvisibleTimeResponseHeader", "PeekMessageRequestHeader",
           "NotificationRequestHeader", "NotificationResponseHeader", "PollingInfoRequestHeader",
           "PollingInfoResponseHeader"]


@custom_header
class PopMessageRequestHeader(CommandCustomHeader):
    """
    ``PopMessageRequestHeader``. *queue_id* -1 pops from every readable queue;
    *invisible_time*, *poll_time* and *born_time* are milliseconds.
    """

    consumer_group: str = wire("consumerGroup", required=True)
    topic: str = wire("topic", required=True)
    queue_id: int = wire("queueId", required=True)
    max_msg_nums: int = wire("maxMsgNums", required=True)
    invisible_time: int = wire("invisibleTime", required=True)
    poll_time: int = wire("pollTime", required=True)
    born_time: int = wire("bornTime", required=True)
    init_mode: int = wire("initMode", required=True)
    exp_type: str | None = wire("expType")
    exp: str | None = wire("exp")
    order: bool | None = wire("order")
    attempt_id: str | None = wire("attemptId")
    broker_name: str | None = wire("bname")

    @property
    def is_order(self) -> bool:
        """``isOrder()``: FIFO pop."""
        return bool(self.order)


@custom_header
class PopMessageResponseHeader(CommandCustomHeader):
    """``PopMessageResponseHeader``; the three ``*Info`` strings are built by :mod:`..extrainfo`."""

    pop_time: int = wire("popTime", required=True)
    invisible_time: int = wire("invisibleTime", required=True)
    revive_qid: int = wire("reviveQid", required=True)
    rest_num: int = wire("restNum", required=True)
    start_offset_info: str | None = wire("startOffsetInfo")
    msg_offset_info: str | None = wire("msgOffsetInfo")
    order_count_info: str | None = wire("orderCountInfo")


@custom_header
class AckMessageRequestHeader(CommandCustomHeader):
    """``AckMessageRequestHeader``: *extra_info* is the message's ``POP_CK`` echoed back."""

    consumer_group: str = wire("consumerGroup", required=True)
    topic: str = wire("topic", required=True)
    queue_id: int = wire("queueId", required=True)
    extra_info: str = wire("extraInfo", required=True)
    offset: int = wire("offset", required=True)
    broker_name: str | None = wire("bname")


@custom_header
class ChangeInvisibleTimeRequestHeader(CommandCustomHeader):
    """``ChangeInvisibleTimeRequestHeader``; ``suspend`` is what a 5.5 client adds (lite consumers)."""

    consumer_group: str = wire("consumerGroup", required=True)
    topic: str = wire("topic", required=True)
    queue_id: int = wire("queueId", required=True)
    extra_info: str = wire("extraInfo", required=True)
    offset: int = wire("offset", required=True)
    invisible_time: int = wire("invisibleTime", required=True)
    suspend: bool | None = wire("suspend")
    broker_name: str | None = wire("bname")


@custom_header
class ChangeInvisibleTimeResponseHeader(CommandCustomHeader):
    """``ChangeInvisibleTimeResponseHeader``: the new checkpoint's pop time and revive queue."""

    pop_time: int = wire("popTime", required=True)
    invisible_time: int = wire("invisibleTime", required=True)
    revive_qid: int = wire("reviveQid", required=True)


@custom_header
class PeekMessageRequestHeader(CommandCustomHeader):
    """``PeekMessageRequestHeader``."""

    consumer_group: str = wire("consumerGroup", required=True)
    topic: str = wire("topic", required=True)
    queue_id: int = wire("queueId", required=True)
    max_msg_nums: int = wire("maxMsgNums", required=True)
    broker_name: str | None = wire("bname")


@custom_header
class NotificationRequestHeader(CommandCustomHeader):
    """``NotificationRequestHeader``."""

    consumer_group: str = wire("consumerGroup", required=True)
    topic: str = wire("topic", required=True)
    queue_id: int = wire("queueId", required=True)
    poll_time: int = wire("pollTime", required=True)
    born_time: int = wire("bornTime", required=True)
    order: bool | None = wire("order")
    attempt_id: str | None = wire("attemptId")
    broker_name: str | None = wire("bname")


@custom_header
class NotificationResponseHeader(CommandCustomHeader):
    """``NotificationResponseHeader``."""

    has_msg: bool = wire("hasMsg", required=True)
    polling_full: bool | None = wire("pollingFull")


@custom_header
class PollingInfoRequestHeader(CommandCustomHeader):
    """``PollingInfoRequestHeader``."""

    consumer_group: str = wire("consumerGroup", required=True)
    topic: str = wire("topic", required=True)
    queue_id: int = wire("queueId", required=True)
    broker_name: str | None = wire("bname")


@custom_header
class PollingInfoResponseHeader(CommandCustomHeader):
    """``PollingInfoResponseHeader``."""

    polling_num: int = wire("pollingNum", required=True)
