"""
rocketmq_tx's SimpleConsumer (Twisted and blocking) over POP against our rocketmq-standalone
and the Java 5.5.0 broker in the same run, one scenario (``txsimple.py``), same outcome:

* three messages received (reconsume times 0, under the subscribed topic);
* the first acked: never delivered again;
* the second's invisible duration changed to 8 s: a new receipt handle, delivered again no
  earlier than 8 s after the change, reconsume times 1;
* the third left alone: delivered again after the 3 s invisible duration, reconsume times 1,
  under the original topic (from the POP retry topic);
* the redelivered ones acked (the Twisted consumer with ``ack_batch``, BATCH_ACK_MESSAGE):
  nothing more during a quiet spell past every invisible time.

And FIFO (``fifo=True``, POP ``order=true``, blocking client): a queue held while its message
is out, the next ones after the ack, redelivered in order with reconsume times 1 when not
acked, nothing after their acks.

The six runs (three x two brokers) go in parallel, each with its own topic and group.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import rocketmq_java as rj
import txbroker as tb
import txharness as txh

from rocketmq_tx.blocking import BlockingConnection
from rocketmq_tx.remoting import ResponseCode

HERE = Path(__file__).resolve().parent
INVISIBLE_MS, CHANGED_MS = 3000, 8000


@pytest.fixture(scope="module")
def tx_cluster(tmp_path_factory):
    broker = tb.start_standalone(tmp_path_factory.mktemp("simple-tx") / "store", name="tx-simple-broker")
    yield broker.namesrv, broker.addr, broker.name
    broker.stop()
    problems = tb.broker_log_problems(broker.log_text())
    assert not problems, problems


@pytest.fixture(scope="module")
def java_cluster(java_classpath_5, tmp_path_factory):
    with rj.java_cluster(java_classpath_5, tmp_path_factory.mktemp("simple-java") / "store",
                         commitlog_size=64 << 20, graceful=False) as cluster:
        yield cluster.namesrv_addr, f"127.0.0.1:{cluster.port}", "compat-broker"


def test_simple_consumer_same_on_both_brokers(tx_cluster, java_cluster):
    runs = {}
    for label, (namesrv, addr, broker_name) in (("tx", tx_cluster), ("java", java_cluster)):
        for kind in ("twisted", "blocking", "blocking-fifo"):
            name = kind.replace("-", "")  # topic and group names take no '-' in this test
            topic, group = f"Simple{label}{name}", f"SimpleGroup{label}{name}"
            with BlockingConnection(addr) as conn:
                queues = 1 if kind.endswith("fifo") else 2
                assert tb.create_topic(conn, topic, queues).code == ResponseCode.SUCCESS
            tb.wait_topic_route(namesrv, topic, [broker_name])
            runs[(label, kind)] = subprocess.Popen(
                [sys.executable, str(HERE / "txsimple.py"), kind, namesrv, topic, group], stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, text=True, cwd=str(HERE), env=txh.CHILD_ENV)
    outcomes = {}
    for key, proc in runs.items():
        out, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, (key, out[-2000:], err[-4000:])
        outcomes[key] = json.loads(next(line for line in out.splitlines() if line.startswith("{")))
    expected = {"first": [["m0", 0, True], ["m1", 0, True], ["m2", 0, True]], "new_handle": True,
                "again": [["m1", 1, True], ["m2", 1, True]], "late": []}
    fifo = {"first": [["f0", 0]], "held": [], "next": [["f1", 0], ["f2", 0]], "again": [["f1", 1], ["f2", 1]],
            "after": []}
    for label in ("tx", "java"):
        assert outcomes.pop((label, "blocking-fifo")) == fifo, outcomes
    for key, outcome in outcomes.items():
        elapsed = outcome.pop("elapsed")
        assert outcome == expected, (key, outcome, outcomes)
        # not before the invisible time by the broker's clock; Java's checkpoints go through its
        # timer wheel (1 s slots), so it is allowed a slot of slack
        slack = 1000 if key[0] == "java" else 0
        assert elapsed["m2"] >= INVISIBLE_MS - slack, (key, elapsed)
        assert elapsed["m1"] >= CHANGED_MS - slack, (key, elapsed)
