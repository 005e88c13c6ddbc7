"""
A send that creates its topic is answered once the name servers have the topic (Java's
``createTopicInSendMessageMethod`` registers before the send is answered), so the producer's
next route lookup finds it: :meth:`BrokerRegistrar.when_registered` and the send
processor's auto-create path.
"""

from __future__ import annotations

from twisted.internet.defer import Deferred
from twisted.python.failure import Failure
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.broker.registration import BrokerRegistrar
from rocketmq_tx.broker.test.test_processors import BrokerTestCase
from rocketmq_tx.broker.test.test_registration import NS1, NS2, ManualNameServers, RegistrarTests, answer
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.remoting.errors import RemotingTimeoutError


class WhenRegisteredTests(SynchronousTestCase):
    """The registrar's side: two name servers, registered (RegistrarTests' set-up)."""

    setUp = RegistrarTests.setUp
    create = RegistrarTests.create

    def test_nothing_pending(self) -> None:
        self.assertIsNone(self.registrar.when_registered("T1"))

    def test_pending_then_answered(self) -> None:
        """Waits for the registration that carries the topic, at every name server."""
        self.create("T1")
        d = self.registrar.when_registered("T1")
        self.assertIsNotNone(d)
        self.clock.advance(0)
        self.assertNoResult(d)
        self.api.to(NS1)[0][2].callback(answer())
        self.assertNoResult(d)
        self.api.to(NS2)[0][2].callback(answer(ResponseCode.SYSTEM_ERROR))  # refused counts as done
        self.assertIsNone(self.successResultOf(d))

    def test_in_flight(self) -> None:
        """Asked while the registration carrying it is in flight: that one's answer."""
        self.create("T1")
        self.clock.advance(0)
        d = self.registrar.when_registered("T1")
        self.api.to(NS1)[0][2].callback(answer())
        self.api.to(NS2)[0][2].errback(Failure(RemotingTimeoutError("late")))
        self.successResultOf(d)
        self.assertIsNone(self.registrar.when_registered("T1"))  # done

    def test_queued_behind_another(self) -> None:
        """Created while another registration is in flight: waits for the next one, not that one."""
        self.create("T1")
        self.clock.advance(0)
        self.create("T2")
        d = self.registrar.when_registered("T2")
        for addr in (NS1, NS2):
            self.api.to(addr)[0][2].callback(answer())
        self.clock.advance(0)
        self.assertNoResult(d)
        self.assertEqual(self.api.to(NS1)[1][0], {"T2"})
        for addr in (NS1, NS2):
            self.api.to(addr)[1][2].callback(answer())
        self.successResultOf(d)

    def test_backing_off_is_not_waited_for(self) -> None:
        """A name server whose last registration failed is not waited for while it backs off."""
        self.create("T0")
        self.clock.advance(0)
        self.api.to(NS1)[0][2].errback(Failure(RemotingTimeoutError("down")))
        self.api.to(NS2)[0][2].callback(answer())
        self.create("T1")
        d = self.registrar.when_registered("T1")
        self.clock.advance(0)  # NS2 gets T1; NS1 waits for its backoff
        self.assertEqual([t for t, _, _ in self.api.to(NS2)][-1], {"T1"})
        self.assertEqual(len(self.api.to(NS1)), 1)
        self.api.to(NS2)[-1][2].callback(answer())
        self.successResultOf(d)

    def test_stop_releases_waiters(self) -> None:
        self.create("T1")
        d = self.registrar.when_registered("T1")
        self.registrar.stop()
        self.successResultOf(d)
        self.assertIsNone(self.registrar.when_registered("T2"))


class AutoCreateSendTests(BrokerTestCase):
    """The broker's side: SEND_MESSAGE to a topic it creates."""

    def setUp(self) -> None:
        super().setUp()
        self.controller.settings["namesrvAddr"] = f"{NS1};{NS2}"
        self.api = ManualNameServers()
        self.registrar = self.controller.registrar = BrokerRegistrar(self.reactor, self.controller.settings,
                                                                     self.controller, lambda: self.api)
        self.registrar.start()
        full = self.registrar.register_all()
        for _, _, _, d in self.api.sent:
            d.callback(answer())
        self.successResultOf(full)
        self.api.sent.clear()

    def send_deferred(self, topic: str = "NewTopic") -> Deferred:
        header = self.send_header(topic)
        request = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, header.to_v2().to_ext_fields(), b"hello")
        request.opaque = 77
        result = self.table.dispatch(self.ctx, request)
        self.assertIsInstance(result, Deferred)
        return result

    def test_answered_after_the_name_servers_have_it(self) -> None:
        d = self.send_deferred()
        self.reactor.advance(0)
        self.assertEqual([(a, t) for a, t, _, _ in self.api.sent], [(NS1, {"NewTopic"}), (NS2, {"NewTopic"})])
        self.assertNoResult(d)
        self.api.to(NS1)[0][2].callback(answer())
        self.assertNoResult(d)
        self.api.to(NS2)[0][2].callback(answer())
        response = self.successResultOf(d)
        self.assertEqual((response.code, response.opaque, response.ext_fields["queueOffset"]),
                         (ResponseCode.SUCCESS, 77, "0"))
        # stored once
        self.assertEqual(sum(self.store.get_max_offset_in_queue("NewTopic", q) for q in range(4)), 1)
        # the next send to it is answered at once
        self.assertEqual(self.send("NewTopic").code, ResponseCode.SUCCESS)

    def test_failed_registration_still_answers(self) -> None:
        d = self.send_deferred()
        self.reactor.advance(0)
        for addr in (NS1, NS2):
            self.api.to(addr)[0][2].errback(Failure(RemotingTimeoutError("down")))
        self.assertEqual(self.successResultOf(d).code, ResponseCode.SUCCESS)

    def test_silent_name_server_bounded_by_register_timeout(self) -> None:
        """No answer: the send is answered after registerBrokerTimeoutMills."""
        d = self.send_deferred()
        self.reactor.advance(0)
        self.api.to(NS1)[0][2].callback(answer())
        self.reactor.advance(self.controller.settings["registerBrokerTimeoutMills"] / 1000.0 - 0.01)
        self.assertNoResult(d)
        self.reactor.advance(0.02)
        self.assertEqual(self.successResultOf(d).code, ResponseCode.SUCCESS)
        self.api.to(NS2)[0][2].callback(answer())  # late: nothing more happens

    def test_refused_send_is_not_delayed(self) -> None:
        """A topic that is not created (autoCreate off for it) is refused at once, as before."""
        response = self.send("Bad Topic!")
        self.assertNotEqual(response.code, ResponseCode.SUCCESS)
        self.assertEqual(self.api.sent, [])

    def test_without_name_servers(self) -> None:
        self.controller.registrar = None
        self.assertEqual(self.send("Other").code, ResponseCode.SUCCESS)
