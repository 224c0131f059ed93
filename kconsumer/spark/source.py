"""The ``kconsumer`` PySpark data source: streaming and batch reads of Kafka topics.

::

    from kconsumer.spark import register

    register(spark)
    events = (
        spark.readStream.format("kconsumer")
        .option("kafka.bootstrap.servers", "broker:9092")
        .option("group.id", "orders-pipeline")
        .option("subscribe", "orders")
        .load()
    )

How a streaming query works (docs/spark.md has the whole story):

- **The driver is the group member.** The stream reader's driver-side methods (``initialOffset``,
  ``latestOffset``, ``partitions``, ``commit``) run in one long-lived Python process per query;
  the first of them creates a membership-only kconsumer `Consumer` there (`DriverMember`, kept in
  `MEMBERS` by reader identity, never pickled).
- **latestOffset is the batch boundary.** Spark calls it only when the previous batch completed
  (its sink output and commit log are written), with that batch's end as `start`. There the
  source (1) commits `start` to the group for partitions it still owns, (2) calls ``poll(0)``, so
  pending rebalance callbacks run: revoked partitions get their completed offsets committed, then
  the revocation is acknowledged, (3) plans the next batch's ranges for the partitions it owns now.
  ``commit(end)`` only commits offsets: Spark calls it after it planned the *next* batch and
  before running it, so acknowledging a revocation there could hand a partition to another member
  while this query is about to read it.
- **Executors read offset ranges** with a plain confluent-kafka consumer in manual-assign mode,
  never joining the group, and hand Spark Arrow record batches. A batch with more ranges than
  Spark has task slots is read by fewer tasks, each reading several ranges with one handle
  (`offsets.pack`): Spark's own cost per task is most of a small batch's time.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from typing import Any, ClassVar

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition

from ._compat import ReadAllAvailable, ReadLimit, ReadMaxRows, ReadMinRows, SupportsTriggerAvailableNow
from .batch import plan_batch
from .executor import read_ranges
from .membership import MEMBERS, DriverMember
from .offsets import OffsetRange, SourceOffset, admit, batch_ranges, pack
from .options import SourceOptions, parse_options
from .rows import SCHEMA_DDL

log = logging.getLogger("kconsumer.spark")

#: The format name: ``spark.readStream.format("kconsumer")``.
FORMAT = "kconsumer"


class RangePartition(InputPartition):
    """One Spark input partition (one task): offset ranges ``[start, until)`` of distinct Kafka
    partitions, read together with one handle."""

    def __init__(self, ranges: tuple[OffsetRange, ...]) -> None:
        super().__init__(ranges)
        self.ranges = ranges

    def __repr__(self) -> str:
        ranges = ", ".join(f"{r.topic}-{r.partition} [{r.start}, {r.until})" for r in self.ranges)
        return f"RangePartition({ranges})"


def _input_partitions(ranges: list[OffsetRange], options: SourceOptions) -> list[InputPartition]:
    return [RangePartition(task) for task in pack(ranges, options.task_slots)]


class KConsumerDataSource(DataSource):
    """The ``kconsumer`` format (options: `kconsumer.spark.options`)."""

    #: The ``taskSlots`` default: the session's default parallelism, set by `register()` on the
    #: class it registers (the planner runs in a Python worker that has no SparkContext to ask).
    task_slots: ClassVar[int | None] = None

    @classmethod
    def name(cls) -> str:
        """``"kconsumer"``."""
        return FORMAT

    def schema(self) -> str:
        """Spark's Kafka row schema (`kconsumer.spark.rows`)."""
        return SCHEMA_DDL

    def reader(self, schema: Any) -> DataSourceReader:
        """A batch reader of explicit offset ranges (``spark.read.format("kconsumer")``)."""
        return KConsumerBatchReader(parse_options(self.options, streaming=False, task_slots=self.task_slots))

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        """A micro-batch reader whose driver is a member of ``group.id``."""
        return KConsumerStreamReader(parse_options(self.options, streaming=True, task_slots=self.task_slots))


def _read(options: SourceOptions, partition: InputPartition) -> Iterator[Any]:
    ranges = partition.ranges if isinstance(partition, RangePartition) else partition.value
    if ranges is None:  # Spark's stand-in partition when a batch read has nothing to read
        return iter(())
    assert isinstance(ranges, tuple), f"not a kconsumer input partition: {partition!r}"
    return read_ranges(
        options.client_config(),
        ranges,
        timeout_s=options.read_timeout_ms / 1000,
        fail_on_data_loss=options.fail_on_data_loss,
    )


class KConsumerStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The streaming reader (see the module docstring). Pickled to executors with its options and
    identity only: the group member stays in this process's `MEMBERS`."""

    def __init__(self, options: SourceOptions) -> None:
        self._options = options
        self._id = uuid.uuid4().hex
        self._target: dict[tuple[str, int], int] | None = None
        self._latest: dict[tuple[str, int], int] = {}
        self._last_end: dict[str, Any] | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"_options": self._options, "_id": self._id}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._options = state["_options"]
        self._id = state["_id"]
        self._target = None
        self._latest = {}
        self._last_end = None

    def _member(self) -> DriverMember:
        return MEMBERS.get(self._id, lambda: DriverMember(self._options))

    # -- offsets (driver) --------------------------------------------------------------------------

    def initialOffset(self) -> dict[str, Any]:
        """No partition yet: each one starts where the group's committed offset says when it is
        assigned. Starts joining the group."""
        self._member()
        return SourceOffset().to_json()

    def getDefaultReadLimit(self) -> ReadLimit:
        """``maxRecordsPerTrigger`` as a `ReadMaxRows`, else everything available."""
        limit = self._options.max_records_per_trigger
        return ReadAllAvailable() if limit is None else ReadMaxRows(limit)

    def prepareForTriggerAvailableNow(self) -> None:
        """Join, wait for the first assignment, and fix the target: the latest offset of every
        partition of the subscription now. Batches never read past it; partitions created later
        are not read."""
        member = self._member()
        member.wait_for_assignment(self._options.join_timeout_ms / 1000)
        self._target = member.cluster.list_offsets(member.cluster.partitions(), "latest")
        log.info("kconsumer: Trigger.AvailableNow target %s", self._target)

    def latestOffset(
        self, start: dict[str, Any] | None = None, limit: ReadLimit | None = None
    ) -> dict[str, Any]:
        """The batch boundary: commit the completed batch (`start`), let the group rebalance, plan
        the next batch over the partitions owned now (see the module docstring).

        Spark 4.0/4.1 pass neither argument: `start` is then the end of the last batch this reader
        planned or was asked to run, and the limit is ``maxRecordsPerTrigger``."""
        if start is None:
            start = self._last_end if self._last_end is not None else SourceOffset().to_json()
        if limit is None:
            limit = self.getDefaultReadLimit()
        end = self._plan(start, limit)
        self._last_end = end
        return end

    def _plan(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        member = self._member()
        previous = SourceOffset.from_json(start)
        member.settle(previous.offsets)
        member.boundary()
        if member.fresh and set(member.fresh) - member.owned():
            # Assigned partitions whose committed offsets are still being fetched: a short wait
            # keeps them in this batch (and keeps Trigger.AvailableNow from ending without them).
            member.wait_for_assignment(1.0)
        owned = member.owned()
        for key in owned - set(member.fresh) - set(previous.offsets):
            # Owned and planned before, but not in the batch Spark ran: start it afresh.
            member.fresh[key] = None
        starts = member.starts(previous)
        begin = {k: previous.offsets[k] for k in owned if k not in member.fresh and k in previous.offsets}
        begin.update(starts)
        latest = member.cluster.list_offsets(begin, "latest")
        self._latest = dict(latest)
        if self._target is not None:
            latest = {k: min(v, self._target.get(k, begin[k])) for k, v in latest.items()}
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        ends = admit(begin, latest, max_rows)
        new = sum(ends[k] - begin[k] for k in ends)
        if new == 0 or (isinstance(limit, ReadMinRows) and new < limit.min_rows):
            return start
        member.planned(starts)
        return SourceOffset(ends, starts).to_json()

    def reportLatestOffset(self) -> dict[str, Any] | None:
        """The latest offsets seen at the last planning, for the query's progress."""
        return SourceOffset(self._latest).to_json() if self._latest else None

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        """The ranges of the Kafka partitions with records in (start, end], packed into tasks."""
        self._member()
        self._last_end = end
        ranges = batch_ranges(SourceOffset.from_json(start), SourceOffset.from_json(end))
        return _input_partitions(ranges, self._options)

    def commit(self, end: dict[str, Any]) -> None:
        """Spark completed every batch up to `end`: commit it to the group (no rebalance here)."""
        member = MEMBERS.find(self._id)
        if member is not None:
            member.settle(SourceOffset.from_json(end).offsets)

    def stop(self) -> None:
        """Leave the group: revoked partitions get the completed batch's offsets committed."""
        MEMBERS.close(self._id)

    # -- records (executors) ---------------------------------------------------------------------------

    def read(self, partition: InputPartition) -> Iterator[Any]:
        """The records of one planned range, as Arrow record batches."""
        return _read(self._options, partition)


class KConsumerBatchReader(DataSourceReader):
    """A batch read of explicit offset ranges, or of a group's committed-to-latest range."""

    def __init__(self, options: SourceOptions) -> None:
        self._options = options

    def partitions(self) -> list[InputPartition]:
        """The ranges of the Kafka partitions with records to read, packed into tasks."""
        return _input_partitions(plan_batch(self._options), self._options)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        """The records of one range, as Arrow record batches."""
        return _read(self._options, partition)


def register(spark: Any) -> None:
    """Register the ``kconsumer`` format with a SparkSession.

    The registered class carries the session's default parallelism (its task slots) as the
    ``taskSlots`` default; where there is none to ask (Spark Connect), batches are not packed
    unless ``taskSlots`` is given."""
    spark.dataSource.register(source_class(_default_parallelism(spark)))


def source_class(task_slots: int | None) -> type[KConsumerDataSource]:
    """`KConsumerDataSource` with `task_slots` as the ``taskSlots`` default: a subclass made here,
    which Spark pickles by value, so the attribute reaches the Python workers that plan reads."""
    if task_slots is None:
        return KConsumerDataSource
    return type(
        "KConsumerDataSource",
        (KConsumerDataSource,),
        {"task_slots": task_slots, "__qualname__": "source_class.<locals>.KConsumerDataSource"},
    )


def _default_parallelism(spark: Any) -> int | None:
    try:
        slots = int(spark.sparkContext.defaultParallelism)
    except Exception:  # Spark Connect: no SparkContext on the client
        return None
    return slots if slots > 0 else None
