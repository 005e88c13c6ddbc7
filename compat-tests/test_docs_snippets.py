"""
Docs that run: every Python snippet of README.md and docs/*.md not marked as needing
something else (``<!-- snippet: needs spark -->``; :mod:`rocketmq_tx.testing.docsnippets`)
runs in a fresh interpreter against a real ``twistd rocketmq-standalone`` and a
``twistd rocketmq-echo``, each a fresh process on free ports, with the addresses the
snippet names (``...:9876``, ``127.0.0.1:9001``) replaced by the test servers'.

A snippet passes when it exits 0 and each ``print`` whose comment shows its output printed
that. Snippets that use names they do not define (``msg``, ``mq``, ``reactor``...: excerpts
of the programs in ``examples/``) get them from ``docsnippets.GIVEN``, run before them in the
same namespace. No Java is needed; these run on a developer machine as they run in CI.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import txbroker
import txharness as txh

from rocketmq_tx.testing import docsnippets as ds

SNIPPETS = ds.find_snippets()
RUN = [s for s in SNIPPETS if not s.needs]
TIMEOUT = 120.0


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    """(name server address, echo server address, working directory) for the snippets."""
    work = tmp_path_factory.mktemp("docs-snippets")
    # docs/client.md's TLS excerpt names conf/tls/certs/ca.pem, relative to where it runs
    certs = work / "conf" / "tls" / "certs"
    subprocess.run([sys.executable, "-m", "rocketmq_tx.certs", str(certs)], check=True, capture_output=True,
                   timeout=60)
    broker = txbroker.start_standalone(work / "store", name="docs-broker")
    echo = None
    try:
        echo = txh.start_twistd("rocketmq-echo", ["--listen", "tcp:0:interface=127.0.0.1"], label="docs-echo")
        yield broker.namesrv, f"127.0.0.1:{echo.port}", work, broker
    finally:
        if echo is not None:
            echo.stop()
        broker.stop()


def run_snippet(snippet: ds.Snippet, namesrv: str, echo: str, work: Path) -> subprocess.CompletedProcess:
    code = ds.substitute(snippet.code, {r"\b[\w.-]+:9876\b": namesrv, r"\b127\.0\.0\.1:9001\b": echo})
    name = snippet.id.replace("/", "_").replace(":", "_")
    snippet_file = work / f"{name}.py"
    given_file = work / f"{name}.given.py"
    snippet_file.write_text(code, encoding="utf-8")
    given_file.write_text(ds.given(snippet.doc, namesrv), encoding="utf-8")
    return subprocess.run([sys.executable, "-m", "rocketmq_tx.testing.docsnippets", str(given_file),
                           str(snippet_file)], capture_output=True, text=True, timeout=TIMEOUT, cwd=work)


@pytest.mark.parametrize("snippet", RUN, ids=[s.id for s in RUN])
def test_snippet_runs(servers, snippet: ds.Snippet) -> None:
    namesrv, echo, work, _ = servers
    out = run_snippet(snippet, namesrv, echo, work)
    report = f"{snippet.id} exited {out.returncode}\n--- stdout\n{out.stdout[-3000:]}\n--- stderr\n{out.stderr[-5000:]}"
    assert out.returncode == 0, report
    prints = ds.expected_prints(snippet.code)
    if any(expected is not None for _, expected in prints):
        printed = out.stdout.splitlines()
        assert len(printed) == len(prints), f"one line per print() expected\n{report}"
        for (line, expected), got in zip(prints, printed):
            if expected is not None:
                assert ds.output_matches(expected, got), f"{snippet.id}, line {line}: printed {got!r}, " \
                                                         f"the doc says {expected!r}"


def test_server_logged_no_errors(servers) -> None:
    """After the snippets (this test runs last in the module), the server's log holds no traceback."""
    broker = servers[3]
    assert txbroker.broker_log_problems(broker.log_text()) == []
