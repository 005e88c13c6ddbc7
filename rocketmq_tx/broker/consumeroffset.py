# -*- test-case-name: rocketmq_tx.broker.test.test_managers -*-
"""
``ConsumerOffsetManager``: committed consumer offsets, ``topic@group`` -> queue id ->
offset, persisted to ``config/consumerOffset.json`` in Java's shape.
"""

from __future__ import annotations

from collections.abc import Callable

from rocketmq_tx.store.configfile import ConfigFile, dumps, int_keys

__all__ = ["ConsumerOffsetManager", "TOPIC_GROUP_SEPARATOR"]

TOPIC_GROUP_SEPARATOR = "@"


class ConsumerOffsetManager:
    """:param path: ``<storePathRootDir>/config/consumerOffset.json``."""

    def __init__(self, path: str) -> None:
        self.file = ConfigFile(path)
        self.offset_table: dict[str, dict[int, int]] = {}

    def load(self) -> bool:
        data = self.file.load()
        if data is None:
            return True
        try:
            table = dict(data.get("offsetTable") or {})
            self.offset_table = {str(k): {q: int(o) for q, o in int_keys(dict(v)).items()} for k, v in table.items()}
        except (TypeError, ValueError, AttributeError):
            return False
        return True

    def encode(self) -> dict:
        return {"offsetTable": {k: dict(v) for k, v in self.offset_table.items()}}

    def snapshot(self) -> Callable[[], str]:
        """
        The table as it is now, cheaply: a shallow copy here; the function returned copies
        each queue map and encodes, in any thread. ``dict(d)`` of a map with int keys and
        values runs in C without releasing the GIL, so it is an atomic copy even while the
        reactor commits offsets into it.
        """
        table = dict(self.offset_table)
        return lambda: dumps({"offsetTable": {k: dict(v) for k, v in table.items()}})

    def persist(self) -> bool:
        """Write ``consumerOffset.json`` now, in the calling thread."""
        return self.file.persist(self.snapshot()())

    def commit_offset(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        self.offset_table.setdefault(f"{topic}{TOPIC_GROUP_SEPARATOR}{group}", {})[queue_id] = offset

    def query_offset(self, group: str, topic: str, queue_id: int) -> int:
        """The committed offset, or -1."""
        return self.offset_table.get(f"{topic}{TOPIC_GROUP_SEPARATOR}{group}", {}).get(queue_id, -1)

    def query_offsets(self, group: str, topic: str) -> dict[int, int]:
        return dict(self.offset_table.get(f"{topic}{TOPIC_GROUP_SEPARATOR}{group}", {}))

    def _split(self):
        for key in list(self.offset_table):
            topic, sep, group = key.rpartition(TOPIC_GROUP_SEPARATOR)
            if sep:
                yield key, topic, group

    def which_topic_by_consumer(self, group: str) -> set[str]:
        return {topic for _, topic, g in self._split() if g == group}

    def which_group_by_topic(self, topic: str) -> set[str]:
        return {group for _, t, group in self._split() if t == topic}

    def clone_offset(self, src_group: str, dest_group: str, topic: str) -> None:
        offsets = self.offset_table.get(f"{topic}{TOPIC_GROUP_SEPARATOR}{src_group}")
        if offsets is not None:
            self.offset_table[f"{topic}{TOPIC_GROUP_SEPARATOR}{dest_group}"] = dict(offsets)

    def remove_offset(self, group: str) -> None:
        for key, _, g in self._split():
            if g == group:
                del self.offset_table[key]

    def remove_topic(self, topic: str) -> None:
        for key, t, _ in self._split():
            if t == topic:
                del self.offset_table[key]

    def query_min_offset_in_all_group(self, topic: str, filter_groups: str | None = None) -> dict[int, int]:
        """QUERY_CORRECTION_OFFSET: per queue, the smallest offset over the groups not filtered out."""
        skip = {g for g in (filter_groups or "").split(",") if g}
        result: dict[int, int] = {}
        for key, t, group in self._split():
            if t != topic or group in skip:
                continue
            for qid, off in self.offset_table[key].items():
                result[qid] = min(result.get(qid, off), off)
        return result
