# -*- test-case-name: rocketmq_tx.broker.test.test_transaction -*-
"""
The transaction check on the reactor: :class:`TransactionalMessageCheckService` runs a pass
of :meth:`TransactionalMessageService.check` every ``transactionCheckInterval`` (Java's
``TransactionalMessageCheckService``), a few milliseconds of it per reactor turn, and
:class:`TransactionCheckListener` does what Java's ``DefaultTransactionalMessageCheckListener``
does with a message: CHECK_TRANSACTION_STATE (39) to a producer of its group, or, checked
``transactionCheckMax`` times, keep it in TRANS_CHECK_MAX_TIME_TOPIC.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

from twisted.internet.defer import Deferred, succeed
from twisted.logger import Logger

from rocketmq_tx.broker.transaction.service import TransactionalMessageService
from rocketmq_tx.broker.transaction.util import TRANS_CHECK_MAX_TIME_TOPIC, check_max_message
from rocketmq_tx.common.message import MessageConst, MessageExt
from rocketmq_tx.common.route import PermName
from rocketmq_tx.remoting.headers.transaction import CheckTransactionStateRequestHeader

if TYPE_CHECKING:
    from rocketmq_tx.broker.broker2client import Broker2Client
    from rocketmq_tx.broker.controller import BrokerController

__all__ = ["TransactionalMessageCheckService", "TransactionCheckListener", "SLICE_SECONDS"]

log = Logger()

#: Most wall time one reactor turn spends on a check pass.
SLICE_SECONDS = 0.004
#: ``AbstractTransactionalMessageCheckListener.TCMT_QUEUE_NUMS``
TCMT_QUEUE_NUMS = 1


class TransactionCheckListener:
    """
    :param controller: the broker (producer table, topics, puts).
    :param broker2client: sends CHECK_TRANSACTION_STATE.
    """

    def __init__(self, controller: BrokerController, broker2client: Broker2Client) -> None:
        self.controller = controller
        self.broker2client = broker2client
        self.random = random.Random()

    def resolve_half_msg(self, msg: MessageExt) -> None:
        """Java ``sendCheckMessage`` (Java hands it to a pool; it is one oneway write here)."""
        try:
            self.send_check_message(msg)
        except Exception:
            log.failure("Send check message error!")

    def send_check_message(self, msg: MessageExt) -> bool:
        props = msg.properties
        msg_id = props.get(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
        header = CheckTransactionStateRequestHeader(
            tran_state_table_offset=msg.queue_offset, commit_log_offset=msg.commit_log_offset, msg_id=msg_id,
            transaction_id=msg_id, offset_msg_id=msg.offset_msg_id)
        msg.topic = props.get(MessageConst.PROPERTY_REAL_TOPIC) or msg.topic
        msg.queue_id = int(props.get(MessageConst.PROPERTY_REAL_QUEUE_ID, "0"))
        msg.store_size = 0
        group = props.get(MessageConst.PROPERTY_PRODUCER_GROUP)
        channel = self.controller.producer_manager.get_available_channel(group)
        if channel is None:
            log.warn("Check transaction failed, channel is null. groupId={group}", group=group)
            return False
        return self.broker2client.check_producer_transaction_state(group or "", channel, header, msg)

    def resolve_discard_msg(self, msg: MessageExt) -> None:
        """4.9.8: keep the message in TRANS_CHECK_MAX_TIME_TOPIC (logged)."""
        log.error("MsgExt {id} (real topic {topic}) has been checked too many times, so discard it by moving it to "
                  "system topic TRANS_CHECK_MAXTIME_TOPIC", id=msg.offset_msg_id,
                  topic=msg.properties.get(MessageConst.PROPERTY_REAL_TOPIC))
        try:
            self.controller.topic_config_manager.create_topic_in_send_message_back_method(
                TRANS_CHECK_MAX_TIME_TOPIC, TCMT_QUEUE_NUMS, PermName.PERM_READ | PermName.PERM_WRITE)
            inner = check_max_message(msg, self.random.randrange(99999999) % TCMT_QUEUE_NUMS)
            result = self.controller.put_message(inner, stats=False)
            status = getattr(result, "status", None)
            if status is None or status.name != "PUT_OK":
                log.error("Put checked-too-many-time half message to TRANS_CHECK_MAXTIME_TOPIC failed, msgId={id}",
                          id=msg.offset_msg_id)
        except Exception:
            log.failure("Put checked-too-many-time message to TRANS_CHECK_MAXTIME_TOPIC error")


class TransactionalMessageCheckService:
    """
    :param service: the check logic.
    :param listener: what a due or discarded message is handed to.
    :param settings: ``transactionTimeOut`` and ``transactionCheckMax`` are read at each pass.
    :param clock: ``callLater`` (the reactor; a ``task.Clock`` in tests).
    :param wall: the timer of a slice (``time.monotonic``).
    """

    def __init__(self, service: TransactionalMessageService, listener: Any, settings: Any, clock: Any,
                 wall: Callable[[], float] = time.monotonic, slice_seconds: float = SLICE_SECONDS) -> None:
        self.service = service
        self.listener = listener
        self.settings = settings
        self.clock = clock
        self.wall = wall
        self.slice_seconds = slice_seconds
        self._running: Deferred | None = None
        self._pass: Generator[None, None, None] | None = None
        self._call: Any = None
        self.stopped = False
        self.passes = 0

    def tick(self) -> Deferred:
        """The timer's call: start a pass unless one is still running; fires when it ends."""
        if self._running is not None:
            return self._running
        if self.stopped:
            return succeed(None)
        self._running = Deferred()
        done = self._running
        self._pass = self.service.check(int(self.settings["transactionTimeOut"]),
                                        int(self.settings["transactionCheckMax"]), self.listener)
        self._step()
        return done

    def _step(self) -> None:
        self._call = None
        it = self._pass
        if it is None:
            return
        deadline = self.wall() + self.slice_seconds
        try:
            while True:
                next(it)
                if self.stopped:
                    it.close()
                    break
                if self.wall() >= deadline:
                    self._call = self.clock.callLater(0, self._step)
                    return
        except StopIteration:
            pass
        except Exception:
            log.failure("Check error")
        self._finish()

    def _finish(self) -> None:
        self._pass = None
        self.passes += 1
        running, self._running = self._running, None
        if running is not None:
            running.callback(None)

    def run_now(self) -> None:
        """A whole pass at once (tests, and a clean shutdown's last look is not needed)."""
        it = self.service.check(int(self.settings["transactionTimeOut"]), int(self.settings["transactionCheckMax"]),
                                self.listener)
        for _ in it:
            pass

    def stop(self) -> None:
        self.stopped = True
        if self._call is not None and self._call.active():
            self._call.cancel()
            self._call = None
        if self._pass is not None:
            self._pass.close()
            self._finish()
