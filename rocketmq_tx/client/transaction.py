# -*- test-case-name: rocketmq_tx.client.test.test_transaction -*-
"""
:class:`TransactionProducer`: Java's ``TransactionMQProducer`` on Twisted. The send, the
local transaction and END_TRANSACTION are the plan of
:class:`rocketmq_tx.remoting.transactionapi.TransactionProducerBase` (the blocking
producer runs it too); the broker's CHECK_TRANSACTION_STATE reaches
:meth:`TransactionProducer.check_transaction_state` through the instance's
:class:`~rocketmq_tx.client.clientprocessor.ClientRemotingProcessor`.
"""

from __future__ import annotations

from typing import Any

from twisted.internet.defer import Deferred, maybeDeferred, succeed
from twisted.logger import Logger
from twisted.python.failure import Failure

from rocketmq_tx.client.clientprocessor import ClientRemotingProcessor
from rocketmq_tx.client.producer import Producer
from rocketmq_tx.common.message import MessageExt
from rocketmq_tx.net.dispatch import IRemotingContext
from rocketmq_tx.remoting.headers.transaction import CheckTransactionStateRequestHeader
from rocketmq_tx.remoting.transactionapi import (
    CheckListener,
    LocalTransaction,
    LocalTransactionState,
    TransactionProducerBase,
    TransactionSendResult,
)

__all__ = ["TransactionProducer", "LocalTransactionState", "TransactionSendResult"]

log = Logger()


class TransactionProducer(Producer, TransactionProducerBase):
    """
    A :class:`~rocketmq_tx.client.producer.Producer` with
    :meth:`~rocketmq_tx.remoting.transactionapi.TransactionProducerBase.send_message_in_transaction`
    (a Deferred of :class:`~rocketmq_tx.remoting.transactionapi.TransactionSendResult`).

    :param local_transaction: ``f(msg, arg) -> LocalTransactionState`` run after the half
        message is stored (Java ``executeLocalTransaction``); it runs in the reactor
        thread and returns the state itself (``None`` or an exception: UNKNOW).
    :param check_listener: ``f(msg) -> LocalTransactionState`` or a Deferred of it, asked
        when a broker checks a half message of this group (Java ``checkLocalTransaction``).
    :param kwargs: those of :class:`~rocketmq_tx.client.producer.Producer`; with
        ``enable_msg_trace`` it also traces each END_TRANSACTION (an EndTransaction record).
    """

    def __init__(self, group: str, namesrv_addr: str = "", reactor: Any = None, *,
                 local_transaction: LocalTransaction | None = None, check_listener: CheckListener | None = None,
                 **kwargs: Any) -> None:
        Producer.__init__(self, group, namesrv_addr, reactor, **kwargs)
        self.local_transaction = local_transaction
        self.check_listener = check_listener
        if self.trace_dispatcher is not None:
            self.end_trace = self.trace_dispatcher.on_end_transaction

    def start(self) -> None:
        """Start as a producer, and take the broker's checks of this group."""
        ClientRemotingProcessor.of(self.instance).add_producer(self.group, self)
        Producer.start(self)

    def stop(self) -> Deferred:
        ClientRemotingProcessor.of(self.instance).remove_producer(self.group, self)
        return Producer.stop(self)

    def check_transaction_state(self, ctx: IRemotingContext, header: CheckTransactionStateRequestHeader,
                                msg: MessageExt, bname: str | None = None) -> Deferred[None]:
        """
        Ask :attr:`check_listener` about *msg* and send its answer back oneway on the
        connection the check came on (signed when the instance signs).
        """
        self.prepare_check(msg)
        listener = self.check_listener
        if listener is None:
            log.warn("checkTransactionState, no check listener in group {group}", group=self.group)
            return succeed(None)

        def answer(state: Any) -> None:
            error = state.value if isinstance(state, Failure) else None
            if error is not None:
                log.failure("check listener failed for {msg_id}", state, msg_id=msg.msg_id)
                state = LocalTransactionState.UNKNOW
            request = self.check_answer(header, msg, state, error, broker_name=bname, broker_addr=ctx.peer)
            hook = self.instance.remoting.rpc_hook
            if hook is not None:
                hook(ctx.peer, request)
            ctx.send_oneway(request)

        d: Deferred[None] = maybeDeferred(listener, msg).addBoth(answer)
        d.addErrback(lambda f: log.failure("answering a transaction check failed", f))
        return d
