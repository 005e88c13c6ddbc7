# -*- test-case-name: rocketmq_tx.broker.test.test_managers -*-
"""
``TopicConfigManager``: the broker's topics (``config/topics.json``), its system topics,
auto-creation through ``TBW102`` and the DataVersion the name servers compare. Java's
``TopicValidator`` rules for names live in :mod:`rocketmq_tx.common.validators` (re-exported
here); nothing is created under a name outside them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

from rocketmq_tx.broker.versionedtable import load_versioned_table, new_data_version
from rocketmq_tx.common.attribute import TOPIC_ATTRIBUTES, alter_current_attributes
from rocketmq_tx.common.route import PermName, TopicConfig
from rocketmq_tx.common.validators import TOPIC_MAX_LENGTH, is_store_name_safe, validate_group, validate_topic
from rocketmq_tx.store.configfile import ConfigFile, dumps
from rocketmq_tx.store.timer.hook import TIMER_TOPIC

__all__ = [
    "TopicConfigManager",
    "AUTO_CREATE_TOPIC_KEY_TOPIC",
    "SCHEDULE_TOPIC",
    "RETRY_GROUP_TOPIC_PREFIX",
    "DLQ_GROUP_TOPIC_PREFIX",
    "validate_topic",
    "validate_group",
    "TOPIC_MAX_LENGTH",
    "is_system_topic",
    "is_not_allowed_send_topic",
    "retry_topic",
    "dlq_topic",
]

AUTO_CREATE_TOPIC_KEY_TOPIC = "TBW102"
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
SCHEDULE_TOPIC_QUEUE_NUM = 18
BENCHMARK_TOPIC = "BenchmarkTest"
SELF_TEST_TOPIC = "SELF_TEST_TOPIC"
OFFSET_MOVED_EVENT = "OFFSET_MOVED_EVENT"
TRANS_HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
TRANS_OP_HALF_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
TRANS_CHECK_MAX_TIME_TOPIC = "TRANS_CHECK_MAX_TIME_TOPIC"
TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"
SYSTEM_TOPIC_PREFIX = "rmq_sys_"
RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"
DLQ_GROUP_TOPIC_PREFIX = "%DLQ%"
REPLY_TOPIC_POSTFIX = "REPLY_TOPIC"

_BASE_SYSTEM_TOPICS = frozenset({
    AUTO_CREATE_TOPIC_KEY_TOPIC, SCHEDULE_TOPIC, BENCHMARK_TOPIC, TRANS_HALF_TOPIC, TRACE_TOPIC,
    TRANS_OP_HALF_TOPIC, TRANS_CHECK_MAX_TIME_TOPIC, SELF_TEST_TOPIC, OFFSET_MOVED_EVENT,
})
_NOT_ALLOWED_SEND = frozenset({
    SCHEDULE_TOPIC, TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC, TRANS_CHECK_MAX_TIME_TOPIC, SELF_TEST_TOPIC,
    OFFSET_MOVED_EVENT,
})


def retry_topic(group: str) -> str:
    return RETRY_GROUP_TOPIC_PREFIX + group


def dlq_topic(group: str) -> str:
    return DLQ_GROUP_TOPIC_PREFIX + group


def is_not_allowed_send_topic(topic: str) -> bool:
    return topic in _NOT_ALLOWED_SEND


def is_system_topic(topic: str, extra: Iterable[str] = ()) -> bool:
    return topic in _BASE_SYSTEM_TOPICS or topic.startswith(SYSTEM_TOPIC_PREFIX) or topic in extra


class TopicConfigManager:
    """
    :param path: ``<storePathRootDir>/config/topics.json``.
    :param settings: the broker settings (for the system topics).
    :param on_created: called after a topic is created by a send, so the broker registers
        with the name servers at once (Java ``registerBrokerAll``).
    :param timer_topic: ``timerWheelEnable``: 5.x's ``rmq_sys_wheel_timer`` (one queue) is a
        system topic of the table, as Java 5.x adds it.
    :ivar on_dirty: called after every change instead of writing ``topics.json`` on the spot
        (the broker's :class:`~rocketmq_tx.broker.persister.MetadataPersister` writes it soon
        after, off the reactor); without it nothing is written until :meth:`persist`.
    """

    def __init__(self, path: str, settings, on_created: Callable[[TopicConfig], object] | None = None,
                 timer_topic: bool = False) -> None:
        self.file = ConfigFile(path)
        self.timer_topic = timer_topic
        self.settings = settings
        self.on_created = on_created
        self.on_dirty: Callable[[], object] | None = None
        self.data_version = new_data_version()
        self.topic_config_table: dict[str, TopicConfig] = {}
        self.system_topics: set[str] = set(_BASE_SYSTEM_TOPICS)
        self._add_system_topics()

    def _system(self, name: str, queues: int = 16, perm: int = PermName.PERM_READ | PermName.PERM_WRITE) -> None:
        self.system_topics.add(name)
        self.topic_config_table[name] = TopicConfig(name, queues, queues, perm)

    def _add_system_topics(self) -> None:
        s = self.settings
        rw = PermName.PERM_READ | PermName.PERM_WRITE
        self._system(SELF_TEST_TOPIC, 1)
        if s["autoCreateTopicEnable"]:
            self._system(AUTO_CREATE_TOPIC_KEY_TOPIC, s["defaultTopicQueueNums"], PermName.PERM_INHERIT | rw)
        self._system(BENCHMARK_TOPIC, 1024)
        self._system(s["brokerClusterName"], 16,
                     PermName.PERM_INHERIT | (rw if s["clusterTopicEnable"] else 0))
        self._system(s["brokerName"], 1, PermName.PERM_INHERIT | (rw if s["brokerTopicEnable"] else 0))
        self._system(OFFSET_MOVED_EVENT, 1)
        self._system(SCHEDULE_TOPIC, SCHEDULE_TOPIC_QUEUE_NUM)
        if s["traceTopicEnable"]:
            self._system(s["msgTraceTopicName"], 1)
        self._system(f"{s['brokerClusterName']}_{REPLY_TOPIC_POSTFIX}", 1)
        # 5.x: POP's revive log (PopAckConstants.buildClusterReviveTopic), reviveQueueNum queues.
        self._system(f"rmq_sys_REVIVE_LOG_{s['brokerClusterName']}",
                     s["reviveQueueNum"] if "reviveQueueNum" in s else 8)
        if self.timer_topic:
            self._system(TIMER_TOPIC, 1)

    # ------------------------------------------------------------------ persistence

    def load(self) -> bool:
        ok, version = load_versioned_table(self.file, "topicConfigTable", TopicConfig.from_json,
                                           self.topic_config_table)
        if version is not None:
            self.data_version = version
        return ok

    def encode(self) -> dict:
        """``TopicConfigSerializeWrapper``: what topics.json and GET_ALL_TOPIC_CONFIG hold."""
        return {"dataVersion": self.data_version.to_json(),
                "topicConfigTable": {name: tc.to_json() for name, tc in self.topic_config_table.items()}}

    def snapshot(self) -> Callable[[], str]:
        """
        The table as it is now, cheaply (a shallow copy, ~0.2 ms for 50,000 topics); the
        function returned encodes it, in any thread (~40 ms for 10,000 topics). Topic
        configs are replaced rather than changed, and a field changed in place is one atomic
        attribute write, marked dirty, so the next snapshot carries it anyway.
        """
        version = self.data_version.to_json()
        table = dict(self.topic_config_table)
        return lambda: dumps({"dataVersion": version,
                              "topicConfigTable": {name: tc.to_json() for name, tc in table.items()}})

    def persist(self) -> bool:
        """Write ``topics.json`` now, in the calling thread."""
        return self.file.persist(self.snapshot()())

    def mark_dirty(self) -> None:
        if self.on_dirty is not None:
            self.on_dirty()

    # ------------------------------------------------------------------ queries

    def select_topic_config(self, topic: str) -> TopicConfig | None:
        return self.topic_config_table.get(topic)

    def is_order_topic(self, topic: str) -> bool:
        tc = self.topic_config_table.get(topic)
        return tc is not None and tc.order

    def is_system_topic(self, topic: str) -> bool:
        return is_system_topic(topic, self.system_topics)

    # ------------------------------------------------------------------ changes

    def _created(self, tc: TopicConfig) -> TopicConfig:
        self.topic_config_table[tc.topic_name] = tc
        self.data_version.next_version()
        self.mark_dirty()
        if self.on_created is not None:
            self.on_created(tc)
        return tc

    def create_topic_in_send_message_method(self, topic: str, default_topic: str, client_default_queue_nums: int,
                                            topic_sys_flag: int = 0) -> TopicConfig | None:
        """A send to a missing topic: create it from *default_topic* if that one is inheritable."""
        tc = self.topic_config_table.get(topic)
        if tc is not None:
            return tc
        if not is_store_name_safe(topic):
            return None
        default = self.topic_config_table.get(default_topic)
        if default is None:
            return None
        if default_topic == AUTO_CREATE_TOPIC_KEY_TOPIC and not self.settings["autoCreateTopicEnable"]:
            default.perm = PermName.PERM_READ | PermName.PERM_WRITE
        if not PermName.is_inherited(default.perm):
            return None
        queues = max(0, min(client_default_queue_nums, default.write_queue_nums))
        return self._created(TopicConfig(topic, queues, queues, default.perm & ~PermName.PERM_INHERIT,
                                         default.topic_filter_type, topic_sys_flag))

    def create_topic_in_send_message_back_method(self, topic: str, queue_nums: int, perm: int,
                                                 topic_sys_flag: int = 0) -> TopicConfig | None:
        """
        Retry and DLQ topics are created on first use whatever ``autoCreateTopicEnable`` says;
        ``None`` for a name that is no legal directory name (a group no Java client accepts).
        """
        tc = self.topic_config_table.get(topic)
        if tc is not None:
            return tc
        if not is_store_name_safe(topic):
            return None
        return self._created(TopicConfig(topic, queue_nums, queue_nums, perm, topic_sys_flag=topic_sys_flag))

    def alter_attributes(self, tc: TopicConfig, requested: dict[str, str]) -> None:
        """
        Java 5.x ``updateSingleTopicConfigWithoutPersist``'s first half: *tc* (about to replace
        the stored config of its name) gets the stored attributes changed by *requested*
        (signed keys, :func:`~rocketmq_tx.common.attribute.parse_to_map`). A topic that never
        had attributes and gets none keeps ``None``, so its JSON stays 4.x-shaped.

        :raises ~rocketmq_tx.common.attribute.AttributeAlterError: Java's refusal.
        """
        old = self.topic_config_table.get(tc.topic_name)
        current = old.attributes if old is not None else None
        final = alter_current_attributes(old is None, TOPIC_ATTRIBUTES, current or {}, requested)
        tc.attributes = final if final or current is not None else None

    def update_topic_config(self, tc: TopicConfig) -> None:
        """UPDATE_AND_CREATE_TOPIC (the processor has validated the name; this is the second line)."""
        if not is_store_name_safe(tc.topic_name):
            raise ValueError(f"illegal topic name {tc.topic_name[:200]!r}")
        self.topic_config_table[tc.topic_name] = tc
        self.data_version.next_version()
        self.mark_dirty()

    def delete_topic_config(self, topic: str) -> bool:
        if self.topic_config_table.pop(topic, None) is None:
            return False
        self.data_version.next_version()
        self.mark_dirty()
        return True

    def update_order_topic_config(self, order_topics: dict[str, str]) -> None:
        """Mark topics listed in the name server's ORDER_TOPIC_CONFIG namespace as ordered."""
        changed = False
        for name, tc in self.topic_config_table.items():
            order = name in order_topics
            if tc.order != order:
                tc.order = order
                changed = True
        if changed:
            self.data_version.next_version()
            self.mark_dirty()


def default_path(store_root: str) -> str:
    return os.path.join(store_root, "config", "topics.json")
