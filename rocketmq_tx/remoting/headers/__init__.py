"""
Typed custom headers, one module per request family (send, pull, route, ...).

Each class mirrors a Java ``CommandCustomHeader``; wire keys never change.
"""

from rocketmq_tx.remoting.headers.admin import (
    CloneGroupOffsetRequestHeader,
    ConsumeMessageDirectlyResultRequestHeader,
    CreateTopicRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    DeleteTopicRequestHeader,
    GetBrokerConfigResponseHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetConsumerStatusRequestHeader,
    GetConsumeStatsInBrokerHeader,
    GetConsumeStatsRequestHeader,
    GetProducerConnectionListRequestHeader,
    GetSubscriptionGroupConfigRequestHeader,
    GetTopicConfigRequestHeader,
    GetTopicStatsInfoRequestHeader,
    NotifyConsumerIdsChangedRequestHeader,
    QueryConsumeQueueRequestHeader,
    QueryConsumeTimeSpanRequestHeader,
    QueryCorrectionOffsetHeader,
    QuerySubscriptionByConsumerRequestHeader,
    QueryTopicConsumeByWhoRequestHeader,
    QueryTopicsByConsumerRequestHeader,
    ResetOffsetRequestHeader,
    ViewBrokerStatsDataRequestHeader,
)
from rocketmq_tx.remoting.headers.pull import PullMessageRequestHeader, PullMessageResponseHeader, PullSysFlag
from rocketmq_tx.remoting.headers.route import GetRouteInfoRequestHeader
from rocketmq_tx.remoting.headers.send import (
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
)

__all__ = [
    "CloneGroupOffsetRequestHeader",
    "ConsumeMessageDirectlyResultRequestHeader",
    "CreateTopicRequestHeader",
    "DeleteSubscriptionGroupRequestHeader",
    "DeleteTopicRequestHeader",
    "GetBrokerConfigResponseHeader",
    "GetConsumeStatsInBrokerHeader",
    "GetConsumeStatsRequestHeader",
    "GetConsumerConnectionListRequestHeader",
    "GetConsumerRunningInfoRequestHeader",
    "GetConsumerStatusRequestHeader",
    "GetProducerConnectionListRequestHeader",
    "GetRouteInfoRequestHeader",
    "GetTopicConfigRequestHeader",
    "GetSubscriptionGroupConfigRequestHeader",
    "GetTopicStatsInfoRequestHeader",
    "NotifyConsumerIdsChangedRequestHeader",
    "PullMessageRequestHeader",
    "PullMessageResponseHeader",
    "PullSysFlag",
    "QueryConsumeQueueRequestHeader",
    "QueryConsumeTimeSpanRequestHeader",
    "QueryCorrectionOffsetHeader",
    "QuerySubscriptionByConsumerRequestHeader",
    "QueryTopicConsumeByWhoRequestHeader",
    "QueryTopicsByConsumerRequestHeader",
    "ResetOffsetRequestHeader",
    "SendMessageRequestHeader",
    "SendMessageRequestHeaderV2",
    "SendMessageResponseHeader",
    "ViewBrokerStatsDataRequestHeader",
]
