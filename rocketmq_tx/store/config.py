# -*- test-case-name: rocketmq_tx.store.test.test_config -*-
"""
Store settings (Java ``MessageStoreConfig``), with Java's property names accepted by
:meth:`MessageStoreConfig.from_properties` so a ``broker.conf`` can be used as it is.
"""

from __future__ import annotations

import dataclasses
import enum
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["FlushDiskType", "BrokerRole", "MessageStoreConfig", "parse_delay_levels", "normalise_timer_precision"]


class FlushDiskType(enum.Enum):
    ASYNC_FLUSH = "ASYNC_FLUSH"
    SYNC_FLUSH = "SYNC_FLUSH"


class BrokerRole(enum.Enum):
    ASYNC_MASTER = "ASYNC_MASTER"
    SYNC_MASTER = "SYNC_MASTER"
    SLAVE = "SLAVE"


_UNITS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_delay_levels(text: str) -> dict[int, int]:
    """
    Parse Java's ``messageDelayLevel`` ("1s 5s 10s 30s 1m ... 2h") into level -> milliseconds,
    levels counted from 1 (Java ``ScheduleMessageService.parseDelayLevel``).
    """
    levels = {}
    for i, item in enumerate(text.split()):
        m = re.fullmatch(r"(\d+)([smhd])", item)
        if not m:
            raise ValueError(f"bad messageDelayLevel item {item!r}")
        levels[i + 1] = int(m.group(1)) * _UNITS[m.group(2)]
    return levels


def normalise_timer_precision(value: int) -> int:
    """Java ``setTimerPrecisionMs``: the largest of 100, 200, 500, 1000 not above *value* (100 below it)."""
    candidates = (100, 200, 500, 1000)
    for lower, upper in zip(candidates, candidates[1:], strict=False):
        if value < upper:
            return lower
    return candidates[-1]


def _snake(name: str) -> str:
    """Java camelCase to snake_case, acronyms kept together (checkCRCOnRecover -> check_crc_on_recover)."""
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()


@dataclass
class MessageStoreConfig:
    """
    The subset of Java ``MessageStoreConfig`` this store honours. Field names are the Java
    names in snake case; defaults are Java's (protocol notes §6.7).
    """

    store_path_root_dir: str = field(default_factory=lambda: os.path.join(os.path.expanduser("~"), "store"))
    store_path_commit_log: str = ""  # "" = <root>/commitlog
    mapped_file_size_commit_log: int = 1024 * 1024 * 1024
    mapped_file_size_consume_queue: int = 300_000 * 20
    max_message_size: int = 1024 * 1024 * 4
    flush_disk_type: FlushDiskType = FlushDiskType.ASYNC_FLUSH
    flush_interval_commit_log: int = 500
    flush_commit_log_least_pages: int = 4
    flush_commit_log_thorough_interval: int = 10_000
    flush_commit_log_timed: bool = True
    flush_interval_consume_queue: int = 1000
    flush_consume_queue_least_pages: int = 2
    flush_consume_queue_thorough_interval: int = 60_000
    sync_flush_timeout: int = 5000
    #: how long a SYNC_MASTER put waits for a slave's ack (Java's ``slaveTimeout``, not syncFlushTimeout)
    slave_timeout: int = 3000
    file_reserved_time: int = 72
    delete_when: str = "04"
    disk_max_used_space_ratio: int = 75
    clean_resource_interval: int = 10_000
    destroy_maped_file_interval_forcibly: int = 120_000
    check_crc_on_recover: bool = True
    message_index_enable: bool = True
    message_index_safe: bool = False
    max_hash_slot_num: int = 5_000_000
    max_index_num: int = 5_000_000 * 4
    max_transfer_bytes_on_message_in_memory: int = 1024 * 256
    max_transfer_count_on_message_in_memory: int = 32
    max_transfer_bytes_on_message_in_disk: int = 1024 * 64
    max_transfer_count_on_message_in_disk: int = 8
    access_message_in_memory_max_ratio: int = 40
    default_query_max_num: int = 32
    max_msgs_num_batch: int = 64
    message_delay_level: str = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
    broker_role: BrokerRole = BrokerRole.ASYNC_MASTER
    offset_check_in_slave: bool = False
    #: the master's replication port; 0 = listenPort + 1 (what Java 4.9's BrokerStartup always
    #: sets, whatever the configuration says)
    ha_listen_port: int = 0
    #: a slave reports its offset, and an idle master sends an empty frame, this often (ms)
    ha_send_heartbeat_interval: int = 5000
    #: an HA connection silent this long is closed (ms)
    ha_housekeeping_interval: int = 20_000
    #: the largest batch of CommitLog bytes a master sends in one frame
    ha_transfer_batch_size: int = 32 * 1024
    #: a slave's master HA address (host:port); empty = the one the name server answers
    ha_master_address: str = ""
    #: a slave further behind than this is not "OK" for SYNC_MASTER (bytes)
    ha_slave_fallbehind_max: int = 256 * 1024 * 1024
    duplication_enable: bool = False
    #: Not a Java setting: the address written as STOREHOSTADDRESS (Java takes it from
    #: brokerIP1 and listenPort).
    store_host: tuple[str, int] = ("127.0.0.1", 10911)
    #: Java 4.9 rewrites a DELAY message to SCHEDULE_TOPIC_XXXX inside the store; 5.x does it
    #: in the broker. Off leaves that to the caller.
    handle_schedule_message: bool = True
    #: 5.x also indexes each message's TAGS, as ``topic#T#tag``, after its UNIQ_KEY and KEYS
    #: (found in the index files a 5.5.0 broker writes; compat-tests checks them byte for
    #: byte); 4.9 does not.
    index_tags: bool = False
    #: 5.x timer messages (Java ``TimerMessageStore``): off refuses messages with a delivery time
    timer_wheel_enable: bool = True
    #: the wheel's tick; Java rounds it down to 100, 200, 500 or 1000
    timer_precision_ms: int = 1000
    #: the farthest delivery time accepted, in seconds from now (3 days)
    timer_max_delay_sec: int = 3600 * 24 * 3
    #: slots ahead a timer may be placed before it is rolled (2 days of slots)
    timer_roll_window_slot: int = 3600 * 24 * 2
    timer_flush_interval_ms: int = 1000
    mapped_file_size_timer_log: int = 100 * 1024 * 1024
    #: a slot holding more pending timers refuses some puts, twice as many all (WHEEL_TIMER_FLOW_CONTROL)
    timer_congest_num_each_slot: int = 2**31 - 1
    timer_stop_enqueue: bool = False
    timer_stop_dequeue: bool = False

    def __post_init__(self) -> None:
        if not self.store_path_commit_log:
            self.store_path_commit_log = os.path.join(self.store_path_root_dir, "commitlog")
        self.timer_precision_ms = normalise_timer_precision(self.timer_precision_ms)

    @property
    def store_path_consume_queue(self) -> str:
        return os.path.join(self.store_path_root_dir, "consumequeue")

    @property
    def store_path_index(self) -> str:
        return os.path.join(self.store_path_root_dir, "index")

    @property
    def store_checkpoint(self) -> str:
        return os.path.join(self.store_path_root_dir, "checkpoint")

    @property
    def abort_file(self) -> str:
        return os.path.join(self.store_path_root_dir, "abort")

    @property
    def config_dir(self) -> str:
        return os.path.join(self.store_path_root_dir, "config")

    def delay_levels(self) -> dict[int, int]:
        return parse_delay_levels(self.message_delay_level)

    def delete_hours(self) -> set[int]:
        """The hours of ``deleteWhen`` ("04" or "04;05")."""
        return {int(h) for h in self.delete_when.split(";") if h.strip()}

    #: Java key spellings that differ from the snake-case rule.
    ALIASES = {
        "mapedFileSizeCommitLog": "mapped_file_size_commit_log",
        "mapedFileSizeConsumeQueue": "mapped_file_size_consume_queue",
        "brokerIP1": None,
    }

    @classmethod
    def from_properties(cls, props: Mapping[str, Any], **overrides: Any) -> MessageStoreConfig:
        """
        Build a config from Java property names (``broker.conf``). Unknown keys are ignored
        (they belong to the broker); values are converted to the field's type.
        """
        fields = {f.name: f for f in dataclasses.fields(cls)}
        kwargs: dict[str, Any] = {}
        for key, value in props.items():
            name = cls.ALIASES.get(key, _snake(key))
            if name is None or name not in fields:
                continue
            kwargs[name] = _convert(fields[name], value)
        kwargs.update(overrides)
        return cls(**kwargs)


def _convert(f: dataclasses.Field[Any], value: Any) -> Any:
    if f.default is not dataclasses.MISSING:
        default = f.default
    else:
        assert f.default_factory is not dataclasses.MISSING  # every setting has a default
        default = f.default_factory()
    if isinstance(default, enum.Enum):
        return type(default)(str(value).strip())
    if isinstance(default, bool):
        return value if isinstance(value, bool) else str(value).strip().lower() == "true"
    if isinstance(default, int):
        return int(str(value).strip())
    if isinstance(default, tuple):
        return value
    return str(value).strip()
