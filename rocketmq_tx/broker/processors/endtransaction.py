# -*- test-case-name: rocketmq_tx.broker.test.test_transaction -*-
"""
``EndTransactionProcessor`` (Java 4.9.8): END_TRANSACTION (37), a producer's commit or
rollback of a half message (after its local transaction, or answering the broker's
CHECK_TRANSACTION_STATE), and RESUME_CHECK_HALF_MESSAGE (323, Java's admin processor): a
half message checked too often put back in the half queue with its count reset.

Commit writes the real message (:func:`~rocketmq_tx.broker.transaction.util.final_message`)
and then the op message; rollback only the op message. An unknown state
(TRANSACTION_NOT_TYPE) is not answered and leaves the message to the check, as in Java.
"""

from __future__ import annotations

from typing import Any

from twisted.logger import Logger

from rocketmq_tx.broker.controller import BrokerController
from rocketmq_tx.broker.timer import timer_put_result_response
from rocketmq_tx.broker.transaction.util import final_message, resume_half_message
from rocketmq_tx.common.errors import MessageFormatError
from rocketmq_tx.common.message import MessageConst, MessageExt
from rocketmq_tx.common.msgid import decode_offset_msg_id
from rocketmq_tx.common.sysflag import MessageSysFlag
from rocketmq_tx.net.dispatch import HandlerProcessor, IRemotingContext
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.remoting.errors import RemotingCommandError
from rocketmq_tx.remoting.headers.transaction import EndTransactionRequestHeader
from rocketmq_tx.store import PutMessageResult
from rocketmq_tx.store.config import BrokerRole
from rocketmq_tx.store.status import PutMessageStatus

__all__ = ["EndTransactionProcessor", "FIND_FAILED"]

log = Logger()

COMMIT = MessageSysFlag.TRANSACTION_COMMIT_TYPE
ROLLBACK = MessageSysFlag.TRANSACTION_ROLLBACK_TYPE
NOT_TYPE = MessageSysFlag.TRANSACTION_NOT_TYPE
FIND_FAILED = "Find prepared transaction message failed"
RESUME_FAILED = "Put message back to RMQ_SYS_TRANS_HALF_TOPIC failed."
RESUME_ERROR = "Exception was thrown when putting message back to RMQ_SYS_TRANS_HALF_TOPIC."


class EndTransactionProcessor(HandlerProcessor):
    def __init__(self, controller: BrokerController) -> None:
        self.controller = controller
        self.service = controller.transactional_message_service
        self.handlers = {
            RequestCode.END_TRANSACTION: self.end_transaction,
            RequestCode.RESUME_CHECK_HALF_MESSAGE: self.resume_check_half_message,
        }

    # ------------------------------------------------------------------ END_TRANSACTION

    def end_transaction(self, ctx: IRemotingContext, request: RemotingCommand) -> Any:
        header = EndTransactionRequestHeader.from_ext_fields(request.ext_fields)
        if header.commit_or_rollback not in (NOT_TYPE, COMMIT, ROLLBACK):
            # Java's checkFields
            raise RemotingCommandError("commitOrRollback field wrong")
        if self.controller.store_config.broker_role is BrokerRole.SLAVE:
            log.warn("Message store is slave mode, so end transaction is forbidden.")
            self.service.recent_halves.clear()  # a master again may have had its log cut
            return request.make_response(ResponseCode.SLAVE_NOT_AVAILABLE)
        state = header.commit_or_rollback
        peer = getattr(ctx, "peer", "?")
        if header.from_transaction_check:
            if state == NOT_TYPE:
                log.warn("Check producer[{peer}] transaction state, but it's pending status. RequestHeader: {h} "
                         "Remark: {r}", peer=peer, h=header, r=request.remark)
                return None
            log.warn("Check producer[{peer}] transaction state, the producer {what} the message. RequestHeader: {h} "
                     "Remark: {r}", peer=peer, what="commit" if state == COMMIT else "rollback", h=header,
                     r=request.remark)
        elif state == NOT_TYPE:
            log.warn("The producer[{peer}] end transaction in sending message, and it's pending status. "
                     "RequestHeader: {h} Remark: {r}", peer=peer, h=header, r=request.remark)
            return None
        elif state == ROLLBACK:
            log.warn("The producer[{peer}] end transaction in sending message, rollback the message. "
                     "RequestHeader: {h} Remark: {r}", peer=peer, h=header, r=request.remark)
        half = self.service.get_half_message_by_offset(header.commit_log_offset)
        if half is None:
            return request.make_response(ResponseCode.SYSTEM_ERROR, FIND_FAILED)
        wrong = self._check_prepare_message(half, header)
        if wrong is not None:
            return request.make_response(ResponseCode.SYSTEM_ERROR, wrong)
        if state == ROLLBACK:
            self.service.delete_prepare_message(half)
            return request.make_response(ResponseCode.SUCCESS)
        try:
            inner = final_message(half, COMMIT, header.commit_log_offset)
        except (ValueError, KeyError) as e:
            return request.make_response(ResponseCode.SYSTEM_ERROR, f"{type(e).__name__}: {e}")
        result = self.controller.put_message(inner, stats=False)
        if hasattr(result, "addCallback"):
            return result.addCallback(self._committed, request, half)
        return self._committed(result, request, half)

    def _committed(self, result: PutMessageResult | None, request: RemotingCommand, half: MessageExt
                   ) -> RemotingCommand:
        code, remark = self._final_response(result)
        if code == ResponseCode.SUCCESS:
            self.service.delete_prepare_message(half)
        return request.make_response(code, remark)

    @staticmethod
    def _check_prepare_message(half: MessageExt, header: EndTransactionRequestHeader) -> str | None:
        """Java ``checkPrepareMessage``: the remark of a mismatch, or ``None``."""
        if half.properties.get(MessageConst.PROPERTY_PRODUCER_GROUP) != header.producer_group:
            return "The producer group wrong"
        if half.queue_offset != header.tran_state_table_offset:
            return "The transaction state table offset wrong"
        if half.commit_log_offset != header.commit_log_offset:
            return "The commit log offset wrong"
        return None

    def _final_response(self, result: PutMessageResult | None) -> tuple[int, str | None]:
        """Java ``sendFinalMessage``'s codes and remarks (not the send processor's)."""
        if result is None:
            return ResponseCode.SYSTEM_ERROR, "store putMessage return null"
        status = result.status
        if status in (PutMessageStatus.PUT_OK, PutMessageStatus.FLUSH_DISK_TIMEOUT,
                      PutMessageStatus.FLUSH_SLAVE_TIMEOUT, PutMessageStatus.SLAVE_NOT_AVAILABLE):
            return ResponseCode.SUCCESS, None
        if status is PutMessageStatus.CREATE_MAPEDFILE_FAILED:
            return ResponseCode.SYSTEM_ERROR, "Create mapped file failed."
        if status in (PutMessageStatus.MESSAGE_ILLEGAL, PutMessageStatus.PROPERTIES_SIZE_EXCEEDED):
            return ResponseCode.MESSAGE_ILLEGAL, (
                "The message is illegal, maybe msg body or properties length not matched. msg body length limit "
                f"{self.controller.store_config.max_message_size}B, msg properties length limit 32KB.")
        if status is PutMessageStatus.SERVICE_NOT_AVAILABLE:
            return ResponseCode.SERVICE_NOT_AVAILABLE, "Service not available now."
        if status is PutMessageStatus.OS_PAGECACHE_BUSY:
            return ResponseCode.SYSTEM_ERROR, "OS page cache busy, please try another machine"
        if status is PutMessageStatus.UNKNOWN_ERROR:
            return ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR"
        timer = timer_put_result_response(status, self.controller.store_config)  # a committed timer message
        if timer is not None:
            return timer
        return ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR DEFAULT"

    # ------------------------------------------------------------------ RESUME_CHECK_HALF_MESSAGE

    def resume_check_half_message(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        """
        Java 4.9.8 ``AdminBrokerProcessor.resumeCheckHalfMessage``: the message named by the
        ``msgId`` header (an offsetMsgId) back in the half queue, TRANSACTION_CHECK_TIMES=0.
        Unlike Java the body is not decompressed on the way (Java's would be stored
        decompressed under a compressed sysFlag).
        """
        msg_id = request.ext_fields.get("msgId")
        try:
            if msg_id is None:
                raise RemotingCommandError("the custom field <msgId> is null")
            _, _, offset = decode_offset_msg_id(msg_id)
            msg = self.controller.store.look_message_by_offset(offset)
            if msg is None:
                raise MessageFormatError(f"no message at {offset}")
            result = self.controller.transactional_message_bridge.put(resume_half_message(msg))
        except Exception as e:
            log.error("Exception was thrown when putting message back to RMQ_SYS_TRANS_HALF_TOPIC: {e}", e=e)
            return request.make_response(ResponseCode.SYSTEM_ERROR, RESUME_ERROR)
        if result is not None and result.status is PutMessageStatus.PUT_OK:
            log.info("Put message back to RMQ_SYS_TRANS_HALF_TOPIC. real topic={topic}",
                     topic=msg.properties.get(MessageConst.PROPERTY_REAL_TOPIC))
            return request.make_response(ResponseCode.SUCCESS)
        log.error("Put message back to RMQ_SYS_TRANS_HALF_TOPIC failed")
        return request.make_response(ResponseCode.SYSTEM_ERROR, RESUME_FAILED)
