"""
AdminBrokerProcessor and ReplyMessageProcessor: every admin code a Java 4.9.8 broker
answers, with Java's codes, remarks and body shapes, over a real store without network;
relays to clients go to a fake connection.
"""

from __future__ import annotations

import os
import time
from typing import Any

from twisted.internet import defer
from twisted.trial.unittest import TestCase

from rocketmq_tx.broker.processors import processor_table
from rocketmq_tx.broker.processors.admin_config import broker_config_path
from rocketmq_tx.broker.test.util import T0, Ctx, FakeReactor, heartbeat, make_controller
from rocketmq_tx.common import fastjson
from rocketmq_tx.common.message import MessageConst, MessageQueue, properties_to_string
from rocketmq_tx.common.msgid import create_offset_msg_id
from rocketmq_tx.config import read_properties_text
from rocketmq_tx.remoting import LanguageCode, RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.remoting.adminbodies import (
    BrokerStatsData,
    ConsumerConnection,
    ConsumeStats,
    ConsumeStatsList,
    GroupList,
    ProducerConnection,
    ProducerTableInfo,
    QueryConsumeQueueResponseBody,
    QueryConsumeTimeSpanBody,
    QueryCorrectionOffsetBody,
    ResetOffsetBody,
    TopicStatsTable,
    message_queue_key,
)
from rocketmq_tx.remoting.errors import RemotingTimeoutError

TOPIC = "TopicTest"
GROUP = "CG_test"
BROKER = "broker-a"


class FakeClient(Ctx):
    """A client connection: records requests; answers from :attr:`answers` (code -> callable)."""

    def __init__(self, peer: str = "127.0.0.1:6666") -> None:
        super().__init__(peer)
        self.requests: list[RemotingCommand] = []
        self.answers: dict[int, Any] = {}

    def send_request(self, request: RemotingCommand, timeout: float) -> defer.Deferred:
        self.requests.append(request)
        answer = self.answers.get(request.code)
        if answer is None:
            return defer.succeed(RemotingCommand(code=ResponseCode.SUCCESS, flag=1))
        return defer.maybeDeferred(answer, request)


def result_of(d: Any) -> Any:
    """The value of an already-fired Deferred (or the value itself)."""
    if not isinstance(d, defer.Deferred):
        return d
    out: list[Any] = []
    d.addBoth(out.append)
    assert out, "Deferred has not fired"
    return out[0]


class AdminTestBase(TestCase):
    def setUp(self) -> None:
        self.reactor = FakeReactor()
        self.c = make_controller(self, self.reactor)
        self.table = processor_table(self.c)
        self.ctx = Ctx()

    def call(self, code: int, fields: dict[str, Any] | None = None, body: bytes = b"", ctx: Any = None,
             language: int = LanguageCode.JAVA) -> RemotingCommand:
        request = RemotingCommand.request(code, {k: str(v) for k, v in (fields or {}).items()}, body)
        request.language = language
        return result_of(self.table.dispatch(ctx or self.ctx, request))

    def ok(self, code: int, fields: dict[str, Any] | None = None, body: bytes = b"", **kw: Any) -> RemotingCommand:
        response = self.call(code, fields, body, **kw)
        self.assertEqual(response.code, ResponseCode.SUCCESS, response.remark)
        return response

    def create_topic(self, topic: str = TOPIC, queues: int = 4, **extra: Any) -> RemotingCommand:
        fields = {"topic": topic, "defaultTopic": "TBW102", "readQueueNums": queues, "writeQueueNums": queues,
                  "perm": 6, "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": "false", **extra}
        return self.call(RequestCode.UPDATE_AND_CREATE_TOPIC, fields)

    def send(self, topic: str = TOPIC, queue_id: int = 0, body: bytes = b"hello", **props: str) -> RemotingCommand:
        p = {MessageConst.PROPERTY_TAGS: "TagA", MessageConst.PROPERTY_WAIT_STORE_MSG_OK: "true", **props}
        fields = {"a": "PG_test", "b": topic, "c": "TBW102", "d": 4, "e": queue_id, "f": 0,
                  "g": self.c.now_ms(), "h": 0, "i": properties_to_string(p), "j": 0, "k": "false"}
        return self.ok(RequestCode.SEND_MESSAGE_V2, fields, body)

    def register_consumer(self, client: Ctx, client_id: str = "client-1", group: str = GROUP,
                          topic: str = TOPIC) -> None:
        self.ok(RequestCode.HEART_BEAT, body=heartbeat(client_id, consumers={group: {topic: "*"}}).body, ctx=client)

    def commit(self, queue_id: int, offset: int, group: str = GROUP, topic: str = TOPIC) -> None:
        self.c.consumer_offset_manager.commit_offset(group, topic, queue_id, offset)

    def body(self, response: RemotingCommand) -> Any:
        return fastjson.loads(response.body)


class TopicAdminTests(AdminTestBase):
    def test_create_topic(self) -> None:
        self.assertEqual(self.create_topic(queues=3).code, ResponseCode.SUCCESS)
        tc = self.c.topic_config_manager.select_topic_config(TOPIC)
        self.assertEqual((tc.read_queue_nums, tc.write_queue_nums, tc.perm, tc.order), (3, 3, 6, False))

    def test_create_system_topic_refused(self) -> None:
        for topic in ("SCHEDULE_TOPIC_XXXX", "rmq_sys_x", "DefaultCluster", BROKER, "DefaultCluster_REPLY_TOPIC"):
            response = self.create_topic(topic)
            self.assertEqual((response.code, response.remark),
                             (ResponseCode.SYSTEM_ERROR, f"The topic[{topic}] is conflict with system topic."))

    def test_create_bad_topic(self) -> None:
        response = self.create_topic("bad topic")
        self.assertEqual(response.code, ResponseCode.SYSTEM_ERROR)
        self.assertEqual(response.remark,
                         "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$")

    def test_create_missing_field(self) -> None:
        response = self.call(RequestCode.UPDATE_AND_CREATE_TOPIC, {"topic": TOPIC})
        self.assertEqual(response.code, ResponseCode.SYSTEM_ERROR)
        self.assertIn("is null", response.remark)

    def test_get_all_topic_config(self) -> None:
        self.create_topic()
        data = self.body(self.ok(RequestCode.GET_ALL_TOPIC_CONFIG))
        self.assertEqual(data["topicConfigTable"][TOPIC]["writeQueueNums"], 4)
        self.assertIn("counter", data["dataVersion"])

    def test_get_topic_config(self) -> None:
        """GET_TOPIC_CONFIG (5.x): what 5.x mqadmin topicStatus and consumerProgress ask first."""
        self.create_topic(queues=2)
        data = self.body(self.ok(RequestCode.GET_TOPIC_CONFIG, {"topic": TOPIC, "lo": "true"}))
        self.assertEqual((data["topicName"], data["readQueueNums"], data["perm"]), (TOPIC, 2, 6))
        self.assertNotIn("mappingDetail", data)
        missing = self.call(RequestCode.GET_TOPIC_CONFIG, {"topic": "nope"})
        self.assertEqual((missing.code, missing.remark),
                         (ResponseCode.TOPIC_NOT_EXIST, "No topic in this broker. topic: nope"))

    def test_delete_topic(self) -> None:
        self.create_topic()
        self.send()
        self.commit(0, 1)
        self.assertIn(TOPIC, self.c.store.consume_queue_table)
        self.ok(RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": TOPIC})
        self.assertIsNone(self.c.topic_config_manager.select_topic_config(TOPIC))
        self.assertNotIn(TOPIC, self.c.store.consume_queue_table)
        self.assertEqual(self.c.consumer_offset_manager.query_offset(GROUP, TOPIC, 0), -1)
        # A topic created again starts from offset 0.
        self.create_topic()
        self.assertEqual(self.send().ext_fields["queueOffset"], "0")

    def test_delete_system_topic_refused(self) -> None:
        response = self.call(RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": "TBW102"})
        self.assertEqual((response.code, response.remark),
                         (ResponseCode.SYSTEM_ERROR, "The topic[TBW102] is conflict with system topic."))

    def test_clean_unused_topic(self) -> None:
        self.create_topic()
        self.send()
        del self.c.topic_config_manager.topic_config_table[TOPIC]
        self.ok(RequestCode.CLEAN_UNUSED_TOPIC)
        self.assertNotIn(TOPIC, self.c.store.consume_queue_table)

    def test_clean_expired_consume_queue(self) -> None:
        self.create_topic()
        self.send()
        self.ok(RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE)
        # Its messages are still there: the queue stays.
        self.assertIn(TOPIC, self.c.store.consume_queue_table)

    def test_delete_expired_commit_log(self) -> None:
        self.ok(RequestCode.DELETE_EXPIRED_COMMITLOG)
        self.assertGreater(self.c.store._manual_delete, 0)

    def test_topic_stats(self) -> None:
        self.create_topic(queues=2)
        self.send(queue_id=1)
        self.send(queue_id=1)
        stats = TopicStatsTable.from_json(self.body(self.ok(RequestCode.GET_TOPIC_STATS_INFO, {"topic": TOPIC})))
        q0 = stats.offset_table[MessageQueue(TOPIC, BROKER, 0)]
        q1 = stats.offset_table[MessageQueue(TOPIC, BROKER, 1)]
        self.assertEqual((q0.min_offset, q0.max_offset, q0.last_update_timestamp), (0, 0, 0))
        self.assertEqual((q1.min_offset, q1.max_offset), (0, 2))
        self.assertEqual(q1.last_update_timestamp, T0 * 1000)

    def test_topic_stats_missing(self) -> None:
        response = self.call(RequestCode.GET_TOPIC_STATS_INFO, {"topic": "nope"})
        self.assertEqual((response.code, response.remark), (ResponseCode.TOPIC_NOT_EXIST, "topic[nope] not exist"))

    def test_system_topic_list(self) -> None:
        topics = self.body(self.ok(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER))["topicList"]
        for topic in ("TBW102", "SCHEDULE_TOPIC_XXXX", "DefaultCluster", BROKER, "RMQ_SYS_TRANS_HALF_TOPIC"):
            self.assertIn(topic, topics)

    def test_offsets_and_store_time(self) -> None:
        self.create_topic()
        self.send()
        self.reactor.advance(5)
        self.send()
        q = {"topic": TOPIC, "queueId": 0}
        self.assertEqual(self.ok(RequestCode.GET_MAX_OFFSET, q).ext_fields["offset"], "2")
        self.assertEqual(self.ok(RequestCode.GET_MIN_OFFSET, q).ext_fields["offset"], "0")
        found = self.ok(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, {**q, "timestamp": (T0 + 5) * 1000})
        self.assertEqual(found.ext_fields["offset"], "1")
        earliest = self.ok(RequestCode.GET_EARLIEST_MSG_STORETIME, q)
        self.assertEqual(earliest.ext_fields["timestamp"], str(T0 * 1000))

    def test_query_consume_queue(self) -> None:
        self.create_topic()
        self.send()
        self.send()
        response = self.ok(RequestCode.QUERY_CONSUME_QUEUE, {"topic": TOPIC, "queueId": 0, "index": 0, "count": 10,
                                                             "consumerGroup": GROUP})
        body = QueryConsumeQueueResponseBody.from_json(self.body(response))
        self.assertEqual((body.min_queue_index, body.max_queue_index), (0, 2))
        self.assertEqual(len(body.queue_data), 2)
        self.assertEqual(body.queue_data[0].physic_offset, 0)
        self.assertEqual(body.filter_data, f"{GROUP}@{TOPIC} is not online!")
        missing = self.call(RequestCode.QUERY_CONSUME_QUEUE, {"topic": "nope", "queueId": 3})
        self.assertEqual((missing.code, missing.remark), (ResponseCode.SYSTEM_ERROR, "3@nope is not exist!"))
        beyond = self.ok(RequestCode.QUERY_CONSUME_QUEUE, {"topic": TOPIC, "queueId": 0, "index": 5, "count": 1})
        self.assertEqual(beyond.remark, f"Index 5 of 0@{TOPIC} is not exist!")
        self.assertEqual(beyond.body, b"")


class ConfigAdminTests(AdminTestBase):
    def test_get_broker_config(self) -> None:
        response = self.ok(RequestCode.GET_BROKER_CONFIG)
        props = read_properties_text(response.body.decode())
        self.assertEqual(props["brokerName"], BROKER)
        self.assertIn("mappedFileSizeCommitLog", props)
        self.assertEqual(set(fastjson.loads(response.ext_fields["version"])), {"counter", "timestamp"})

    def test_update_broker_config(self) -> None:
        before = fastjson.loads(self.ok(RequestCode.GET_BROKER_CONFIG).ext_fields["version"])["counter"]
        self.ok(RequestCode.UPDATE_BROKER_CONFIG,
                body=b"defaultTopicQueueNums=5\nfileReservedTime=7\nnoSuchKey=1\n")
        self.assertEqual(self.c.settings["defaultTopicQueueNums"], 5)
        self.assertEqual(self.c.store_config.file_reserved_time, 7)
        response = self.ok(RequestCode.GET_BROKER_CONFIG)
        self.assertEqual(fastjson.loads(response.ext_fields["version"])["counter"], before + 1)
        props = read_properties_text(response.body.decode())
        self.assertEqual((props["defaultTopicQueueNums"], props["fileReservedTime"]), ("5", "7"))
        self.c.persister.flush_sync()  # written off the request path
        with open(broker_config_path(self.c), encoding="utf-8") as f:
            self.assertEqual(read_properties_text(f.read())["defaultTopicQueueNums"], "5")
        self.assertTrue(broker_config_path(self.c).endswith(os.path.join("config", "broker.properties")))

    def test_update_black_listed(self) -> None:
        for key in ("brokerConfigPath", "rocketmqHome", "configBlackList"):
            response = self.call(RequestCode.UPDATE_BROKER_CONFIG, body=f"{key}=x\n".encode())
            self.assertEqual((response.code, response.remark),
                             (ResponseCode.NO_PERMISSION, "Can not update config in black list."))

    def test_update_cannot_move_the_store(self) -> None:
        """Every path key and the store's file sizes: the store and its abort file stay where they are."""
        root = self.c.store_config.store_path_root_dir
        for key in ("storePathRootDir", "storePathCommitLog", "storePathConsumeQueue", "storePathIndex",
                    "storeCheckpoint", "abortFile", "kvConfigPath", "configStorePath", "mappedFileSizeCommitLog",
                    "mappedFileSizeConsumeQueue"):
            response = self.call(RequestCode.UPDATE_BROKER_CONFIG, body=f"{key}=/tmp/elsewhere\n".encode())
            self.assertEqual((response.code, response.remark),
                             (ResponseCode.NO_PERMISSION, "Can not update config in black list."), key)
        self.assertEqual(self.c.store_config.store_path_root_dir, root)
        self.c.persister.flush_sync()
        self.assertFalse(os.path.exists(broker_config_path(self.c)))

    def test_update_refuses_control_characters(self) -> None:
        """A newline in a value would persist as a line of its own (a blocked key, say)."""
        for body in (b"brokerName=a\\nstorePathRootDir=/tmp/x\n", b"regionId=a\\u0000b\n",
                     b"regionId=a\\rb\n"):
            response = self.call(RequestCode.UPDATE_BROKER_CONFIG, body=body)
            self.assertEqual(response.code, ResponseCode.SYSTEM_ERROR, body)
            self.assertIn("holds a control character; refused", response.remark)
        self.c.persister.flush_sync()
        self.assertFalse(os.path.exists(broker_config_path(self.c)))

    def test_update_refuses_what_a_restart_would(self) -> None:
        for body, remark in (
                (b"registerNameServerPeriod=-1\n", "registerNameServerPeriod: must be positive, got -1"),
                (b"listenPort=1\n", "listenPort: 1 leaves no fast port (listenPort - 2); use 0, a port above 2, "
                                    "or fastListenPortEnable=false"),
                (b"listenPort=70000\n", "listenPort: 70000 is not a TCP port"),
                (b"brokerId=3\n", "brokerId: 3: a master's brokerId is 0 (brokerRole ASYNC_MASTER)"),
                (b"deleteWhen=4am\n", "deleteWhen: expected hours like 04 or 04;05, got '4am'")):
            response = self.call(RequestCode.UPDATE_BROKER_CONFIG, body=body)
            self.assertEqual((response.code, response.remark), (ResponseCode.SYSTEM_ERROR, remark))
        self.assertEqual((self.c.settings["registerNameServerPeriod"], self.c.settings["brokerId"]), (30000, 0))
        self.c.persister.flush_sync()
        self.assertFalse(os.path.exists(broker_config_path(self.c)))

    def test_update_permission_registers(self) -> None:
        registered: list[Any] = []
        self.c.on_topic_created = registered.append
        self.ok(RequestCode.UPDATE_BROKER_CONFIG, body=b"brokerPermission=4\n")
        self.assertEqual(self.c.settings["brokerPermission"], 4)
        self.assertEqual(len(registered), 1)

    def test_runtime_info(self) -> None:
        table = self.body(self.ok(RequestCode.GET_BROKER_RUNTIME_INFO))["table"]
        for key in ("brokerVersionDesc", "msgPutTotalTodayNow", "putTps", "getTransferedTps", "commitLogDiskRatio",
                    "earliestMessageTimeStamp", "bootTimestamp"):
            self.assertIn(key, table)

    def test_unsupported_codes(self) -> None:
        # 50-53 belong to the ACL processor now (broker/test/test_acl.py); 54 is gone from 4.9.8;
        # 37 and 323 are the transaction processor's (test_transaction.py).
        for code in (54,):
            response = self.call(code)
            self.assertEqual((response.code, response.remark),
                             (ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f" request type {int(code)} not supported"))

    def test_delay_offsets(self) -> None:
        data = self.body(self.ok(RequestCode.GET_ALL_DELAY_OFFSET))
        self.assertIn("offsetTable", data)

    def test_view_broker_stats(self) -> None:
        self.create_topic()
        self.send()
        stats = BrokerStatsData.from_json(self.body(self.ok(
            RequestCode.VIEW_BROKER_STATS_DATA, {"statsName": "TOPIC_PUT_NUMS", "statsKey": TOPIC})))
        self.assertEqual((stats.stats_minute.sum, stats.stats_hour.sum, stats.stats_day.sum), (1, 1, 1))
        broker = self.ok(RequestCode.VIEW_BROKER_STATS_DATA,
                         {"statsName": "BROKER_PUT_NUMS", "statsKey": "DefaultCluster"})
        self.assertEqual(self.body(broker)["statsDay"]["sum"], 1)
        missing = self.call(RequestCode.VIEW_BROKER_STATS_DATA, {"statsName": "GROUP_GET_NUMS", "statsKey": "x@y"})
        self.assertEqual((missing.code, missing.remark),
                         (ResponseCode.SYSTEM_ERROR, "The stats <GROUP_GET_NUMS> <x@y> not exist"))


class GroupAdminTests(AdminTestBase):
    def test_subscription_groups(self) -> None:
        config = {"groupName": "G1", "consumeEnable": True, "retryMaxTimes": 3, "retryQueueNums": 1,
                  "brokerId": 0, "whichBrokerWhenConsumeSlowly": 1, "consumeBroadcastEnable": True,
                  "consumeFromMinEnable": False, "notifyConsumerIdsChangedEnable": True}
        self.ok(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=fastjson.dumps(config))
        table = self.body(self.ok(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG))["subscriptionGroupTable"]
        self.assertEqual(table["G1"]["retryMaxTimes"], 3)
        self.commit(0, 5, group="G1")
        self.ok(RequestCode.DELETE_SUBSCRIPTIONGROUP, {"groupName": "G1", "removeOffset": "true"})
        self.assertNotIn("G1", self.c.subscription_group_manager.subscription_group_table)
        self.assertEqual(self.c.consumer_offset_manager.query_offset("G1", TOPIC, 0), -1)

    def test_delete_group_keeps_offsets(self) -> None:
        self.commit(0, 5, group="G2")
        self.ok(RequestCode.DELETE_SUBSCRIPTIONGROUP, {"groupName": "G2", "removeOffset": "false"})
        self.assertEqual(self.c.consumer_offset_manager.query_offset("G2", TOPIC, 0), 5)

    def test_all_consumer_offsets(self) -> None:
        self.commit(0, 5)
        response = self.ok(RequestCode.GET_ALL_CONSUMER_OFFSET)
        # fastjson's unquoted integer keys, as a Java broker writes them.
        self.assertEqual(response.body, b'{"offsetTable":{"TopicTest@CG_test":{0:5}}}')

    def test_consume_stats(self) -> None:
        self.create_topic(queues=2)
        for _ in range(3):
            self.send(queue_id=0)
        self.commit(0, 1)
        self.commit(1, 0)
        stats = ConsumeStats.from_json(self.body(self.ok(RequestCode.GET_CONSUME_STATS, {"consumerGroup": GROUP})))
        w0 = stats.offset_table[MessageQueue(TOPIC, BROKER, 0)]
        self.assertEqual((w0.broker_offset, w0.consumer_offset, w0.last_timestamp), (3, 1, T0 * 1000))
        self.assertEqual(stats.compute_total_diff(), 2)
        one = ConsumeStats.from_json(self.body(self.ok(RequestCode.GET_CONSUME_STATS,
                                                       {"consumerGroup": GROUP, "topic": TOPIC})))
        self.assertEqual(len(one.offset_table), 2)
        none = ConsumeStats.from_json(self.body(self.ok(RequestCode.GET_CONSUME_STATS, {"consumerGroup": "nobody"})))
        self.assertEqual(none.offset_table, {})

    def test_broker_consume_stats(self) -> None:
        self.create_topic(queues=1)
        self.send()
        self.c.subscription_group_manager.find_subscription_group_config(GROUP)
        self.commit(0, 0)
        body = ConsumeStatsList.from_json(self.body(self.ok(RequestCode.GET_BROKER_CONSUME_STATS,
                                                            {"isOrder": "false"})))
        self.assertEqual(body.broker_addr, self.c.broker_addr)
        self.assertEqual(body.total_diff, 1)
        entry = [e for e in body.consume_stats_list if GROUP in e][0]
        self.assertEqual(len(entry[GROUP]), 1)
        ordered = ConsumeStatsList.from_json(self.body(self.ok(RequestCode.GET_BROKER_CONSUME_STATS,
                                                               {"isOrder": "true"})))
        self.assertEqual(ordered.total_diff, 0)

    def test_query_topic_consume_by_who(self) -> None:
        self.register_consumer(Ctx("127.0.0.1:7000"), group="online")
        self.commit(0, 1, group="offline")
        groups = GroupList.from_json(self.body(self.ok(RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, {"topic": TOPIC})))
        self.assertEqual(sorted(groups.group_list), ["offline", "online"])

    def test_query_consume_time_span(self) -> None:
        self.create_topic(queues=1)
        self.send()
        self.reactor.advance(10)
        self.send()
        self.commit(0, 1)
        self.reactor.advance(10)
        body = QueryConsumeTimeSpanBody.from_json(self.body(self.ok(RequestCode.QUERY_CONSUME_TIME_SPAN,
                                                                    {"topic": TOPIC, "group": GROUP})))
        span = body.consume_time_span_set[0]
        self.assertEqual((span.min_time_stamp, span.max_time_stamp, span.consume_time_stamp),
                         (T0 * 1000, (T0 + 10) * 1000, T0 * 1000))
        self.assertEqual(span.delay_time, 10_000)
        missing = self.call(RequestCode.QUERY_CONSUME_TIME_SPAN, {"topic": "nope", "group": GROUP})
        self.assertEqual(missing.code, ResponseCode.TOPIC_NOT_EXIST)

    def test_query_correction_offset(self) -> None:
        self.commit(0, 5, group="a")
        self.commit(0, 3, group="b")
        self.commit(1, 7, group="a")
        body = QueryCorrectionOffsetBody.from_json(self.body(self.ok(
            RequestCode.QUERY_CORRECTION_OFFSET, {"topic": TOPIC, "compareGroup": "c", "filterGroups": "b"})))
        self.assertEqual(body.correction_offsets, {0: 5, 1: 7})
        # The filter does not delete anything (Java's does, by accident).
        self.assertEqual(self.c.consumer_offset_manager.query_offset("b", TOPIC, 0), 3)

    def test_clone_group_offset(self) -> None:
        self.create_topic()
        self.commit(0, 5, group="src")
        self.ok(RequestCode.CLONE_GROUP_OFFSET, {"srcGroup": "src", "destGroup": "dst", "topic": TOPIC,
                                                 "offline": "true"})
        self.assertEqual(self.c.consumer_offset_manager.query_offset("dst", TOPIC, 0), 5)


class ConnectionAdminTests(AdminTestBase):
    def test_consumer_connection_list(self) -> None:
        client = FakeClient()
        self.register_consumer(client)
        data = self.body(self.ok(RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": GROUP}))
        cc = ConsumerConnection.from_json(data)
        self.assertEqual([(x.client_id, x.client_addr) for x in cc.connection_set], [("client-1", "127.0.0.1:6666")])
        self.assertEqual((cc.consume_type, cc.message_model, cc.consume_from_where),
                         ("CONSUME_PASSIVELY", "CLUSTERING", "CONSUME_FROM_LAST_OFFSET"))
        self.assertEqual(data["subscriptionTable"][TOPIC]["subString"], "*")
        # A heartbeat that kept the language number still shows Java's enum name.
        self.c.consumer_manager.find_channel(GROUP, "client-1").language = "0"
        data = self.body(self.ok(RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": GROUP}))
        self.assertEqual(data["connectionSet"][0]["language"], "JAVA")
        missing = self.call(RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": "nobody"})
        self.assertEqual((missing.code, missing.remark),
                         (ResponseCode.CONSUMER_NOT_ONLINE, "the consumer group[nobody] not online"))

    def test_producer_connections(self) -> None:
        client = FakeClient()
        self.ok(RequestCode.HEART_BEAT, body=heartbeat("p-1", producers=("PG",)).body, ctx=client)
        pc = ProducerConnection.from_json(self.body(self.ok(RequestCode.GET_PRODUCER_CONNECTION_LIST,
                                                            {"producerGroup": "PG"})))
        self.assertEqual([x.client_id for x in pc.connection_set], ["p-1"])
        missing = self.call(RequestCode.GET_PRODUCER_CONNECTION_LIST, {"producerGroup": "nope"})
        self.assertEqual((missing.code, missing.remark),
                         (ResponseCode.SYSTEM_ERROR, "the producer group[nope] not exist"))
        info = ProducerTableInfo.from_json(self.body(self.ok(RequestCode.GET_ALL_PRODUCER_INFO)))
        self.assertEqual(info.data["PG"][0].remote_ip, "/127.0.0.1:6666")

    def test_lock_unlock(self) -> None:
        mq = {"topic": TOPIC, "brokerName": BROKER, "queueId": 0}
        body = fastjson.dumps({"consumerGroup": GROUP, "clientId": "c1", "mqSet": [mq]})
        locked = self.body(self.ok(RequestCode.LOCK_BATCH_MQ, body=body))
        self.assertEqual(locked["lockOKMQSet"], [mq])
        other = fastjson.dumps({"consumerGroup": GROUP, "clientId": "c2", "mqSet": [mq]})
        self.assertEqual(self.body(self.ok(RequestCode.LOCK_BATCH_MQ, body=other))["lockOKMQSet"], [])
        self.ok(RequestCode.UNLOCK_BATCH_MQ, body=body)
        self.assertEqual(self.body(self.ok(RequestCode.LOCK_BATCH_MQ, body=other))["lockOKMQSet"], [mq])


class ResetOffsetTests(AdminTestBase):
    def setUp(self) -> None:
        super().setUp()
        self.create_topic(queues=2)
        self.send(queue_id=0)
        self.reactor.advance(10)
        self.send(queue_id=0)
        self.send(queue_id=1)
        self.commit(0, 2)
        self.commit(1, 1)
        self.client = FakeClient()

    def fields(self, timestamp: int, force: bool = True) -> dict[str, Any]:
        return {"topic": TOPIC, "group": GROUP, "timestamp": timestamp, "isForce": str(force).lower()}

    def test_reset_by_time(self) -> None:
        self.register_consumer(self.client)
        response = self.ok(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, self.fields((T0 + 10) * 1000))
        table = ResetOffsetBody.from_json(self.body(response)).offset_table
        self.assertEqual(table, {MessageQueue(TOPIC, BROKER, 0): 1, MessageQueue(TOPIC, BROKER, 1): 0})
        [sent] = [r for r in self.client.oneways if r.code == RequestCode.RESET_CONSUMER_CLIENT_OFFSET]
        self.assertEqual(sent.ext_fields, {"topic": TOPIC, "group": GROUP, "timestamp": str((T0 + 10) * 1000),
                                           "isForce": "false"})
        self.assertEqual(ResetOffsetBody.from_json(fastjson.loads(sent.body)).offset_table, table)
        # MessageQueue keys travel as JSON objects, as fastjson writes them.
        self.assertTrue(response.body.startswith(b'{"offsetTable":{{"brokerName"'))

    def test_reset_not_forced_only_moves_back(self) -> None:
        self.register_consumer(self.client)
        response = self.ok(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, self.fields(-1, force=False))
        table = ResetOffsetBody.from_json(self.body(response)).offset_table
        self.assertEqual(table[MessageQueue(TOPIC, BROKER, 0)], 2)
        self.assertEqual(table[MessageQueue(TOPIC, BROKER, 1)], 1)

    def test_reset_for_c_client(self) -> None:
        self.register_consumer(self.client)
        self.ok(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, self.fields(-1), language=LanguageCode.CPP)
        sent = self.client.oneways[-1]
        entries = fastjson.loads(sent.body)["offsetTable"]
        self.assertEqual(sorted(e["queueId"] for e in entries), [0, 1])
        self.assertEqual(set(entries[0]), {"brokerName", "offset", "queueId", "topic"})

    def test_consumer_not_online(self) -> None:
        response = self.call(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, self.fields(1234))
        self.assertEqual(response.code, ResponseCode.CONSUMER_NOT_ONLINE)
        self.assertEqual(response.remark, f"Consumer not online, so can not reset offset, Group: {GROUP} "
                                          f"Topic: {TOPIC} Timestamp: 1234")

    def test_group_without_offsets(self) -> None:
        response = self.call(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
                             {**self.fields(-1), "group": "nobody"})
        self.assertEqual((response.code, response.remark),
                         (ResponseCode.SYSTEM_ERROR, "THe consumer group <nobody> not exist"))

    def test_unknown_topic(self) -> None:
        response = self.call(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, {**self.fields(-1), "topic": "nope"})
        self.assertEqual(response.remark, "[reset-offset] reset offset failed, no topic in this broker. topic=nope")

    def test_consumer_status(self) -> None:
        self.register_consumer(self.client)
        mq = MessageQueue(TOPIC, BROKER, 0)
        status = {"messageQueueTable": {message_queue_key(mq): 7}, "consumerTable": {}}
        self.client.answers[RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT] = lambda r: RemotingCommand(
            code=ResponseCode.SUCCESS, body=fastjson.dumps(status))
        response = self.ok(RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, {"topic": TOPIC, "group": GROUP})
        data = self.body(response)
        self.assertEqual(list(data["consumerTable"]), ["client-1"])
        [(key, offset)] = data["consumerTable"]["client-1"].items()
        self.assertEqual((dict(key), offset), ({"brokerName": BROKER, "queueId": 0, "topic": TOPIC}, 7))
        self.assertEqual(self.client.requests[-1].ext_fields, {"topic": TOPIC, "group": GROUP})

    def test_consumer_status_nobody(self) -> None:
        response = self.call(RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, {"topic": TOPIC, "group": "x"})
        self.assertEqual((response.code, response.remark),
                         (ResponseCode.SYSTEM_ERROR, "No Any Consumer online in the consumer group: [x]"))


class RelayTests(AdminTestBase):
    def setUp(self) -> None:
        super().setUp()
        self.client = FakeClient()
        self.register_consumer(self.client)

    def test_running_info(self) -> None:
        info = b'{"properties":{"consumeType":"CONSUME_PASSIVELY"}}'
        self.client.answers[RequestCode.GET_CONSUMER_RUNNING_INFO] = lambda r: RemotingCommand(
            code=ResponseCode.SUCCESS, body=info, flag=1)
        response = self.ok(RequestCode.GET_CONSUMER_RUNNING_INFO,
                           {"consumerGroup": GROUP, "clientId": "client-1", "jstackEnable": "false"})
        self.assertEqual(response.body, info)
        relayed = self.client.requests[-1]
        self.assertEqual(relayed.code, RequestCode.GET_CONSUMER_RUNNING_INFO)
        self.assertEqual(relayed.ext_fields["clientId"], "client-1")

    def test_running_info_not_online(self) -> None:
        response = self.call(RequestCode.GET_CONSUMER_RUNNING_INFO, {"consumerGroup": GROUP, "clientId": "nope"})
        self.assertEqual((response.code, response.remark),
                         (ResponseCode.SYSTEM_ERROR, f"The Consumer <{GROUP}> <nope> not online"))

    def test_running_info_timeout(self) -> None:
        self.client.answers[RequestCode.GET_CONSUMER_RUNNING_INFO] = lambda r: defer.fail(
            RemotingTimeoutError("wait response timeout"))
        response = self.call(RequestCode.GET_CONSUMER_RUNNING_INFO, {"consumerGroup": GROUP, "clientId": "client-1"})
        self.assertEqual(response.code, ResponseCode.CONSUME_MSG_TIMEOUT)
        self.assertTrue(response.remark.startswith(f"consumer <{GROUP}> <client-1> Timeout: "))

    def test_running_info_error(self) -> None:
        self.client.answers[RequestCode.GET_CONSUMER_RUNNING_INFO] = lambda r: defer.fail(ConnectionError("gone"))
        response = self.call(RequestCode.GET_CONSUMER_RUNNING_INFO, {"consumerGroup": GROUP, "clientId": "client-1"})
        self.assertEqual(response.code, ResponseCode.SYSTEM_ERROR)
        self.assertTrue(response.remark.startswith(f"invoke consumer <{GROUP}> <client-1> Exception: "))

    def test_old_client(self) -> None:
        self.c.consumer_manager.find_channel(GROUP, "client-1").version = 10
        response = self.call(RequestCode.GET_CONSUMER_RUNNING_INFO, {"consumerGroup": GROUP, "clientId": "client-1"})
        self.assertEqual(response.remark, "The Consumer <client-1> Version <V3_0_0_BETA7> too low to finish, "
                                          "please upgrade it to V3_1_8_SNAPSHOT")

    def test_consume_message_directly(self) -> None:
        self.create_topic()
        sent = self.send(body=b"direct")
        msg_id = sent.ext_fields["msgId"]
        self.client.answers[RequestCode.CONSUME_MESSAGE_DIRECTLY] = lambda r: RemotingCommand(
            code=ResponseCode.SUCCESS, body=b'{"consumeResult":"CR_SUCCESS"}')
        response = self.ok(RequestCode.CONSUME_MESSAGE_DIRECTLY,
                           {"consumerGroup": GROUP, "clientId": "client-1", "msgId": msg_id})
        self.assertEqual(response.body, b'{"consumeResult":"CR_SUCCESS"}')
        relayed = self.client.requests[-1]
        self.assertEqual(relayed.ext_fields["brokerName"], BROKER)
        self.assertIn(b"direct", relayed.body)
        self.assertEqual(int.from_bytes(relayed.body[:4], "big"), len(relayed.body))

    def test_consume_message_directly_unknown_offset(self) -> None:
        msg_id = create_offset_msg_id("127.0.0.1", 10911, 999_999)
        response = self.call(RequestCode.CONSUME_MESSAGE_DIRECTLY,
                             {"consumerGroup": GROUP, "clientId": "client-1", "msgId": msg_id})
        self.assertEqual(response.code, ResponseCode.SYSTEM_ERROR)


class ReplyTests(AdminTestBase):
    REPLY_TOPIC = "DefaultCluster_REPLY_TOPIC"

    def reply(self, props: dict[str, str], code: int = RequestCode.SEND_REPLY_MESSAGE_V2) -> RemotingCommand:
        fields = {"a": "PG_reply", "b": self.REPLY_TOPIC, "c": "TBW102", "d": 4, "e": -1, "f": 0,
                  "g": int(time.time() * 1000), "h": 0, "i": properties_to_string(props), "j": 0, "k": "false"}
        return self.call(code, fields, b"pong")

    def test_reply_pushed_and_stored(self) -> None:
        requester = FakeClient("127.0.0.1:7777")
        self.ok(RequestCode.HEART_BEAT, body=heartbeat("requester-1", producers=("PG_req",)).body, ctx=requester)
        response = self.reply({MessageConst.PROPERTY_MESSAGE_REPLY_TO_CLIENT: "requester-1",
                               MessageConst.PROPERTY_CORRELATION_ID: "corr-1"})
        self.assertEqual(response.code, ResponseCode.SUCCESS, response.remark)
        [push] = requester.requests
        self.assertEqual(push.code, RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT)
        self.assertEqual(push.body, b"pong")
        self.assertEqual(push.ext_fields["topic"], self.REPLY_TOPIC)
        self.assertEqual(push.ext_fields["bornHost"], "127.0.0.1:5555")
        self.assertIn(MessageConst.PROPERTY_PUSH_REPLY_TIME, push.ext_fields["properties"])
        # Stored too (storeReplyMessageEnable defaults to true): a real id and offset.
        self.assertEqual(len(response.ext_fields["msgId"]), 32)
        self.assertEqual(response.ext_fields["queueOffset"], "0")
        self.assertEqual(self.c.store.get_max_offset_in_queue(self.REPLY_TOPIC, 0), 1)

    def test_reply_without_requester(self) -> None:
        response = self.reply({MessageConst.PROPERTY_MESSAGE_REPLY_TO_CLIENT: "gone"},
                              code=RequestCode.SEND_REPLY_MESSAGE_V2)
        self.assertEqual((response.code, response.remark),
                         (ResponseCode.SYSTEM_ERROR, "push reply message fail, channel of <gone> not found."))
        # Still stored: the header says where.
        self.assertIn("msgId", response.ext_fields)

    def test_reply_without_property(self) -> None:
        response = self.reply({})
        self.assertEqual(response.remark, "reply message properties[REPLY_TO_CLIENT] is null")

    def test_reply_push_refused(self) -> None:
        requester = FakeClient("127.0.0.1:7777")
        requester.answers[RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT] = lambda r: RemotingCommand(
            code=ResponseCode.SYSTEM_ERROR, remark="no")
        self.ok(RequestCode.HEART_BEAT, body=heartbeat("requester-1", producers=("PG_req",)).body, ctx=requester)
        response = self.reply({MessageConst.PROPERTY_MESSAGE_REPLY_TO_CLIENT: "requester-1"})
        self.assertEqual((response.code, response.remark),
                         (ResponseCode.SYSTEM_ERROR, "push reply message to requester-1fail."))

    def test_reply_v1_header_not_stored(self) -> None:
        self.c.settings["storeReplyMessageEnable"] = False
        requester = FakeClient("127.0.0.1:7777")
        self.ok(RequestCode.HEART_BEAT, body=heartbeat("requester-1", producers=("PG_req",)).body, ctx=requester)
        props = properties_to_string({MessageConst.PROPERTY_MESSAGE_REPLY_TO_CLIENT: "requester-1"})
        fields = {"producerGroup": "PG_reply", "topic": self.REPLY_TOPIC, "defaultTopic": "TBW102",
                  "defaultTopicQueueNums": "4", "queueId": "0", "sysFlag": "0", "bornTimestamp": "1", "flag": "0",
                  "properties": props}
        response = self.ok(RequestCode.SEND_REPLY_MESSAGE, fields, b"pong")
        self.assertEqual((response.ext_fields["msgId"], response.ext_fields["queueOffset"]), ("0", "0"))
        self.assertEqual(self.c.store.get_max_offset_in_queue(self.REPLY_TOPIC, 0), 0)
