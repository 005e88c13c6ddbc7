# -*- test-case-name: rocketmq_tx.namesrv.test.test_processors -*-
"""
:class:`KVConfigManager`: namespaced key-value configuration, persisted like Java's to
``kvConfigPath`` as ``{"configTable":{"<namespace>":{"<key>":"<value>"}}}``.

Writes go to a temporary file renamed over the old one, so a crash mid-write leaves the
previous file intact (Java writes a ``.tmp`` and a ``.bak`` the same way).
"""

from __future__ import annotations

import os
from pathlib import Path

from twisted.logger import Logger

from rocketmq_tx.common import fastjson

__all__ = ["KVConfigManager", "NAMESPACE_ORDER_TOPIC_CONFIG"]

#: ``NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG``.
NAMESPACE_ORDER_TOPIC_CONFIG = "ORDER_TOPIC_CONFIG"

log = Logger()


class KVConfigManager:
    """:param path: the ``kvConfigPath`` file (created on first write)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.config_table: dict[str, dict[str, str]] = {}

    def load(self) -> None:
        """
        Read the file if it exists.

        :raises ValueError: the file exists but is not the expected JSON (refusing to
            start beats silently dropping an operator's configuration).
        """
        if not self.path.exists():
            return
        data = fastjson.loads(self.path.read_bytes())
        table = data.get("configTable") if isinstance(data, dict) else None
        if not isinstance(table, dict):
            raise ValueError(f"{self.path}: no configTable object")
        self.config_table = {str(ns): {str(k): str(v) for k, v in dict(kv or {}).items()} for ns, kv in table.items()}
        log.info("loaded {count} KV namespaces from {path}", count=len(self.config_table), path=str(self.path))

    def persist(self) -> None:
        """Write the table atomically."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "wb") as f:
            f.write(fastjson.dumps({"configTable": self.config_table}))
            f.flush()
            os.fsync(f.fileno())
        if self.path.exists():
            os.replace(self.path, self.path.with_name(self.path.name + ".bak"))
        os.replace(tmp, self.path)

    def put(self, namespace: str, key: str, value: str) -> None:
        self.config_table.setdefault(namespace, {})[key] = value
        self._persist_logged()

    def get(self, namespace: str, key: str) -> str | None:
        return self.config_table.get(namespace, {}).get(key)

    def delete(self, namespace: str, key: str) -> None:
        table = self.config_table.get(namespace)
        if table is not None and table.pop(key, None) is not None:
            self._persist_logged()

    def list_namespace(self, namespace: str) -> dict[str, str] | None:
        """The namespace's table, or ``None`` when the namespace does not exist."""
        table = self.config_table.get(namespace)
        return dict(table) if table is not None else None

    def _persist_logged(self) -> None:
        try:
            self.persist()
        except OSError as e:
            # Java logs and carries on with the in-memory table; so do we.
            log.error("cannot persist KV config to {path}: {error}", path=str(self.path), error=e)
