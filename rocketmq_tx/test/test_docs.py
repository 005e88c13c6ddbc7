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

    def test_server_column_matches_processor_tables(self) -> None:
        """The rocketmq-tx column says "name server" / "broker" exactly for the codes each answers."""
        import tempfile

        from twisted.internet.testing import MemoryReactorClock

        from rocketmq_tx.broker.config import BrokerSettings
        from rocketmq_tx.broker.controller import BrokerController
        from rocketmq_tx.broker.processors import processor_table as broker_table
        from rocketmq_tx.namesrv.config import NamesrvSettings
        from rocketmq_tx.namesrv.controller import NamesrvController
        from rocketmq_tx.namesrv.processors import processor_table as namesrv_table

        settings = BrokerSettings()
        with tempfile.TemporaryDirectory() as root:
            settings.update_from_properties({"storePathRootDir": root, "brokerIP1": "127.0.0.1"})
            table = broker_table(BrokerController(settings, MemoryReactorClock()))
        broker = set(table.codes()) | set(table.default.handlers)
        namesrv = set(namesrv_table(NamesrvController(NamesrvSettings())).codes())
        text = (DOCS / "compatibility.md").read_text(encoding="utf-8")
        for line in re.findall(r"^\| \d+ \| [A-Z0-9_]+ \|.*$", text, re.M):
            cells = [c.strip() for c in line.split("|")]
            code, column = int(cells[1]), cells[6]
            self.assertEqual("broker: supported" in column, code in broker, line)
            self.assertEqual(column.startswith("name server: supported"), code in namesrv, line)
