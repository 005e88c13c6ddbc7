"""PlainPermissionManager: validation as Java 4.9.8, files, reloads and the admin updates."""

from __future__ import annotations

import json
import os

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.acl import AclError, PlainAccessConfig, PlainPermissionManager, sign
from rocketmq_tx.acl.plainacl import load_yaml
from rocketmq_tx.acl.test.validate_cases import CASES, LOCAL, MORE, PLAIN, request_for
from rocketmq_tx.remoting import RemotingCommand, RequestCode

NOW = 1_700_000_000_000


class Home:
    """A RocketMQ home with ACL files; the manager's clock is ``self.now``."""

    def __init__(self, case: SynchronousTestCase, plain: str | None = PLAIN, more: str | None = MORE) -> None:
        self.root = os.path.abspath(case.mktemp())
        os.makedirs(os.path.join(self.root, "conf", "acl", "sub"))
        self.plain = os.path.join(self.root, "conf", "plain_acl.yml")
        self.more = os.path.join(self.root, "conf", "acl", "sub", "more.yaml")
        self.now = NOW
        if plain is not None:
            self.write(self.plain, plain)
        if more is not None:
            self.write(self.more, more)

    def write(self, path: str, text: str) -> None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        # A new mtime even within the file system's timestamp granularity.
        st = os.stat(path)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))

    def manager(self, strict: bool = True, load: bool = True) -> PlainPermissionManager:
        m = PlainPermissionManager(self.root, now_ms=lambda: self.now, strict=strict)
        if load:
            m.load()
        return m


def outcome(manager: PlainPermissionManager, request: RemotingCommand, peer: str = LOCAL) -> str:
    try:
        manager.validate(request, peer)
    except AclError as e:
        return e.java_desc()
    return "OK"


def signed(code: int, ext: dict, ak: str = "RocketMQ", sk: str = "12345678", body: bytes = b"",
           version: int = 409) -> RemotingCommand:
    request = RemotingCommand.request(code, ext, body, version=version)
    sign(request, ak, sk)
    return request


class ValidateTests(SynchronousTestCase):
    def test_as_java_498(self) -> None:
        """Every case answers what Java 4.9.8's validator answered (strict off)."""
        manager = Home(self).manager(strict=False)
        for name, case, expected in CASES:
            self.assertEqual(outcome(manager, request_for(case), case["peer"]), expected, name)

    def test_strict_closes_the_gaps(self) -> None:
        manager = Home(self).manager(strict=True)
        refused = {
            "batch": signed(RequestCode.SEND_BATCH_MESSAGE, {"a": "g", "b": "topicA"}),
            "lite pull": signed(RequestCode.LITE_PULL_MESSAGE, {"consumerGroup": "groupA", "topic": "topicB"}),
            "retry send": signed(RequestCode.SEND_MESSAGE, {"topic": "%RETRY%groupA"}),
        }
        for name, request in refused.items():
            self.assertIn("No default permission for", outcome(manager, request), name)
        for code in (50, 51, 52, 53):
            self.assertIn(f"Need admin permission for request code={code}, but accessKey=RocketMQ is not",
                          outcome(manager, signed(code, {"accessKey": "x"})))
            self.assertEqual(outcome(manager, signed(code, {}, ak="adminperm")), "OK")
        # what 4.9.8 allows stays allowed
        self.assertEqual(outcome(manager, signed(RequestCode.SEND_BATCH_MESSAGE, {"a": "g", "b": "topicB"})), "OK")

    def test_unique_key_query_5x_rule(self) -> None:
        """A 4.9.4+ client signs _UNIQUE_KEY_QUERY; a 4.9.8 broker would drop it and refuse
        (ISSUE #5310); here it is dropped only for clients up to V4_9_3 (399)."""
        manager = Home(self).manager()
        ext = {"topic": "topicB", "key": "k", "_UNIQUE_KEY_QUERY": "true"}
        self.assertEqual(outcome(manager, signed(RequestCode.QUERY_MESSAGE, ext, version=400)), "OK")
        self.assertIn("Check signature failed", outcome(manager, signed(RequestCode.QUERY_MESSAGE, ext, version=399)))

    def test_cheap_per_request(self) -> None:
        manager = Home(self).manager()
        request = signed(RequestCode.SEND_MESSAGE_V2, {"a": "g", "b": "topicB", "c": "TBW102", "d": "4", "e": "0",
                                                       "f": "0", "g": "1700000000000", "h": "0", "i": "KEYS\x01k"},
                         body=b"x" * 1024)
        manager.validate(request, LOCAL)
        # The work per request, counted (its time is bench/bounded.py's acl-validate): the
        # signed content built once, one HMAC from the account's prepared key (never a new
        # key per request), nothing re-read from the rules' files.
        from rocketmq_tx.acl import manager as manager_module
        from rocketmq_tx.acl import signing
        contents: list[int] = []
        keys: list[int] = []
        macs: list[int] = []
        real_content, real_init, real_verify = (manager_module.fields_content, signing.Signer.__init__,
                                                signing.Signer.verify_request)
        self.patch(manager_module, "fields_content", lambda *a: contents.append(1) or real_content(*a))
        self.patch(signing.Signer, "__init__", lambda s, *a: keys.append(1) or real_init(s, *a))
        self.patch(signing.Signer, "verify_request", lambda s, *a: macs.append(1) or real_verify(s, *a))
        loads: list[int] = []
        self.patch(manager, "load", lambda: loads.append(1))
        for _ in range(200):
            manager.validate(request, LOCAL)
        self.assertEqual((len(contents), len(keys), len(macs), len(loads)), (200, 0, 200, 0))


class FileTests(SynchronousTestCase):
    def test_needs_a_home(self) -> None:
        with self.assertRaises(AclError) as cm:
            PlainPermissionManager("").load()
        self.assertIn("rocketmqHome", str(cm.exception))

    def test_plain_file_created_empty(self) -> None:
        home = Home(self, plain=None, more=None)
        manager = home.manager()
        self.assertTrue(os.path.isfile(home.plain))
        self.assertEqual(manager.rules.accounts, {})
        self.assertIn("No accessKey is configured", outcome(manager, RemotingCommand.request(10)))

    def test_plain_file_setting_is_under_home(self) -> None:
        home = Home(self, plain=None, more=None)
        manager = PlainPermissionManager(home.root, "/custom/acl.yml")
        self.assertEqual(manager.default_file, os.path.join(home.root, "custom", "acl.yml"))

    def test_broken_file_refuses_the_start(self) -> None:
        home = Home(self, more="accounts: [{accessKey: short, secretKey: 12345678}]")
        with self.assertRaises(AclError) as cm:
            home.manager()
        self.assertIn(home.more, str(cm.exception))
        self.assertIn("The accessKey=short", str(cm.exception))

    def test_directory_before_plain_file(self) -> None:
        home = Home(self)
        manager = home.manager()
        self.assertEqual(manager.files(), [home.more, home.plain])
        self.assertEqual(manager.rules.accounts["dupkey123"].secret_key, "fromaclsub")
        self.assertEqual(len(manager.rules.global_white), 2)


class ReloadTests(SynchronousTestCase):
    def test_good_change_applies(self) -> None:
        home = Home(self)
        manager = home.manager()
        self.assertFalse(manager.check())
        home.write(home.more, MORE.replace("fromaclsub", "rotated-secret"))
        self.assertTrue(manager.check())
        self.assertEqual(manager.rules.accounts["dupkey123"].secret_key, "rotated-secret")
        self.assertFalse(manager.check())

    def test_touch_without_change(self) -> None:
        home = Home(self)
        manager = home.manager()
        rules = manager.rules
        home.write(home.plain, PLAIN)
        self.assertFalse(manager.check())
        self.assertIs(manager.rules, rules)

    def test_broken_file_keeps_the_last_rules(self) -> None:
        home = Home(self)
        manager = home.manager()
        before = manager.rules.accounts["RocketMQ"]
        home.write(home.plain, PLAIN + "  - broken\n  topicPerms: [x")
        with self.assertLogs("rocketmq_tx.acl", "ERROR") as logs:
            self.assertFalse(manager.check())
            home.write(home.plain, PLAIN + "  - broken\n  topicPerms: [x")  # same content, new mtime
            self.assertFalse(manager.check())
        self.assertEqual(len(logs.records), 1)  # once per content
        self.assertIn("refused, keeping its last good rules", logs.output[0])
        self.assertIs(manager.rules.accounts["RocketMQ"], before)
        self.assertFalse(manager.reload(home.plain))
        home.write(home.plain, PLAIN.replace("topicA=DENY", "topicA=PUB"))
        self.assertTrue(manager.check())
        self.assertEqual(outcome(manager, signed(RequestCode.SEND_MESSAGE_V2, {"a": "g", "b": "topicA"})), "OK")

    def test_files_come_and_go(self) -> None:
        home = Home(self)
        manager = home.manager()
        extra = os.path.join(home.root, "conf", "acl", "team.yml")
        home.write(extra, "accounts: [{accessKey: teamuser1, secretKey: teamsecret}]\n")
        self.assertTrue(manager.check())
        self.assertIn("teamuser1", manager.rules.accounts)
        os.unlink(extra)
        self.assertTrue(manager.check())
        self.assertNotIn("teamuser1", manager.rules.accounts)
        os.unlink(home.more)
        self.assertTrue(manager.check())
        self.assertEqual(manager.rules.accounts["dupkey123"].secret_key, "fromplain")

    def test_new_broken_file_contributes_nothing(self) -> None:
        home = Home(self)
        manager = home.manager()
        extra = os.path.join(home.root, "conf", "acl", "bad.yml")
        home.write(extra, "accounts: {}")
        with self.assertLogs("rocketmq_tx.acl", "ERROR") as logs:
            self.assertFalse(manager.check())
            self.assertFalse(manager.check())
        self.assertEqual(len(logs.records), 1)
        self.assertEqual(set(manager.rules.accounts), {"RocketMQ", "rocketmq2", "adminperm", "dupkey123"})

    def test_refusal_log_once_per_cause(self) -> None:
        manager = Home(self).manager()
        self.assertTrue(manager.first_refusal("ak", "reason"))
        self.assertFalse(manager.first_refusal("ak", "reason"))
        self.assertTrue(manager.first_refusal("other", "reason"))
        manager._logged.capacity = 2
        self.assertTrue(manager.first_refusal("third", "reason"))
        self.assertTrue(manager.first_refusal("ak", "reason"))  # the oldest cause was forgotten


class AdminUpdateTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.home = Home(self)
        self.manager = self.home.manager()

    def doc(self, path: str) -> dict:
        with open(path, encoding="utf-8") as f:
            return load_yaml(f.read())

    def test_create_in_plain_file(self) -> None:
        self.home.now = NOW + 5
        config = PlainAccessConfig("newuser01", "123_456_789", None, False, "PUB", "SUB", ["t1=PUB|SUB"], ["g1=SUB"])
        self.assertTrue(self.manager.update_access_config(config))
        doc = self.doc(self.home.plain)
        self.assertEqual(doc["accounts"][-1], {
            "accessKey": "newuser01", "secretKey": "123_456_789", "admin": False, "defaultTopicPerm": "PUB",
            "defaultGroupPerm": "SUB", "topicPerms": ["t1=PUB|SUB"], "groupPerms": ["g1=SUB"]})
        self.assertEqual(doc["dataVersion"], [{"counter": 1, "timestamp": NOW + 5}])
        self.assertEqual(list(doc)[:2], ["globalWhiteRemoteAddresses", "accounts"])
        request = signed(RequestCode.SEND_MESSAGE_V2, {"a": "g", "b": "t1"}, "newuser01", "123_456_789")
        self.assertEqual(outcome(self.manager, request), "OK")
        self.assertEqual(json.loads(self.manager.default_version_json()), {"counter": 1, "timestamp": NOW + 5})

    def test_update_where_defined(self) -> None:
        config = PlainAccessConfig("dupkey123", "newsecret", "192.168.9.*", True, "SUB", None, None, None)
        self.assertTrue(self.manager.update_access_config(config))
        account = self.doc(self.home.more)["accounts"][0]
        self.assertEqual(account, {"accessKey": "dupkey123", "secretKey": "newsecret", "defaultTopicPerm": "SUB",
                                   "defaultGroupPerm": "PUB", "whiteRemoteAddress": "192.168.9.*", "admin": True})
        self.assertEqual(self.manager.rules.accounts["dupkey123"].secret_key, "newsecret")
        versions = json.loads(self.manager.all_versions_json())
        self.assertEqual(versions[self.home.more]["counter"], 1)
        self.assertEqual(versions[self.home.plain]["counter"], 0)

    def test_updated_account_moves_last(self) -> None:
        self.manager.update_access_config(PlainAccessConfig("RocketMQ", "12345678", admin=False))
        self.assertEqual([a["accessKey"] for a in self.doc(self.home.plain)["accounts"]],
                         ["rocketmq2", "adminperm", "dupkey123", "RocketMQ"])

    def test_refused_updates_write_nothing(self) -> None:
        with open(self.home.plain, "rb") as f:
            before = f.read()
        refused = [
            (PlainAccessConfig("short", "12345678"),
             "The accessKey=short and secretKey=12345678 cannot be null and length should longer than 6"),
            (PlainAccessConfig("longenough", "12345678", topic_perms=["topicA"]),
             "Parse Resource format error for topicA.\n"
             "The expected resource format is 'Res=Perm'. For example: topicA=SUB"),
            (PlainAccessConfig("longenough", "12345678", group_perms=["g=ALL"]),
             "Parse resource permission error for g=ALL.\n"
             "The expected permissions are 'SUB' or 'PUB' or 'SUB|PUB' or 'PUB|SUB'."),
            (PlainAccessConfig("longenough", "12345678", white_remote_address="1.2.*"),
             "Netaddress examine scope Exception netaddress is 1.2.*"),
        ]
        for config, message in refused:
            with self.assertRaises(AclError) as cm:
                self.manager.update_access_config(config)
            self.assertEqual(cm.exception.message, message)
        with open(self.home.plain, "rb") as f:
            self.assertEqual(f.read(), before)

    def test_delete(self) -> None:
        self.assertTrue(self.manager.delete_access_config("adminperm"))
        self.assertNotIn("adminperm", [a["accessKey"] for a in self.doc(self.home.plain)["accounts"]])
        self.assertIn("No acl config for adminperm",
                      outcome(self.manager, signed(17, {}, ak="adminperm")))
        self.assertFalse(self.manager.delete_access_config("adminperm"))
        self.assertFalse(self.manager.delete_access_config(None))

    def test_global_white_list(self) -> None:
        self.assertTrue(self.manager.update_global_white_addrs(["10.1.1.*", "1.2.3.4"], None))
        self.assertEqual(self.doc(self.home.plain)["globalWhiteRemoteAddresses"], ["10.1.1.*", "1.2.3.4"])
        self.assertEqual(outcome(self.manager, RemotingCommand.request(17), "10.1.1.9:1"), "OK")
        self.assertIn("No accessKey", outcome(self.manager, RemotingCommand.request(17), "10.10.103.9:1"))
        self.assertTrue(self.manager.update_global_white_addrs([], self.home.more))
        self.assertEqual(self.doc(self.home.more)["globalWhiteRemoteAddresses"], [])

    def test_global_white_list_refusals(self) -> None:
        outside = os.path.join(self.home.root, "conf", "broker.conf")
        self.home.write(outside, "brokerName=a\n")
        self.assertFalse(self.manager.update_global_white_addrs(["1.1.1.1"], outside))
        self.assertFalse(self.manager.update_global_white_addrs(["1.1.1.1"], self.home.root + "/../x.yml"))
        self.assertFalse(self.manager.update_global_white_addrs(None, None))
        self.assertFalse(self.manager.update_global_white_addrs(["1.1.1.1"], self.home.plain + ".missing"))
        with self.assertRaises(AclError):
            self.manager.update_global_white_addrs(["300.1.1.1"], None)
        with open(outside) as f:
            self.assertEqual(f.read(), "brokerName=a\n")
