"""Tests for the client request builders and response parsers shared by both clients."""

from __future__ import annotations

import zlib

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.common import fastjson
from rocketmq_tx.common.message import Message, MessageConst, MessageExt, MessageQueue
from rocketmq_tx.common.messagecodec import decode_batch, encode_message, java_string_hash
from rocketmq_tx.common.msgid import UniqueKeyGenerator
from rocketmq_tx.common.route import BrokerData, QueueData, TopicRouteData
from rocketmq_tx.remoting import MQBrokerError, RemotingCommand, RequestCode, api
from rocketmq_tx.remoting.api import MQClientError, PullStatus, SendStatus, SubscriptionData
from rocketmq_tx.remoting.headers.client import UnregisterClientRequestHeader
from rocketmq_tx.remoting.headers.pull import PullMessageRequestHeader, PullSysFlag
from rocketmq_tx.remoting.headers.send import SendMessageRequestHeaderV2

MQ = MessageQueue("T", "broker-a", 2)
IDS = UniqueKeyGenerator(ip="10.0.0.1", pid=7, class_loader_hash=1)


def respond(code: int, ext: dict[str, str] | None = None, body: bytes = b"",
            remark: str | None = None) -> RemotingCommand:
    return RemotingCommand.request(0).make_response(code, remark, ext, body)


class RouteTests(SynchronousTestCase):
    def test_request(self) -> None:
        """The topic travels in the header; version 409 asks for standard JSON."""
        request = api.route_request("T")
        self.assertEqual((request.code, request.ext_fields, request.version), (105, {"topic": "T"}, 409))

    def test_both_json_forms(self) -> None:
        """Quoted and fastjson's bare numeric broker-id keys parse the same."""
        route = TopicRouteData([QueueData("broker-a", 4, 4, 6)], [BrokerData("C", "broker-a", {0: "1.2.3.4:10911"})])
        for body in (fastjson.dumps(route.to_json()), fastjson.dumps_legacy(route.to_json())):
            parsed = api.parse_route_response(respond(0, body=body))
            self.assertEqual(parsed.broker_datas[0].broker_addrs, {0: "1.2.3.4:10911"})
        self.assertIn(b'{0:"1.2.3.4', fastjson.dumps_legacy(route.to_json()))

    def test_not_exist(self) -> None:
        error = self.assertRaises(MQBrokerError, api.parse_route_response, respond(17, remark="No topic route"))
        self.assertEqual((error.code, error.remark), (17, "No topic route"))


class SendTests(SynchronousTestCase):
    def test_prepare_sets_unique_key_once(self) -> None:
        """UNIQ_KEY is set in the message (32 hex characters) and kept on a second prepare (a retry)."""
        msg = Message("T", b"x")
        first = api.prepare_message(msg, IDS)
        self.assertEqual(len(first.msg_id), 32)
        self.assertEqual(msg.unique_key, first.msg_id)
        self.assertEqual(api.prepare_message(msg, IDS).msg_id, first.msg_id)

    def test_compression_threshold(self) -> None:
        """4095 bytes travel raw; 4096 are zlib-compressed with sysFlag 0x301."""
        small = api.prepare_message(Message("T", b"a" * 4095), IDS)
        self.assertEqual((small.sys_flag, len(small.body)), (0, 4095))
        big = api.prepare_message(Message("T", b"a" * 4096), IDS)
        self.assertEqual(big.sys_flag, 0x301)
        self.assertEqual(zlib.decompress(big.body), b"a" * 4096)

    def test_validation(self) -> None:
        for msg in (Message("", b"x"), Message("T", b""), Message("bad topic", b"x"), Message("T" * 128, b"x")):
            self.assertRaises(MQClientError, api.prepare_message, msg, IDS)

    def test_request_header(self) -> None:
        """SEND_MESSAGE_V2 with keys a..n plus bname; properties carry keys, tags, delay."""
        msg = Message("T", b"body")
        msg.tags, msg.keys, msg.delay_time_level = "TagA", ["k1", "k2"], 3
        prepared = api.prepare_message(msg, IDS)
        request = api.send_request(prepared, "PG", MQ, born_timestamp=123)
        self.assertEqual(request.code, RequestCode.SEND_MESSAGE_V2)
        header = SendMessageRequestHeaderV2.from_ext_fields(request.ext_fields)
        self.assertEqual((header.producer_group, header.topic, header.default_topic, header.default_topic_queue_nums,
                          header.queue_id, header.born_timestamp, header.batch, header.broker_name),
                         ("PG", "T", "TBW102", 4, 2, 123, False, "broker-a"))
        self.assertEqual(request.ext_fields["bname"], "broker-a")
        self.assertIn("KEYS\x01k1 k2", header.properties)
        self.assertIn("DELAY\x013", header.properties)
        self.assertEqual(request.body, b"body")

    def test_batch(self) -> None:
        """SEND_BATCH_MESSAGE: per-message UNIQ_KEYs in the body, their comma-joined ids as msg_id."""
        msgs = [Message("T", b"a"), Message("T", b"b")]
        prepared = api.prepare_batch(msgs, IDS)
        request = api.send_request(prepared, "PG", MQ)
        self.assertEqual(request.code, RequestCode.SEND_BATCH_MESSAGE)
        self.assertEqual(request.ext_fields["m"], "true")
        inner = decode_batch(request.body, "T")
        self.assertEqual([m.unique_key for m in inner], [m.unique_key for m in msgs])
        self.assertEqual(prepared.msg_id, ",".join(m.unique_key or "" for m in msgs))
        self.assertRaises(MQClientError, api.prepare_batch, [Message("T", b"a"), Message("U", b"b")], IDS)
        delayed = Message("T", b"a")
        delayed.delay_time_level = 2
        self.assertRaises(MQClientError, api.prepare_batch, [delayed], IDS)

    def test_response_statuses(self) -> None:
        """0/10/11/12 map to SendStatus; msgId is the UNIQ_KEY, offsetMsgId the header's."""
        ext = {"msgId": "OFFSETID", "queueId": "3", "queueOffset": "42", "MSG_REGION": "R1", "TRACE_ON": "false"}
        for code, status in ((0, SendStatus.SEND_OK), (10, SendStatus.FLUSH_DISK_TIMEOUT),
                             (11, SendStatus.SLAVE_NOT_AVAILABLE), (12, SendStatus.FLUSH_SLAVE_TIMEOUT)):
            result = api.parse_send_response(respond(code, ext), MQ, "UNIQ")
            self.assertEqual(result.send_status, status)
        self.assertEqual((result.msg_id, result.offset_msg_id, result.message_queue, result.queue_offset,
                          result.region_id, result.trace_on),
                         ("UNIQ", "OFFSETID", MessageQueue("T", "broker-a", 3), 42, "R1", False))

    def test_response_error(self) -> None:
        error = self.assertRaises(MQBrokerError, api.parse_send_response, respond(14, remark="busy"), MQ, "U")
        self.assertEqual(error.code, 14)


class MalformedBodyTests(SynchronousTestCase):
    """A body that is not what the code says is an MQBrokerError, as for routes (found by fuzzing)."""

    def test_lock_batch_response(self) -> None:
        for body in (b"{not json", b"[1]", b'{"lockOKMQSet":[{"topic":"T"}]}', b'{"lockOKMQSet":[{"queueId":"x"}]}'):
            error = self.assertRaises(MQBrokerError, api.parse_lock_batch_response, respond(0, body=body))
            self.assertIn("malformed LockBatchResponseBody", error.remark)

    def test_consumer_list_response(self) -> None:
        for body in (b"\xff", b"[1]", b'{"consumerIdList":5}'):
            error = self.assertRaises(MQBrokerError, api.parse_consumer_list_response, respond(0, body=body))
            self.assertIn("malformed consumer list body", error.remark)


class SubscriptionTests(SynchronousTestCase):
    def test_build(self) -> None:
        sub = SubscriptionData.build("T", " TagA || TagB ||TagA", sub_version=5)
        self.assertEqual((sub.tags_set, sub.code_set), (["TagA", "TagB"], [java_string_hash("TagA"),
                                                                              java_string_hash("TagB")]))
        self.assertEqual(SubscriptionData.build("T", "").sub_string, "*")
        self.assertEqual(SubscriptionData.build("T", None).tags_set, [])

    def test_build_keeps_first_seen_order(self) -> None:
        """Repeats dropped wherever they are, empty tags skipped, the hash codes follow the tags."""
        sub = SubscriptionData.build("T", "C||A|| ||B||A||C || D", sub_version=1)
        self.assertEqual(sub.tags_set, ["C", "A", "B", "D"])
        self.assertEqual(sub.code_set, [java_string_hash(t) for t in "CABD"])
        self.assertRaises(MQClientError, SubscriptionData.build, "T", "|| || ||")

    def test_many_tags_linear(self) -> None:
        """100,000 tags (a 0.7 MB expression, the limit lifted): each distinct tag hashed once.
        The time (it was minutes with a list's membership test) is bench/bounded.py's
        subscription-100k-tags."""
        self.patch(api, "MAX_SUBSCRIPTION_EXPRESSION_LENGTH", 1 << 30)
        expression = "||".join(f"T{i}" for i in range(100_000)) + "||T7"
        hashed: list[str] = []
        real_hash = api.java_string_hash
        self.patch(api, "java_string_hash", lambda tag: hashed.append(tag) or real_hash(tag))
        sub = SubscriptionData.build("T", expression, sub_version=1)
        self.assertEqual(len(hashed), 100_000)
        self.assertEqual((len(sub.tags_set), sub.tags_set[:2], sub.tags_set[-1]), (100_000, ["T0", "T1"], "T99999"))

    def test_expression_length_limit(self) -> None:
        """Up to 64 Ki characters parse (thousands of tags); longer is refused."""
        limit = api.MAX_SUBSCRIPTION_EXPRESSION_LENGTH
        self.assertEqual(limit, 65536)
        at_limit = ("||".join(f"{i:05d}" for i in range(9363)) + "||")[:limit - 1] + "x"
        self.assertEqual(len(at_limit), limit)
        self.assertEqual(len(SubscriptionData.build("T", at_limit, sub_version=1).tags_set), 9363)
        error = self.assertRaises(MQClientError, SubscriptionData.build, "T", at_limit + "y")
        self.assertIn("exceeds 65536", str(error))
        # Surrounding blanks do not count, as they are not part of the expression.
        self.assertEqual(len(SubscriptionData.build("T", f"  {at_limit}  ", sub_version=1).tags_set), 9363)
        # Other expression types are not split here: no limit applies.
        self.assertEqual(SubscriptionData.build("T", "a" * (limit + 1), expression_type="SQL92").sub_string,
                         "a" * (limit + 1))

    def test_heartbeat_body(self) -> None:
        """HeartbeatData JSON with Java's field names; it round-trips."""
        data = api.HeartbeatData("1.2.3.4@1#2", ["PG"], [api.ConsumerData(
            "CG", subscriptions=[SubscriptionData.build("T", "A", sub_version=9)])])
        request = api.heartbeat_request(data)
        self.assertEqual(request.code, RequestCode.HEART_BEAT)
        body = fastjson.loads(request.body)
        self.assertEqual(body["clientID"], "1.2.3.4@1#2")
        self.assertEqual(body["producerDataSet"], [{"groupName": "PG"}])
        consumer = body["consumerDataSet"][0]
        self.assertEqual((consumer["consumeType"], consumer["messageModel"], consumer["consumeFromWhere"]),
                         ("CONSUME_ACTIVELY", "CLUSTERING", "CONSUME_FROM_LAST_OFFSET"))
        self.assertEqual(consumer["subscriptionDataSet"][0]["codeSet"], [65])
        self.assertEqual(api.HeartbeatData.from_json(body), data)


def stored(topic: str, offset: int, tags: str | None, props: dict[str, str] | None = None) -> MessageExt:
    msg = MessageExt(topic, f"m{offset}".encode(), properties=dict(props or {}), queue_offset=offset,
                     store_host=("10.0.0.9", 10911), born_host=("10.0.0.8", 5000), commit_log_offset=100 * offset)
    if tags:
        msg.tags = tags
    return msg


class PullTests(SynchronousTestCase):
    def test_request(self) -> None:
        sub = SubscriptionData.build("T", "TagA", sub_version=77)
        request = api.pull_request("CG", MQ, 10, 32, sub)
        self.assertEqual(request.code, RequestCode.PULL_MESSAGE)
        header = PullMessageRequestHeader.from_ext_fields(request.ext_fields)
        self.assertEqual((header.consumer_group, header.queue_id, header.queue_offset, header.max_msg_nums,
                          header.sys_flag, header.subscription, header.sub_version, header.broker_name),
                         ("CG", 2, 10, 32, PullSysFlag.SUBSCRIPTION, "TagA", 77, "broker-a"))
        long_poll = api.pull_request("CG", MQ, 0, 1, sub, commit_offset=5, suspend_timeout_ms=15000)
        self.assertEqual(int(long_poll.ext_fields["sysFlag"]), 0x7)
        # to a slave: Java's clearCommitOffsetFlag drops the flag but the header keeps the offset
        to_slave = api.pull_request("CG", MQ, 0, 1, sub, commit_offset=5, suspend_timeout_ms=15000, slave=True)
        self.assertEqual((int(to_slave.ext_fields["sysFlag"]), to_slave.ext_fields["commitOffset"]), (0x6, "5"))

    def test_found_filters_and_annotates(self) -> None:
        """FOUND: records decoded, other tags dropped, MIN/MAX_OFFSET added, TRAN_MSG gets a transaction id."""
        body = b"".join(encode_message(m) for m in (
            stored("T", 0, "TagA"), stored("T", 1, "TagB"), stored("T", 2, None),
            stored("T", 3, "TagA", {"TRAN_MSG": "true", "UNIQ_KEY": "U3"})))
        ext = {"suggestWhichBrokerId": "0", "nextBeginOffset": "4", "minOffset": "0", "maxOffset": "9"}
        result = api.parse_pull_response(respond(0, ext, body), MQ, SubscriptionData.build("T", "TagA"))
        self.assertEqual(result.pull_status, PullStatus.FOUND)
        self.assertEqual((result.next_begin_offset, result.min_offset, result.max_offset), (4, 0, 9))
        self.assertEqual([m.queue_offset for m in result.msg_found_list], [0, 3])
        self.assertEqual(result.msg_found_list[0].properties[MessageConst.PROPERTY_MAX_OFFSET], "9")
        self.assertEqual(result.msg_found_list[1].transaction_id, "U3")
        everything = api.parse_pull_response(respond(0, ext, body), MQ, SubscriptionData.build("T", "*"))
        self.assertEqual(len(everything.msg_found_list), 4)

    def test_statuses(self) -> None:
        ext = {"suggestWhichBrokerId": "0", "nextBeginOffset": "7", "minOffset": "0", "maxOffset": "7"}
        sub = SubscriptionData.build("T")
        for code, status in ((19, PullStatus.NO_NEW_MSG), (20, PullStatus.NO_MATCHED_MSG),
                             (21, PullStatus.OFFSET_ILLEGAL)):
            result = api.parse_pull_response(respond(code, ext), MQ, sub)
            self.assertEqual((result.pull_status, result.next_begin_offset, result.msg_found_list), (status, 7, []))
        error = self.assertRaises(MQBrokerError, api.parse_pull_response, respond(24, remark="no group"), MQ, sub)
        self.assertEqual(error.code, 24)


class OffsetAndQueryTests(SynchronousTestCase):
    def test_offsets(self) -> None:
        self.assertEqual(api.query_consumer_offset_request("CG", MQ).ext_fields,
                         {"consumerGroup": "CG", "topic": "T", "queueId": "2", "bname": "broker-a"})
        self.assertEqual(api.parse_query_consumer_offset_response(respond(0, {"offset": "12"})), 12)
        self.assertIsNone(api.parse_query_consumer_offset_response(respond(22, remark="Not found")))
        update = api.update_consumer_offset_request("CG", MQ, 5, oneway=True)
        self.assertEqual((update.code, update.ext_fields["commitOffset"], update.is_oneway), (15, "5", True))
        for request, code in ((api.get_max_offset_request(MQ), 30), (api.get_min_offset_request(MQ), 31),
                              (api.search_offset_request(MQ, 99), 29)):
            self.assertEqual((request.code, request.ext_fields["queueId"]), (code, "2"))
        self.assertEqual(api.parse_offset_response(respond(0, {"offset": "8"})), 8)
        self.assertRaises(MQBrokerError, api.parse_offset_response, respond(1, remark="x"))
        self.assertEqual(api.parse_earliest_msg_storetime_response(respond(0, {"timestamp": "55"})), 55)

    def test_membership(self) -> None:
        request = api.unregister_client_request("id", consumer_group="CG")
        self.assertEqual(UnregisterClientRequestHeader.from_ext_fields(request.ext_fields).client_id, "id")
        self.assertEqual(request.ext_fields, {"clientID": "id", "consumerGroup": "CG"})
        body = b'{"consumerIdList":["a@1","b@2"]}'
        self.assertEqual(api.parse_consumer_list_response(respond(0, body=body)), ["a@1", "b@2"])
        self.assertRaises(MQBrokerError, api.parse_consumer_list_response, respond(1, remark="no consumer"))

    def test_send_back_and_queries(self) -> None:
        msg = stored("T", 3, "A", {"UNIQ_KEY": "U"})
        request = api.send_back_request(msg, "CG", 0, max_reconsume_times=2)
        self.assertEqual((request.code, request.ext_fields["offset"], request.ext_fields["originMsgId"],
                          request.ext_fields["maxReconsumeTimes"]), (36, "300", "U", "2"))
        view = api.view_message_request(300)
        self.assertEqual((view.code, view.ext_fields), (33, {"offset": "300"}))
        query = api.query_message_request("T", "k1", 32, 0, 10, unique_key=True)
        self.assertEqual((query.code, query.ext_fields["_UNIQUE_KEY_QUERY"], query.ext_fields["endTimestamp"]),
                         (12, "true", "10"))
        self.assertEqual(api.parse_messages_response(respond(22, remark="none")), [])
        found = api.parse_messages_response(respond(0, body=encode_message(msg)))
        self.assertEqual(found[0].body, b"m3")


class ResetOffsetBodyTests(SynchronousTestCase):
    def test_bean_keys_and_to_string_keys(self) -> None:
        body = (b'{"offsetTable":{{"brokerName":"b","queueId":1,"topic":"T"}:7,'
                b'"MessageQueue [topic=T, brokerName=b, queueId=2]":9}}')
        self.assertEqual(api.parse_reset_offset_body(body),
                         {MessageQueue("T", "b", 1): 7, MessageQueue("T", "b", 2): 9})
        self.assertEqual(api.parse_reset_offset_body(b""), {})


class SendRetryPlanTests(SynchronousTestCase):
    """The retry rule both producers follow."""

    class Info:
        """Publish info stub: two brokers, remembers what it was asked to avoid."""

        def __init__(self) -> None:
            self.avoided: list[str | None] = []

        def select_queue(self, avoid: str | None) -> MessageQueue:
            self.avoided.append(avoid)
            return MessageQueue("T", "b" if avoid == "a" else "a", 0)

    def test_retries_elsewhere_then_gives_up(self) -> None:
        """Three attempts by default, each avoiding the broker that failed last; then one error."""
        from rocketmq_tx.remoting.api import SendRetryPlan
        from rocketmq_tx.remoting.errors import RemotingTimeoutError

        info = self.Info()
        plan = SendRetryPlan(info, 2, 3.0, lambda: 0.0)
        tried = []
        while (step := plan.next()) is not None:
            tried.append(step[0].broker_name)
            plan.failed(step[0], RemotingTimeoutError("slow") if len(tried) < 3 else MQBrokerError(17, "gone"))
        self.assertEqual(tried, ["a", "b", "a"])
        self.assertEqual(info.avoided, [None, "a", "b"])
        error = plan.give_up()
        self.assertIsInstance(error, MQClientError)
        self.assertEqual(error.code, 17)
        self.assertIn("Send [3] times", str(error))

    def test_final_answers_and_deadline(self) -> None:
        """A broker answer outside the retry codes is raised at once; no attempt starts after the deadline."""
        from rocketmq_tx.remoting.api import SendRetryPlan

        plan = SendRetryPlan(self.Info(), 2, 3.0, lambda: 0.0)
        mq, _ = plan.next()
        self.assertRaises(MQBrokerError, plan.failed, mq, MQBrokerError(13, "illegal"))
        clock = [0.0]
        plan = SendRetryPlan(self.Info(), 2, 3.0, lambda: clock[0])
        mq, remaining = plan.next()
        self.assertEqual(remaining, 3.0)
        clock[0] = 3.5
        self.assertIsNone(plan.next())
