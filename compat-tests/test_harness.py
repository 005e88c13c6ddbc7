"""Smoke test of the Java interop harness itself: official Java client against the
official Java server, both RocketMQ versions, both header serializations. Also checks
that the committed byte vectors are exactly what VectorCapture produces."""

from __future__ import annotations

import json
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
