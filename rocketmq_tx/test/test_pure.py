"""
The two configurations the unit suite runs in (``.ci/run``): with the C accelerator, and
with ``ROCKETMQ_TX_PURE=1`` on its pure-Python twins (``tox -e pure``). Each run checks it
is the configuration it claims to be, so neither can pass as the other.
"""

from __future__ import annotations

import os
import subprocess
import sys
from unittest import SkipTest

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.common import messagecodec, native
from rocketmq_tx.testing import in_ci

PROBE = ("from rocketmq_tx.common import messagecodec, native; "
         "print(native.speedups is None, native.ACCELERATED, "
         "messagecodec.java_string_hash is messagecodec._java_string_hash)")


class PureConfigurationTests(SynchronousTestCase):
    def test_this_run(self) -> None:
        if os.environ.get("ROCKETMQ_TX_PURE"):
            self.assertIsNone(native.speedups)
            self.assertFalse(native.ACCELERATED)
            self.assertIs(messagecodec.java_string_hash, messagecodec._java_string_hash)
        elif native.speedups is not None:
            self.assertTrue(native.ACCELERATED)
            self.assertIsNot(messagecodec.java_string_hash, messagecodec._java_string_hash)
        elif in_ci():
            self.fail("rocketmq_tx._speedups is not built: the C accelerator must be there in CI")
        else:
            raise SkipTest("rocketmq_tx._speedups is not built (no C compiler at install time?)")

    def test_pure_selects_the_twins(self) -> None:
        """Whatever this run is, ROCKETMQ_TX_PURE=1 in a fresh interpreter selects the twins."""
        env = {**os.environ, "ROCKETMQ_TX_PURE": "1"}
        out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=60)
        self.assertEqual((out.returncode, out.stdout.split()), (0, ["True", "False", "True"]), out.stderr)
