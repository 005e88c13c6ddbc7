"""
REGISTER_BROKER bodies that take long to decode are decoded in a thread: the reactor
answers other connections meanwhile, and the answer is the one the reactor would give.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any

from twisted.internet.defer import Deferred
from twisted.internet.task import Clock
from twisted.python.failure import Failure
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.common import fastjson
from rocketmq_tx.common.route import DataVersion, TopicConfig
from rocketmq_tx.namesrv.config import NamesrvSettings
from rocketmq_tx.namesrv.controller import NamesrvController
from rocketmq_tx.namesrv.processors import processor_table
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode, encode_command
from rocketmq_tx.remoting.bodies import RegisterBrokerBody

BIG = RegisterBrokerBody(DataVersion(1, 2), {f"Topic{i:04d}": TopicConfig(f"Topic{i:04d}", 8, 8)
                                             for i in range(400)}, [])
SMALL = RegisterBrokerBody(DataVersion(1, 2), {"T": TopicConfig("T", 4, 4)}, [])


class PoolReactor(Clock):
    """A clock with a thread pool whose work runs only when :meth:`run_work` says so."""

    def __init__(self) -> None:
        super().__init__()
        self.work: list[tuple[Callable[[bool, Any], None], Callable[..., Any], tuple[Any, ...]]] = []

    def getThreadPool(self) -> PoolReactor:
        return self

    def callInThreadWithCallback(self, on_result: Callable[[bool, Any], None], f: Callable[..., Any],
                                 *args: Any) -> None:
        self.work.append((on_result, f, args))

    def callFromThread(self, f: Callable[..., Any], *args: Any) -> None:
        f(*args)

    def run_work(self) -> None:
        work, self.work = self.work, []
        for on_result, f, args in work:
            try:
                result = f(*args)
            except Exception:
                on_result(False, Failure())
            else:
                on_result(True, result)


class Connection:
    """A stand-in connection with the server's injected clock, as RemotingProtocol has."""

    def __init__(self, clock: Clock | None, peer: str = "127.0.0.1:50000") -> None:
        if clock is not None:
            self.clock = clock
        self.peer = peer
        self.connected = True


class RegistrationTestCase(SynchronousTestCase):
    """A name server's processor table on a clock with a controllable thread pool."""

    def setUp(self) -> None:
        d = self.mktemp()
        settings = NamesrvSettings({"kvConfigPath": f"{d}/kv.json", "configStorePath": f"{d}/ns.properties"})
        self.controller = NamesrvController(settings, now=lambda: 1_700_000_000_000)
        self.table = processor_table(self.controller)
        self.reactor = PoolReactor()
        self.broker = Connection(self.reactor)

    def request(self, body: RegisterBrokerBody, compressed: bool = False, crc: int | None = None) -> RemotingCommand:
        raw = body.encode(compressed)
        return RemotingCommand.request(RequestCode.REGISTER_BROKER, {
            "brokerName": "broker-a", "brokerAddr": "127.0.0.1:10911", "clusterName": "DefaultCluster",
            "haServerAddr": "127.0.0.1:10912", "brokerId": "0", "compressed": "true" if compressed else "false",
            "bodyCrc32": str(zlib.crc32(raw) & 0x7FFFFFFF if crc is None else crc)}, raw, version=409)

    def on_reactor(self, request: RemotingCommand) -> bytes:
        """The answer of a name server without a thread pool, as bytes."""
        d = self.mktemp()
        controller = NamesrvController(NamesrvSettings({"kvConfigPath": f"{d}/kv.json"}), now=lambda: 1)
        response = processor_table(controller).dispatch(Connection(None), request)
        assert isinstance(response, RemotingCommand)
        return encode_command(response)


class RegisterOffloadTests(RegistrationTestCase):
    def test_others_answered_while_decoding(self) -> None:
        """While a large body is decoded, another connection is answered at once; then the broker registers."""
        for compressed in (False, True):
            self.controller.route_info_manager.unregister_broker("DefaultCluster", "127.0.0.1:10911", "broker-a", 0)
            request = self.request(BIG, compressed)
            d = self.table.dispatch(self.broker, request)
            self.assertIsInstance(d, Deferred)
            self.assertNoResult(d)
            self.assertEqual(len(self.reactor.work), 1)
            other = self.table.dispatch(Connection(self.reactor, "127.0.0.1:50001"),
                                        RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO))
            self.assertIsInstance(other, RemotingCommand)
            self.assertEqual(self.controller.route_info_manager.broker_live_table, {})
            self.reactor.run_work()
            response = self.successResultOf(d)
            self.assertEqual(encode_command(response), self.on_reactor(request))
            self.assertIsNotNone(self.controller.route_info_manager.pickup_topic_route_data("Topic0399"))

    def test_small_json_stays_on_the_reactor(self) -> None:
        """A small uncompressed body costs less than the hand-off: answered at once."""
        response = self.table.dispatch(self.broker, self.request(SMALL))
        self.assertIsInstance(response, RemotingCommand)
        self.assertEqual(self.reactor.work, [])

    def test_small_compressed_goes_to_the_thread(self) -> None:
        """Any compressed body may inflate ~1000 times: always decoded in the thread."""
        d = self.table.dispatch(self.broker, self.request(SMALL, compressed=True))
        self.assertNoResult(d)
        self.reactor.run_work()
        self.assertEqual(self.successResultOf(d).code, ResponseCode.SUCCESS)

    def test_failures_answer_the_same(self) -> None:
        """A CRC mismatch, an undecodable body and a zlib bomb answer as on the reactor, and register nothing."""
        bomb = self.request(SMALL, compressed=True)
        bomb.body = zlib.compress(b"\0" * (17 << 20), 9)
        bomb.ext_fields["bodyCrc32"] = "0"
        garbage = self.request(BIG)
        garbage.body = b"{" * 20000
        garbage.ext_fields["bodyCrc32"] = "0"
        for request in (self.request(BIG, crc=12345), garbage, bomb):
            d = self.table.dispatch(self.broker, request)
            self.reactor.run_work()
            response = self.successResultOf(d)
            self.assertEqual(response.code, ResponseCode.SYSTEM_ERROR)
            self.assertEqual(encode_command(response), self.on_reactor(request))
        self.assertEqual(self.controller.route_info_manager.broker_live_table, {})

    def test_closed_while_decoding(self) -> None:
        """A broker whose connection closed during the decode is not registered (its channel is gone)."""
        d = self.table.dispatch(self.broker, self.request(BIG))
        self.broker.connected = False
        self.reactor.run_work()
        self.assertIsNone(self.successResultOf(d))
        self.assertEqual(self.controller.route_info_manager.broker_live_table, {})


def many_topics(count: int, version: int, queues: int = 8) -> RegisterBrokerBody:
    return RegisterBrokerBody(DataVersion(version, 2), {f"T{i}": TopicConfig(f"T{i}", queues, queues)
                                                        for i in range(count)}, [])


class RouteApplySliceTests(RegistrationTestCase):
    """A registration of many topics reaches the route table 2048 topics per reactor turn."""

    def finish(self, d: Deferred) -> RemotingCommand:
        self.reactor.run_work()
        answered: list[RemotingCommand] = []
        d.addCallback(lambda r: answered.append(r) or r)
        self.turns = 0
        while not answered and self.turns < 100:
            self.reactor.advance(0)  # one slice per call: nothing else is scheduled
            self.turns += 1
        return self.successResultOf(d)

    def test_applied_in_slices(self) -> None:
        routes = self.controller.route_info_manager
        d = self.table.dispatch(self.broker, self.request(many_topics(5000, 1)))
        self.reactor.run_work()
        self.assertNoResult(d)  # 2048 applied on the decode's turn, the rest pending
        self.assertIsNotNone(routes.pickup_topic_route_data("T2047"))
        self.assertIsNone(routes.pickup_topic_route_data("T2048"))
        # Another client is answered between slices.
        other = self.table.dispatch(Connection(self.reactor, "127.0.0.1:50001"),
                                    RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO))
        self.assertIsInstance(other, RemotingCommand)
        # One reactor turn at a time (Clock.advance would run the chained turns in one go).
        for applied in (4095, 4999):
            (turn,) = self.reactor.getDelayedCalls()
            self.reactor.calls.remove(turn)
            turn.func(*turn.args, **turn.kw)
            self.assertIsNotNone(routes.pickup_topic_route_data(f"T{applied}"))
            self.assertIsNone(routes.pickup_topic_route_data(f"T{applied + 1}"))
        self.assertEqual(self.successResultOf(d).code, ResponseCode.SUCCESS)

    def test_newer_table_supersedes_the_rest_of_an_older_one(self) -> None:
        routes = self.controller.route_info_manager
        old = self.table.dispatch(self.broker, self.request(many_topics(5000, 1, queues=8)))
        self.reactor.run_work()
        new = self.table.dispatch(self.broker, self.request(many_topics(5000, 2, queues=4)))
        self.reactor.run_work()
        self.assertEqual(self.finish(old).code, ResponseCode.SUCCESS)
        self.assertEqual(self.finish(new).code, ResponseCode.SUCCESS)
        for topic in ("T0", "T3000", "T4999"):
            (queue,) = routes.pickup_topic_route_data(topic).queue_datas
            self.assertEqual(queue.write_queue_nums, 4, topic)


class RegisterTopicOffloadTests(RegistrationTestCase):
    """REGISTER_TOPIC_IN_NAMESRV (217) bodies past the reactor's size are decoded in the thread too."""

    def topic_request(self, body: bytes) -> RemotingCommand:
        return RemotingCommand.request(RequestCode.REGISTER_TOPIC_IN_NAMESRV, {"topic": "Single"}, body, version=513)

    def test_large_body_decoded_in_thread(self) -> None:
        """The same answer and route as on the reactor; a small body is answered at once."""
        self.table.dispatch(self.broker, self.request(SMALL))
        queue = {"brokerName": "broker-a", "perm": 6, "readQueueNums": 2, "topicSysFlag": 0, "writeQueueNums": 2}
        big = fastjson.dumps({"brokerDatas": [], "queueDatas": [queue] * 400})
        self.assertGreater(len(big), 16 * 1024)
        request = self.topic_request(big)
        d = self.table.dispatch(self.broker, request)
        self.assertNoResult(d)
        self.assertIsNone(self.controller.route_info_manager.pickup_topic_route_data("Single"))
        self.reactor.run_work()
        self.assertEqual(encode_command(self.successResultOf(d)), self.on_reactor(request))
        route = self.controller.route_info_manager.pickup_topic_route_data("Single")
        self.assertEqual([q.write_queue_nums for q in route.queue_datas], [2])
        small = self.table.dispatch(self.broker, self.topic_request(fastjson.dumps({"queueDatas": [queue]})))
        self.assertIsInstance(small, RemotingCommand)

    def test_large_garbage_answers_the_same(self) -> None:
        """An undecodable large body is SYSTEM_ERROR from the thread, as on the reactor."""
        request = self.topic_request(b"[" * 20000)
        d = self.table.dispatch(self.broker, request)
        self.reactor.run_work()
        response = self.successResultOf(d)
        self.assertEqual(response.code, ResponseCode.SYSTEM_ERROR)
        self.assertEqual(encode_command(response), self.on_reactor(request))
