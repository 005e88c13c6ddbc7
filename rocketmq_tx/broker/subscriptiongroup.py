# -*- test-case-name: rocketmq_tx.broker.test.test_managers -*-
"""
``SubscriptionGroupManager``: consumer-group settings (``config/subscriptionGroup.json``),
created on first use when ``autoCreateSubscriptionGroup`` (and always for system groups).
"""

from __future__ import annotations

from collections.abc import Callable

from rocketmq_tx.broker.versionedtable import load_versioned_table, new_data_version
from rocketmq_tx.common.attribute import SUBSCRIPTION_GROUP_ATTRIBUTES, alter_current_attributes
from rocketmq_tx.common.subscription import SubscriptionGroupConfig
from rocketmq_tx.common.validators import validate_group
from rocketmq_tx.store.configfile import ConfigFile, dumps

__all__ = ["SubscriptionGroupManager", "is_sys_consumer_group"]

CID_RMQ_SYS_PREFIX = "CID_RMQ_SYS_"
# Java's SubscriptionGroupManager.init: groups every broker has. All of them keep the
# default consumeBroadcastEnable=true (Java sets it explicitly only on the ONS ones).
_BUILT_IN = (
    ("TOOLS_CONSUMER", True), ("FILTERSRV_CONSUMER", True), ("SELF_TEST_C_GROUP", True),
    ("CID_ONS-HTTP-PROXY", True), ("CID_ONSAPI_PULL", True), ("CID_ONSAPI_PERMISSION", True),
    ("CID_ONSAPI_OWNER", True),
)


def is_sys_consumer_group(group: str) -> bool:
    return group.startswith(CID_RMQ_SYS_PREFIX)


class SubscriptionGroupManager:
    """
    :param path: ``<storePathRootDir>/config/subscriptionGroup.json``.
    :ivar on_dirty: called after every change instead of writing the file on the spot (the
        broker's :class:`~rocketmq_tx.broker.persister.MetadataPersister` writes it soon after,
        off the reactor); without it nothing is written until :meth:`persist`.
    """

    def __init__(self, path: str, auto_create: bool = True) -> None:
        self.file = ConfigFile(path)
        self.auto_create = auto_create
        self.on_dirty: Callable[[], object] | None = None
        self.data_version = new_data_version()
        self.subscription_group_table: dict[str, SubscriptionGroupConfig] = {}
        for name, broadcast in _BUILT_IN:
            self.subscription_group_table[name] = SubscriptionGroupConfig(name, consume_broadcast_enable=broadcast)

    def load(self) -> bool:
        ok, version = load_versioned_table(self.file, "subscriptionGroupTable", SubscriptionGroupConfig.from_json,
                                           self.subscription_group_table)
        if version is not None:
            self.data_version = version
        return ok

    def encode(self) -> dict:
        """``SubscriptionGroupWrapper``: subscriptionGroup.json and GET_ALL_SUBSCRIPTIONGROUP_CONFIG."""
        return {"dataVersion": self.data_version.to_json(),
                "subscriptionGroupTable": {k: v.to_json() for k, v in self.subscription_group_table.items()}}

    def snapshot(self) -> Callable[[], str]:
        """
        The table as it is now, cheaply (a shallow copy); the function returned encodes it in
        any thread. A config changed in place while that runs is marked dirty by its change,
        so the next write carries it whole.
        """
        version = self.data_version.to_json()
        table = dict(self.subscription_group_table)
        return lambda: dumps({"dataVersion": version,
                              "subscriptionGroupTable": {k: v.to_json() for k, v in table.items()}})

    def persist(self) -> bool:
        """Write the file now, in the calling thread."""
        return self.file.persist(self.snapshot()())

    def mark_dirty(self) -> None:
        if self.on_dirty is not None:
            self.on_dirty()

    def find_subscription_group_config(self, group: str) -> SubscriptionGroupConfig | None:
        """
        The group's settings, created with defaults if allowed (Java's auto-create rule).
        A name a Java client would refuse is never created (5.x: ``None``, so the caller
        answers SUBSCRIPTION_GROUP_NOT_EXIST): it would become ``%RETRY%<group>``, a directory.
        """
        config = self.subscription_group_table.get(group)
        if config is None and (self.auto_create or is_sys_consumer_group(group)):
            if validate_group(group) is not None:
                return None
            config = self.subscription_group_table[group] = SubscriptionGroupConfig(group)
            self.data_version.next_version()
            self.mark_dirty()
        return config

    def alter_attributes(self, config: SubscriptionGroupConfig) -> None:
        """
        Java 5.x ``updateSubscriptionGroupConfigWithoutPersist``'s first half: *config*'s
        ``attributes`` (a modification, signed keys) applied to the stored group's. A group
        that never had attributes and gets none keeps ``None`` (its JSON stays 4.x-shaped).

        :raises ~rocketmq_tx.common.attribute.AttributeAlterError: Java's refusal.
        """
        old = self.subscription_group_table.get(config.group_name)
        current = old.attributes if old is not None else None
        final = alter_current_attributes(old is None, SUBSCRIPTION_GROUP_ATTRIBUTES, current or {},
                                         config.attributes or {})
        config.attributes = final if final or current is not None or config.attributes is not None else None

    def update_subscription_group_config(self, config: SubscriptionGroupConfig) -> None:
        self.subscription_group_table[config.group_name] = config
        self.data_version.next_version()
        self.mark_dirty()

    def disable_consume(self, group: str) -> None:
        config = self.subscription_group_table.get(group)
        if config is not None:
            config.consume_enable = False
            self.data_version.next_version()

    def delete_subscription_group_config(self, group: str) -> bool:
        if self.subscription_group_table.pop(group, None) is None:
            return False
        self.data_version.next_version()
        self.mark_dirty()
        return True
