"""Reading one offset range on an executor: a plain confluent-kafka consumer in manual-assign mode.

Executors never join the consumer group: the driver (the group member) planned the range, and
the executor reads ``[start, until)`` of one partition with a librdkafka handle that is assigned
at `start` and never subscribes or commits. Handles are reused across tasks of the same Python
worker (one idle handle per configuration), since creating one costs a connection and a metadata
round trip.

A range ends when a record at or past `until` arrives, or when the partition's end (EOF) is at
or past `until`: offsets missing inside the range (compaction, transaction markers, aborted
records under read_committed) are simply absent. A range that cannot be completed within the
read timeout fails the task with `RangeReadError`, naming the partition, the range and the offset
reached. Records deleted by retention before they were read (the range starts below the log
start offset) fail the task when ``failOnDataLoss`` is true, and are skipped otherwise.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa
from confluent_kafka import Consumer as RdKafkaConsumer
from confluent_kafka import KafkaError, TopicPartition

from ..client.config import FETCH_HANDLE_DEFAULTS
from .offsets import OffsetRange
from .rows import BatchBuilder

log = logging.getLogger("kconsumer.spark")

#: Rows per Arrow batch handed to Spark.
BATCH_ROWS = 10_000
#: Longest single wait inside librdkafka (short: a range with gaps has fewer records than offsets).
_SLICE_S = 0.1

_DATA_LOSS = frozenset(
    {
        KafkaError._AUTO_OFFSET_RESET,
        KafkaError.OFFSET_OUT_OF_RANGE,
        KafkaError.UNKNOWN_TOPIC_OR_PART,
        KafkaError._UNKNOWN_PARTITION,
        KafkaError._UNKNOWN_TOPIC,
    }
)


class RangeReadError(RuntimeError):
    """An offset range could not be read completely (timeout, data loss, client error)."""


def reader_config(client_config: Mapping[str, Any], fail_on_data_loss: bool) -> dict[str, Any]:
    """The librdkafka settings of an executor's reading handle (with the fetch handle's defaults
    kconsumer's consumer uses, unless the client settings choose otherwise)."""
    config = {**FETCH_HANDLE_DEFAULTS, **client_config}
    config.update(
        {
            # librdkafka requires a group id on a consumer handle; this one never joins or commits.
            "group.id": "kconsumer-spark-reader",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": True,
            "auto.offset.reset": "error" if fail_on_data_loss else "earliest",
        }
    )
    return config


def read_range(
    client_config: Mapping[str, Any],
    rng: OffsetRange,
    *,
    timeout_s: float,
    fail_on_data_loss: bool = True,
    batch_rows: int = BATCH_ROWS,
) -> Iterator[pa.RecordBatch]:
    """The records of `rng` as Arrow batches of the Kafka row schema (see the module docstring)."""
    if rng.size == 0:
        return
    handle = RdKafkaConsumer(reader_config(client_config, fail_on_data_loss))
    try:
        handle.assign([TopicPartition(rng.topic, rng.partition, rng.start)])
        yield from _read(handle, rng, timeout_s, fail_on_data_loss, batch_rows)
    finally:
        handle.close()


def _read(
    handle: RdKafkaConsumer, rng: OffsetRange, timeout_s: float, fail_on_data_loss: bool, batch_rows: int
) -> Iterator[pa.RecordBatch]:
    topic, partition, until = rng.topic, rng.partition, rng.until
    builder = BatchBuilder(topic, partition)
    next_offset = rng.start
    deadline = time.monotonic() + timeout_s
    log_end: int | None = None
    while next_offset < until:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            end = "" if log_end is None else f"; the partition's log ends at {log_end}"
            raise RangeReadError(
                f"timed out after {timeout_s:g} s reading {topic}-{partition} offsets "
                f"[{rng.start}, {until}): reached offset {next_offset}{end} (readTimeoutMs)"
            )
        # At most the records left: librdkafka's consume() returns as soon as it has that many.
        wanted = max(1, min(batch_rows - len(builder), until - next_offset))
        messages = handle.consume(wanted, min(remaining, _SLICE_S))
        for message in messages:
            error = message.error()
            if error is not None:
                code = error.code()
                if code == KafkaError._PARTITION_EOF:
                    log_end = message.offset()
                    if log_end is not None and log_end >= until:
                        next_offset = until
                        break
                    continue
                if code in _DATA_LOSS:
                    if fail_on_data_loss:
                        raise RangeReadError(
                            f"data loss reading {topic}-{partition} offsets [{rng.start}, {until}) at "
                            f"{next_offset}: {error.str()} (set failOnDataLoss=false to skip lost records)"
                        )
                    if code in (KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE):
                        log.warning("kconsumer: %s-%d: records lost, skipping: %s", topic, partition, error)
                        continue
                    log.warning("kconsumer: %s-%d is gone: %s", topic, partition, error)
                    next_offset = until
                    break
                if error.fatal():
                    raise RangeReadError(f"reading {topic}-{partition}: {error.str()}")
                log.info("kconsumer: %s-%d: %s (retrying)", topic, partition, error)
                continue
            offset = message.offset()
            if offset is None or offset < next_offset:
                continue
            if offset >= until:
                next_offset = until
                break
            builder.add(message)
            next_offset = offset + 1
            if len(builder) >= batch_rows:
                yield builder.build()
        if not messages and next_offset < until:
            position = handle.position([TopicPartition(topic, partition)])[0].offset
            if position >= until:
                next_offset = until
    if len(builder):
        yield builder.build()
