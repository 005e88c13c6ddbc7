"""Config JSON files: Java-written samples, fastjson quirks, atomic writes with .bak."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.store.configfile import ConfigFile, dumps, int_keys, loads
from rocketmq_tx.store.test.util import temp_root

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


class _Crash(BaseException):
    """The process dies here (not an OSError: nothing in persist may catch it)."""


class _CrashingOS:
    """``os`` as configfile sees it, dying at the *at*-th file-system step (a write dies half-way)."""

    STEPS = ("open", "write", "fsync", "close", "replace", "link", "unlink", "makedirs")

    def __init__(self, at: int) -> None:
        self.at = at
        self.steps = 0

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        real = getattr(os, name)
        if name not in self.STEPS:
            return real

        def step(*args, **kw):  # type: ignore[no-untyped-def]
            self.steps += 1
            if self.steps == self.at:
                if name == "write":
                    fd, data = args
                    real(fd, bytes(data[: max(1, len(data) // 2)]))
                raise _Crash(name)
            return real(*args, **kw)
        return step


class CrashTests(SynchronousTestCase):
    """A crash at any step of a write leaves the old or the new content (the .tmp/.bak protocol)."""

    def test_crash_at_every_step(self) -> None:
        import rocketmq_tx.store.configfile as cf
        old, new = {"v": "old" * 100}, {"v": "new" * 200}
        at = 1
        while True:
            path = os.path.join(temp_root(self), "config", "topics.json")
            first = ConfigFile(path)
            self.assertTrue(first.persist({"v": "older"}))
            self.assertTrue(first.persist(old))
            crashing = _CrashingOS(at)
            self.patch(cf, "os", crashing)
            try:
                done = ConfigFile(path).persist(new)
            except _Crash:
                done = False
            finally:
                self.patch(cf, "os", os)
            after = ConfigFile(path).load()  # what a restarted broker reads
            self.assertIn(after, (old, new), f"crash at step {at}")
            if done:
                self.assertEqual(after, new)
                break
            # the next write after the restart goes through, stale .tmp or not
            self.assertTrue(ConfigFile(path).persist({"v": "again"}))
            self.assertEqual(ConfigFile(path).load(), {"v": "again"})
            at += 1
        self.assertGreaterEqual(at, 12)  # each of the 11 steps was a crash point

    def test_generation_keeps_the_newest(self) -> None:
        f = ConfigFile(os.path.join(temp_root(self), "t.json"))
        self.assertTrue(f.persist({"v": 2}, generation=2))
        self.assertTrue(f.persist({"v": 1}, generation=1))  # older: skipped, reported done
        self.assertEqual(f.load(), {"v": 2})
        self.assertTrue(f.persist({"v": 3}, generation=3))
        self.assertEqual((f.load(), f.generation), ({"v": 3}, 3))

    def test_bak_is_the_previous_file(self) -> None:
        """A hard link where the file system has them, else a copy: the same bytes either way."""
        import rocketmq_tx.store.configfile as cf
        f = ConfigFile(os.path.join(temp_root(self), "t.json"))
        f.persist({"v": 1})
        f.persist({"v": 2})
        self.assertEqual(loads(Path(f.bak_path).read_text()), {"v": 1})

        class NoLinks:
            def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
                if name == "link":
                    def refuse(*args):  # type: ignore[no-untyped-def]
                        raise PermissionError(1, "Operation not permitted")
                    return refuse
                return getattr(os, name)
        self.patch(cf, "os", NoLinks())
        f.persist({"v": 3})
        self.assertEqual(loads(Path(f.bak_path).read_text()), {"v": 2})
        self.assertEqual(f.load(), {"v": 3})

    def test_pretty_output_unchanged(self) -> None:
        """The stdlib encoder writes what the former hand-written one did (fastjson's shape)."""
        value = {"dataVersion": {"counter": 3, "timestamp": 1}, "t": {"a": {"b": [1, "x\n\"y", None, True]},
                                                                      "e": {}, "l": []}, "k": {0: 5}}
        self.assertEqual(dumps(value), '{\n\t"dataVersion":{\n\t\t"counter":3,\n\t\t"timestamp":1\n\t},\n'
                                       '\t"t":{\n\t\t"a":{\n\t\t\t"b":[\n\t\t\t\t1,\n\t\t\t\t"x\\n\\"y",\n'
                                       '\t\t\t\tnull,\n\t\t\t\ttrue\n\t\t\t]\n\t\t},\n\t\t"e":{},\n'
                                       '\t\t"l":[]\n\t},\n\t"k":{\n\t\t"0":5\n\t}\n}')
        self.assertEqual(dumps({"\u00e9": 1}), '{\n\t"\u00e9":1\n}')
