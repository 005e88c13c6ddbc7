"""
Twisted drivers of the remoting codec: the connection protocol, the per-server
processor table, and the client with its connection pool.
"""

from rocketmq_tx.net.client import RemotingClient
from rocketmq_tx.net.dispatch import HandlerProcessor, IRemotingContext, IRequestProcessor, ProcessorTable
from rocketmq_tx.net.protocol import RemotingProtocol
from rocketmq_tx.net.server import RemotingServerFactory

__all__ = [
    "HandlerProcessor",
    "IRemotingContext",
    "IRequestProcessor",
    "ProcessorTable",
    "RemotingClient",
    "RemotingProtocol",
    "RemotingServerFactory",
]
