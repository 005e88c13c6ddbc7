"""
The remoting codec over plain blocking sockets, for places where no reactor can run
(PySpark executors, scripts). Importing this package never imports Twisted.
"""

from rocketmq_tx.blocking.admin import BlockingAdmin
from rocketmq_tx.blocking.client import BlockingMQClient, BlockingProducer, BlockingPullClient
from rocketmq_tx.blocking.connection import BlockingConnection, BlockingRemotingClient
from rocketmq_tx.blocking.simpleconsumer import BlockingSimpleConsumer
from rocketmq_tx.blocking.transaction import BlockingTransactionProducer

__all__ = ["BlockingAdmin", "BlockingConnection", "BlockingMQClient", "BlockingProducer", "BlockingPullClient",
           "BlockingRemotingClient", "BlockingSimpleConsumer", "BlockingTransactionProducer"]
