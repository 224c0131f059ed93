"""Reading offset ranges on an executor: a plain confluent-kafka consumer in manual-assign mode.

Executors never join the consumer group: the driver (the group member) planned the ranges, and
an executor task reads its ranges ``[start, until)`` (one, or several when the planner packed a
batch's ranges into fewer tasks: `offsets.pack`) with one librdkafka handle that is assigned every
range at its start and never subscribes or commits. A task's handle is new and closed when its
ranges are read: from its creation to its first record takes about 12 ms on the reference broker,
and an idle handle kept for the next task would hold connections (and log their failures) to
clusters that may be gone by then.

A range ends when a record at or past `until` arrives, or when the partition's end (EOF) is at
or past `until`: offsets missing inside the range (compaction, transaction markers, aborted
records under read_committed) are simply absent. A finished range's partition is unassigned
while the task's other ranges go on. Ranges that cannot be completed within the read timeout
fail the task with `RangeReadError`, naming each partition, its range and the offset reached.
Records deleted by retention before they were read (a range starts below the log start offset)
fail the task when ``failOnDataLoss`` is true, and are skipped otherwise.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import threading
import time
from bisect import bisect_left
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
from confluent_kafka import Consumer as RdKafkaConsumer
from confluent_kafka import KafkaError, TopicPartition

from ..client.config import FETCH_HANDLE_DEFAULTS
from .offsets import OffsetRange
from .rows import BatchBuilder

log = logging.getLogger("kconsumer.spark")

#: Rows per Arrow batch handed to Spark (at most).
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


def read_ranges(
    client_config: Mapping[str, Any],
    ranges: Sequence[OffsetRange],
    *,
    timeout_s: float,
    fail_on_data_loss: bool = True,
    batch_rows: int = BATCH_ROWS,
) -> Iterator[pa.RecordBatch]:
    """The records of `ranges` (of distinct partitions) as Arrow batches of the Kafka row
    schema, each batch of one partition (see the module docstring)."""
    wanted = [r for r in ranges if r.size > 0]
    if not wanted:
        return
    handle = RdKafkaConsumer(reader_config(client_config, fail_on_data_loss))
    try:
        handle.assign([TopicPartition(r.topic, r.partition, r.start) for r in wanted])
        with _collection_paused():
            yield from _read(handle, wanted, timeout_s, fail_on_data_loss, batch_rows)
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


class _Reading:
    """One range being read: how far it got, and its records not yet handed to Spark."""

    def __init__(self, rng: OffsetRange) -> None:
        self.range = rng
        self.next_offset = rng.start
        self.log_end: int | None = None
        self.builder = BatchBuilder(rng.topic, rng.partition)

    @property
    def done(self) -> bool:
        return self.next_offset >= self.range.until

    @property
    def left(self) -> int:
        return self.range.until - self.next_offset

    def add(self, messages: list[Any]) -> None:
        """Add the records of `messages` (no error events; this partition's, so offsets increase)
        that fall in ``[next_offset, until)``; a record at or past `until` ends the range."""
        if not messages:
            return
        until = self.range.until
        offsets = [m.offset() for m in messages]
        first = bisect_left(offsets, self.next_offset)  # records below it were read already (a replay)
        end = bisect_left(offsets, until)
        if first < end:
            self.builder.extend(messages[first:end], offsets[first:end])
            self.next_offset = offsets[end - 1] + 1
        if end < len(offsets):
            self.next_offset = until

    def failed(self, message: Any, fail_on_data_loss: bool) -> None:
        """This partition's error event `message`: the end of its log, lost records, or a client
        error (raised when fatal, else librdkafka retries)."""
        error = message.error()
        topic, partition = self.range.topic, self.range.partition
        code = error.code()
        if code == KafkaError._PARTITION_EOF:
            self.log_end = message.offset()
            if self.log_end is not None and self.log_end >= self.range.until:
                self.next_offset = self.range.until
            return
        if code in _DATA_LOSS:
            if fail_on_data_loss:
                raise RangeReadError(
                    f"data loss reading {self.describe()} at {self.next_offset}: {error.str()} "
                    "(set failOnDataLoss=false to skip lost records)"
                )
            if code in (KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE):
                log.warning("kconsumer: %s-%d: records lost, skipping: %s", topic, partition, error)
                return
            log.warning("kconsumer: %s-%d is gone: %s", topic, partition, error)
            self.next_offset = self.range.until
            return
        _client_error(message, f"reading {topic}-{partition}")

    def describe(self) -> str:
        r = self.range
        return f"{r.topic}-{r.partition} offsets [{r.start}, {r.until})"

    def progress(self) -> str:
        end = "" if self.log_end is None else f"; the partition's log ends at {self.log_end}"
        return f"{self.describe()}: reached offset {self.next_offset}{end}"


def _client_error(message: Any, doing: str) -> None:
    """An error event that is no partition's end or data loss: fatal ones fail the task."""
    error = message.error()
    if error.fatal():
        raise RangeReadError(f"{doing}: {error.str()}")
    log.info("kconsumer: %s: %s (retrying)", doing, error)


def _read(
    handle: RdKafkaConsumer,
    ranges: Sequence[OffsetRange],
    timeout_s: float,
    fail_on_data_loss: bool,
    batch_rows: int,
) -> Iterator[pa.RecordBatch]:
    reading = {(r.topic, r.partition): _Reading(r) for r in ranges}
    record_keys = _record_keys(ranges)
    deadline = time.monotonic() + timeout_s
    while reading:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            progress = ", and ".join(r.progress() for r in reading.values())
            raise RangeReadError(f"timed out after {timeout_s:g} s reading {progress} (readTimeoutMs)")
        # At most the records left: librdkafka's consume() returns as soon as it has that many.
        wanted = max(1, min(batch_rows, sum(r.left for r in reading.values())))
        messages = handle.consume(wanted, min(remaining, _SLICE_S))
        touched: dict[tuple[str, int], _Reading] = {}
        for records, error in _pieces(messages, record_keys):
            first = error if error is not None else records[0]
            key = (first.topic(), first.partition())
            r = reading.get(key)
            if r is None:  # a finished range's records fetched ahead, or an error of the client's
                if error is not None and key[0] is None:
                    _client_error(error, "reading")
                continue
            if error is None:
                r.add(records)
            elif not r.done:
                r.failed(error, fail_on_data_loss)
            touched[key] = r
        if not messages:
            keys = list(reading)
            positions = handle.position([TopicPartition(t, p) for t, p in keys])
            for key, position in zip(keys, positions, strict=True):
                if position.offset >= reading[key].range.until:  # past trailing transaction markers
                    reading[key].next_offset = reading[key].range.until
                    touched[key] = reading[key]
        for key, r in touched.items():
            if r.done or len(r.builder) >= batch_rows:
                yield from _batches(r.builder, batch_rows)
            if r.done:
                del reading[key]
                if reading:  # the handle stops fetching what no range needs
                    handle.incremental_unassign([TopicPartition(*key)])


def _record_keys(ranges: Sequence[OffsetRange]) -> Callable[[list[Any]], list[Any]] | None:
    """How to tell the messages of a consume() result apart by range: nothing to tell with one
    range, the partition number when the ranges are of one topic, else (topic, partition)."""
    if len(ranges) == 1:
        return None
    if len({r.topic for r in ranges}) == 1:
        return lambda messages: [m.partition() for m in messages]
    return lambda messages: [(m.topic(), m.partition()) for m in messages]


def _pieces(
    messages: list[Any], record_keys: Callable[[list[Any]], list[Any]] | None
) -> Iterator[tuple[list[Any], Any]]:
    """A consume() result cut, in order, into pieces: ``(records, None)``, consecutive messages
    of one partition without error, or ``([], event)``, one error event."""
    errors = {i for i, m in enumerate(messages) if m.error() is not None}
    cuts = set(errors)
    if record_keys is not None:
        keys = record_keys(messages)
        cuts.update(i for i in range(1, len(keys)) if keys[i] != keys[i - 1])
    start = 0
    for cut in [*sorted(cuts), len(messages)]:
        if cut > start:
            yield messages[start:cut], None
        if cut in errors:
            yield [], messages[cut]
            cut += 1
        start = cut


def _batches(builder: BatchBuilder, batch_rows: int) -> Iterator[pa.RecordBatch]:
    """The builder's records as batches of at most `batch_rows` rows (slices of one batch)."""
    if not len(builder):
        return
    batch = builder.build()
    if batch.num_rows <= batch_rows:
        yield batch
        return
    for offset in range(0, batch.num_rows, batch_rows):
        yield batch.slice(offset, batch_rows)
