"""PULL_MESSAGE: status to code as Java 4.9.8 maps it, tag filtering, subscriptions, offsets, long polling."""

from __future__ import annotations

from twisted.internet.defer import Deferred

from rocketmq_tx.broker.test.test_processors import BrokerTestCase, props
from rocketmq_tx.broker.test.util import Ctx, heartbeat
from rocketmq_tx.common import fastjson
from rocketmq_tx.common.messagecodec import decode_messages
from rocketmq_tx.common.route import PermName, TopicConfig
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.remoting.headers import PullMessageRequestHeader, PullSysFlag

TOPIC = "TopicTest"
SUSPEND = 15000


class PullTestCase(BrokerTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.controller.topic_config_manager.update_topic_config(TopicConfig(TOPIC, 4, 4))

    def put(self, tags: str = "TagA", queue_id: int = 0, body: bytes = b"hello") -> None:
        response = self.send(TOPIC, body=body, queue_id=queue_id, body_props=props(TAGS=tags))
        self.assertEqual(response.code, ResponseCode.SUCCESS, response.remark)

    def pull_request(self, offset: int = 0, queue_id: int = 0, expression: str | None = "*",
                     suspend: bool = False, commit: int | None = None, group: str = "g",
                     max_nums: int = 32, sub_version: int = 0) -> dict:
        flags = 0
        if suspend:
            flags |= PullSysFlag.SUSPEND
        if expression is not None:
            flags |= PullSysFlag.SUBSCRIPTION
        if commit is not None:
            flags |= PullSysFlag.COMMIT_OFFSET
        return PullMessageRequestHeader(group, TOPIC, queue_id, offset, max_nums, int(flags), commit or 0, SUSPEND,
                                        expression, sub_version, "TAG").to_ext_fields()

    def pull(self, *args, ctx: Ctx | None = None, **kw) -> RemotingCommand:  # type: ignore[no-untyped-def]
        return self.call(RequestCode.PULL_MESSAGE, self.pull_request(*args, **kw), ctx=ctx)

    def pull_later(self, *args, ctx: Ctx | None = None, **kw) -> Deferred:  # type: ignore[no-untyped-def]
        d = self.dispatch(RequestCode.PULL_MESSAGE, self.pull_request(*args, suspend=True, **kw), ctx=ctx)
        self.assertIsInstance(d, Deferred)
        assert isinstance(d, Deferred)
        return d

    def offsets(self, response: RemotingCommand) -> tuple[int, int, int]:
        ext = response.ext_fields
        return int(ext["nextBeginOffset"]), int(ext["minOffset"]), int(ext["maxOffset"])


class PullStatusTests(PullTestCase):
    def test_found(self) -> None:
        for i in range(3):
            self.put(body=b"m%d" % i)
        response = self.pull(1)
        self.assertEqual((response.code, response.remark), (ResponseCode.SUCCESS, "FOUND"))
        self.assertEqual(self.offsets(response), (3, 0, 3))
        self.assertEqual(response.ext_fields["suggestWhichBrokerId"], "0")
        messages = decode_messages(response.body)
        self.assertEqual([(m.body, m.queue_offset, m.tags) for m in messages], [(b"m1", 1, "TagA"), (b"m2", 2, "TagA")])
        self.assertEqual(self.pull(0, max_nums=1).ext_fields["nextBeginOffset"], "1")
        self.assertEqual(self.controller.stats.get_total, 3)

    def test_empty_queue(self) -> None:
        """No message yet: PULL_NOT_FOUND at 0, PULL_OFFSET_MOVED (next 0) anywhere else."""
        response = self.pull(0)
        self.assertEqual(response.code, ResponseCode.PULL_NOT_FOUND)
        self.assertEqual(self.offsets(response), (0, 0, 0))
        response = self.pull(5)
        self.assertEqual(response.code, ResponseCode.PULL_OFFSET_MOVED)
        self.assertEqual(self.offsets(response), (0, 0, 0))

    def test_offset_moved_event_stored(self) -> None:
        """PULL_OFFSET_MOVED also stores an OffsetMovedEvent in OFFSET_MOVED_EVENT, as Java's master."""
        self.put()
        self.assertEqual(self.pull(7).code, ResponseCode.PULL_OFFSET_MOVED)
        found = self.store.get_message("x", "OFFSET_MOVED_EVENT", 0, 0, 8)
        [event] = decode_messages(found.body())
        self.assertEqual((event.tags, event.keys), ("g", ["g"]))
        self.assertEqual(fastjson.loads(event.body), {
            "consumerGroup": "g", "messageQueue": {"brokerName": self.controller.settings["brokerName"],
                                                   "queueId": 0, "topic": TOPIC},
            "offsetNew": 1, "offsetRequest": 7})

    def test_caught_up(self) -> None:
        self.put()
        response = self.pull(1)
        self.assertEqual((response.code, response.remark), (ResponseCode.PULL_NOT_FOUND, "OFFSET_OVERFLOW_ONE"))
        self.assertEqual(self.offsets(response), (1, 0, 1))

    def test_overflow_badly(self) -> None:
        self.put()
        response = self.pull(7)
        self.assertEqual((response.code, response.remark), (ResponseCode.PULL_OFFSET_MOVED, "OFFSET_OVERFLOW_BADLY"))
        self.assertEqual(self.offsets(response)[0], 1)  # 4.9: corrected to the max offset

    def test_too_small(self) -> None:
        for _ in range(3):
            self.put()
        cq = self.store.find_consume_queue(TOPIC, 0, create=False)
        cq.min_logic_offset = 2 * 20  # as if the head of the queue had been deleted
        response = self.pull(0)
        self.assertEqual((response.code, response.remark), (ResponseCode.PULL_OFFSET_MOVED, "OFFSET_TOO_SMALL"))
        self.assertEqual(self.offsets(response), (2, 2, 3))

    def test_no_matched_message(self) -> None:
        self.put("TagB")
        response = self.pull(0, expression="TagA")
        self.assertEqual((response.code, response.remark), (ResponseCode.PULL_RETRY_IMMEDIATELY, "NO_MATCHED_MESSAGE"))
        self.assertEqual(self.offsets(response)[0], 1)  # skip what did not match

    def test_tag_filter(self) -> None:
        for tags in ("TagA", "TagB", "TagC", "TagA"):
            self.put(tags)
        response = self.pull(0, expression="TagA || TagC")
        self.assertEqual([m.tags for m in decode_messages(response.body)], ["TagA", "TagC", "TagA"])
        self.assertEqual(len(decode_messages(self.pull(0, expression="*").body)), 4)

    def test_topic_and_queue_checks(self) -> None:
        response = self.pull(0)
        self.assertEqual(response.code, ResponseCode.PULL_NOT_FOUND)
        response = self.call(RequestCode.PULL_MESSAGE, {**self.pull_request(0), "topic": "Nope"})
        self.assertEqual(response.code, ResponseCode.TOPIC_NOT_EXIST)
        self.assertTrue(response.remark.startswith("topic[Nope] not exist, apply first please!"))
        response = self.pull(0, queue_id=4)
        self.assertEqual(response.code, ResponseCode.SYSTEM_ERROR)
        self.assertEqual(response.remark, "queueId[4] is illegal, topic:[TopicTest] topicConfig.readQueueNums:[4] "
                                          "consumer:[/127.0.0.1:5555]")
        self.controller.topic_config_manager.update_topic_config(TopicConfig(TOPIC, 4, 4, PermName.PERM_WRITE))
        response = self.pull(0)
        self.assertEqual((response.code, response.remark),
                         (ResponseCode.NO_PERMISSION, "the topic[TopicTest] pulling message is forbidden"))

    def test_group_checks(self) -> None:
        self.controller.subscription_group_manager.auto_create = False
        response = self.pull(0, group="unknown")
        self.assertEqual(response.code, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST)
        self.assertTrue(response.remark.startswith("subscription group [unknown] does not exist"))
        self.controller.subscription_group_manager.disable_consume("TOOLS_CONSUMER")
        response = self.pull(0, group="TOOLS_CONSUMER")
        self.assertEqual((response.code, response.remark),
                         (ResponseCode.NO_PERMISSION, "subscription group no permission, TOOLS_CONSUMER"))

    def test_subscription_from_heartbeat(self) -> None:
        """Without the subscription flag the group's registered subscription filters."""
        response = self.pull(0, expression=None)
        self.assertEqual(response.code, ResponseCode.SUBSCRIPTION_NOT_EXIST)
        self.assertTrue(response.remark.startswith("the consumer's group info not exist"), response.remark)
        self.call(RequestCode.HEART_BEAT, body=heartbeat("c1", (), {"g": {"Other": "*"}}).body)
        response = self.pull(0, expression=None)
        self.assertEqual(response.code, ResponseCode.SUBSCRIPTION_NOT_EXIST)
        self.assertTrue(response.remark.startswith("the consumer's subscription not exist"), response.remark)
        self.call(RequestCode.HEART_BEAT, body=heartbeat("c1", (), {"g": {TOPIC: "TagB"}}).body)
        self.put("TagA")
        self.put("TagB")
        response = self.pull(0, expression=None)
        self.assertEqual(response.code, ResponseCode.SUCCESS)
        self.assertEqual([m.tags for m in decode_messages(response.body)], ["TagB"])
        response = self.pull(0, expression=None, sub_version=2)  # the client knows a newer one than registered
        self.assertEqual((response.code, response.remark),
                         (ResponseCode.SUBSCRIPTION_NOT_LATEST, "the consumer's subscription not latest"))

    def test_broadcast_group_without_permission(self) -> None:
        self.call(RequestCode.HEART_BEAT,
                  body=heartbeat("c1", (), {"g": {TOPIC: "*"}}, message_model="BROADCASTING").body)
        self.assertEqual(self.pull(0, expression=None).code, ResponseCode.PULL_NOT_FOUND)
        self.controller.subscription_group_manager.find_subscription_group_config("g").consume_broadcast_enable = False
        response = self.pull(0, expression=None)
        self.assertEqual((response.code, response.remark),
                         (ResponseCode.NO_PERMISSION, "the consumer group[g] can not consume by broadcast way"))

    def test_commit_offset_flag(self) -> None:
        self.put()
        self.pull(0, commit=7, queue_id=0)
        self.assertEqual(self.controller.consumer_offset_manager.query_offset("g", TOPIC, 0), 7)
        self.pull(1, queue_id=0)  # no flag: unchanged
        self.assertEqual(self.controller.consumer_offset_manager.query_offset("g", TOPIC, 0), 7)

    def test_sql_expression_refused(self) -> None:
        ext = self.pull_request(0)
        ext["expressionType"] = "SQL92"
        ext["subscription"] = "a > 1"
        response = self.call(RequestCode.PULL_MESSAGE, ext)
        self.assertEqual((response.code, response.remark),
                         (ResponseCode.SYSTEM_ERROR, "The broker does not support consumer to filter message by SQL92"))

    def test_not_on_fast_port(self) -> None:
        """The fast port (listenPort - 2) does not serve PULL_MESSAGE, as in Java."""
        from rocketmq_tx.broker.processors import processor_table
        fast = processor_table(self.controller, fast=True)
        self.assertNotIn(RequestCode.PULL_MESSAGE, fast.codes())
        self.assertIn(RequestCode.SEND_MESSAGE, fast.codes())


class LongPollingTests(PullTestCase):
    def test_answered_when_a_message_arrives(self) -> None:
        d = self.pull_later(0, commit=0)
        self.assertNoResult(d)
        self.assertEqual(self.controller.pull_request_hold_service.held(), 1)
        self.put(body=b"late")
        self.assertNoResult(d)  # arrivals are handled on the next reactor turn
        self.reactor.advance(0)
        response = self.successResultOf(d)
        self.assertEqual((response.code, response.opaque), (ResponseCode.SUCCESS, 77))
        self.assertEqual([m.body for m in decode_messages(response.body)], [b"late"])
        self.assertEqual(self.controller.pull_request_hold_service.held(), 0)
        self.assertEqual(self.reactor.getDelayedCalls(), [])  # the suspend timer was cancelled

    def test_caught_up_pull_is_parked(self) -> None:
        self.put()
        d = self.pull_later(1)
        self.assertNoResult(d)
        self.put(queue_id=1)  # another queue: no answer
        self.reactor.advance(0)
        self.assertNoResult(d)
        self.put(queue_id=0, body=b"second")
        self.reactor.advance(0)
        self.assertEqual([m.body for m in decode_messages(self.successResultOf(d).body)], [b"second"])

    def test_answered_at_suspend_timeout(self) -> None:
        d = self.pull_later(0)
        self.reactor.advance(SUSPEND / 1000 - 0.001)
        self.assertNoResult(d)
        self.reactor.advance(0.001)
        response = self.successResultOf(d)
        self.assertEqual((response.code, response.opaque), (ResponseCode.PULL_NOT_FOUND, 77))
        self.assertEqual(self.controller.pull_request_hold_service.held(), 0)

    def test_woken_pull_does_not_commit_again(self) -> None:
        """The commit-offset flag counts once, when the pull first comes in (Java's brokerAllowSuspend)."""
        d = self.pull_later(0, commit=3)
        self.assertEqual(self.controller.consumer_offset_manager.query_offset("g", TOPIC, 0), 3)
        self.controller.consumer_offset_manager.commit_offset("g", TOPIC, 0, 9)
        self.put()
        self.reactor.advance(0)
        self.successResultOf(d)
        self.assertEqual(self.controller.consumer_offset_manager.query_offset("g", TOPIC, 0), 9)

    def test_non_matching_tag_does_not_wake(self) -> None:
        d = self.pull_later(0, expression="TagA")
        self.put("TagB")
        self.reactor.advance(0)
        self.assertNoResult(d)
        self.put("TagA", body=b"wanted")
        self.reactor.advance(0)
        response = self.successResultOf(d)
        self.assertEqual([m.body for m in decode_messages(response.body)], [b"wanted"])

    def test_non_matching_tag_until_timeout(self) -> None:
        """At the timeout a queue holding only other tags answers PULL_RETRY_IMMEDIATELY."""
        d = self.pull_later(0, expression="TagA")
        self.put("TagB")
        self.reactor.advance(SUSPEND / 1000)
        self.assertEqual(self.successResultOf(d).code, ResponseCode.PULL_RETRY_IMMEDIATELY)

    def test_closed_connection_drops_parked_pull(self) -> None:
        ctx = Ctx("127.0.0.1:7777")
        d = self.pull_later(0, ctx=ctx)
        other = self.pull_later(0)
        self.controller.channel_closed(ctx)
        self.assertIsNone(self.successResultOf(d))  # no response to send
        self.assertEqual(self.controller.pull_request_hold_service.held(), 1)
        self.put()
        self.reactor.advance(0)
        self.assertEqual(self.successResultOf(other).code, ResponseCode.SUCCESS)
        self.assertEqual(self.reactor.getDelayedCalls(), [])

    def test_several_parked_pulls_on_one_queue(self) -> None:
        first = self.pull_later(0, ctx=Ctx("a:1"))
        second = self.pull_later(0, ctx=Ctx("b:1"), group="g2")
        self.put()
        self.reactor.advance(0)
        self.assertEqual(self.successResultOf(first).code, ResponseCode.SUCCESS)
        self.assertEqual(self.successResultOf(second).code, ResponseCode.SUCCESS)

    def test_no_suspend_flag_answers_at_once(self) -> None:
        self.assertEqual(self.pull(0).code, ResponseCode.PULL_NOT_FOUND)
        self.assertEqual(self.controller.pull_request_hold_service.held(), 0)

    def test_shutdown_releases_parked_pulls(self) -> None:
        d = self.pull_later(0)
        self.controller.shutdown()
        self.assertIsNone(self.successResultOf(d))
        self.assertEqual(self.reactor.getDelayedCalls(), [])


class ShortPollingTests(PullTestCase):
    keys = {"longPollingEnable": False, "shortPollingTimeMills": 1000}

    def test_short_polling_time(self) -> None:
        """longPollingEnable=false: parked for shortPollingTimeMills, not the client's suspend time."""
        d = self.pull_later(0)
        self.reactor.advance(0.999)
        self.assertNoResult(d)
        self.reactor.advance(0.001)
        self.assertEqual(self.successResultOf(d).code, ResponseCode.PULL_NOT_FOUND)


class HeldPullBoundsTests(PullTestCase):
    """Parked pulls are bounded per connection and in all, and many woken at once go out in slices."""

    keys = {"maxHeldPullsPerConnection": 5, "maxHeldPulls": 8}

    def test_per_connection_bound(self) -> None:
        hostile, other = Ctx("10.0.0.1:1"), Ctx("10.0.0.2:2")
        parked = [self.pull_later(0, ctx=hostile) for _ in range(5)]
        for d in parked:
            self.assertNoResult(d)
        refused = self.dispatch(RequestCode.PULL_MESSAGE, self.pull_request(0, suspend=True), ctx=hostile)
        self.assertEqual((refused.code, refused.remark),
                         (ResponseCode.SYSTEM_BUSY, "[OVERLOAD]system busy, start flow control for a while"))
        self.assertNoResult(self.pull_later(0, ctx=other))  # another connection still parks
        self.assertEqual(self.controller.pull_request_hold_service.held(), 6)

    def test_total_bound(self) -> None:
        for i in range(8):
            self.assertNoResult(self.pull_later(0, ctx=Ctx(f"10.0.0.{i}:1")))
        refused = self.dispatch(RequestCode.PULL_MESSAGE, self.pull_request(0, suspend=True), ctx=Ctx("10.0.1.1:1"))
        self.assertEqual(refused.code, ResponseCode.SYSTEM_BUSY)
        self.put()  # answers the eight; there is room again
        self.reactor.advance(0)
        self.assertNoResult(self.pull_later(1, ctx=Ctx("10.0.1.1:1")))

    def test_closed_connection_frees_its_room(self) -> None:
        hostile = Ctx("10.0.0.1:1")
        for _ in range(5):
            self.pull_later(0, ctx=hostile)
        self.controller.channel_closed(hostile)
        self.assertEqual(self.controller.pull_request_hold_service.held(), 0)
        self.assertNoResult(self.pull_later(0, ctx=hostile))

    def test_wakes_in_slices(self) -> None:
        hold = self.controller.pull_request_hold_service
        hold.wake_slice = 3
        parked = [self.pull_later(0, ctx=Ctx(f"10.0.0.{i}:1")) for i in range(8)]
        self.put()
        # Work queued behind the arrival (another client's request, say) runs between slices.
        seen: list[int] = []

        def other_work(rounds: int) -> None:
            seen.append(sum(1 for d in parked if d.called))
            if rounds > 1:
                self.reactor.callLater(0, other_work, rounds - 1)
        self.reactor.callLater(0, other_work, 3)
        self.reactor.advance(0)
        self.assertEqual(seen, [3, 6, 8])
        for d in parked:
            self.assertEqual(self.successResultOf(d).code, ResponseCode.SUCCESS)
        self.assertEqual(hold.held(), 0)
