"""
Interop of the remoting layer, both directions, both header serializations, against
the official Java artifacts (4.9.8 and 5.5.0):

1. the official ``NettyRemotingClient`` (ClientDriver.java) against rocketmq_tx's
   server (``twistd rocketmq-echo`` in a fresh process);
2. rocketmq_tx's Twisted and blocking clients (pydriver.py, a fresh process) against
   the official ``NettyRemotingServer`` (EchoServer.java), and against our own server.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

import javaharness as jh
import pytest
import txharness as txh

pytestmark = pytest.mark.compat

JAVA_CASES = {"sync", "async", "oneway", "big", "unknown", "many"}
PY_CASES = JAVA_CASES | {"oversized"}
UNKNOWN_REMARK = " request type 7777 not supported"
SERIALIZATIONS = ["JSON", "ROCKETMQ"]


@pytest.fixture(scope="session")
def tx_echo_server():
    """rocketmq_tx's echo server, started the way an operator starts a server."""
    proc = txh.start_twistd("rocketmq-echo", ["--listen", "tcp:0:interface=127.0.0.1"])
    try:
        yield f"127.0.0.1:{proc.port}"
    finally:
        assert proc.stop() is not None


def results_of(lines: Iterable[str]) -> dict[str, dict]:
    results = {}
    for line in lines:
        record = json.loads(line)
        results[record["case"]] = record
    return results


def check(results: dict[str, dict], cases: set[str], context: object) -> None:
    assert set(results) == cases, (context, results)
    for name, record in results.items():
        assert record["ok"] is True, (context, name, record)
    unknown = results["unknown"]["detail"]
    assert (unknown["code"], unknown["remark"]) == (3, UNKNOWN_REMARK), (context, unknown)
    assert results["oneway"]["detail"]["delta"] == 5, (context, results["oneway"])


def test_java_client_against_tx_server(java_peer, tx_echo_server):
    """The official client gets from us exactly what it gets from the Java server."""
    version, classpath = java_peer
    # One JVM runs both serializations in turn: concurrent drivers would see each
    # other's oneways in the server-wide sink count.
    lines = jh.run_java(classpath, "ClientDriver", [tx_echo_server, ",".join(SERIALIZATIONS)], timeout=180)
    for serialize in SERIALIZATIONS:
        results = results_of(line for line in lines if json.loads(line)["serialize"] == serialize)
        check(results, JAVA_CASES, (version, serialize))
        # We answer in the request's serialization, as 4.9.4+ servers do.
        assert results["sync"]["detail"]["response_serialize"] == serialize, results["sync"]
        expected_empty = "empty-string" if serialize == "JSON" else "absent"
        assert results["sync"]["detail"]["empty_value"] == expected_empty, results["sync"]


@pytest.mark.parametrize("client", ["twisted", "blocking"])
@pytest.mark.parametrize("serialize", SERIALIZATIONS)
def test_tx_client_against_java_server(java_peer, java_echo_server, client, serialize):
    """Our clients against the official NettyRemotingServer, including its oversized-frame handling."""
    version, _ = java_peer
    host, port = java_echo_server
    results = results_of(txh.run_pydriver(f"{host}:{port}", serialize, client))
    check(results, PY_CASES, (version, client, serialize))


@pytest.mark.parametrize("client", ["twisted", "blocking"])
@pytest.mark.parametrize("serialize", SERIALIZATIONS)
def test_tx_client_against_tx_server(tx_echo_server, client, serialize):
    """The same cases against our server: an oversized frame closes only its own connection."""
    results = results_of(txh.run_pydriver(tx_echo_server, serialize, client))
    check(results, PY_CASES, ("tx", client, serialize))
