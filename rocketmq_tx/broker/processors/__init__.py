"""
The broker's request processors and its one processor table.

:func:`processor_table` is the single place that says which processors serve a port
(Java's ``BrokerController.registerProcessor``); each processor answers the codes of its
:attr:`~rocketmq_tx.net.dispatch.HandlerProcessor.handlers`, one method per code. The admin
requests are split by concern (:mod:`.admin` and its ``admin_*`` siblings); the store
maintenance processor is also the default and answers REQUEST_CODE_NOT_SUPPORTED for
every other code (see docs/compatibility.md). Transactions: :mod:`.endtransaction` (END_TRANSACTION,
RESUME_CHECK_HALF_MESSAGE) and the half-message path of :mod:`.send`. 5.x message request
modes and the broker-side allocation: :mod:`.assignment`. POP consumption (5.x):
:mod:`.pop`, :mod:`.ack`, :mod:`.changeinvisible`, :mod:`.peek`, :mod:`.pollinginfo`, :mod:`.notification` over
:mod:`rocketmq_tx.broker.pop`. Replication state (5.x's GET_BROKER_HA_STATUS): :mod:`.hastatus`. With ``aclEnable``
every request is checked first (:class:`~rocketmq_tx.broker.processors.acl.AclServerHook`,
docs/security.md).
"""

from __future__ import annotations

from rocketmq_tx.broker.controller import BrokerController
from rocketmq_tx.broker.processors.ack import AckMessageProcessor
from rocketmq_tx.broker.processors.acl import AclConfigProcessor, AclServerHook
from rocketmq_tx.broker.processors.admin import AdminBrokerProcessor
from rocketmq_tx.broker.processors.admin_config import BrokerConfigProcessor
from rocketmq_tx.broker.processors.admin_groups import GroupAdminProcessor
from rocketmq_tx.broker.processors.admin_offsets import OffsetAdminProcessor
from rocketmq_tx.broker.processors.admin_relay import ClientRelayProcessor
from rocketmq_tx.broker.processors.admin_topics import TopicAdminProcessor
from rocketmq_tx.broker.processors.assignment import QueryAssignmentProcessor
from rocketmq_tx.broker.processors.changeinvisible import ChangeInvisibleTimeProcessor
from rocketmq_tx.broker.processors.client import ClientManageProcessor
from rocketmq_tx.broker.processors.consumer import ConsumerManageProcessor
from rocketmq_tx.broker.processors.endtransaction import EndTransactionProcessor
from rocketmq_tx.broker.processors.hastatus import HAStatusProcessor
from rocketmq_tx.broker.processors.notification import NotificationProcessor
from rocketmq_tx.broker.processors.peek import PeekMessageProcessor
from rocketmq_tx.broker.processors.pollinginfo import PollingInfoProcessor
from rocketmq_tx.broker.processors.pop import PopMessageProcessor
from rocketmq_tx.broker.processors.pull import PullMessageProcessor
from rocketmq_tx.broker.processors.query import QueryMessageProcessor
from rocketmq_tx.broker.processors.reply import ReplyMessageProcessor
from rocketmq_tx.broker.processors.send import SendMessageProcessor
from rocketmq_tx.broker.processors.timer import TimerAdminProcessor
from rocketmq_tx.net.dispatch import HandlerProcessor, ProcessorTable

__all__ = ["processor_table"]


def processor_table(controller: BrokerController, fast: bool = False) -> ProcessorTable:
    """
    The processors of a broker port. *fast* is the VIP port (listenPort - 2), which serves
    everything but the pulls (PULL_MESSAGE, LITE_PULL_MESSAGE), POP_MESSAGE, PEEK_MESSAGE,
    POLLING_INFO and NOTIFICATION, as in Java.
    """
    table = ProcessorTable()
    if controller.acl is not None:
        table.before_request = AclServerHook(controller.acl)
    table.on_deferred = controller.track_request
    admin = AdminBrokerProcessor(controller)
    table.default = admin
    processors: list[HandlerProcessor] = [
        SendMessageProcessor(controller),
        ReplyMessageProcessor(controller),
        QueryMessageProcessor(controller),
        ClientManageProcessor(controller),
        ConsumerManageProcessor(controller),
        AclConfigProcessor(controller),
        admin,
        TopicAdminProcessor(controller),
        GroupAdminProcessor(controller),
        OffsetAdminProcessor(controller),
        BrokerConfigProcessor(controller),
        ClientRelayProcessor(controller),
        EndTransactionProcessor(controller),
        QueryAssignmentProcessor(controller),
        AckMessageProcessor(controller),
        ChangeInvisibleTimeProcessor(controller),
        TimerAdminProcessor(controller),
        HAStatusProcessor(controller),
    ]
    if not fast:
        processors.append(PullMessageProcessor(controller))
        processors.append(PopMessageProcessor(controller))
        processors.append(PeekMessageProcessor(controller))
        processors.append(PollingInfoProcessor(controller))
        processors.append(NotificationProcessor(controller))
    for processor in processors:
        table.register_handlers(processor)
    if controller.metrics is not None:  # every answer's latency (rocketmq_rpc_latency)
        table.observer = controller.metrics.rpc.observer
    return table
