"""Spark's Kafka row schema, and records turned into Arrow batches of that schema.

The columns are those of Spark's built-in Kafka source, so queries written for it work unchanged:
``key binary, value binary, topic string, partition int, offset long, timestamp timestamp,
timestampType int, headers array<struct<key: string, value: binary>>``. ``timestampType`` is
Kafka's id: 0 CreateTime, 1 LogAppendTime, -1 none.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import pyarrow as pa

#: The schema as a DDL string (what `DataSource.schema()` returns).
SCHEMA_DDL = (
    "key binary, value binary, topic string, partition int, offset long, timestamp timestamp, "
    "timestampType int, headers array<struct<key: string, value: binary>>"
)

COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers")

#: librdkafka's timestamp types (TIMESTAMP_NOT_AVAILABLE, CREATE_TIME, LOG_APPEND_TIME) -> Kafka's ids.
_TIMESTAMP_TYPE = {0: -1, 1: 0, 2: 1}


def spark_schema() -> Any:
    """The schema as a pyspark `StructType`."""
    from pyspark.sql.types import (
        ArrayType,
        BinaryType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        StructType,
        TimestampType,
    )

    header = StructType([StructField("key", StringType()), StructField("value", BinaryType())])
    return StructType(
        [
            StructField("key", BinaryType()),
            StructField("value", BinaryType()),
            StructField("topic", StringType()),
            StructField("partition", IntegerType()),
            StructField("offset", LongType()),
            StructField("timestamp", TimestampType()),
            StructField("timestampType", IntegerType()),
            StructField("headers", ArrayType(header)),
        ]
    )


@lru_cache(maxsize=1)
def arrow_schema() -> pa.Schema:
    """The Arrow schema Spark expects for `spark_schema()` (it checks batches against it exactly)."""
    try:
        from pyspark.sql.pandas.types import to_arrow_schema

        schema: pa.Schema = to_arrow_schema(spark_schema(), timezone="UTC")
        return schema
    except (ImportError, TypeError):  # pragma: no cover - older pyspark layouts
        header = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
        return pa.schema(
            [
                pa.field("key", pa.binary()),
                pa.field("value", pa.binary()),
                pa.field("topic", pa.string()),
                pa.field("partition", pa.int32()),
                pa.field("offset", pa.int64()),
                pa.field("timestamp", pa.timestamp("us", tz="UTC")),
                pa.field("timestampType", pa.int32()),
                pa.field("headers", pa.list_(pa.field("element", header))),
            ]
        )


class BatchBuilder:
    """Collects confluent-kafka `Message`s of one partition; `build()` makes a RecordBatch."""

    def __init__(self, topic: str, partition: int) -> None:
        self._topic = topic
        self._partition = partition
        self._reset()

    def _reset(self) -> None:
        self._keys: list[bytes | None] = []
        self._values: list[bytes | None] = []
        self._offsets: list[int] = []
        self._timestamps: list[int | None] = []
        self._types: list[int] = []
        self._headers: list[list[dict[str, Any]] | None] = []

    def __len__(self) -> int:
        return len(self._offsets)

    def extend(self, messages: Sequence[Any], offsets: Sequence[int]) -> None:
        """Append records (confluent-kafka Messages without error) and their `offsets`, a whole
        run at once: one pass per column, no per-record method of the builder."""
        self._keys += [m.key() for m in messages]
        self._values += [m.value() for m in messages]
        self._offsets += offsets
        stamps = [m.timestamp() for m in messages]
        self._types += [_TIMESTAMP_TYPE.get(kind, -1) for kind, _millis in stamps]
        self._timestamps += [None if kind == 0 or millis < 0 else millis * 1000 for kind, millis in stamps]
        every_headers = [m.headers() for m in messages]
        self._headers += [[{"key": k, "value": v} for k, v in hs] if hs else [] for hs in every_headers]

    def build(self) -> pa.RecordBatch:
        """The collected records as one batch; the builder is empty afterwards."""
        schema = arrow_schema()
        count = len(self._offsets)
        arrays = [
            pa.array(self._keys, pa.binary()),
            pa.array(self._values, pa.binary()),
            pa.array([self._topic] * count, pa.string()),
            pa.array([self._partition] * count, pa.int32()),
            pa.array(self._offsets, pa.int64()),
            pa.array(self._timestamps, schema.field("timestamp").type),
            pa.array(self._types, pa.int32()),
            pa.array(self._headers, schema.field("headers").type),
        ]
        batch = pa.RecordBatch.from_arrays(arrays, schema=schema)
        self._reset()
        return batch
