"""Reading offset ranges on an executor: a manual-assign confluent-kafka handle, Arrow batches
(no Spark needed: read_ranges is called directly)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka import Producer, TopicPartition

from kconsumer.testing import ReferenceCluster

pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install 'kconsumer[spark]')")

from kconsumer.spark.executor import RangeReadError, read_ranges
from kconsumer.spark.offsets import OffsetRange
from kconsumer.spark.rows import arrow_schema


@pytest.fixture
def cluster() -> Iterator[ReferenceCluster]:
    with ReferenceCluster() as running:
        yield running


def _rows(cluster: ReferenceCluster, rng: OffsetRange, **kwargs: object) -> list[dict[str, object]]:
    config = {"bootstrap.servers": cluster.bootstrap_servers}
    batches = list(read_ranges(config, [rng], timeout_s=kwargs.pop("timeout_s", 10.0), **kwargs))  # type: ignore[arg-type]
    for batch in batches:
        assert batch.schema.equals(arrow_schema())
    return [row for batch in batches for row in batch.to_pylist()]


def test_reads_exactly_the_range_with_keys_headers_and_timestamps(cluster: ReferenceCluster) -> None:
    cluster.create_topic("t", partitions=1)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for i in range(10):
        producer.produce(
            "t",
            value=f"v{i}".encode(),
            key=b"k" if i % 2 else None,
            headers=[("h", b"x")],
            timestamp=1000 + i,
        )
    producer.flush(10)
    rows = _rows(cluster, OffsetRange("t", 0, 3, 7))
    assert [r["offset"] for r in rows] == [3, 4, 5, 6]
    assert [r["value"] for r in rows] == [b"v3", b"v4", b"v5", b"v6"]
    assert [r["key"] for r in rows] == [b"k", None, b"k", None]
    assert {r["topic"] for r in rows} == {"t"} and {r["partition"] for r in rows} == {0}
    assert rows[0]["headers"] == [{"key": "h", "value": b"x"}]
    assert rows[0]["timestampType"] == 0
    assert rows[0]["timestamp"].timestamp() == pytest.approx(1.003)  # type: ignore[attr-defined]


def test_batches_hold_at_most_batch_rows(cluster: ReferenceCluster) -> None:
    cluster.create_topic("t", partitions=2)
    cluster.produce("t", [f"v{i}" for i in range(25)], partition=1)
    config = {"bootstrap.servers": cluster.bootstrap_servers}
    sizes = [
        b.num_rows for b in read_ranges(config, [OffsetRange("t", 1, 0, 25)], timeout_s=10, batch_rows=10)
    ]
    assert sizes == [10, 10, 5]
    assert list(read_ranges(config, [OffsetRange("t", 1, 5, 5)], timeout_s=10)) == []


def test_a_range_past_the_log_end_times_out_clearly(cluster: ReferenceCluster) -> None:
    cluster.create_topic("t", partitions=1)
    cluster.produce("t", ["a", "b"])
    with pytest.raises(
        RangeReadError, match=r"timed out after 0.5 s reading t-0 offsets \[0, 5\): reached offset 2"
    ):
        _rows(cluster, OffsetRange("t", 0, 0, 5), timeout_s=0.5)


def test_records_deleted_by_retention_fail_or_are_skipped() -> None:
    with ReferenceCluster(retention_bytes=2000) as cluster:
        cluster.create_topic("t", partitions=1)
        for _ in range(20):
            cluster.produce("t", ["x" * 100] * 5)
        log_start, end = cluster.watermarks("t")[0]
        assert log_start > 0
        with pytest.raises(RangeReadError, match="data loss reading t-0"):
            _rows(cluster, OffsetRange("t", 0, 0, end))
        rows = _rows(cluster, OffsetRange("t", 0, 0, end), fail_on_data_loss=False)
        assert [r["offset"] for r in rows] == list(range(log_start, end))


class _Message:
    def __init__(self, offset: int, error: object = None, partition: int = 0) -> None:
        self._offset, self._error, self._partition = offset, error, partition

    def error(self) -> object:
        return self._error

    def topic(self) -> str:
        return "t"

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def key(self) -> bytes | None:
        return None

    def value(self) -> bytes:
        return b"v%d" % self._offset

    def timestamp(self) -> tuple[int, int]:
        return (1, 5)

    def headers(self) -> None:
        return None


class _Eof:
    def code(self) -> int:
        from confluent_kafka import KafkaError

        return KafkaError._PARTITION_EOF


class _Handle:
    """Hands out scripted consume() results, then nothing; a fixed position (of every partition)."""

    def __init__(self, *results: list[_Message], position: int = -1001) -> None:
        self._results = list(results)
        self._position = position
        self.unassigned: list[int] = []

    def consume(self, num: int, timeout: float) -> list[_Message]:
        return self._results.pop(0) if self._results else []

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        return [TopicPartition(tp.topic, tp.partition, self._position) for tp in partitions]

    def incremental_unassign(self, partitions: list[TopicPartition]) -> None:
        self.unassigned += [tp.partition for tp in partitions]


def _fake_rows(handle: _Handle, ranges: list[OffsetRange], timeout_s: float = 1.0) -> list[tuple[int, int]]:
    from kconsumer.spark.executor import _read

    batches = list(_read(handle, ranges, timeout_s, True, 100))  # type: ignore[arg-type]
    for batch in batches:  # each batch holds one partition's records
        assert len(set(batch.column("partition").to_pylist())) == 1
    return [(row["partition"], row["offset"]) for batch in batches for row in batch.to_pylist()]


def _fake_read(handle: _Handle, start: int, until: int, timeout_s: float = 1.0) -> list[int]:
    return [offset for _p, offset in _fake_rows(handle, [OffsetRange("t", 0, start, until)], timeout_s)]


def test_gaps_inside_and_at_the_end_of_a_range() -> None:
    # Compacted away: 2, 3 and 6, 7; the log ends (EOF) at 8, the range's end.
    handle = _Handle([_Message(0), _Message(1), _Message(4)], [_Message(5), _Message(8, _Eof())])
    assert _fake_read(handle, 0, 8) == [0, 1, 4, 5]
    # A record at or past the end ends the range (the end offset itself was compacted away).
    assert _fake_read(_Handle([_Message(10), _Message(13)]), 10, 12) == [10]
    # Nothing returned, but the position is already past the end (trailing transaction markers).
    assert _fake_read(_Handle([_Message(20)], position=23), 20, 23) == [20]


def test_a_log_ending_before_the_range_end_times_out_naming_it() -> None:
    handle = _Handle([_Message(0), _Message(1, _Eof())])
    with pytest.raises(RangeReadError, match=r"reached offset 1; the partition's log ends at 1"):
        _fake_read(handle, 0, 3, timeout_s=0.3)


def test_records_around_an_error_event_and_a_replay_are_each_read_once() -> None:
    # A batch repeats offsets already read (a replay after a reconnect) and holds an EOF event
    # in its middle (the log ended at 3 then grew): the runs before and after it are both read.
    handle = _Handle(
        [_Message(0), _Message(1)],
        [_Message(0), _Message(1), _Message(2), _Message(3, _Eof()), _Message(3), _Message(4)],
    )
    assert _fake_read(handle, 0, 5) == [0, 1, 2, 3, 4]


def test_the_collector_is_paused_while_ranges_are_read_and_back_after_the_last() -> None:
    import gc

    from kconsumer.spark.executor import _collection_paused

    assert gc.isenabled()
    first, second = _collection_paused(), _collection_paused()
    first.__enter__()
    second.__enter__()  # two reads interleaved (two generators on one thread)
    assert not gc.isenabled()
    first.__exit__(None, None, None)
    assert not gc.isenabled()  # the other read goes on
    second.__exit__(None, None, None)
    assert gc.isenabled()


def test_an_abandoned_read_turns_the_collector_back_on(cluster: ReferenceCluster) -> None:
    import gc

    cluster.create_topic("t", 1)
    cluster.produce("t", [b"x"] * 30, partition=0)
    config = {"bootstrap.servers": cluster.bootstrap_servers}
    reading = read_ranges(config, [OffsetRange("t", 0, 0, 30)], timeout_s=10.0, batch_rows=10)
    next(reading)
    assert not gc.isenabled()
    reading.close()  # Spark stops a task early (a LIMIT reached)
    assert gc.isenabled()


def test_several_ranges_read_with_one_handle_give_what_each_range_alone_gives(
    cluster: ReferenceCluster,
) -> None:
    cluster.create_topic("t", partitions=4)
    for partition in range(4):
        cluster.produce("t", [f"p{partition}-{i}" for i in range(30 + 10 * partition)], partition=partition)
    ranges = [OffsetRange("t", 0, 0, 30), OffsetRange("t", 1, 5, 40), OffsetRange("t", 3, 0, 1)]
    config = {"bootstrap.servers": cluster.bootstrap_servers}
    batches = list(read_ranges(config, ranges, timeout_s=10.0, batch_rows=7))
    assert all(b.num_rows <= 7 and len(set(b.column("partition").to_pylist())) == 1 for b in batches)
    together = sorted(
        (row["partition"], row["offset"], row["value"]) for b in batches for row in b.to_pylist()
    )
    alone = sorted(
        (row["partition"], row["offset"], row["value"]) for rng in ranges for row in _rows(cluster, rng)
    )
    assert together == alone
    assert len(together) == 30 + 35 + 1


def test_interleaved_partitions_and_one_partitions_end_next_to_anothers_records() -> None:
    # Partition 1's end (EOF at its range's end) comes right after records of partition 0: it is
    # partition 1's, and ends its range, which the handle then stops fetching.
    handle = _Handle(
        [
            _Message(0, partition=0),
            _Message(7, partition=1),
            _Message(1, partition=0),
            _Message(8, _Eof(), 1),
        ],
        [_Message(9, partition=1), _Message(2, partition=0)],  # fetched ahead: past partition 1's range
    )
    rows = _fake_rows(handle, [OffsetRange("t", 0, 0, 3), OffsetRange("t", 1, 7, 8)])
    assert sorted(rows) == [(0, 0), (0, 1), (0, 2), (1, 7)]
    assert handle.unassigned == [1]


def test_a_timeout_names_every_range_left_with_how_far_it_got() -> None:
    handle = _Handle([_Message(0, partition=0), _Message(4, partition=1), _Message(5, _Eof(), 1)])
    with pytest.raises(
        RangeReadError,
        match=r"timed out after 0.3 s reading t-0 offsets \[0, 2\): reached offset 1, and t-1 offsets "
        r"\[4, 9\): reached offset 5; the partition's log ends at 5 \(readTimeoutMs\)",
    ):
        _fake_rows(handle, [OffsetRange("t", 0, 0, 2), OffsetRange("t", 1, 4, 9)], timeout_s=0.3)
