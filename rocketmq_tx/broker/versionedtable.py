"""
The shape shared by ``topics.json`` and ``subscriptionGroup.json`` (Java's
``TopicConfigSerializeWrapper`` and ``SubscriptionGroupWrapper``): one named table and the
DataVersion that name servers and admin tools compare.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rocketmq_tx.common.route import DataVersion
from rocketmq_tx.store.configfile import ConfigFile

__all__ = ["new_data_version", "load_versioned_table"]


def new_data_version() -> DataVersion:
    """Java's ``new DataVersion()``: counter 0, timestamp now."""
    version = DataVersion()
    version.next_version()
    version.counter = 0
    return version


def load_versioned_table(file: ConfigFile, key: str, from_json: Callable[[Any], Any],
                         table: dict[str, Any]) -> tuple[bool, DataVersion | None]:
    """
    Merge the file's *key* table into *table*. Returns (readable, the stored DataVersion or
    ``None``); a missing file is readable and empty.
    """
    data = file.load()
    if data is None:
        return True, None
    try:
        for name, value in dict(data.get(key) or {}).items():
            table[str(name)] = from_json(value)
        version = DataVersion.from_json(data["dataVersion"]) if data.get("dataVersion") else None
    except (KeyError, TypeError, ValueError, AttributeError):
        return False, None
    return True, version
