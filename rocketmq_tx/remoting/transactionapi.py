# -*- test-case-name: rocketmq_tx.remoting.test.test_transactionapi -*-
"""
Transactional sends without I/O (Java ``TransactionMQProducer`` and
``DefaultMQProducerImpl.sendMessageInTransaction`` / ``endTransaction`` /
``checkTransactionState``), as plans the Twisted
:class:`~rocketmq_tx.client.transaction.TransactionProducer` and the
:class:`~rocketmq_tx.blocking.transaction.BlockingTransactionProducer` both run.

1. The half message goes out as an ordinary send (retries included) with ``TRAN_MSG=true``
   and ``PGROUP`` set, so its sysFlag carries ``TRANSACTION_PREPARED_TYPE``; a delay
   level is dropped, as Java drops it.
2. On SEND_OK the local transaction runs (``local_transaction(msg, arg)``); a flush or
   slave status means ROLLBACK_MESSAGE without running it.
3. END_TRANSACTION (37) goes oneway to the master of the half message's broker with the
   state as ``commitOrRollback``; a failure to send it is only logged (the broker will
   check back), as in Java.

A broker that holds an unresolved half message sends CHECK_TRANSACTION_STATE (39); the
driver asks the producer's ``check_listener(msg)`` and answers with
:meth:`TransactionProducerBase.check_answer`: END_TRANSACTION with
``fromTransactionCheck=true``.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rocketmq_tx.common.message import Message, MessageConst, MessageExt
from rocketmq_tx.common.msgid import decode_offset_msg_id
from rocketmq_tx.common.sysflag import MessageSysFlag
from rocketmq_tx.remoting import api
from rocketmq_tx.remoting.api import MQClientError, SendResult, SendStatus
from rocketmq_tx.remoting.command import RemotingCommand
from rocketmq_tx.remoting.errors import RocketMQError
from rocketmq_tx.remoting.headers.transaction import CheckTransactionStateRequestHeader, EndTransactionRequestHeader
from rocketmq_tx.remoting.plans import Call, Plan, Warn
from rocketmq_tx.remoting.sendapi import ProducerBase, broker_addr

__all__ = ["LocalTransactionState", "TransactionSendResult", "TransactionProducerBase", "LocalTransaction",
           "CheckListener", "end_transaction_type"]


class LocalTransactionState(enum.Enum):
    """Java ``LocalTransactionState`` (``UNKNOW`` is Java's spelling)."""

    COMMIT_MESSAGE = "COMMIT_MESSAGE"
    ROLLBACK_MESSAGE = "ROLLBACK_MESSAGE"
    UNKNOW = "UNKNOW"


_END_TYPE = {
    LocalTransactionState.COMMIT_MESSAGE: MessageSysFlag.TRANSACTION_COMMIT_TYPE,
    LocalTransactionState.ROLLBACK_MESSAGE: MessageSysFlag.TRANSACTION_ROLLBACK_TYPE,
    LocalTransactionState.UNKNOW: MessageSysFlag.TRANSACTION_NOT_TYPE,
}

#: ``local_transaction(msg, arg) -> state`` (Java ``TransactionListener.executeLocalTransaction``);
#: ``None`` counts as UNKNOW.
LocalTransaction = Callable[[Message, Any], "LocalTransactionState | None"]
#: ``check_listener(msg) -> state`` (Java ``TransactionListener.checkLocalTransaction``); on
#: Twisted it may return a Deferred of the state.
CheckListener = Callable[[MessageExt], Any]


def end_transaction_type(state: LocalTransactionState | None) -> int:
    """The ``commitOrRollback`` value of *state* (``None``: not known)."""
    return _END_TYPE[state or LocalTransactionState.UNKNOW]


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


@dataclass(slots=True)
class TransactionSendResult(SendResult):
    """Java ``TransactionSendResult``: the half message's send result and the local state."""

    local_transaction_state: LocalTransactionState = LocalTransactionState.UNKNOW


class TransactionProducerBase(ProducerBase):
    """
    A :class:`~rocketmq_tx.remoting.sendapi.ProducerBase` that also sends in transactions.
    A driver class sets :attr:`local_transaction` and :attr:`check_listener` and answers
    CHECK_TRANSACTION_STATE with :meth:`check_answer`.

    :ivar local_transaction: the default local transaction of
        :meth:`send_message_in_transaction`.
    :ivar check_listener: answers the broker's checks of half messages of this group.
    """

    local_transaction: LocalTransaction | None = None
    check_listener: CheckListener | None = None
    #: Java's end-transaction hook (message trace): ``end_trace(msg, msg_id, broker_addr,
    #: state, from_check)`` before each END_TRANSACTION
    end_trace: Callable[[Message, str, str, LocalTransactionState, bool], object] | None = None

    def send_message_in_transaction(self, msg: Message, arg: Any = None, *,
                                    local_transaction: LocalTransaction | None = None) -> Any:
        """
        Send *msg* as a half message, run the local transaction (*local_transaction* or
        :attr:`local_transaction`) as ``local_transaction(msg, arg)`` and end the
        transaction with its state; a :class:`TransactionSendResult`.

        :raises MQClientError: no local transaction, or the half message could not be sent
            (the local transaction did not run).
        """
        return self._run(self.transaction_plan(msg, arg, local_transaction))

    def transaction_plan(self, msg: Message, arg: Any = None,
                         local_transaction: LocalTransaction | None = None) -> Plan[TransactionSendResult]:
        """:meth:`send_message_in_transaction` as a plan; the local transaction runs inside it."""
        execute = local_transaction or self.local_transaction
        if execute is None:
            raise MQClientError("TransactionListener is null")
        msg.properties.pop(MessageConst.PROPERTY_DELAY_TIME_LEVEL, None)
        msg.put_property(MessageConst.PROPERTY_TRANSACTION_PREPARED, "true")
        msg.put_property(MessageConst.PROPERTY_PRODUCER_GROUP, self.group)
        try:
            result = yield from self.send_plan(msg)
        except RocketMQError as e:
            raise MQClientError(f"send message Exception: {e}", getattr(e, "code", None)) from e
        state, error = LocalTransactionState.UNKNOW, None
        if result.send_status is SendStatus.SEND_OK:
            if result.transaction_id is not None:
                msg.put_property(MessageConst.PROPERTY_TRANSACTION_ID, result.transaction_id)
            msg.transaction_id = msg.unique_key or None
            try:
                state = execute(msg, arg) or LocalTransactionState.UNKNOW
            except Exception as e:  # the application's failure is the transaction's UNKNOW, as in Java
                error = e
                yield Warn(f"local transaction of {msg.unique_key} failed: {_describe(e)}")
        else:
            state = LocalTransactionState.ROLLBACK_MESSAGE
        try:
            yield from self.end_transaction_plan(result, state, error, msg)
        except RocketMQError as e:
            yield Warn(f"local transaction {state.value}, but ending the broker transaction failed: {e}")
        return TransactionSendResult(result.send_status, result.msg_id, result.message_queue, result.queue_offset,
                                     result.offset_msg_id, result.transaction_id, result.region_id,
                                     result.trace_on, state)

    def end_transaction_plan(self, result: SendResult, state: LocalTransactionState,
                             error: BaseException | None = None, msg: Message | None = None) -> Plan[None]:
        """
        END_TRANSACTION for the half message *result* describes, oneway to its broker's
        master (traced with *msg* when :attr:`end_trace` is set).
        """
        _, _, commit_log_offset = decode_offset_msg_id(result.offset_msg_id or result.msg_id)
        header = EndTransactionRequestHeader(
            producer_group=self.group, tran_state_table_offset=result.queue_offset,
            commit_log_offset=commit_log_offset, commit_or_rollback=end_transaction_type(state),
            msg_id=result.msg_id, transaction_id=result.transaction_id,
            broker_name=result.message_queue.broker_name)
        remark = f"executeLocalTransactionBranch exception: {_describe(error)}" if error is not None else None
        request = api.end_transaction_request(header, remark)
        addr = yield from broker_addr(self.routes, result.message_queue)
        if self.end_trace is not None and msg is not None:
            self.end_trace(msg, result.msg_id, addr, state, False)
        yield Call(addr, request, timeout=self.send_timeout, oneway=True)

    def check_answer(self, header: CheckTransactionStateRequestHeader, msg: MessageExt,
                     state: LocalTransactionState | None, error: BaseException | None = None, *,
                     broker_name: str | None = None, broker_addr: str | None = None) -> RemotingCommand:
        """
        The END_TRANSACTION that answers a broker's check of *msg* with *state* (the
        check listener's answer; *error* if it raised, which answers UNKNOW); *broker_name*
        is the check's ``bname``, sent back as Java sends it; *broker_addr*, where the
        check came from, for :attr:`end_trace`.
        """
        header_out = EndTransactionRequestHeader(
            producer_group=self.group, tran_state_table_offset=header.tran_state_table_offset,
            commit_log_offset=header.commit_log_offset,
            commit_or_rollback=end_transaction_type(None if error is not None else state),
            from_transaction_check=True, msg_id=msg.msg_id, transaction_id=header.transaction_id,
            broker_name=broker_name)
        remark = f"checkLocalTransactionState Exception: {_describe(error)}" if error is not None else None
        if self.end_trace is not None and broker_addr is not None:
            self.end_trace(msg, msg.msg_id, broker_addr, state if error is None and state is not None
                           else LocalTransactionState.UNKNOW, True)
        return api.end_transaction_request(header_out, remark)

    def prepare_check(self, msg: MessageExt) -> None:
        """What Java's client processor does to a checked message before the listener sees it."""
        if msg.unique_key:
            msg.transaction_id = msg.unique_key
