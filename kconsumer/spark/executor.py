"""Reading one offset range on an executor: a plain confluent-kafka consumer in manual-assign mode.

Executors never join the consumer group: the driver (the group member) planned the range, and
the executor reads ``[start, until)`` of one partition with a librdkafka handle that is assigned
at `start` and never subscribes or commits. Each range gets a new handle, closed when the range
is read: from its creation to its first record takes about 12 ms on the reference broker, and an
idle handle kept for the next task would hold connections (and log their failures) to clusters
that may be gone by then.

A range ends when a record at or past `until` arrives, or when the partition's end (EOF) is at
or past `until`: offsets missing inside the range (compaction, transaction markers, aborted
records under read_committed) are simply absent. A range that cannot be completed within the
read timeout fails the task with `RangeReadError`, naming the partition, the range and the offset
reached. Records deleted by retention before they were read (the range starts below the log
start offset) fail the task when ``failOnDataLoss`` is true, and are skipped otherwise.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import threading
import time
from bisect import bisect_left
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
        with _collection_paused():
            yield from _read(handle, rng, timeout_s, fail_on_data_loss, batch_rows)
    finally:
        handle.close()


_paused_reads = 0
_paused_lock = threading.Lock()
_collector_was_enabled = False


@contextlib.contextmanager
def _collection_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while ranges are read (on again after the last).

    A read allocates about ten thousand container objects per `consume()` (librdkafka messages,
    timestamp tuples, column lists) and keeps a batch's worth alive: the collector then runs over
    and over, promoting them, and took about a third of a range's read time (0.80 s against 0.49 s
    for 400,000 records of 100 B read one range after the other). The read makes no reference
    cycles, so reference counting frees everything meanwhile."""
    global _paused_reads, _collector_was_enabled
    with _paused_lock:
        if _paused_reads == 0:
            _collector_was_enabled = gc.isenabled()
            gc.disable()
        _paused_reads += 1
    try:
        yield
    finally:
        with _paused_lock:
            _paused_reads -= 1
            if _paused_reads == 0 and _collector_was_enabled:
                gc.enable()


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
        run_start = 0
        # Records come in runs between error events (EOF, usually last); each run is added whole.
        for index in [i for i, m in enumerate(messages) if m.error() is not None] + [len(messages)]:
            next_offset = _add_run(builder, messages[run_start:index], next_offset, until)
            if next_offset >= until or index == len(messages):
                break
            run_start = index + 1
            error = messages[index].error()
            assert error is not None  # the index of an error event
            code = error.code()
            if code == KafkaError._PARTITION_EOF:
                log_end = messages[index].offset()
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
        if len(builder) >= batch_rows:
            yield builder.build()
        if not messages and next_offset < until:
            position = handle.position([TopicPartition(topic, partition)])[0].offset
            if position >= until:
                next_offset = until
    if len(builder):
        yield builder.build()


def _add_run(builder: BatchBuilder, messages: list[Any], next_offset: int, until: int) -> int:
    """Add the records of `messages` (no error events; one partition, so offsets increase) that
    fall in ``[next_offset, until)``; the offset to read next (`until` once a record reached it)."""
    if not messages:
        return next_offset
    offsets = [m.offset() for m in messages]
    first = bisect_left(offsets, next_offset)  # records below it were read already (a replay)
    end = bisect_left(offsets, until)
    if first < end:
        builder.extend(messages[first:end], offsets[first:end])
        next_offset = offsets[end - 1] + 1
    return until if end < len(offsets) else next_offset
