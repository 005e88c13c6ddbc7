"""
``rocketmq``: a PySpark data source (Python Data Source API, pyspark >= 4.2) reading and
writing RocketMQ topics through :mod:`rocketmq_tx.blocking`, with no JVM connector.

    from rocketmq_tx.spark import register
    register(spark)
    spark.read.format("rocketmq").option("nameServer", "127.0.0.1:9876").option("topic", "T").load()

See ``docs/spark.md``. The option, offset and reading modules import no pyspark; the
data source classes are in :mod:`rocketmq_tx.spark.source`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["register", "RocketMQDataSource"]


def register(spark: Any) -> None:
    """Register the ``rocketmq`` format with a SparkSession."""
    from rocketmq_tx.spark.source import RocketMQDataSource

    spark.dataSource.register(RocketMQDataSource)


def __getattr__(name: str) -> Any:
    # Lazy, so `import rocketmq_tx.spark` stays cheap and works where pyspark is absent.
    if name == "RocketMQDataSource":
        from rocketmq_tx.spark.source import RocketMQDataSource

        return RocketMQDataSource
    raise AttributeError(name)
