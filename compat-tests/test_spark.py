"""
The ``rocketmq`` PySpark data source on a real local Spark (``local[2]``) against real
servers: our ``rocketmq-standalone`` and, for the batch read, the official Java broker.

One SparkSession serves the whole module (starting one costs about 10 s); each server is
a fresh process. Without pyspark or Java these tests skip on a developer machine and fail
under CI=true.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import javaharness as jh
import pytest
import rocketmq_java as rj
import txbroker as txb

from rocketmq_tx.blocking import BlockingConnection, BlockingProducer, BlockingPullClient
from rocketmq_tx.certs import write_pki
from rocketmq_tx.common.message import Message, MessageQueue
from rocketmq_tx.tlsconfig import TlsSettings

pytestmark = pytest.mark.compat

QUEUES = 8
TAGS = ("A", "B", "C")


@pytest.fixture(scope="module")
def spark(tmp_path_factory):
    try:
        from pyspark.sql import SparkSession
    except ImportError as e:
        jh.unavailable(f"pyspark is not installed: {e}")
    if shutil.which("java") is None:
        jh.unavailable("Spark needs java on PATH")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    local_dir = str(tmp_path_factory.mktemp("spark-local"))
    session = (SparkSession.builder.master("local[2]").appName("rocketmq-tx-compat")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.local.dir", local_dir)
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    from rocketmq_tx.spark import register

    register(session)
    try:
        yield session
    finally:
        session.stop()


def produce(namesrv: str, topic: str, broker: str, count: int, start: int = 0) -> list[dict]:
    """*count* messages spread evenly over the topic's queues; what was sent, per message."""
    sent = []
    with BlockingProducer("spark_compat_producer", namesrv) as producer:
        for i in range(start, start + count):
            msg = Message(topic, f"body-{i}".encode())
            msg.tags = TAGS[i % len(TAGS)]
            msg.keys = [f"key-{i}"]
            msg.put_property("i", str(i))
            result = producer.send(msg, queue=MessageQueue(topic, broker, i % QUEUES))
            sent.append({"i": i, "queueId": i % QUEUES, "queueOffset": result.queue_offset, "body": msg.body,
                         "tags": msg.tags, "msgId": result.msg_id})
    return sent


def make_topic(broker_addr: str, namesrv: str, topic: str, broker_name: str) -> None:
    with BlockingConnection(broker_addr) as conn:
        assert txb.create_topic(conn, topic, QUEUES).code == 0
    txb.wait_topic_route(namesrv, topic, [broker_name])


def read(spark, namesrv: str, topic: str, **options: str):
    reader = spark.read.format("rocketmq").option("nameServer", namesrv).option("topic", topic)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def as_set(rows) -> set:
    return {(r["queueId"], r["queueOffset"], bytes(r["body"]), r["tags"], r["properties"]["i"]) for r in rows}


def expected_set(sent: list[dict]) -> set:
    return {(s["queueId"], s["queueOffset"], s["body"], s["tags"], str(s["i"])) for s in sent}


@pytest.fixture(scope="module")
def tx(tmp_path_factory):
    broker = txb.start_standalone(tmp_path_factory.mktemp("spark-tx"), name="spark-tx")
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="module")
def batch_topic(tx):
    """800 messages in 8 queues, and the store time that splits them into halves."""
    topic = "SparkBatch"
    make_topic(tx.addr, tx.namesrv, topic, tx.name)
    first = produce(tx.namesrv, topic, tx.name, 400)
    # Sends are acknowledged after the store, so every first-half store time is before now.
    split = int(time.time() * 1000) + 1
    while time.time() * 1000 <= split:  # the second half must be stored at or after `split`
        time.sleep(0.001)
    second = produce(tx.namesrv, topic, tx.name, 400, start=400)
    return topic, first, second, split


def check_batch(spark, namesrv: str, topic: str, broker_name: str, sent: list[dict]) -> None:
    """The batch-read checks shared by our broker and the Java broker."""
    df = read(spark, namesrv, topic)
    rows = df.collect()
    assert len(rows) == len(sent)
    assert as_set(rows) == expected_set(sent)
    by_offset = {(s["queueId"], s["queueOffset"]): s for s in sent}
    for r in rows:
        s = by_offset[(r["queueId"], r["queueOffset"])]
        assert (r["topic"], r["brokerName"], r["msgId"], r["keys"]) == (topic, broker_name, s["msgId"],
                                                                       f"key-{s['i']}")
        assert r["storeTimestamp"] is not None and r["bornHost"] and r["storeHost"]

    tagged = read(spark, namesrv, topic, subExpression="A || C").collect()
    assert as_set(tagged) == expected_set([s for s in sent if s["tags"] in ("A", "C")])

    start = {topic: {broker_name: {str(q): 10 for q in range(QUEUES)}}}
    end = {topic: {broker_name: {str(q): 20 for q in range(QUEUES)}}}
    bounded = read(spark, namesrv, topic, startingOffsets=json.dumps(start), endingOffsets=json.dumps(end)).collect()
    assert as_set(bounded) == expected_set([s for s in sent if 10 <= s["queueOffset"] < 20])

    split_df = read(spark, namesrv, topic, minPartitions="32")
    assert split_df.rdd.getNumPartitions() == 32
    split_rows = split_df.collect()
    assert len(split_rows) == len(sent) and as_set(split_rows) == expected_set(sent)


def test_batch_read(spark, tx, batch_topic) -> None:
    topic, first, second, _ = batch_topic
    check_batch(spark, tx.namesrv, topic, tx.name, first + second)


def test_batch_starting_timestamp(spark, tx, batch_topic) -> None:
    topic, _, second, split = batch_topic
    rows = read(spark, tx.namesrv, topic, startingTimestamp=str(split)).collect()
    assert as_set(rows) == expected_set(second)


def test_bad_options_fail_on_the_driver(spark, tx) -> None:
    with pytest.raises(Exception, match="unknown read option 'startingoffset'"):
        read(spark, tx.namesrv, "SparkBatch", startingOffset="earliest").collect()
    with pytest.raises(Exception, match="nameServer: 'nowhere' is not host:port"):
        read(spark, "nowhere", "SparkBatch").collect()


def test_write_round_trip(spark, tx) -> None:
    topic = "SparkWrite"
    make_topic(tx.addr, tx.namesrv, topic, tx.name)
    data = [(f"w{i}".encode(), f"k{i}", TAGS[i % 3], {"n": str(i)}) for i in range(50)]
    df = spark.createDataFrame(data, "body binary, keys string, tags string, properties map<string,string>")
    df.write.format("rocketmq").option("nameServer", tx.namesrv).option("topic", topic).mode("append").save()
    rows = read(spark, tx.namesrv, topic).collect()
    assert sorted((bytes(r["body"]), r["keys"], r["tags"], r["properties"]["n"]) for r in rows) == \
        sorted((b, k, t, p["n"]) for b, k, t, p in data)


def test_write_stream_copies_a_topic(spark, tx, tmp_path) -> None:
    """readStream from one topic, writeStream to another: the copy has the same bodies and tags."""
    source, target = "SparkCopyFrom", "SparkCopyTo"
    make_topic(tx.addr, tx.namesrv, source, tx.name)
    make_topic(tx.addr, tx.namesrv, target, tx.name)
    sent = produce(tx.namesrv, source, tx.name, 60)
    query = (spark.readStream.format("rocketmq").option("nameServer", tx.namesrv).option("topic", source)
             .option("startingOffsets", "earliest").load()
             .selectExpr("body", "tags", "keys")
             .writeStream.format("rocketmq").option("nameServer", tx.namesrv).option("topic", target)
             .option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True).start())
    query.awaitTermination(180)
    copied = read(spark, tx.namesrv, target).collect()
    assert sorted((bytes(r["body"]), r["tags"], r["keys"]) for r in copied) == \
        sorted((s["body"], s["tags"], f"key-{s['i']}") for s in sent)


class BatchSink:
    """A foreachBatch sink keyed by batch id: a replayed batch replaces itself (idempotent)."""

    def __init__(self) -> None:
        self.batches: dict[int, list[tuple[int, int, bytes]]] = {}

    def __call__(self, df, batch_id: int) -> None:
        self.batches[batch_id] = [(r["queueId"], r["queueOffset"], bytes(r["body"])) for r in df.collect()]

    def rows(self) -> list[tuple[int, int, bytes]]:
        return [row for batch in self.batches.values() for row in batch]


def stream(spark, namesrv: str, topic: str, sink: BatchSink, checkpoint: Path, **options: str):
    reader = spark.readStream.format("rocketmq").option("nameServer", namesrv).option("topic", topic)
    for key, value in options.items():
        reader = reader.option(key, value)
    return (reader.load().writeStream.foreachBatch(sink).option("checkpointLocation", str(checkpoint))
            .trigger(processingTime="100 milliseconds").start())


def wait_for(predicate, timeout: float = 120.0, what: str = "condition", state=None) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}" + (f": {state()}" if state else ""))
        time.sleep(0.1)  # polling the query's progress, bounded by the deadline


def test_stream_limit_restart_exactly_once_and_group_offsets(spark, tx, tmp_path) -> None:
    topic, group = "SparkStream", "spark_compat_group"
    make_topic(tx.addr, tx.namesrv, topic, tx.name)
    sent = produce(tx.namesrv, topic, tx.name, 400)
    sink, checkpoint = BatchSink(), tmp_path / "checkpoint"
    options = {"startingOffsets": "earliest", "maxOffsetsPerTrigger": "100", "consumerGroup": group}

    query = stream(spark, tx.namesrv, topic, sink, checkpoint, **options)
    try:
        wait_for(lambda: len([b for b in sink.batches.values() if b]) >= 2, what="two micro-batches")
    finally:
        query.stop()
    assert len(sink.rows()) < 400  # stopped mid-stream
    sent += produce(tx.namesrv, topic, tx.name, 200, start=400)

    query = stream(spark, tx.namesrv, topic, sink, checkpoint, **options)
    try:
        query.processAllAvailable()
        wait_for(lambda: committed(tx.namesrv, group, topic, tx.name) == maxima(tx.namesrv, topic, tx.name),
                 what="the group's committed offsets", timeout=30,
                 state=lambda: (committed(tx.namesrv, group, topic, tx.name), maxima(tx.namesrv, topic, tx.name),
                                query.lastProgress))
    finally:
        query.stop()
    rows = sink.rows()
    counts = Counter((q, o) for q, o, _ in rows)
    assert sorted(counts) == sorted((s["queueId"], s["queueOffset"]) for s in sent)
    assert set(counts.values()) == {1}, "every message exactly once across batches"
    assert all(len(b) <= 100 for b in sink.batches.values())
    assert sorted(b for _, _, b in rows) == sorted(s["body"] for s in sent)


def committed(namesrv: str, group: str, topic: str, broker: str) -> list:
    with BlockingPullClient(group, namesrv) as client:
        return [client.committed_offset(MessageQueue(topic, broker, q)) for q in range(QUEUES)]


def maxima(namesrv: str, topic: str, broker: str) -> list:
    with BlockingPullClient("spark_compat_probe", namesrv) as client:
        return [client.max_offset(MessageQueue(topic, broker, q)) for q in range(QUEUES)]


def test_stream_new_queues_start_at_earliest(spark, tx, tmp_path) -> None:
    """A topic grown from 4 to 8 queues: the new queues are read from their first message."""
    topic = "SparkGrow"
    with BlockingConnection(tx.addr) as conn:
        assert txb.create_topic(conn, topic, 4).code == 0
    txb.wait_topic_route(tx.namesrv, topic, [tx.name])
    sink = BatchSink()
    sent = produce_to(tx.namesrv, topic, tx.name, range(4), 40)
    query = stream(spark, tx.namesrv, topic, sink, tmp_path / "cp", startingOffsets="earliest")
    try:
        query.processAllAvailable()
        make_topic(tx.addr, tx.namesrv, topic, tx.name)  # now 8 queues
        sent += produce_to(tx.namesrv, topic, tx.name, range(8), 80)
        wait_for(lambda: len(sink.rows()) >= len(sent), what="rows of the new queues")
        query.processAllAvailable()
    finally:
        query.stop()
    assert Counter((q, o) for q, o, _ in sink.rows()) == Counter((s["queueId"], s["queueOffset"]) for s in sent)


def produce_to(namesrv: str, topic: str, broker: str, queues, count: int) -> list[dict]:
    sent = []
    queues = list(queues)
    with BlockingProducer("spark_compat_producer", namesrv) as producer:
        for i in range(count):
            q = queues[i % len(queues)]
            result = producer.send(Message(topic, f"g{i}".encode()), queue=MessageQueue(topic, broker, q))
            sent.append({"queueId": q, "queueOffset": result.queue_offset})
    return sent


def test_fail_on_data_loss(spark, tmp_path) -> None:
    """
    A broker whose store expires files at once (every hour is a deleteWhen hour, nothing is
    reserved, tiny files): a read from offset 0 fails with failOnDataLoss=true and skips
    the expired head with false.
    """
    hours = ";".join(f"{h:02d}" for h in range(24))
    broker = txb.start_standalone(tmp_path / "store", name="spark-expiry", extra={
        "mappedFileSizeCommitLog": 64 * 1024, "mappedFileSizeConsumeQueue": 20 * 16, "fileReservedTime": 0,
        "deleteWhen": hours, "cleanResourceInterval": 200, "destroyMapedFileIntervalForcibly": 1000})
    try:
        topic = "SparkExpire"
        with BlockingConnection(broker.addr) as conn:
            assert txb.create_topic(conn, topic, 1).code == 0
        txb.wait_topic_route(broker.namesrv, topic, [broker.name])
        mq = MessageQueue(topic, broker.name, 0)
        with BlockingProducer("spark_compat_producer", broker.namesrv) as producer:
            for i in range(300):
                producer.send(Message(topic, b"x" * 1000 + str(i).encode()), queue=mq)
        with BlockingPullClient("spark_compat_probe", broker.namesrv) as probe:
            wait_for(lambda: probe.min_offset(mq) > 0, what="the store to expire its first files")
            low, high = probe.min_offset(mq), probe.max_offset(mq)
        start = json.dumps({topic: {broker.name: {"0": 0}}})

        for checkpoint, flag in ((tmp_path / "strict", "true"), (tmp_path / "lenient", "false")):
            sink = BatchSink()
            query = stream(spark, broker.namesrv, topic, sink, checkpoint, startingOffsets=start, failOnDataLoss=flag)
            if flag == "true":
                with pytest.raises(Exception, match="no longer on the broker"):
                    query.awaitTermination(120)
            else:
                try:
                    query.processAllAvailable()
                finally:
                    query.stop()
                offsets = sorted(o for _, o, _ in sink.rows())
                assert offsets[0] >= low and offsets[-1] == high - 1
                assert offsets == list(range(offsets[0], high))
    finally:
        broker.stop()


def test_examples_run(tx, tmp_path) -> None:
    """examples/spark/: the batch and the streaming tag counts, each one command, agree with what was sent."""
    topic = "SparkExample"
    make_topic(tx.addr, tx.namesrv, topic, tx.name)
    sent = produce(tx.namesrv, topic, tx.name, 120)
    expected = Counter(s["tags"] for s in sent)
    examples = Path(__file__).resolve().parent.parent / "examples" / "spark"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    # Both examples at once: each is its own Spark driver JVM whose start and stop are mostly waiting.
    # Their output goes to files, so neither can stall on a full pipe while the other is awaited.
    runs = {}
    for script, name, more in (("tag_counts_batch.py", "batch", []), ("tag_counts_stream.py", "stream", ["--once"])):
        with open(tmp_path / f"{name}.out", "w") as out, open(tmp_path / f"{name}.err", "w") as err:
            runs[name] = subprocess.Popen([sys.executable, str(examples / script), tx.namesrv, topic,
                                           str(tmp_path / name), *more], stdout=out, stderr=err, env=env, cwd=tmp_path)
    try:
        for run in runs.values():
            run.wait(timeout=300)
    finally:
        for run in runs.values():
            if run.poll() is None:
                run.kill()
                run.wait()
    batch_out, stream_out = ((tmp_path / f"{name}.out").read_text() for name in ("batch", "stream"))
    assert runs["batch"].returncode == 0, (tmp_path / "batch.err").read_text()[-3000:]
    assert dict(line.split("\t") for line in batch_out.splitlines() if "\t" in line) == \
        {tag: str(n) for tag, n in expected.items()}

    assert runs["stream"].returncode == 0, (tmp_path / "stream.err").read_text()[-3000:]
    streamed: Counter = Counter()
    for line in stream_out.splitlines():
        if line.startswith("batch ") and "\t" in line:
            tag, count = line.split(": ", 1)[1].split("\t")
            streamed[tag] += int(count)
    assert streamed == expected


def test_mutual_tls(spark, tmp_path) -> None:
    """A broker enforcing mutual TLS: Spark reads and writes with the tls.* options; without them it cannot."""
    from pyspark.errors import PySparkException  # what every failed Spark job raises (pyspark 4)

    pki = tmp_path / "pki"
    write_pki(pki, hosts=["127.0.0.1", "localhost"])
    client_tls = {"tls.enable": "true", "tls.test.mode.enable": "false", "tls.client.authServer": "true",
                  "tls.client.keyPath": f"{pki}/client.key", "tls.client.certPath": f"{pki}/client.pem",
                  "tls.client.trustCertPath": f"{pki}/ca.pem"}
    broker = txb.start_standalone(tmp_path / "store", name="spark-tls", extra={
        "tls.server.mode": "enforcing", "tls.server.need.client.auth": "require", "tls.test.mode.enable": "false",
        "tls.server.keyPath": f"{pki}/server.key", "tls.server.certPath": f"{pki}/server.pem",
        "tls.server.trustCertPath": f"{pki}/ca.pem", "tls.server.authClient": "true", "tls.config.file": "",
        **{k: v for k, v in client_tls.items() if k.startswith("tls.client.")}},
        tls=TlsSettings.from_sources({"tls.config.file": ""}, client_tls))
    try:
        topic = "SparkTls"
        rows = [(f"s{i}".encode(), TAGS[i % 3]) for i in range(30)]
        writer = spark.createDataFrame(rows, "body binary, tags string").write.format("rocketmq")
        for key, value in {"nameServer": broker.namesrv, "topic": topic, **client_tls}.items():
            writer = writer.option(key, value)
        writer.mode("append").save()
        got = read(spark, broker.namesrv, topic, **client_tls).collect()
        assert sorted((bytes(r["body"]), r["tags"]) for r in got) == sorted(rows)
        with pytest.raises(PySparkException):
            read(spark, broker.namesrv, topic, pullTimeoutMs="3000").collect()
    finally:
        broker.stop()


@pytest.mark.parametrize("version", ["4.9.8", "5.5.0"])
def test_batch_read_from_java_broker(spark, version, tmp_path) -> None:
    classpath = jh.build_or_skip(jh.VERSION_KEYS[version])
    with rj.java_cluster(classpath, tmp_path / "store", graceful=False) as cluster:
        broker_name, topic = "compat-broker", "SparkJava"
        make_topic(f"127.0.0.1:{cluster.port}", cluster.namesrv_addr, topic, broker_name)
        sent = produce(cluster.namesrv_addr, topic, broker_name, 240)
        check_batch(spark, cluster.namesrv_addr, topic, broker_name, sent)
