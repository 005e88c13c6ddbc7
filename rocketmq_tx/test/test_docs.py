"""Documentation that mirrors code stays complete, and its Python snippets stay true to the code."""

from __future__ import annotations

import re
from pathlib import Path

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.remoting import RequestCode
from rocketmq_tx.testing import docsnippets

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


class SnippetTests(SynchronousTestCase):
    """
    The Python snippets of README.md and docs/*.md (:mod:`rocketmq_tx.testing.docsnippets`)
    compile, import only what exists, use only names they or their document's given code
    define, and say what they need when they are not run. ``compat-tests/test_docs_snippets.py``
    runs every one not marked against a real standalone server.
    """

    def setUp(self) -> None:
        self.snippets = docsnippets.find_snippets()

    def test_every_python_fence_found(self) -> None:
        fences = sum(len(re.findall(r"^\s*```python\s*$", p.read_text(encoding="utf-8"), re.M))
                     for p in docsnippets.documents())
        self.assertEqual(len(self.snippets), fences)
        self.assertGreaterEqual(fences, 18)

    def test_compile(self) -> None:
        for s in self.snippets:
            try:
                docsnippets.compile_snippet(s.code, s.id)
            except SyntaxError as e:
                self.fail(f"{s.id}: {e}")

    def test_imports_exist(self) -> None:
        """What a snippet imports from rocketmq_tx is there (a moved name fails here, not for a reader)."""
        import importlib
        for s in self.snippets:
            if "spark" in s.needs:
                continue  # rocketmq_tx.spark imports pyspark, an extra
            for line, module, name in docsnippets.rocketmq_imports(s.code):
                where = f"{s.id}, snippet line {line}"
                imported = importlib.import_module(module)
                if name is not None and not hasattr(imported, name):
                    try:
                        importlib.import_module(f"{module}.{name}")
                    except ImportError:
                        self.fail(f"{where}: cannot import {name!r} from {module!r}")

    def test_free_names_are_given(self) -> None:
        for s in self.snippets:
            if s.needs:
                continue
            given = docsnippets.bound_names(docsnippets.given(s.doc, "127.0.0.1:9876"))
            if docsnippets.is_coroutine(docsnippets.compile_snippet(s.code)):
                given.add("reactor")
            self.assertEqual(docsnippets.free_names(s.code) - given, set(), s.id)

    def test_marked_snippets_say_what_they_need(self) -> None:
        """Only Spark (or a Java peer) keeps a snippet from running; a Spark snippet is marked."""
        marked = {}
        for s in self.snippets:
            self.assertLessEqual(set(s.needs), set(docsnippets.NEEDS), s.id)
            uses_spark = "pyspark" in s.code or "spark." in s.code or "df." in s.code
            self.assertEqual("spark" in s.needs, uses_spark, s.id)
            if s.needs:
                marked[s.id] = s.needs
        self.assertEqual(sorted(set(marked.values())), [("spark",)])
        self.assertEqual(len(marked), 3, marked)

    def test_expected_output_comments(self) -> None:
        """A print's comment is its output unless it is prose; both kinds are read as such."""
        code = 'print(1)  # 1\nprint(2)  # the lag\nprint(3)  # [b"x"] ...\nprint(4)\n'
        self.assertEqual(docsnippets.expected_prints(code),
                         [(1, "1"), (2, None), (3, '[b"x"] ...'), (4, None)])
        self.assertTrue(docsnippets.output_matches('[b"x"] ...', '[b"x"] and more'))
        self.assertFalse(docsnippets.output_matches("1", "10"))
        readme = [s for s in self.snippets if s.doc == "README.md"]
        self.assertGreaterEqual(sum(e is not None for s in readme for _, e in docsnippets.expected_prints(s.code)),
                                5)
