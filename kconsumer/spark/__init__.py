"""kconsumer's PySpark data source: ``spark.readStream.format("kconsumer")`` (extra ``spark``).

::

    import kconsumer.spark

    kconsumer.spark.register(spark)
    df = (
        spark.readStream.format("kconsumer")
        .option("kafka.bootstrap.servers", "broker:9092")
        .option("group.id", "pipeline")
        .option("subscribe", "orders")
        .load()
    )

The streaming query's driver is a member of the consumer group (KIP-848): partitions are shared
with other queries and plain consumers of the group, move only at batch boundaries, and the
group's committed offsets follow the query's completed batches. See docs/spark.md.

Importing this package does not import pyspark; `register` and the source classes do.
"""

from __future__ import annotations

from typing import Any

__all__ = ["FORMAT", "KConsumerDataSource", "register"]

FORMAT = "kconsumer"


def register(spark: Any) -> None:
    """Register the ``kconsumer`` format with `spark` (a SparkSession)."""
    from .source import register as _register

    _register(spark)


def __getattr__(name: str) -> Any:
    if name == "KConsumerDataSource":
        from .source import KConsumerDataSource

        return KConsumerDataSource
    raise AttributeError(f"module 'kconsumer.spark' has no attribute {name!r}")
