"""
Stream a topic through the ``rocketmq`` data source and append each micro-batch's
per-tag counts to Parquet. The checkpoint directory makes a restarted job resume where it
stopped, and ``consumerGroup`` shows its progress to mqadmin (``consumerProgress``).

    python examples/spark/tag_counts_stream.py [NAMESRV] [TOPIC] [OUTPUT_DIR] [--once]

With ``--once`` it reads what is there now (in batches of at most 1000 offsets) and exits;
without, it runs until interrupted.
"""

import os
import sys

from pyspark.sql import SparkSession

from rocketmq_tx.spark import register


def main(namesrv: str = "127.0.0.1:9876", topic: str = "ExampleTopic", output: str = "tag-counts-stream",
         once: bool = False) -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master("local[2]").appName("rocketmq-tag-counts-stream")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("WARN")
    register(spark)

    def write_counts(batch, batch_id: int) -> None:
        counts = batch.groupBy("tags").count()
        # One directory per batch id (a Parquet partition column when read back): a replayed
        # batch overwrites its own, so the output holds every message exactly once.
        counts.write.mode("overwrite").parquet(os.path.join(output, "counts", f"batchId={batch_id}"))
        for row in counts.collect():
            print(f"batch {batch_id}: {row['tags']}\t{row['count']}", flush=True)

    messages = (spark.readStream.format("rocketmq")
                .option("nameServer", namesrv)
                .option("topic", topic)
                .option("startingOffsets", "earliest")
                .option("maxOffsetsPerTrigger", "1000")
                .option("consumerGroup", "example-spark-stream")
                .load())
    writer = (messages.writeStream.foreachBatch(write_counts)
              .option("checkpointLocation", os.path.join(output, "checkpoint")))
    query = writer.trigger(availableNow=True).start() if once else writer.start()
    try:
        query.awaitTermination()
    finally:
        query.stop()
        spark.stop()


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--once"]
    main(*args[:3], once="--once" in sys.argv[1:])
