"""SlaveSynchronize: a slave copies its master's topics, offsets, delay offsets and groups."""

from __future__ import annotations

from typing import Any

from twisted.internet import defer
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.broker.ha.slavesync import SlaveSynchronize
from rocketmq_tx.broker.processors import processor_table
from rocketmq_tx.broker.test.util import Ctx, make_controller
from rocketmq_tx.common.route import TopicConfig
from rocketmq_tx.common.subscription import SubscriptionGroupConfig
from rocketmq_tx.remoting import RemotingCommand
from rocketmq_tx.store.config import BrokerRole


class MasterClient:
    """Answers like the master's admin processors would over the network."""

    def __init__(self, master: Any) -> None:
        self.table = processor_table(master)
        self.calls: list[tuple[str, int]] = []

    def invoke(self, addr: str, request: RemotingCommand, timeout: float) -> defer.Deferred:
        self.calls.append((addr, request.code))
        return defer.maybeDeferred(self.table.dispatch, Ctx(), request)


class SlaveSynchronizeTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.master = make_controller(self)
        self.slave = make_controller(self, brokerRole="SLAVE", brokerId=1)
        self.assertIs(self.slave.store_config.broker_role, BrokerRole.SLAVE)
        self.client = MasterClient(self.master)
        self.sync = SlaveSynchronize(self.slave, self.client)

    def test_copies_everything(self) -> None:
        m = self.master
        m.topic_config_manager.update_topic_config(TopicConfig("TopicA", 4, 4, 6))
        m.subscription_group_manager.update_subscription_group_config(SubscriptionGroupConfig("GroupA"))
        m.consumer_offset_manager.commit_offset("GroupA", "TopicA", 2, 77)
        m.schedule_message_service.offset_table[3] = 5
        self.assertIsNone(self.successResultOf(self.sync.sync_all()))  # no master known yet: nothing
        self.assertEqual(self.client.calls, [])
        self.sync.master_addr = "127.0.0.2:10911"
        self.successResultOf(self.sync.sync_all())
        s = self.slave
        self.assertEqual(s.topic_config_manager.select_topic_config("TopicA"), TopicConfig("TopicA", 4, 4, 6))
        self.assertTrue(s.topic_config_manager.data_version.same_as(m.topic_config_manager.data_version))
        self.assertIsNotNone(s.subscription_group_manager.subscription_group_table.get("GroupA"))
        self.assertEqual(s.consumer_offset_manager.query_offset("GroupA", "TopicA", 2), 77)
        self.assertEqual(s.schedule_message_service.offset_table.get(3), 5)
        # persisted as the slave's own files
        s.persister.flush_sync()
        self.assertIn(b"TopicA", open(s.topic_config_manager.file.path, "rb").read())
        self.assertIn(b"TopicA@GroupA", open(s.consumer_offset_manager.file.path, "rb").read())

    def test_same_version_keeps_table(self) -> None:
        """Topics are replaced only when the master's DataVersion differs (Java's check)."""
        self.sync.master_addr = "127.0.0.2:10911"
        self.successResultOf(self.sync.sync_all())
        self.slave.topic_config_manager.topic_config_table["Local"] = TopicConfig("Local")
        self.successResultOf(self.sync.sync_all())
        self.assertIn("Local", self.slave.topic_config_manager.topic_config_table)

    def test_illegal_names_not_copied(self) -> None:
        self.master.topic_config_manager.topic_config_table["../evil"] = TopicConfig("../evil")
        self.master.topic_config_manager.data_version.next_version()
        self.sync.master_addr = "127.0.0.2:10911"
        self.successResultOf(self.sync.sync_all())
        self.assertNotIn("../evil", self.slave.topic_config_manager.topic_config_table)
