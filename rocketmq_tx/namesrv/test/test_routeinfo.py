"""Tests for RouteInfoManager: Java's registration rules, expiry, and a model-based property test."""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.common.route import DataVersion, PermName, QueueData, TopicConfig
from rocketmq_tx.namesrv.routeinfo import RouteInfoManager


class FakeTime:
    """Milliseconds that tests move by hand."""

    def __init__(self) -> None:
        self.ms = 1_700_000_000_000

    def __call__(self) -> int:
        return self.ms


def topics(*names: str, queues: int = 4) -> dict[str, TopicConfig]:
    return {n: TopicConfig(n, queues, queues) for n in names}


class RegistrationTests(SynchronousTestCase):
    """REGISTER_BROKER / UNREGISTER_BROKER semantics."""

    def setUp(self) -> None:
        self.time = FakeTime()
        self.closed: list[object] = []
        self.rim = RouteInfoManager(now=self.time, on_close_channel=self.closed.append)

    def register(self, addr: str = "10.0.0.1:10911", name: str = "broker-a", broker_id: int = 0,
                 version: DataVersion | None = None, table: dict | None = None, channel: object = "ch",
                 cluster: str = "DefaultCluster"):  # type: ignore[no-untyped-def]
        return self.rim.register_broker(cluster, addr, name, broker_id, addr.replace("10911", "10912"),
                                        version or DataVersion(1, 1), topics("T") if table is None else table,
                                        [], channel)

    def test_master_route(self) -> None:
        """A master's topics become routes with its address."""
        self.register()
        route = self.rim.pickup_topic_route_data("T")
        self.assertEqual([(q.broker_name, q.read_queue_nums, q.perm) for q in route.queue_datas], [("broker-a", 4, 6)])
        self.assertEqual([b.broker_addrs for b in route.broker_datas], [{0: "10.0.0.1:10911"}])
        self.assertIsNone(self.rim.pickup_topic_route_data("Other"))
        self.assertEqual(self.rim.cluster_addr_table, {"DefaultCluster": {"broker-a"}})

    def test_slave_topics_ignored_and_master_reported(self) -> None:
        """Only the master's topic data counts; a slave learns its master's HA and broker address."""
        result = self.register("10.0.0.2:10911", broker_id=1, table=topics("SlaveOnly"))
        self.assertIsNone(result.master_addr)
        self.assertIsNone(self.rim.pickup_topic_route_data("SlaveOnly"))
        self.register()
        result = self.register("10.0.0.2:10911", broker_id=1, table=topics("SlaveOnly"))
        self.assertEqual((result.master_addr, result.ha_server_addr), ("10.0.0.1:10911", "10.0.0.1:10912"))
        self.assertEqual(self.rim.pickup_topic_route_data("T").broker_datas[0].broker_addrs,
                         {0: "10.0.0.1:10911", 1: "10.0.0.2:10911"})

    def test_slave_becomes_master_on_same_address(self) -> None:
        """The same address keeps one record when its id changes."""
        self.register("10.0.0.2:10911", broker_id=1)
        self.register("10.0.0.2:10911", broker_id=0)
        self.assertEqual(self.rim.broker_addr_table["broker-a"].broker_addrs, {0: "10.0.0.2:10911"})

    def test_data_version_gates_topic_updates(self) -> None:
        """An unchanged DataVersion does not touch topic data; a new one does (no removals, as in Java)."""
        self.register(version=DataVersion(1, 1), table=topics("T", queues=4))
        self.rim.wipe_write_perm_of_broker("broker-a")
        self.register(version=DataVersion(1, 1), table=topics("T", queues=8))
        queue = self.rim.pickup_topic_route_data("T").queue_datas[0]
        self.assertEqual((queue.read_queue_nums, queue.perm), (4, PermName.PERM_READ))
        self.register(version=DataVersion(2, 5), table=topics("U", queues=8))
        self.assertEqual(self.rim.pickup_topic_route_data("U").queue_datas[0].read_queue_nums, 8)
        self.assertIsNotNone(self.rim.pickup_topic_route_data("T"))

    def test_unregister_cleans_every_table(self) -> None:
        """The last address of a name takes the name, its cluster entry and its topics with it."""
        self.register()
        self.register("10.0.0.9:10911", name="broker-b", table=topics("T", "B"))
        self.rim.unregister_broker("DefaultCluster", "10.0.0.1:10911", "broker-a", 0)
        self.assertEqual(set(self.rim.broker_addr_table), {"broker-b"})
        self.assertEqual(self.rim.cluster_addr_table, {"DefaultCluster": {"broker-b"}})
        self.assertEqual([q.broker_name for q in self.rim.pickup_topic_route_data("T").queue_datas], ["broker-b"])
        self.rim.unregister_broker("DefaultCluster", "10.0.0.9:10911", "broker-b", 0)
        self.assertEqual((self.rim.topic_queue_table, self.rim.broker_addr_table, self.rim.cluster_addr_table,
                          self.rim.broker_live_table), ({}, {}, {}, {}))

    def test_channel_destroy(self) -> None:
        """A closed connection removes the broker registered over it, and only that one."""
        self.register(channel="c1")
        self.register("10.0.0.2:10911", broker_id=1, channel="c2")
        self.assertEqual(self.rim.on_channel_destroy("c2"), "10.0.0.2:10911")
        self.assertEqual(self.rim.broker_addr_table["broker-a"].broker_addrs, {0: "10.0.0.1:10911"})
        self.assertIsNone(self.rim.on_channel_destroy("unknown"))

    def test_expiry(self) -> None:
        """A broker silent for more than 120 s goes, and its connection is closed; a refreshed one stays."""
        self.register(channel="old")
        self.register("10.0.0.9:10911", name="broker-b", channel="fresh")
        self.time.ms += 100_000
        self.rim.update_broker_info_update_timestamp("10.0.0.9:10911")
        self.time.ms += 20_001
        self.assertEqual(self.rim.scan_not_active_broker(), 1)
        self.assertEqual(self.closed, ["old"])
        self.assertEqual(set(self.rim.broker_addr_table), {"broker-b"})

    def test_heartbeat_timeout_of_registration(self) -> None:
        """
        A 5.x broker's heartbeatTimeoutMillis is its own expiry (10 s for enableSlaveActingMaster);
        a heartbeat of its cluster keeps it, one naming another cluster does not; a broker that
        sent none keeps the name server's 120 s.
        """
        self.rim.register_broker("c1", "10.0.0.1:10911", "broker-a", 0, None, DataVersion(1, 1), topics("T"), [],
                                 "a", heartbeat_timeout_millis=10_000)
        self.rim.register_broker("c1", "10.0.0.2:10911", "broker-b", 0, None, DataVersion(1, 1), topics("T"), [],
                                 "b", heartbeat_timeout_millis=10_000)
        self.register("10.0.0.3:10911", name="broker-c", channel="c")
        self.time.ms += 9_000
        self.rim.update_broker_info_update_timestamp("10.0.0.1:10911", cluster_name="c1")
        self.rim.update_broker_info_update_timestamp("10.0.0.2:10911", cluster_name="other")
        self.time.ms += 1_001
        self.assertEqual(self.rim.scan_not_active_broker(), 1)
        self.assertEqual(self.closed, ["b"])
        self.time.ms += 8_999
        self.assertEqual(self.rim.scan_not_active_broker(), 0)
        self.time.ms += 2
        self.assertEqual(self.rim.scan_not_active_broker(), 1)
        self.assertEqual(set(self.rim.broker_addr_table), {"broker-c"})

    def test_register_topic(self) -> None:
        """
        REGISTER_TOPIC_IN_NAMESRV: a new topic only if every broker name is registered; an existing
        topic takes the queue datas before the first unknown name (Java stops there).
        """
        self.register()
        self.register("10.0.0.9:10911", name="broker-b", table={})
        self.assertTrue(self.rim.register_topic("N", [QueueData("broker-a", 2, 2, 6), QueueData("broker-b", 1, 1, 4)]))
        self.assertEqual(sorted((q.broker_name, q.write_queue_nums, q.perm)
                                for q in self.rim.pickup_topic_route_data("N").queue_datas),
                         [("broker-a", 2, 6), ("broker-b", 1, 4)])
        self.assertFalse(self.rim.register_topic("M", [QueueData("broker-a", 2, 2, 6), QueueData("ghost", 1, 1, 6)]))
        self.assertIsNone(self.rim.pickup_topic_route_data("M"))
        self.assertFalse(self.rim.register_topic("T", [QueueData("broker-b", 8, 8, 6), QueueData("ghost", 1, 1, 6)]))
        self.assertEqual(sorted((q.broker_name, q.write_queue_nums)
                                for q in self.rim.pickup_topic_route_data("T").queue_datas),
                         [("broker-a", 4), ("broker-b", 8)])
        self.assertTrue(self.rim.register_topic("E", []))
        self.assertIsNone(self.rim.pickup_topic_route_data("E"))

    def test_broker_member_group(self) -> None:
        """GET_BROKER_MEMBER_GROUP: every id of the broker name, empty for an unknown one."""
        self.register()
        self.register("10.0.0.2:10911", broker_id=2, channel="s")
        self.assertEqual(self.rim.get_broker_member_group("broker-a"), {0: "10.0.0.1:10911", 2: "10.0.0.2:10911"})
        self.assertEqual(self.rim.get_broker_member_group("nobody"), {})

    def test_delete_topic_by_cluster(self) -> None:
        """Deleting from one cluster leaves the other cluster's queues."""
        self.register(cluster="c1")
        self.register("10.0.0.9:10911", name="broker-b", cluster="c2")
        self.rim.delete_topic("T", "c1")
        self.assertEqual([q.broker_name for q in self.rim.pickup_topic_route_data("T").queue_datas], ["broker-b"])
        self.rim.delete_topic("T")
        self.assertIsNone(self.rim.pickup_topic_route_data("T"))

    def test_write_perm(self) -> None:
        """Wipe clears the write bit; add sets exactly read and write (Java's behaviour)."""
        self.register(table={"T": TopicConfig("T", 4, 4, perm=7)})
        self.assertEqual(self.rim.wipe_write_perm_of_broker("broker-a"), 1)
        self.assertEqual(self.rim.pickup_topic_route_data("T").queue_datas[0].perm, 5)
        self.assertEqual(self.rim.add_write_perm_of_broker("broker-a"), 1)
        self.assertEqual(self.rim.pickup_topic_route_data("T").queue_datas[0].perm, 6)
        self.assertEqual(self.rim.wipe_write_perm_of_broker("nobody"), 0)

    def test_lists(self) -> None:
        """System, cluster and unit topic lists."""
        self.register(table={"T": TopicConfig("T", 4, 4), "U": TopicConfig("U", 1, 1, topic_sys_flag=1),
                             "S": TopicConfig("S", 1, 1, topic_sys_flag=2)})
        self.assertEqual(self.rim.get_system_topic_list(), (["DefaultCluster", "broker-a"], "10.0.0.1:10911"))
        self.assertEqual(sorted(self.rim.get_topics_by_cluster("DefaultCluster")), ["S", "T", "U"])
        self.assertEqual(self.rim.get_unit_topics(), ["U"])
        self.assertEqual(self.rim.get_has_unit_sub_topic_list(), ["S"])
        self.assertEqual(self.rim.get_has_unit_sub_un_unit_topic_list(), ["S"])


ADDRS = [f"10.0.0.{i}:10911" for i in range(6)]
NAME_OF = {addr: f"broker-{i % 3}" for i, addr in enumerate(ADDRS)}
CLUSTER_OF = {f"broker-{i}": "c1" if i < 2 else "c2" for i in range(3)}
TOPICS = ["A", "B", "C", "D"]


class RouteModel(RuleBasedStateMachine):
    """
    Random register / unregister / disconnect / keep-alive / scan sequences, checked
    against a model kept per broker address (the manager keeps per-table state).
    """

    def __init__(self) -> None:
        super().__init__()
        self.time = FakeTime()
        self.rim = RouteInfoManager(now=self.time)
        # addr -> [broker id, DataVersion, last heard ms, channel]
        self.live: dict[str, list] = {}
        # broker name -> topic -> read queue count accepted from its master
        self.accepted: dict[str, dict[str, int]] = {}

    def _holder(self, name: str, broker_id: int) -> str | None:
        return next((a for a, e in self.live.items() if NAME_OF[a] == name and e[0] == broker_id), None)

    @rule(addr=st.sampled_from(ADDRS), broker_id=st.sampled_from([0, 1]), counter=st.integers(0, 2),
          chosen=st.sets(st.sampled_from(TOPICS)), queues=st.integers(1, 8))
    def register(self, addr: str, broker_id: int, counter: int, chosen: set[str], queues: int) -> None:
        name = NAME_OF[addr]
        holder = self._holder(name, broker_id)
        if holder is not None and holder != addr:
            return  # two live addresses for one id is a broken deployment; Java keeps no order there
        version = DataVersion(counter, counter)
        previous = self.live.get(addr)
        first = name not in {NAME_OF[a] for a in self.live} or previous is None or previous[0] != broker_id
        changed = previous is None or not previous[1].same_as(version)
        table = {t: TopicConfig(t, queues, queues) for t in chosen}
        self.rim.register_broker(CLUSTER_OF[name], addr, name, broker_id, None, version, table, [], addr)
        if broker_id == 0 and (first or changed):
            self.accepted.setdefault(name, {}).update({t: queues for t in chosen})
        self.live[addr] = [broker_id, version, self.time.ms, addr]

    def _forget(self, addr: str) -> None:
        del self.live[addr]
        name = NAME_OF[addr]
        if all(NAME_OF[a] != name for a in self.live):
            self.accepted.pop(name, None)

    @precondition(lambda self: self.live)
    @rule(data=st.data())
    def unregister(self, data: st.DataObject) -> None:
        addr = data.draw(st.sampled_from(sorted(self.live)))
        name = NAME_OF[addr]
        self.rim.unregister_broker(CLUSTER_OF[name], addr, name, self.live[addr][0])
        self._forget(addr)

    @precondition(lambda self: self.live)
    @rule(data=st.data())
    def disconnect(self, data: st.DataObject) -> None:
        addr = data.draw(st.sampled_from(sorted(self.live)))
        self.rim.on_channel_destroy(addr)
        self._forget(addr)

    @precondition(lambda self: self.live)
    @rule(data=st.data())
    def keep_alive(self, data: st.DataObject) -> None:
        addr = data.draw(st.sampled_from(sorted(self.live)))
        self.rim.update_broker_info_update_timestamp(addr)
        self.live[addr][2] = self.time.ms

    @rule(seconds=st.integers(0, 150))
    def scan(self, seconds: int) -> None:
        self.time.ms += seconds * 1000
        self.rim.scan_not_active_broker()
        for addr in [a for a, e in self.live.items() if e[2] < self.time.ms - 120_000]:
            self._forget(addr)

    @invariant()
    def tables_match_model(self) -> None:
        rim = self.rim
        assert set(rim.broker_live_table) == set(self.live)
        expected_addrs: dict[str, dict[int, str]] = {}
        for addr, entry in self.live.items():
            expected_addrs.setdefault(NAME_OF[addr], {})[entry[0]] = addr
        assert {n: b.broker_addrs for n, b in rim.broker_addr_table.items()} == expected_addrs
        expected_clusters: dict[str, set[str]] = {}
        for name in expected_addrs:
            expected_clusters.setdefault(CLUSTER_OF[name], set()).add(name)
        assert rim.cluster_addr_table == expected_clusters
        expected_topics: dict[str, dict[str, int]] = {}
        for name, accepted in self.accepted.items():
            for topic, queues in accepted.items():
                expected_topics.setdefault(topic, {})[name] = queues
        assert {t: {n: q.read_queue_nums for n, q in m.items()} for t, m in rim.topic_queue_table.items()} == \
            expected_topics
        for topic in expected_topics:
            route = rim.pickup_topic_route_data(topic)
            assert route is not None and {b.broker_name for b in route.broker_datas} == set(expected_topics[topic])


RouteModelTest = RouteModel.TestCase
RouteModelTest.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)
