"""Records turned into Arrow batches of Spark's Kafka schema: every column as one record at a time
would give it, in the usual cases (one timestamp type, no headers: columns made without a pass
over the records) and the unusual ones (mixed types, missing timestamps, some headers, null keys
and values)."""

from __future__ import annotations

import datetime

import pytest

pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install 'kconsumer[spark]')")

from kconsumer.spark.rows import BatchBuilder, arrow_schema

UTC = datetime.timezone.utc


class _Message:
    """What the builder asks of a confluent-kafka Message."""

    def __init__(
        self,
        offset: int,
        *,
        key: bytes | None = None,
        value: bytes | None = b"v",
        timestamp: tuple[int, int] = (1, 1_700_000_000_123),
        headers: list[tuple[str, bytes | None]] | None = None,
    ) -> None:
        self._offset, self._key, self._value = offset, key, value
        self._timestamp, self._headers = timestamp, headers

    def key(self) -> bytes | None:
        return self._key

    def value(self) -> bytes | None:
        return self._value

    def timestamp(self) -> tuple[int, int]:
        return self._timestamp

    def headers(self) -> list[tuple[str, bytes | None]] | None:
        return self._headers


def _expected(message: _Message) -> dict[str, object]:
    """The row one record gives, worked out one field at a time."""
    kind, millis = message.timestamp()
    present = kind != 0 and millis >= 0
    return {
        "key": message.key(),
        "value": message.value(),
        "topic": "t",
        "partition": 3,
        "offset": message._offset,
        "timestamp": datetime.datetime.fromtimestamp(millis / 1000, UTC) if present else None,
        "timestampType": {0: -1, 1: 0, 2: 1}[kind],
        "headers": [{"key": k, "value": v} for k, v in message.headers() or []],
    }


def _rows(*runs: list[_Message]) -> list[dict[str, object]]:
    builder = BatchBuilder("t", 3)
    for run in runs:
        builder.extend(run, [m._offset for m in run])
    batch = builder.build()
    assert batch.schema.equals(arrow_schema())
    assert len(builder) == 0
    return batch.to_pylist()


def test_the_usual_batch_one_timestamp_type_and_no_headers() -> None:
    run = [_Message(offset, timestamp=(1, 1_700_000_000_000 + offset)) for offset in range(5, 15)]
    assert _rows(run[:4], run[4:]) == [_expected(m) for m in run]


def test_log_append_time_repeated() -> None:
    run = [_Message(offset, timestamp=(2, 42)) for offset in range(3)]
    rows = _rows(run)
    assert [row["timestampType"] for row in rows] == [1, 1, 1]
    assert rows == [_expected(m) for m in run]


def test_mixed_timestamp_types_missing_timestamps_headers_and_nulls() -> None:
    run = [
        _Message(0, key=b"k", timestamp=(1, 1_000)),
        _Message(1, value=None, timestamp=(0, -1)),  # a tombstone with no timestamp
        _Message(2, timestamp=(2, 2_000), headers=[("a", b"1"), ("b", None)]),
        _Message(3, timestamp=(1, -5)),  # a negative timestamp counts as none
        _Message(4, timestamp=(0, 0), headers=[]),
    ]
    rows = _rows(run)
    assert rows == [_expected(m) for m in run]
    assert [row["timestamp"] is None for row in rows] == [False, True, False, True, True]
    assert rows[2]["headers"] == [{"key": "a", "value": b"1"}, {"key": "b", "value": None}]


def test_an_empty_run_adds_nothing_and_an_empty_build_is_an_empty_batch() -> None:
    assert _rows([]) == []
    builder = BatchBuilder("t", 3)
    builder.extend([], [])
    assert len(builder) == 0


def test_a_timestamp_beyond_the_microsecond_range_fails_rather_than_wrapping() -> None:
    builder = BatchBuilder("t", 3)
    builder.extend([_Message(0, timestamp=(1, 2**62))], [0])
    with pytest.raises(Exception, match="overflow"):
        builder.build()
