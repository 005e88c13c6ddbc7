"""
Message trace from our Python clients, read by the official tools:

* our encoder writes what the official 4.9.8 ``TraceDataEncoder`` writes: the Java program
  that printed the unit tests' vectors (rocketmq_tx/common/test/TraceVectors.java) runs
  again and its output is compared with our encoding of the same contexts;
* our Twisted Producer and PushConsumer (and the BlockingProducer) with
  ``enable_msg_trace=True`` against the official
  Java broker with ``traceTopicEnable=true`` (4.9.7, the newest published 4.9 broker, with
  the 4.9.8 tools; and 5.5.0), and against our rocketmq-standalone with the 4.9.8 tools:
  the official ``mqadmin queryMsgTraceById`` finds each message's Pub record (our
  producer group) and Sub record (our consumer group).
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import javaharness as jh
import pytest
import rocketmq_java as rj
import txbroker as tb
import txharness as txh

from rocketmq_tx.blocking import BlockingProducer
from rocketmq_tx.common import trace
from rocketmq_tx.common.message import Message
from rocketmq_tx.common.test.test_trace import contexts

pytestmark = pytest.mark.compat

HERE = Path(__file__).resolve().parent
VECTORS_JAVA = HERE.parent / "rocketmq_tx" / "common" / "test" / "TraceVectors.java"
COUNT = 3


def test_encoder_matches_java(java_classpath_4):
    """The Java vector program's output equals our encoding of the same contexts."""
    run = subprocess.run(["java", *jh.DEFAULT_JVM_ARGS, "-cp", java_classpath_4, str(VECTORS_JAVA)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-4000:]
    lines = dict(line.split(" ", 1) for line in run.stdout.splitlines() if line.strip())
    ours = contexts()
    assert set(lines) == set(ours)
    for name, ctx in ours.items():
        encoded = trace.encode(ctx)
        hex_text, keys = lines[name].split(" ")
        assert encoded.data.encode("utf-8").hex() == hex_text, name
        assert sorted(set(encoded.keys)) == keys.split(","), name


@pytest.fixture(scope="module", params=["4.9.x", "5.5.0", "tx"])
def java(request, tmp_path_factory):
    """(servers with ``.namesrv_addr`` and ``.home``, mqadmin's classpath): Java's, or our standalone."""
    store = tmp_path_factory.mktemp("trace") / "store"
    classpath = request.getfixturevalue("java_classpath_5" if request.param == "5.5.0" else "java_classpath_4")
    if request.param == "tx":
        server = tb.start_standalone(store, name="tx-trace-client", extra={"traceTopicEnable": "true"})
        try:
            yield SimpleNamespace(namesrv_addr=server.namesrv, home=rj.JavaHome("trace-client")), classpath
        finally:
            server.stop()
        return
    with rj.java_cluster(classpath, store, extra={"traceTopicEnable": "true"}, graceful=False) as cluster:
        yield cluster, classpath


def test_our_traces_found_by_mqadmin(java):
    """mqadmin finds the Pub and Sub records of each message our Twisted clients traced."""
    cluster, classpath = java
    topic = "TxTraceTopic"
    run = txh.run_script("txtrace.py", cluster.namesrv_addr, topic, str(COUNT), "60", timeout=180)
    assert run.returncode == 0, f"txtrace exited {run.returncode}:\n{run.stdout[-2000:]}\n{run.stderr[-4000:]}"
    lines = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    ids = [line["msgId"] for line in lines if "msgId" in line]
    assert sorted(line["consumed"] for line in lines if "consumed" in line) == sorted(ids)
    for msg_id in ids:
        trace_shows(cluster, classpath, msg_id, r"^Pub\s+TX_TRACE_PG\s", r"^Sub\s+TX_TRACE_CG\s")


def test_blocking_producer_traces_found_by_mqadmin(java):
    """mqadmin finds the Pub record the blocking producer sent at close()."""
    cluster, classpath = java
    with BlockingProducer("TX_TRACE_BPG", cluster.namesrv_addr, send_timeout=10.0, enable_msg_trace=True) as producer:
        result = producer.send(Message("TxTraceBlocking", b"blocking-trace"))
    trace_shows(cluster, classpath, result.msg_id, r"^Pub\s+TX_TRACE_BPG\s")


def trace_shows(cluster, classpath, msg_id, *patterns):  # type: ignore[no-untyped-def]
    """mqadmin queryMsgTraceById for *msg_id* prints lines matching every pattern (within 30 s)."""
    deadline = time.monotonic() + 30
    while True:  # the broker indexes the trace messages' keys asynchronously
        out = "\n".join(rj.mqadmin(classpath, ["queryMsgTraceById", "-n", cluster.namesrv_addr, "-i", msg_id],
                                   cluster.home))
        found = all(re.search(p, out, re.M) for p in patterns)
        if found or time.monotonic() > deadline:
            break
    assert found, out
