"""Smoke test of the Java interop harness itself: official Java client against the
official Java server, both RocketMQ versions, both header serializations. Also checks
that the committed byte vectors are exactly what VectorCapture produces."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import javaharness as jh
import pytest

pytestmark = pytest.mark.compat

CASES = {"sync", "async", "oneway", "big", "unknown", "many"}
# NettyRemotingAbstract.processRequestCommand's text for an unregistered request code
# (the same in 4.9.8 and 5.5.0, leading space included).
UNKNOWN_REMARK = " request type 7777 not supported"


def test_java_client_against_java_echo_server(java_peer, java_echo_server):
    version, classpath = java_peer
    host, port = java_echo_server
    serializations = ["JSON", "ROCKETMQ"]
    # One JVM runs both serializations one after the other: cheaper than two JVMs, and
    # two drivers at once would mix their oneways in the server-wide sink counter.
    lines = jh.run_java(classpath, "ClientDriver", [f"{host}:{port}", ",".join(serializations)], timeout=120)
    by_serialize: dict[str, dict[str, dict]] = {s: {} for s in serializations}
    for line in lines:
        r = json.loads(line)
        by_serialize[r["serialize"]][r["case"]] = r
    for serialize, results in by_serialize.items():
        assert set(results) == CASES, (version, serialize, lines)
        for name, r in results.items():
            assert r["ok"] is True, (version, serialize, name, r)
        unknown = results["unknown"]["detail"]
        assert unknown["code"] == 3, (version, serialize, unknown)
        assert unknown["remark"] == UNKNOWN_REMARK, (version, serialize, unknown)
        assert results["oneway"]["detail"]["delta"] == 5, (version, serialize, results["oneway"])
        # Requests with ROCKETMQ headers lose empty-string ext values; JSON keeps them.
        expected_empty = "empty-string" if serialize == "JSON" else "absent"
        assert results["sync"]["detail"]["empty_value"] == expected_empty, results["sync"]
        # 4.9.8 answers in the request's serialization; 5.5.0 always in its default (JSON).
        expected_response = serialize if version == "4.9.8" else "JSON"
        assert results["sync"]["detail"]["response_serialize"] == expected_response, results["sync"]
        # REQUEST_CODE_NOT_SUPPORTED is always sent with a JSON header.
        assert unknown["response_serialize"] == "JSON", unknown


def test_vectors_are_reproducible(java_classpath_4, tmp_path):
    """VectorCapture (built against 4.9.8) regenerates the committed vectors byte for byte."""
    lines = jh.run_java(java_classpath_4, "VectorCapture", [str(tmp_path)], timeout=120)
    assert lines[-1].startswith("DONE "), lines
    written = sorted(line.split(" ", 1)[1] for line in lines if line.startswith("WROTE "))
    assert written, lines
    committed = jh.VECTORS_DIR
    for name in written:
        assert (committed / name).is_file(), f"vector {name} is not committed in {committed}"
        assert (tmp_path / name).read_bytes() == (committed / name).read_bytes(), f"{name} differs"
    for sidecar in (n for n in written if n.endswith(".json")):
        json.loads(Path(committed / sidecar).read_text())


def _sleeper(tmp_path: Path, stdin_eof_exits: bool) -> jh.JavaProcess:
    """A process that ignores stdin, as the official servers do, wrapped like a Java program."""
    err = tmp_path / "sleeper.stderr"
    err.write_text("log")
    proc = subprocess.Popen(["sleep", "60"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    return jh.JavaProcess(proc, ["sleep", "60"], err, stdin_eof_exits=stdin_eof_exits)


def test_server_stop_and_discard_do_not_wait(tmp_path: Path) -> None:
    """stop() of a server that ignores stdin sends SIGTERM at once (no 2 s stdin wait); discard()
    kills at once; either way a process that was running leaves no stderr log behind."""
    server = _sleeper(tmp_path, stdin_eof_exits=False)
    started = time.monotonic()
    assert server.stop() == -signal.SIGTERM
    assert time.monotonic() - started < 1.5
    assert not server.stderr_path.exists()
    killed = _sleeper(tmp_path, stdin_eof_exits=False)
    assert killed.discard() == -signal.SIGKILL
    assert not killed.stderr_path.exists()
    assert killed.discard() == -signal.SIGKILL  # idempotent
    harness = _sleeper(tmp_path, stdin_eof_exits=True)  # stop() gives it 2 s to end on stdin EOF
    started = time.monotonic()
    assert harness.stop() == -signal.SIGTERM
    assert time.monotonic() - started >= 2.0


def test_stop_together_runs_every_stop() -> None:
    """Every stop runs even when another raises; the error is raised after all of them."""
    done: list[str] = []

    def failing() -> None:
        done.append("failing")
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        jh.stop_together(failing, lambda: done.append("other"))
    assert sorted(done) == ["failing", "other"]
    jh.stop_together()  # nothing to stop
