# -*- test-case-name: rocketmq_tx.test.test_docs -*-
"""
The Python snippets of README.md and docs/*.md, as tests see them.

Every fenced ``python`` block of those files is a snippet. The tests hold them to what they
say: ``rocketmq_tx/test/test_docs.py`` checks that each one compiles and that what it imports
from ``rocketmq_tx`` exists; ``compat-tests/test_docs_snippets.py`` runs each one, in a fresh
interpreter, against a real ``twistd rocketmq-standalone`` (and ``rocketmq-echo``), with the
addresses the snippet names replaced by the test servers'.

Conventions in the Markdown:

* ``<!-- snippet: needs spark -->`` on the line before the fence: the snippet is not run,
  because it needs what is named (:data:`NEEDS`). Everything not marked is run.
* A snippet may use ``await`` / ``async with`` at its top level: it is then run as a
  coroutine on the reactor (``task.react``), with ``reactor`` in its namespace.
* A comment after a ``print(...)`` line is the line it prints, unless the comment starts
  with a lower-case letter (then it is prose). A trailing ``...`` makes it a prefix.
"""

from __future__ import annotations

import ast
import inspect
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import CodeType

__all__ = ["NEEDS", "GIVEN", "ROOT", "Snippet", "find_snippets", "expected_prints", "bound_names", "free_names",
           "given", "output_matches", "rocketmq_imports", "run_file", "substitute"]

#: the repository: README.md and docs/
ROOT = Path(__file__).resolve().parents[2]

#: what a snippet may be marked as needing, and why that keeps it from running
NEEDS = {
    "spark": "needs Spark (pyspark and a JVM); compat-tests/test_spark.py covers the data source",
    "java": "needs a Java peer (an official Java broker or client)",
}

_FENCE = re.compile(r"^```python\s*$")
_MARK = re.compile(r"^<!--\s*snippet:\s*needs\s+([\w, ]+?)\s*-->\s*$")


@dataclass(frozen=True)
class Snippet:
    #: the Markdown file, relative to :data:`ROOT`
    doc: str
    #: the line of the opening fence (1-based)
    line: int
    code: str
    #: what the snippet's marker says it needs; empty: it is run
    needs: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}"


def documents(root: Path = ROOT) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def find_snippets(root: Path = ROOT, docs: Iterable[Path] | None = None) -> list[Snippet]:
    """Every ``python`` fence of README.md and docs/*.md, in file order."""
    found = []
    for path in (documents(root) if docs is None else docs):
        lines = path.read_text(encoding="utf-8").splitlines()
        i = 0
        while i < len(lines):
            if not _FENCE.match(lines[i].strip()):
                i += 1
                continue
            indent = len(lines[i]) - len(lines[i].lstrip())
            start = i
            body = []
            i += 1
            while i < len(lines) and lines[i].strip() != "```":
                body.append(lines[i][indent:] if lines[i][:indent].strip() == "" else lines[i])
                i += 1
            needs: tuple[str, ...] = ()
            j = start - 1
            while j >= 0 and not lines[j].strip():
                j -= 1
            if j >= 0:
                m = _MARK.match(lines[j].strip())
                if m:
                    needs = tuple(n.strip() for n in m.group(1).split(",") if n.strip())
            found.append(Snippet(str(path.relative_to(root)), start + 1, "\n".join(body) + "\n", needs))
            i += 1
    return found


def compile_snippet(code: str, name: str = "<snippet>") -> CodeType:
    """Compile with top-level ``await`` allowed; ``co_flags & CO_COROUTINE`` says it awaits."""
    return compile(code, name, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)


def is_coroutine(code: CodeType) -> bool:
    return bool(code.co_flags & inspect.CO_COROUTINE)


def expected_prints(code: str) -> list[tuple[int, str | None]]:
    """
    ``(line, expected)`` for every ``print(`` statement at the start of a line, in order:
    *expected* is the comment after it (a prefix when it ends with ``...``), or ``None`` when
    there is no comment or the comment is prose (starts with a lower-case letter).
    """
    out: list[tuple[int, str | None]] = []
    comments = {}
    import io
    import tokenize
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = tok.string[1:].strip()
    for node in ast.walk(ast.parse(code)):
        if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Name) and node.value.func.id == "print"):
            comment = comments.get(node.end_lineno or node.lineno)
            if comment is not None and (not comment or comment[0].islower()):
                comment = None
            out.append((node.lineno, comment))
    return sorted(out)


def output_matches(expected: str, printed: str) -> bool:
    if expected.endswith("..."):
        return printed.startswith(expected[:-3].rstrip())
    return printed == expected


def substitute(code: str, addresses: Mapping[str, str]) -> str:
    """Replace each address the snippet names (a regex key, e.g. ``[\\w.-]+:9876``) with a test server's."""
    for pattern, replacement in addresses.items():
        code = re.sub(pattern, _literal(replacement), code)
    return code


def _literal(text: str) -> Callable[[re.Match[str]], str]:
    """A replacement for ``re.sub`` that inserts *text* as is (no group references)."""
    return lambda _m: text


def rocketmq_imports(code: str) -> list[tuple[int, str, str | None]]:
    """``(line, module, name or None)`` for each import from ``rocketmq_tx``."""
    out: list[tuple[int, str, str | None]] = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "rocketmq_tx":
            out.extend((node.lineno, node.module, alias.name) for alias in node.names)
        elif isinstance(node, ast.Import):
            out.extend((node.lineno, alias.name, None) for alias in node.names
                       if alias.name.split(".")[0] == "rocketmq_tx")
    return out


def free_names(code: str) -> set[str]:
    """Names *code* reads without binding them (builtins excluded); approximate, for excerpts."""
    import builtins
    loaded, bound = _names(code)
    return loaded - bound - set(dir(builtins))


def bound_names(code: str) -> set[str]:
    """Names *code* binds (assigns, imports, defines)."""
    return _names(code)[1]


def _names(code: str) -> tuple[set[str], set[str]]:
    tree = ast.parse(code)
    loaded: set[str] = set()
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    return loaded, bound


#: Names the docs' excerpts (of the programs in ``examples/``) use without defining them, by
#: document: plain code run before each of its snippets, in the same namespace, with
#: ``NAMESRV`` the test name server's address. Messages go to ``OrderTopic``.
GIVEN = {
    "docs/client.md": '''
import time
from twisted.internet import reactor
from rocketmq_tx.blocking import BlockingAdmin as _Admin
from rocketmq_tx.blocking import BlockingProducer as _Producer, BlockingPullClient as _PullClient
from rocketmq_tx.client import PushConsumer as _PushConsumer
from rocketmq_tx.common.message import Message, MessageQueue as _MQ
from rocketmq_tx.common.route import TopicConfig as _TopicConfig

msg = Message("OrderTopic", b"payload", properties={"TAGS": "TagA", "KEYS": "order-1001"})
m1, m2, m3 = (Message("OrderTopic", b"m%d" % i, properties={"TAGS": "TagA"}) for i in (1, 2, 3))
with _Admin(NAMESRV) as _admin:                           # the topic as the admin excerpt makes it
    _admin.create_topic_in_cluster("DefaultCluster", _TopicConfig("OrderTopic", 8, 8))
with _Producer("docs-given", NAMESRV) as _producer:      # the topic exists, with one message
    _sent = _producer.send(msg)
mq = _sent.message_queue
offset_msg_id, msg_id = _sent.offset_msg_id, _sent.msg_id
timestamp_ms = ts = int(time.time() * 1000) - 60_000
# the group exists, with an offset, and stays online (its connection stays open) for the
# admin excerpt's examine_consumer_connection_info
_group = _PullClient("my-group", NAMESRV)
_group.send_heartbeat(["OrderTopic"])                     # (the broker creates %RETRY%my-group)
for _q in range(8):                                      # an offset on every queue: reset_offset_new
    _group.commit_offset(_MQ("OrderTopic", mq.broker_name, _q), 0)   # needs one, as Java's does
_deadline = time.monotonic() + 30
while True:                                               # until the name server has its route
    try:
        _group.client.route("%RETRY%my-group", refresh=True)
        break
    except Exception:
        if time.monotonic() > _deadline:
            raise
        time.sleep(0.05)                                  # polling remote state, bounded
consumer = _PushConsumer("my-group", NAMESRV, reactor)   # for the orderly excerpt


def on_success(result):
    print("send_callback:", result.send_status)


def on_exception(error):
    print("send_callback failed:", error)
''',
}


def given(doc: str, namesrv: str) -> str:
    """The code run before each snippet of *doc*."""
    return f"NAMESRV = {namesrv!r}\n" + GIVEN.get(doc, "")


def run_file(given_path: str, snippet_path: str) -> None:
    """
    Run *given_path* (plain code: names the snippet uses without defining them) and then the
    snippet in one namespace, as ``__main__``; a snippet that awaits runs on the reactor.
    """
    namespace: dict[str, object] = {"__name__": "__main__"}
    with open(given_path, encoding="utf-8") as f:
        exec(compile(f.read(), given_path, "exec"), namespace)
    with open(snippet_path, encoding="utf-8") as f:
        code = compile_snippet(f.read(), snippet_path)
    if not is_coroutine(code):
        exec(code, namespace)
        return
    from twisted.internet import defer, task

    async def main(reactor: object) -> None:
        namespace["reactor"] = reactor
        await eval(code, namespace)

    task.react(lambda reactor: defer.ensureDeferred(main(reactor)))


if __name__ == "__main__":  # python -m rocketmq_tx.testing.docsnippets GIVEN SNIPPET
    run_file(sys.argv[1], sys.argv[2])
