"""MetadataPersister: metadata files written off the request path, coalesced, one write in flight."""

from __future__ import annotations

import json
import os

from twisted.internet.defer import Deferred
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.broker.persister import MetadataPersister
from rocketmq_tx.broker.processors import processor_table
from rocketmq_tx.broker.test.util import Ctx, FakeReactor, heartbeat, make_controller
from rocketmq_tx.broker.topicconfig import TopicConfigManager
from rocketmq_tx.common.route import TopicConfig
from rocketmq_tx.common.subscription import SubscriptionGroupConfig
from rocketmq_tx.remoting import RequestCode, ResponseCode
from rocketmq_tx.store import configfile
from rocketmq_tx.store.configfile import ConfigFile


class ManualThreads:
    """``run_in_thread`` holding each job until the test runs it, as a busy disk would."""

    def __init__(self) -> None:
        self.jobs: list[tuple[object, tuple, Deferred]] = []

    def __call__(self, fn, *args) -> Deferred:  # type: ignore[no-untyped-def]
        d: Deferred = Deferred()
        self.jobs.append((fn, args, d))
        return d

    def run_next(self) -> None:
        fn, args, d = self.jobs.pop(0)
        try:
            result = fn(*args)  # type: ignore[operator]
        except Exception as e:
            d.errback(e)
        else:
            d.callback(result)


class PersisterTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.clock = Clock()
        self.threads = ManualThreads()
        self.persister = MetadataPersister(self.clock, run_in_thread=self.threads)
        self.file = ConfigFile(os.path.join(self.mktemp(), "config", "t.json"))
        self.value = 0
        self.snapshots = 0
        self.mark = self.persister.add("t", self.file, self.snapshot)

    def snapshot(self):  # type: ignore[no-untyped-def]
        self.snapshots += 1
        value = self.value
        return lambda: configfile.dumps({"v": value})

    def on_disk(self) -> object:
        return self.file.load()

    def test_burst_is_one_write_on_a_later_turn(self) -> None:
        for self.value in range(500):
            self.mark()
        self.assertEqual((self.snapshots, self.threads.jobs), (0, []))  # nothing on the request path
        self.clock.advance(0)
        self.assertEqual((self.snapshots, len(self.threads.jobs)), (1, 1))
        self.threads.run_next()
        self.assertEqual(self.on_disk(), {"v": 499})
        self.clock.advance(0)
        self.assertEqual(self.threads.jobs, [])
        self.assertTrue(self.persister.is_idle())

    def test_one_write_in_flight_then_one_more(self) -> None:
        self.value = 1
        self.mark()
        self.clock.advance(0)
        for self.value in (2, 3, 4):
            self.mark()
            self.clock.advance(0)
        self.assertEqual(len(self.threads.jobs), 1)  # the first is still being written
        self.threads.run_next()
        self.assertEqual(self.on_disk(), {"v": 1})
        self.clock.advance(0)
        self.assertEqual(len(self.threads.jobs), 1)
        self.threads.run_next()
        self.assertEqual(self.on_disk(), {"v": 4})
        self.assertEqual(self.snapshots, 2)
        self.clock.advance(0)
        self.assertEqual(self.threads.jobs, [])

    def test_paced_by_the_last_write(self) -> None:
        """Under a steady stream of changes, a file is written at most half the time: the next
        write waits as long as the last one took (the encoding holds the GIL)."""
        self.mark()
        self.clock.advance(0)
        self.mark()
        self.clock.advance(2)  # the write takes 2 s
        self.threads.run_next()
        self.clock.advance(1.9)
        self.assertEqual(self.threads.jobs, [])
        self.clock.advance(0.1)
        self.assertEqual(len(self.threads.jobs), 1)

    def test_older_snapshot_never_overwrites_newer(self) -> None:
        """The shutdown's synchronous flush overtakes a write still queued for a thread."""
        self.value = 1
        self.mark()
        self.clock.advance(0)
        self.value = 2
        self.mark()
        self.assertTrue(self.persister.flush_sync(stop=True))
        self.assertEqual(self.on_disk(), {"v": 2})
        self.threads.run_next()  # the old snapshot's write: skipped
        self.assertEqual(self.on_disk(), {"v": 2})
        self.mark()
        self.clock.advance(10)
        self.assertEqual(self.threads.jobs, [])  # stopped

    def test_failed_write_retried(self) -> None:
        real = configfile._write_file
        failures = [OSError(28, "No space left on device")]

        def flaky(path, data):  # type: ignore[no-untyped-def]
            if failures:
                raise failures.pop()
            real(path, data)
        self.patch(configfile, "_write_file", flaky)
        self.value = 7
        self.mark()
        self.clock.advance(0)
        self.threads.run_next()
        self.assertIsNone(self.on_disk())
        self.clock.advance(0.9)
        self.assertEqual(self.threads.jobs, [])
        self.clock.advance(0.1)
        self.threads.run_next()
        self.assertEqual(self.on_disk(), {"v": 7})

    def test_snapshot_encoding_error_retried(self) -> None:
        self.value = object()  # not JSON: the thread's encoding fails
        self.mark()
        self.clock.advance(0)
        self.threads.run_next()
        self.assertEqual(len(self.flushLoggedErrors(TypeError)), 1)
        self.value = 3
        self.clock.advance(1)
        self.threads.run_next()
        self.assertEqual(self.on_disk(), {"v": 3})

    def test_flush_fires_once_on_disk(self) -> None:
        self.assertIsNone(self.successResultOf(self.persister.flush()))
        self.value = 5
        self.mark()
        d = self.persister.flush()
        self.assertNoResult(d)
        self.clock.advance(0)
        self.assertNoResult(d)
        self.threads.run_next()
        self.successResultOf(d)
        self.assertEqual(self.on_disk(), {"v": 5})

    def test_write_text(self) -> None:
        """One-off text (broker.properties): the last text given wins."""
        path = os.path.join(self.mktemp(), "config", "broker.properties")
        self.persister.write_text(path, "a=1\n")
        self.clock.advance(0)
        self.persister.write_text(path, "a=2\n")
        self.persister.write_text(path, "a=3\n")
        self.threads.run_next()
        self.clock.advance(0)
        self.threads.run_next()
        with open(path) as f:
            self.assertEqual(f.read(), "a=3\n")
        self.assertEqual(self.threads.jobs, [])
        self.persister.write_text(path, "a=4\n")  # a clean stop writes it
        self.persister.flush_sync(stop=True)
        with open(path) as f:
            self.assertEqual(f.read(), "a=4\n")

    def test_snapshot_is_cheap(self) -> None:
        """What the reactor pays per write at 50,000 topics: a shallow copy, no topic encoded
        (the encoding runs in the thread). Counted here; timed by bench/bounded.py's
        topic-snapshot (~0.2 ms)."""
        tcm = TopicConfigManager(self.file.path, {"autoCreateTopicEnable": False, "brokerClusterName": "C",
                                                  "brokerName": "b", "clusterTopicEnable": True,
                                                  "brokerTopicEnable": True, "traceTopicEnable": False,
                                                  "defaultTopicQueueNums": 8})
        for i in range(50_000):
            tcm.topic_config_table[f"T{i}"] = TopicConfig(f"T{i}", 8, 8)
        encoded: list[int] = []
        real_to_json = TopicConfig.to_json
        self.patch(TopicConfig, "to_json", lambda tc: encoded.append(1) or real_to_json(tc))
        encode = tcm.snapshot()
        self.assertEqual(encoded, [])  # on the reactor: no topic encoded
        tcm.topic_config_table["Late"] = TopicConfig("Late")  # after the snapshot: not in it
        data = json.loads(encode())
        self.assertEqual(len(encoded), 50_000 + 8)  # in the writer's thread, each once
        self.assertEqual(len(data["topicConfigTable"]), 50_000 + 8)
        self.assertNotIn("Late", data["topicConfigTable"])


class HeartbeatBurstTests(SynchronousTestCase):
    """The reported freeze: a heartbeat naming 500 new groups on a broker with thousands."""

    GROUPS = 5000

    def setUp(self) -> None:
        self.reactor = FakeReactor()
        self.controller = make_controller(self, self.reactor)
        c = self.controller
        for i in range(self.GROUPS):
            c.subscription_group_manager.subscription_group_table[f"old-{i}"] = SubscriptionGroupConfig(f"old-{i}")
            c.topic_config_manager.topic_config_table[f"%RETRY%old-{i}"] = TopicConfig(f"%RETRY%old-{i}", 1, 1)
        self.assertTrue(c.subscription_group_manager.persist() and c.topic_config_manager.persist())
        self.writes: list[str] = []
        real = ConfigFile._write

        def counting(file: ConfigFile, text: str) -> bool:
            self.writes.append(os.path.basename(file.path))
            return real(file, text)
        self.patch(ConfigFile, "_write", counting)

    def test_heartbeat_with_500_new_groups(self) -> None:
        consumers = {f"new-{i}": {"T": "*"} for i in range(500)}
        request = heartbeat("c1", (), consumers)
        table = processor_table(self.controller)
        encoded: list[str] = []
        for cls in (TopicConfig, SubscriptionGroupConfig):
            real = cls.to_json
            self.patch(cls, "to_json", lambda self_, real=real, name=cls.__name__: encoded.append(name) or real(self_))
        response = table.dispatch(Ctx(), request)
        self.assertEqual(response.code, ResponseCode.SUCCESS)
        # No file written, nothing even encoded on the request path (it was minutes: one
        # fsynced rewrite of both files per group); milliseconds, timed by bench/bounded.py's
        # heartbeat-500-groups.
        self.assertEqual((self.writes, encoded), ([], []))
        self.reactor.advance(0)  # the persister's turn (this reactor has no threads: it writes here)
        self.assertEqual(sorted(self.writes), ["subscriptionGroup.json", "topics.json"])
        # each file encoded once: every group and topic once, not once per new group
        self.assertEqual(encoded.count("SubscriptionGroupConfig"),
                         len(self.controller.subscription_group_manager.subscription_group_table))
        c = self.controller
        groups = ConfigFile(c.subscription_group_manager.file.path).load()["subscriptionGroupTable"]
        topics = ConfigFile(c.topic_config_manager.file.path).load()
        self.assertEqual(len([g for g in groups if g.startswith("new-")]), 500)
        self.assertEqual(len([g for g in groups if g.startswith("old-")]), self.GROUPS)
        self.assertEqual(len([t for t in topics["topicConfigTable"] if t.startswith("%RETRY%new-")]), 500)
        self.assertEqual(topics["dataVersion"], c.topic_config_manager.data_version.to_json())
        self.reactor.advance(0)
        self.assertEqual(len(self.writes), 2)

    def test_clean_stop_writes_what_is_dirty(self) -> None:
        """Nothing acknowledged is lost on a clean stop, even before the persister's turn."""
        table = processor_table(self.controller)
        self.assertEqual(table.dispatch(Ctx(), heartbeat("c1", (), {"late": {"T": "*"}})).code,
                         ResponseCode.SUCCESS)
        self.controller.shutdown()
        groups = ConfigFile(self.controller.subscription_group_manager.file.path).load()
        self.assertIn("late", groups["subscriptionGroupTable"])
        self.assertIn("%RETRY%late", ConfigFile(self.controller.topic_config_manager.file.path).load()[
            "topicConfigTable"])
        self.assertIn("consumerOffset.json", self.writes)
        self.assertIn("delayOffset.json", self.writes)

    def test_admin_create_is_on_disk_next_turn(self) -> None:
        table = processor_table(self.controller)
        from rocketmq_tx.remoting import RemotingCommand
        request = RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, {
            "topic": "Created", "defaultTopic": "TBW102", "readQueueNums": "4", "writeQueueNums": "4",
            "perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false"})
        self.assertEqual(table.dispatch(Ctx(), request).code, ResponseCode.SUCCESS)
        self.assertEqual(self.writes, [])
        self.reactor.advance(0)
        self.assertEqual(self.writes, ["topics.json"])
        self.assertIn("Created", ConfigFile(self.controller.topic_config_manager.file.path).load()[
            "topicConfigTable"])
