"""``twistd rocketmq-namesrv`` options: Java properties, -p, overrides and refusals."""

from __future__ import annotations

import os
import subprocess

from twisted.internet.testing import MemoryReactorClock
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.namesrv import tap
from rocketmq_tx.namesrv.service import NamesrvService
from rocketmq_tx.testing import twistd_argv


class OptionsTests(SynchronousTestCase):
    """Parsing happens before anything binds."""

    def write(self, text: str) -> str:
        path = self.mktemp()
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_java_properties_file(self) -> None:
        """Java's keys and syntax (comments, ':' separators, escapes); unknown keys are collected for a warning."""
        path = self.write("# a Java namesrv.properties\nlistenPort : 9877\norderMessageEnable=true\n"
                          "kvConfigPath=/tmp/a\\\\b.json\nrocketmqHome=/opt/rmq\nsomeFutureKey=1\n")
        options = tap.Options()
        options.parseOptions(["-c", path, "--set", "listenPort=0"])
        settings = options.settings
        self.assertEqual((settings["listenPort"], settings["orderMessageEnable"], settings["kvConfigPath"]),
                         (0, True, "/tmp/a\\b.json"))
        self.assertEqual(options.unknown, ["someFutureKey"])

    def test_sample_configuration(self) -> None:
        """conf/namesrv.properties parses and every key in it is known."""
        sample = os.path.join(os.path.dirname(__file__), "..", "..", "..", "conf", "namesrv.properties")
        options = tap.Options()
        options.parseOptions(["-c", sample])
        self.assertEqual(options.unknown, [])
        self.assertEqual(options.settings["listenPort"], 9876)

    def test_invalid_values_refused(self) -> None:
        """A bad value or file is one line and exit status 1."""
        for args in (["--set", "listenPort=abc"], ["--set", "listenPort=70000"], ["-c", "/nonexistent/file"],
                     ["--set", "orderMessageEnable=yes"], ["--set", "brokerChannelExpiredTime=0"]):
            with self.subTest(args=args):
                e = self.assertRaises(SystemExit, tap.Options().parseOptions, args)
                self.assertTrue(str(e.code).startswith("rocketmq-namesrv: "), e.code)
                self.assertNotIn("\n", str(e.code))

    def test_make_service(self) -> None:
        """makeService builds the service tree on the given reactor."""
        options = tap.Options()
        options.parseOptions(["--set", "listenPort=0"])
        service = tap.makeService(options, MemoryReactorClock())
        self.assertIsInstance(service, NamesrvService)

    def test_print_config(self) -> None:
        """-p prints every key=value and exits 0 without binding (a real twistd run)."""
        twistd = twistd_argv()
        out = subprocess.run([*twistd, "-n", "--pidfile=", "rocketmq-namesrv", "-p", "--set", "listenPort=1"],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = out.stdout.splitlines()
        self.assertIn("listenPort=1", lines)
        self.assertIn("kvConfigPath=" + os.path.join(os.path.expanduser("~"), "namesrv", "kvConfig.json"), lines)
