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
import pyarrow.compute as pc

#: The schema as a DDL string (what `DataSource.schema()` returns).
SCHEMA_DDL = (
    "key binary, value binary, topic string, partition int, offset long, timestamp timestamp, "
    "timestampType int, headers array<struct<key: string, value: binary>>"
)

COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers")

#: A record's headers as confluent-kafka gives them: (key, value) pairs.
Headers = list[tuple[str, bytes | None]]

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
    """Collects confluent-kafka `Message`s of one partition; `build()` makes a RecordBatch.

    Per record it only asks each `Message` for its fields; the columns are made in `build()`,
    where the usual cases cost nothing per record: the topic and partition columns are one value
    repeated, a batch whose records all have one timestamp type gets that type repeated, one
    without headers gets empty header lists from offsets alone, and timestamps are scaled to
    microseconds in one vectorized step."""

    def __init__(self, topic: str, partition: int) -> None:
        self._topic = pa.scalar(topic, pa.string())
        self._partition = pa.scalar(partition, pa.int32())
        self._reset()

    def _reset(self) -> None:
        self._keys: list[bytes | None] = []
        self._values: list[bytes | None] = []
        self._offsets: list[int] = []
        self._kinds: list[int] = []
        self._millis: list[int] = []
        self._headers: list[Headers | None] = []

    def __len__(self) -> int:
        return len(self._offsets)

    def extend(self, messages: Sequence[Any], offsets: Sequence[int]) -> None:
        """Append records (confluent-kafka Messages without error) and their `offsets`, a whole
        run at once: one pass per field, no per-record method of the builder."""
        if not messages:
            return
        self._keys += [m.key() for m in messages]
        self._values += [m.value() for m in messages]
        self._offsets += offsets
        kinds, millis = zip(*[m.timestamp() for m in messages], strict=True)
        self._kinds += kinds
        self._millis += millis
        self._headers += [m.headers() for m in messages]

    def build(self) -> pa.RecordBatch:
        """The collected records as one batch; the builder is empty afterwards."""
        schema = arrow_schema()
        count = len(self._offsets)
        arrays = [
            pa.array(self._keys, pa.binary()),
            pa.array(self._values, pa.binary()),
            pa.repeat(self._topic, count),
            pa.repeat(self._partition, count),
            pa.array(self._offsets, pa.int64()),
            _timestamps(self._kinds, self._millis, schema.field("timestamp").type),
            _timestamp_types(self._kinds),
            _headers(self._headers, schema.field("headers").type),
        ]
        batch = pa.RecordBatch.from_arrays(arrays, schema=schema)
        self._reset()
        return batch


def _timestamp_types(kinds: list[int]) -> pa.Array:
    """Kafka's timestamp type ids for librdkafka's `kinds` (one value repeated when all agree)."""
    if kinds and kinds.count(kinds[0]) == len(kinds):
        return pa.repeat(pa.scalar(_TIMESTAMP_TYPE.get(kinds[0], -1), pa.int32()), len(kinds))
    return pa.array([_TIMESTAMP_TYPE.get(kind, -1) for kind in kinds], pa.int32())


def _timestamps(kinds: list[int], millis: list[int], timestamp_type: pa.DataType) -> pa.Array:
    """Microsecond timestamps from librdkafka's milliseconds; null where there is none (type
    "not available", or a negative value)."""
    micros = pc.multiply_checked(pa.array(millis, pa.int64()), 1000)
    if 0 in kinds or (millis and min(millis) < 0):
        present = pa.array(
            [kind != 0 and ms >= 0 for kind, ms in zip(kinds, millis, strict=True)], pa.bool_()
        )
        micros = pc.if_else(present, micros, pa.scalar(None, pa.int64()))
    return micros.cast(timestamp_type)


def _headers(every_headers: list[Headers | None], headers_type: pa.DataType) -> pa.Array:
    """The headers column: each record's (key, value) pairs, an empty list for none."""
    if every_headers.count(None) == len(every_headers):
        no_entries = pa.array([], headers_type.value_type)
        zeros = pa.repeat(pa.scalar(0, pa.int32()), len(every_headers) + 1)
        return pa.ListArray.from_arrays(zeros, no_entries, type=headers_type)
    return pa.array(
        [[{"key": k, "value": v} for k, v in hs] if hs else [] for hs in every_headers], headers_type
    )
