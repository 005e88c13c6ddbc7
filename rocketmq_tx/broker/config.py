# -*- test-case-name: rocketmq_tx.broker.test.test_config -*-
"""
The broker's settings: Java's ``BrokerConfig`` and ``NettyServerConfig`` keys with their
defaults, plus the ``MessageStoreConfig`` keys of the same ``broker.conf``, which are handed
to :class:`rocketmq_tx.store.MessageStoreConfig` unchanged.

Keys we read but do not act on (thread pools, commercial counters, DLedger) are accepted so
that a Java ``broker.conf`` works unchanged; ``docs/operations.md`` lists which matter.
"""

from __future__ import annotations

import dataclasses
import os
import socket
from collections.abc import Mapping
from typing import Any

from rocketmq_tx.common.route import PermName
from rocketmq_tx.config import METRICS_CONFIG, NETTY_SERVER_CONFIG, ConfigError, Setting, Settings, validate_metrics
from rocketmq_tx.store.config import BrokerRole, FlushDiskType, MessageStoreConfig, _snake, parse_delay_levels

__all__ = ["BrokerSettings", "BROKER_CONFIG", "local_address"]


def local_address() -> str:
    """Java ``RemotingUtil.getLocalAddress``, simplified: the address a UDP socket to a public
    address would leave from, else 127.0.0.1 (no packet is sent)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("10.254.254.254", 1))
            return str(s.getsockname()[0])
    except OSError:
        return "127.0.0.1"


def _env(name: str) -> str:
    return os.environ.get(name, "")


BROKER_CONFIG = (
    Setting("rocketmqHome", _env("ROCKETMQ_HOME"), str),
    Setting("namesrvAddr", _env("NAMESRV_ADDR"), str, "name servers, host:port;host:port"),
    Setting("brokerIP1", "", str, "address published to name servers (default: this host's)"),
    Setting("brokerIP2", "", str, "the address slaves replicate from (default: brokerIP1)"),
    Setting("brokerName", socket.gethostname(), str),
    Setting("brokerClusterName", "DefaultCluster", str),
    Setting("brokerId", 0, int, "0 is the master, a slave's is above 0"),
    Setting("brokerPermission", PermName.PERM_READ | PermName.PERM_WRITE, int),
    Setting("defaultTopicQueueNums", 8, int),
    Setting("autoCreateTopicEnable", True, bool),
    Setting("clusterTopicEnable", True, bool),
    Setting("brokerTopicEnable", True, bool),
    Setting("autoCreateSubscriptionGroup", True, bool),
    Setting("messageStorePlugIn", "", str, "not supported: accepted and ignored"),
    Setting("msgTraceTopicName", "RMQ_SYS_TRACE_TOPIC", str, "the trace topic created when traceTopicEnable is set"),
    Setting("traceTopicEnable", False, bool, "create msgTraceTopicName (1 queue) for clients with enableMsgTrace"),
    Setting("sendMessageThreadPoolNums", 4, int),
    Setting("putMessageFutureThreadPoolNums", 4, int),
    Setting("pullMessageThreadPoolNums", 20, int),
    Setting("processReplyMessageThreadPoolNums", 20, int),
    Setting("queryMessageThreadPoolNums", 10, int),
    Setting("adminBrokerThreadPoolNums", 16, int),
    Setting("clientManageThreadPoolNums", 32, int),
    Setting("consumerManageThreadPoolNums", 32, int),
    Setting("heartbeatThreadPoolNums", 2, int),
    Setting("endTransactionThreadPoolNums", 12, int),
    Setting("flushConsumerOffsetInterval", 5000, int, "ms between consumerOffset.json writes"),
    Setting("flushConsumerOffsetHistoryInterval", 60000, int),
    Setting("rejectTransactionMessage", False, bool),
    Setting("enableMixedMessageType", False, bool, "5.x: allow the topic attribute message.type=MIXED"),
    Setting("fetchNamesrvAddrByAddressServer", False, bool, "not supported: accepted and ignored"),
    Setting("sendThreadPoolQueueCapacity", 10000, int),
    Setting("putThreadPoolQueueCapacity", 10000, int),
    Setting("pullThreadPoolQueueCapacity", 100000, int),
    Setting("replyThreadPoolQueueCapacity", 10000, int),
    Setting("queryThreadPoolQueueCapacity", 20000, int),
    Setting("clientManagerThreadPoolQueueCapacity", 1000000, int),
    Setting("consumerManagerThreadPoolQueueCapacity", 1000000, int),
    Setting("heartbeatThreadPoolQueueCapacity", 50000, int),
    Setting("endTransactionPoolQueueCapacity", 100000, int),
    Setting("filterServerNums", 0, int),
    Setting("longPollingEnable", True, bool),
    Setting("shortPollingTimeMills", 1000, int, "how long a suspended pull waits when long polling is off"),
    Setting("notifyConsumerIdsChangedEnable", True, bool),
    Setting("highSpeedMode", False, bool),
    Setting("commercialEnable", True, bool),
    Setting("commercialTimerCount", 1, int),
    Setting("commercialTransCount", 1, int),
    Setting("commercialBigCount", 1, int),
    Setting("commercialBaseCount", 1, int),
    Setting("transferMsgByHeap", True, bool),
    Setting("maxDelayTime", 40, int),
    Setting("regionId", "DefaultRegion", str),
    Setting("registerBrokerTimeoutMills", 6000, int),
    Setting("slaveReadEnable", False, bool),
    Setting("disableConsumeIfConsumerReadSlowly", False, bool),
    Setting("consumerFallbehindThreshold", 16 * 1024 ** 3, int),
    Setting("brokerFastFailureEnable", True, bool),
    Setting("waitTimeMillsInSendQueue", 200, int),
    Setting("waitTimeMillsInPullQueue", 5000, int),
    Setting("waitTimeMillsInHeartbeatQueue", 31000, int),
    Setting("waitTimeMillsInTransactionQueue", 3000, int),
    Setting("startAcceptSendRequestTimeStamp", 0, int),
    Setting("traceOn", True, bool),
    Setting("enableCalcFilterBitMap", False, bool),
    Setting("expectConsumerNumUseFilter", 32, int),
    Setting("maxErrorRateOfBloomFilter", 20, int),
    Setting("filterDataCleanTimeSpan", 24 * 3600 * 1000, int),
    Setting("filterSupportRetry", False, bool),
    Setting("enablePropertyFilter", False, bool, "SQL92 property filters for consumers (MessageSelector.bySql)"),
    Setting("compressedRegister", False, bool, "send REGISTER_BROKER bodies compressed (4.9 form)"),
    Setting("forceRegister", True, bool),
    Setting("registerNameServerPeriod", 30000, int, "ms between registrations with the name servers"),
    Setting("transactionTimeOut", 6000, int),
    Setting("transactionCheckMax", 15, int),
    Setting("transactionCheckInterval", 60000, int),
    Setting("transactionOpMsgMaxSize", 4096, int,
            "5.x: characters of resolved half offsets one batched op message holds"),
    Setting("transactionOpBatchInterval", 3000, int,
            "5.x: ms a resolved half offset may wait for its batched op message; 0 writes each at once "
            "in 4.9's form (for stores a Java 4.9 broker may take over)"),
    Setting("aclEnable", False, bool,
            "check every request against the ACL 1.0 files (plain_acl.yml, conf/acl/*.yml; docs/security.md)"),
    Setting("rocketmq.acl.plain.file", "conf/plain_acl.yml", str,
            "the plain ACL file, relative to rocketmqHome (Java's -Drocketmq.acl.plain.file)"),
    Setting("aclStrict", True, bool,
            "tx: close Java 4.9.8's ACL gaps (batch sends, lite pulls and ACL admin codes checked); "
            "false checks exactly as 4.9.8"),
    Setting("storeReplyMessageEnable", True, bool),
    Setting("enableDetailStat", True, bool),
    Setting("autoDeleteUnusedStats", False, bool),
    Setting("isolateLogEnable", False, bool),
    Setting("configBlackList", "configBlackList;brokerConfigPath", str,
            "keys UPDATE_BROKER_CONFIG may not change"),
    Setting("brokerConfigPath", "", str,
            "where UPDATE_BROKER_CONFIG persists (default <store>/config/broker.properties)"),
    # POP consumption (5.x)
    Setting("reviveQueueNum", 8, int, "queues of the revive topic rmq_sys_REVIVE_LOG_<cluster>"),
    Setting("enableRetryTopicV2", False, bool, "POP retry topics named %RETRY%<group>+<topic> (else _)"),
    Setting("popFromRetryProbability", 20, int, "percent of POPs that read the POP retry topic first"),
    # rocketmq-tx
    Setting("channelExpiredTimeout", 120000, int, "tx: ms of silence before a client is dropped"),
    Setting("fastListenPortEnable", True, bool, "tx: also listen on listenPort - 2 (Java's VIP channel)"),
    Setting("maxHeldPullsPerConnection", 4096, int,
            "tx: long-polling pulls one connection may have parked; more are answered SYSTEM_BUSY"),
    Setting("maxHeldPulls", 65536, int,
            "tx: long-polling pulls the broker holds in all; more are answered SYSTEM_BUSY"),
    Setting("topicQueueNumsMax", 1024, int,
            "tx: largest readQueueNums/writeQueueNums/retryQueueNums an admin request may set (Java: no limit)"),
)

#: Java ``MessageStoreConfig`` keys we accept without acting on them (HA, DLedger, the
#: transient store pool, warm-up): a Java broker.conf must not stop the start.
IGNORED_STORE_KEYS = frozenset("""
storePathDLedgerCommitLog readOnlyCommitLogStorePaths enableConsumeQueueExt mappedFileSizeConsumeQueueExt
bitMapLengthConsumeQueueExt commitIntervalCommitLog useReentrantLockWhenPutMessage deleteCommitLogFilesInterval
deleteConsumeQueueFilesInterval redeleteHangedFileInterval putMsgIndexHightWater commitCommitLogLeastPages
flushLeastPagesWhenWarmMapedFile commitCommitLogThoroughInterval haMaxGapNotInSync
flushDelayOffsetInterval cleanFileForciblyEnable warmMapedFileEnable debugLockEnable diskFallRecorded
osPageCacheBusyTimeOutMills transientStorePoolEnable transientStorePoolSize fastFailIfNoBufferInStorePool
enableDLegerCommitLog dLegerGroup dLegerPeers dLegerSelfId preferredLeaderId isEnableBatchPush
enableScheduleMessageStats enableLmq enableMultiDispatch maxLmqConsumeQueueNum enableScheduleAsyncDeliver
scheduleAsyncDeliverMaxPendingLimit scheduleAsyncDeliverMaxResendNum2Blocked
timerGetMessageThreadNum timerPutMessageThreadNum timerEnableDisruptor timerEnableCheckMetrics
timerInterceptDelayLevel timerCheckMetricsWhen timerSkipUnknownError timerWarmEnable timerEnableRetryUntilSuccess
timerMetricSmallThreshold timerProgressLogIntervalMs timerColdDataCheckIntervalMs
""".split())

_STORE_FIELDS = {f.name: f for f in dataclasses.fields(MessageStoreConfig)}
# Fields that are ours, not Java keys: the broker fills them in.
_STORE_INTERNAL = {"store_host", "handle_schedule_message", "index_tags"}


def _store_field(key: str) -> str | None:
    name = MessageStoreConfig.ALIASES.get(key, _snake(key))
    if name is None or name not in _STORE_FIELDS or name in _STORE_INTERNAL:
        return None
    return name


def _java_key(name: str) -> str:
    """snake_case field -> Java key (check_crc_on_recover -> checkCRCOnRecover)."""
    head, *rest = name.split("_")
    return head + "".join(p.upper() if p == "crc" else p.capitalize() for p in rest)


#: NettyServerConfig keys with the broker's port (Java's BrokerStartup sets 10911).
BROKER_NETTY_CONFIG = tuple(
    Setting("listenPort", 10911, int, "TCP port; the fast port is this - 2") if s.key == "listenPort" else s
    for s in NETTY_SERVER_CONFIG
)


class BrokerSettings(Settings):
    """Everything ``mqbroker -c`` reads, with Java's defaults (store keys kept as text)."""

    SPEC = BROKER_CONFIG + METRICS_CONFIG + BROKER_NETTY_CONFIG

    def __init__(self, overrides: Mapping[str, Any] | None = None) -> None:
        super().__init__(overrides)
        self.store_properties: dict[str, str] = {}

    def update_from_properties(self, properties: Mapping[str, str]) -> list[str]:
        """
        Apply broker, server and store keys; returns the unknown ones.

        :raises ConfigError: a value does not parse (nothing is applied).
        """
        store = {k: v for k, v in properties.items() if _store_field(k) is not None}
        ignored = {k for k in properties if k in IGNORED_STORE_KEYS}
        rest = {k: v for k, v in properties.items() if k not in store and k not in ignored}
        merged = {**self.store_properties, **store}
        _check_store(merged)
        unknown = super().update_from_properties(rest)
        self.store_properties = merged
        return unknown

    def validate(self) -> None:
        """What ``twistd rocketmq-broker`` refuses to start on (and UPDATE_BROKER_CONFIG refuses)."""
        super().validate()
        for key in ("registerNameServerPeriod", "flushConsumerOffsetInterval", "defaultTopicQueueNums",
                    "channelExpiredTimeout", "topicQueueNumsMax", "maxHeldPullsPerConnection", "maxHeldPulls",
                    "reviveQueueNum", "transactionOpMsgMaxSize"):
            if self[key] <= 0:
                raise ConfigError(f"{key}: must be positive, got {self[key]}")
        interval = self["transactionOpBatchInterval"]
        if interval < 0:
            raise ConfigError(f"transactionOpBatchInterval: must not be negative, got {interval}")
        role = self.message_store_config().broker_role
        if role is BrokerRole.SLAVE and self["brokerId"] <= 0:
            raise ConfigError(f"brokerId: {self['brokerId']}: a slave's brokerId must be > 0 (Java exits on it too)")
        if role is not BrokerRole.SLAVE and self["brokerId"] != 0:
            # Java's BrokerStartup quietly makes a master's brokerId 0; saying so is clearer
            raise ConfigError(f"brokerId: {self['brokerId']}: a master's brokerId is 0 (brokerRole {role.name})")
        if not self["brokerName"]:
            raise ConfigError("brokerName: must not be empty")
        if self["fastListenPortEnable"] and self["listenPort"] in (1, 2):
            raise ConfigError(f"listenPort: {self['listenPort']} leaves no fast port (listenPort - 2); "
                              "use 0, a port above 2, or fastListenPortEnable=false")
        validate_metrics(self)
        _check_store(self.store_properties)

    def message_store_config(self, **overrides: Any) -> MessageStoreConfig:
        """The store's settings from this broker.conf."""
        return MessageStoreConfig.from_properties(self.store_properties, **overrides)

    def to_properties(self) -> dict[str, str]:
        out = super().to_properties()
        cfg = self.message_store_config()
        for name in sorted(_STORE_FIELDS):
            if name in _STORE_INTERNAL:
                continue
            value = getattr(cfg, name)
            if hasattr(value, "value"):
                value = value.value
            out[_java_key(name)] = Setting("", value).format(value)
        return out


def _check_store(props: Mapping[str, str]) -> None:
    try:
        cfg = MessageStoreConfig.from_properties(props)
    except (ValueError, TypeError) as e:
        bad = _first_bad(props)
        raise ConfigError(f"{bad}: {e}" if bad else str(e)) from None
    try:
        parse_delay_levels(cfg.message_delay_level)
    except ValueError as e:
        raise ConfigError(f"messageDelayLevel: {e}") from None
    for name in ("ha_send_heartbeat_interval", "ha_housekeeping_interval", "ha_transfer_batch_size", "slave_timeout"):
        if getattr(cfg, name) <= 0:
            raise ConfigError(f"{_java_key(name)}: must be positive")
    if not 0 <= cfg.ha_listen_port <= 65535:
        raise ConfigError(f"haListenPort: {cfg.ha_listen_port} is no port")
    if cfg.ha_master_address and cfg.ha_master_address.rpartition(":")[2].isdigit() is False:
        raise ConfigError(f"haMasterAddress: expected host:port, got {cfg.ha_master_address!r}")
    for name in ("mapped_file_size_commit_log", "mapped_file_size_consume_queue", "max_message_size"):
        if getattr(cfg, name) <= 0:
            raise ConfigError(f"{_java_key(name)}: must be positive")
    if cfg.timer_flush_interval_ms <= 0:
        raise ConfigError("timerFlushIntervalMs: must be positive")
    if cfg.mapped_file_size_timer_log < 52 + 16:
        raise ConfigError("mappedFileSizeTimerLog: must hold a 52-byte unit and a 16-byte blank")
    if cfg.timer_max_delay_sec <= 0:
        raise ConfigError("timerMaxDelaySec: must be positive")
    if not 0 < cfg.disk_max_used_space_ratio <= 100:
        raise ConfigError("diskMaxUsedSpaceRatio: must be within 1..100")
    try:
        cfg.delete_hours()
    except ValueError:
        raise ConfigError(f"deleteWhen: expected hours like 04 or 04;05, got {cfg.delete_when!r}") from None
    assert isinstance(cfg.flush_disk_type, FlushDiskType)


def _first_bad(props: Mapping[str, str]) -> str | None:
    for key, value in props.items():
        try:
            MessageStoreConfig.from_properties({key: value})
        except (ValueError, TypeError):
            return key
    return None

