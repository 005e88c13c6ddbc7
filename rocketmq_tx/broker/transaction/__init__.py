"""
Transactional messages on the broker (Java 4.9 ``broker/transaction``).

* :mod:`.util`: the system topics, the op message codec, the half-message layout.
* :mod:`.bridge`: :class:`TransactionalMessageBridge`, the store and the managers as the
  transaction code sees them (half and op puts, reads, check progress offsets).
* :mod:`.service`: :class:`TransactionalMessageService`, END_TRANSACTION's lookups and the
  check pass (a generator, so the pass can be run in slices on the reactor).
* :mod:`.opbatch`: :class:`TransactionalOpBatchService`, op messages written in batches (5.x).
* :mod:`.check`: :class:`TransactionalMessageCheckService` (the timer's work, sliced) and
  :class:`TransactionCheckListener` (CHECK_TRANSACTION_STATE to a producer, discards).
"""

from rocketmq_tx.broker.transaction.bridge import TransactionalMessageBridge
from rocketmq_tx.broker.transaction.check import TransactionalMessageCheckService, TransactionCheckListener
from rocketmq_tx.broker.transaction.opbatch import TransactionalOpBatchService
from rocketmq_tx.broker.transaction.service import TransactionalMessageService
from rocketmq_tx.broker.transaction.util import (
    CID_SYS_RMQ_TRANS,
    REMOVE_TAG,
    TRANS_CHECK_MAX_TIME_TOPIC,
    TRANS_HALF_TOPIC,
    TRANS_OP_HALF_TOPIC,
)

__all__ = [
    "CID_SYS_RMQ_TRANS",
    "REMOVE_TAG",
    "TRANS_CHECK_MAX_TIME_TOPIC",
    "TRANS_HALF_TOPIC",
    "TRANS_OP_HALF_TOPIC",
    "TransactionCheckListener",
    "TransactionalMessageBridge",
    "TransactionalMessageCheckService",
    "TransactionalMessageService",
    "TransactionalOpBatchService",
]
