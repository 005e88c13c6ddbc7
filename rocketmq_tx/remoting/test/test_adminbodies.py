"""Tests for the admin and client-management JSON bodies."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.common import fastjson
from rocketmq_tx.common.fastjson import ObjectKey
from rocketmq_tx.common.message import MessageQueue
from rocketmq_tx.common.route import DataVersion, TopicConfig
from rocketmq_tx.common.subscription import SubscriptionGroupConfig
from rocketmq_tx.common.test.strategies import int64s, topics
from rocketmq_tx.remoting.adminbodies import (
    BrokerStatsData,
    BrokerStatsItem,
    Connection,
    ConsumeQueueData,
    ConsumerConnection,
    ConsumerOffsetSerializeWrapper,
    ConsumeStats,
    ConsumeStatsList,
    GroupList,
    KVTable,
    LockBatchRequestBody,
    LockBatchResponseBody,
    OffsetWrapper,
    ProducerConnection,
    ProducerInfo,
    ProducerTableInfo,
    QueryConsumeQueueResponseBody,
    QueryConsumeTimeSpanBody,
    QueryCorrectionOffsetBody,
    QueueTimeSpan,
    ResetOffsetBody,
    SubscriptionGroupWrapper,
    TopicConfigSerializeWrapper,
    TopicOffset,
    TopicStatsTable,
    UnlockBatchRequestBody,
    message_queue_from_key,
    message_queue_key,
)
from rocketmq_tx.remoting.api import SubscriptionData, parse_reset_offset_body

MQ0 = MessageQueue("TopicA", "broker-a", 0)
MQ1 = MessageQueue("TopicA", "broker-a", 1)
# fastjson's form of a MessageQueue (getters brokerName, queueId, topic, sorted).
MQ0_JSON = b'{"brokerName":"broker-a","queueId":0,"topic":"TopicA"}'
MQ1_JSON = b'{"brokerName":"broker-a","queueId":1,"topic":"TopicA"}'


def _through_json(value: Any, legacy: bool = False) -> Any:
    """to_json, to bytes, back through the lenient parser and from_json."""
    dump = fastjson.dumps_legacy if legacy else fastjson.dumps
    return type(value).from_json(fastjson.loads(dump(value.to_json())))


class MessageQueueKeyTests(SynchronousTestCase):
    """MessageQueue as a fastjson map key."""

    def test_object_key(self) -> None:
        """A queue keys its map as an object, as fastjson writes bean keys."""
        table = {message_queue_key(MQ0): 5}
        self.assertEqual(fastjson.dumps(table), b"{" + MQ0_JSON + b":5}")
        (key,) = fastjson.loads(b"{" + MQ0_JSON + b":5}")
        self.assertIsInstance(key, ObjectKey)
        self.assertEqual(message_queue_from_key(key), MQ0)

    def test_string_keys(self) -> None:
        """Keys quoted by another writer, as the queue's JSON or its toString(), are read too."""
        self.assertEqual(message_queue_from_key(MQ0_JSON.decode()), MQ0)
        self.assertEqual(message_queue_from_key("MessageQueue [topic=TopicA, brokerName=broker-a, queueId=0]"), MQ0)
        self.assertRaises(ValueError, message_queue_from_key, "[1]")


class ConfigWrapperTests(SynchronousTestCase):
    """The topic, group and offset wrappers a broker dumps for its slaves and the admin."""

    # GET_ALL_TOPIC_CONFIG from 4.9.8: TopicConfigSerializeWrapper's getters dataVersion
    # (DataVersion: counter, timestamp) and topicConfigTable (TopicConfig's seven getters).
    TOPICS_4X = (b'{"dataVersion":{"counter":2,"timestamp":1700000000000},"topicConfigTable":{"TopicA":'
                 b'{"order":false,"perm":6,"readQueueNums":8,"topicFilterType":"SINGLE_TAG","topicName":"TopicA",'
                 b'"topicSysFlag":0,"writeQueueNums":8}}}')

    def test_topic_config_wrapper_java(self) -> None:
        """4.9.8's GET_ALL_TOPIC_CONFIG body decodes and is written back byte for byte."""
        wrapper = TopicConfigSerializeWrapper.from_json(fastjson.loads(self.TOPICS_4X))
        self.assertEqual(wrapper.data_version, DataVersion(2, 1700000000000))
        self.assertEqual(wrapper.topic_config_table, {"TopicA": TopicConfig("TopicA", 8, 8, 6)})
        self.assertEqual(fastjson.dumps(wrapper.to_json()), self.TOPICS_4X)

    def test_topic_config_wrapper_5x_mapping(self) -> None:
        """5.x's mapping keys (TopicConfigAndMappingSerializeWrapper) survive untouched, in order."""
        data = dict(fastjson.loads(self.TOPICS_4X), mappingDataVersion={"counter": 0, "timestamp": 1},
                    topicQueueMappingDetailMap={}, topicQueueMappingInfoMap={})
        out = TopicConfigSerializeWrapper.from_json(data).to_json()
        self.assertEqual(out, data)
        self.assertEqual(list(out), ["dataVersion", "mappingDataVersion", "topicConfigTable",
                                     "topicQueueMappingDetailMap", "topicQueueMappingInfoMap"])

    def test_subscription_group_wrapper(self) -> None:
        """Groups and the version round trip; a Java-shaped body decodes."""
        body = (b'{"dataVersion":{"counter":1,"timestamp":3},"subscriptionGroupTable":{"G":{"brokerId":0,'
                b'"consumeBroadcastEnable":true,"consumeEnable":false,"consumeFromMinEnable":true,"groupName":"G",'
                b'"notifyConsumerIdsChangedEnable":true,"retryMaxTimes":16,"retryQueueNums":1,'
                b'"whichBrokerWhenConsumeSlowly":1}}}')
        wrapper = SubscriptionGroupWrapper.from_json(fastjson.loads(body))
        self.assertEqual(wrapper.subscription_group_table, {"G": SubscriptionGroupConfig("G", consume_enable=False)})
        self.assertEqual(fastjson.dumps(wrapper.to_json()), body)

    def test_consumer_offsets_java(self) -> None:
        """GET_ALL_CONSUMER_OFFSET as 4.9.8 writes it (unquoted queue ids) decodes and re-encodes."""
        body = b'{"offsetTable":{"TopicA@GroupA":{0:12,1:7},"%RETRY%GroupA@GroupA":{0:0}}}'
        wrapper = ConsumerOffsetSerializeWrapper.from_json(fastjson.loads(body))
        self.assertEqual(wrapper.offset_table, {"TopicA@GroupA": {0: 12, 1: 7}, "%RETRY%GroupA@GroupA": {0: 0}})
        self.assertIsNone(wrapper.data_version)
        self.assertEqual(fastjson.dumps_legacy(wrapper.to_json()), body)
        self.assertEqual(fastjson.dumps(wrapper.to_json()),
                         b'{"offsetTable":{"TopicA@GroupA":{"0":12,"1":7},"%RETRY%GroupA@GroupA":{"0":0}}}')

    def test_consumer_offsets_5x_version(self) -> None:
        """5.x's dataVersion is kept."""
        wrapper = ConsumerOffsetSerializeWrapper({"T@G": {3: 4}}, DataVersion(1, 2))
        self.assertEqual(_through_json(wrapper), wrapper)

    @given(st.dictionaries(st.text(max_size=30), st.dictionaries(st.integers(0, 2**31 - 1), int64s, max_size=4),
                           max_size=4), st.booleans())
    def test_consumer_offsets_property(self, table: dict[str, dict[int, int]], legacy: bool) -> None:
        """Any offset table survives both writers."""
        wrapper = ConsumerOffsetSerializeWrapper(table)
        self.assertEqual(_through_json(wrapper, legacy), wrapper)


class StatsTests(SynchronousTestCase):
    """Bodies keyed by MessageQueue and the statistics values."""

    # GET_CONSUME_STATS from 4.9.8: ConsumeStats (consumeTps, offsetTable) whose keys are
    # MessageQueue objects, values OffsetWrapper (brokerOffset, consumerOffset, lastTimestamp).
    CONSUME_STATS_4X = (b'{"consumeTps":0.0,"offsetTable":{' + MQ0_JSON + b':{"brokerOffset":10,"consumerOffset":8,'
                        b'"lastTimestamp":1700000000000},' + MQ1_JSON + b':{"brokerOffset":3,"consumerOffset":3,'
                        b'"lastTimestamp":0}}}')

    def test_consume_stats_java(self) -> None:
        """A 4.9.8 ConsumeStats decodes, computes Java's total diff, and re-encodes byte for byte."""
        stats = ConsumeStats.from_json(fastjson.loads(self.CONSUME_STATS_4X))
        self.assertEqual(stats.offset_table, {MQ0: OffsetWrapper(10, 8, 1700000000000), MQ1: OffsetWrapper(3, 3, 0)})
        self.assertEqual(stats.compute_total_diff(), 2)
        self.assertEqual(fastjson.dumps(stats.to_json()), self.CONSUME_STATS_4X)

    def test_offset_wrapper_5x(self) -> None:
        """5.x's pullOffset is kept, in alphabetical place."""
        data = {"brokerOffset": 1, "consumerOffset": 2, "lastTimestamp": 3, "pullOffset": 4}
        self.assertEqual(OffsetWrapper.from_json(data).to_json(), data)

    def test_topic_stats_table(self) -> None:
        """GET_TOPIC_STATS_INFO's table decodes from fastjson's bytes; 5.x's topicPutTps is optional."""
        body = (b'{"offsetTable":{' + MQ0_JSON + b':{"lastUpdateTimestamp":1700000000000,"maxOffset":100,'
                b'"minOffset":0}}}')
        table = TopicStatsTable.from_json(fastjson.loads(body))
        self.assertEqual(table.offset_table, {MQ0: TopicOffset(0, 100, 1700000000000)})
        self.assertIsNone(table.topic_put_tps)
        self.assertEqual(fastjson.dumps(table.to_json()), body)
        table.topic_put_tps = 2.5
        self.assertEqual(_through_json(table), table)

    def test_consume_stats_list(self) -> None:
        """GET_BROKER_CONSUME_STATS: a list of group -> [ConsumeStats] maps, brokerAddr and totalDiff."""
        body = (b'{"brokerAddr":"10.0.0.1:10911","consumeStatsList":[{"GroupA":[{"consumeTps":1.5,"offsetTable":{'
                + MQ0_JSON + b':{"brokerOffset":10,"consumerOffset":8,"lastTimestamp":5}}}]}],"totalDiff":2}')
        stats = ConsumeStatsList.from_json(fastjson.loads(body))
        self.assertEqual(stats.consume_stats_list, [{"GroupA": [ConsumeStats({MQ0: OffsetWrapper(10, 8, 5)}, 1.5)]}])
        self.assertEqual((stats.broker_addr, stats.total_diff, stats.total_inflight_diff), ("10.0.0.1:10911", 2, None))
        self.assertEqual(fastjson.dumps(stats.to_json()), body)

    def test_broker_stats_data(self) -> None:
        """VIEW_BROKER_STATS_DATA: three BrokerStatsItem (avgpt, sum, tps)."""
        body = (b'{"statsDay":{"avgpt":0.0,"sum":100,"tps":0.01},"statsHour":{"avgpt":1.0,"sum":10,"tps":0.1},'
                b'"statsMinute":{"avgpt":2.0,"sum":1,"tps":1.0}}')
        data = BrokerStatsData.from_json(fastjson.loads(body))
        self.assertEqual(data.stats_minute, BrokerStatsItem(1, 1.0, 2.0))
        self.assertEqual(fastjson.dumps(data.to_json()), body)

    @given(st.dictionaries(st.builds(MessageQueue, topics, st.text(max_size=20), st.integers(-1, 2**31 - 1)),
                           st.builds(OffsetWrapper, int64s, int64s, int64s, st.none() | int64s), max_size=5),
           st.floats(allow_nan=False, allow_infinity=False))
    def test_consume_stats_property(self, table: dict[MessageQueue, OffsetWrapper], tps: float) -> None:
        """Any ConsumeStats survives fastjson's object-keyed form."""
        stats = ConsumeStats(table, tps)
        self.assertEqual(_through_json(stats), stats)


class ConnectionTests(SynchronousTestCase):
    """Connection lists and group lists."""

    # GET_CONSUMER_CONNECTION_LIST from 4.9.8: ConsumerConnection's getters; Connection's
    # (clientAddr, clientId, language by name, version); SubscriptionData's seven getters.
    CONSUMER_4X = (b'{"connectionSet":[{"clientAddr":"127.0.0.1:54321","clientId":"127.0.0.1@1234","language":"JAVA",'
                   b'"version":399}],"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","consumeType":"CONSUME_PASSIVELY",'
                   b'"messageModel":"CLUSTERING","subscriptionTable":{"TopicA":{"classFilterMode":false,'
                   b'"codeSet":[65],"expressionType":"TAG","subString":"A","subVersion":1700000000000,"tagsSet":["A"],'
                   b'"topic":"TopicA"}}}')

    def test_consumer_connection_java(self) -> None:
        """4.9.8's ConsumerConnection decodes and re-encodes byte for byte."""
        conn = ConsumerConnection.from_json(fastjson.loads(self.CONSUMER_4X))
        self.assertEqual(conn.connection_set, [Connection("127.0.0.1@1234", "127.0.0.1:54321", "JAVA", 399)])
        self.assertEqual(conn.subscription_table["TopicA"], SubscriptionData("TopicA", "A", ["A"], [65], 1700000000000))
        self.assertEqual((conn.consume_type, conn.message_model, conn.consume_from_where),
                         ("CONSUME_PASSIVELY", "CLUSTERING", "CONSUME_FROM_LAST_OFFSET"))
        self.assertEqual(fastjson.dumps(conn.to_json()), self.CONSUMER_4X)

    def test_empty_consumer_connection(self) -> None:
        """Null enums are left out, as fastjson leaves out nulls."""
        self.assertEqual(ConsumerConnection().to_json(), {"connectionSet": [], "subscriptionTable": {}})

    def test_producer_connection_and_groups(self) -> None:
        """ProducerConnection and GroupList round trip."""
        producers = ProducerConnection([Connection("c1", "1.1.1.1:1", "CPP", 0), Connection("c2", None, None, 5)])
        self.assertEqual(_through_json(producers), producers)
        groups = GroupList(["G1", "G2"])
        self.assertEqual(fastjson.dumps(groups.to_json()), b'{"groupList":["G1","G2"]}')
        self.assertEqual(_through_json(groups), groups)

    def test_producer_table_info(self) -> None:
        """GET_ALL_PRODUCER_INFO: group -> ProducerInfo list (remoteIP is capitalised in Java)."""
        body = (b'{"data":{"PG":[{"clientId":"c1","language":"JAVA","lastUpdateTimestamp":5,"remoteIP":"1.2.3.4:5",'
                b'"version":399}]}}')
        info = ProducerTableInfo.from_json(fastjson.loads(body))
        self.assertEqual(info.data, {"PG": [ProducerInfo("c1", "1.2.3.4:5", "JAVA", 399, 5)]})
        self.assertEqual(fastjson.dumps(info.to_json()), body)


class LockTests(SynchronousTestCase):
    """LOCK_BATCH_MQ and UNLOCK_BATCH_MQ bodies: queue sets are plain lists of objects."""

    LOCK_4X = b'{"clientId":"127.0.0.1@1","consumerGroup":"GroupA","mqSet":[' + MQ0_JSON + b"," + MQ1_JSON + b"]}"

    def test_lock_request_java(self) -> None:
        """A 4.9.8 lock request decodes; re-encoding gives the same bytes."""
        body = LockBatchRequestBody.from_json(fastjson.loads(self.LOCK_4X))
        self.assertEqual((body.consumer_group, body.client_id, body.mq_set, body.only_this_broker),
                         ("GroupA", "127.0.0.1@1", [MQ0, MQ1], None))
        self.assertEqual(fastjson.dumps(body.to_json()), self.LOCK_4X)

    def test_lock_request_5x(self) -> None:
        """5.x's onlyThisBroker is read and written after mqSet."""
        data = dict(fastjson.loads(self.LOCK_4X), onlyThisBroker=True)
        body = LockBatchRequestBody.from_json(data)
        self.assertTrue(body.only_this_broker)
        self.assertEqual(list(body.to_json()), ["clientId", "consumerGroup", "mqSet", "onlyThisBroker"])

    def test_unlock_request(self) -> None:
        """The unlock request has the lock request's shape and keeps its own type."""
        body = UnlockBatchRequestBody.from_json(fastjson.loads(self.LOCK_4X))
        self.assertIsInstance(body, UnlockBatchRequestBody)
        self.assertEqual(_through_json(body), body)

    def test_lock_response(self) -> None:
        """lockOKMQSet (Java's capitalisation)."""
        body = b'{"lockOKMQSet":[' + MQ0_JSON + b"]}"
        response = LockBatchResponseBody.from_json(fastjson.loads(body))
        self.assertEqual(response.lock_ok_mq_set, [MQ0])
        self.assertEqual(fastjson.dumps(response.to_json()), body)


class OffsetBodyTests(SynchronousTestCase):
    """Reset, correction and time-span bodies."""

    RESET = b'{"offsetTable":{' + MQ0_JSON + b":12," + MQ1_JSON + b":-1}}"

    def test_reset_offset_java(self) -> None:
        """ResetOffsetBody as fastjson writes it decodes, agrees with the client's parser, re-encodes."""
        body = ResetOffsetBody.from_json(fastjson.loads(self.RESET))
        self.assertEqual(body.offset_table, {MQ0: 12, MQ1: -1})
        self.assertEqual(body.offset_table, parse_reset_offset_body(self.RESET))
        self.assertEqual(fastjson.dumps(body.to_json()), self.RESET)

    def test_reset_offset_null_table(self) -> None:
        """Java's null table (``{}``) stays None."""
        self.assertIsNone(ResetOffsetBody.from_json({}).offset_table)
        self.assertEqual(ResetOffsetBody(None).to_json(), {})

    def test_correction_offsets(self) -> None:
        """QUERY_CORRECTION_OFFSET's Map<Integer, Long>: unquoted keys from Java, either form read."""
        body = QueryCorrectionOffsetBody.from_json(fastjson.loads(b'{"correctionOffsets":{0:5,3:9223372036854775807}}'))
        self.assertEqual(body.correction_offsets, {0: 5, 3: 2**63 - 1})
        self.assertEqual(fastjson.dumps_legacy(body.to_json()), b'{"correctionOffsets":{0:5,3:9223372036854775807}}')
        self.assertEqual(_through_json(body), body)

    def test_time_span_java(self) -> None:
        """
        A QueueTimeSpan with Java's derived *TimeStampStr fields (local time) decodes, the
        strings are ignored, and we write them back in the JVM's format.
        """
        body = (b'{"consumeTimeSpanSet":[{"consumeTimeStamp":1700000000500,"consumeTimeStampStr":"x",'
                b'"delayTime":20,"maxTimeStamp":1700000000600,"maxTimeStampStr":"x","messageQueue":' + MQ0_JSON
                + b',"minTimeStamp":1700000000000,"minTimeStampStr":"x"}]}')
        spans = QueryConsumeTimeSpanBody.from_json(fastjson.loads(body))
        self.assertEqual(spans.consume_time_span_set,
                         [QueueTimeSpan(MQ0, 1700000000000, 1700000000600, 1700000000500, 20)])
        out = spans.to_json()["consumeTimeSpanSet"][0]
        self.assertEqual(list(out), sorted(out))
        self.assertRegex(out["minTimeStampStr"], r"^\d{4}-\d\d-\d\d#\d\d:\d\d:\d\d:000$")
        self.assertRegex(out["maxTimeStampStr"], r":600$")
        self.assertEqual(_through_json(spans), spans)

    def test_kv_table(self) -> None:
        """KVTable is {"table": {...}}."""
        table = KVTable({"brokerVersion": "399", "msgPutTotalTodayNow": "0"})
        self.assertEqual(fastjson.dumps(table.to_json()),
                         b'{"table":{"brokerVersion":"399","msgPutTotalTodayNow":"0"}}')
        self.assertEqual(_through_json(table), table)


class ConsumeQueueBodyTests(SynchronousTestCase):
    """QUERY_CONSUME_QUEUE's answer."""

    def test_java_shape(self) -> None:
        """Null fields are absent; ConsumeQueueData's getters include isEval as ``eval``."""
        body = (b'{"maxQueueIndex":10,"minQueueIndex":0,"queueData":[{"eval":true,"physicOffset":1024,'
                b'"physicSize":200,"tagsCode":65}],"subscriptionData":{"classFilterMode":false,"codeSet":[],'
                b'"expressionType":"TAG","subString":"*","subVersion":1,"tagsSet":[],"topic":"TopicA"}}')
        parsed = QueryConsumeQueueResponseBody.from_json(fastjson.loads(body))
        self.assertEqual(parsed.queue_data, [ConsumeQueueData(1024, 200, 65, eval=True)])
        self.assertEqual(parsed.subscription_data, SubscriptionData("TopicA", sub_version=1))
        self.assertIsNone(parsed.filter_data)
        self.assertEqual(fastjson.dumps(parsed.to_json()), body)

    def test_all_fields(self) -> None:
        """Every optional field round trips."""
        value = QueryConsumeQueueResponseBody(
            None, "filter", [ConsumeQueueData(1, 2, 3, "{}", "0101", False, "no match")], 5, 1)
        self.assertEqual(_through_json(value), value)
