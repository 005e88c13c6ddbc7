"""
Requests a hostile or buggy client sends, replayed through the broker's processor table:
names that would leave the store's directory, counts and flags that are refused. The
same defects against real server processes: compat-tests/test_hostile.py.
"""

from __future__ import annotations

import os

from rocketmq_tx.broker.test.test_processors import BrokerTestCase, props
from rocketmq_tx.broker.test.util import heartbeat
from rocketmq_tx.common import fastjson
from rocketmq_tx.common.message import MessageConst
from rocketmq_tx.common.messagecodec import decode_messages
from rocketmq_tx.common.route import TopicConfig
from rocketmq_tx.common.subscription import SubscriptionGroupConfig
from rocketmq_tx.common.sysflag import MessageSysFlag
from rocketmq_tx.common.validators import is_store_name_safe
from rocketmq_tx.remoting import RequestCode, ResponseCode
from rocketmq_tx.remoting.headers import PullMessageRequestHeader, PullSysFlag
from rocketmq_tx.remoting.headers.admin import CreateTopicRequestHeader
from rocketmq_tx.remoting.headers.client import (
    ConsumerSendMsgBackRequestHeader,
    QueryConsumerOffsetRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from rocketmq_tx.store import MessageExtBrokerInner
from rocketmq_tx.store.status import PutMessageStatus

FAQ = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."
#: %RETRY%../../SomeTopic, as a path under consumequeue/, is consumequeue/SomeTopic.
TRAVERSING = "../../SomeTopic"
ILLEGAL_GROUP = ("the specified group[../../SomeTopic] contains illegal characters, "
                 "allowing only ^[%|a-zA-Z0-9_-]+$")


class GroupTraversalTests(BrokerTestCase):
    """The reported data loss: a group name that walks the retry topic onto another topic's queue."""

    def setUp(self) -> None:
        super().setUp()
        self.root = self.controller.store_config.store_path_root_dir
        self.outside_before = set(os.listdir(os.path.dirname(self.root)))
        response = self.send("SomeTopic", body=b"acknowledged", queue_id=0)
        self.assertEqual(response.code, ResponseCode.SUCCESS)
        self.phys = self.store.get_commit_log_offset_in_queue("SomeTopic", 0, 0)
        # Before the store shuts down (cleanups run last registered, first).
        self.addCleanup(self.check_store_intact)

    def check_store_intact(self) -> None:
        # The acknowledged message is still entry 0 of SomeTopic's queue 0, and every
        # directory under the store has a legal name; nothing appeared beside the store.
        result = self.store.get_message("g", "SomeTopic", 0, 0, 32, None)
        self.assertEqual([m.body for m in decode_messages(result.body())], [b"acknowledged"])
        cq_root = self.controller.store_config.store_path_consume_queue
        for name in os.listdir(cq_root):
            self.assertTrue(is_store_name_safe(name), name)
        self.assertEqual(set(os.listdir(os.path.dirname(self.root))), self.outside_before)

    def send_back(self, group: str) -> object:
        header = ConsumerSendMsgBackRequestHeader(self.phys, group, 0)
        return self.call(RequestCode.CONSUMER_SEND_MSG_BACK, header.to_ext_fields())

    def test_admin_create_refused(self) -> None:
        body = fastjson.dumps({"groupName": TRAVERSING})
        response = self.call(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body)
        self.assertEqual((response.code, response.remark), (ResponseCode.SYSTEM_ERROR, ILLEGAL_GROUP))
        self.assertNotIn(TRAVERSING, self.controller.subscription_group_manager.subscription_group_table)

    def test_heartbeat_refused(self) -> None:
        request = heartbeat(consumers={TRAVERSING: {"SomeTopic": "*"}})
        request.opaque = 77
        response = self.table.dispatch(self.ctx, request)
        self.assertEqual((response.code, response.remark), (ResponseCode.SYSTEM_ERROR, ILLEGAL_GROUP))
        self.assertIsNone(self.controller.topic_config_manager.select_topic_config("%RETRY%" + TRAVERSING))
        self.assertIsNone(self.controller.consumer_manager.get_consumer_group_info(TRAVERSING))

    def test_heartbeat_with_illegal_topic_or_producer_group_refused(self) -> None:
        for request in (heartbeat(consumers={"g": {"../x": "*"}}), heartbeat(producers=("a/b",))):
            request.opaque = 77
            self.assertEqual(self.table.dispatch(self.ctx, request).code, ResponseCode.SYSTEM_ERROR)
        self.assertIsNone(self.controller.consumer_manager.get_consumer_group_info("g"))

    def test_send_back_with_unknown_illegal_group(self) -> None:
        """5.x's answer: the group is never auto-created, so it does not exist."""
        response = self.send_back(TRAVERSING)
        self.assertEqual((response.code, response.remark), (
            ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group not exist, {TRAVERSING} " + FAQ))

    def test_send_back_with_illegal_group_already_configured(self) -> None:
        """A subscriptionGroup.json written elsewhere holds the group: the topic manager refuses."""
        table = self.controller.subscription_group_manager.subscription_group_table
        table[TRAVERSING] = SubscriptionGroupConfig(TRAVERSING)
        response = self.send_back(TRAVERSING)
        self.assertEqual((response.code, response.remark),
                         (ResponseCode.SYSTEM_ERROR, f"topic[%RETRY%{TRAVERSING}] not exist"))
        table[TRAVERSING].retry_max_times = 0  # straight to the DLQ
        response = self.send_back(TRAVERSING)
        self.assertEqual((response.code, response.remark),
                         (ResponseCode.SYSTEM_ERROR, f"topic[%RETRY%{TRAVERSING}] not exist"))

    def test_store_refuses_a_traversing_topic_configured_elsewhere(self) -> None:
        """topics.json and subscriptionGroup.json both hold the names: the store is the last line."""
        groups = self.controller.subscription_group_manager.subscription_group_table
        groups[TRAVERSING] = SubscriptionGroupConfig(TRAVERSING)
        tcm = self.controller.topic_config_manager
        for prefix in ("%RETRY%", "%DLQ%"):
            tcm.topic_config_table[prefix + TRAVERSING] = TopicConfig(prefix + TRAVERSING, 1, 1)
        # A retry goes through the schedule topic; when due, the store refuses it and the
        # level moves on past it instead of retrying it forever.
        self.assertEqual(self.send_back(TRAVERSING).code, ResponseCode.SUCCESS)
        schedule = self.controller.schedule_message_service
        self.assertEqual(schedule.deliver_due(self.controller.now_ms() + 3600_000), 0)
        self.assertEqual(schedule.offset_table.get(3), 1)
        # Past the maximum, straight to the DLQ: refused at once.
        groups[TRAVERSING].retry_max_times = 0
        response = self.send_back(TRAVERSING)
        self.assertEqual((response.code, response.remark), (ResponseCode.SYSTEM_ERROR, "MESSAGE_ILLEGAL"))

    def test_pull_with_illegal_group(self) -> None:
        ext = PullMessageRequestHeader(TRAVERSING, "SomeTopic", 0, 0, 32, int(PullSysFlag.SUBSCRIPTION), 0, 1000,
                                       "*", 0, "TAG").to_ext_fields()
        response = self.call(RequestCode.PULL_MESSAGE, ext)
        self.assertEqual(response.code, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST)

    def test_offsets_with_illegal_names(self) -> None:
        update = UpdateConsumerOffsetRequestHeader(TRAVERSING, "SomeTopic", 0, 1).to_ext_fields()
        response = self.call(RequestCode.UPDATE_CONSUMER_OFFSET, update)
        self.assertEqual((response.code, response.remark),
                         (ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"Group {TRAVERSING} not exist!"))
        update = UpdateConsumerOffsetRequestHeader("g", "../x", 0, 1).to_ext_fields()
        response = self.call(RequestCode.UPDATE_CONSUMER_OFFSET, update)
        self.assertEqual((response.code, response.remark), (ResponseCode.TOPIC_NOT_EXIST, "Topic ../x not exist!"))
        self.assertEqual(self.controller.consumer_offset_manager.offset_table, {})
        query = QueryConsumerOffsetRequestHeader(TRAVERSING, "SomeTopic", 0).to_ext_fields()
        self.assertEqual(self.call(RequestCode.QUERY_CONSUMER_OFFSET, query).code, ResponseCode.QUERY_NOT_FOUND)

    def test_send_to_illegal_topic(self) -> None:
        response = self.send("../../../../x")
        self.assertEqual((response.code, response.remark), (
            ResponseCode.SYSTEM_ERROR,
            "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"))

    def test_store_put_refuses_illegal_topics(self) -> None:
        for topic in ("../../../../x", "a/b", ".."):
            msg = MessageExtBrokerInner(topic, b"x", b"", 0, 0, 0, 0, ("127.0.0.1", 1), None, 0)
            self.assertIs(self.store.put_message(msg).status, PutMessageStatus.MESSAGE_ILLEGAL)


class RefusedCountsAndFlagsTests(BrokerTestCase):
    def create_topic(self, read: int = 8, write: int = 8, perm: int = 6) -> object:
        header = CreateTopicRequestHeader("T1", "TBW102", read, write, perm, "SINGLE_TAG")
        return self.call(RequestCode.UPDATE_AND_CREATE_TOPIC, header.to_ext_fields())

    def test_queue_nums_outside_range(self) -> None:
        for read, write in ((0, 8), (8, 0), (1025, 8), (8, 2 ** 31 - 1), (-1, 8)):
            response = self.create_topic(read, write)
            self.assertEqual(response.code, ResponseCode.SYSTEM_ERROR)
            self.assertIn("allowing 1..1024 (topicQueueNumsMax)", response.remark)
        self.assertIsNone(self.controller.topic_config_manager.select_topic_config("T1"))
        self.assertEqual(self.create_topic(1024, 1).code, ResponseCode.SUCCESS)

    def test_invalid_perm(self) -> None:
        response = self.create_topic(perm=8)
        self.assertEqual((response.code, response.remark),
                         (ResponseCode.SYSTEM_ERROR, "topicPermission value: 8 is invalid."))

    def test_retry_queue_nums_outside_range(self) -> None:
        body = fastjson.dumps({"groupName": "g1", "retryQueueNums": 100000})
        self.assertEqual(self.call(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body).code,
                         ResponseCode.SYSTEM_ERROR)
        body = fastjson.dumps({"groupName": "g1", "retryQueueNums": 0})  # Java's "no retry"
        self.assertEqual(self.call(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body).code,
                         ResponseCode.SUCCESS)

    def test_transaction_bits_and_rejected_half_messages(self) -> None:
        """As Java: TRAN_MSG decides, and rejectTransactionMessage refuses it; sysFlag bits alone
        are stored as they come (a prepared or rolled-back record gets no ConsumeQueue entry)."""
        self.controller.settings["rejectTransactionMessage"] = True
        response = self.send(body_props=props(**{MessageConst.PROPERTY_TRANSACTION_PREPARED: "true"}))
        self.assertEqual((response.code, response.remark), (
            ResponseCode.NO_PERMISSION, "the broker[127.0.0.1] sending transaction message is forbidden"))
        self.assertEqual(self.store.get_max_phy_offset(), 0)
        for bits in (MessageSysFlag.TRANSACTION_PREPARED_TYPE, MessageSysFlag.TRANSACTION_ROLLBACK_TYPE):
            before = self.store.get_max_phy_offset()
            self.assertEqual(self.send(sys_flag=bits).code, ResponseCode.SUCCESS)
            self.assertGreater(self.store.get_max_phy_offset(), before)
