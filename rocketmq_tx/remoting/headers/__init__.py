"""
Typed custom headers, one module per request family (send, pull, route, ...).

Each class mirrors a Java ``CommandCustomHeader``; wire keys never change.
"""

from rocketmq_tx.remoting.headers.pull import PullMessageRequestHeader, PullMessageResponseHeader, PullSysFlag
from rocketmq_tx.remoting.headers.route import GetRouteInfoRequestHeader
from rocketmq_tx.remoting.headers.send import (
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
)

__all__ = [
    "GetRouteInfoRequestHeader",
    "PullMessageRequestHeader",
    "PullMessageResponseHeader",
    "PullSysFlag",
    "SendMessageRequestHeader",
    "SendMessageRequestHeaderV2",
    "SendMessageResponseHeader",
]
