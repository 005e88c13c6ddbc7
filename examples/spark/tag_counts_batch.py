"""
Count a topic's messages per tag with Spark, reading through the ``rocketmq`` data source,
and write the counts to Parquet.

    python examples/spark/tag_counts_batch.py [NAMESRV] [TOPIC] [OUTPUT_DIR]

Runs Spark locally (``local[2]``); start a broker first (``twistd -n --pidfile= rocketmq-standalone``).
"""

import os
import sys

from pyspark.sql import SparkSession

from rocketmq_tx.spark import register


def main(namesrv: str = "127.0.0.1:9876", topic: str = "ExampleTopic", output: str = "tag-counts.parquet") -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # executors import rocketmq_tx too
    spark = (SparkSession.builder.master("local[2]").appName("rocketmq-tag-counts")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("WARN")
    register(spark)
    try:
        messages = (spark.read.format("rocketmq")
                    .option("nameServer", namesrv)
                    .option("topic", topic)
                    .option("startingOffsets", "earliest")
                    .load())
        counts = messages.groupBy("tags").count().orderBy("tags")
        counts.write.mode("overwrite").parquet(output)
        for row in spark.read.parquet(output).orderBy("tags").collect():
            print(f"{row['tags']}\t{row['count']}")
    finally:
        spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:4])
