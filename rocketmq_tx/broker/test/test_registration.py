"""BrokerRegistrar: increments, one registration in flight per name server, coalescing, failures."""

from __future__ import annotations

import os
from types import SimpleNamespace

from twisted.internet.defer import Deferred, succeed
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.broker.config import BrokerSettings
from rocketmq_tx.broker.registration import BrokerRegistrar
from rocketmq_tx.broker.topicconfig import TopicConfigManager
from rocketmq_tx.common.route import TopicConfig
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.remoting.errors import RemotingTimeoutError

NS1, NS2 = "10.0.0.1:9876", "10.0.0.2:9876"


def answer(code: int = ResponseCode.SUCCESS) -> RemotingCommand:
    response = RemotingCommand.request(RequestCode.REGISTER_BROKER, {}).make_response()
    response.code = code
    return response


class ManualNameServers:
    """A fake BrokerOuterAPI whose name servers answer when the test says so."""

    def __init__(self) -> None:
        #: (namesrv, topic names, data version counter, Deferred) per REGISTER_BROKER sent
        self.sent: list[tuple[str, set[str], int, Deferred]] = []
        self.tokens: dict[str, object] = {}

    def connection(self, addr: str) -> Deferred:
        return succeed(self.tokens.setdefault(addr, object()))

    def register_broker(self, namesrvs, cluster, broker_addr, broker_name,  # type: ignore[no-untyped-def]
                        broker_id, ha_addr, data_version, topics, compressed=False):
        out = {}
        for addr in namesrvs:
            d: Deferred = Deferred()
            self.sent.append((addr, set(topics), data_version.counter, d))
            self.last_topics = dict(topics)
            out[addr] = d
        return out

    def to(self, addr: str) -> list[tuple[set[str], int, Deferred]]:
        return [(topics, version, d) for a, topics, version, d in self.sent if a == addr]

    def in_flight(self, addr: str) -> int:
        return sum(1 for _, _, d in self.to(addr) if not d.called)


class RegistrarTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.clock = Clock()
        self.settings = BrokerSettings({"brokerIP1": "127.0.0.1", "brokerName": "broker-a",
                                        "namesrvAddr": f"{NS1};{NS2}"})
        self.tcm = TopicConfigManager(os.path.join(self.mktemp(), "topics.json"), self.settings)
        controller = SimpleNamespace(topic_config_manager=self.tcm, broker_addr="127.0.0.1:10911",
                                     ha_server_addr=lambda: "127.0.0.1:10912")
        self.api = ManualNameServers()
        self.registrar = BrokerRegistrar(self.clock, self.settings, controller, lambda: self.api)
        self.registrar.start()
        # the start-up registration: the whole table, answered
        self.registrar.register_all()
        for _, _, _, d in self.api.sent:
            d.callback(answer())
        self.api.sent.clear()

    def create(self, *names: str) -> None:
        configs = []
        for name in names:
            tc = TopicConfig(name, 4, 4)
            self.tcm.update_topic_config(tc)
            configs.append(tc)
        self.registrar.register_increment(configs)

    def test_increment_carries_only_new_topics(self) -> None:
        """One REGISTER_BROKER per name server with the new topic alone and the current DataVersion."""
        self.create("T1")
        self.assertEqual(self.api.sent, [])  # next reactor turn
        self.clock.advance(0)
        self.assertEqual([(a, t, v) for a, t, v, _ in self.api.sent],
                         [(NS1, {"T1"}, self.tcm.data_version.counter), (NS2, {"T1"}, self.tcm.data_version.counter)])

    def test_one_in_flight_per_name_server_and_coalescing(self) -> None:
        """Topics created while a registration is in flight go together in the next one."""
        self.create("T1")
        self.clock.advance(0)
        for i in range(2, 50):
            self.create(f"T{i}")
            self.clock.advance(0)
        self.assertEqual((self.api.in_flight(NS1), self.api.in_flight(NS2)), (1, 1))
        self.assertEqual(len(self.api.sent), 2)
        self.api.to(NS1)[0][2].callback(answer())
        self.clock.advance(0)
        # NS1 goes on with everything created meanwhile; NS2 still waits for its first answer
        topics, version, _ = self.api.to(NS1)[1]
        self.assertEqual(topics, {f"T{i}" for i in range(2, 50)})
        self.assertEqual(version, self.tcm.data_version.counter)
        self.assertEqual(len(self.api.to(NS2)), 1)
        self.api.to(NS2)[0][2].callback(answer())
        self.clock.advance(0)
        self.assertEqual(self.api.to(NS2)[1][0], {f"T{i}" for i in range(2, 50)})
        for addr in (NS1, NS2):
            self.api.to(addr)[1][2].callback(answer())
        self.clock.advance(0)
        self.assertEqual(len(self.api.sent), 4)
        self.assertTrue(self.registrar.is_idle())

    def test_full_requests_collapse(self) -> None:
        """register_all while one is in flight: one more full registration after it."""
        first = self.registrar.register_all()
        second = self.registrar.register_all()
        third = self.registrar.register_all()
        self.assertEqual(len(self.api.to(NS1)), 1)
        self.api.to(NS1)[0][2].callback(answer())
        self.clock.advance(0)
        self.assertEqual(len(self.api.to(NS1)), 2)
        self.assertEqual(self.api.to(NS1)[1][0], set(self.tcm.topic_config_table))
        for addr in (NS2, NS1, NS2):
            [d for _, _, d in self.api.to(addr) if not d.called][0].callback(answer())
            self.clock.advance(0)
        for d in (first, second, third):
            self.assertEqual(set(self.successResultOf(d)), {NS1, NS2})
        self.assertEqual(len(self.api.sent), 4)

    def test_failed_increment_loses_no_topic(self) -> None:
        """A timed-out increment: after the backoff the name server gets the whole table
        (the lost topic with it); topics created meanwhile wait for it."""
        self.create("Lost")
        self.clock.advance(0)
        self.api.to(NS2)[0][2].callback(answer())
        self.api.to(NS1)[0][2].errback(RemotingTimeoutError("timed out"))
        self.create("Later")
        self.clock.advance(0.5)
        self.assertEqual(len(self.api.to(NS1)), 1)  # backing off
        self.assertEqual(self.api.to(NS2)[1][0], {"Later"})  # the other name server is unaffected
        self.clock.advance(0.5)
        topics, _, d = self.api.to(NS1)[1]
        self.assertEqual(topics, set(self.tcm.topic_config_table))
        self.assertIn("Lost", topics)
        d.callback(answer())
        # synced again: increments from now on
        self.create("After")
        self.clock.advance(0)
        self.assertEqual(self.api.to(NS1)[2][0], {"After"})

    def test_refused_registration_is_retried_whole(self) -> None:
        """A name server answering an error (a 5.x one refusing an increment from a broker it
        does not know: SYSTEM_ERROR) gets the whole table next."""
        self.create("T1")
        self.clock.advance(0)
        self.api.to(NS1)[0][2].callback(answer(ResponseCode.SYSTEM_ERROR))
        self.clock.advance(1)
        self.assertEqual(self.api.to(NS1)[1][0], set(self.tcm.topic_config_table))

    def test_backoff_grows_and_full_requests_do_not_wait(self) -> None:
        self.create("T1")
        self.clock.advance(0)
        self.api.to(NS1)[0][2].errback(ConnectionRefusedError())
        self.clock.advance(1)
        self.api.to(NS1)[1][2].errback(ConnectionRefusedError())
        self.clock.advance(1.9)
        self.assertEqual(len(self.api.to(NS1)), 2)  # 2 s now
        self.clock.advance(0.1)
        self.assertEqual(len(self.api.to(NS1)), 3)
        self.api.to(NS1)[2][2].errback(ConnectionRefusedError())
        self.registrar.register_all()  # the periodic registration goes at once
        self.assertEqual(len(self.api.to(NS1)), 4)

    def test_new_connection_gets_the_whole_table(self) -> None:
        """A name server reached over a new connection may have restarted: the whole table,
        not an increment (a 4.9 name server would ignore the next full one, same DataVersion)."""
        self.api.tokens[NS1] = object()  # reconnected
        self.create("T1")
        self.clock.advance(0)
        self.assertEqual(self.api.to(NS1)[0][0], set(self.tcm.topic_config_table))
        self.assertEqual(self.api.to(NS2)[0][0], {"T1"})

    def test_deleted_before_sending(self) -> None:
        self.create("Gone", "Kept")
        self.tcm.delete_topic_config("Gone")
        self.clock.advance(0)
        self.assertEqual(self.api.to(NS1)[0][0], {"Kept"})
        self.create("Gone2")
        self.tcm.delete_topic_config("Gone2")
        self.api.to(NS1)[0][2].callback(answer())
        self.clock.advance(0)
        self.assertEqual(len(self.api.to(NS1)), 1)  # nothing left to say

    def test_broker_permission_masks_increments(self) -> None:
        self.settings["brokerPermission"] = 4
        self.create("T1")
        self.clock.advance(0)
        self.assertEqual(self.api.last_topics["T1"].perm, 4)
        self.assertEqual(self.tcm.topic_config_table["T1"].perm, 6)

    def test_stop(self) -> None:
        """Nothing sent after stop; waiting callers are answered None."""
        self.create("T1")
        self.clock.advance(0)
        waiting = self.registrar.register_all()
        self.registrar.stop()
        self.assertEqual(self.successResultOf(waiting), {NS1: None, NS2: None})
        self.create("T2")
        for addr in (NS1, NS2):
            self.api.to(addr)[0][2].callback(answer())
        self.clock.advance(60)
        self.assertEqual(len(self.api.sent), 2)
        self.assertEqual(self.clock.getDelayedCalls(), [])
