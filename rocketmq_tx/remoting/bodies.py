# -*- test-case-name: rocketmq_tx.remoting.test.test_bodies -*-
"""
Request and response bodies that are more than one JSON value: REGISTER_BROKER's body
in both its forms, and the JSON bodies the name server writes (``KVTable``, ``TopicList``,
``ClusterInfo``).

Registration happens every 30 s per broker, not per message, so the compressed form is
decoded with its construct declaration directly. It is inflated incrementally and refused
past :data:`MAX_INFLATED_REGISTER_BODY` bytes: a zlib stream inflates up to ~1000 times
its size, so a single 16 MiB frame could otherwise ask for gigabytes.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any

from construct import ConstructError

from rocketmq_tx.common import fastjson
from rocketmq_tx.common.route import MASTER_ID, BrokerData, DataVersion, TopicConfig
from rocketmq_tx.remoting.errors import RemotingCommandError
from rocketmq_tx.remoting.formats import RegisterBrokerBodyCompressed

__all__ = ["MAX_INFLATED_REGISTER_BODY", "RegisterBrokerBody", "ClusterInfo", "TopicList", "kv_table",
           "topic_list"]

#: The most a compressed REGISTER_BROKER body may inflate to (our limit: Java inflates
#: whatever the stream holds). It is the largest frame, 16 MiB: the uncompressed (JSON)
#: body of a registration must fit in one frame, and a topic's line in the compressed form
#: is about a fifth of its JSON, so this admits several times the topics of the largest
#: registration a broker could send uncompressed (~480,000 against ~100,000).
MAX_INFLATED_REGISTER_BODY = 16 * 1024 * 1024


@dataclass(slots=True)
class RegisterBrokerBody:
    """``RegisterBrokerBody``: the broker's topic configuration, its version and filter servers."""

    data_version: DataVersion = field(default_factory=DataVersion)
    topic_config_table: dict[str, TopicConfig] = field(default_factory=dict)
    filter_server_list: list[str] = field(default_factory=list)

    @classmethod
    def decode(cls, body: bytes, compressed: bool) -> RegisterBrokerBody:
        """
        :raises RemotingCommandError: the body is not what the header says it is
            (Java: "Failed to decode RegisterBrokerBody").
        """
        try:
            return cls._decode_compressed(body) if compressed else cls._decode_json(body)
        except (ValueError, TypeError, KeyError, AttributeError, ConstructError, zlib.error, RecursionError) as e:
            raise RemotingCommandError(f"Failed to decode RegisterBrokerBody: {e}") from None

    @classmethod
    def _decode_json(cls, body: bytes) -> RegisterBrokerBody:
        data = fastjson.loads(body)
        wrapper = data.get("topicConfigSerializeWrapper") or {}
        table = wrapper.get("topicConfigTable") or {}
        return cls(
            DataVersion.from_json(wrapper.get("dataVersion")),
            {str(name): TopicConfig.from_json(tc) for name, tc in table.items()},
            [str(s) for s in data.get("filterServerList") or []],
        )

    @classmethod
    def _decode_compressed(cls, body: bytes) -> RegisterBrokerBody:
        parsed = RegisterBrokerBodyCompressed.parse(_inflate(body, MAX_INFLATED_REGISTER_BODY))
        configs = [_decode_topic_line(line) for line in parsed.topic_configs]
        filters = fastjson.loads(parsed.filter_server_list) or []
        return cls(DataVersion.from_json(fastjson.loads(parsed.data_version)),
                   {tc.topic_name: tc for tc in configs}, [str(s) for s in filters])

    def encode(self, compressed: bool = False) -> bytes:
        """The body a broker sends (JSON, or the zlib form at Java's BEST_COMPRESSION)."""
        if not compressed:
            return fastjson.dumps({
                "filterServerList": list(self.filter_server_list),
                "topicConfigSerializeWrapper": {
                    "dataVersion": self.data_version.to_json(),
                    "topicConfigTable": {name: tc.to_json() for name, tc in self.topic_config_table.items()},
                },
            })
        raw = RegisterBrokerBodyCompressed.build(dict(
            data_version=fastjson.dumps(self.data_version.to_json()).decode(),
            topic_configs=[_encode_topic_line(tc) for tc in self.topic_config_table.values()],
            filter_server_list=fastjson.dumps(list(self.filter_server_list)).decode(),
            rest=b"",
        ))
        return zlib.compress(raw, 9)


def _encode_topic_line(tc: TopicConfig) -> str:
    """5.x ``TopicConfig.encode()``: the 4.9 line, then the attributes' JSON when there are any."""
    line = tc.encode_line()
    return f"{line} {fastjson.dumps(tc.attributes).decode()}" if tc.attributes else line


def _decode_topic_line(line: str) -> TopicConfig:
    """A line of either form; 5.x's sixth token is the attributes' JSON."""
    tc = TopicConfig.decode_line(line)
    parts = line.split(" ", 5)
    if len(parts) == 6 and parts[5].strip():
        attributes = fastjson.loads(parts[5])
        tc.attributes = {str(k): str(v) for k, v in dict(attributes or {}).items()}
    return tc


def _inflate(body: bytes, limit: int) -> bytes:
    """
    *body*'s zlib stream inflated, at most *limit* bytes of it: inflating one byte past
    the limit is enough to refuse, so memory and time stay bounded by *limit*.

    :raises ValueError: the stream inflates past *limit*.
    :raises zlib.error: the stream is damaged or truncated (as ``zlib.decompress``).
    """
    inflater = zlib.decompressobj()
    out = inflater.decompress(body, limit + 1)
    if len(out) > limit:
        raise ValueError(f"compressed body inflates past {limit} bytes")
    if not inflater.eof:
        raise zlib.error("Error -5 while decompressing data: incomplete or truncated stream")
    return out


def kv_table(table: dict[str, str]) -> bytes:
    """``KVTable`` JSON: ``{"table":{...}}``."""
    return fastjson.dumps({"table": table})


@dataclass(slots=True)
class TopicList:
    """
    ``TopicList``: the topic names of GET_ALL_TOPIC_LIST_FROM_NAMESERVER and the other
    listings. Java's set is a list here (its order is hash order; nobody relies on it);
    ``brokerAddr`` is set only by the system-topic listings.
    """

    topic_list: list[str] = field(default_factory=list)
    broker_addr: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.broker_addr is not None:
            out["brokerAddr"] = self.broker_addr
        out["topicList"] = list(self.topic_list)
        return out

    @classmethod
    def from_json(cls, data: Any) -> TopicList:
        data = data or {}
        addr = data.get("brokerAddr")
        return cls([str(t) for t in data.get("topicList") or []], None if addr is None else str(addr))


def topic_list(topics: Any, broker_addr: str | None = None) -> bytes:
    """``TopicList`` JSON: ``{"topicList":[...]}`` (``brokerAddr`` only when set)."""
    return fastjson.dumps(TopicList(list(topics), broker_addr).to_json())


@dataclass(slots=True)
class ClusterInfo:
    """
    ``ClusterInfo``: GET_BROKER_CLUSTER_INFO's body, every broker name's addresses and the
    broker names of each cluster (a Java set, a sorted list here).
    """

    broker_addr_table: dict[str, BrokerData] = field(default_factory=dict)
    cluster_addr_table: dict[str, list[str]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"brokerAddrTable": {name: b.to_json() for name, b in self.broker_addr_table.items()},
                "clusterAddrTable": {c: list(names) for c, names in self.cluster_addr_table.items()}}

    @classmethod
    def from_json(cls, data: Any) -> ClusterInfo:
        data = data or {}
        brokers = {str(k): BrokerData.from_json(v) for k, v in dict(data.get("brokerAddrTable") or {}).items()}
        clusters = {str(k): sorted(str(n) for n in v or [])
                    for k, v in dict(data.get("clusterAddrTable") or {}).items()}
        return cls(brokers, clusters)

    def retrieve_all_cluster_names(self) -> list[str]:
        """Java ``retrieveAllClusterNames``."""
        return sorted(self.cluster_addr_table)

    def broker_names(self, cluster: str) -> list[str]:
        """The broker names of *cluster* (empty for an unknown cluster)."""
        return list(self.cluster_addr_table.get(cluster, []))

    def retrieve_all_addr_by_cluster(self, cluster: str) -> list[str]:
        """Every address, masters and slaves, of *cluster*'s brokers (Java ``retrieveAllAddrByCluster``)."""
        addrs = []
        for name in self.broker_names(cluster):
            data = self.broker_addr_table.get(name)
            if data is not None:
                addrs += [data.broker_addrs[i] for i in sorted(data.broker_addrs)]
        return addrs

    def master_addrs(self, cluster: str) -> list[str]:
        """The master address of each broker of *cluster* (mqadmin's ``fetchMasterAddrByClusterName``)."""
        addrs = []
        for name in self.broker_names(cluster):
            data = self.broker_addr_table.get(name)
            if data is not None and MASTER_ID in data.broker_addrs:
                addrs.append(data.broker_addrs[MASTER_ID])
        return addrs
