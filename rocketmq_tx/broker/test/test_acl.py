"""ACL 1.0 in the broker: the check before every processor, codes 50-54, the reload timer."""

from __future__ import annotations

import json
import os

from twisted.logger import globalLogPublisher
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.acl import sign
from rocketmq_tx.acl.plainacl import load_yaml
from rocketmq_tx.acl.test.validate_cases import MORE, PLAIN
from rocketmq_tx.broker.controller import BrokerController
from rocketmq_tx.broker.processors import processor_table
from rocketmq_tx.broker.processors.acl import java_split
from rocketmq_tx.broker.service import BrokerService
from rocketmq_tx.broker.test.util import Ctx, FakeReactor, broker_settings, heartbeat, make_controller
from rocketmq_tx.common.route import PermName, TopicConfig
from rocketmq_tx.net.protocol import RemotingProtocol
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode, SerializeType, encode_command
from rocketmq_tx.testing.loopback import connect

_E = "org.apache.rocketmq.acl.common.AclException: "
_M = "org.apache.rocketmq.acl.plain.PlainPermissionManager"


def make_home(case: SynchronousTestCase, plain: str = PLAIN, more: str | None = MORE) -> str:
    root = os.path.abspath(case.mktemp())
    os.makedirs(os.path.join(root, "conf", "acl"))
    with open(os.path.join(root, "conf", "plain_acl.yml"), "w") as f:
        f.write(plain)
    if more is not None:
        with open(os.path.join(root, "conf", "acl", "more.yaml"), "w") as f:
            f.write(more)
    return root


def signed(code: int, ext: dict | None = None, body: bytes = b"", ak: str = "RocketMQ",
           sk: str = "12345678") -> RemotingCommand:
    request = RemotingCommand.request(code, ext, body)
    sign(request, ak, sk)
    request.opaque = 77
    return request


class Events:
    """Twisted log events with a given text in their format."""

    def __init__(self, case: SynchronousTestCase, needle: str) -> None:
        self.needle = needle
        self.events: list[dict] = []
        globalLogPublisher.addObserver(self)
        case.addCleanup(globalLogPublisher.removeObserver, self)

    def __call__(self, event: dict) -> None:
        if self.needle in (event.get("log_format") or ""):
            self.events.append(event)


class AclBrokerTestCase(SynchronousTestCase):
    keys: dict = {}

    def setUp(self) -> None:
        self.home = make_home(self)
        self.reactor = FakeReactor()
        self.controller = make_controller(self, self.reactor, aclEnable=True, rocketmqHome=self.home, **self.keys)
        self.table = processor_table(self.controller)
        self.ctx = Ctx()
        tcm = self.controller.topic_config_manager
        for topic in ("topicA", "topicB", "topicD"):
            tcm.topic_config_table[topic] = TopicConfig(topic, 4, 4, PermName.PERM_READ | PermName.PERM_WRITE)

    def call(self, request: RemotingCommand, ctx: Ctx | None = None) -> RemotingCommand:
        request.opaque = 77
        response = self.table.dispatch(ctx or self.ctx, request)
        assert isinstance(response, RemotingCommand), response
        self.assertEqual(response.opaque, 77)
        return response

    def plain_doc(self) -> dict:
        with open(os.path.join(self.home, "conf", "plain_acl.yml")) as f:
            return load_yaml(f.read())


class HookTests(AclBrokerTestCase):
    def test_refusal_is_java_shaped(self) -> None:
        request = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {"a": "pg", "b": "topicB"}, b"body",
                                          serialize_type=SerializeType.ROCKETMQ)
        response = self.call(request)
        self.assertEqual(response.code, ResponseCode.SYSTEM_ERROR)
        self.assertEqual(response.remark,
                         f"{_E}No accessKey is configured, {_M}.validate(PlainPermissionManager.java:664)")
        self.assertEqual(response.serialize_type, SerializeType.JSON)
        self.assertEqual(self.controller.store.get_max_offset_in_queue("topicB", 0), 0)

    def test_signed_send_reaches_the_processor(self) -> None:
        ext = {"a": "pg", "b": "topicB", "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "1700000000000",
               "h": "0", "i": "", "j": "0", "k": "false"}
        response = self.call(signed(RequestCode.SEND_MESSAGE_V2, ext, b"body"))
        self.assertEqual(response.code, ResponseCode.SUCCESS, response.remark)
        denied = self.call(signed(RequestCode.SEND_MESSAGE_V2, dict(ext, b="topicA"), b"body"))
        self.assertEqual(denied.remark,
                         f"{_E}No default permission for topic:topicA, {_M}.checkPerm(PlainPermissionManager.java:611)")

    def test_every_code_is_checked_even_unknown_ones(self) -> None:
        for code in (RequestCode.HEART_BEAT, RequestCode.GET_BROKER_CONFIG, 9999,
                     RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG):
            self.assertEqual(self.call(RemotingCommand.request(code)).code, ResponseCode.SYSTEM_ERROR, code)
        # once authenticated, 54 is what 4.9.8 answers: not supported
        response = self.call(signed(RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG, ak="adminperm"))
        self.assertEqual((response.code, response.remark),
                         (ResponseCode.REQUEST_CODE_NOT_SUPPORTED, " request type 54 not supported"))

    def test_heartbeat_signed(self) -> None:
        request = heartbeat("c1", ("pg",), {"groupB": {"topicB": "*"}})
        sign(request, "RocketMQ", "12345678")
        self.assertEqual(self.call(request).code, ResponseCode.SUCCESS)
        self.assertIsNotNone(self.controller.consumer_manager.get_consumer_group_info("groupB"))

    def test_global_white_and_account_white(self) -> None:
        self.assertEqual(self.call(heartbeat("c1"), Ctx("10.10.103.7:40000")).code, ResponseCode.SUCCESS)
        unsigned = heartbeat("c2")
        unsigned.ext_fields["AccessKey"] = "RocketMQ"
        self.assertEqual(self.call(unsigned, Ctx("192.168.0.3:40000")).code, ResponseCode.SUCCESS)
        self.assertEqual(self.call(unsigned).code, ResponseCode.SYSTEM_ERROR)

    def test_a_failing_hook_is_a_system_error(self) -> None:
        def broken(ctx: object, request: RemotingCommand) -> None:
            raise RuntimeError("bug")

        self.table.before_request = broken
        response = self.call(heartbeat("c1"))
        self.assertEqual(response.code, ResponseCode.SYSTEM_ERROR)
        self.assertEqual(len(self.flushLoggedErrors(RuntimeError)), 1)

    def test_fast_port_is_checked_too(self) -> None:
        fast = processor_table(self.controller, fast=True)
        request = RemotingCommand.request(RequestCode.HEART_BEAT, body=b"{}")
        self.assertEqual(fast.dispatch(self.ctx, request).code, ResponseCode.SYSTEM_ERROR)

    def test_oneway_refusal_sends_nothing(self) -> None:
        server = RemotingProtocol(self.reactor, self.table)
        client = RemotingProtocol(self.reactor)
        pump = connect(client, server)
        request = RemotingCommand.request(RequestCode.UNREGISTER_CLIENT, {"clientID": "c"}, oneway=True)
        client.transport.write(encode_command(request))
        server.dataReceived(pump.client_transport.value())
        pump.client_transport.clear()
        self.assertEqual(pump.server_transport.value(), b"")

    def test_logged_once_per_account_and_reason(self) -> None:
        events = Events(self, "ACL refused")
        for _ in range(3):
            self.call(signed(RequestCode.SEND_MESSAGE_V2, {"a": "pg", "b": "topicA"}))
            self.call(signed(RequestCode.SEND_MESSAGE_V2, {"a": "pg", "b": "topicA"}, ak="nobody00"))
            self.call(signed(RequestCode.PULL_MESSAGE, {"consumerGroup": "groupA", "topic": "topicB"}))
        self.assertEqual(len(events.events), 3)
        self.assertNotIn("12345678", repr(events.events))


class AdminCodeTests(AclBrokerTestCase):
    def admin(self, code: int, ext: dict | None = None) -> RemotingCommand:
        return self.call(signed(code, ext, ak="adminperm"))

    def test_create_use_delete(self) -> None:
        response = self.admin(RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, {
            "accessKey": "newuser01", "secretKey": "newsecret1", "admin": "false", "defaultTopicPerm": "DENY",
            "defaultGroupPerm": "SUB", "topicPerms": "topicD=PUB,topicB=SUB", "groupPerms": "g1=DENY"})
        self.assertEqual((response.code, response.remark), (ResponseCode.SUCCESS, None))
        self.assertEqual(response.serialize_type, SerializeType.JSON)
        account = self.plain_doc()["accounts"][-1]
        self.assertEqual(account["topicPerms"], ["topicD=PUB", "topicB=SUB"])
        ext = {"a": "pg", "b": "topicD", "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "1", "h": "0", "i": "",
               "j": "0", "k": "false"}
        sent = self.call(signed(RequestCode.SEND_MESSAGE_V2, ext, b"x", "newuser01", "newsecret1"))
        self.assertEqual(sent.code, ResponseCode.SUCCESS, sent.remark)

        response = self.admin(RequestCode.DELETE_ACL_CONFIG, {"accessKey": "newuser01"})
        self.assertEqual(response.code, ResponseCode.SUCCESS)
        gone = self.call(signed(RequestCode.SEND_MESSAGE_V2, ext, b"x", "newuser01", "newsecret1"))
        self.assertIn("No acl config for newuser01", gone.remark)
        again = self.admin(RequestCode.DELETE_ACL_CONFIG, {"accessKey": "newuser01"})
        self.assertEqual((again.code, again.remark), (
            ResponseCode.DELETE_ACL_CONFIG_FAILED,
            "The accesskey[newuser01] corresponding to accessConfig has been deleted failed."))

    def test_update_refused(self) -> None:
        response = self.admin(RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, {"accessKey": "short", "secretKey": "x"})
        self.assertEqual((response.code, response.remark), (
            ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED,
            "The accessKey=short and secretKey=x cannot be null and length should longer than 6"))
        response = self.admin(RequestCode.UPDATE_AND_CREATE_ACL_CONFIG,
                              {"accessKey": "longenough", "secretKey": "longenough", "topicPerms": "t=ALL"})
        self.assertEqual(response.code, ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED)
        self.assertTrue(response.remark.startswith("Parse resource permission error for t=ALL."))

    def test_non_admin_refused_in_strict_mode(self) -> None:
        response = self.call(signed(RequestCode.UPDATE_AND_CREATE_ACL_CONFIG,
                                    {"accessKey": "sneaky001", "secretKey": "sneaky001", "admin": "true"}))
        self.assertEqual(response.remark, f"{_E}Need admin permission for request code=50, but accessKey=RocketMQ "
                                          f"is not, {_M}.checkPerm(PlainPermissionManager.java:581)")
        self.assertNotIn("sneaky001", [a["accessKey"] for a in self.plain_doc()["accounts"]])

    def test_versions(self) -> None:
        self.controller.broker_addr = "127.0.0.1:10911"
        response = self.admin(RequestCode.GET_BROKER_CLUSTER_ACL_INFO)
        self.assertEqual(response.code, ResponseCode.SUCCESS)
        ext = response.ext_fields
        self.assertEqual((ext["brokerName"], ext["brokerAddr"], ext["clusterName"]),
                         ("broker-a", "127.0.0.1:10911", "DefaultCluster"))
        self.assertEqual(json.loads(ext["version"])["counter"], 0)
        self.assertEqual(set(json.loads(ext["allAclFileVersion"])),
                         {os.path.join(self.home, "conf", "acl", "more.yaml"),
                          os.path.join(self.home, "conf", "plain_acl.yml")})
        self.admin(RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
                   {"globalWhiteAddrs": "10.9.9.*", "aclFileFullPath": ""})
        ext = self.admin(RequestCode.GET_BROKER_CLUSTER_ACL_INFO).ext_fields
        self.assertEqual(json.loads(ext["version"])["counter"], 1)

    def test_global_white_addresses(self) -> None:
        response = self.admin(RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
                              {"globalWhiteAddrs": "10.9.9.*,192.168.5.5", "aclFileFullPath": ""})
        self.assertEqual(response.code, ResponseCode.SUCCESS)
        self.assertEqual(self.plain_doc()["globalWhiteRemoteAddresses"], ["10.9.9.*", "192.168.5.5"])
        self.assertEqual(self.call(heartbeat("c1"), Ctx("10.9.9.1:1")).code, ResponseCode.SUCCESS)
        elsewhere = os.path.join(self.home, "conf", "broker.conf")
        with open(elsewhere, "w") as f:
            f.write("x=1\n")
        response = self.admin(RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
                              {"globalWhiteAddrs": "1.1.1.1", "aclFileFullPath": elsewhere})
        self.assertEqual((response.code, response.remark),
                         (ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED,
                          "The globalWhiteAddresses[1.1.1.1] has been updated failed."))
        response = self.admin(RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, {"globalWhiteAddrs": "300.1.1.1"})
        self.assertEqual((response.code, response.remark), (ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED,
                                                            "Netaddress examine Exception netaddress is 300.1.1.1"))

    def test_java_split(self) -> None:
        self.assertEqual(java_split("a,b,,"), ["a", "b"])
        self.assertEqual(java_split(",a"), ["", "a"])
        self.assertEqual(java_split(""), [""])
        self.assertEqual(java_split(",,"), [])
        self.assertIsNone(java_split(None))


class AclOffTests(SynchronousTestCase):
    """Java's AdminBrokerProcessor without a validator: failure codes without remarks, 52 unanswered."""

    def setUp(self) -> None:
        self.controller = make_controller(self)
        self.table = processor_table(self.controller)

    def test_admin_codes(self) -> None:
        self.assertIsNone(self.controller.acl)
        self.assertIsNone(self.table.before_request)
        for code, failed in ((50, 209), (51, 210), (53, 211)):
            response = self.table.dispatch(Ctx(), RemotingCommand.request(code, {"accessKey": "someone1"}))
            self.assertEqual((response.code, response.remark), (failed, None))
        self.assertIsNone(self.table.dispatch(Ctx(), RemotingCommand.request(52)))


class StartupTests(SynchronousTestCase):
    def test_broken_file_refuses_to_load(self) -> None:
        home = make_home(self, more="accounts: [{accessKey: short}]")
        settings = broker_settings(self, aclEnable=True, rocketmqHome=home)
        controller = BrokerController(settings, FakeReactor())
        self.addCleanup(lambda: controller.store.shutdown_flag or controller.shutdown())
        self.assertFalse(controller.load())

    def test_plain_file_setting(self) -> None:
        home = make_home(self, more=None)
        os.rename(os.path.join(home, "conf", "plain_acl.yml"), os.path.join(home, "conf", "mine.yml"))
        controller = make_controller(self, aclEnable=True, rocketmqHome=home,
                                     **{"rocketmq.acl.plain.file": "conf/mine.yml"})
        self.assertIn("RocketMQ", controller.acl.rules.accounts)
        self.assertFalse(os.path.exists(os.path.join(home, "conf", "plain_acl.yml")))


class ReloadTimerTests(SynchronousTestCase):
    def test_the_service_polls_every_5s(self) -> None:
        home = make_home(self)
        reactor = FakeReactor()
        settings = broker_settings(self, aclEnable=True, rocketmqHome=home, listenPort=10911)
        service = BrokerService(settings, reactor, drive_store=False)
        service.startService()
        self.addCleanup(lambda: service.running and self.successResultOf(service.stopService()))
        path = os.path.join(home, "conf", "acl", "more.yaml")
        with open(path, "w") as f:
            f.write(MORE.replace("fromaclsub", "rotatedsecret"))
        st = os.stat(path)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
        reactor.advance(4.9)
        self.assertEqual(service.controller.acl.rules.accounts["dupkey123"].secret_key, "fromaclsub")
        reactor.advance(0.2)
        self.assertEqual(service.controller.acl.rules.accounts["dupkey123"].secret_key, "rotatedsecret")
        # both ports refuse unsigned requests
        self.assertEqual(len(service.factories), 2)
        for factory in service.factories:
            self.assertIsNotNone(factory.processors.before_request)
