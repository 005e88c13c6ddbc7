"""Documentation that mirrors code stays complete."""

from __future__ import annotations

import re
from pathlib import Path

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.remoting import RequestCode

DOCS = Path(__file__).resolve().parents[2] / "docs"


class CompatibilityTableTests(SynchronousTestCase):
    """docs/compatibility.md lists every request code we declare, with the right number."""

    def test_every_request_code_listed(self) -> None:
        text = (DOCS / "compatibility.md").read_text(encoding="utf-8")
        rows = dict((name, int(num)) for num, name in re.findall(r"^\| (\d+) \| ([A-Z0-9_]+) \|", text, re.M))
        self.assertEqual(rows, {code.name: code.value for code in RequestCode})
