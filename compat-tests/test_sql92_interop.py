"""
SQL92 property filters (``enablePropertyFilter=true``, issue #21) against the official Java
peers, in one run:

* the same messages (``MESSAGES``: tags, numbers, strings, doubles, absent and non-numeric
  properties) go to our broker (``rocketmq-standalone``) and to the Java 4.9.7 broker, each
  with ``enablePropertyFilter=true``; the official 4.9.8 and 5.5.0 ``DefaultMQPullConsumer``
  pulls every queue with ``MessageSelector.bySql`` for every expression of ``EXPRESSIONS``
  (``Sql92Peer pull``), and each expression must deliver the identical set of bodies from
  both brokers (and the sets we wrote down by hand, where given);
* our ``BlockingPullClient`` with ``MessageSelector.by_sql`` gets the same sets from both
  brokers, and its ``check_selector`` (CHECK_CLIENT_CONFIG) is answered alike by both; the
  Spark source's ``sql92`` option reads the same sets from both (``local[2]``);
* the official push and lite-pull consumers (4.9.8 and 5.5.0) subscribe with ``bySql``
  (heartbeat subscriptions, CHECK_CLIENT_CONFIG, the broker's filter data) and receive
  exactly the matching messages from both brokers (5.5.0's lite pull only from ours: it
  pulls with LITE_PULL_MESSAGE, which a 4.9 broker does not serve); a 4.9.8 push consumer
  waiting in long polling receives the matching messages sent after it started;
* a malformed expression is refused at subscribe: the push consumer's ``start()`` fails
  with SUBSCRIPTION_PARSE_FAILED (23) from CHECK_CLIENT_CONFIG, from our broker as from
  Java's;
* our broker with ``enablePropertyFilter=false`` refuses with Java's SYSTEM_ERROR remark.

The Java broker is 4.9.7 (rocketmq-broker 4.9.8 was never published, compat-tests/README.md);
it has no 5.x operators (CONTAINS, STARTSWITH, ENDSWITH), so the table keeps to 4.9's grammar,
and ``EXPRESSIONS_5X`` (those operators) is pulled by our ``BlockingPullClient`` from our
broker and from the Java 5.5.0 broker (also ``enablePropertyFilter=true``, the same messages):
identical sets, and the sets written down by hand.
"""

from __future__ import annotations

import concurrent.futures
import os
import sys
import time

import javaharness as jh
import pytest
import rocketmq_java as rj
import txbroker as tb

from rocketmq_tx.blocking import BlockingConnection, BlockingProducer, BlockingPullClient
from rocketmq_tx.common.message import Message
from rocketmq_tx.remoting import ResponseCode, api
from rocketmq_tx.remoting.api import MessageSelector, PullStatus
from rocketmq_tx.remoting.errors import MQBrokerError

pytestmark = pytest.mark.compat

VERSIONS = ["4.9.8", "5.5.0"]
TOPIC = "SqlTopic"
DISABLED = "The broker does not support consumer to filter message by SQL92"

#: body -> properties (TAGS among them); absent keys are absent properties.
MESSAGES: dict[str, dict[str, str]] = {
    "m00": {"TAGS": "TagA", "a": "1", "b": "red"},
    "m01": {"TAGS": "TagB", "a": "5", "b": "blue", "c": "1.5"},
    "m02": {"TAGS": "TagA", "a": "10", "c": "-2.25"},
    "m03": {"TAGS": "TagC", "a": "abc", "b": "red"},
    "m04": {"a": "7", "b": "green"},
    "m05": {"TAGS": "TagB", "b": "red", "c": "3"},
    "m06": {"TAGS": "TagA", "a": "100", "b": "blue", "flag": "true"},
    "m07": {"TAGS": "TagD", "a": "-5", "c": "1000.0"},
    "m08": {"TAGS": "TagA", "a": "2147483648", "b": "Red"},
    "m09": {"TAGS": "TagB", "a": "5.0"},
    "m10": {"TAGS": "TagA", "a": "3", "b": "it's"},
    "m11": {"TAGS": "TagE"},
}

#: expression -> the bodies it selects, where written down by hand (None: compared between
#: the brokers only).
EXPRESSIONS: dict[str, list[str] | None] = {
    "a > 5": ["m02", "m04", "m06"],  # not m08: Java compares a long literal with the property as an int
    "a >= 5 AND a <= 10": None,
    "a BETWEEN 2 AND 7": None,
    "a NOT BETWEEN 2 AND 7": None,
    "a = 5": None,
    "a <> 5": None,
    "a > 2147483647": None,
    "a < 0": ["m07"],
    "b = 'red'": ["m00", "m03", "m05"],
    "b <> 'red'": None,
    "b IN ('red', 'blue')": ["m00", "m01", "m03", "m05", "m06"],
    "b NOT IN ('red', 'blue')": None,
    "b = 'it''s'": ["m10"],
    "b IS NULL": ["m02", "m07", "m09", "m11"],
    "b IS NOT NULL": None,
    "c > 1.0": None,
    "c < 0": [],  # not m02 (-2.25): against a long literal the property must be a long
    "c BETWEEN 1 AND 3": None,
    "TAGS = 'TagA'": ["m00", "m02", "m06", "m08", "m10"],
    "TAGS = 'TagA' AND a > 2": ["m02", "m06", "m10"],
    "TAGS IN ('TagA', 'TagB') AND b = 'red'": ["m00", "m05"],
    "TAGS IS NULL": ["m04"],
    "TAGS <> 'TagA'": None,
    "NOT (a > 5)": None,
    "a > 5 OR b = 'red'": None,
    "(a > 5 OR c > 1) AND TAGS <> 'TagB'": None,
    "flag = 'true'": ["m06"],
    "missing = 1": [],
    "TRUE": sorted(MESSAGES),
    "FALSE": [],
}
#: 5.x's string operators (Java 5.x grammar; 4.9 reads them as identifiers).
EXPRESSIONS_5X: dict[str, list[str] | None] = {
    "b CONTAINS 're'": ["m00", "m03", "m04", "m05"],  # case-sensitive: not m08 (Red)
    "b NOT CONTAINS 'e'": ["m10"],  # an absent property is not selected
    "b STARTSWITH 'r'": ["m00", "m03", "m05"],
    "b ENDSWITH 'e'": ["m01", "m06"],
    "b NOT STARTSWITH 'b'": None,
    "b NOT ENDSWITH 'd'": None,
    "a CONTAINS '1'": ["m00", "m02", "m06", "m08"],  # a property is a string to these operators
    "TAGS STARTSWITH 'Tag' AND a > 5": ["m02", "m06"],
    "b CONTAINS ''": [],  # Java answers FALSE for an empty search string
    "NOT (b CONTAINS 'e') OR a < 0": None,
}

MALFORMED = ["a >", "(a > 1", "a = = 1"]


# --------------------------------------------------------------------------- brokers

def fill(namesrv: str, addr: str, broker_name: str) -> None:
    """The topic (4 queues) and every message of MESSAGES, sent by our producer."""
    with BlockingConnection(addr) as conn:
        response = tb.create_topic(conn, TOPIC)
        assert response.code == ResponseCode.SUCCESS, response
    tb.wait_topic_route(namesrv, TOPIC, [broker_name])
    producer = BlockingProducer("SqlProducer", namesrv)
    try:
        for body, properties in MESSAGES.items():
            producer.send(Message(TOPIC, body.encode(), properties=dict(properties)))
    finally:
        producer.close()


@pytest.fixture(scope="module")
def tx(tmp_path_factory):
    """Our name server + broker with enablePropertyFilter=true, holding MESSAGES."""
    broker = tb.start_standalone(tmp_path_factory.mktemp("sql-tx") / "store", name="tx-sql", cluster="SqlCluster",
                                 extra={"enablePropertyFilter": "true"})
    try:
        fill(broker.namesrv, broker.addr, "tx-sql")
        yield dict(namesrv=broker.namesrv, addr=broker.addr, broker=broker)
        tb.no_problems(broker)
    finally:
        broker.stop()


@pytest.fixture(scope="module")
def java5(java_classpath_5):
    """The Java 5.5.0 broker with enablePropertyFilter=true, holding MESSAGES (for EXPRESSIONS_5X)."""
    ns, ns_addr, home = rj.start_namesrv(java_classpath_5, label="sql-java5")
    broker = None
    try:
        broker, addr, _ = rj.start_broker(java_classpath_5, ns_addr, broker_name="java5-sql",
                                          cluster="Java5SqlCluster", extra={"enablePropertyFilter": "true"}, home=home)
        rj.wait_for_registration(ns_addr)
        fill(ns_addr, addr, "java5-sql")
        yield dict(namesrv=ns_addr, addr=addr)
    finally:
        jh.stop_together(*([broker.discard] if broker is not None else []), ns.discard)


@pytest.fixture(scope="module")
def java(java_classpath_4):
    """The Java 4.9.7 broker with enablePropertyFilter=true, holding MESSAGES."""
    ns, ns_addr, home = rj.start_namesrv(java_classpath_4, label="sql-java")
    broker = None
    try:
        broker, addr, _ = rj.start_broker(java_classpath_4, ns_addr, broker_name="java-sql", cluster="JavaSqlCluster",
                                          extra={"enablePropertyFilter": "true"}, home=home)
        rj.wait_for_registration(ns_addr)
        fill(ns_addr, addr, "java-sql")
        yield dict(namesrv=ns_addr, addr=addr)
    finally:
        jh.stop_together(*([broker.discard] if broker is not None else []), ns.discard)


# --------------------------------------------------------------------------- the official clients

def sql_peer(classpath: str, commands: list[list[str]], timeout: float = 300.0) -> list[dict]:
    """Run Sql92Peer with *commands* (one per line); its JSON answers, one per command."""
    return jh.run_peer_batch(classpath, "Sql92Peer", commands, timeout)


def table(result: dict) -> dict[str, list[str]]:
    assert "results" in result, result
    rows = {}
    for row in result["results"]:
        assert row["error"] is None, row
        rows[row["sql"]] = row["bodies"]
    return rows


@pytest.fixture(scope="module")
def tables(tx, java, java_classpath_4, java_classpath_5):
    """``{(version, broker): {expression: bodies}}``: the official pull consumers on both brokers, at once."""
    cps = {"4.9.8": java_classpath_4, "5.5.0": java_classpath_5}
    brokers = {"tx": tx, "java": java}

    def one(job):
        version, name = job
        command = ["pull", brokers[name]["namesrv"], TOPIC, f"SqlPull{version[0]}{name}", *EXPRESSIONS]
        return job, table(sql_peer(cps[version], [command])[0])

    jobs = [(v, b) for v in VERSIONS for b in brokers]
    with concurrent.futures.ThreadPoolExecutor(len(jobs)) as pool:
        return dict(pool.map(one, jobs))


@pytest.mark.parametrize("version", VERSIONS)
def test_java_pull_same_sets_from_both_brokers(tables, version):
    ours, theirs = tables[(version, "tx")], tables[(version, "java")]
    assert set(ours) == set(theirs) == set(EXPRESSIONS)
    differ = {sql: (ours[sql], theirs[sql]) for sql in EXPRESSIONS if ours[sql] != theirs[sql]}
    assert not differ, "expression: (our broker, Java broker)\n" + "\n".join(f"{k}: {v}" for k, v in differ.items())


@pytest.mark.parametrize("version", VERSIONS)
def test_java_pull_expected_sets(tables, version):
    for broker in ("tx", "java"):
        got = tables[(version, broker)]
        for sql, want in EXPRESSIONS.items():
            if want is not None:
                assert got[sql] == want, (broker, sql)


def python_table(namesrv: str, expressions: dict[str, list[str] | None] = EXPRESSIONS) -> dict[str, list[str]]:
    rows = {}
    with BlockingPullClient("SqlPythonPull", namesrv) as puller:
        queues = puller.fetch_queues(TOPIC)
        for sql in expressions:
            bodies: set[str] = set()
            for mq in queues:
                offset, end = 0, puller.max_offset(mq)
                while offset < end:
                    result = puller.pull(mq, offset, 32, MessageSelector.by_sql(sql))
                    if result.pull_status is PullStatus.FOUND:
                        bodies.update(m.body.decode() for m in result.msg_found_list)
                    elif result.pull_status is not PullStatus.NO_MATCHED_MSG:
                        break
                    assert result.next_begin_offset > offset
                    offset = result.next_begin_offset
            rows[sql] = sorted(bodies)
    return rows


def test_python_pull_client_same_sets(tx, java, tables):
    ours, theirs = python_table(tx["namesrv"]), python_table(java["namesrv"])
    assert ours == theirs
    assert ours == tables[("4.9.8", "java")]


def test_5x_operators_same_sets_as_java5(tx, java5):
    """CONTAINS, STARTSWITH, ENDSWITH and their NOT forms select the same messages on our broker
    as on the Java 5.5.0 broker."""
    ours, theirs = python_table(tx["namesrv"], EXPRESSIONS_5X), python_table(java5["namesrv"], EXPRESSIONS_5X)
    differ = {sql: (ours[sql], theirs[sql]) for sql in EXPRESSIONS_5X if ours[sql] != theirs[sql]}
    assert not differ, "expression: (our broker, Java 5.5.0 broker)\n" + "\n".join(
        f"{k}: {v}" for k, v in differ.items())
    for sql, want in EXPRESSIONS_5X.items():
        if want is not None:
            assert ours[sql] == want, sql


@pytest.mark.parametrize("broker", ["tx", "java"])
def test_python_check_selector(tx, java, broker):
    """BlockingPullClient.check_selector (CHECK_CLIENT_CONFIG): both brokers accept a valid
    expression and refuse a malformed one with SUBSCRIPTION_PARSE_FAILED."""
    target = {"tx": tx, "java": java}[broker]
    with BlockingPullClient("SqlPythonCheck", target["namesrv"]) as puller:
        puller.check_selector(TOPIC, MessageSelector.by_sql("a > 5"))
        puller.check_selector(TOPIC, "TagA || TagB")
        for sql in MALFORMED:
            with pytest.raises(MQBrokerError) as e:
                puller.check_selector(TOPIC, MessageSelector.by_sql(sql))
            assert e.value.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED, (sql, e.value)


def test_malformed_refused_in_pull_header(tx):
    """Our broker refuses a malformed expression in PULL_MESSAGE's header (a Java 4.9 broker,
    its assertion off, would go on without filter data and deliver everything)."""
    with BlockingPullClient("SqlPythonBad", tx["namesrv"]) as puller:
        mq = puller.fetch_queues(TOPIC)[0]
        with pytest.raises(MQBrokerError) as e:
            puller.pull(mq, 0, 32, MessageSelector.by_sql("a >"))
    assert (e.value.code, e.value.remark) == (ResponseCode.SUBSCRIPTION_PARSE_FAILED,
                                              "parse the consumer's subscription failed")


@pytest.fixture(scope="module")
def spark(tmp_path_factory):
    try:
        from pyspark.sql import SparkSession
    except ImportError as e:
        jh.unavailable(f"pyspark is not installed: {e}")
    os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    session = (SparkSession.builder.master("local[2]").appName("rocketmq-tx-sql92")
               .config("spark.ui.enabled", "false")
               .config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.local.dir", str(tmp_path_factory.mktemp("spark-local")))
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    from rocketmq_tx.spark import register

    register(session)
    try:
        yield session
    finally:
        session.stop()


SPARK_EXPRESSIONS = ["TAGS = 'TagA' AND a > 2", "b IS NULL", "c BETWEEN 1 AND 3"]


@pytest.mark.parametrize("broker", ["tx", "java"])
def test_spark_sql92_option(spark, tx, java, tables, broker):
    """The Spark source's ``sql92`` option: the same rows as the Java pull consumer's sets."""
    namesrv = {"tx": tx, "java": java}[broker]["namesrv"]
    for sql in SPARK_EXPRESSIONS:
        rows = (spark.read.format("rocketmq").option("nameServer", namesrv).option("topic", TOPIC)
                .option("sql92", sql).load().select("body").collect())
        assert sorted(bytes(r["body"]).decode() for r in rows) == tables[("4.9.8", "java")][sql], sql


# --------------------------------------------------------------------------- push and lite pull

#: (expression, bodies): what the consumers subscribe with.
CONSUMED = [("TAGS = 'TagA' AND a > 2", ["m02", "m06", "m10"]),
            ("b IN ('red', 'blue')", ["m00", "m01", "m03", "m05", "m06"])]


def lite_pull_works(version: str, broker: str) -> bool:
    """5.x's lite pull consumer pulls with LITE_PULL_MESSAGE (361), which a 4.9 broker does not serve."""
    return not (version == "5.5.0" and broker == "java")


@pytest.fixture(scope="module")
def consumers(tx, java, java_classpath_4, java_classpath_5):
    """Push and lite-pull consumers of both versions with bySql, and malformed subscriptions, on both brokers."""
    cps = {"4.9.8": java_classpath_4, "5.5.0": java_classpath_5}
    brokers = {"tx": tx, "java": java}

    def one(job):
        version, name = job
        ns = brokers[name]["namesrv"]
        v = version[0]
        commands = []
        for i, (sql, want) in enumerate(CONSUMED):
            commands.append(["push", ns, TOPIC, f"SqlPush{v}{name}{i}", sql, str(len(want)), "60"])
            if lite_pull_works(version, name):
                commands.append(["litepull", ns, TOPIC, f"SqlLite{v}{name}{i}", sql, str(len(want)), "60"])
        for i, sql in enumerate(MALFORMED):
            commands.append(["push", ns, TOPIC, f"SqlBad{v}{name}{i}", sql, "1", "5"])
        return job, sql_peer(cps[version], commands)

    jobs = [(v, b) for v in VERSIONS for b in brokers]
    with concurrent.futures.ThreadPoolExecutor(len(jobs)) as pool:
        return dict(pool.map(one, jobs))


@pytest.mark.parametrize("broker", ["tx", "java"])
@pytest.mark.parametrize("version", VERSIONS)
def test_java_push_and_lite_pull(consumers, version, broker):
    got = iter(consumers[(version, broker)])
    for sql, want in CONSUMED:
        push = next(got)
        assert push["error"] is None and push["bodies"] == want, (sql, push)
        if lite_pull_works(version, broker):
            lite = next(got)
            assert lite["error"] is None and lite["bodies"] == want, (sql, lite)


@pytest.mark.parametrize("version", VERSIONS)
def test_malformed_refused_at_subscribe(consumers, version):
    """CHECK_CLIENT_CONFIG answers SUBSCRIPTION_PARSE_FAILED, so the consumer does not start."""
    for broker in ("tx", "java"):
        for sql, result in zip(MALFORMED, consumers[(version, broker)][-len(MALFORMED):], strict=True):
            assert result["bodies"] == [], (broker, sql, result)
            error = result["error"]
            assert error is not None and error["code"] == ResponseCode.SUBSCRIPTION_PARSE_FAILED, (broker, sql, result)


def send_when_online(namesrv: str, addr: str, group: str, topic: str, timeout: float = 60.0) -> None:
    """Once *group* is a member on the broker at *addr* (its heartbeat came, its pulls follow), send."""
    deadline = time.monotonic() + timeout
    with BlockingConnection(addr) as conn:
        while True:
            response = conn.invoke(api.consumer_list_request(group))
            if response.code == ResponseCode.SUCCESS and api.parse_consumer_list_response(response):
                break
            assert time.monotonic() < deadline, f"{group} never came online on {addr}"
            time.sleep(0.1)  # polling remote state, bounded by the deadline
    # The consumer reads from the first offset, so a message sent before its first pull is
    # delivered too; one second lets that pull reach the broker and be held (long polling).
    time.sleep(1.0)
    producer = BlockingProducer("SqlLiveProducer", namesrv)
    try:
        for i in range(6):
            producer.send(Message(topic, f"live{i}".encode(), properties={"TAGS": "TagL", "a": str(i * 2)}))
    finally:
        producer.close()


@pytest.mark.parametrize("broker", ["tx", "java"])
def test_java_push_consumer_live(tx, java, java_classpath_4, broker):
    """Messages sent while the 4.9.8 push consumer waits (its pulls held by long polling): the matching ones arrive."""
    target = {"tx": tx, "java": java}[broker]
    topic = f"SqlLive{broker}"
    with BlockingConnection(target["addr"]) as conn:
        assert tb.create_topic(conn, topic).code == ResponseCode.SUCCESS
    tb.wait_topic_route(target["namesrv"], topic, ["tx-sql" if broker == "tx" else "java-sql"])
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        sending = pool.submit(send_when_online, target["namesrv"], target["addr"], f"SqlLive{broker}", topic)
        (push,) = sql_peer(java_classpath_4, [["push", target["namesrv"], topic, f"SqlLive{broker}", "a > 5", "3",
                                               "60"]])
        sending.result()
    assert push["error"] is None and push["bodies"] == ["live3", "live4", "live5"], push


# --------------------------------------------------------------------------- switched off

@pytest.fixture(scope="module")
def tx_off(tmp_path_factory):
    broker = tb.start_standalone(tmp_path_factory.mktemp("sql-off") / "store", name="tx-sql-off",
                                 cluster="SqlOffCluster")
    try:
        fill(broker.namesrv, broker.addr, "tx-sql-off")
        yield dict(namesrv=broker.namesrv, addr=broker.addr)
    finally:
        broker.stop()


def test_switched_off(tx_off, java_classpath_4):
    (push,) = sql_peer(java_classpath_4, [["push", tx_off["namesrv"], TOPIC, "SqlOff", "a > 5", "1", "5"]])
    assert push["error"]["code"] == ResponseCode.SYSTEM_ERROR and push["error"]["remark"] == DISABLED, push
    with BlockingPullClient("SqlOffPull", tx_off["namesrv"]) as puller:
        mq = puller.fetch_queues(TOPIC)[0]
        with pytest.raises(MQBrokerError) as e:
            puller.pull(mq, 0, 32, MessageSelector.by_sql("a > 5"))
    assert (e.value.code, e.value.remark) == (ResponseCode.SYSTEM_ERROR, DISABLED)
    with BlockingPullClient("SqlOffCheck", tx_off["namesrv"]) as puller:
        with pytest.raises(MQBrokerError) as e:
            puller.check_selector(TOPIC, MessageSelector.by_sql("a > 5"))
    assert (e.value.code, e.value.remark) == (ResponseCode.SYSTEM_ERROR, DISABLED)
