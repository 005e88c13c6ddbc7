"""Config JSON files: Java-written samples, fastjson quirks, atomic writes with .bak."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.store.test.util import temp_root

from rocketmq_tx.store.configfile import ConfigFile, dumps, int_keys, loads

DATA = Path(__file__).parent / "data"


class JavaSampleTests(SynchronousTestCase):
    """Files written by the official 4.9.7 and 5.5.0 brokers (captured with compat-tests)."""

    def sample(self, version: str, name: str):
        return ConfigFile(str(DATA / f"java-{version}" / name)).load()

    def test_consumer_offsets(self) -> None:
        for version in ("4.9.7", "5.5.0"):
            text = (DATA / f"java-{version}" / "consumerOffset.json").read_text()
            self.assertIn("{0:5", text.replace("\n", "").replace("\t", ""))  # the quirk is real
            data = self.sample(version, "consumerOffset.json")
            self.assertEqual(int_keys(data["offsetTable"]["StoreCompat@compat_store_cg"]), {0: 5, 1: 3, 2: 1, 3: 1})

    def test_delay_offsets(self) -> None:
        for version in ("4.9.7", "5.5.0"):
            self.assertEqual(int_keys(self.sample(version, "delayOffset.json")["offsetTable"]), {4: 1})

    def test_topics_and_groups(self) -> None:
        for version in ("4.9.7", "5.5.0"):
            topics = self.sample(version, "topics.json")
            t = topics["topicConfigTable"]["StoreCompat"]
            self.assertEqual((t["readQueueNums"], t["writeQueueNums"], t["perm"]), (4, 4, 6))
            self.assertIn("counter", topics["dataVersion"])
            groups = self.sample(version, "subscriptionGroup.json")
            self.assertIn("SELF_TEST_C_GROUP", groups["subscriptionGroupTable"])

    def test_rewrite_keeps_content(self) -> None:
        for version in ("4.9.7", "5.5.0"):
            for name in ("topics.json", "consumerOffset.json", "delayOffset.json", "subscriptionGroup.json"):
                data = self.sample(version, name)
                self.assertEqual(loads(dumps(data)), data)


class LenientParserTests(SynchronousTestCase):
    def test_unquoted_keys(self) -> None:
        self.assertEqual(loads('{"a":{0:1,-1:2, 12 :3}}'), {"a": {"0": 1, "-1": 2, "12": 3}})

    def test_strings_untouched(self) -> None:
        self.assertEqual(loads('{"s":"{0:1,2:3}",1:"x,4:y"}'), {"s": "{0:1,2:3}", "1": "x,4:y"})

    @given(st.dictionaries(st.integers(-(2**40), 2**40), st.integers()))
    def test_roundtrip_unquoted(self, table: dict) -> None:
        text = "{" + ",".join(f"{k}:{v}" for k, v in table.items()) + "}"
        self.assertEqual(int_keys(loads(text)), table)

    def test_pretty_shape(self) -> None:
        self.assertEqual(dumps({"offsetTable": {}}), '{\n\t"offsetTable":{}\n}')
        self.assertEqual(dumps({"a": {"b": [1]}}), '{\n\t"a":{\n\t\t"b":[\n\t\t\t1\n\t\t]\n\t}\n}')


class PersistTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.dir = temp_root(self)
        self.file = ConfigFile(os.path.join(self.dir, "config", "consumerOffset.json"))

    def test_persist_and_bak(self) -> None:
        self.assertIsNone(self.file.load())
        self.assertTrue(self.file.persist({"offsetTable": {"t@g": {"0": 1}}}))
        self.assertFalse(os.path.exists(self.file.bak_path))
        self.assertTrue(self.file.persist({"offsetTable": {"t@g": {"0": 2}}}))
        self.assertEqual(loads(Path(self.file.bak_path).read_text())["offsetTable"]["t@g"]["0"], 1)
        self.assertEqual(self.file.load()["offsetTable"]["t@g"]["0"], 2)
        self.assertFalse(os.path.exists(self.file.path + ".tmp"))

    def test_fallback_to_bak(self) -> None:
        self.file.persist({"v": 1})
        self.file.persist({"v": 2})
        Path(self.file.path).write_text("{broken")
        self.assertEqual(self.file.load(), {"v": 1})
        Path(self.file.path).write_text("")
        self.assertEqual(self.file.load(), {"v": 1})
        os.unlink(self.file.path)
        self.assertEqual(self.file.load(), {"v": 1})

    def test_failed_write_keeps_old(self) -> None:
        self.file.persist({"v": 1})
        import rocketmq_tx.store.configfile as cf

        def fail(path, data):
            raise OSError(28, "No space left on device")
        self.patch(cf, "_write_file", fail)
        self.assertFalse(self.file.persist({"v": 2}))
        self.assertEqual(self.file.load(), {"v": 1})
