"""
The RocketMQ client on Twisted: a client instance shared per process (routes, heartbeats,
name-server fail-over), a :class:`Producer`, a :class:`LitePullConsumer`, a :class:`PushConsumer`,
a :class:`SimpleConsumer` (POP) and the admin API, :class:`MQAdmin`.

The requests and responses are those of :mod:`rocketmq_tx.remoting.api`, which the
blocking client in :mod:`rocketmq_tx.blocking` uses as well.
"""

from rocketmq_tx.client.admin import MQAdmin
from rocketmq_tx.client.instance import MQClientInstance
from rocketmq_tx.client.litepull import (
    CONSUME_FROM_FIRST_OFFSET,
    CONSUME_FROM_LAST_OFFSET,
    CONSUME_FROM_TIMESTAMP,
    LitePullConsumer,
)
from rocketmq_tx.client.producer import Producer
from rocketmq_tx.client.push import ConsumeStatus, PushConsumer
from rocketmq_tx.client.simpleconsumer import SimpleConsumer
from rocketmq_tx.client.transaction import TransactionProducer
from rocketmq_tx.common.message import Message, MessageExt, MessageQueue
from rocketmq_tx.remoting.api import MQClientError, PullResult, PullStatus, SendResult, SendStatus
from rocketmq_tx.remoting.errors import MQBrokerError
from rocketmq_tx.remoting.transactionapi import LocalTransactionState, TransactionSendResult

__all__ = [
    "CONSUME_FROM_FIRST_OFFSET",
    "CONSUME_FROM_LAST_OFFSET",
    "CONSUME_FROM_TIMESTAMP",
    "ConsumeStatus",
    "LitePullConsumer",
    "LocalTransactionState",
    "MQAdmin",
    "MQBrokerError",
    "MQClientError",
    "MQClientInstance",
    "Message",
    "MessageExt",
    "MessageQueue",
    "Producer",
    "PullResult",
    "PullStatus",
    "PushConsumer",
    "SendResult",
    "SendStatus",
    "SimpleConsumer",
    "TransactionProducer",
    "TransactionSendResult",
]
