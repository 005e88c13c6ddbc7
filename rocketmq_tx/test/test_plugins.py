"""The installed package exposes its twistd plugins (a flat editable install can hide them)."""

from __future__ import annotations

import os
import subprocess
import tempfile

from twisted.application.service import IServiceMaker
from twisted.plugin import IPlugin, getPlugins
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.testing import twistd_argv

TAPNAMES = {"rocketmq-echo", "rocketmq-namesrv", "rocketmq-broker", "rocketmq-standalone"}


class PluginTests(SynchronousTestCase):
    """twistd finds our service makers."""

    def test_get_plugins(self) -> None:
        """getPlugins sees each tap name, and each provides IPlugin."""
        makers = {m.tapname: m for m in getPlugins(IServiceMaker)}
        for name in TAPNAMES:
            self.assertIn(name, makers)
            self.assertTrue(IPlugin.providedBy(makers[name]))

    def test_twistd_help(self) -> None:
        """``twistd --help`` run from elsewhere (not the checkout) lists the plugins."""
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        twistd = twistd_argv()
        with tempfile.TemporaryDirectory() as cwd:
            out = subprocess.run([*twistd, "--help"], capture_output=True, text=True, cwd=cwd, env=env, timeout=60)
        for name in TAPNAMES:
            self.assertIn(name, out.stdout)
