"""The daemons' stdlib logging bridge: records of the Twisted-free packages reach twisted.logger."""

from __future__ import annotations

import logging
import sys

from twisted.application.service import Service
from twisted.logger import LogLevel, formatEventAsClassicLogText
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.daemon import StdlibLogBridge, bridge_stdlib_logging


class _Probe(Service):
    """What a plugin's makeService built: notes whether the bridge was in place by then."""


def makeService(options: object) -> Service:
    # The module _DaemonMaker is pointed at in PluginMakerTests.
    probe = _Probe()
    probe.bridged = any(isinstance(h, StdlibLogBridge) for h in logging.getLogger().handlers)  # type: ignore[attr-defined]
    return probe


class BridgeTests(SynchronousTestCase):
    def setUp(self) -> None:
        # A clean root logger for this test (twistd's bridge may be in place from elsewhere).
        root, ours = logging.getLogger(), logging.getLogger("rocketmq_tx")
        saved_handlers, saved_level = root.handlers[:], ours.level
        root.handlers = [h for h in root.handlers if not isinstance(h, StdlibLogBridge)]
        ours.setLevel(logging.NOTSET)

        def restore() -> None:
            root.handlers = saved_handlers
            ours.setLevel(saved_level)

        self.addCleanup(restore)
        self.events: list[dict] = []

    def test_info_and_warning_reach_the_observer(self) -> None:
        """An INFO and a WARNING of rocketmq_tx.store arrive with their level and namespace, one event each."""
        bridge_stdlib_logging(self.events.append)
        store_log = logging.getLogger("rocketmq_tx.store")
        store_log.info("recovered %d files", 3)
        store_log.warning("disk {almost} full")
        self.assertEqual([(e["log_level"], e["log_namespace"]) for e in self.events],
                         [(LogLevel.info, "rocketmq_tx.store"), (LogLevel.warn, "rocketmq_tx.store")])
        # As twistd's log file writes them: level and source, braces in the text left alone.
        lines = [formatEventAsClassicLogText(e) for e in self.events]
        self.assertIn("[rocketmq_tx.store#info] recovered 3 files\n", lines[0])
        self.assertIn("[rocketmq_tx.store#warn] disk {almost} full\n", lines[1])

    def test_levels(self) -> None:
        """DEBUG stays out by default; ERROR, CRITICAL and a traceback (as text, not a failure) go through."""
        bridge_stdlib_logging(self.events.append)
        log = logging.getLogger("rocketmq_tx.broker.schedule")
        log.debug("not shown")
        log.critical("gone")
        try:
            raise ValueError("bad offset")
        except ValueError:
            log.exception("delivery failed")
        self.assertEqual([e["log_level"] for e in self.events], [LogLevel.critical, LogLevel.error])
        self.assertNotIn("log_failure", self.events[1])
        self.assertIn("ValueError: bad offset", self.events[1]["log_text"])
        self.assertEqual(StdlibLogBridge.level_of(logging.DEBUG), LogLevel.debug)

    def test_installed_once(self) -> None:
        """A second call keeps the first bridge; a level set for rocketmq_tx is kept."""
        logging.getLogger("rocketmq_tx").setLevel(logging.WARNING)
        first = bridge_stdlib_logging(self.events.append)
        self.assertIs(bridge_stdlib_logging(), first)
        self.assertEqual(sum(isinstance(h, StdlibLogBridge) for h in logging.getLogger().handlers), 1)
        logging.getLogger("rocketmq_tx.store").info("below the level set")
        self.assertEqual(self.events, [])


class PluginMakerTests(SynchronousTestCase):
    def test_bridge_before_services(self) -> None:
        """The twistd plugins' makers install the bridge before the service is built."""
        root = logging.getLogger()
        saved = root.handlers[:]
        self.addCleanup(setattr, root, "handlers", saved)
        self.addCleanup(logging.getLogger("rocketmq_tx").setLevel, logging.getLogger("rocketmq_tx").level)
        root.handlers = [h for h in root.handlers if not isinstance(h, StdlibLogBridge)]
        from twisted.plugins.rocketmq_tx_plugins import _DaemonMaker, rocketmq_broker

        self.assertIsInstance(rocketmq_broker, _DaemonMaker)
        maker = _DaemonMaker("probe", sys.modules[__name__].__name__, "a probe", "probe")
        self.assertTrue(maker.makeService(None).bridged)
