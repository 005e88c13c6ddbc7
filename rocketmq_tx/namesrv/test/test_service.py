"""The name server service: listening, expiry on the reactor's clock, and removal when a connection closes."""

from __future__ import annotations

import zlib

from twisted.internet.address import IPv4Address
from twisted.internet.testing import MemoryReactorClock
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.common.route import DataVersion, TopicConfig
from rocketmq_tx.namesrv.config import NamesrvSettings
from rocketmq_tx.namesrv.service import NamesrvService
from rocketmq_tx.net.protocol import RemotingProtocol
from rocketmq_tx.remoting import RemotingCommand, RequestCode
from rocketmq_tx.remoting.bodies import RegisterBrokerBody
from rocketmq_tx.testing.loopback import connect


class ServiceTests(SynchronousTestCase):
    """NamesrvService wired to a memory reactor."""

    def setUp(self) -> None:
        self.reactor = MemoryReactorClock()
        self.reactor.advance(1_700_000_000)
        d = self.mktemp()
        self.service = NamesrvService(NamesrvSettings({"listenPort": 19876, "bindAddress": "127.0.0.1",
                                                       "kvConfigPath": f"{d}/kv.json"}), self.reactor)
        self.service.startService()
        self.addCleanup(self.service.stopService)

    def broker_connection(self, name: str, port: int):  # type: ignore[no-untyped-def]
        server = self.service.factory.buildProtocol(IPv4Address("TCP", "127.0.0.1", port))
        client = RemotingProtocol(self.reactor)
        pump = connect(client, server, client_port=port)
        body = RegisterBrokerBody(DataVersion(1, 1), {"T": TopicConfig("T", 4, 4)}, []).encode()
        d = client.send_request(RemotingCommand.request(RequestCode.REGISTER_BROKER, {
            "brokerName": name, "brokerAddr": f"127.0.0.1:{port}", "clusterName": "c", "haServerAddr": "h:1",
            "brokerId": "0", "compressed": "false", "bodyCrc32": str(zlib.crc32(body) & 0x7FFFFFFF)}, body), 3)
        pump.flush()
        self.assertEqual(self.successResultOf(d).code, 0)
        return client, pump

    def brokers(self) -> set[str]:
        return set(self.service.controller.route_info_manager.broker_addr_table)

    def test_listens_where_configured(self) -> None:
        """The configured port and interface, with Java's backlog."""
        port, factory, backlog, interface = self.reactor.tcpServers[0]
        self.assertEqual((port, backlog, interface), (19876, 1024, "127.0.0.1"))
        self.assertIs(factory.app_factory, self.service.factory)  # behind the TLS-mode check

    def test_expiry_on_clock(self) -> None:
        """Silent brokers go after 120 s, found by the scan every 10 s; their connection is closed."""
        client, pump = self.broker_connection("broker-a", 10911)
        self.reactor.pump([10] * 12)
        self.assertEqual(self.brokers(), {"broker-a"})
        self.reactor.pump([10] * 2)
        self.assertEqual(self.brokers(), set())
        self.assertTrue(pump.server_transport.disconnecting)

    def test_connection_close_removes_at_once(self) -> None:
        """A broker whose connection closes is gone immediately; others stay."""
        client, pump = self.broker_connection("broker-a", 10911)
        self.broker_connection("broker-b", 10921)
        pump.client_transport.loseConnection()
        pump.flush()
        self.assertEqual(self.brokers(), {"broker-b"})
        route = self.service.controller.route_info_manager.pickup_topic_route_data("T")
        self.assertEqual([b.broker_name for b in route.broker_datas], ["broker-b"])
