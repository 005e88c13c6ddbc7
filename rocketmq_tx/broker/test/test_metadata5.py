"""
5.x topic and group metadata on the broker: topic attributes at creation (UPDATE_AND_CREATE_TOPIC
and _LIST), kept in topics.json and answered by the topic config codes; GET_SUBSCRIPTIONGROUP_CONFIG,
UPDATE_AND_CREATE_SUBSCRIPTIONGROUP(_LIST) with attributes, QUERY_TOPICS_BY_CONSUMER,
QUERY_SUBSCRIPTION_BY_CONSUMER, the message request modes, and the COMPACTION send check.
Codes and remarks are Java 5.5.0's.
"""

from __future__ import annotations

import json
from typing import Any

from twisted.internet.defer import fail, succeed
from twisted.internet.task import Clock
from twisted.python.failure import Failure
from twisted.trial.unittest import TestCase

from rocketmq_tx.broker.outerapi import BrokerOuterAPI
from rocketmq_tx.broker.processors import admin, processor_table
from rocketmq_tx.broker.processors.admin import run_sliced
from rocketmq_tx.broker.processors.assignment import allocate_for_pop
from rocketmq_tx.broker.test.test_admin import GROUP, TOPIC, AdminTestBase, result_of
from rocketmq_tx.broker.test.util import Ctx, make_controller
from rocketmq_tx.common import fastjson
from rocketmq_tx.common.message import MessageConst, MessageQueue, properties_to_string
from rocketmq_tx.common.rebalance import allocate_averagely
from rocketmq_tx.common.route import QueueData, TopicRouteData
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode


class TopicAttributeTests(AdminTestBase):
    def test_create_with_attributes(self) -> None:
        """``+message.type=FIFO`` is stored without its sign and answered by 351 and 21."""
        self.assertEqual(self.create_topic(attributes="+message.type=FIFO").code, ResponseCode.SUCCESS)
        config = self.body(self.ok(RequestCode.GET_TOPIC_CONFIG, {"topic": TOPIC}))
        self.assertEqual(config["attributes"], {"message.type": "FIFO"})
        table = self.body(self.ok(RequestCode.GET_ALL_TOPIC_CONFIG))["topicConfigTable"]
        self.assertEqual(table[TOPIC]["attributes"], {"message.type": "FIFO"})

    def test_update_keeps_changes_and_deletes(self) -> None:
        """An update without attributes keeps them; ``+`` changes one, ``-`` removes one."""
        self.create_topic(attributes="+message.type=FIFO,+reserve.time=100")
        self.assertEqual(self.create_topic(queues=8, attributes="").code, ResponseCode.SUCCESS)
        tc = self.c.topic_config_manager.select_topic_config(TOPIC)
        self.assertEqual((tc.write_queue_nums, tc.attributes), (8, {"message.type": "FIFO", "reserve.time": "100"}))
        self.create_topic(attributes="+message.type=DELAY,-reserve.time")
        self.assertEqual(self.c.topic_config_manager.select_topic_config(TOPIC).attributes, {"message.type": "DELAY"})

    def test_refusals(self) -> None:
        """Java's codes and remarks; a refused request changes nothing."""
        cases = [
            ("+message.type=MIXED", ResponseCode.INVALID_PARAMETER, "MIXED message type is not supported."),
            ("+foo=1", ResponseCode.SYSTEM_ERROR, "unsupported key: foo"),
            ("-message.type", ResponseCode.SYSTEM_ERROR,
             "only add attribute is supported while creating topic. key: message.type"),
            ("message.type=FIFO", ResponseCode.SYSTEM_ERROR, "add/alter attribute format is wrong: message.type"),
        ]
        for text, code, remark in cases:
            response = self.create_topic(attributes=text)
            self.assertEqual((response.code, response.remark), (code, remark), text)
            self.assertIsNone(self.c.topic_config_manager.select_topic_config(TOPIC))
        self.create_topic(attributes="+queue.type=SimpleCQ")
        response = self.create_topic(attributes="+queue.type=BatchCQ")
        self.assertEqual((response.code, response.remark),
                         (ResponseCode.SYSTEM_ERROR, "attempt to update an unchangeable attribute. key: queue.type"))

    def test_mixed_allowed_by_setting(self) -> None:
        """``enableMixedMessageType=true`` lets MIXED through, as Java's broker config does."""
        self.c = make_controller(self, enableMixedMessageType=True)
        self.table = processor_table(self.c)
        self.assertEqual(self.create_topic(attributes="+message.type=MIXED").code, ResponseCode.SUCCESS)
        self.assertEqual(self.c.topic_config_manager.select_topic_config(TOPIC).attributes, {"message.type": "MIXED"})

    def test_no_attributes_stays_4x_shaped(self) -> None:
        """A topic created without attributes is written without the key, as 4.9 writes it."""
        self.create_topic(attributes="")
        self.assertNotIn("attributes", self.body(self.ok(RequestCode.GET_TOPIC_CONFIG, {"topic": TOPIC})))

    def test_topics_json_round_trip(self) -> None:
        """topics.json holds the attributes as Java 5.x writes them, and a restart reads them back."""
        self.create_topic(attributes="+message.type=TRANSACTION")
        self.c.topic_config_manager.persist()
        with open(self.c.topic_config_manager.file.path) as f:
            stored = json.load(f)["topicConfigTable"][TOPIC]
        self.assertEqual(stored["attributes"], {"message.type": "TRANSACTION"})
        root = self.c.store_config.store_path_root_dir
        self.c.shutdown()
        again = make_controller(self, root=root)
        self.assertEqual(again.topic_config_manager.select_topic_config(TOPIC).attributes,
                         {"message.type": "TRANSACTION"})

    def test_create_topic_list(self) -> None:
        """UPDATE_AND_CREATE_TOPIC_LIST: every topic, with its signed attributes applied."""
        body = {"topicConfigList": [
            {"topicName": "T1", "readQueueNums": 2, "writeQueueNums": 2, "perm": 6,
             "attributes": {"+message.type": "FIFO"}},
            {"topicName": "T2", "readQueueNums": 1, "writeQueueNums": 1, "perm": 6, "attributes": {}},
        ]}
        self.ok(RequestCode.UPDATE_AND_CREATE_TOPIC_LIST, body=fastjson.dumps(body))
        manager = self.c.topic_config_manager
        self.assertEqual(manager.select_topic_config("T1").attributes, {"message.type": "FIFO"})
        self.assertEqual(manager.select_topic_config("T2").write_queue_nums, 1)

    def test_create_topic_list_refusals(self) -> None:
        """Names are checked first (INVALID_PARAMETER, nothing created); an attribute refusal stops there."""
        bad = {"topicConfigList": [{"topicName": "T1", "readQueueNums": 1, "writeQueueNums": 1, "perm": 6},
                                   {"topicName": "bad topic", "readQueueNums": 1, "writeQueueNums": 1, "perm": 6}]}
        response = self.call(RequestCode.UPDATE_AND_CREATE_TOPIC_LIST, body=fastjson.dumps(bad))
        self.assertEqual(response.code, ResponseCode.INVALID_PARAMETER)
        self.assertIsNone(self.c.topic_config_manager.select_topic_config("T1"))
        attr = {"topicConfigList": [
            {"topicName": "T1", "readQueueNums": 1, "writeQueueNums": 1, "perm": 6},
            {"topicName": "T2", "readQueueNums": 1, "writeQueueNums": 1, "perm": 6, "attributes": {"+x": "1"}}]}
        response = self.call(RequestCode.UPDATE_AND_CREATE_TOPIC_LIST, body=fastjson.dumps(attr))
        self.assertEqual((response.code, response.remark), (ResponseCode.SYSTEM_ERROR, "unsupported key: x"))
        self.assertIsNotNone(self.c.topic_config_manager.select_topic_config("T1"))
        self.assertIsNone(self.c.topic_config_manager.select_topic_config("T2"))

    def test_create_topic_list_sliced(self) -> None:
        """A long list is applied over several reactor turns and answered once all is done."""
        self.patch(admin.run_sliced, "__defaults__", (0.0, admin.time.monotonic))
        body = {"topicConfigList": [{"topicName": f"S{i}", "readQueueNums": 1, "writeQueueNums": 1, "perm": 6}
                                    for i in range(50)]}
        request = RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC_LIST, {}, fastjson.dumps(body))
        d = self.table.dispatch(self.ctx, request)
        self.assertIsNone(self.c.topic_config_manager.select_topic_config("S49"))
        for _ in range(200):
            self.reactor.advance(0)
        self.assertEqual(result_of(d).code, ResponseCode.SUCCESS)
        self.assertIsNotNone(self.c.topic_config_manager.select_topic_config("S49"))

    def test_malformed_list_bodies(self) -> None:
        """Bodies that are not the expected JSON are refused with SYSTEM_ERROR, no traceback logged."""
        for code in (RequestCode.UPDATE_AND_CREATE_TOPIC_LIST, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST,
                     RequestCode.QUERY_ASSIGNMENT, RequestCode.SET_MESSAGE_REQUEST_MODE):
            for body in (b"[1]", b"{not json", b'{"topicConfigList":[{}],"groupConfigList":[{}]}'):
                response = self.call(code, body=body)
                self.assertEqual(response.code, ResponseCode.SYSTEM_ERROR, (code, body, response.remark))

    def send_with(self, **props: str) -> Any:
        p = {MessageConst.PROPERTY_TAGS: "TagA", **props}
        fields = {"a": "PG_test", "b": TOPIC, "c": "TBW102", "d": 4, "e": 0, "f": 0,
                  "g": self.c.now_ms(), "h": 0, "i": properties_to_string(p), "j": 0, "k": "false"}
        return self.call(RequestCode.SEND_MESSAGE_V2, fields, b"x")

    def test_send_checks(self) -> None:
        """The broker takes any message type on a FIFO topic (the proxy checks that, not the
        5.x broker); a COMPACTION topic refuses a message without keys."""
        self.create_topic(attributes="+message.type=FIFO")
        self.assertEqual(self.send_with().code, ResponseCode.SUCCESS)
        self.create_topic("Compacted", attributes="+cleanup.policy=COMPACTION")
        fields = {"a": "PG_test", "b": "Compacted", "c": "TBW102", "d": 4, "e": 0, "f": 0, "g": self.c.now_ms(),
                  "h": 0, "j": 0, "k": "false"}
        refused = self.call(RequestCode.SEND_MESSAGE_V2, {**fields, "i": properties_to_string({"KEYS": " "})}, b"x")
        self.assertEqual((refused.code, refused.remark),
                         (ResponseCode.MESSAGE_ILLEGAL, "Required message key is missing"))
        kept = self.call(RequestCode.SEND_MESSAGE_V2, {**fields, "i": properties_to_string({"KEYS": "k1"})}, b"x")
        self.assertEqual(kept.code, ResponseCode.SUCCESS)


class GroupMetadataTests(AdminTestBase):
    def group(self, **fields: Any) -> Any:
        return self.call(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
                         body=fastjson.dumps({"groupName": GROUP, **fields}))

    def test_get_subscription_group(self) -> None:
        """352 answers the stored config with its 5.x fields; an unknown group is auto-created."""
        policy = {"type": "CUSTOMIZED", "customizedRetryPolicy": {"next": [1000, 5000]}}
        self.assertEqual(self.group(consumeMessageOrderly=True, groupRetryPolicy=policy, retryMaxTimes=3,
                                    attributes={"+priority.factor": "7"}).code, ResponseCode.SUCCESS)
        data = self.body(self.ok(RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG, {"group": GROUP}))
        self.assertEqual((data["groupName"], data["consumeMessageOrderly"], data["groupRetryPolicy"],
                          data["retryMaxTimes"], data["attributes"]),
                         (GROUP, True, policy, 3, {"priority.factor": "7"}))
        auto = self.body(self.ok(RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG, {"group": "CG_new"}))
        self.assertEqual((auto["groupName"], auto["retryMaxTimes"]), ("CG_new", 16))

    def test_get_subscription_group_missing(self) -> None:
        """Without auto-creation an unknown group is SUBSCRIPTION_GROUP_NOT_EXIST, Java's remark."""
        c = make_controller(self, autoCreateSubscriptionGroup=False)
        table = processor_table(c)
        response = result_of(table.dispatch(Ctx(), RemotingCommand.request(
            RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG, {"group": "CG_none"})))
        self.assertEqual((response.code, response.remark),
                         (ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, "No group in this broker"))

    def test_group_attribute_refusal(self) -> None:
        """An unknown group attribute is refused as Java's remoting layer reports the exception."""
        response = self.group(attributes={"+nope": "1"})
        self.assertEqual((response.code, response.remark),
                         (ResponseCode.SYSTEM_ERROR, "java.lang.RuntimeException: unsupported key: nope"))
        self.assertNotIn(GROUP, self.c.subscription_group_manager.subscription_group_table)

    def test_group_list(self) -> None:
        """UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST creates each group."""
        body = {"groupConfigList": [{"groupName": "G1", "consumeMessageOrderly": True}, {"groupName": "G2"}]}
        self.ok(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST, body=fastjson.dumps(body))
        table = self.c.subscription_group_manager.subscription_group_table
        self.assertTrue(table["G1"].consume_message_orderly)
        self.assertIn("G2", table)

    def test_query_topics_and_subscription_by_consumer(self) -> None:
        """343 lists the group's topics with offsets and this broker; 345 its live subscription."""
        self.create_topic()
        self.commit(0, 5)
        data = self.body(self.ok(RequestCode.QUERY_TOPICS_BY_CONSUMER, {"group": GROUP}))
        self.assertEqual((data["topicList"], data["brokerAddr"]), ([TOPIC], self.c.broker_addr))
        self.register_consumer(Ctx("127.0.0.1:7001"))
        sub = self.body(self.ok(RequestCode.QUERY_SUBSCRIPTION_BY_CONSUMER, {"group": GROUP, "topic": TOPIC}))
        self.assertEqual((sub["group"], sub["topic"], sub["subscriptionData"]["subString"]), (GROUP, TOPIC, "*"))
        none = self.body(self.ok(RequestCode.QUERY_SUBSCRIPTION_BY_CONSUMER, {"group": "CG_x", "topic": TOPIC}))
        self.assertEqual(none, {"group": "CG_x", "topic": TOPIC})


class RequestModeTests(AdminTestBase):
    def set_mode(self, topic: str = TOPIC, group: str = GROUP, mode: str = "POP", share: int = 0) -> Any:
        body = {"topic": topic, "consumerGroup": group, "mode": mode, "popShareQueueNum": share}
        return self.call(RequestCode.SET_MESSAGE_REQUEST_MODE, body=fastjson.dumps(body))

    def test_set_and_get_all(self) -> None:
        """401 keeps the mode per (topic, group); 402 answers messageRequestMode.json's shape."""
        self.create_topic()
        self.assertEqual(self.set_mode(share=2).code, ResponseCode.SUCCESS)
        data = self.body(self.ok(RequestCode.GET_ALL_MESSAGE_REQUEST_MODE))
        self.assertEqual(data, {"messageRequestModeMap": {TOPIC: {GROUP: {
            "consumerGroup": GROUP, "mode": "POP", "popShareQueueNum": 2, "topic": TOPIC}}}})
        self.assertEqual(self.body(self.ok(RequestCode.GET_ALL_MESSAGE_REQUEST_MODE)), data)

    def test_empty(self) -> None:
        """No mode set: an empty map, SUCCESS (Java's content is never empty)."""
        self.assertEqual(self.body(self.ok(RequestCode.GET_ALL_MESSAGE_REQUEST_MODE)), {"messageRequestModeMap": {}})

    def test_refusals(self) -> None:
        """Java's order and remarks: retry topic, unknown topic, group that cannot exist."""
        self.create_topic()
        cases = [
            (self.set_mode(topic="%RETRY%" + GROUP), ResponseCode.NO_PERMISSION,
             "retry topic is not allowed to set mode"),
            (self.set_mode(topic="Nope"), ResponseCode.TOPIC_NOT_EXIST, "topic[Nope] not exist"),
            (self.set_mode(group="bad group"), ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
             "subscription group does not exist"),
        ]
        for response, code, remark in cases:
            self.assertEqual((response.code, response.remark), (code, remark))
        self.assertEqual(self.set_mode(mode="PUSH").code, ResponseCode.SYSTEM_ERROR)

    def test_persisted(self) -> None:
        """The modes survive a restart through config/messageRequestMode.json."""
        self.create_topic()
        self.set_mode()
        root = self.c.store_config.store_path_root_dir
        self.c.shutdown()
        again = make_controller(self, root=root)
        body = again.message_request_mode_manager.get_message_request_mode(TOPIC, GROUP)
        self.assertEqual((body.mode, body.consumer_group), ("POP", GROUP))


class QueryAssignmentTests(AdminTestBase):
    """QUERY_ASSIGNMENT (400): the broker's allocation over the topic's route from the name servers."""

    def setUp(self) -> None:
        super().setUp()
        self.lookups: list[str] = []
        self.route: TopicRouteData | None = TopicRouteData(
            [QueueData("broker-a", 4, 4, 6), QueueData("broker-b", 2, 2, 6), QueueData("broker-c", 3, 3, 2)])

        def lookup(topic: str) -> Any:
            self.lookups.append(topic)
            return succeed(self.route)
        self.c.topic_route_info_manager.lookup = lookup
        self.create_topic()
        for n in (1, 2):
            self.register_consumer(Ctx(f"127.0.0.1:700{n}"), client_id=f"cid-{n}")

    def assign(self, client_id: str = "cid-1", strategy: str = "AVG", model: str = "CLUSTERING",
               topic: str = TOPIC) -> Any:
        body = {"topic": topic, "consumerGroup": GROUP, "clientId": client_id, "strategyName": strategy,
                "messageModel": model}
        data = self.body(self.ok(RequestCode.QUERY_ASSIGNMENT, body=fastjson.dumps(body)))
        if "messageQueueAssignments" not in data:
            return None
        return sorted((a["messageQueue"]["brokerName"], a["messageQueue"]["queueId"], a["mode"])
                      for a in data["messageQueueAssignments"])

    def test_clustering(self) -> None:
        """AVG splits the readable queues of every broker (sorted) among the live clients; PULL by default."""
        self.assertEqual(self.assign("cid-1"), [("broker-a", 0, "PULL"), ("broker-a", 1, "PULL"),
                                                ("broker-a", 2, "PULL")])
        self.assertEqual(self.assign("cid-2"), [("broker-a", 3, "PULL"), ("broker-b", 0, "PULL"),
                                                ("broker-b", 1, "PULL")])
        self.assertEqual(self.assign("cid-1", "AVG_BY_CIRCLE"),
                         [("broker-a", 0, "PULL"), ("broker-a", 2, "PULL"), ("broker-b", 0, "PULL")])
        self.assertEqual(self.assign("cid-9"), [])
        self.assertEqual(self.lookups, [TOPIC])  # the route is kept for 30 s

    def test_broadcasting_and_refusals(self) -> None:
        """BROADCASTING: every queue; an unknown strategy or a topic without route: no assignments."""
        self.assertEqual(len(self.assign(model="BROADCASTING")), 6)
        self.assertIsNone(self.assign(strategy="CONSISTENT_HASH"))
        self.route = None
        self.assertIsNone(self.assign(topic="NoRoute"))

    def test_pop_mode(self) -> None:
        """After SET_MESSAGE_REQUEST_MODE POP (no sharing) each client pops every broker's queues (id -1)."""
        body = {"topic": TOPIC, "consumerGroup": GROUP, "mode": "POP", "popShareQueueNum": 0}
        self.ok(RequestCode.SET_MESSAGE_REQUEST_MODE, body=fastjson.dumps(body))
        self.assertEqual(self.assign(), [("broker-a", -1, "POP"), ("broker-b", -1, "POP")])

    def test_route_refreshed(self) -> None:
        """The route is asked again once older than 30 s."""
        self.assign()
        self.reactor.advance(31)
        self.route = TopicRouteData([QueueData("broker-a", 1, 1, 6)])
        self.assertEqual(self.assign(), [("broker-a", 0, "PULL")])
        self.assertEqual(self.lookups, [TOPIC, TOPIC])


class AllocateForPopTests(TestCase):
    def test_share(self) -> None:
        """Java ``allocate4Pop``: own allocation plus the next clients'; more clients than queues: one each."""
        mqs = [MessageQueue("T", "b", i) for i in range(4)]
        cids = ["c1", "c2", "c3", "c4"]
        self.assertEqual(allocate_for_pop(allocate_averagely, "c1", mqs, cids, 1), mqs[0:2])
        self.assertEqual(allocate_for_pop(allocate_averagely, "c4", mqs, cids, 1), [mqs[3], mqs[0]])
        self.assertEqual(allocate_for_pop(allocate_averagely, "c3", mqs[:2], cids, 1), [mqs[0]])
        self.assertEqual(allocate_for_pop(allocate_averagely, "c1", mqs, cids, 3), [
            MessageQueue("T", "b", -1)] * 4)


class RouteLookupTests(TestCase):
    def test_get_topic_route_info(self) -> None:
        """GET_ROUTEINFO_BY_TOPIC to the first name server that answers; TOPIC_NOT_EXIST is ``None``."""
        route = TopicRouteData([QueueData("broker-a", 2, 2, 6)])
        asked: list[str] = []

        class Client:
            def invoke(self, addr: str, request: RemotingCommand, timeout: float) -> Any:
                asked.append(addr)
                self.request = request
                if addr == "down:9876":
                    return fail(ConnectionRefusedError())
                if request.ext_fields["topic"] == "Missing":
                    return succeed(RemotingCommand(code=ResponseCode.TOPIC_NOT_EXIST, flag=1))
                return succeed(RemotingCommand(code=ResponseCode.SUCCESS, flag=1,
                                               body=fastjson.dumps(route.to_json())))

        client = Client()
        api = BrokerOuterAPI(client)  # type: ignore[arg-type]
        got = result_of(api.get_topic_route_info(["down:9876", "up:9876"], TOPIC))
        self.assertEqual((asked, client.request.code), (["down:9876", "up:9876"], RequestCode.GET_ROUTEINFO_BY_TOPIC))
        self.assertEqual(got.queue_datas[0].read_queue_nums, 2)
        self.assertIsNone(result_of(api.get_topic_route_info(["up:9876"], "Missing")))
        self.assertIsNone(result_of(api.get_topic_route_info(["down:9876"], TOPIC)))
        self.flushLoggedErrors()


class RunSlicedTests(TestCase):
    def test_slices(self) -> None:
        """Work beyond a slice's time goes on in the next reactor turn; the first answer stops it."""
        clock = Clock()
        now = [0.0]
        seen: list[int] = []

        def step(item: int) -> Any:
            seen.append(item)
            now[0] += 0.003  # each item "takes" 3 ms: two fit in a 4 ms slice
            return "stop" if item == 5 else None

        d = run_sliced(clock, list(range(10)), step, wall=lambda: now[0])
        self.assertEqual(seen, [0, 1])
        self.assertNoResult(d)
        clock.advance(0)
        clock.advance(0)
        self.assertEqual(self.successResultOf(d), "stop")
        self.assertEqual(seen, [0, 1, 2, 3, 4, 5])

    def test_short_list_at_once(self) -> None:
        """A list that fits in one slice fires at once with ``None``."""
        self.assertIsNone(self.successResultOf(run_sliced(Clock(), [1, 2], lambda item: None)))


class _Pool:
    """A thread pool that runs work at once and records it (``deferToThreadPool`` needs only this)."""

    def __init__(self) -> None:
        self.ran: list[Any] = []

    def callInThreadWithCallback(self, on_result: Any, fn: Any, *args: Any) -> None:  # noqa: N802 (Twisted's name)
        self.ran.append(fn)
        try:
            on_result(True, fn(*args))
        except Exception as e:  # as the real pool hands it over
            on_result(False, Failure(e))


class _PoolClock(Clock):
    def __init__(self) -> None:
        super().__init__()
        self.pool = _Pool()

    def getThreadPool(self) -> _Pool:  # noqa: N802
        return self.pool

    def callFromThread(self, fn: Any, *args: Any) -> None:  # noqa: N802
        fn(*args)


class DecodeBodyTests(TestCase):
    def test_large_body_in_pool(self) -> None:
        """A body past DECODE_ON_REACTOR_MAX is decoded in the reactor's pool; a small one here."""
        clock = _PoolClock()
        big = b"[" + b"1," * admin.DECODE_ON_REACTOR_MAX + b"1]"
        self.assertEqual(len(self.successResultOf(admin.decode_body(clock, big, json.loads))),
                         admin.DECODE_ON_REACTOR_MAX + 1)
        self.assertEqual(clock.pool.ran, [json.loads])
        self.assertEqual(self.successResultOf(admin.decode_body(clock, b"[2]", json.loads)), [2])
        self.assertEqual(len(clock.pool.ran), 1)

    def test_failure_refused(self) -> None:
        """A decode error from the pool becomes Java's SYSTEM_ERROR ``illegal ...`` answer."""
        clock = _PoolClock()
        request = RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC_LIST, {}, b"{" * 70_000)
        d = admin.decode_body(clock, request.body, json.loads)
        response = self.successResultOf(d.addErrback(admin.illegal_body(request, "CreateTopicListRequestBody")))
        self.assertEqual(response.code, ResponseCode.SYSTEM_ERROR)
        self.assertTrue(response.remark.startswith("illegal CreateTopicListRequestBody: "), response.remark)
