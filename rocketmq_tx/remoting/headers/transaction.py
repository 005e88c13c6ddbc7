# -*- test-case-name: rocketmq_tx.broker.test.test_transaction -*-
"""Headers of END_TRANSACTION (37) and CHECK_TRANSACTION_STATE (39)."""

from __future__ import annotations

from rocketmq_tx.remoting.header import CommandCustomHeader, custom_header, wire

__all__ = ["EndTransactionRequestHeader", "CheckTransactionStateRequestHeader"]


@custom_header
class EndTransactionRequestHeader(CommandCustomHeader):
    """
    Java ``EndTransactionRequestHeader``: *commit_or_rollback* is a ``MessageSysFlag``
    transaction type (0 not type / unknown, 8 commit, 12 rollback).
    """

    producer_group: str = wire("producerGroup", required=True)
    tran_state_table_offset: int = wire("tranStateTableOffset", required=True)
    commit_log_offset: int = wire("commitLogOffset", required=True)
    commit_or_rollback: int = wire("commitOrRollback", required=True)
    from_transaction_check: bool | None = wire("fromTransactionCheck")
    msg_id: str | None = wire("msgId")
    transaction_id: str | None = wire("transactionId")
    #: 4.9.5+ ``RpcRequestHeader``'s broker name, as in rocketmq_tx.remoting.headers.client
    broker_name: str | None = wire("bname")


@custom_header
class CheckTransactionStateRequestHeader(CommandCustomHeader):
    """Java ``CheckTransactionStateRequestHeader``, what the broker asks a producer."""

    tran_state_table_offset: int = wire("tranStateTableOffset", required=True)
    commit_log_offset: int = wire("commitLogOffset", required=True)
    msg_id: str | None = wire("msgId")
    transaction_id: str | None = wire("transactionId")
    offset_msg_id: str | None = wire("offsetMsgId")
    broker_name: str | None = wire("bname")
