"""plain_acl.yml: reading as Java reads it, the files Java refuses, and writing back."""

from __future__ import annotations

import os
import stat

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.acl import AclError
from rocketmq_tx.acl.permission import DENY, PUB, SUB
from rocketmq_tx.acl.plainacl import PlainAccessConfig, dump_yaml, load_yaml, parse_acl_file, write_atomic

NOW = 1_700_000_000_000

#: Java's sample file (acl/src/test/resources/conf/plain_acl.yml of 4.9.8)
SAMPLE = """\
globalWhiteRemoteAddresses:
- 10.10.103.*
- 192.168.0.*

accounts:
- accessKey: RocketMQ
  secretKey: 12345678
  whiteRemoteAddress: 192.168.0.*
  admin: false
  defaultTopicPerm: DENY
  defaultGroupPerm: SUB
  topicPerms:
  - topicA=DENY
  - topicB=PUB|SUB
  - topicC=SUB
  groupPerms:
  # the group should convert to retry topic
  - groupA=DENY
  - groupB=SUB
  - groupC=SUB

- accessKey: rocketmq2
  secretKey: 12345678
  whiteRemoteAddress: 192.168.1.*
  # if it is admin, it could access all resources
  admin: true
"""


def parse(text: str):  # type: ignore[no-untyped-def]
    return parse_acl_file("/x/plain_acl.yml", text, lambda: NOW)


class ReadTests(SynchronousTestCase):
    def test_sample(self) -> None:
        acl = parse(SAMPLE)
        assert acl is not None
        self.assertEqual(acl.global_white_text, ["10.10.103.*", "192.168.0.*"])
        first, second = acl.accounts
        self.assertEqual((first.access_key, first.secret_key, first.admin), ("RocketMQ", "12345678", False))
        self.assertEqual((first.default_topic_perm, first.default_group_perm), (DENY, SUB))
        self.assertEqual(first.perms, {"%RETRY%groupA": DENY, "%RETRY%groupB": SUB, "%RETRY%groupC": SUB,
                                       "topicA": DENY, "topicB": PUB | SUB, "topicC": SUB})
        self.assertTrue(first.white.match("192.168.0.7"))
        self.assertEqual((second.admin, second.perms, second.default_topic_perm), (True, None, DENY))
        self.assertEqual((acl.data_version.counter, acl.data_version.timestamp), (0, NOW))

    def test_no_data(self) -> None:
        for text in ("", "# only a comment\n", "{}", "---\n"):
            self.assertIsNone(parse(text), text)

    def test_fastjson_conversions(self) -> None:
        acl = parse("""
accounts:
- AccessKey: 123456789
  secret_key: 0x1F00000
  ADMIN: "1"
  topicPerms: [t=PUB]
  unknownKey: ignored
- accessKey: yes-this-one
  secretKey: "1234567"
  admin: Y
dataVersion:
- counter: 7
  timestamp: 1600000000000
""")
        assert acl is not None
        a, b = acl.accounts
        self.assertEqual((a.access_key, a.secret_key, a.admin), ("123456789", "32505856", True))
        self.assertTrue(b.admin)
        self.assertEqual((acl.data_version.counter, acl.data_version.timestamp), (7, 1600000000000))

    def test_repeated_key_keeps_the_first(self) -> None:
        acl = parse("accounts:\n- {accessKey: samekey1, secretKey: first123}\n"
                    "- {accessKey: samekey1, secretKey: second12}\n")
        assert acl is not None
        self.assertEqual([a.secret_key for a in acl.accounts], ["first123"])
        self.assertEqual(acl.repeated, ["samekey1"])

    def test_refused_files(self) -> None:
        refused = {
            "[a, b]": "the document must be a mapping",
            "accounts: [": "not YAML",
            "globalWhiteRemoteAddresses: 10.1.1.*": "globalWhiteRemoteAddresses: expected a list",
            "globalWhiteRemoteAddresses: [300.1.1.1]": "Netaddress examine Exception netaddress is 300.1.1.1",
            "accounts: {accessKey: x}": "accounts: expected a list",
            "accounts: [null]": "accounts[0]: an account must be a mapping",
            "accounts: [{accessKey: short, secretKey: 12345678}]":
                "The accessKey=short and secretKey=****** cannot be null and length should longer than 6",
            "accounts: [{accessKey: longenough}]":
                "The accessKey=longenough and secretKey=None cannot be null and length should longer than 6",
            "accounts: [{accessKey: longenough, secretKey: 12345678, topicPerms: [topicA]}]":
                "Parse resource permission failed for topic:topicA",
            "accounts: [{accessKey: longenough, secretKey: 12345678, topicPerms: topicA=PUB}]":
                "topicPerms: expected a list",
            "accounts: [{accessKey: longenough, secretKey: 12345678, admin: maybe}]": "expected true or false",
            "accounts: [{accessKey: longenough, secretKey: 12345678, whiteRemoteAddress: 1.2.*}]":
                "Netaddress examine scope Exception netaddress is 1.2.*",
            "accounts: [{accessKey: [a], secretKey: 12345678}]": "expected text, got a list",
            "dataVersion: {counter: 1}": "dataVersion: expected a list",
        }
        for text, message in refused.items():
            with self.assertRaises(AclError, msg=text) as cm:
                parse(text)
            self.assertIn(message, str(cm.exception), text)

    def test_secret_never_in_a_refusal(self) -> None:
        with self.assertRaises(AclError) as cm:
            parse("accounts: [{accessKey: longenough, secretKey: s3cr3t}]")
        self.assertNotIn("s3cr3t", str(cm.exception))

    def test_config_repr_hides_secret(self) -> None:
        self.assertNotIn("s3cr3tvalue", repr(PlainAccessConfig("someuser1", "s3cr3tvalue")))


class WriteTests(SynchronousTestCase):
    def test_round_trip_keeps_order_and_types(self) -> None:
        doc = load_yaml(SAMPLE)
        doc["accounts"][0]["secretKey"] = "123_456"  # text YAML 1.1 would read as a number
        doc["accounts"][0]["extra"] = "yes"
        text = dump_yaml(doc)
        self.assertEqual(list(load_yaml(text)), ["globalWhiteRemoteAddresses", "accounts"])
        again = load_yaml(text)
        self.assertEqual(again["accounts"][0]["secretKey"], "123_456")
        self.assertEqual(again["accounts"][0]["extra"], "yes")
        self.assertEqual(again["accounts"][0]["secretKey"], "123_456")
        self.assertTrue(text.startswith("globalWhiteRemoteAddresses:\n- 10.10.103.*\n"), text)

    def test_atomic_write_keeps_mode(self) -> None:
        directory = self.mktemp()
        os.makedirs(directory)
        path = os.path.join(directory, "plain_acl.yml")
        with open(path, "w") as f:
            f.write("old")
        os.chmod(path, 0o600)
        write_atomic(path, "accounts: []\n")
        with open(path) as f:
            self.assertEqual(f.read(), "accounts: []\n")
        self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o600)
        self.assertEqual(os.listdir(directory), ["plain_acl.yml"])
