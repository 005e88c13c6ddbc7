# -*- test-case-name: rocketmq_tx.blocking.test.test_transaction -*-
"""
:class:`BlockingTransactionProducer`: Java's ``TransactionMQProducer`` in blocking form,
running the plan of :class:`rocketmq_tx.remoting.transactionapi.TransactionProducerBase`
(as the Twisted :class:`~rocketmq_tx.client.transaction.TransactionProducer` does).

A blocking client reads its sockets only while it waits for an answer, so a broker's
CHECK_TRANSACTION_STATE is served during the producer's next request on that connection
or by :meth:`BlockingTransactionProducer.serve_checks`, which waits for checks. The
broker sends checks to producers it knows from heartbeats: the producer sends one to a
broker with its first transactional send there and again when 30 s have passed, as Java's
client instance does every 30 s.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from rocketmq_tx.acl import SessionCredentials
from rocketmq_tx.blocking.client import BlockingMQClient
from rocketmq_tx.blocking.connection import serving
from rocketmq_tx.blocking.trace import BlockingTraceDispatcher
from rocketmq_tx.common.errors import MessageFormatError
from rocketmq_tx.common.message import Message, MessageConst
from rocketmq_tx.remoting import api
from rocketmq_tx.remoting.codes import RequestCode
from rocketmq_tx.remoting.command import RemotingCommand
from rocketmq_tx.remoting.errors import RemotingCommandError, RocketMQError
from rocketmq_tx.remoting.plans import Plan
from rocketmq_tx.remoting.transactionapi import (
    CheckListener,
    LocalTransaction,
    LocalTransactionState,
    TransactionProducerBase,
    TransactionSendResult,
)
from rocketmq_tx.tlsconfig import TlsSettings

__all__ = ["BlockingTransactionProducer", "LocalTransactionState", "TransactionSendResult"]

log = logging.getLogger(__name__)

#: Seconds between heartbeats to a broker (Java's ``heartbeatBrokerInterval``).
HEARTBEAT_BROKER_INTERVAL = 30.0


class BlockingTransactionProducer(TransactionProducerBase):
    """
    The methods of :class:`~rocketmq_tx.blocking.client.BlockingProducer` and
    :meth:`~rocketmq_tx.remoting.transactionapi.TransactionProducerBase.send_message_in_transaction`,
    which returns a :class:`~rocketmq_tx.remoting.transactionapi.TransactionSendResult`.

    :param local_transaction: ``f(msg, arg) -> LocalTransactionState`` (Java
        ``executeLocalTransaction``; ``None`` or an exception: UNKNOW).
    :param check_listener: ``f(msg) -> LocalTransactionState`` for the broker's checks of
        this group's half messages (Java ``checkLocalTransaction``).
    :param heartbeat_interval: seconds between heartbeats to a broker, sent when the
        producer is used.
    :param enable_msg_trace: Java's ``enableMsgTrace``: a Pub record per answered send and an
        EndTransaction record per END_TRANSACTION (after the local transaction and after each
        check answered), sent to *trace_topic* after a later send or check, or at :meth:`close`.
    """

    def __init__(self, group: str, namesrv_addr: str, *, local_transaction: LocalTransaction | None = None,
                 check_listener: CheckListener | None = None, send_timeout: float = 3.0,
                 client_id: str | None = None, tls: TlsSettings | None = None, access_key: str | None = None,
                 secret_key: str | None = None, security_token: str | None = None,
                 credentials: SessionCredentials | None = None,
                 heartbeat_interval: float = HEARTBEAT_BROKER_INTERVAL, enable_msg_trace: bool = False,
                 trace_topic: str | None = None, **settings: Any) -> None:
        self.client = BlockingMQClient.create(namesrv_addr, timeout=send_timeout, client_id=client_id, tls=tls,
                                              access_key=access_key, secret_key=secret_key,
                                              security_token=security_token, credentials=credentials)
        super().__init__(group, self.client.route_table, send_timeout=send_timeout, **settings)
        self.local_transaction = local_transaction
        self.check_listener = check_listener
        self.heartbeat_interval = heartbeat_interval
        #: broker address -> when it last had our heartbeat (monotonic seconds)
        self._heartbeats: dict[str, float] = {}
        # Before any connection exists: connections copy the handler table.
        self.client.remoting.handlers[RequestCode.CHECK_TRANSACTION_STATE] = self._check
        self.trace_dispatcher = BlockingTraceDispatcher(self.client, group, trace_topic) \
            if enable_msg_trace else None
        if self.trace_dispatcher is not None:
            self.send_trace = self.trace_dispatcher.on_send
            self.end_trace = self.trace_dispatcher.on_end_transaction

    def _run(self, plan: Plan[Any]) -> Any:
        try:
            return self.client.run(plan)
        finally:
            if self.trace_dispatcher is not None:
                self.trace_dispatcher.send_due()

    def __enter__(self) -> BlockingTransactionProducer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def flush_traces(self) -> None:
        """Send the trace records waiting now (``close()`` does it too)."""
        if self.trace_dispatcher is not None:
            self.trace_dispatcher.flush()

    def close(self) -> None:
        """Send the trace records waiting (if tracing), then close the connections."""
        try:
            self.flush_traces()
        finally:
            self.client.close()

    def send_message_in_transaction(self, msg: Message, arg: Any = None, *,
                                    local_transaction: LocalTransaction | None = None) -> TransactionSendResult:
        result: TransactionSendResult = super().send_message_in_transaction(
            msg, arg, local_transaction=local_transaction)
        self.heartbeat(due_only=True)
        return result

    def heartbeat(self, *, due_only: bool = False) -> None:
        """
        HEART_BEAT with this producer group to every master of the routes seen so far
        (*due_only*: only to those without one for ``heartbeat_interval`` seconds).
        A failed heartbeat is logged.
        """
        data = api.HeartbeatData(self.client.client_id, [self.group])
        now = time.monotonic()
        for addr in self.routes.master_addresses():
            if due_only and now - self._heartbeats.get(addr, -1e18) < self.heartbeat_interval:
                continue
            try:
                api.check_response(self.client.remoting.invoke(addr, api.heartbeat_request(data),
                                                               self.client.timeout))
            except RocketMQError as e:
                log.warning("heartbeat to %s failed: %s", addr, e)
                continue
            self._heartbeats[addr] = now

    def serve_checks(self, seconds: float) -> int:
        """
        Wait *seconds* for the brokers' CHECK_TRANSACTION_STATE and answer them (heartbeats
        that are due are sent first); how many server requests were served.
        """
        self.heartbeat(due_only=True)
        served = self.client.remoting.poll(seconds)
        if self.trace_dispatcher is not None:
            self.trace_dispatcher.send_due()
        return served

    def _check(self, request: RemotingCommand) -> None:
        # Java's ClientRemotingProcessor.checkTransactionState, then the producer's answer.
        try:
            header, msg = api.parse_check_transaction_state(request)
        except (RemotingCommandError, MessageFormatError) as e:  # logged and dropped, as in Java
            log.warning("checkTransactionState: undecodable request: %s", e)
            return None
        group = msg.get_property(MessageConst.PROPERTY_PRODUCER_GROUP)
        if group != self.group:
            log.warning("checkTransactionState, pick producer by group[%s] failed", group)
            return None
        self.prepare_check(msg)
        listener = self.check_listener
        if listener is None:
            log.warning("checkTransactionState, no check listener in group %s", self.group)
            return None
        state, error = None, None
        try:
            state = listener(msg)
        except Exception as e:  # the application's failure answers UNKNOW with a remark
            log.exception("check listener failed for %s", msg.msg_id)
            error = e
        conn = serving.get()
        answer = self.check_answer(header, msg, state, error, broker_name=request.ext_fields.get("bname"),
                                   broker_addr=conn.addr if conn is not None else None)
        if conn is not None:
            try:
                conn.invoke_oneway(answer)
            except RocketMQError as e:
                log.warning("endTransactionOneway to %s failed: %s", conn.addr, e)
        return None
