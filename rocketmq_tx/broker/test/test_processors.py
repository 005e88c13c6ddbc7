"""The broker's send, client, consumer and query processors, called through its processor table."""

from __future__ import annotations

from twisted.internet.defer import Deferred
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.broker.processors import processor_table
from rocketmq_tx.broker.test.util import T0, Ctx, FakeReactor, heartbeat, make_controller
from rocketmq_tx.common import fastjson
from rocketmq_tx.common._batch import encode_batch
from rocketmq_tx.common.message import Message, properties_to_string
from rocketmq_tx.common.messagecodec import decode_message, decode_messages
from rocketmq_tx.common.route import PermName, TopicConfig
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.remoting.headers import SendMessageRequestHeader
from rocketmq_tx.remoting.headers.client import (
    ConsumerSendMsgBackRequestHeader,
    GetConsumerListByGroupRequestHeader,
    QueryConsumerOffsetRequestHeader,
    QueryMessageRequestHeader,
    UnregisterClientRequestHeader,
    UpdateConsumerOffsetRequestHeader,
    ViewMessageRequestHeader,
)
from rocketmq_tx.store.commitlog import offset_msg_id
from rocketmq_tx.store.status import PutMessageStatus

FAQ = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."
BORN = T0 * 1000 - 5


def props(**values: str) -> str:
    return properties_to_string(values)


class BrokerTestCase(SynchronousTestCase):
    """A started controller with a small store; ``call`` dispatches like the server does."""

    keys: dict = {}

    def setUp(self) -> None:
        self.reactor = FakeReactor()
        self.controller = make_controller(self, self.reactor, **self.keys)
        self.table = processor_table(self.controller)
        self.ctx = Ctx()
        self.store = self.controller.store

    def dispatch(self, code: int, ext: dict | None = None, body: bytes = b"", ctx: Ctx | None = None,
                 version: int = 409) -> object:
        request = RemotingCommand.request(code, ext, body, version=version)
        request.opaque = 77
        return self.table.dispatch(ctx or self.ctx, request)

    def call(self, code: int, ext: dict | None = None, body: bytes = b"", ctx: Ctx | None = None,
             version: int = 409) -> RemotingCommand:
        response = self.dispatch(code, ext, body, ctx, version)
        self.assertIsInstance(response, RemotingCommand)
        assert isinstance(response, RemotingCommand)
        self.assertEqual(response.opaque, 77)
        return response

    def send_header(self, topic: str = "TopicTest", body_props: str | None = None, queue_id: int = -1,
                    **kw: object) -> SendMessageRequestHeader:
        if body_props is None:
            body_props = props(TAGS="TagA", KEYS="k1 k2", UNIQ_KEY="UNIQ0001", WAIT="true")
        values = dict(producer_group="pg", topic=topic, default_topic="TBW102", default_topic_queue_nums=4,
                      queue_id=queue_id, sys_flag=0, born_timestamp=BORN, flag=3, properties=body_props)
        values.update(kw)
        return SendMessageRequestHeader(**values)  # type: ignore[arg-type]

    def send(self, topic: str = "TopicTest", body: bytes = b"hello", v2: bool = False, version: int = 409,
             **kw: object) -> RemotingCommand:
        header = self.send_header(topic, **kw)
        if v2:
            return self.call(RequestCode.SEND_MESSAGE_V2, header.to_v2().to_ext_fields(), body, version=version)
        return self.call(RequestCode.SEND_MESSAGE, header.to_ext_fields(), body, version=version)

    def stored(self, phys: int = 0):  # type: ignore[no-untyped-def]
        msg = self.store.look_message_by_offset(phys)
        self.assertIsNotNone(msg)
        return msg


class SendMessageTests(BrokerTestCase):
    def test_send_message(self) -> None:
        """SUCCESS, SendMessageResponseHeader fields (transactionId: the UNIQ_KEY, as 5.x answers every
        send), region and trace switch, the record as stored."""
        for v2 in (False, True):
            with self.subTest(v2=v2):
                before = self.store.get_max_phy_offset()
                response = self.send(v2=v2, queue_id=1)
                self.assertEqual((response.code, response.remark), (ResponseCode.SUCCESS, None))
                ext = response.ext_fields
                self.assertEqual((ext["MSG_REGION"], ext["TRACE_ON"]), ("DefaultRegion", "true"))
                self.assertEqual(ext["msgId"], offset_msg_id(("127.0.0.1", 10911), before))
                self.assertEqual(ext["queueId"], "1")
                self.assertEqual(ext["queueOffset"], "1" if v2 else "0")
                self.assertEqual(ext["transactionId"], "UNIQ0001")
                msg = self.stored(before)
                self.assertEqual((msg.topic, msg.queue_id, msg.body, msg.flag, msg.born_timestamp, msg.born_host),
                                 ("TopicTest", 1, b"hello", 3, BORN, ("127.0.0.1", 5555)))
                self.assertEqual(msg.store_host, ("127.0.0.1", 10911))
                self.assertEqual(msg.properties, {"TAGS": "TagA", "KEYS": "k1 k2", "UNIQ_KEY": "UNIQ0001",
                                                  "CLUSTER": "DefaultCluster"})
        # the topic was created from TBW102 with the producer's 4 queues
        tc = self.controller.topic_config_manager.select_topic_config("TopicTest")
        self.assertEqual((tc.read_queue_nums, tc.write_queue_nums, tc.perm), (4, 4, PermName.PERM_READ | 2))

    def test_wait_dropped_from_stored_properties(self) -> None:
        """WAIT is not stored (Java drops it, 9 bytes a message), whatever its value."""
        self.send(body_props=props(WAIT="true", TAGS="A"))
        self.assertNotIn(b"WAIT", self.store.select_one_message_by_offset(0))
        second = self.store.get_max_phy_offset()
        self.send(body_props=props(TAGS="A", WAIT="false"))
        self.assertNotIn(b"WAIT", self.store.select_one_message_by_offset(second))
        self.assertEqual(self.stored(second).properties, {"TAGS": "A", "CLUSTER": "DefaultCluster"})

    def test_random_queue_within_write_queues(self) -> None:
        for _ in range(20):
            response = self.send(queue_id=-1)
            self.assertIn(int(response.ext_fields["queueId"]), range(4))

    def test_response_region_and_trace_from_settings(self) -> None:
        self.controller.settings["regionId"] = "Hangzhou"
        self.controller.settings["traceOn"] = False
        response = self.send(topic="bad topic")  # even on failures
        self.assertEqual((response.ext_fields["MSG_REGION"], response.ext_fields["TRACE_ON"]), ("Hangzhou", "false"))

    def test_send_batch(self) -> None:
        """SEND_BATCH_MESSAGE: one record per message, consecutive offsets, comma-joined ids."""
        messages = [Message("TopicTest", b"m%d" % i, 0, {"KEYS": f"bk{i}", "UNIQ_KEY": f"U{i}", "TAGS": "B"})
                    for i in range(3)]
        header = self.send_header(queue_id=2, body_props=props(), batch=True)
        response = self.call(RequestCode.SEND_BATCH_MESSAGE, header.to_v2().to_ext_fields(), encode_batch(messages))
        self.assertEqual(response.code, ResponseCode.SUCCESS, response.remark)
        self.assertEqual((response.ext_fields["queueId"], response.ext_fields["queueOffset"]), ("2", "0"))
        ids = response.ext_fields["msgId"].split(",")
        self.assertEqual(len(ids), 3)
        self.assertNotIn("transactionId", response.ext_fields)  # no UNIQ_KEY on the batch itself
        result = self.store.get_message("g", "TopicTest", 2, 0, 32)
        stored = [decode_message(b, 0)[0] for b in result.message_buffers]
        self.assertEqual([m.body for m in stored], [b"m0", b"m1", b"m2"])
        self.assertEqual([m.queue_offset for m in stored], [0, 1, 2])
        self.assertEqual([offset_msg_id(("127.0.0.1", 10911), m.commit_log_offset) for m in stored], ids)
        self.assertEqual(stored[1].properties["KEYS"], "bk1")
        self.assertEqual(stored[1].properties["CLUSTER"], "DefaultCluster")

    def test_batch_to_retry_topic_refused(self) -> None:
        header = self.send_header("%RETRY%g", body_props=props(), batch=True)
        response = self.call(RequestCode.SEND_BATCH_MESSAGE, header.to_v2().to_ext_fields(),
                             encode_batch([Message("%RETRY%g", b"x")]))
        self.assertEqual((response.code, response.remark),
                         (ResponseCode.MESSAGE_ILLEGAL, "batch request does not support retry group %RETRY%g"))

    def test_bad_topic_name(self) -> None:
        """SYSTEM_ERROR with TopicValidator's remark; nothing stored, nothing created."""
        response = self.send(topic="bad topic!")
        self.assertEqual((response.code, response.remark), (
            ResponseCode.SYSTEM_ERROR,
            "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"))
        self.assertEqual(self.store.get_max_phy_offset(), 0)
        self.assertIsNone(self.controller.topic_config_manager.select_topic_config("bad topic!"))
        self.assertEqual(self.send(topic="a" * 128).remark, "The specified topic is longer than topic max length.")

    def test_system_topic_forbidden(self) -> None:
        response = self.send(topic="SCHEDULE_TOPIC_XXXX")
        self.assertEqual((response.code, response.remark),
                         (ResponseCode.NO_PERMISSION, "Sending message to topic[SCHEDULE_TOPIC_XXXX] is forbidden."))
        self.assertEqual(self.store.get_max_phy_offset(), 0)

    def test_illegal_queue_id(self) -> None:
        self.send(queue_id=0)
        response = self.send(queue_id=4)
        self.assertEqual(response.code, ResponseCode.SYSTEM_ERROR)
        self.assertTrue(response.remark.startswith("request queueId[4] is illegal, TopicConfig [topicName=TopicTest,"),
                        response.remark)
        self.assertTrue(response.remark.endswith("Producer: 127.0.0.1:5555"), response.remark)

    def test_no_write_permission(self) -> None:
        self.controller.topic_config_manager.update_topic_config(TopicConfig("ReadOnly", 4, 4, PermName.PERM_READ))
        response = self.send(topic="ReadOnly")
        self.assertEqual((response.code, response.remark),
                         (ResponseCode.NO_PERMISSION, "the topic[ReadOnly] sending message is forbidden"))
        self.assertEqual(self.store.get_max_phy_offset(), 0)

    def test_oversized_body(self) -> None:
        self.controller.store_config.max_message_size = 1024
        response = self.send(body=b"x" * 1025)
        self.assertEqual((response.code, response.remark), (
            ResponseCode.MESSAGE_ILLEGAL,
            "the message is illegal, maybe msg body or properties length not matched. msg body length limit 1024B, "
            "msg properties length limit 32KB."))
        self.assertNotIn("msgId", response.ext_fields)
        self.assertEqual(self.store.get_max_phy_offset(), 0)
        self.assertEqual(self.send(body=b"x" * 1024).code, ResponseCode.SUCCESS)

    def test_transaction_half_message_refused(self) -> None:
        # Java's rejectTransactionMessage (the half path itself: test_transaction.py)
        self.controller.settings["rejectTransactionMessage"] = True
        response = self.send(body_props=props(TRAN_MSG="true"))
        self.assertEqual((response.code, response.remark),
                         (ResponseCode.NO_PERMISSION, "the broker[127.0.0.1] sending transaction message is forbidden"))

    def test_not_accepting_yet(self) -> None:
        self.controller.settings["startAcceptSendRequestTimeStamp"] = T0 * 1000 + 60_000
        response = self.send()
        self.assertEqual(response.code, ResponseCode.SYSTEM_ERROR)
        self.assertTrue(response.remark.startswith("broker unable to service, until"), response.remark)

    def test_retry_topic_created_on_send(self) -> None:
        """A send to a missing %RETRY% topic creates it with one queue even if it cannot inherit."""
        response = self.send(topic="%RETRY%g", default_topic="NoSuchTopic", queue_id=0, reconsume_times=1)
        self.assertEqual(response.code, ResponseCode.SUCCESS, response.remark)
        tc = self.controller.topic_config_manager.select_topic_config("%RETRY%g")
        self.assertEqual((tc.read_queue_nums, tc.write_queue_nums), (1, 1))

    def test_retry_send_past_max_goes_to_dlq(self) -> None:
        """reconsumeTimes >= the group's retryMaxTimes (16): bound for %DLQ%g, queue 0. As in
        Java 4.9 the sender's DELAY is kept (setDelayTimeLevel(0) is undone by the request's
        properties), so it goes there through the schedule topic."""
        self.controller.topic_config_manager.create_topic_in_send_message_back_method("%RETRY%g", 1, 6)
        response = self.send(topic="%RETRY%g", queue_id=0, reconsume_times=15,
                             body_props=props(DELAY="3", RETRY_TOPIC="T"))
        self.assertEqual(response.code, ResponseCode.SUCCESS)
        self.assertEqual(self.stored(0).properties["REAL_TOPIC"], "%RETRY%g")  # delayed retry, not DLQ
        phys = self.store.get_max_phy_offset()
        response = self.send(topic="%RETRY%g", queue_id=0, reconsume_times=16,
                             body_props=props(DELAY="3", RETRY_TOPIC="T"))
        self.assertEqual(response.code, ResponseCode.SUCCESS)
        msg = self.stored(phys)
        self.assertEqual((msg.topic, msg.queue_id, msg.reconsume_times), ("SCHEDULE_TOPIC_XXXX", 2, 16))
        self.assertEqual((msg.properties["REAL_TOPIC"], msg.properties["REAL_QID"], msg.properties["DELAY"]),
                         ("%DLQ%g", "0", "3"))
        self.assertEqual(msg.properties["RETRY_TOPIC"], "T")
        dlq = self.controller.topic_config_manager.select_topic_config("%DLQ%g")
        self.assertEqual((dlq.write_queue_nums, dlq.perm), (1, 6))

    def test_retry_send_client_max_reconsume_times(self) -> None:
        """From V3_4_9 (version 49) on, the header's maxReconsumeTimes counts."""
        self.controller.topic_config_manager.create_topic_in_send_message_back_method("%RETRY%g", 1, 6)
        self.send(topic="%RETRY%g", queue_id=0, reconsume_times=2, max_reconsume_times=2)
        self.assertEqual(self.stored(0).topic, "%DLQ%g")
        phys = self.store.get_max_phy_offset()
        self.send(topic="%RETRY%g", queue_id=0, reconsume_times=2, max_reconsume_times=2, version=48)
        self.assertEqual(self.stored(phys).topic, "%RETRY%g")

    def test_retry_send_unknown_group(self) -> None:
        self.controller.subscription_group_manager.auto_create = False
        self.controller.topic_config_manager.create_topic_in_send_message_back_method("%RETRY%g", 1, 6)
        response = self.send(topic="%RETRY%g", queue_id=0)
        self.assertEqual((response.code, response.remark),
                         (ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, "subscription group not exist, g " + FAQ))

    def test_malformed_header(self) -> None:
        """A missing required field: SYSTEM_ERROR naming it; the next request is served normally."""
        ext = self.send_header().to_v2().to_ext_fields()
        del ext["b"]
        response = self.call(RequestCode.SEND_MESSAGE_V2, ext, b"x")
        self.assertEqual(response.code, ResponseCode.SYSTEM_ERROR)
        self.assertIn("the custom field <b> is null", response.remark)
        ext = self.send_header().to_ext_fields()
        ext["queueId"] = "one"
        response = self.call(RequestCode.SEND_MESSAGE, ext, b"x")
        self.assertEqual(response.code, ResponseCode.SYSTEM_ERROR)
        self.assertIn("queueId", response.remark)
        self.assertEqual(self.store.get_max_phy_offset(), 0)
        self.assertEqual(self.send().code, ResponseCode.SUCCESS)


class PutSettleTests(BrokerTestCase):
    """BrokerController.put_message: a put with nothing to wait for is answered at once and has
    what the waiting path gives it (the topic's put figures, the slaves woken, the put timed)."""

    def test_nothing_to_wait_for(self) -> None:
        ha = self.controller.ha_service
        assert ha is not None  # a master has one, slaves connected or not
        woken: list[None] = []
        self.patch(ha, "wakeup_all", lambda: woken.append(None))
        timed: list[tuple[int, bool]] = []
        self.patch(self.store.store_stats_service, "put_time", lambda ms, ok=True: timed.append((ms, ok)))
        self.reactor.advance(0.0004)  # mid-millisecond: the put's time is whole milliseconds apart
        response = self.send(queue_id=0)
        self.assertEqual(response.code, ResponseCode.SUCCESS)
        self.assertEqual((len(woken), timed), (1, [(0, True)]))
        self.assertEqual(self.controller.stats.put_total, 1)


class AutoCreateOffTests(BrokerTestCase):
    keys = {"autoCreateTopicEnable": False}

    def test_topic_not_exist(self) -> None:
        response = self.send(topic="Missing")
        self.assertEqual((response.code, response.remark),
                         (ResponseCode.TOPIC_NOT_EXIST, "topic[Missing] not exist, apply first please!" + FAQ))
        self.assertEqual(self.store.get_max_phy_offset(), 0)
        self.assertIsNone(self.controller.topic_config_manager.select_topic_config("Missing"))


class SendMessageBackTests(BrokerTestCase):
    def send_back(self, phys: int, delay_level: int = 0, group: str = "g", version: int = 409,
                  **kw: object) -> RemotingCommand:
        header = ConsumerSendMsgBackRequestHeader(phys, group, delay_level, **kw)  # type: ignore[arg-type]
        return self.call(RequestCode.CONSUMER_SEND_MSG_BACK, header.to_ext_fields(), version=version)

    def test_retry_then_dlq(self) -> None:
        """Retry topic with DELAY 3 + reconsumeTimes, RETRY_TOPIC and ORIGIN_MESSAGE_ID kept; the DLQ after max."""
        self.send(queue_id=0, body_props=props(TAGS="A", UNIQ_KEY="U1"))
        origin = offset_msg_id(("127.0.0.1", 10911), 0)
        chain = [0]
        for level in (3, 4, 5):
            response = self.send_back(chain[-1], max_reconsume_times=3)
            self.assertEqual((response.code, response.remark), (ResponseCode.SUCCESS, None))
            msg = self.last_record()
            chain.append(msg.commit_log_offset)
            self.assertEqual(msg.topic, "SCHEDULE_TOPIC_XXXX")  # a delayed retry goes through the schedule topic
            self.assertEqual(msg.queue_id, level - 1)
            p = msg.properties
            self.assertEqual((p["REAL_TOPIC"], p["DELAY"], p["RETRY_TOPIC"], p["ORIGIN_MESSAGE_ID"], p["UNIQ_KEY"]),
                             ("%RETRY%g", str(level), "TopicTest", origin, "U1"))
            self.assertEqual(msg.reconsume_times, level - 2)
            self.assertEqual(msg.body, b"hello")
        response = self.send_back(chain[-1], max_reconsume_times=3)
        self.assertEqual(response.code, ResponseCode.SUCCESS)
        msg = self.last_record()
        self.assertEqual((msg.topic, msg.queue_id, msg.reconsume_times), ("%DLQ%g", 0, 4))
        self.assertEqual(msg.properties["DELAY"], "0")  # Java's setDelayTimeLevel(0)
        self.assertEqual(msg.properties["WAIT"], "false")
        self.assertEqual((msg.properties["RETRY_TOPIC"], msg.properties["ORIGIN_MESSAGE_ID"]), ("TopicTest", origin))
        tcm = self.controller.topic_config_manager
        self.assertEqual(tcm.select_topic_config("%RETRY%g").write_queue_nums, 1)
        self.assertEqual(tcm.select_topic_config("%DLQ%g").write_queue_nums, 1)

    def last_record(self):  # type: ignore[no-untyped-def]
        """The newest record, walking the CommitLog record by record."""
        phys, last = 0, None
        end = self.store.get_max_phy_offset()
        while phys < end:
            last = self.store.look_message_by_offset(phys)
            phys += last.store_size
        return last

    def test_explicit_level_and_negative_level(self) -> None:
        self.send(queue_id=0)
        self.send_back(0, delay_level=7)
        self.assertEqual(self.last_record().properties["DELAY"], "7")
        self.send_back(0, delay_level=-1)  # straight to the DLQ
        self.assertEqual(self.last_record().topic, "%DLQ%g")

    def test_group_max_applies_without_client_max(self) -> None:
        """Without maxReconsumeTimes (or before V3_4_9) the group's retryMaxTimes counts."""
        sgc = self.controller.subscription_group_manager.find_subscription_group_config("g")
        sgc.retry_max_times = 0
        self.send(queue_id=0)
        self.send_back(0)
        self.assertEqual(self.last_record().topic, "%DLQ%g")
        self.send_back(0, max_reconsume_times=5, version=48)
        self.assertEqual(self.last_record().topic, "%DLQ%g")
        self.send_back(0, max_reconsume_times=5)
        self.assertEqual(self.last_record().topic, "SCHEDULE_TOPIC_XXXX")

    def test_errors(self) -> None:
        response = self.send_back(12345)
        self.assertEqual((response.code, response.remark),
                         (ResponseCode.SYSTEM_ERROR, "look message by offset failed, 12345"))
        self.controller.subscription_group_manager.auto_create = False
        response = self.send_back(0, group="unknown")
        self.assertEqual((response.code, response.remark),
                         (ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, "subscription group not exist, unknown " + FAQ))
        sgc = self.controller.subscription_group_manager.find_subscription_group_config("TOOLS_CONSUMER")
        sgc.retry_queue_nums = 0
        # no retry queue: the message is dropped
        self.assertEqual(self.send_back(0, group="TOOLS_CONSUMER").code, ResponseCode.SUCCESS)
        self.assertEqual(self.store.get_max_phy_offset(), 0)


class ClientTests(BrokerTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.notified: list[tuple[object, str]] = []
        self.controller.notify_consumer_ids_changed = lambda channel, group: self.notified.append((channel, group))

    def test_heartbeat_registers_consumer_and_producer(self) -> None:
        response = self.call(RequestCode.HEART_BEAT, body=heartbeat("c1", ("pg",), {"g": {"T": "A || B"}}).body)
        self.assertEqual(response.code, ResponseCode.SUCCESS)
        c = self.controller
        info = c.consumer_manager.get_consumer_group_info("g")
        self.assertEqual(info.all_client_ids(), ["c1"])
        self.assertEqual((info.consume_type, info.message_model), ("CONSUME_PASSIVELY", "CLUSTERING"))
        self.assertEqual(info.subscription_table["T"].tags_set, ["A", "B"])
        self.assertIs(info.find_channel("c1").channel, self.ctx)
        self.assertIs(c.producer_manager.find_channel("c1"), self.ctx)
        retry = c.topic_config_manager.select_topic_config("%RETRY%g")
        self.assertEqual((retry.read_queue_nums, retry.write_queue_nums, retry.perm), (1, 1, 6))
        self.assertIn("g", c.subscription_group_manager.subscription_group_table)
        self.assertEqual(self.notified, [(self.ctx, "g")])

    def test_second_consumer_notifies_all(self) -> None:
        other = Ctx("127.0.0.1:6666")
        self.call(RequestCode.HEART_BEAT, body=heartbeat("c1", (), {"g": {"T": "*"}}).body)
        self.call(RequestCode.HEART_BEAT, body=heartbeat("c1", (), {"g": {"T": "*"}}).body)  # nothing new
        self.call(RequestCode.HEART_BEAT, body=heartbeat("c2", (), {"g": {"T": "*"}}).body, ctx=other)
        self.assertEqual(self.notified, [(self.ctx, "g"), (self.ctx, "g"), (other, "g")])
        self.controller.settings["notifyConsumerIdsChangedEnable"] = False
        self.call(RequestCode.HEART_BEAT, body=heartbeat("c3", (), {"g": {"T": "*"}}).body, ctx=Ctx("x:1"))
        self.assertEqual(len(self.notified), 3)

    def test_bad_heartbeat_body(self) -> None:
        response = self.call(RequestCode.HEART_BEAT, body=b"{not json")
        self.assertEqual(response.code, ResponseCode.SYSTEM_ERROR)
        self.assertEqual(self.controller.consumer_manager.consumer_table, {})

    def test_unregister_client(self) -> None:
        self.call(RequestCode.HEART_BEAT, body=heartbeat("c1", ("pg",), {"g": {"T": "*"}}).body)
        ext = UnregisterClientRequestHeader("c1", "pg", "g").to_ext_fields()
        self.assertEqual(self.call(RequestCode.UNREGISTER_CLIENT, ext).code, ResponseCode.SUCCESS)
        self.assertIsNone(self.controller.consumer_manager.get_consumer_group_info("g"))
        self.assertEqual(self.controller.producer_manager.group_channel_table, {})

    def test_channel_closed(self) -> None:
        self.call(RequestCode.HEART_BEAT, body=heartbeat("c1", ("pg",), {"g": {"T": "*"}}).body)
        self.controller.channel_closed(self.ctx)
        self.assertIsNone(self.controller.consumer_manager.get_consumer_group_info("g"))
        self.assertIsNone(self.controller.producer_manager.find_channel("c1"))

    def test_consumer_list_by_group(self) -> None:
        ext = GetConsumerListByGroupRequestHeader("g").to_ext_fields()
        response = self.call(RequestCode.GET_CONSUMER_LIST_BY_GROUP, ext)
        self.assertEqual((response.code, response.remark), (ResponseCode.SYSTEM_ERROR, "no consumer for this group, g"))
        self.call(RequestCode.HEART_BEAT, body=heartbeat("c1", (), {"g": {"T": "*"}}).body)
        self.call(RequestCode.HEART_BEAT, body=heartbeat("c2", (), {"g": {"T": "*"}}).body, ctx=Ctx("1.2.3.4:5"))
        response = self.call(RequestCode.GET_CONSUMER_LIST_BY_GROUP, ext)
        self.assertEqual(response.code, ResponseCode.SUCCESS)
        self.assertEqual(fastjson.loads(response.body), {"consumerIdList": ["c1", "c2"]})

    def test_check_client_config(self) -> None:
        body = fastjson.dumps({"group": "g", "subscriptionData": {"topic": "T", "subString": "A",
                                                                  "expressionType": "TAG"}})
        self.assertEqual(self.call(RequestCode.CHECK_CLIENT_CONFIG, body=body).code, ResponseCode.SUCCESS)
        body = fastjson.dumps({"group": "g", "subscriptionData": {"topic": "T", "subString": "a > 1",
                                                                  "expressionType": "SQL92"}})
        response = self.call(RequestCode.CHECK_CLIENT_CONFIG, body=body)
        self.assertEqual((response.code, response.remark),
                         (ResponseCode.SYSTEM_ERROR, "The broker does not support consumer to filter message by SQL92"))


class ConsumerOffsetTests(BrokerTestCase):
    def query(self, topic: str = "TopicTest", queue_id: int = 0) -> RemotingCommand:
        return self.call(RequestCode.QUERY_CONSUMER_OFFSET,
                         QueryConsumerOffsetRequestHeader("g", topic, queue_id).to_ext_fields())

    def test_update_and_query(self) -> None:
        self.send()  # creates TopicTest
        ext = UpdateConsumerOffsetRequestHeader("g", "TopicTest", 1, 42).to_ext_fields()
        self.assertEqual(self.call(RequestCode.UPDATE_CONSUMER_OFFSET, ext).code, ResponseCode.SUCCESS)
        self.assertEqual(self.controller.consumer_offset_manager.query_offset("g", "TopicTest", 1), 42)
        response = self.query(queue_id=1)
        self.assertEqual((response.code, response.ext_fields["offset"]), (ResponseCode.SUCCESS, "42"))

    def test_fresh_queue_starting_at_zero(self) -> None:
        """No committed offset and the queue starts at 0 (or is empty): read from 0."""
        response = self.query(queue_id=3)
        self.assertEqual((response.code, response.ext_fields["offset"]), (ResponseCode.SUCCESS, "0"))
        self.send(queue_id=0)
        response = self.query(queue_id=0)
        self.assertEqual((response.code, response.ext_fields["offset"]), (ResponseCode.SUCCESS, "0"))

    def test_not_found_when_queue_no_longer_starts_at_zero(self) -> None:
        self.patch(self.store, "get_min_offset_in_queue", lambda topic, queue_id: 300)
        response = self.query()
        self.assertEqual((response.code, response.remark), (
            ResponseCode.QUERY_NOT_FOUND, "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first"))
        self.assertNotIn("offset", response.ext_fields)


class QueryTests(BrokerTestCase):
    def test_query_by_key_and_view_by_id(self) -> None:
        self.send(queue_id=0, body_props=props(KEYS="order-1 order-2", UNIQ_KEY="U1", TAGS="A"))
        second = self.store.get_max_phy_offset()
        self.send(queue_id=1, body=b"other", body_props=props(KEYS="order-3"))
        ext = QueryMessageRequestHeader("TopicTest", "order-2", 32, 0, T0 * 1000 + 1000).to_ext_fields()
        response = self.call(RequestCode.QUERY_MESSAGE, ext)
        self.assertEqual(response.code, ResponseCode.SUCCESS)
        found = decode_messages(response.body)
        self.assertEqual([(m.body, m.commit_log_offset) for m in found], [(b"hello", 0)])
        self.assertIn("indexLastUpdateTimestamp", response.ext_fields)
        self.assertIn("indexLastUpdatePhyoffset", response.ext_fields)
        # by unique key (what queryMsgById with a client id does)
        ext = QueryMessageRequestHeader("TopicTest", "U1", 1, 0, T0 * 1000 + 1000).to_ext_fields()
        ext["_UNIQUE_KEY_QUERY"] = "true"
        self.assertEqual(len(decode_messages(self.call(RequestCode.QUERY_MESSAGE, ext).body)), 1)
        # nothing under that key
        ext = QueryMessageRequestHeader("TopicTest", "nope", 32, 0, T0 * 1000 + 1000).to_ext_fields()
        response = self.call(RequestCode.QUERY_MESSAGE, ext)
        self.assertEqual((response.code, response.remark),
                         (ResponseCode.QUERY_NOT_FOUND, "can not find message, maybe time range not correct"))
        # VIEW_MESSAGE_BY_ID: the raw record at a CommitLog offset
        response = self.call(RequestCode.VIEW_MESSAGE_BY_ID, ViewMessageRequestHeader(second).to_ext_fields())
        self.assertEqual(response.code, ResponseCode.SUCCESS)
        msg = decode_message(response.body, 0)[0]
        self.assertEqual((msg.body, msg.queue_id, msg.commit_log_offset), (b"other", 1, second))
        response = self.call(RequestCode.VIEW_MESSAGE_BY_ID, ViewMessageRequestHeader(999_999).to_ext_fields())
        self.assertEqual((response.code, response.remark),
                         (ResponseCode.SYSTEM_ERROR, "can not find message by the offset, 999999"))


class SyncFlushTests(BrokerTestCase):
    """flushDiskType=SYNC_FLUSH: the send is answered once the group commit covers it."""

    keys = {"flushDiskType": "SYNC_FLUSH"}

    def send_later(self, **kw: object) -> Deferred:
        header = self.send_header(queue_id=0, **kw)
        d = self.dispatch(RequestCode.SEND_MESSAGE, header.to_ext_fields(), b"hello")
        self.assertIsInstance(d, Deferred)
        assert isinstance(d, Deferred)
        return d

    def test_answered_after_group_commit(self) -> None:
        gc = self.store.group_commit_service
        d1 = self.send_later()
        d2 = self.send_later()
        self.assertNoResult(d1)
        self.assertEqual(gc.pending(), 2)
        self.assertEqual(gc.commit(), 2)
        r1, r2 = self.successResultOf(d1), self.successResultOf(d2)
        self.assertEqual((r1.code, r1.opaque, r1.ext_fields["queueOffset"]), (ResponseCode.SUCCESS, 77, "0"))
        self.assertEqual((r2.code, r2.ext_fields["queueOffset"]), (ResponseCode.SUCCESS, "1"))
        # both puts joined one group commit: one hop back to the reactor answers them
        self.assertEqual(len(self.reactor.from_thread), 1)
        self.assertEqual(self.store.commit_log.flushed_where, self.store.get_max_phy_offset())

    def test_batch_answered_after_group_commit(self) -> None:
        header = self.send_header(queue_id=0, body_props=props(), batch=True)
        body = encode_batch([Message("TopicTest", b"a"), Message("TopicTest", b"b")])
        d = self.dispatch(RequestCode.SEND_BATCH_MESSAGE, header.to_v2().to_ext_fields(), body)
        self.assertIsInstance(d, Deferred)
        self.assertNoResult(d)
        self.store.group_commit_service.commit()
        response = self.successResultOf(d)
        self.assertEqual(response.code, ResponseCode.SUCCESS)
        self.assertEqual(len(response.ext_fields["msgId"].split(",")), 2)

    def test_flush_timeout(self) -> None:
        """A request the flush does not cover in time: FLUSH_DISK_TIMEOUT, with the result header."""
        d = self.send_later()
        self.store.group_commit_service.fail_all(PutMessageStatus.FLUSH_DISK_TIMEOUT)
        response = self.successResultOf(d)
        self.assertEqual((response.code, response.remark), (ResponseCode.FLUSH_DISK_TIMEOUT, None))
        self.assertEqual(response.ext_fields["queueOffset"], "0")

    def test_wait_false_answers_at_once(self) -> None:
        header = self.send_header(queue_id=0, body_props=props(WAIT="false"))
        response = self.dispatch(RequestCode.SEND_MESSAGE, header.to_ext_fields(), b"x")
        self.assertIsInstance(response, RemotingCommand)
        self.assertEqual(response.code, ResponseCode.SUCCESS)
        self.assertEqual(self.store.group_commit_service.pending(), 0)

    def test_wait_read_as_java_boolean(self) -> None:
        """WAIT is Boolean.parseBoolean: any letter case of "true" waits, anything else does not."""
        header = self.send_header(queue_id=0, body_props=props(WAIT="TRUE"))
        self.assertIsInstance(self.dispatch(RequestCode.SEND_MESSAGE, header.to_ext_fields(), b"x"), Deferred)
        header = self.send_header(queue_id=0, body_props=props(WAIT="yes"))
        self.assertIsInstance(self.dispatch(RequestCode.SEND_MESSAGE, header.to_ext_fields(), b"x"), RemotingCommand)

    def test_batch_wait_false_answers_at_once(self) -> None:
        """A batch's WAIT (in the header's properties) is honoured too, as by Java's store."""
        header = self.send_header(queue_id=0, body_props=props(WAIT="false"), batch=True)
        body = encode_batch([Message("TopicTest", b"a"), Message("TopicTest", b"b")])
        response = self.dispatch(RequestCode.SEND_BATCH_MESSAGE, header.to_v2().to_ext_fields(), body)
        self.assertIsInstance(response, RemotingCommand)
        self.assertEqual(response.code, ResponseCode.SUCCESS)

    def test_send_back_does_not_wait(self) -> None:
        d = self.send_later()
        self.store.group_commit_service.commit()
        self.successResultOf(d)
        header = ConsumerSendMsgBackRequestHeader(0, "g", 0)
        response = self.dispatch(RequestCode.CONSUMER_SEND_MSG_BACK, header.to_ext_fields())
        self.assertIsInstance(response, RemotingCommand)
        self.assertEqual(response.code, ResponseCode.SUCCESS)
