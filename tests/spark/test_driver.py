"""The stream reader's driver side without a JVM: its group member, rebalances at batch
boundaries only, planning, and what gets pickled to executors."""

from __future__ import annotations

import pickle
import time
from collections.abc import Iterator
from typing import Any

import pytest

from kconsumer.testing import ReferenceCluster

pytest.importorskip("pyspark")

from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from kconsumer.spark.membership import MEMBERS, DriverMember
from kconsumer.spark.offsets import SourceOffset
from kconsumer.spark.options import parse_options
from kconsumer.spark.source import KConsumerDataSource, KConsumerStreamReader


@pytest.fixture
def cluster() -> Iterator[ReferenceCluster]:
    with ReferenceCluster(
        heartbeat_interval_ms=50, session_timeout_ms=4000, assignment_interval_ms=0
    ) as running:
        yield running


def _reader(cluster: ReferenceCluster, group: str = "g", **options: str) -> KConsumerStreamReader:
    source = KConsumerDataSource(
        {"kafka.bootstrap.servers": cluster.bootstrap_servers, "group.id": group, "subscribe": "t", **options}
    )
    reader = source.streamReader(None)
    assert isinstance(reader, KConsumerStreamReader)
    return reader


def _owned(cluster: ReferenceCluster, group: str = "g") -> list[set[tuple[str, int]]]:
    described = cluster.describe_group(group)
    return [] if described is None else [m.owned for m in described.members.values()]


def _plan_until(
    reader: KConsumerStreamReader, start: dict[str, Any], timeout: float = 10.0
) -> dict[str, Any]:
    """latestOffset until it plans something (the first calls may come before the assignment)."""
    deadline = time.monotonic() + timeout
    while True:
        end = reader.latestOffset(start, ReadAllAvailable())
        if end != start or time.monotonic() > deadline:
            return end
        time.sleep(0.05)


def _read(reader: KConsumerStreamReader, start: dict[str, Any], end: dict[str, Any]) -> list[tuple[int, int]]:
    out = []
    for partition in reader.partitions(start, end):
        for batch in reader.read(pickle.loads(pickle.dumps(partition))):
            out.extend((row["partition"], row["offset"]) for row in batch.to_pylist())
    return sorted(out)


def test_partitions_move_only_at_batch_boundaries(cluster: ReferenceCluster) -> None:
    cluster.create_topic("t", partitions=2)
    cluster.produce("t", [f"v{i}" for i in range(20)])  # 10 per partition
    a = _reader(cluster, startingOffsets="earliest")
    b = _reader(cluster)
    try:
        start = a.initialOffset()
        end = _plan_until(a, start)
        assert SourceOffset.from_json(end) == SourceOffset(
            {("t", 0): 10, ("t", 1): 10}, starts={("t", 0): 0, ("t", 1): 0}
        )
        assert len(_read(a, start, end)) == 20
        cluster.produce("t", [f"w{i}" for i in range(4)])  # 2 more per partition

        # B joins. A is "running a batch" (no latestOffset call): nothing moves, however long.
        b_start = b.initialOffset()
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            assert b.latestOffset(b_start, ReadAllAvailable()) == b_start
            time.sleep(0.05)
        assert sorted(len(o) for o in _owned(cluster)) == [0, 2]
        assert cluster.committed("g") == {}  # A's batch is not complete yet

        # A's batch completed: the next latestOffset commits it, acknowledges the revocation
        # (after committing the revoked partition's final offset) and plans without it.
        a_end = a.latestOffset(end, ReadAllAvailable())
        assert cluster.committed("g") == {("t", 0): 10, ("t", 1): 10}
        kept = set(SourceOffset.from_json(a_end).offsets)
        assert len(kept) == 1
        b_end = _plan_until(b, b_start)
        moved = set(SourceOffset.from_json(b_end).offsets)
        assert moved and moved.isdisjoint(kept)
        # B starts exactly where A's completed batch ended: no gap, no overlap.
        assert SourceOffset.from_json(b_end).starts == dict.fromkeys(moved, 10)
        assert [o for _, o in _read(b, b_start, b_end)] == [10, 11]
        assert [o for _, o in _read(a, end, a_end)] == [10, 11]
    finally:
        a.stop()
        b.stop()
    assert not MEMBERS.find(a._id) and not MEMBERS.find(b._id)


def test_the_revocation_callback_commits_the_completed_batch(cluster: ReferenceCluster) -> None:
    cluster.create_topic("t", partitions=2)
    options = parse_options(
        {"kafka.bootstrap.servers": cluster.bootstrap_servers, "group.id": "g", "subscribe": "t"},
        streaming=True,
    )
    a = DriverMember(options)
    b: DriverMember | None = None
    try:
        a.wait_for_assignment(10)
        assert a.owned() == {("t", 0), ("t", 1)}
        assert a.starts(SourceOffset()) == {("t", 0): 0, ("t", 1): 0}
        a.planned(a.owned())
        a.settle({("t", 0): 0, ("t", 1): 0})
        # A batch completed but its commit did not happen (say the coordinator was away).
        a.completed.update({("t", 0): 7, ("t", 1): 7})
        b = DriverMember(options)
        deadline = time.monotonic() + 10
        while not b.owned() and time.monotonic() < deadline:
            a.boundary()
            b.boundary()
            time.sleep(0.02)
        [moved] = b.owned()
        assert cluster.committed("g")[moved] == 7
        assert b.starts(SourceOffset()) == {moved: 7}
        # A partition the checkpoint completed further than the group knows starts there and is
        # committed: a restarted query does not re-read its completed batches.
        b.fresh[moved] = None
        assert b.starts(SourceOffset({moved: 9})) == {moved: 9}
        assert cluster.committed("g")[moved] == 9
    finally:
        a.close()
        if b is not None:
            b.close()


def test_admission_control_and_the_default_read_limit(cluster: ReferenceCluster) -> None:
    cluster.create_topic("t", partitions=2)
    cluster.produce("t", [f"v{i}" for i in range(40)])
    assert isinstance(_reader(cluster).getDefaultReadLimit(), ReadAllAvailable)
    reader = _reader(cluster, startingOffsets="earliest", maxRecordsPerTrigger="15")
    assert reader.getDefaultReadLimit() == ReadMaxRows(15)
    try:
        start = reader.initialOffset()
        deadline = time.monotonic() + 10
        while True:
            end = reader.latestOffset(start, ReadMaxRows(15))
            if end != start or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert sum(SourceOffset.from_json(end).offsets.values()) == 15
        assert len(_read(reader, start, end)) == 15
        later = reader.latestOffset(end, ReadAllAvailable())
        assert sum(SourceOffset.from_json(later).offsets.values()) == 40
        assert reader.latestOffset(later, ReadAllAvailable()) == later  # nothing new: same offset
        assert reader.reportLatestOffset() == SourceOffset({("t", 0): 20, ("t", 1): 20}).to_json()
    finally:
        reader.stop()


def test_only_options_and_identity_are_pickled(cluster: ReferenceCluster) -> None:
    cluster.create_topic("t", partitions=1)
    reader = _reader(cluster)
    try:
        reader.initialOffset()  # the member now exists, in this process's registry
        member = MEMBERS.find(reader._id)
        assert member is not None
        copy = pickle.loads(pickle.dumps(reader))
        assert copy._id == reader._id and copy._options == reader._options
        assert set(vars(copy)) == {"_options", "_id", "_target", "_latest", "_last_end"}
        pickled = pickle.dumps(reader)
        assert b"DriverMember" not in pickled and b"kconsumer.client.consumer" not in pickled
        assert MEMBERS.find(reader._id) is member
    finally:
        reader.stop()
    assert _owned(cluster) == []


def test_latest_offset_without_arguments_as_spark_4_0_calls_it(cluster: ReferenceCluster) -> None:
    """Spark 4.0/4.1 call latestOffset() with no start and no limit: the reader continues from
    the last batch it planned and applies maxRecordsPerTrigger itself."""
    cluster.create_topic("t", partitions=1)
    cluster.produce("t", [f"v{i}" for i in range(25)])
    reader = _reader(cluster, startingOffsets="earliest", maxRecordsPerTrigger="10")
    try:
        reader.initialOffset()
        deadline = time.monotonic() + 10
        ends = []
        while len(ends) < 3 and time.monotonic() < deadline:
            end = SourceOffset.from_json(reader.latestOffset()).offsets.get(("t", 0))
            if end is not None and (not ends or end != ends[-1]):
                ends.append(end)
            time.sleep(0.02)
        assert ends == [10, 20, 25]
        assert cluster.committed("g") == {("t", 0): 20}  # the batch ending at 20 completed
    finally:
        reader.stop()
    # Stopping with the batch ending at 25 planned but not known complete: it is not committed.
    assert cluster.committed("g") == {("t", 0): 20}
