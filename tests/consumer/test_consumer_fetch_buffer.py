"""The fetch path's buffer: records taken from librdkafka in batches count as undelivered until
the application gets them, so positions, stops, seeks and pauses never skip or lose one."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka import TopicPartition

from kconsumer.client.config import ConsumerConfig
from kconsumer.client.fetch import Fetcher
from kconsumer.testing import ReferenceCluster

RECORDS = 600


@pytest.fixture(scope="module")
def cluster() -> Iterator[ReferenceCluster]:
    with ReferenceCluster() as running:
        running.create_topic("buffered", 2)
        running.produce("buffered", [f"r{i}".encode() for i in range(RECORDS)], partition=0)
        running.produce("buffered", [f"s{i}".encode() for i in range(RECORDS)], partition=1)
        yield running


@pytest.fixture
def fetcher(cluster: ReferenceCluster) -> Iterator[Fetcher]:
    config = ConsumerConfig.from_dict({"bootstrap.servers": cluster.bootstrap_servers})
    handle = Fetcher(config.librdkafka_config(), "buffer-test")
    yield handle
    handle.close()


def _poll(fetcher: Fetcher, count: int) -> list[tuple[int, int]]:
    """`count` records as (partition, offset), polling one at a time."""
    got: list[tuple[int, int]] = []
    deadline = time.monotonic() + 20
    while len(got) < count and time.monotonic() < deadline:
        message = fetcher.poll(0.1)
        if message is not None and message.error() is None:
            got.append((message.partition(), message.offset()))  # type: ignore[arg-type]
    assert len(got) == count
    return got


def _wait_buffered(fetcher: Fetcher, minimum: int) -> None:
    deadline = time.monotonic() + 20
    while len(fetcher.buffer) < minimum and time.monotonic() < deadline:
        message = fetcher.poll(0.1)
        if message is not None:
            fetcher.buffer.appendleft(message)  # put it back: the test only wants a full buffer


def test_positions_count_buffered_records_as_not_delivered(fetcher: Fetcher) -> None:
    fetcher.assign([TopicPartition("buffered", 0, 0)])
    got = _poll(fetcher, 10)
    assert got == [(0, o) for o in range(10)]
    _wait_buffered(fetcher, 5)
    assert fetcher.buffer  # librdkafka already delivered these to us
    assert fetcher.positions([("buffered", 0)])[("buffered", 0)][0] == 10
    assert fetcher.position_of([TopicPartition("buffered", 0)])[0].offset == 10


def test_stopping_reports_the_first_undelivered_record_and_drops_the_rest(fetcher: Fetcher) -> None:
    fetcher.assign([TopicPartition("buffered", 0, 0), TopicPartition("buffered", 1, 0)])
    delivered = _poll(fetcher, 50)
    _wait_buffered(fetcher, 5)
    next_of = {
        p: max(o for q, o in delivered if q == p) + 1 for p in (0, 1) if any(q == p for q, _ in delivered)
    }
    positions = fetcher.positions([("buffered", 0), ("buffered", 1)])
    for partition, offset in next_of.items():
        assert positions[("buffered", partition)][0] == offset
    fetcher.unassign([("buffered", 0)])
    assert all(m.partition() != 0 for m in fetcher.buffer)


def test_pause_and_resume_skip_nothing(fetcher: Fetcher) -> None:
    fetcher.assign([TopicPartition("buffered", 0, 0)])
    first = _poll(fetcher, 20)
    _wait_buffered(fetcher, 5)
    fetcher.pause([TopicPartition("buffered", 0)])
    assert not fetcher.buffer
    assert fetcher.poll(0.3) is None  # paused: nothing comes
    fetcher.resume([TopicPartition("buffered", 0)])
    rest = _poll(fetcher, RECORDS - 20)
    assert first + rest == [(0, o) for o in range(RECORDS)]


def test_seek_drops_buffered_records_and_restarts_there(fetcher: Fetcher) -> None:
    fetcher.assign([TopicPartition("buffered", 1, 0)])
    _poll(fetcher, 30)
    _wait_buffered(fetcher, 5)
    fetcher.seek(TopicPartition("buffered", 1, 5))
    assert not fetcher.buffer
    assert _poll(fetcher, 3) == [(1, 5), (1, 6), (1, 7)]


def test_consume_takes_buffered_records_first(fetcher: Fetcher) -> None:
    fetcher.assign([TopicPartition("buffered", 0, 0)])
    _poll(fetcher, 1)
    _wait_buffered(fetcher, 5)
    messages = fetcher.consume(5, 1.0)
    assert [m.offset() for m in messages] == [1, 2, 3, 4, 5]
