"""
Our Python TransactionProducer (blocking in this process, Twisted in its own,
txtransaction.py) against the official Java brokers, which resolve transactions
themselves: 4.9.7 (the newest published 4.9 broker, with the 4.9.8 client and tools jars)
and 5.5.0; and against our rocketmq-standalone:

* commit: the message becomes visible in its topic;
* rollback: it never does;
* UNKNOW: the broker's check (CHECK_TRANSACTION_STATE, every second here) reaches our
  check listener, whose answer (END_TRANSACTION, fromTransactionCheck) commits or rolls
  back.

What consumers see is read back with our blocking pull client: exactly the committed
bodies, once each.
"""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

import pytest
import rocketmq_java as rj
import txbroker as tb
import txharness as txh

from rocketmq_tx.blocking import BlockingPullClient, BlockingTransactionProducer
from rocketmq_tx.common.message import Message, MessageExt
from rocketmq_tx.remoting.transactionapi import LocalTransactionState

pytestmark = pytest.mark.compat

#: Checks every second, of half messages older than three seconds (Java: 60 s and 6 s); 5.x
#: writes the op messages of ended transactions in batches (every 3 s by default), and a
#: check before they are written would ask about transactions already ended.
BROKER_SETTINGS = {"transactionCheckInterval": "1000", "transactionTimeOut": "3000",
                   "transactionOpBatchInterval": "200"}


@pytest.fixture(scope="module", params=["4.9.x", "5.5.0", "tx"])
def java(request, tmp_path_factory):
    """A name server and broker (``.namesrv_addr``): the official ones, or our rocketmq-standalone."""
    store = tmp_path_factory.mktemp("tx-client") / "store"
    if request.param == "tx":
        server = tb.start_standalone(store, name="tx-transaction-client", extra=BROKER_SETTINGS)
        try:
            yield SimpleNamespace(namesrv_addr=server.namesrv)
        finally:
            server.stop()
        return
    classpath = request.getfixturevalue("java_classpath_5" if request.param == "5.5.0" else "java_classpath_4")
    with rj.java_cluster(classpath, store, extra=BROKER_SETTINGS, graceful=False) as cluster:
        yield cluster


def visible(namesrv: str, topic: str, timeout: float = 30.0, expect: int = 0) -> list[MessageExt]:
    """Every message of *topic* a consumer can pull (waiting up to *timeout* for *expect* of them)."""
    deadline = time.monotonic() + timeout
    with BlockingPullClient("TX_CLIENT_READER", namesrv, timeout=10.0) as puller:
        while True:
            found = txh.pull_all(puller, topic)
            if len(found) >= expect or time.monotonic() > deadline:
                return found
            time.sleep(0.2)  # the broker's check runs on its own schedule


def test_blocking_transactions(java):
    """The blocking producer: commit, rollback and both checks; consumers see the two commits."""
    topic, ns = "TxClientBlocking", java.namesrv_addr
    checked: list[tuple[str, str | None]] = []

    def check(msg: MessageExt) -> LocalTransactionState:
        checked.append((msg.body.decode(), msg.transaction_id))
        return (LocalTransactionState.COMMIT_MESSAGE if msg.body.endswith(b"commit")
                else LocalTransactionState.ROLLBACK_MESSAGE)

    with BlockingTransactionProducer("TX_BLOCKING_PG", ns, send_timeout=10.0, check_listener=check,
                                     local_transaction=lambda msg, arg: arg) as producer:
        results = {}
        for name, state in [("commit", LocalTransactionState.COMMIT_MESSAGE),
                            ("rollback", LocalTransactionState.ROLLBACK_MESSAGE),
                            ("check-commit", LocalTransactionState.UNKNOW),
                            ("check-rollback", LocalTransactionState.UNKNOW)]:
            body = f"b-{name}"
            results[body] = producer.send_message_in_transaction(Message(topic, body.encode()), state)
            assert results[body].local_transaction_state is state
        deadline = time.monotonic() + 60
        while len(checked) < 2 and time.monotonic() < deadline:
            producer.serve_checks(1.0)
        assert sorted(checked) == [("b-check-commit", results["b-check-commit"].msg_id),
                                   ("b-check-rollback", results["b-check-rollback"].msg_id)]
    found = visible(ns, topic, expect=2)
    assert sorted(m.body for m in found) == [b"b-check-commit", b"b-commit"]
    for m in found:
        # The committed message is the producer's: its id and group.
        assert m.unique_key == results[m.body.decode()].msg_id
        assert m.get_property("PGROUP") == "TX_BLOCKING_PG"


def test_twisted_transactions(java):
    """The Twisted producer in its own process: the same four transactions, the same outcome."""
    topic, ns = "TxClientTwisted", java.namesrv_addr
    run = txh.run_script("txtransaction.py", ns, topic, "t", "60", timeout=180)
    assert run.returncode == 0, f"txtransaction exited {run.returncode}:\n{run.stdout[-2000:]}\n{run.stderr[-4000:]}"
    lines = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    sends = {line["body"]: line for line in lines if "body" in line}
    assert {b: s["state"] for b, s in sends.items()} == {
        "t-commit": "COMMIT_MESSAGE", "t-rollback": "ROLLBACK_MESSAGE",
        "t-check-commit": "UNKNOW", "t-check-rollback": "UNKNOW"}
    checks = sorted((line["checked"], line["transaction_id"]) for line in lines if "checked" in line)
    assert checks == [("t-check-commit", sends["t-check-commit"]["msg_id"]),
                      ("t-check-rollback", sends["t-check-rollback"]["msg_id"])]
    found = visible(ns, topic, expect=2)
    assert sorted(m.body for m in found) == [b"t-check-commit", b"t-commit"]
    assert {m.unique_key for m in found} == {sends["t-commit"]["msg_id"], sends["t-check-commit"]["msg_id"]}
