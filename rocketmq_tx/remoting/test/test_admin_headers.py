"""Tests for the admin and client-management request headers."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.remoting import RemotingCommandError
from rocketmq_tx.remoting.headers import (
    CloneGroupOffsetRequestHeader,
    ConsumeMessageDirectlyResultRequestHeader,
    CreateTopicRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    DeleteTopicRequestHeader,
    GetBrokerConfigResponseHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetConsumerStatusRequestHeader,
    GetConsumeStatsInBrokerHeader,
    GetConsumeStatsRequestHeader,
    GetProducerConnectionListRequestHeader,
    GetTopicConfigRequestHeader,
    GetTopicStatsInfoRequestHeader,
    NotifyConsumerIdsChangedRequestHeader,
    QueryConsumeQueueRequestHeader,
    QueryConsumeTimeSpanRequestHeader,
    QueryCorrectionOffsetHeader,
    QuerySubscriptionByConsumerRequestHeader,
    QueryTopicConsumeByWhoRequestHeader,
    QueryTopicsByConsumerRequestHeader,
    ResetOffsetRequestHeader,
    ViewBrokerStatsDataRequestHeader,
)

# What a 4.9.8 MQClientAPIImpl.createTopic puts in extFields: every field of
# CreateTopicRequestHeader by its Java name, values as String.valueOf (the enum by name).
CREATE_TOPIC_EXT = {"topic": "TopicA", "defaultTopic": "TBW102", "readQueueNums": "8", "writeQueueNums": "8",
                    "perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false"}


class CreateTopicHeaderTests(SynchronousTestCase):
    """UPDATE_AND_CREATE_TOPIC (17)."""

    def test_java_ext_fields(self) -> None:
        """The ext fields a Java admin sends decode, and re-encode to the same map."""
        header = CreateTopicRequestHeader.from_ext_fields(CREATE_TOPIC_EXT)
        self.assertEqual((header.topic, header.default_topic, header.read_queue_nums, header.write_queue_nums,
                          header.perm, header.topic_filter_type, header.topic_sys_flag, header.order),
                         ("TopicA", "TBW102", 8, 8, 6, "SINGLE_TAG", 0, False))
        self.assertIsNone(header.attributes)
        self.assertEqual(header.to_ext_fields(), CREATE_TOPIC_EXT)

    def test_5x_fields(self) -> None:
        """5.x's attributes and force are read when present."""
        ext = dict(CREATE_TOPIC_EXT, attributes="+message.type=NORMAL", force="true")
        header = CreateTopicRequestHeader.from_ext_fields(ext)
        self.assertEqual((header.attributes, header.force), ("+message.type=NORMAL", True))
        self.assertEqual(header.to_ext_fields(), ext)

    def test_each_required_missing(self) -> None:
        """Each @CFNotNull field is required, with Java's message; topicSysFlag is not."""
        for key in ("topic", "defaultTopic", "readQueueNums", "writeQueueNums", "perm", "topicFilterType", "order"):
            ext = dict(CREATE_TOPIC_EXT)
            del ext[key]
            error = self.assertRaises(RemotingCommandError, CreateTopicRequestHeader.from_ext_fields, ext)
            self.assertIn(f"<{key}>", str(error))
        ext = dict(CREATE_TOPIC_EXT)
        del ext["topicSysFlag"]
        self.assertIsNone(CreateTopicRequestHeader.from_ext_fields(ext).topic_sys_flag)


class ResetOffsetHeaderTests(SynchronousTestCase):
    """INVOKE_BROKER_TO_RESET_OFFSET (222) and RESET_CONSUMER_CLIENT_OFFSET (220)."""

    def test_is_force_key(self) -> None:
        """The flag travels as ``isForce`` (Java's field name), the 4.x map has no queueId."""
        ext = {"topic": "T", "group": "G", "timestamp": "1700000000000", "isForce": "true"}
        header = ResetOffsetRequestHeader.from_ext_fields(ext)
        self.assertEqual((header.is_force, header.timestamp, header.queue_id, header.offset),
                         (True, 1700000000000, None, None))
        self.assertEqual(header.to_ext_fields(), ext)

    def test_5x_queue_and_offset(self) -> None:
        """5.x's queueId and offset decode as numbers."""
        ext = {"topic": "T", "group": "G", "timestamp": "0", "isForce": "false", "queueId": "-1", "offset": "42"}
        header = ResetOffsetRequestHeader.from_ext_fields(ext)
        self.assertEqual((header.queue_id, header.offset), (-1, 42))

    def test_missing_is_force(self) -> None:
        """isForce is @CFNotNull."""
        self.assertRaises(RemotingCommandError, ResetOffsetRequestHeader.from_ext_fields,
                          {"topic": "T", "group": "G", "timestamp": "0"})


class PrimitiveDefaultsTests(SynchronousTestCase):
    """Java primitives that are not @CFNotNull: absent reads as Java's default, always written."""

    def test_query_consume_queue(self) -> None:
        """Every field of QueryConsumeQueueRequestHeader is optional; the numbers default to 0."""
        header = QueryConsumeQueueRequestHeader.from_ext_fields({})
        self.assertEqual((header.topic, header.queue_id, header.index, header.count, header.consumer_group),
                         (None, 0, 0, 0, None))
        self.assertEqual(header.to_ext_fields(), {"queueId": "0", "index": "0", "count": "0"})

    def test_running_info_jstack(self) -> None:
        """jstackEnable defaults to false and is written."""
        header = GetConsumerRunningInfoRequestHeader.from_ext_fields({"consumerGroup": "G", "clientId": "C"})
        self.assertFalse(header.jstack_enable)
        self.assertEqual(header.to_ext_fields(), {"consumerGroup": "G", "clientId": "C", "jstackEnable": "false"})

    def test_clone_offline(self) -> None:
        """offline defaults to false; topic is optional."""
        header = CloneGroupOffsetRequestHeader.from_ext_fields({"srcGroup": "A", "destGroup": "B"})
        self.assertEqual((header.topic, header.offline), (None, False))

    def test_delete_group_both_spellings(self) -> None:
        """4.9.8's removeOffset and 5.x's cleanOffset both ask for the offsets to go."""
        old = DeleteSubscriptionGroupRequestHeader.from_ext_fields({"groupName": "G", "removeOffset": "true"})
        new = DeleteSubscriptionGroupRequestHeader.from_ext_fields({"groupName": "G", "cleanOffset": "true"})
        neither = DeleteSubscriptionGroupRequestHeader.from_ext_fields({"groupName": "G"})
        self.assertEqual((old.should_remove_offset, new.should_remove_offset, neither.should_remove_offset),
                         (True, True, False))

    def test_is_order_key(self) -> None:
        """GET_BROKER_CONSUME_STATS sends ``isOrder``, and it is required."""
        self.assertTrue(GetConsumeStatsInBrokerHeader.from_ext_fields({"isOrder": "true"}).is_order)
        self.assertRaises(RemotingCommandError, GetConsumeStatsInBrokerHeader.from_ext_fields, {})


# (class, a full ext map, the keys that are @CFNotNull in Java)
SIMPLE_CASES = [
    (DeleteTopicRequestHeader, {"topic": "T"}, {"topic"}),
    (GetTopicConfigRequestHeader, {"topic": "T"}, {"topic"}),
    (GetTopicStatsInfoRequestHeader, {"topic": "T"}, {"topic"}),
    (GetConsumeStatsRequestHeader, {"consumerGroup": "G", "topic": "T", "topicList": "A;B"}, {"consumerGroup"}),
    (GetConsumerConnectionListRequestHeader, {"consumerGroup": "G"}, {"consumerGroup"}),
    (GetProducerConnectionListRequestHeader, {"producerGroup": "P"}, {"producerGroup"}),
    (GetConsumerStatusRequestHeader, {"topic": "T", "group": "G", "clientAddr": "1.2.3.4:5"}, {"topic", "group"}),
    (QueryTopicConsumeByWhoRequestHeader, {"topic": "T"}, {"topic"}),
    (QueryTopicsByConsumerRequestHeader, {"group": "G"}, {"group"}),
    (QuerySubscriptionByConsumerRequestHeader, {"group": "G", "topic": "T"}, {"group"}),
    (QueryConsumeTimeSpanRequestHeader, {"topic": "T", "group": "G"}, {"topic", "group"}),
    (ConsumeMessageDirectlyResultRequestHeader,
     {"consumerGroup": "G", "clientId": "C", "msgId": "M", "brokerName": "B", "topic": "T", "topicSysFlag": "0",
      "groupSysFlag": "1"}, {"consumerGroup"}),
    (QueryCorrectionOffsetHeader, {"filterGroups": "A,B", "compareGroup": "G", "topic": "T"},
     {"compareGroup", "topic"}),
    (ViewBrokerStatsDataRequestHeader, {"statsName": "TOPIC_PUT_NUMS", "statsKey": "T"}, {"statsName", "statsKey"}),
    (NotifyConsumerIdsChangedRequestHeader, {"consumerGroup": "G"}, {"consumerGroup"}),
    (GetBrokerConfigResponseHeader, {"version": '{"counter":1,"timestamp":2}'}, {"version"}),
]


class SimpleHeaderTests(SynchronousTestCase):
    """The string-only headers: full round trip and each required key."""

    def test_round_trip(self) -> None:
        """Decoding then encoding a full ext map gives it back."""
        for cls, ext, _ in SIMPLE_CASES:
            self.assertEqual(cls.from_ext_fields(ext).to_ext_fields(), ext, cls.__name__)

    def test_required(self) -> None:
        """Dropping a @CFNotNull key fails; dropping any other key does not."""
        for cls, ext, required in SIMPLE_CASES:
            for key in ext:
                partial = {k: v for k, v in ext.items() if k != key}
                if key in required:
                    self.assertRaises(RemotingCommandError, cls.from_ext_fields, partial)
                else:
                    cls.from_ext_fields(partial)

    def test_unknown_keys_ignored(self) -> None:
        """5.x's RPC keys (bname, lo, ns...) do not disturb a 4.x header."""
        header = DeleteTopicRequestHeader.from_ext_fields({"topic": "T", "bname": "b", "lo": "true"})
        self.assertEqual(header.to_ext_fields(), {"topic": "T"})


class PropertyTests(SynchronousTestCase):
    """Generated round trips."""

    @given(st.text(), st.text(), st.integers(-(2**63), 2**63 - 1), st.booleans(),
           st.none() | st.integers(-(2**31), 2**31 - 1))
    def test_reset_offset_round_trip(self, topic: str, group: str, ts: int, force: bool, qid: int | None) -> None:
        """Any ResetOffsetRequestHeader survives its ext-field codec."""
        header = ResetOffsetRequestHeader(topic, group, ts, force, qid)
        self.assertEqual(ResetOffsetRequestHeader.from_ext_fields(header.to_ext_fields()), header)
