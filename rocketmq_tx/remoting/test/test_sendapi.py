"""
Tests for the route and send plans of rocketmq_tx.remoting.sendapi (and the plan driver of
rocketmq_tx.remoting.plans), driven without I/O against the scripted fake cluster on a
hand-moved clock: the rules both clients follow because both run these plans.
"""

from __future__ import annotations

from typing import Any

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.common.clientroute import PullFromWhichNode, RouteTable
from rocketmq_tx.common.message import Message, MessageQueue
from rocketmq_tx.remoting import (
    MQBrokerError,
    RemotingConnectError,
    RemotingTimeoutError,
    RequestCode,
    ResponseCode,
    sendapi,
)
from rocketmq_tx.remoting.api import (
    MQClientError,
    SendStatus,
    SubscriptionData,
    consumer_list_request,
    get_max_offset_request,
    pull_request,
    update_consumer_offset_request,
)
from rocketmq_tx.remoting.command import RemotingCommand
from rocketmq_tx.remoting.headers.pull import PullMessageRequestHeader, PullSysFlag
from rocketmq_tx.remoting.plans import NAMESRV, Call, Plan, Warn, run_plan
from rocketmq_tx.testing.fakebroker import SILENT, FakeCluster

NS1, NS2 = "10.0.0.9:9876", "10.0.0.10:9876"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Base(SynchronousTestCase):
    def setUp(self) -> None:
        self.cluster = FakeCluster({"broker-a": "10.0.0.1:10911", "broker-b": "10.0.0.2:10911"}, (NS1, NS2))
        self.cluster.add_topic("T", 2)
        self.clock = Clock()
        self.routes = RouteTable(f"{NS1};{NS2}", now=self.clock)
        self.warnings: list[str] = []
        self.timeouts: list[float | None] = []

    def invoke(self, call: Call) -> RemotingCommand | None:
        """The blocking driver's rules, with the fake cluster as the network."""
        if call.addr is NAMESRV:
            return self.drive(sendapi.namesrv_call(self.routes.namesrvs, call))
        assert call.addr is not None
        if call.addr in self.cluster.down:
            raise RemotingConnectError(f"connect to {call.addr} failed")
        self.timeouts.append(call.timeout)
        response = self.cluster.handle(call.addr, call.request)
        if call.oneway:
            return None
        if response is None:
            raise RemotingTimeoutError(f"wait response on {call.addr} timeout")
        return response

    def drive(self, plan: Plan[Any]) -> Any:
        return run_plan(plan, self.invoke, self.warnings.append)

    def route_reads(self, topic: str | None = None) -> int:
        return len([r for _, r in self.cluster.requests(RequestCode.GET_ROUTEINFO_BY_TOPIC)
                    if topic is None or r.ext_fields["topic"] == topic])


class RunPlanTests(SynchronousTestCase):
    def test_steps(self) -> None:
        """A single call's transport error is raised in the plan; a list gets errors in place; warnings go out."""
        request = get_max_offset_request(MessageQueue("T", "b", 0))

        def plan() -> Plan[list[object]]:
            try:
                yield Call("down", request)
            except RemotingConnectError as e:
                yield Warn(f"caught {e}")
            results = yield [Call("up", request), Call("down", request)]
            return [type(r).__name__ for r in results]

        def invoke(call: Call) -> RemotingCommand:
            if call.addr == "down":
                raise RemotingConnectError("refused")
            return request.make_response()

        warned: list[str] = []
        self.assertEqual(run_plan(plan(), invoke, warned.append), ["RemotingCommand", "RemotingConnectError"])
        self.assertEqual(warned, ["caught refused"])

    def test_call_timeout(self) -> None:
        request = RemotingCommand.request(RequestCode.HEART_BEAT)
        self.assertEqual(Call("a", request, 3.0).seconds(2.0), 6.0)
        self.assertEqual(Call("a", request, 3.0, timeout=0.5).seconds(2.0), 0.5)


class RouteTests(Base):
    def test_namesrv_failover_sticks(self) -> None:
        """A dead name server is skipped with a warning; the one that answered is asked first from then on."""
        self.cluster.down.add(NS1)
        route = self.drive(sendapi.route(self.routes, "T"))
        self.assertEqual(len(route.queue_datas), 2)
        self.assertEqual(self.routes.namesrvs.ordered()[0], NS2)
        self.assertEqual(len(self.warnings), 1)
        self.assertIn(NS1, self.warnings[0])
        self.assertEqual(self.routes.master("broker-b"), "10.0.0.2:10911")

    def test_every_namesrv_down(self) -> None:
        self.cluster.down.update((NS1, NS2))
        self.assertRaises(RemotingConnectError, self.drive, sendapi.route(self.routes, "T"))

    def test_fresh_for_the_interval(self) -> None:
        """A route is used for 30 s (Java's pollNameServerInterval), then read again on its next use."""
        first = self.drive(sendapi.route(self.routes, "T"))
        self.clock.now += 29.9
        self.assertIs(self.drive(sendapi.route(self.routes, "T")), first)
        self.assertEqual(self.route_reads(), 1)
        self.clock.now += 0.2
        self.assertIsNot(self.drive(sendapi.route(self.routes, "T")), first)
        self.assertEqual(self.route_reads(), 2)

    def test_failed_read_keeps_the_route(self) -> None:
        """No name server answers: the last route is used, and not asked for again for another 30 s."""
        first = self.drive(sendapi.route(self.routes, "T"))
        self.cluster.down.update((NS1, NS2))
        self.clock.now += 31
        self.assertIs(self.drive(sendapi.route(self.routes, "T")), first)
        self.clock.now += 29
        self.warnings.clear()
        self.assertIs(self.drive(sendapi.route(self.routes, "T")), first)
        self.assertEqual(self.warnings, [], "no name server was tried")

    def test_unknown_topic(self) -> None:
        error = self.assertRaises(MQBrokerError, self.drive, sendapi.update_route(self.routes, "NOPE"))
        self.assertEqual(error.code, ResponseCode.TOPIC_NOT_EXIST)

    def test_brokers_follow_the_routes(self) -> None:
        """A broker that left every route is dropped (Java cleanOfflineBroker)."""
        self.drive(sendapi.route(self.routes, "T"))
        del self.cluster.brokers["broker-b"]
        self.drive(sendapi.update_route(self.routes, "T"))
        self.assertEqual(sorted(self.routes.brokers), ["broker-a"])

    def test_unknown_broker_reads_the_route(self) -> None:
        mq = MessageQueue("T", "broker-b", 0)
        response = self.drive(sendapi.broker_call(self.routes, mq, get_max_offset_request(mq)))
        self.assertEqual(response.code, ResponseCode.SUCCESS)
        self.assertEqual(self.route_reads("T"), 1)
        gone = MessageQueue("T", "broker-z", 0)
        self.assertRaises(MQClientError, self.drive,
                          sendapi.broker_call(self.routes, gone, get_max_offset_request(gone)))


class Producer(sendapi.ProducerBase):
    def __init__(self, test: Base, **settings: Any) -> None:
        super().__init__("PG", test.routes, **settings)
        self.test = test

    def _run(self, plan: Plan[Any]) -> Any:
        return self.test.drive(plan)


class SendTests(Base):
    def sends(self) -> list[str]:
        return [a for a, _ in self.cluster.requests(RequestCode.SEND_MESSAGE_V2)]

    def test_retry_on_another_broker_within_the_budget(self) -> None:
        producer = Producer(self, send_timeout=2.0)
        self.cluster.script(RequestCode.SEND_MESSAGE_V2, ResponseCode.SYSTEM_ERROR)
        result = producer.send(Message("T", b"x"))
        first, second = self.sends()
        self.assertNotEqual(first, second)
        self.assertEqual(self.cluster.brokers[result.message_queue.broker_name], second)
        self.assertEqual(self.timeouts[-2:], [2.0, 2.0])  # the clock did not move: the whole budget each time
        self.assertEqual(len(self.warnings), 1)

    def test_budget_spent(self) -> None:
        """Attempts stop once the send timeout is spent (a silent broker is timed out by the driver)."""
        producer = Producer(self, send_timeout=2.0)

        def slow(addr: str, request: RemotingCommand) -> None:
            self.clock.now += 2.0
            return None

        self.cluster.script(RequestCode.SEND_MESSAGE_V2, slow)
        error = self.assertRaises(MQClientError, producer.send, Message("T", b"x"))
        self.assertIsInstance(error.__cause__, RemotingTimeoutError)
        self.assertEqual(len(self.sends()), 1)

    def test_final_broker_answer(self) -> None:
        self.cluster.script(RequestCode.SEND_MESSAGE_V2, ResponseCode.MESSAGE_ILLEGAL)
        error = self.assertRaises(MQBrokerError, Producer(self).send, Message("T", b"x"))
        self.assertEqual(error.code, ResponseCode.MESSAGE_ILLEGAL)
        self.assertEqual(len(self.sends()), 1)

    def test_sends_use_the_cached_route(self) -> None:
        producer = Producer(self)
        queues = {producer.send(Message("T", b"x")).message_queue for _ in range(8)}
        self.assertEqual(len(queues), 4)
        self.assertEqual(self.route_reads(), 1)
        self.assertEqual(self.routes.watched, {"T"})

    def test_oneway_is_one_attempt(self) -> None:
        """Java's sendOneway: the next queue in turn, one attempt, a failure wrapped in MQClientError."""
        producer = Producer(self)
        self.assertIsNone(producer.send_oneway(Message("T", b"o")))
        self.assertEqual(len(self.sends()), 1)
        self.cluster.down.update(self.cluster.brokers.values())
        error = self.assertRaises(MQClientError, producer.send_oneway, Message("T", b"o"))
        self.assertIsInstance(error.__cause__, RemotingConnectError)
        self.assertIn("Send [1] times", str(error))
        self.assertRaises(RemotingConnectError, producer.send_oneway, Message("T", b"o"),
                          queue=MessageQueue("T", "broker-a", 0))

    def test_no_writable_queue(self) -> None:
        self.cluster.topics["T"] = 0
        self.assertRaises(MQClientError, Producer(self).send, Message("T", b"x"))
        self.assertRaises(MQClientError, Producer(self).send_oneway, Message("T", b"x"))

    def test_template_until_the_topic_exists(self) -> None:
        """
        A topic the name server does not know goes through TBW102's route (at most
        default_topic_queue_nums queues per broker), kept for 30 s like any route; then the
        topic's own route once the broker has created it.
        """
        self.cluster.add_topic("TBW102", 8)
        producer = Producer(self)
        self.assertLess(producer.send(Message("NEW", b"x")).message_queue.queue_id, 4)
        producer.send(Message("NEW", b"y"))
        self.assertEqual((self.route_reads("NEW"), self.route_reads("TBW102")), (1, 1))
        self.clock.now += 31  # the topic still unknown: its template route stays
        producer.send(Message("NEW", b"z"))
        self.assertEqual((self.route_reads("NEW"), self.route_reads("TBW102")), (2, 1))
        self.cluster.add_topic("NEW", 1)
        self.clock.now += 31
        self.assertEqual(producer.send(Message("NEW", b"w")).message_queue.queue_id, 0)
        self.assertEqual(len(producer.publish_info("NEW").queues), 2)

    def test_forgotten_topic_keeps_its_last_route(self) -> None:
        """Java keeps a route the name server no longer knows (TOPIC_NOT_EXIST on re-read); no TBW102."""
        self.cluster.add_topic("TBW102", 8)
        producer = Producer(self)
        producer.send(Message("T", b"x"))
        del self.cluster.topics["T"]
        self.clock.now += 31
        self.assertEqual(producer.send(Message("T", b"y")).send_status, SendStatus.SEND_OK)
        self.assertEqual(self.route_reads("TBW102"), 0)
        self.assertEqual(len(producer.publish_info("T").queues), 4)

    def test_stale_route_when_no_namesrv(self) -> None:
        producer = Producer(self)
        producer.send(Message("T", b"x"))
        self.cluster.down.update((NS1, NS2))
        self.clock.now += 31
        self.assertEqual(producer.send(Message("T", b"y")).send_status, SendStatus.SEND_OK)

    def test_selector(self) -> None:
        producer = Producer(self)
        chosen = producer.send(Message("T", b"s"), selector=lambda qs, m, a: qs[a], arg=3).message_queue
        self.assertEqual(chosen, MessageQueue("T", "broker-b", 1))
        self.assertEqual(len({producer.send_orderly(Message("T", b"o"), "k").message_queue for _ in range(3)}), 1)
        self.cluster.topics["T"] = 0
        self.clock.now += 31
        self.assertRaises(MQClientError, producer.send, Message("T", b"s"), selector=lambda qs, m, a: qs[0])

    def test_batch_to_a_queue(self) -> None:
        producer = Producer(self)
        mq = MessageQueue("T", "broker-a", 1)
        result = producer.send_batch([Message("T", b"1"), Message("T", b"2")], queue=mq)
        self.assertEqual((result.message_queue, len(result.msg_id.split(","))), (mq, 2))
        self.assertEqual(self.cluster.requests(RequestCode.SEND_BATCH_MESSAGE)[0][0], "10.0.0.1:10911")

    def test_silent_namesrv(self) -> None:
        self.cluster.script(RequestCode.GET_ROUTEINFO_BY_TOPIC, SILENT, addr=NS1)
        self.assertEqual(Producer(self).send(Message("T", b"x")).send_status, SendStatus.SEND_OK)
        self.assertEqual(self.routes.namesrvs.ordered()[0], NS2)


class SlaveReadTests(Base):
    """Java 4.9's consumer rules for a master-slave pair: pull where suggested, offsets to the master."""

    MASTER, SLAVE = "10.0.0.1:10911", "10.0.0.11:10911"

    def setUp(self) -> None:
        super().setUp()
        self.cluster.slaves["broker-a"] = self.SLAVE
        self.mq = MessageQueue("T", "broker-a", 0)
        self.nodes = PullFromWhichNode()
        self.drive(sendapi.update_route(self.routes, "T"))
        self.sub = SubscriptionData.build("T", "*")

    def pull(self, offset: int = 0) -> tuple[str, PullMessageRequestHeader]:
        def build(*, slave: bool) -> RemotingCommand:
            return pull_request("CG", self.mq, offset, 32, self.sub, commit_offset=7, slave=slave)

        self.drive(sendapi.pull_call(self.routes, self.nodes, self.mq, build, self.sub))
        addr, request = self.cluster.requests(RequestCode.PULL_MESSAGE)[-1]
        return addr, PullMessageRequestHeader.from_ext_fields(request.ext_fields)

    def test_follows_suggest_which_broker_id(self) -> None:
        """The master first; its answer's suggestion sends the next pull to the slave, without the commit flag."""
        self.cluster.suggest[self.MASTER] = 1
        addr, header = self.pull()
        self.assertEqual((addr, header.sys_flag & PullSysFlag.COMMIT_OFFSET), (self.MASTER, PullSysFlag.COMMIT_OFFSET))
        self.assertEqual(self.nodes.recalculate(self.mq), 1)
        addr, header = self.pull()
        self.assertEqual((addr, header.sys_flag & PullSysFlag.COMMIT_OFFSET, header.commit_offset),
                         (self.SLAVE, 0, 7))
        # the slave suggests the master again (Java's slave does unless slaveReadEnable says otherwise)
        self.assertEqual(self.pull()[0], self.MASTER)

    def test_master_gone_reads_from_slave_and_returns(self) -> None:
        """The master out of the route: the route is read again and the slave pulled; back when it returns."""
        self.cluster.unrouted.add(self.MASTER)
        reads = self.route_reads("T")
        # the cached route still names the master: Java pulls it (and fails) until the route is re-read
        self.assertEqual(self.pull()[0], self.MASTER)
        self.drive(sendapi.update_route(self.routes, "T"))
        addr, header = self.pull()
        self.assertEqual((addr, header.sys_flag & PullSysFlag.COMMIT_OFFSET), (self.SLAVE, 0))
        self.assertEqual(self.route_reads("T"), reads + 1)
        self.cluster.unrouted.clear()
        self.drive(sendapi.update_route(self.routes, "T"))
        self.assertEqual(self.pull()[0], self.MASTER)

    def test_offsets_to_master_else_slave(self) -> None:
        """QUERY/UPDATE_CONSUMER_OFFSET go to the master; with none in the route, after a re-read, to the slave."""
        request = update_consumer_offset_request("CG", self.mq, 3)
        self.drive(sendapi.offset_call(self.routes, self.mq, request))
        self.assertEqual(self.cluster.requests(RequestCode.UPDATE_CONSUMER_OFFSET)[-1][0], self.MASTER)
        self.cluster.unrouted.add(self.MASTER)
        self.drive(sendapi.update_route(self.routes, "T"))
        reads = self.route_reads("T")
        self.drive(sendapi.offset_call(self.routes, self.mq, update_consumer_offset_request("CG", self.mq, 4)))
        self.assertEqual(self.cluster.requests(RequestCode.UPDATE_CONSUMER_OFFSET)[-1][0], self.SLAVE)
        self.assertEqual(self.route_reads("T"), reads + 1)  # Java reads the route each time the master is missing
        self.cluster.brokers.clear()
        self.cluster.slaves.clear()
        self.routes.brokers.clear()
        self.assertRaises(MQClientError, self.drive, sendapi.offset_call(self.routes, self.mq, request))

    def test_group_members_from_slave_while_master_gone(self) -> None:
        """GET_CONSUMER_LIST_BY_GROUP: the queue's master; with none in the route, its slave;
        with neither, another broker of the topic (Java 4.9 findBrokerAddrByTopic)."""
        def ask() -> str:
            self.drive(sendapi.topic_broker_call(self.routes, self.mq, consumer_list_request("CG")))
            return self.cluster.requests(RequestCode.GET_CONSUMER_LIST_BY_GROUP)[-1][0]

        self.assertEqual(ask(), self.MASTER)
        self.cluster.unrouted.add(self.MASTER)
        self.drive(sendapi.update_route(self.routes, "T"))
        reads = self.route_reads("T")
        self.assertEqual(ask(), self.SLAVE)
        self.assertEqual(self.route_reads("T"), reads)  # the cached route named the slave: no re-read
        self.cluster.unrouted.add(self.SLAVE)
        self.drive(sendapi.update_route(self.routes, "T"))
        self.assertEqual(ask(), "10.0.0.2:10911")
        self.routes.routes.clear()
        self.routes.brokers.clear()
        self.cluster.brokers.clear()
        self.cluster.slaves.clear()
        self.assertRaises(MQClientError, ask)  # the route read again names no address
