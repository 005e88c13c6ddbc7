# -*- test-case-name: rocketmq_tx.namesrv.test.test_tap -*-
"""
The name server's settings: Java's ``NamesrvConfig`` and ``NettyServerConfig`` keys, with
their defaults, plus rocketmq-tx's own (marked "tx").

Keys we read but do not act on (thread pools, socket buffers) are accepted so that a
Java ``namesrv.properties`` works unchanged; ``docs/operations.md`` lists which matter.
"""

from __future__ import annotations

import os
from pathlib import Path

from rocketmq_tx.config import METRICS_CONFIG, NETTY_SERVER_CONFIG, ConfigError, Setting, Settings, validate_metrics

__all__ = ["NamesrvSettings", "NAMESRV_CONFIG", "NETTY_SERVER_CONFIG"]

_HOME = str(Path.home())

NAMESRV_CONFIG = (
    Setting("rocketmqHome", os.environ.get("ROCKETMQ_HOME", ""), str, "RocketMQ home directory"),
    Setting("kvConfigPath", os.path.join(_HOME, "namesrv", "kvConfig.json"), str, "where KV configuration persists"),
    Setting("configStorePath", os.path.join(_HOME, "namesrv", "namesrv.properties"), str,
            "where UPDATE_NAMESRV_CONFIG persists the configuration"),
    Setting("productEnvName", "center", str),
    Setting("clusterTest", False, bool),
    Setting("orderMessageEnable", False, bool, "add orderTopicConf from the ORDER_TOPIC_CONFIG KV namespace to routes"),
    Setting("configBlackList", "configBlackList;configStorePath;kvConfigPath", str,
            "keys UPDATE_NAMESRV_CONFIG may not change"),
    # 5.x NamesrvConfig
    # 5.x NamesrvConfig keys. scanNotActiveBrokerInterval defaults to 5 s there; 4.9
    # scans every 10 s, which we keep.
    Setting("scanNotActiveBrokerInterval", 10 * 1000, int, "ms between broker expiry scans"),
    Setting("returnOrderTopicConfigToBroker", True, bool, "send the ORDER_TOPIC_CONFIG table back on registration"),
    Setting("enableAllTopicList", True, bool, "answer GET_ALL_TOPIC_LIST_FROM_NAMESERVER"),
    Setting("enableTopicList", True, bool, "answer the other topic-list requests"),
    Setting("clientRequestThreadPoolNums", 8, int),
    Setting("defaultThreadPoolNums", 16, int),
    Setting("clientRequestThreadPoolQueueCapacity", 50000, int),
    Setting("defaultThreadPoolQueueCapacity", 10000, int),
    Setting("unRegisterBrokerQueueCapacity", 3000, int),
    Setting("supportActingMaster", False, bool, "not supported: accepted and ignored"),
    Setting("notifyMinBrokerIdChanged", False, bool, "not supported: accepted and ignored"),
    Setting("enableControllerInNamesrv", False, bool, "not supported: accepted and ignored"),
    Setting("needWaitForService", False, bool, "not supported: accepted and ignored"),
    Setting("waitSecondsForService", 45, int, "not supported: accepted and ignored"),
    Setting("deleteTopicWithBrokerRegistration", False, bool, "not supported: accepted and ignored"),
    # rocketmq-tx
    Setting("brokerChannelExpiredTime", 120 * 1000, int, "tx: ms of silence before a broker is dropped"),
)



class NamesrvSettings(Settings):
    """Everything ``mqnamesrv -c`` reads, with Java's defaults."""

    SPEC = NAMESRV_CONFIG + METRICS_CONFIG + NETTY_SERVER_CONFIG

    def validate(self) -> None:
        """What ``twistd rocketmq-namesrv`` refuses to start on (and UPDATE_NAMESRV_CONFIG refuses)."""
        super().validate()
        for key in ("scanNotActiveBrokerInterval", "brokerChannelExpiredTime"):
            if self[key] <= 0:
                raise ConfigError(f"{key}: must be positive, got {self[key]}")
        validate_metrics(self)
