"""Tests for SubscriptionGroupConfig's JSON form."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.common import fastjson
from rocketmq_tx.common.subscription import SubscriptionGroupConfig

# A 4.9.8 broker's SubscriptionGroupConfig for a new group as fastjson writes it (compact):
# one key per getter of common/subscription/SubscriptionGroupConfig.java, sorted by name.
JAVA_4X = (b'{"brokerId":0,"consumeBroadcastEnable":true,"consumeEnable":true,"consumeFromMinEnable":true,'
           b'"groupName":"GroupA","notifyConsumerIdsChangedEnable":true,"retryMaxTimes":16,"retryQueueNums":1,'
           b'"whichBrokerWhenConsumeSlowly":1}')

# The same group from a 5.3.3 broker (remoting/protocol/subscription/SubscriptionGroupConfig.java):
# attributes, consumeMessageOrderly, consumeTimeoutMinute, groupRetryPolicy (only its ``type``
# getter serialises; the null policies are left out) and groupSysFlag are added;
# subscriptionDataSet is null and so absent.
JAVA_5X = (b'{"attributes":{},"brokerId":0,"consumeBroadcastEnable":true,"consumeEnable":true,'
           b'"consumeFromMinEnable":true,"consumeMessageOrderly":false,"consumeTimeoutMinute":15,'
           b'"groupName":"GroupA","groupRetryPolicy":{"type":"CUSTOMIZED"},"groupSysFlag":0,'
           b'"notifyConsumerIdsChangedEnable":true,"retryMaxTimes":16,"retryQueueNums":1,'
           b'"whichBrokerWhenConsumeSlowly":1}')


class SubscriptionGroupConfigTests(SynchronousTestCase):
    """SubscriptionGroupConfig to and from Java's JSON."""

    def test_defaults_are_javas(self) -> None:
        """A new config writes exactly what a 4.9.8 broker writes for a new group."""
        self.assertEqual(fastjson.dumps(SubscriptionGroupConfig("GroupA").to_json()), JAVA_4X)

    def test_decode_4x(self) -> None:
        """The 4.9.8 form decodes to the defaults and has no 5.x fields."""
        config = SubscriptionGroupConfig.from_json(fastjson.loads(JAVA_4X))
        self.assertEqual(config, SubscriptionGroupConfig("GroupA"))
        self.assertIsNone(config.group_retry_policy)

    def test_5x_round_trip(self) -> None:
        """The 5.x form keeps every field, byte for byte."""
        config = SubscriptionGroupConfig.from_json(fastjson.loads(JAVA_5X))
        self.assertEqual((config.consume_message_orderly, config.consume_timeout_minute, config.group_sys_flag,
                          config.attributes, config.group_retry_policy),
                         (False, 15, 0, {}, {"type": "CUSTOMIZED"}))
        self.assertEqual(fastjson.dumps(config.to_json()), JAVA_5X)

    def test_unknown_fields_kept(self) -> None:
        """A key this port does not know survives a round trip, sorted in with the others."""
        data = dict(fastjson.loads(JAVA_4X), zzzFuture=[1, 2], aaaFuture="x")
        out = SubscriptionGroupConfig.from_json(data).to_json()
        self.assertEqual(out, data)
        self.assertEqual(list(out), sorted(data))

    def test_changed_values(self) -> None:
        """Non-default values are read with their types, including string booleans fastjson accepts."""
        config = SubscriptionGroupConfig.from_json({"groupName": "G", "consumeEnable": "false", "retryMaxTimes": "3",
                                                    "brokerId": 1, "whichBrokerWhenConsumeSlowly": 2})
        self.assertEqual((config.consume_enable, config.retry_max_times, config.broker_id,
                          config.which_broker_when_consume_slowly), (False, 3, 1, 2))

    def test_missing_group_name(self) -> None:
        """groupName is the one field we cannot default."""
        self.assertRaises(KeyError, SubscriptionGroupConfig.from_json, {})

    @given(st.builds(
        SubscriptionGroupConfig, st.text(), st.booleans(), st.booleans(), st.booleans(),
        st.integers(0, 2**31 - 1), st.integers(-1, 2**31 - 1), st.integers(0, 2**63 - 1), st.integers(0, 2**63 - 1),
        st.booleans(), st.none() | st.booleans(), st.none() | st.just({"type": "CUSTOMIZED"}),
        st.none() | st.integers(0, 2**31 - 1), st.none() | st.integers(0, 2**31 - 1), st.none(),
        st.none() | st.dictionaries(st.text(), st.text(), max_size=3)))
    def test_round_trip(self, config: SubscriptionGroupConfig) -> None:
        """Any config survives to_json, fastjson and from_json."""
        self.assertEqual(SubscriptionGroupConfig.from_json(fastjson.loads(fastjson.dumps(config.to_json()))), config)
