"""The broker's tables: topics, subscription groups, consumer offsets, clients and queue locks."""

from __future__ import annotations

import json
import os

from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.broker.clientmanager import ClientChannelInfo, ConsumerManager, ProducerManager
from rocketmq_tx.broker.config import BrokerSettings
from rocketmq_tx.broker.consumeroffset import ConsumerOffsetManager
from rocketmq_tx.broker.rebalancelock import RebalanceLockManager
from rocketmq_tx.broker.subscriptiongroup import SubscriptionGroupManager
from rocketmq_tx.broker.topicconfig import (
    TopicConfigManager,
    is_not_allowed_send_topic,
    is_system_topic,
    validate_topic,
)
from rocketmq_tx.common.message import MessageQueue
from rocketmq_tx.common.route import PermName, TopicConfig
from rocketmq_tx.remoting.api import SubscriptionData

RW = PermName.PERM_READ | PermName.PERM_WRITE
INHERIT = PermName.PERM_INHERIT


def settings(**values) -> BrokerSettings:  # type: ignore[no-untyped-def]
    base = {"brokerName": "broker-a", "brokerClusterName": "DefaultCluster"}
    base.update(values)
    return BrokerSettings(base)


class TopicConfigManagerTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.path = os.path.join(self.mktemp(), "config", "topics.json")
        self.created: list[TopicConfig] = []
        #: the data version at each "dirty" mark (the broker's persister writes then)
        self.dirty: list[int] = []

    def manager(self, **values) -> TopicConfigManager:  # type: ignore[no-untyped-def]
        m = TopicConfigManager(self.path, settings(**values), on_created=self.created.append)
        self.assertTrue(m.load())
        m.on_dirty = lambda: self.dirty.append(m.data_version.counter)
        return m

    def test_system_topics_as_java_creates_them(self) -> None:
        """Java 4.9.8 TopicConfigManager's constructor: names, queue counts, permissions; 5.x's revive topic."""
        table = self.manager().topic_config_table
        summary = {name: (tc.read_queue_nums, tc.write_queue_nums, tc.perm) for name, tc in table.items()}
        self.assertEqual(summary, {
            "SELF_TEST_TOPIC": (1, 1, RW),
            "TBW102": (8, 8, INHERIT | RW),
            "BenchmarkTest": (1024, 1024, RW),
            "DefaultCluster": (16, 16, INHERIT | RW),
            "broker-a": (1, 1, INHERIT | RW),
            "OFFSET_MOVED_EVENT": (1, 1, RW),
            "SCHEDULE_TOPIC_XXXX": (18, 18, RW),
            "DefaultCluster_REPLY_TOPIC": (1, 1, RW),
            "rmq_sys_REVIVE_LOG_DefaultCluster": (8, 8, RW),
        })

    def test_system_topics_follow_settings(self) -> None:
        """No TBW102 without auto-create; cluster/broker topics without RW when disabled; trace topic."""
        m = self.manager(autoCreateTopicEnable=False, clusterTopicEnable=False, brokerTopicEnable=False,
                         traceTopicEnable=True, msgTraceTopicName="MyTrace", defaultTopicQueueNums=4)
        table = m.topic_config_table
        self.assertNotIn("TBW102", table)
        self.assertEqual(table["DefaultCluster"].perm, INHERIT)
        self.assertEqual(table["broker-a"].perm, INHERIT)
        self.assertEqual((table["MyTrace"].read_queue_nums, table["MyTrace"].perm), (1, RW))
        self.assertEqual(self.manager(defaultTopicQueueNums=4).topic_config_table["TBW102"].write_queue_nums, 4)

    def test_trace_topic(self) -> None:
        """traceTopicEnable: msgTraceTopicName (default RMQ_SYS_TRACE_TOPIC) is a system topic that
        clients may send to (their trace producers do), created only when enabled; a persisted
        config of it (say auto-created from TBW102 before trace was enabled) wins, as Java's
        load() after its constructor."""
        self.assertNotIn("RMQ_SYS_TRACE_TOPIC", self.manager().topic_config_table)
        m = self.manager(traceTopicEnable=True)
        tc = m.topic_config_table["RMQ_SYS_TRACE_TOPIC"]
        self.assertEqual((tc.read_queue_nums, tc.write_queue_nums, tc.perm, tc.topic_sys_flag), (1, 1, RW, 0))
        self.assertFalse(is_not_allowed_send_topic("RMQ_SYS_TRACE_TOPIC"))
        custom = self.manager(traceTopicEnable=True, msgTraceTopicName="MyTrace")
        self.assertTrue(custom.is_system_topic("MyTrace"))
        self.assertIn("MyTrace", custom.system_topics)
        self.assertFalse(is_not_allowed_send_topic("MyTrace"))
        m.topic_config_table["RMQ_SYS_TRACE_TOPIC"] = TopicConfig("RMQ_SYS_TRACE_TOPIC", 4, 4, RW)
        self.assertTrue(m.persist())
        reloaded = self.manager(traceTopicEnable=True).topic_config_table["RMQ_SYS_TRACE_TOPIC"]
        self.assertEqual((reloaded.read_queue_nums, reloaded.write_queue_nums), (4, 4))

    def test_system_topic_predicates(self) -> None:
        m = self.manager()
        for topic in ("TBW102", "SCHEDULE_TOPIC_XXXX", "rmq_sys_anything", "DefaultCluster", "broker-a"):
            self.assertTrue(m.is_system_topic(topic), topic)
        self.assertFalse(m.is_system_topic("TopicTest"))
        self.assertFalse(is_system_topic("DefaultCluster"))  # only this broker's table knows its cluster name
        for topic in ("SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC", "OFFSET_MOVED_EVENT", "SELF_TEST_TOPIC"):
            self.assertTrue(is_not_allowed_send_topic(topic), topic)
        self.assertFalse(is_not_allowed_send_topic("TBW102"))

    def test_auto_create_via_tbw102(self) -> None:
        """min(client's queue count, TBW102's), TBW102's permission without INHERIT, persisted, announced."""
        m = self.manager()
        before = m.data_version.counter
        tc = m.create_topic_in_send_message_method("NewTopic", "TBW102", 4)
        self.assertEqual((tc.read_queue_nums, tc.write_queue_nums, tc.perm, tc.topic_filter_type),
                         (4, 4, RW, "SINGLE_TAG"))
        self.assertEqual(self.created, [tc])
        self.assertEqual(m.data_version.counter, before + 1)
        # asking again returns the same topic, nothing new
        self.assertIs(m.create_topic_in_send_message_method("NewTopic", "TBW102", 2), tc)
        self.assertEqual(len(self.created), 1)
        # more queues than TBW102 has: TBW102's count
        self.assertEqual(m.create_topic_in_send_message_method("Wide", "TBW102", 100).write_queue_nums, 8)
        # a negative request is clamped to 0 as Java does
        self.assertEqual(m.create_topic_in_send_message_method("Neg", "TBW102", -1).write_queue_nums, 0)
        # each creation marks the file dirty; nothing is written on the request path
        self.assertEqual(self.dirty, [1, 2, 3])
        self.assertFalse(os.path.exists(self.path))
        self.assertTrue(m.persist())
        saved = json.load(open(self.path))
        self.assertEqual(saved["topicConfigTable"]["NewTopic"]["perm"], RW)

    def test_auto_create_needs_inheritable_default(self) -> None:
        m = self.manager()
        self.assertIsNone(m.create_topic_in_send_message_method("T", "NoSuchDefault", 4))
        self.assertIsNone(m.create_topic_in_send_message_method("T", "SELF_TEST_TOPIC", 4))  # RW, no INHERIT
        tc = m.create_topic_in_send_message_method("T", "DefaultCluster", 4)  # the cluster topic inherits
        self.assertEqual((tc.write_queue_nums, tc.perm), (4, RW))
        self.assertEqual(self.created, [tc])

    def test_auto_create_disabled(self) -> None:
        """autoCreateTopicEnable=false: no TBW102, so a send's topic is not created."""
        m = self.manager(autoCreateTopicEnable=False)
        self.assertIsNone(m.create_topic_in_send_message_method("T", "TBW102", 4))
        self.assertIsNone(m.select_topic_config("T"))
        self.assertEqual(self.created, [])

    def test_auto_create_disabled_with_tbw102_left_on_disk(self) -> None:
        """A topics.json still holding TBW102: Java strips its INHERIT bit, so nothing is created."""
        self.manager().persist()
        m = self.manager(autoCreateTopicEnable=False)
        self.assertIn("TBW102", m.topic_config_table)
        self.assertIsNone(m.create_topic_in_send_message_method("T", "TBW102", 4))
        self.assertEqual(m.topic_config_table["TBW102"].perm, RW)

    def test_retry_and_dlq_created_whatever_auto_create_says(self) -> None:
        m = self.manager(autoCreateTopicEnable=False)
        retry = m.create_topic_in_send_message_back_method("%RETRY%g", 1, RW)
        dlq = m.create_topic_in_send_message_back_method("%DLQ%g", 1, RW, 0)
        self.assertEqual([(t.topic_name, t.read_queue_nums, t.write_queue_nums, t.perm) for t in (retry, dlq)],
                         [("%RETRY%g", 1, 1, RW), ("%DLQ%g", 1, 1, RW)])
        self.assertIs(m.create_topic_in_send_message_back_method("%RETRY%g", 5, 2), retry)
        self.assertEqual(self.created, [retry, dlq])

    def test_persist_and_reload(self) -> None:
        """topics.json in Java's shape; a new manager reads the topics and the data version back."""
        m = self.manager()
        m.create_topic_in_send_message_method("T1", "TBW102", 4)
        m.update_topic_config(TopicConfig("T2", 2, 3, PermName.PERM_READ, order=True))
        version = m.data_version.to_json()
        self.assertTrue(m.persist())
        raw = json.load(open(self.path))
        self.assertEqual(set(raw), {"dataVersion", "topicConfigTable"})
        self.assertEqual(raw["topicConfigTable"]["T2"]["readQueueNums"], 2)
        self.assertEqual(raw["topicConfigTable"]["T2"]["topicName"], "T2")
        again = self.manager()
        self.assertEqual(again.topic_config_table["T1"], m.topic_config_table["T1"])
        t2 = again.topic_config_table["T2"]
        self.assertEqual((t2.read_queue_nums, t2.write_queue_nums, t2.perm, t2.order), (2, 3, PermName.PERM_READ, True))
        self.assertEqual(again.data_version.to_json(), version)

    def test_unreadable_file_fails_load(self) -> None:
        os.makedirs(os.path.dirname(self.path))
        with open(self.path, "w") as f:
            f.write('{"topicConfigTable":{"T":{"readQueueNums":"many"}}}')
        m = TopicConfigManager(self.path, settings())
        self.assertFalse(m.load())

    def test_data_version_bumps(self) -> None:
        """Every change bumps the counter: creation, update, delete, order flags."""
        m = self.manager()
        counts = [m.data_version.counter]
        m.create_topic_in_send_message_method("T", "TBW102", 4)
        counts.append(m.data_version.counter)
        m.update_topic_config(TopicConfig("T", 2, 2))
        counts.append(m.data_version.counter)
        m.update_order_topic_config({"T": "broker-a:2"})
        counts.append(m.data_version.counter)
        self.assertTrue(m.is_order_topic("T"))
        m.update_order_topic_config({"T": "broker-a:2"})  # no change, no bump
        counts.append(m.data_version.counter)
        self.assertTrue(m.delete_topic_config("T"))
        counts.append(m.data_version.counter)
        self.assertFalse(m.delete_topic_config("T"))
        counts.append(m.data_version.counter)
        self.assertEqual(counts, [0, 1, 2, 3, 3, 4, 4])
        self.assertEqual(self.dirty, [1, 2, 3, 4])  # each change marks the file dirty once

    def test_validate_topic_remarks(self) -> None:
        """Java TopicValidator.validateTopic's remarks."""
        self.assertIsNone(validate_topic("Topic-1_%|a"))
        self.assertEqual(validate_topic(""), "The specified topic is blank.")
        self.assertEqual(validate_topic("  "), "The specified topic is blank.")
        self.assertEqual(validate_topic(None), "The specified topic is blank.")
        self.assertEqual(validate_topic("bad topic"),
                         "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$")
        self.assertEqual(validate_topic("t\u00e9"),
                         "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$")
        self.assertIsNone(validate_topic("a" * 127))
        self.assertEqual(validate_topic("a" * 128), "The specified topic is longer than topic max length.")


class SubscriptionGroupManagerTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.path = os.path.join(self.mktemp(), "config", "subscriptionGroup.json")

    def test_built_in_groups(self) -> None:
        table = SubscriptionGroupManager(self.path).subscription_group_table
        self.assertEqual({name: cfg.consume_broadcast_enable for name, cfg in table.items()}, {
            "TOOLS_CONSUMER": True, "FILTERSRV_CONSUMER": True, "SELF_TEST_C_GROUP": True,
            "CID_ONS-HTTP-PROXY": True, "CID_ONSAPI_PULL": True, "CID_ONSAPI_PERMISSION": True,
            "CID_ONSAPI_OWNER": True})

    def test_auto_create(self) -> None:
        """A new group gets Java's defaults, a version bump and a write to disk."""
        m = SubscriptionGroupManager(self.path, auto_create=True)
        dirty: list[int] = []
        m.on_dirty = lambda: dirty.append(m.data_version.counter)
        before = m.data_version.counter
        cfg = m.find_subscription_group_config("g1")
        self.assertEqual((cfg.group_name, cfg.consume_enable, cfg.retry_queue_nums, cfg.retry_max_times,
                          cfg.broker_id, cfg.which_broker_when_consume_slowly),
                         ("g1", True, 1, 16, 0, 1))
        self.assertIs(m.find_subscription_group_config("g1"), cfg)
        self.assertEqual(m.data_version.counter, before + 1)
        self.assertEqual(dirty, [before + 1])
        self.assertFalse(os.path.exists(self.path))  # written later, off the request path
        self.assertTrue(m.persist())
        self.assertIn("g1", json.load(open(self.path))["subscriptionGroupTable"])

    def test_auto_create_off(self) -> None:
        """Unknown groups are None, except CID_RMQ_SYS_* groups, which are always created."""
        m = SubscriptionGroupManager(self.path, auto_create=False)
        self.assertIsNone(m.find_subscription_group_config("g1"))
        self.assertNotIn("g1", m.subscription_group_table)
        self.assertFalse(os.path.exists(self.path))
        self.assertEqual(m.find_subscription_group_config("CID_RMQ_SYS_TRANS").group_name, "CID_RMQ_SYS_TRANS")
        self.assertIsNotNone(m.find_subscription_group_config("TOOLS_CONSUMER"))

    def test_persist_and_reload(self) -> None:
        m = SubscriptionGroupManager(self.path)
        cfg = m.find_subscription_group_config("g1")
        cfg.retry_max_times = 3
        cfg.consume_broadcast_enable = False
        m.update_subscription_group_config(cfg)
        m.disable_consume("g1")
        self.assertTrue(m.persist())
        raw = json.load(open(self.path))
        self.assertEqual(set(raw), {"dataVersion", "subscriptionGroupTable"})
        self.assertEqual(raw["subscriptionGroupTable"]["g1"]["retryMaxTimes"], 3)
        again = SubscriptionGroupManager(self.path, auto_create=False)
        self.assertTrue(again.load())
        g1 = again.subscription_group_table["g1"]
        self.assertEqual((g1.retry_max_times, g1.consume_broadcast_enable, g1.consume_enable), (3, False, False))
        self.assertEqual(again.data_version.to_json(), m.data_version.to_json())
        self.assertTrue(again.delete_subscription_group_config("g1"))
        self.assertFalse(again.delete_subscription_group_config("g1"))


class ConsumerOffsetManagerTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.path = os.path.join(self.mktemp(), "config", "consumerOffset.json")
        self.m = ConsumerOffsetManager(self.path)
        self.assertTrue(self.m.load())

    def test_commit_and_query(self) -> None:
        m = self.m
        self.assertEqual(m.query_offset("g", "t", 0), -1)
        m.commit_offset("g", "t", 0, 5)
        m.commit_offset("g", "t", 1, 7)
        m.commit_offset("g", "t", 0, 6)
        self.assertEqual((m.query_offset("g", "t", 0), m.query_offset("g", "t", 1), m.query_offset("g", "t", 2)),
                         (6, 7, -1))
        self.assertEqual(m.query_offset("other", "t", 0), -1)
        self.assertEqual(m.query_offsets("g", "t"), {0: 6, 1: 7})
        self.assertEqual(m.offset_table, {"t@g": {0: 6, 1: 7}})

    def test_persist_shape_and_reload(self) -> None:
        """``{"offsetTable":{"topic@group":{queue:offset}}}``; fastjson's unquoted keys read back too."""
        self.m.commit_offset("g", "t", 0, 5)
        self.m.commit_offset("g", "%RETRY%g", 0, 1)
        self.assertTrue(self.m.persist())
        self.assertEqual(json.load(open(self.path)), {"offsetTable": {"t@g": {"0": 5}, "%RETRY%g@g": {"0": 1}}})
        again = ConsumerOffsetManager(self.path)
        self.assertTrue(again.load())
        self.assertEqual(again.offset_table, {"t@g": {0: 5}, "%RETRY%g@g": {0: 1}})
        # what a Java broker writes: PrettyFormat, integer keys without quotes
        with open(self.path, "w") as f:
            f.write('{\n\t"offsetTable":{\n\t\t"t@g":{0:5,1:3\n\t\t},\n\t\t"u@h":{}\n\t}\n}')
        java = ConsumerOffsetManager(self.path)
        self.assertTrue(java.load())
        self.assertEqual(java.offset_table, {"t@g": {0: 5, 1: 3}, "u@h": {}})
        self.assertEqual(java.query_offset("g", "t", 1), 3)

    def test_missing_and_bad_files(self) -> None:
        self.assertEqual(self.m.offset_table, {})
        os.makedirs(os.path.dirname(self.path))
        with open(self.path, "w") as f:
            f.write('{"offsetTable":{"t@g":{"zero":5}}}')
        self.assertFalse(ConsumerOffsetManager(self.path).load())

    def test_which_topic_and_group(self) -> None:
        m = self.m
        m.commit_offset("g1", "t1", 0, 1)
        m.commit_offset("g1", "t2", 0, 1)
        m.commit_offset("g2", "t1", 0, 1)
        m.commit_offset("g@x", "t3", 0, 1)  # a group with '@' is not split on it
        self.assertEqual(m.which_topic_by_consumer("g1"), {"t1", "t2"})
        self.assertEqual(m.which_group_by_topic("t1"), {"g1", "g2"})
        self.assertEqual(m.which_topic_by_consumer("nobody"), set())
        m.remove_offset("g1")
        self.assertEqual(set(m.offset_table), {"t1@g2", "t3@g@x"})
        m.remove_topic("t1")
        self.assertEqual(set(m.offset_table), {"t3@g@x"})

    def test_clone(self) -> None:
        m = self.m
        m.commit_offset("src", "t", 0, 5)
        m.clone_offset("src", "dst", "t")
        m.clone_offset("absent", "dst2", "t")
        self.assertEqual(m.query_offsets("dst", "t"), {0: 5})
        m.commit_offset("src", "t", 0, 9)  # a copy, not shared
        self.assertEqual(m.query_offset("dst", "t", 0), 5)
        self.assertNotIn("t@dst2", m.offset_table)

    def test_min_offset_in_all_groups(self) -> None:
        m = self.m
        m.commit_offset("a", "t", 0, 5)
        m.commit_offset("a", "t", 1, 2)
        m.commit_offset("b", "t", 0, 3)
        m.commit_offset("c", "t", 0, 1)
        m.commit_offset("c", "other", 0, 0)
        self.assertEqual(m.query_min_offset_in_all_group("t"), {0: 1, 1: 2})
        self.assertEqual(m.query_min_offset_in_all_group("t", "c"), {0: 3, 1: 2})
        self.assertEqual(m.query_min_offset_in_all_group("t", "b,c"), {0: 5, 1: 2})
        self.assertEqual(m.query_min_offset_in_all_group("none"), {})
        self.assertIn("t@c", m.offset_table)  # filtering does not remove anything


class Channel:
    def __init__(self, peer: str) -> None:
        self.peer = peer
        self.closed = False


class ClientManagerTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.clock = Clock()
        self.clock.advance(1_700_000_000)
        self.events: list[tuple[str, str, object]] = []
        self.consumers = ConsumerManager(lambda *e: self.events.append(e), self.now_ms)
        self.producers = ProducerManager(self.now_ms)

    def now_ms(self) -> int:
        return int(self.clock.seconds() * 1000)

    def register(self, channel: Channel, client_id: str, group: str = "g", topics: tuple[str, ...] = ("t",),
                 notify: bool = True) -> bool:
        subs = [SubscriptionData.build(t, "*", sub_version=1) for t in topics]
        info = ClientChannelInfo(channel, client_id, "JAVA", 409, self.now_ms())
        return self.consumers.register_consumer(group, info, "CONSUME_PASSIVELY", "CLUSTERING",
                                                "CONSUME_FROM_LAST_OFFSET", subs, notify)

    def test_register_consumer_events(self) -> None:
        """CHANGE (with the group's channels) only when members or topics change; REGISTER each time."""
        a, b = Channel("10.0.0.1:1"), Channel("10.0.0.2:1")
        self.assertTrue(self.register(a, "ca"))
        self.assertEqual(self.events, [("CHANGE", "g", [a]), ("REGISTER", "g", self.events[1][2])])
        self.events.clear()
        self.assertFalse(self.register(a, "ca"))  # a plain heartbeat
        self.assertEqual([e[0] for e in self.events], ["REGISTER"])
        self.events.clear()
        self.assertTrue(self.register(b, "cb"))
        self.assertEqual(self.events[0], ("CHANGE", "g", [a, b]))
        self.events.clear()
        self.assertTrue(self.register(b, "cb", topics=("t", "u")))  # a new subscription
        self.assertEqual([e[0] for e in self.events], ["CHANGE", "REGISTER"])
        self.events.clear()
        self.assertTrue(self.register(b, "cb", topics=("t",), notify=False))  # topic dropped, not notified
        self.assertEqual([e[0] for e in self.events], ["REGISTER"])
        info = self.consumers.get_consumer_group_info("g")
        self.assertEqual(sorted(info.all_client_ids()), ["ca", "cb"])
        self.assertEqual(list(info.subscription_table), ["t"])
        self.assertEqual(self.consumers.find_channel("g", "cb").channel, b)
        self.assertEqual(self.consumers.find_subscription_data("g", "t").topic, "t")
        self.assertIsNone(self.consumers.find_subscription_data("g", "u"))
        self.assertEqual(self.consumers.query_topic_consume_by_who("t"), {"g"})

    def test_newer_subscription_version_replaces(self) -> None:
        a = Channel("a:1")
        self.register(a, "ca")
        info = ClientChannelInfo(a, "ca")
        newer = SubscriptionData.build("t", "TagA", sub_version=2)
        self.consumers.register_consumer("g", info, "CONSUME_PASSIVELY", "CLUSTERING", "X", [newer], True)
        self.assertEqual(self.consumers.find_subscription_data("g", "t").sub_string, "TagA")
        older = SubscriptionData.build("t", "TagB", sub_version=1)
        self.consumers.register_consumer("g", info, "CONSUME_PASSIVELY", "CLUSTERING", "X", [older], True)
        self.assertEqual(self.consumers.find_subscription_data("g", "t").sub_string, "TagA")

    def test_unregister_consumer(self) -> None:
        a, b = Channel("a:1"), Channel("b:1")
        self.register(a, "ca")
        self.register(b, "cb")
        self.events.clear()
        self.consumers.unregister_consumer("g", ClientChannelInfo(a, "ca"), True)
        self.assertEqual(self.events, [("CHANGE", "g", [b])])
        self.events.clear()
        self.consumers.unregister_consumer("g", ClientChannelInfo(b, "cb"), False)
        self.assertEqual(self.events, [("UNREGISTER", "g", None)])
        self.assertIsNone(self.consumers.get_consumer_group_info("g"))
        self.consumers.unregister_consumer("g", ClientChannelInfo(b, "cb"), True)  # unknown group: nothing

    def test_channel_close(self) -> None:
        """A closed connection leaves every group it was in; an emptied group is unregistered."""
        a, b = Channel("a:1"), Channel("b:1")
        self.register(a, "ca", "g1")
        self.register(a, "ca", "g2")
        self.register(b, "cb", "g2")
        self.producers.register_producer("p", ClientChannelInfo(a, "ca"))
        self.events.clear()
        self.consumers.do_channel_close_event(a)
        self.producers.do_channel_close_event(a)
        self.assertIn(("UNREGISTER", "g1", None), self.events)
        self.assertIn(("CHANGE", "g1", []), self.events)
        self.assertIn(("CHANGE", "g2", [b]), self.events)
        self.assertEqual(set(self.consumers.consumer_table), {"g2"})
        self.assertEqual(self.producers.group_channel_table, {})
        self.events.clear()
        self.consumers.do_channel_close_event(Channel("never:1"))
        self.assertEqual(self.events, [])

    def test_scan_drops_silent_clients_after_120s(self) -> None:
        a, b = Channel("a:1"), Channel("b:1")
        self.register(a, "ca")
        self.producers.register_producer("p", ClientChannelInfo(a, "ca"))
        self.clock.advance(60)
        self.register(b, "cb")
        self.producers.register_producer("p", ClientChannelInfo(b, "cb"))
        closed: list[Channel] = []
        self.clock.advance(60)  # exactly 120 s for a: not yet (Java: more than 120 s)
        self.assertEqual(self.consumers.scan_not_active_channel(closed.append), 0)
        self.assertEqual(self.producers.scan_not_active_channel(closed.append), 0)
        self.clock.advance(0.001)
        self.assertEqual(self.consumers.scan_not_active_channel(closed.append), 1)
        self.assertEqual(self.producers.scan_not_active_channel(closed.append), 1)
        self.assertEqual(closed, [a, a])
        self.assertEqual(self.consumers.get_consumer_group_info("g").all_channels(), [b])
        self.assertEqual(list(self.producers.group_channel_table["p"]), [b])
        self.clock.advance(121)
        self.consumers.scan_not_active_channel(closed.append)
        self.producers.scan_not_active_channel(closed.append)
        self.assertEqual(self.consumers.consumer_table, {})
        self.assertEqual(self.producers.group_channel_table, {})

    def test_heartbeat_keeps_client_alive(self) -> None:
        a = Channel("a:1")
        for _ in range(5):
            self.register(a, "ca")
            self.producers.register_producer("p", ClientChannelInfo(a, "ca"))
            self.clock.advance(100)
        self.assertEqual(self.consumers.scan_not_active_channel(lambda c: None), 0)
        self.assertEqual(self.producers.scan_not_active_channel(lambda c: None), 0)

    def test_producers(self) -> None:
        a, b = Channel("a:1"), Channel("b:1")
        self.producers.register_producer("p", ClientChannelInfo(a, "ca"))
        self.producers.register_producer("p", ClientChannelInfo(b, "cb"))
        self.assertIs(self.producers.find_channel("cb"), b)
        self.assertIsNone(self.producers.find_channel("nobody"))
        self.producers.unregister_producer("p", ClientChannelInfo(a, "ca"))
        self.assertEqual(list(self.producers.group_channel_table["p"]), [b])
        self.producers.unregister_producer("p", ClientChannelInfo(b, "cb"))
        self.assertEqual(self.producers.group_channel_table, {})
        self.producers.unregister_producer("p", ClientChannelInfo(b, "cb"))

    def test_channel_info_address(self) -> None:
        self.assertEqual(ClientChannelInfo(Channel("1.2.3.4:5"), "c").address, "1.2.3.4:5")


class RebalanceLockManagerTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.clock = Clock()
        self.locks = RebalanceLockManager(lambda: int(self.clock.seconds() * 1000))
        self.q0 = MessageQueue("t", "broker-a", 0)
        self.q1 = MessageQueue("t", "broker-a", 1)

    def test_one_owner(self) -> None:
        self.assertEqual(self.locks.try_lock_batch("g", [self.q0], "c1"), {self.q0})
        self.assertEqual(self.locks.try_lock_batch("g", [self.q0, self.q1], "c2"), {self.q1})
        self.assertTrue(self.locks.is_locked("g", self.q0, "c1"))
        self.assertFalse(self.locks.is_locked("g", self.q0, "c2"))
        # another group is independent
        self.assertEqual(self.locks.try_lock_batch("other", [self.q0], "c2"), {self.q0})

    def test_renewal_and_expiry(self) -> None:
        """A lock renewed within 60 s stays; one left alone for more than 60 s is free."""
        self.locks.try_lock_batch("g", [self.q0], "c1")
        self.clock.advance(50)
        self.assertEqual(self.locks.try_lock_batch("g", [self.q0], "c1"), {self.q0})  # renewal
        self.clock.advance(50)
        self.assertEqual(self.locks.try_lock_batch("g", [self.q0], "c2"), set())
        self.clock.advance(10)
        self.assertTrue(self.locks.is_locked("g", self.q0, "c1"))  # exactly 60 s: still held
        self.clock.advance(0.001)
        self.assertFalse(self.locks.is_locked("g", self.q0, "c1"))
        self.assertEqual(self.locks.try_lock_batch("g", [self.q0], "c2"), {self.q0})

    def test_unlock_only_own(self) -> None:
        self.locks.try_lock_batch("g", [self.q0, self.q1], "c1")
        self.locks.unlock_batch("g", [self.q0, self.q1], "c2")
        self.assertTrue(self.locks.is_locked("g", self.q0, "c1"))
        self.locks.unlock_batch("g", [self.q0], "c1")
        self.assertFalse(self.locks.is_locked("g", self.q0, "c1"))
        self.assertTrue(self.locks.is_locked("g", self.q1, "c1"))
        self.assertEqual(self.locks.try_lock_batch("g", [self.q0], "c2"), {self.q0})
        self.locks.unlock_batch("nogroup", [self.q0], "c1")
