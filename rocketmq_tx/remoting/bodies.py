# -*- test-case-name: rocketmq_tx.remoting.test.test_bodies -*-
"""
Request and response bodies that are more than one JSON value: REGISTER_BROKER's body
in both its forms, and the JSON bodies the name server writes.

Registration happens every 30 s per broker, not per message, so the compressed form is
decoded with its construct declaration directly.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any

from construct import ConstructError

from rocketmq_tx.common.route import DataVersion, TopicConfig
from rocketmq_tx.common import fastjson
from rocketmq_tx.remoting.errors import RemotingCommandError
from rocketmq_tx.remoting.formats import RegisterBrokerBodyCompressed

__all__ = ["RegisterBrokerBody", "kv_table", "topic_list"]


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
        parsed = RegisterBrokerBodyCompressed.parse(zlib.decompress(body))
        configs = [TopicConfig.decode_line(line) for line in parsed.topic_configs]
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
            topic_configs=[tc.encode_line() for tc in self.topic_config_table.values()],
            filter_server_list=fastjson.dumps(list(self.filter_server_list)).decode(),
            rest=b"",
        ))
        return zlib.compress(raw, 9)


def kv_table(table: dict[str, str]) -> bytes:
    """``KVTable`` JSON: ``{"table":{...}}``."""
    return fastjson.dumps({"table": table})


def topic_list(topics: Any, broker_addr: str | None = None) -> bytes:
    """``TopicList`` JSON: ``{"topicList":[...]}`` (``brokerAddr`` only when set)."""
    out: dict[str, Any] = {}
    if broker_addr is not None:
        out["brokerAddr"] = broker_addr
    out["topicList"] = list(topics)
    return fastjson.dumps(out)
