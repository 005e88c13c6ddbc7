"""``twistd rocketmq-broker`` and ``twistd rocketmq-standalone`` options: files, -n, -p, --set, refusals."""

from __future__ import annotations

import os
import subprocess

from twisted.internet.testing import MemoryReactorClock
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.broker import standalone, tap
from rocketmq_tx.broker.service import BrokerService
from rocketmq_tx.store.config import FlushDiskType
from rocketmq_tx.testing import twistd_argv

SAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "conf", "broker.conf")


class BrokerOptionsTests(SynchronousTestCase):
    """Parsing happens before anything binds."""

    def write(self, text: str) -> str:
        path = self.mktemp()
        with open(path, "w") as f:
            f.write(text)
        return path

    def parse(self, *args: str, options: type = tap.Options):  # type: ignore[no-untyped-def]
        opts = options()
        opts.parseOptions(list(args))
        return opts

    def test_config_file(self) -> None:
        """-c reads broker, server and store keys (Java properties syntax); unknown keys are collected."""
        path = self.write("# a Java broker.conf\nbrokerClusterName = c1\nbrokerName : broker-x\nlistenPort=20911\n"
                          "flushDiskType=SYNC_FLUSH\nstorePathRootDir=/data/a\\\\b\nhaListenPort=10912\n"
                          "someFutureKey=1\n")
        opts = self.parse("-c", path)
        s = opts.settings
        self.assertEqual((s["brokerClusterName"], s["brokerName"], s["listenPort"]), ("c1", "broker-x", 20911))
        cfg = s.message_store_config()
        self.assertEqual((cfg.flush_disk_type, cfg.store_path_root_dir), (FlushDiskType.SYNC_FLUSH, "/data/a\\b"))
        self.assertEqual(opts.unknown, ["someFutureKey"])

    def test_namesrv_option_and_set(self) -> None:
        """-n sets namesrvAddr (over the file's); --set overrides the file, store keys too."""
        path = self.write("namesrvAddr=file:9876\nlistenPort=30001\ndeleteWhen=01\n")
        opts = self.parse("-c", path, "-n", "a:9876;b:9876", "--set", "listenPort=30002", "--set", "deleteWhen=02;03")
        self.assertEqual((opts.settings["namesrvAddr"], opts.settings["listenPort"]), ("a:9876;b:9876", 30002))
        self.assertEqual(opts.settings.message_store_config().delete_hours(), {2, 3})
        self.assertEqual(self.parse("--namesrvAddr", "x:1").settings["namesrvAddr"], "x:1")

    def test_sample_configuration(self) -> None:
        opts = self.parse("-c", SAMPLE)
        self.assertEqual(opts.unknown, [])
        self.assertEqual((opts.settings["brokerName"], opts.settings["listenPort"]), ("broker-a", 10911))

    def test_refusals(self) -> None:
        """A bad value, file or unsupported role: one line "rocketmq-broker: ..." and exit status 1."""
        cases = [
            ["--set", "listenPort=abc"], ["--set", "listenPort=70000"], ["--set", "flushDiskType=X"],
            ["--set", "brokerRole=SLAVE"], ["--set", "brokerId=1"], ["--set", "brokerName="],
            ["--set", "autoCreateTopicEnable=yes"], ["--set", "registerNameServerPeriod=0"],
            ["--set", "defaultTopicQueueNums=-1"], ["--set", "messageDelayLevel=1x"], ["--set", "deleteWhen=4am"],
            ["--set", "mappedFileSizeCommitLog=0"], ["-c", "/nonexistent/broker.conf"],
            ["--set", "listenPort=1"], ["--set", "topicQueueNumsMax=0"],
        ]
        for args in cases:
            with self.subTest(args=args):
                e = self.assertRaises(SystemExit, tap.Options().parseOptions, args)
                self.assertIsInstance(e.code, str)  # a str code: printed to stderr, exit status 1
                self.assertTrue(str(e.code).startswith("rocketmq-broker: "), e.code)
                self.assertNotIn("\n", str(e.code))

    def test_refusal_names_the_key(self) -> None:
        e = self.assertRaises(SystemExit, tap.Options().parseOptions, ["--set", "flushDiskType=X"])
        self.assertIn("flushDiskType", str(e.code))
        e = self.assertRaises(SystemExit, tap.Options().parseOptions, ["--set", "brokerId=1"])
        self.assertIn("brokerId", str(e.code))

    def test_bad_set_syntax(self) -> None:
        from twisted.python.usage import UsageError
        self.assertRaises(UsageError, tap.Options().parseOptions, ["--set", "noequals"])

    def test_make_service(self) -> None:
        opts = self.parse("--set", f"storePathRootDir={self.mktemp()}", "--set", "brokerIP1=127.0.0.1")
        service = tap.makeService(opts, MemoryReactorClock())
        self.assertIsInstance(service, BrokerService)
        self.assertEqual(service.controller.broker_addr, "127.0.0.1:10911")

    def test_print_config_in_process(self) -> None:
        """-p prints key=value lines (store keys included) and exits 0."""
        import contextlib
        import io
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            e = self.assertRaises(SystemExit, tap.Options().parseOptions, ["-p", "--set", "flushDiskType=SYNC_FLUSH"])
        self.assertEqual(e.code, 0)
        lines = out.getvalue().splitlines()
        self.assertIn("flushDiskType=SYNC_FLUSH", lines)
        self.assertIn("brokerClusterName=DefaultCluster", lines)
        self.assertIn("mappedFileSizeCommitLog=1073741824", lines)


class StandaloneOptionsTests(SynchronousTestCase):
    def test_defaults_and_keys(self) -> None:
        opts = standalone.Options()
        opts.parseOptions(["--set", "namesrvPort=19876", "--set", "listenPort=20911"])
        s = opts.settings
        self.assertEqual((s["namesrvPort"], s["namesrvBindAddress"], s["listenPort"]), (19876, "0.0.0.0", 20911))

    def test_sample_configuration(self) -> None:
        opts = standalone.Options()
        opts.parseOptions(["-c", SAMPLE])
        self.assertEqual(opts.unknown, [])

    def test_refusals(self) -> None:
        for args in (["--set", "namesrvPort=70000"], ["--set", "namesrvPort=x"], ["--set", "brokerId=2"],
                     ["--set", "brokerRole=SLAVE"], ["--set", "listenPort=-1"]):
            with self.subTest(args=args):
                e = self.assertRaises(SystemExit, standalone.Options().parseOptions, args)
                self.assertTrue(str(e.code).startswith("rocketmq-standalone: "), e.code)
                self.assertNotIn("\n", str(e.code))

    def test_make_service(self) -> None:
        """A name server and a broker; the broker's name-server list is filled in at start."""
        opts = standalone.Options()
        opts.parseOptions(["--set", f"storePathRootDir={self.mktemp()}", "--set", "brokerIP1=127.0.0.1",
                           "--set", "namesrvPort=19876"])
        service = standalone.makeService(opts, MemoryReactorClock())
        self.assertIsInstance(service.broker, BrokerService)
        self.assertEqual(service.namesrv.settings["listenPort"], 19876)


class TwistdTests(SynchronousTestCase):
    def test_print_config(self) -> None:
        """A real ``twistd -n rocketmq-broker -p``: exit 0, every key printed, nothing bound or written."""
        twistd = twistd_argv()
        root = self.mktemp()
        out = subprocess.run([*twistd, "-n", "--pidfile=", "rocketmq-broker", "-p", "-c", SAMPLE,
                              "--set", f"storePathRootDir={root}", "--set", "flushDiskType=SYNC_FLUSH"],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = out.stdout.splitlines()
        self.assertIn("brokerName=broker-a", lines)
        self.assertIn("flushDiskType=SYNC_FLUSH", lines)
        self.assertIn(f"storePathRootDir={root}", lines)
        self.assertIn("listenPort=10911", lines)
        self.assertFalse(os.path.exists(root))

    def test_refusal_exit_status(self) -> None:
        twistd = twistd_argv()
        out = subprocess.run([*twistd, "-n", "--pidfile=", "rocketmq-broker", "--set", "brokerRole=SLAVE"],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 1)
        self.assertEqual(out.stderr.strip().splitlines()[-1][:len("rocketmq-broker: brokerId")],
                         "rocketmq-broker: brokerId")
