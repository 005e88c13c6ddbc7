"""BrokerService on a memory reactor: ports, name-server registration, periodic work, clients, stop."""

from __future__ import annotations

import json
import os

from twisted.internet.address import IPv4Address
from twisted.internet.defer import fail, succeed
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.broker.outerapi import BrokerOuterAPI, namesrv_addresses
from rocketmq_tx.broker.service import BrokerService
from rocketmq_tx.broker.test.util import FakeReactor, broker_settings, heartbeat
from rocketmq_tx.common.route import TopicConfig
from rocketmq_tx.namesrv.config import NamesrvSettings
from rocketmq_tx.namesrv.controller import NamesrvController
from rocketmq_tx.namesrv.processors import processor_table as namesrv_table
from rocketmq_tx.net.client import RemotingClient
from rocketmq_tx.net.protocol import RemotingProtocol
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.testing.loopback import connect

NAMESRVS = "127.0.0.1:9876;127.0.0.2:9876"


class FakeOuterAPI:
    """Records what the broker tells the name servers (one record per name server); every
    name server answers SUCCESS over a connection that stays up."""

    def __init__(self) -> None:
        self.registrations: list[dict] = []
        self.unregistrations: list[tuple] = []
        self.connections: dict[str, object] = {}

    def connection(self, addr: str):  # type: ignore[no-untyped-def]
        return succeed(self.connections.setdefault(addr, object()))

    def register_broker(self, namesrvs, cluster, broker_addr, broker_name,  # type: ignore[no-untyped-def]
                        broker_id, ha_addr, data_version, topics, compressed=False):
        answers = {}
        for addr in namesrvs:
            self.registrations.append({
                "namesrv": addr, "cluster": cluster, "addr": broker_addr, "name": broker_name,
                "id": broker_id, "ha": ha_addr, "version": dict(data_version.to_json()), "topics": dict(topics),
                "compressed": compressed})
            answers[addr] = succeed(RemotingCommand.request(RequestCode.REGISTER_BROKER, {}).make_response())
        return answers

    def unregister_broker_all(self, namesrvs, cluster, broker_addr,  # type: ignore[no-untyped-def]
                              broker_name, broker_id):
        self.unregistrations.append((list(namesrvs), cluster, broker_addr, broker_name, broker_id))
        return succeed([])


class ServiceTestCase(SynchronousTestCase):
    keys: dict = {}

    def setUp(self) -> None:
        self.reactor = FakeReactor()
        keys = {"listenPort": 10911, "namesrvAddr": NAMESRVS, **self.keys}
        self.settings = broker_settings(self, **keys)
        self.service = BrokerService(self.settings, self.reactor, drive_store=False)
        self.controller = self.service.controller
        self.api = FakeOuterAPI()
        self.service.outer_api = self.api  # type: ignore[assignment]
        self.addCleanup(self.stop)

    def start(self) -> None:
        self.service.startService()

    def stop(self) -> None:
        if self.service.running:
            self.successResultOf(self.service.stopService())

    def connect_client(self, port: int = 50000, fast: bool = False,  # type: ignore[no-untyped-def]
                       idle_timeout: float | None = 120):
        """A client connected to the broker's main (or fast) port over a loopback pump."""
        factory = self.service.factories[1 if fast else 0]
        server = factory.buildProtocol(IPv4Address("TCP", "127.0.0.1", port))
        client = RemotingProtocol(self.reactor, idle_timeout=idle_timeout)
        return client, connect(client, server, client_port=port)


class ListeningTests(ServiceTestCase):
    def test_listens_on_both_ports(self) -> None:
        """listenPort and listenPort - 2 (the fast port), Java's backlog, on bindAddress; HA on listenPort + 1."""
        self.start()
        ports = {port: (factory, backlog, interface) for port, factory, backlog, interface in self.reactor.tcpServers}
        self.assertEqual(set(ports), {10911, 10909, 10912})
        self.assertIs(ports[10912][0], self.controller.ha_service)
        self.assertEqual(ports[10911][1:], (1024, "0.0.0.0"))
        self.assertIs(ports[10911][0].app_factory, self.service.factories[0])
        self.assertIs(ports[10909][0].app_factory, self.service.factories[1])

    def test_fast_port_table_has_no_pull(self) -> None:
        main, fast = (f.processors for f in self.service.factories)
        self.assertIn(RequestCode.PULL_MESSAGE, main.codes())
        self.assertNotIn(RequestCode.PULL_MESSAGE, fast.codes())
        self.assertLessEqual(fast.codes(), main.codes())
        self.assertIn(RequestCode.SEND_MESSAGE_V2, fast.codes())

    def test_requests_over_a_connection(self) -> None:
        """HEART_BEAT over the fast port; a PULL_MESSAGE there is not supported."""
        self.start()
        client, pump = self.connect_client(fast=True)
        d = client.send_request(heartbeat("c1", ("pg",), {"g": {"T": "*"}}), 3)
        pump.flush()
        self.assertEqual(self.successResultOf(d).code, ResponseCode.SUCCESS)
        self.assertIsNotNone(self.controller.consumer_manager.get_consumer_group_info("g"))
        d = client.send_request(RemotingCommand.request(RequestCode.PULL_MESSAGE, {}), 3)
        pump.flush()
        self.assertEqual(self.successResultOf(d).code, ResponseCode.REQUEST_CODE_NOT_SUPPORTED)

    def test_no_fast_port_when_disabled(self) -> None:
        settings = broker_settings(self, listenPort=20911, fastListenPortEnable=False)
        service = BrokerService(settings, self.reactor, drive_store=False)
        self.assertEqual(len(service.factories), 1)


class NoFastPortTests(ServiceTestCase):
    keys = {"fastListenPortEnable": False}

    def test_only_main_port(self) -> None:
        self.start()
        self.assertEqual([s[0] for s in self.reactor.tcpServers], [10911, 10912])  # main and HA


class RegistrationTests(ServiceTestCase):
    def test_registers_at_start_and_every_period(self) -> None:
        self.start()
        self.reactor.advance(0)
        self.assertEqual([r["namesrv"] for r in self.api.registrations], ["127.0.0.1:9876", "127.0.0.2:9876"])
        reg = self.api.registrations[0]
        self.assertEqual((reg["cluster"], reg["addr"], reg["name"], reg["id"], reg["ha"]),
                         ("DefaultCluster", "127.0.0.1:10911", "broker-a", 0, "127.0.0.1:10912"))
        self.assertEqual(reg["version"], self.controller.topic_config_manager.data_version.to_json())
        self.assertEqual(set(reg["topics"]), set(self.controller.topic_config_manager.topic_config_table))
        self.assertIn("TBW102", reg["topics"])
        self.assertIn("SCHEDULE_TOPIC_XXXX", reg["topics"])
        self.assertFalse(reg["compressed"])
        self.reactor.advance(29.9)
        self.assertEqual(len(self.api.registrations), 2)
        self.reactor.advance(0.1)
        self.assertEqual(len(self.api.registrations), 4)
        self.reactor.advance(30)
        self.assertEqual(len(self.api.registrations), 6)

    def test_topic_creation_registers_promptly(self) -> None:
        """Topics created by sends are announced on the next reactor turn, alone (Java's
        increment: only the new topics, the current DataVersion), a burst in one request."""
        self.start()
        self.reactor.advance(0)
        tcm = self.controller.topic_config_manager
        tcm.create_topic_in_send_message_method("NewTopic", "TBW102", 4)
        tcm.create_topic_in_send_message_back_method("%RETRY%g", 1, 6)
        self.assertEqual(len(self.api.registrations), 2)
        self.reactor.advance(0)
        self.assertEqual(len(self.api.registrations), 4)
        for reg in self.api.registrations[2:]:
            self.assertEqual(set(reg["topics"]), {"NewTopic", "%RETRY%g"})
            self.assertEqual(reg["version"], tcm.data_version.to_json())
            self.assertEqual(reg["version"]["counter"], 2)
        self.reactor.advance(0)
        self.assertEqual(len(self.api.registrations), 4)

    def test_permission_change_registers_everything(self) -> None:
        """UPDATE_BROKER_CONFIG's brokerPermission calls on_topic_created(None): the whole table."""
        self.start()
        self.reactor.advance(0)
        self.settings["brokerPermission"] = 4
        self.controller.on_topic_created(None)
        self.reactor.advance(0)
        self.assertEqual(len(self.api.registrations), 4)
        topics = self.api.registrations[-1]["topics"]
        self.assertEqual(set(topics), set(self.controller.topic_config_manager.topic_config_table))
        self.assertEqual(topics["TBW102"].perm, 4)

    def test_broker_permission_masks_topics(self) -> None:
        self.settings["brokerPermission"] = 4
        self.start()
        self.reactor.advance(0)
        topics = self.api.registrations[0]["topics"]
        self.assertEqual(topics["TBW102"].perm, 4)  # 7 & brokerPermission
        self.assertEqual(self.controller.topic_config_manager.select_topic_config("TBW102").perm, 7)

    def test_no_name_servers(self) -> None:
        self.settings["namesrvAddr"] = ""
        self.start()
        self.reactor.advance(60)
        self.assertEqual(self.api.registrations, [])
        self.stop()
        self.assertEqual(self.api.unregistrations, [])

    def test_namesrv_addresses(self) -> None:
        self.assertEqual(namesrv_addresses(" a:1; ;b:2;"), ["a:1", "b:2"])
        self.assertEqual(namesrv_addresses(""), [])


class RealNameServerTests(ServiceTestCase):
    """The REGISTER_BROKER request as real name-server processors receive it (loopback connections)."""

    def setUp(self) -> None:
        super().setUp()
        self.namesrvs = {}
        self.pumps = []
        for addr in namesrv_addresses(NAMESRVS):
            d = self.mktemp()
            self.namesrvs[addr] = NamesrvController(NamesrvSettings({"kvConfigPath": f"{d}/kv.json"}),
                                                    now=lambda: 1_700_000_000_000)
        client = RemotingClient(self.reactor, connector=self.connector)
        self.service.namesrv_client = client
        self.service.outer_api = BrokerOuterAPI(client, 6000)

    def connector(self, addr: str):  # type: ignore[no-untyped-def]
        server = RemotingProtocol(self.reactor, namesrv_table(self.namesrvs[addr]))
        proto = self.service.namesrv_client._new_protocol()
        self.pumps.append(connect(proto, server))
        self.pump_to = getattr(self, "pump_to", {})
        self.pump_to[addr] = self.pumps[-1]
        return succeed(proto)

    def flush(self) -> None:
        for pump in self.pumps:
            pump.flush()

    def stop(self) -> None:
        if self.service.running:
            d = self.service.stopService()
            for _ in range(3):
                self.flush()
                self.reactor.advance(0)
            self.successResultOf(d)

    def test_unregistered_at_stop(self) -> None:
        self.start()
        self.flush()
        self.stop()
        for ns in self.namesrvs.values():
            self.assertEqual(ns.route_info_manager.broker_addr_table, {})

    def test_registered_with_every_name_server(self) -> None:
        self.start()
        self.flush()
        self.controller.topic_config_manager.create_topic_in_send_message_method("NewTopic", "TBW102", 4)
        self.reactor.advance(0)
        self.flush()
        for addr, ns in self.namesrvs.items():
            routes = ns.route_info_manager
            self.assertEqual(set(routes.broker_addr_table), {"broker-a"}, addr)
            route = routes.pickup_topic_route_data("NewTopic")
            self.assertEqual([(q.broker_name, q.write_queue_nums) for q in route.queue_datas], [("broker-a", 4)])
            self.assertEqual(route.broker_datas[0].broker_addrs, {0: "127.0.0.1:10911"})

    def test_one_name_server_down(self) -> None:
        """A name server that cannot be reached does not stop the registration with the others."""
        down = "127.0.0.2:9876"
        connector = self.connector

        def some_down(addr: str):  # type: ignore[no-untyped-def]
            return fail(ConnectionRefusedError(addr)) if addr == down else connector(addr)
        self.service.namesrv_client._connector = some_down
        self.start()
        self.flush()
        self.assertEqual(set(self.namesrvs["127.0.0.1:9876"].route_info_manager.broker_addr_table), {"broker-a"})
        self.assertEqual(self.namesrvs[down].route_info_manager.broker_addr_table, {})
        d = self.service.register_broker_all()
        self.flush()
        results = self.successResultOf(d)
        self.assertEqual(results["127.0.0.1:9876"].code, ResponseCode.SUCCESS)
        self.assertIsNone(results[down])

    def create(self, name: str) -> None:
        """As UPDATE_AND_CREATE_TOPIC does."""
        tc = TopicConfig(name, 2, 2)
        self.controller.topic_config_manager.update_topic_config(tc)
        self.controller.on_topic_created(tc)

    def routes(self, addr: str) -> set[str]:
        table = self.namesrvs[addr].route_info_manager.topic_queue_table
        return {topic for topic, queues in table.items() if "broker-a" in queues}

    def test_increments_add_to_what_name_servers_know(self) -> None:
        self.start()
        self.flush()
        for i in range(5):
            self.create(f"Inc{i}")
        self.reactor.advance(0)
        self.flush()
        everything = set(self.controller.topic_config_manager.topic_config_table)
        for addr in self.namesrvs:
            self.assertEqual(self.routes(addr), everything)

    def test_restarted_name_server_gets_everything(self) -> None:
        """A name server that restarted (so a new connection) gets the whole table with the
        next registration, not the new topic alone: its next full registration, same
        DataVersion, would not add the others."""
        addr = "127.0.0.1:9876"
        self.start()
        self.flush()
        self.create("Before")
        self.reactor.advance(0)
        self.flush()
        self.namesrvs[addr] = NamesrvController(NamesrvSettings({"kvConfigPath": f"{self.mktemp()}/kv.json"}),
                                                now=lambda: 1_700_000_000_000)
        self.pump_to[addr].client_transport.loseConnection()
        self.flush()
        self.create("After")
        self.reactor.advance(0)
        self.flush()
        self.assertEqual(self.routes(addr), set(self.controller.topic_config_manager.topic_config_table))
        self.assertIn("Before", self.routes(addr))

    def test_compressed_registration(self) -> None:
        self.settings["compressedRegister"] = True
        self.start()
        self.flush()
        for ns in self.namesrvs.values():
            self.assertIsNotNone(ns.route_info_manager.pickup_topic_route_data("TBW102"))


class PeriodicWorkTests(ServiceTestCase):
    def test_consumer_offsets_persisted(self) -> None:
        self.start()
        path = os.path.join(self.controller.store_config.config_dir, "consumerOffset.json")
        self.controller.consumer_offset_manager.commit_offset("g", "T", 0, 5)
        self.assertFalse(os.path.exists(path))
        self.reactor.advance(5)
        self.assertEqual(json.load(open(path)), {"offsetTable": {"T@g": {"0": 5}}})
        self.controller.consumer_offset_manager.commit_offset("g", "T", 0, 6)
        self.reactor.advance(4.9)
        self.assertEqual(json.load(open(path))["offsetTable"]["T@g"]["0"], 5)
        self.reactor.advance(0.1)
        self.assertEqual(json.load(open(path))["offsetTable"]["T@g"]["0"], 6)

    def test_idle_connection_closed(self) -> None:
        """serverChannelMaxIdleTimeSeconds (120): an idle connection is closed and its clients forgotten."""
        self.start()
        client, pump = self.connect_client(idle_timeout=None)
        d = client.send_request(heartbeat("c1", ("pg",), {"g": {"T": "*"}}), 3)
        pump.flush()
        self.successResultOf(d)
        self.reactor.advance(119.9)
        self.assertFalse(pump.server_transport.disconnecting)
        self.reactor.advance(0.1)
        self.assertTrue(pump.server_transport.disconnecting)
        pump.flush()
        self.assertIsNone(self.controller.consumer_manager.get_consumer_group_info("g"))

    def test_delayed_messages_delivered(self) -> None:
        """The 100 ms timer moves due delay-level messages to their topic (level 1 = 1 s)."""
        from rocketmq_tx.store.test.util import message
        self.start()
        store = self.controller.store
        store.put_message(message("T", b"later", 0, extra={"DELAY": "1"}))
        self.assertEqual(store.get_max_offset_in_queue("T", 0), 0)
        self.reactor.advance(0.9)
        self.assertEqual(store.get_max_offset_in_queue("T", 0), 0)
        for _ in range(3):
            self.reactor.advance(0.1)
        self.assertEqual(store.get_max_offset_in_queue("T", 0), 1)

    def test_silent_clients_dropped(self) -> None:
        """The 10 s scan closes connections silent for more than 120 s and forgets their clients."""
        self.service.factories[0].idle_timeout = None  # only the scan closes
        self.start()
        client, pump = self.connect_client(idle_timeout=None)
        d = client.send_request(heartbeat("c1", ("pg",), {"g": {"T": "*"}}), 3)
        pump.flush()
        self.successResultOf(d)
        self.reactor.advance(120)
        self.assertFalse(pump.server_transport.disconnecting)
        self.reactor.advance(10)
        self.assertTrue(pump.server_transport.disconnecting)
        pump.flush()
        self.assertIsNone(self.controller.consumer_manager.get_consumer_group_info("g"))
        self.assertEqual(self.controller.producer_manager.group_channel_table, {})

    def test_connection_close_forgets_clients(self) -> None:
        self.start()
        client, pump = self.connect_client()
        d = client.send_request(heartbeat("c1", ("pg",), {"g": {"T": "*"}}), 3)
        pump.flush()
        self.successResultOf(d)
        pump.client_transport.loseConnection()
        pump.flush()
        self.assertIsNone(self.controller.consumer_manager.get_consumer_group_info("g"))
        self.assertIsNone(self.controller.producer_manager.find_channel("c1"))

    def test_group_members_notified(self) -> None:
        """A new consumer in a group: every member gets NOTIFY_CONSUMER_IDS_CHANGED (oneway)."""
        self.start()
        seen: list[RemotingCommand] = []

        class Recorder:
            def reject_request(self) -> bool:
                return False

            def process_request(self, ctx, request):  # type: ignore[no-untyped-def]
                seen.append(request)
                return None

        first, pump1 = self.connect_client(50001)
        first.processors.register(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, Recorder())
        d = first.send_request(heartbeat("c1", (), {"g": {"T": "*"}}), 3)
        pump1.flush()
        self.successResultOf(d)
        self.assertEqual(len(seen), 1)  # itself, as Java does
        second, pump2 = self.connect_client(50002)
        d = second.send_request(heartbeat("c2", (), {"g": {"T": "*"}}), 3)
        pump2.flush()
        pump1.flush()
        self.successResultOf(d)
        self.assertEqual(len(seen), 2)
        self.assertEqual(seen[1].ext_fields, {"consumerGroup": "g"})
        self.assertTrue(seen[1].is_oneway)


class MetadataFileTests(ServiceTestCase):
    def test_created_topic_on_disk_next_turn(self) -> None:
        self.start()
        path = os.path.join(self.controller.store_config.config_dir, "topics.json")
        self.controller.topic_config_manager.create_topic_in_send_message_method("Soon", "TBW102", 4)
        self.reactor.advance(0)
        self.assertIn("Soon", json.load(open(path))["topicConfigTable"])

    def test_delay_offsets_every_10s(self) -> None:
        self.start()
        path = os.path.join(self.controller.store_config.config_dir, "delayOffset.json")
        self.controller.schedule_message_service.offset_table[3] = 7
        self.reactor.advance(9.9)
        self.assertFalse(os.path.exists(path))
        self.reactor.advance(0.1)
        self.assertEqual(open(path).read(), '{\n\t"offsetTable":{3:7\n\t}\n}')


class StopTests(ServiceTestCase):
    def test_stop(self) -> None:
        """stopService: unregister from every name server, persist offsets, shut the store (abort file gone)."""
        self.start()
        abort = self.controller.store_config.abort_file
        self.assertTrue(os.path.exists(abort))
        self.controller.consumer_offset_manager.commit_offset("g", "T", 1, 9)
        client, pump = self.connect_client()
        self.successResultOf(self.service.stopService())
        self.assertEqual(self.api.unregistrations,
                         [(["127.0.0.1:9876", "127.0.0.2:9876"], "DefaultCluster", "127.0.0.1:10911", "broker-a", 0)])
        path = os.path.join(self.controller.store_config.config_dir, "consumerOffset.json")
        self.assertEqual(json.load(open(path))["offsetTable"], {"T@g": {"1": 9}})
        self.assertFalse(os.path.exists(abort))
        self.assertTrue(self.controller.store.shutdown_flag)
        self.assertTrue(pump.server_transport.disconnecting)  # client connections closed
        pump.flush()
        # no timer left running
        self.assertEqual([c for c in self.reactor.getDelayedCalls() if c.active()], [])

    def test_restart_reads_state_back(self) -> None:
        """Topics, groups and offsets survive a stop and a new service on the same store."""
        self.start()
        c = self.controller
        c.topic_config_manager.create_topic_in_send_message_method("Kept", "TBW102", 2)
        c.subscription_group_manager.find_subscription_group_config("kept-group")
        c.consumer_offset_manager.commit_offset("kept-group", "Kept", 0, 3)
        self.stop()
        again = BrokerService(self.settings, self.reactor, drive_store=False)
        again.outer_api = FakeOuterAPI()  # type: ignore[assignment]
        again.startService()
        self.addCleanup(lambda: self.successResultOf(again.stopService()))
        c2 = again.controller
        self.assertEqual(c2.topic_config_manager.select_topic_config("Kept").write_queue_nums, 2)
        self.assertIn("kept-group", c2.subscription_group_manager.subscription_group_table)
        self.assertEqual(c2.consumer_offset_manager.query_offset("kept-group", "Kept", 0), 3)
        self.assertTrue(c2.store.last_exit_ok)
