# -*- test-case-name: rocketmq_tx.namesrv.test.test_routeinfo -*-
"""
Topic configuration and routing values shared by the name server, the broker and the
clients: ``TopicConfig``, ``DataVersion``, ``QueueData``, ``BrokerData``,
``TopicRouteData``, ``PermName``, ``TopicSysFlag``.

Each value converts to and from the plain-dict form of its Java JSON shape
(``to_json``/``from_json``; field names are Java's and never change). Turning those dicts
into bytes is the codec's business (:mod:`rocketmq_tx.common.fastjson`), so this
module stays free of any JSON library.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "MASTER_ID",
    "PermName",
    "TopicSysFlag",
    "DataVersion",
    "TopicConfig",
    "QueueData",
    "BrokerData",
    "TopicRouteData",
]

#: ``MixAll.MASTER_ID``: broker id 0 is the master.
MASTER_ID = 0


class PermName:
    """``PermName`` bits of topic and broker permissions."""

    PERM_PRIORITY = 0x8
    PERM_READ = 0x4
    PERM_WRITE = 0x2
    PERM_INHERIT = 0x1

    @staticmethod
    def is_readable(perm: int) -> bool:
        return bool(perm & PermName.PERM_READ)

    @staticmethod
    def is_writeable(perm: int) -> bool:
        return bool(perm & PermName.PERM_WRITE)

    @staticmethod
    def is_inherited(perm: int) -> bool:
        return bool(perm & PermName.PERM_INHERIT)

    @staticmethod
    def perm_to_string(perm: int) -> str:
        """Java's ``perm2String``: ``RW-`` style."""
        return ("R" if perm & PermName.PERM_READ else "-") + ("W" if perm & PermName.PERM_WRITE else "-") + (
            "X" if perm & PermName.PERM_INHERIT else "-")


class TopicSysFlag:
    """``TopicSysFlag`` bits (unit topics)."""

    FLAG_UNIT = 0x1
    FLAG_UNIT_SUB = 0x2

    @staticmethod
    def has_unit_flag(flag: int) -> bool:
        return bool(flag & TopicSysFlag.FLAG_UNIT)

    @staticmethod
    def has_unit_sub_flag(flag: int) -> bool:
        return bool(flag & TopicSysFlag.FLAG_UNIT_SUB)


def _int(value: Any, default: int = 0) -> int:
    if value is None:
        return default
    if isinstance(value, bool):
        return int(value)
    return int(value)


@dataclass(slots=True)
class DataVersion:
    """``DataVersion``: a broker's topic-configuration version (equality is what matters)."""

    counter: int = 0
    timestamp: int = 0
    state_version: int | None = None  # 5.x only; absent from 4.x JSON

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"counter": self.counter}
        if self.state_version is not None:
            out["stateVersion"] = self.state_version
        out["timestamp"] = self.timestamp
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> DataVersion:
        data = data or {}
        state = data.get("stateVersion")
        return cls(_int(data.get("counter")), _int(data.get("timestamp")), None if state is None else _int(state))

    def next_version(self, now_ms: int | None = None) -> None:
        """Java ``nextVersion``: a new timestamp and the counter plus one."""
        self.timestamp = int(time.time() * 1000) if now_ms is None else now_ms
        self.counter += 1

    def same_as(self, other: DataVersion | None) -> bool:
        """Java's ``DataVersion.equals`` (4.9 compares counter and timestamp)."""
        return other is not None and (self.counter, self.timestamp) == (other.counter, other.timestamp) and (
            self.state_version or 0) == (other.state_version or 0)


@dataclass(slots=True)
class TopicConfig:
    """``TopicConfig``; the class defaults are Java's (16 queues, read and write)."""

    topic_name: str
    read_queue_nums: int = 16
    write_queue_nums: int = 16
    perm: int = PermName.PERM_READ | PermName.PERM_WRITE
    topic_filter_type: str = "SINGLE_TAG"
    topic_sys_flag: int = 0
    order: bool = False
    attributes: dict[str, str] | None = None  # 5.x

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.attributes is not None:
            out["attributes"] = dict(self.attributes)
        out.update(order=self.order, perm=self.perm, readQueueNums=self.read_queue_nums,
                   topicFilterType=self.topic_filter_type, topicName=self.topic_name,
                   topicSysFlag=self.topic_sys_flag, writeQueueNums=self.write_queue_nums)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TopicConfig:
        attributes = data.get("attributes")
        return cls(
            topic_name=str(data["topicName"]),
            read_queue_nums=_int(data.get("readQueueNums"), 16),
            write_queue_nums=_int(data.get("writeQueueNums"), 16),
            perm=_int(data.get("perm"), 6),
            topic_filter_type=str(data.get("topicFilterType") or "SINGLE_TAG"),
            topic_sys_flag=_int(data.get("topicSysFlag")),
            order=bool(data.get("order", False)),
            attributes=None if attributes is None else {str(k): str(v) for k, v in dict(attributes).items()},
        )

    def encode_line(self) -> str:
        """``TopicConfig.encode()``: the space-separated line of the compressed register body (4.9 form)."""
        return f"{self.topic_name} {self.read_queue_nums} {self.write_queue_nums} {self.perm} {self.topic_filter_type}"

    @classmethod
    def decode_line(cls, line: str) -> TopicConfig:
        """
        Parse ``TopicConfig.encode()``: 5 tokens in 4.9, a 6th (JSON attributes) in 5.x.
        topicSysFlag and order do not travel in this form.

        :raises ValueError: fewer than 5 tokens or non-numeric counts.
        """
        parts = line.split(" ", 5)
        if len(parts) < 5:
            raise ValueError(f"topic config line has {len(parts)} tokens, expected 5: {line!r}")
        return cls(parts[0], int(parts[1]), int(parts[2]), int(parts[3]), parts[4])


@dataclass(slots=True)
class QueueData:
    """``QueueData``: one broker's queues of one topic."""

    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_sys_flag: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"brokerName": self.broker_name, "perm": self.perm, "readQueueNums": self.read_queue_nums,
                "topicSysFlag": self.topic_sys_flag, "writeQueueNums": self.write_queue_nums}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> QueueData:
        # Name servers before 4.9.0 spelled it topicSynFlag.
        flag = data.get("topicSysFlag", data.get("topicSynFlag"))
        return cls(str(data["brokerName"]), _int(data.get("readQueueNums")), _int(data.get("writeQueueNums")),
                   _int(data.get("perm")), _int(flag))


@dataclass(slots=True)
class BrokerData:
    """``BrokerData``: one broker name's addresses by broker id (0 is the master)."""

    cluster: str
    broker_name: str
    broker_addrs: dict[int, str] = field(default_factory=dict)
    #: 5.x only: sent by 5.x brokers, absent (``None``) for 4.x ones.
    enable_acting_master: bool | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"brokerAddrs": dict(self.broker_addrs), "brokerName": self.broker_name,
                               "cluster": self.cluster}
        if self.enable_acting_master is not None:
            out["enableActingMaster"] = self.enable_acting_master
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BrokerData:
        addrs = {int(k): str(v) for k, v in dict(data.get("brokerAddrs") or {}).items()}
        acting = data.get("enableActingMaster")
        return cls(str(data.get("cluster") or ""), str(data["brokerName"]), addrs,
                   None if acting is None else bool(acting))

    def select_broker_addr(self) -> str | None:
        """The master's address, else any slave's (Java ``selectBrokerAddr`` without randomness)."""
        addr = self.broker_addrs.get(MASTER_ID)
        if addr is None and self.broker_addrs:
            addr = self.broker_addrs[min(self.broker_addrs)]
        return addr


@dataclass(slots=True)
class TopicRouteData:
    """``TopicRouteData``: what GET_ROUTEINFO_BY_TOPIC answers."""

    queue_datas: list[QueueData] = field(default_factory=list)
    broker_datas: list[BrokerData] = field(default_factory=list)
    filter_server_table: dict[str, list[str]] = field(default_factory=dict)
    order_topic_conf: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "brokerDatas": [b.to_json() for b in self.broker_datas],
            "filterServerTable": {k: list(v) for k, v in self.filter_server_table.items()},
        }
        if self.order_topic_conf is not None:
            out["orderTopicConf"] = self.order_topic_conf
        out["queueDatas"] = [q.to_json() for q in self.queue_datas]
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TopicRouteData:
        return cls(
            queue_datas=[QueueData.from_json(q) for q in data.get("queueDatas") or []],
            broker_datas=[BrokerData.from_json(b) for b in data.get("brokerDatas") or []],
            filter_server_table={str(k): [str(x) for x in v or []]
                                 for k, v in dict(data.get("filterServerTable") or {}).items()},
            order_topic_conf=data.get("orderTopicConf"),
        )
