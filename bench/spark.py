"""
The ``rocketmq`` PySpark source's batch-read speed: N messages of 1 KiB in 8 queues on a
``rocketmq-standalone`` broker, read three ways in one run:

* the plain blocking client in this one Python process, queue after queue (the baseline);
* Spark ``local[2]`` through the ``rocketmq`` source (``format("noop")`` consumes the rows);
* Spark ``local[2]`` reading the same rows from a local Parquet copy.

Reported as rows/s and as ratios to the plain client and to Parquet; a small JSON summary
of the run goes to ``bench/results/spark-<UTC time>.json`` (``--summary PATH`` elsewhere,
``--no-summary`` not at all).

    python bench/spark.py [--messages 1000000] [--rounds 2] [--size 1024]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import _summary
from _common import ROOT, table

sys.path.insert(0, str(ROOT / "compat-tests"))
import txbroker  # noqa: E402

from rocketmq_tx.blocking import BlockingConnection, BlockingProducer, BlockingPullClient  # noqa: E402
from rocketmq_tx.common.message import Message, MessageQueue  # noqa: E402
from rocketmq_tx.remoting.api import PullStatus  # noqa: E402

TOPIC = "BenchSpark"
QUEUES = 8


def fill(broker, count: int, size: int) -> None:
    """*count* messages spread over the queues, sent in batches of 64 (the setup, not measured)."""
    with BlockingConnection(broker.addr) as conn:
        assert txbroker.create_topic(conn, TOPIC, QUEUES).code == 0
    txbroker.wait_topic_route(broker.namesrv, TOPIC, [broker.name])
    body = os.urandom(size // 2).hex().encode()[:size]
    with BlockingProducer("bench_spark_fill", broker.namesrv, send_timeout=30) as producer:
        sent = 0
        while sent < count:
            for q in range(QUEUES):
                n = min(64, count - sent)
                if n <= 0:
                    break
                batch = [Message(TOPIC, body) for _ in range(n)]
                for i, msg in enumerate(batch):
                    msg.tags = "T" + str((sent + i) % 4)
                producer.send_batch(batch, queue=MessageQueue(TOPIC, broker.name, q))
                sent += n


def plain_client(namesrv: str, broker_name: str) -> tuple[int, float]:
    """Every message pulled and decoded by one blocking client: (rows, seconds)."""
    rows = 0
    started = time.perf_counter()
    with BlockingPullClient("bench_spark_plain", namesrv) as client:
        for q in range(QUEUES):
            mq = MessageQueue(TOPIC, broker_name, q)
            offset, end = client.min_offset(mq), client.max_offset(mq)
            while offset < end:
                result = client.pull(mq, offset, 32)
                if result.pull_status is PullStatus.FOUND:
                    rows += len(result.msg_found_list)
                offset = result.next_begin_offset
    return rows, time.perf_counter() - started


def spark_session(local_dir: str):
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    from rocketmq_tx.spark import register

    spark = (SparkSession.builder.master("local[2]").appName("bench-rocketmq")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
             .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.memory", "4g").config("spark.local.dir", local_dir).getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark


def timed_noop(df) -> float:
    started = time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=2, help="timed reads of each kind (the best counts)")
    parser.add_argument("--summary", type=Path, default=None,
                        help="where to write the run's small JSON summary "
                             "(default bench/results/spark-<UTC time>.json)")
    parser.add_argument("--no-summary", action="store_true", help="write no JSON summary")
    args = parser.parse_args()
    run_started = dt.datetime.now(dt.UTC)
    load_start = _summary.loadavg()
    work = Path(tempfile.mkdtemp(prefix="bench-spark-"))
    broker = txbroker.start_standalone(work / "store", name="bench-spark")
    spark = None
    try:
        started = time.perf_counter()
        fill(broker, args.messages, args.size)
        print(f"filled {args.messages} messages in {time.perf_counter() - started:.1f}s", file=sys.stderr)
        spark = spark_session(str(work / "spark"))
        source = (spark.read.format("rocketmq").option("nameServer", broker.namesrv).option("topic", TOPIC)
                  .option("startingOffsets", "earliest").load())
        assert source.count() == args.messages  # also warms the Python workers up
        source.write.parquet(str(work / "copy.parquet"))
        parquet = spark.read.parquet(str(work / "copy.parquet"))
        timings: dict[str, list[float]] = {"plain client": [], "Spark rocketmq source": [], "Spark Parquet": []}
        for _ in range(args.rounds):
            rows, seconds = plain_client(broker.namesrv, broker.name)
            assert rows == args.messages, rows
            timings["plain client"].append(seconds)
            timings["Spark rocketmq source"].append(timed_noop(source))
            timings["Spark Parquet"].append(timed_noop(parquet))
    finally:
        if spark is not None:
            spark.stop()
        broker.stop()
        shutil.rmtree(work, ignore_errors=True)
    rate = {name: args.messages / min(values) for name, values in timings.items()}
    rows = [[name, f"{rate[name]:,.0f}", f"{min(timings[name]):.2f}"] for name in timings]
    print(table(["reader", "rows/s (best)", "seconds"], rows))
    source_rate = rate["Spark rocketmq source"]
    print(f"\nsource / plain client: {source_rate / rate['plain client']:.2f}   "
          f"source / Parquet: {source_rate / rate['Spark Parquet']:.2f}   "
          f"({args.messages} messages of {args.size} bytes, {QUEUES} queues, local[2])")
    print(json.dumps({"messages": args.messages, "size": args.size, "rows_per_s": rate}))
    if not args.no_summary:
        versus_plain = source_rate / rate["plain client"]
        path = _summary.write({
            "bench": "spark", "started": run_started.isoformat(timespec="seconds"), "commit": _summary.git_commit(),
            "command": _summary.command_line("bench/spark.py"),
            "settings": {"messages": args.messages, "size": args.size, "rounds": args.rounds, "queues": QUEUES,
                         "master": "local[2]"},
            "machine": _summary.machine(), "loadavg_start": load_start, "loadavg_end": _summary.loadavg(),
            "figures": {"rows_per_s_best": {k: round(v) for k, v in rate.items()},
                        "seconds_per_round": {k: [round(t, 3) for t in v] for k, v in timings.items()},
                        "source_over_plain_client": round(versus_plain, 3),
                        "source_over_parquet": round(source_rate / rate["Spark Parquet"], 3)},
            "goals": [{"goal": "at least 0.5x the plain client's rate", "figure": round(versus_plain, 3),
                       "met": versus_plain >= 0.5}],
        }, args.summary or _summary.default_path("spark", run_started))
        print(f"summary: {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
