"""Tests for the name server's processors, called through its processor table."""

from __future__ import annotations

import json
import os
import zlib

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.common import fastjson
from rocketmq_tx.common.route import DataVersion, TopicConfig
from rocketmq_tx.namesrv.config import NamesrvSettings
from rocketmq_tx.namesrv.controller import NamesrvController
from rocketmq_tx.namesrv.processors import processor_table
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.remoting.bodies import RegisterBrokerBody


class Ctx:
    """A stand-in connection: processors only need identity and a peer name."""

    peer = "127.0.0.1:50000"


class ProcessorTests(SynchronousTestCase):
    """Each code's answer, as a Java 4.9.8 name server gives it."""

    def setUp(self) -> None:
        self.dir = self.mktemp()
        self.settings = NamesrvSettings({"kvConfigPath": f"{self.dir}/kv.json",
                                         "configStorePath": f"{self.dir}/namesrv.properties"})
        self.controller = NamesrvController(self.settings, now=lambda: 1_700_000_000_000)
        self.table = processor_table(self.controller)
        self.ctx = Ctx()

    def call(self, code: int, ext: dict | None = None, body: bytes = b"", version: int = 409) -> RemotingCommand:
        request = RemotingCommand.request(code, ext, body, version=version)
        response = self.table.dispatch(self.ctx, request)
        assert isinstance(response, RemotingCommand)
        return response

    def register(self, compressed: bool = False, crc: bool = True, broker_id: int = 0,
                 body: RegisterBrokerBody | None = None, **header: str) -> RemotingCommand:
        body = body or RegisterBrokerBody(DataVersion(1, 2), {"T": TopicConfig("T", 4, 4)}, [])
        raw = body.encode(compressed)
        ext = {"brokerName": "broker-a", "brokerAddr": "127.0.0.1:10911", "clusterName": "DefaultCluster",
               "haServerAddr": "127.0.0.1:10912", "brokerId": str(broker_id),
               "compressed": "true" if compressed else "false",
               "bodyCrc32": str(zlib.crc32(raw) & 0x7FFFFFFF if crc else 0)}
        ext.update(header)
        return self.call(RequestCode.REGISTER_BROKER, ext, raw)

    def test_register_json_and_compressed(self) -> None:
        """Both body forms register the broker and its topics."""
        for compressed in (False, True):
            self.controller.route_info_manager.unregister_broker("DefaultCluster", "127.0.0.1:10911", "broker-a", 0)
            response = self.register(compressed)
            self.assertEqual(response.code, ResponseCode.SUCCESS)
            route = self.controller.route_info_manager.pickup_topic_route_data("T")
            self.assertEqual(route.queue_datas[0].write_queue_nums, 4)

    def test_register_crc_mismatch(self) -> None:
        """A wrong bodyCrc32 is SYSTEM_ERROR 'crc32 not match' and changes nothing."""
        response = self.register(bodyCrc32="12345")
        self.assertEqual((response.code, response.remark), (ResponseCode.SYSTEM_ERROR, "crc32 not match"))
        self.assertEqual(self.controller.route_info_manager.broker_live_table, {})

    def test_register_bad_bodies(self) -> None:
        """Undecodable bodies and missing fields are SYSTEM_ERROR with a clear remark, state untouched."""
        cases = [
            ({"compressed": "false"}, b"{not json"),
            ({"compressed": "true"}, b"not zlib"),
            ({"compressed": "true"}, zlib.compress(b"\x00\x00\x00\x05{}")),
            ({"compressed": "false"}, b'{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{"perm":6}}}}'),
        ]
        base = {"brokerName": "b", "brokerAddr": "a:1", "clusterName": "c", "haServerAddr": "h:1", "brokerId": "0"}
        for extra, body in cases:
            response = self.call(RequestCode.REGISTER_BROKER, {**base, **extra}, body)
            self.assertEqual(response.code, ResponseCode.SYSTEM_ERROR, body)
            self.assertIn("Failed to decode RegisterBrokerBody", response.remark)
        response = self.call(RequestCode.REGISTER_BROKER, {k: v for k, v in base.items() if k != "brokerName"})
        self.assertEqual(response.remark, "the custom field <brokerName> is null")
        self.assertEqual(self.controller.route_info_manager.broker_live_table, {})

    def test_register_returns_order_config_and_master(self) -> None:
        """The ORDER_TOPIC_CONFIG table comes back in the body; a slave learns its master."""
        self.call(RequestCode.PUT_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG", "key": "T", "value": "broker-a:4"})
        response = self.register()
        self.assertEqual(fastjson.loads(response.body), {"table": {"T": "broker-a:4"}})
        response = self.register(broker_id=1, brokerAddr="127.0.0.1:10921", haServerAddr="127.0.0.1:10922")
        self.assertEqual(response.ext_fields, {"haServerAddr": "127.0.0.1:10912", "masterAddr": "127.0.0.1:10911"})

    def test_query_data_version(self) -> None:
        """changed=false for the registered version (and a keep-alive), true otherwise."""
        self.register()
        ext = {"brokerName": "broker-a", "brokerAddr": "127.0.0.1:10911", "clusterName": "DefaultCluster",
               "brokerId": "0"}
        same = self.call(RequestCode.QUERY_DATA_VERSION, ext, b'{"counter":1,"timestamp":2}')
        other = self.call(RequestCode.QUERY_DATA_VERSION, ext, b'{"counter":2,"timestamp":2}')
        self.assertEqual((same.ext_fields["changed"], other.ext_fields["changed"]), ("false", "true"))
        self.assertEqual(fastjson.loads(same.body), {"counter": 1, "timestamp": 2})

    def test_route_formats(self) -> None:
        """Standard JSON from version 401 on or on request; fastjson's unquoted keys for older clients."""
        self.register()
        standard = self.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}, version=401).body
        legacy = self.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}, version=399).body
        asked = self.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T", "acceptStandardJsonOnly": "true"},
                          version=317).body
        self.assertIn(b'"brokerAddrs":{"0":"127.0.0.1:10911"}', standard)
        self.assertIn(b'"brokerAddrs":{0:"127.0.0.1:10911"}', legacy)
        self.assertEqual(asked, standard)
        json.loads(standard)  # strictly standard
        self.assertEqual(fastjson.loads(legacy), fastjson.loads(standard))
        self.assertEqual(standard, b'{"brokerDatas":[{"brokerAddrs":{"0":"127.0.0.1:10911"},"brokerName":"broker-a",'
                                   b'"cluster":"DefaultCluster"}],"filterServerTable":{},"queueDatas":[{"brokerName":'
                                   b'"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}')

    def test_route_cache_follows_changes(self) -> None:
        """A cached route body reflects permission changes, deletion and re-registration."""
        self.register()
        first = self.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}).body
        self.assertIs(self.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}).body, first)
        self.call(RequestCode.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"})
        wiped = fastjson.loads(self.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}).body)
        self.assertEqual(wiped["queueDatas"][0]["perm"], 4)
        self.call(RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": "T"})
        self.assertEqual(self.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}).code,
                         ResponseCode.TOPIC_NOT_EXIST)
        self.register(body=RegisterBrokerBody(DataVersion(9, 9), {"T": TopicConfig("T", 2, 2)}, []))
        again = fastjson.loads(self.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}).body)
        self.assertEqual(again["queueDatas"][0]["readQueueNums"], 2)

    def test_route_unknown_topic(self) -> None:
        """TOPIC_NOT_EXIST with Java's remark."""
        response = self.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Nope"})
        self.assertEqual(response.code, ResponseCode.TOPIC_NOT_EXIST)
        self.assertEqual(response.remark, "No topic route info in name server for the topic: Nope"
                                          "\nSee http://rocketmq.apache.org/docs/faq/ for further details.")

    def test_order_topic_conf(self) -> None:
        """With orderMessageEnable the route carries orderTopicConf."""
        self.register()
        self.call(RequestCode.PUT_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG", "key": "T", "value": "broker-a:4"})
        self.assertNotIn(b"orderTopicConf", self.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}).body)
        self.settings["orderMessageEnable"] = True
        route = fastjson.loads(self.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}).body)
        self.assertEqual(route["orderTopicConf"], "broker-a:4")

    def test_kv(self) -> None:
        """Put, get, list, delete; persisted in Java's shape and read back at start."""
        put = {"namespace": "ns", "key": "k", "value": "v"}
        self.assertEqual(self.call(RequestCode.PUT_KV_CONFIG, put).code, ResponseCode.SUCCESS)
        self.assertEqual(self.call(RequestCode.GET_KV_CONFIG, {"namespace": "ns", "key": "k"}).ext_fields,
                         {"value": "v"})
        self.assertEqual(fastjson.loads(self.call(RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": "ns"}).body),
                         {"table": {"k": "v"}})
        with open(f"{self.dir}/kv.json", "rb") as f:
            self.assertEqual(fastjson.loads(f.read()), {"configTable": {"ns": {"k": "v"}}})
        reloaded = NamesrvController(self.settings)
        reloaded.load()
        self.assertEqual(reloaded.kv_config_manager.get("ns", "k"), "v")
        self.call(RequestCode.DELETE_KV_CONFIG, {"namespace": "ns", "key": "k"})
        missing = self.call(RequestCode.GET_KV_CONFIG, {"namespace": "ns", "key": "k"})
        self.assertEqual((missing.code, missing.remark),
                         (ResponseCode.QUERY_NOT_FOUND, "No config item, Namespace: ns Key: k"))
        none = self.call(RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": "zz"})
        self.assertEqual((none.code, none.remark), (ResponseCode.QUERY_NOT_FOUND, "No config item, Namespace: zz"))
        self.assertEqual(self.call(RequestCode.PUT_KV_CONFIG, {"namespace": "ns"}).code, ResponseCode.SYSTEM_ERROR)

    def test_cluster_info_and_lists(self) -> None:
        """ClusterInfo and TopicList shapes."""
        self.register()
        info = fastjson.loads(self.call(RequestCode.GET_BROKER_CLUSTER_INFO).body)
        self.assertEqual(info, {"brokerAddrTable": {"broker-a": {"brokerAddrs": {"0": "127.0.0.1:10911"},
                                                                 "brokerName": "broker-a",
                                                                 "cluster": "DefaultCluster"}},
                                "clusterAddrTable": {"DefaultCluster": ["broker-a"]}})
        self.assertEqual(fastjson.loads(self.call(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER).body),
                         {"topicList": ["T"]})
        self.assertEqual(fastjson.loads(self.call(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS).body),
                         {"brokerAddr": "127.0.0.1:10911", "topicList": ["DefaultCluster", "broker-a"]})
        by_cluster = self.call(RequestCode.GET_TOPICS_BY_CLUSTER, {"cluster": "DefaultCluster"})
        self.assertEqual(fastjson.loads(by_cluster.body), {"topicList": ["T"]})
        self.settings["enableAllTopicList"] = False
        disabled = self.call(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
        self.assertEqual((disabled.code, disabled.remark), (ResponseCode.SYSTEM_ERROR, "disable"))

    def test_permissions_and_delete(self) -> None:
        """Wipe/add write permission report topic counts; delete removes the route."""
        self.register()
        wiped = self.call(RequestCode.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"})
        self.assertEqual(wiped.ext_fields, {"wipeTopicCount": "1"})
        added = self.call(RequestCode.ADD_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"})
        self.assertEqual(added.ext_fields, {"addTopicCount": "1"})
        self.call(RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": "T"})
        self.assertEqual(self.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}).code,
                         ResponseCode.TOPIC_NOT_EXIST)

    def test_config(self) -> None:
        """GET/UPDATE_NAMESRV_CONFIG: key=value lines, persisted; the blacklist is refused."""
        text = self.call(RequestCode.GET_NAMESRV_CONFIG).body.decode()
        self.assertIn("orderMessageEnable=false\n", text)
        self.assertEqual(self.call(RequestCode.UPDATE_NAMESRV_CONFIG, body=b"orderMessageEnable=true\n").code, 0)
        self.assertTrue(self.settings["orderMessageEnable"])
        with open(f"{self.dir}/namesrv.properties") as f:
            self.assertIn("orderMessageEnable=true", f.read())
        refused = self.call(RequestCode.UPDATE_NAMESRV_CONFIG, body=b"kvConfigPath=/etc/passwd\n")
        self.assertEqual((refused.code, refused.remark),
                         (ResponseCode.NO_PERMISSION, "Can not update config in black list."))
        bad = self.call(RequestCode.UPDATE_NAMESRV_CONFIG, body=b"listenPort=abc\n")
        self.assertEqual(bad.code, ResponseCode.SYSTEM_ERROR)
        self.assertEqual(self.settings["listenPort"], 9876)

    def test_config_updates_that_would_break_a_restart(self) -> None:
        """Paths, control characters (a line of their own once persisted) and values start-up refuses."""
        for body in (b"configStorePath=/tmp/x\n", b"rocketmqHome=/\n", b"kvConfigPath=/etc/passwd\n"):
            self.assertEqual(self.call(RequestCode.UPDATE_NAMESRV_CONFIG, body=body).code, ResponseCode.NO_PERMISSION)
        injected = self.call(RequestCode.UPDATE_NAMESRV_CONFIG, body=b"productEnvName=x\\nkvConfigPath=/etc/passwd\n")
        self.assertEqual((injected.code, injected.remark),
                         (ResponseCode.SYSTEM_ERROR,
                          "the value of 'productEnvName' holds a control character; refused"))
        for body, remark in ((b"scanNotActiveBrokerInterval=-5\n",
                              "scanNotActiveBrokerInterval: must be positive, got -5"),
                             (b"listenPort=70000\n", "listenPort: 70000 is not a TCP port")):
            response = self.call(RequestCode.UPDATE_NAMESRV_CONFIG, body=body)
            self.assertEqual((response.code, response.remark), (ResponseCode.SYSTEM_ERROR, remark))
        self.assertEqual((self.settings["productEnvName"], self.settings["scanNotActiveBrokerInterval"],
                          self.settings["listenPort"]), ("center", 10000, 9876))
        self.assertFalse(os.path.exists(f"{self.dir}/namesrv.properties"))

    def test_broker_member_group(self) -> None:
        """GET_BROKER_MEMBER_GROUP (901): the body byte for byte as Java 5.5.0 encodes it."""
        self.register()
        self.register(broker_id=2, brokerAddr="127.0.0.1:10921", haServerAddr="127.0.0.1:10922")
        response = self.call(RequestCode.GET_BROKER_MEMBER_GROUP, {"clusterName": "c1", "brokerName": "broker-a"})
        self.assertEqual((response.code, response.body),
                         (ResponseCode.SUCCESS, b'{"brokerMemberGroup":{"brokerAddrs":{0:"127.0.0.1:10911",'
                                                b'2:"127.0.0.1:10921"},"brokerName":"broker-a","cluster":"c1"}}'))
        response = self.call(RequestCode.GET_BROKER_MEMBER_GROUP, {"clusterName": "c1", "brokerName": "nobody"})
        self.assertEqual(response.body,
                         b'{"brokerMemberGroup":{"brokerAddrs":{},"brokerName":"nobody","cluster":"c1"}}')
        response = self.call(RequestCode.GET_BROKER_MEMBER_GROUP, {"clusterName": "c1"})
        self.assertEqual((response.code, response.remark),
                         (ResponseCode.SYSTEM_ERROR, "the custom field <brokerName> is null"))

    def test_broker_heartbeat(self) -> None:
        """BROKER_HEARTBEAT (904) refreshes a broker of the named cluster, within its own timeout."""
        now = [1_700_000_000_000]
        self.controller.route_info_manager.now = lambda: now[0]
        self.register(heartbeatTimeoutMillis="10000")
        now[0] += 9_000
        ext = {"clusterName": "DefaultCluster", "brokerAddr": "127.0.0.1:10911", "brokerName": "broker-a"}
        self.assertEqual(self.call(RequestCode.BROKER_HEARTBEAT, ext).code, ResponseCode.SUCCESS)
        self.assertEqual(self.call(RequestCode.BROKER_HEARTBEAT, {**ext, "brokerAddr": "1.2.3.4:5"}).code,
                         ResponseCode.SUCCESS)
        now[0] += 9_000
        self.assertEqual(self.controller.route_info_manager.scan_not_active_broker(), 0)
        now[0] += 1_001
        self.assertEqual(self.controller.route_info_manager.scan_not_active_broker(), 1)
        response = self.call(RequestCode.BROKER_HEARTBEAT, {"clusterName": "c", "brokerName": "b"})
        self.assertEqual(response.remark, "the custom field <brokerAddr> is null")

    def test_register_topic_in_namesrv(self) -> None:
        """REGISTER_TOPIC_IN_NAMESRV (217): the body's queue datas become the route, answered SUCCESS."""
        self.register()
        body = (b'{"brokerDatas":[],"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":2,'
                b'"topicSysFlag":0,"writeQueueNums":2}]}')
        response = self.call(RequestCode.REGISTER_TOPIC_IN_NAMESRV, {"topic": "Single"}, body)
        self.assertEqual(response.code, ResponseCode.SUCCESS)
        route = fastjson.loads(self.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Single"}).body)
        self.assertEqual([(q["brokerName"], q["readQueueNums"]) for q in route["queueDatas"]], [("broker-a", 2)])
        unknown = body.replace(b"broker-a", b"ghost")
        self.assertEqual(self.call(RequestCode.REGISTER_TOPIC_IN_NAMESRV, {"topic": "Ghost"}, unknown).code,
                         ResponseCode.SUCCESS)
        self.assertEqual(self.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Ghost"}).code,
                         ResponseCode.TOPIC_NOT_EXIST)
        for bad in (b"", b"[1]", b"{not json", b'{"queueDatas":[{"perm":6}]}'):
            response = self.call(RequestCode.REGISTER_TOPIC_IN_NAMESRV, {"topic": "Bad"}, bad)
            self.assertEqual(response.code, ResponseCode.SYSTEM_ERROR, bad)
            self.assertIn("invalid TopicRouteData body", response.remark)
        self.assertEqual(self.call(RequestCode.REGISTER_TOPIC_IN_NAMESRV).remark, "the custom field <topic> is null")

    def test_unknown_code(self) -> None:
        """Codes a name server does not handle get REQUEST_CODE_NOT_SUPPORTED, as from 5.x."""
        response = self.call(RequestCode.SEND_MESSAGE_V2)
        self.assertEqual((response.code, response.remark),
                         (ResponseCode.REQUEST_CODE_NOT_SUPPORTED, " request type 310 not supported"))

