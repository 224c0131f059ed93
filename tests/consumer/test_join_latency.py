"""A new member's `on_assign` follows its join closely: the application thread looks for the
member's work in short slices from the subscription on. It waited a whole 50 ms slice, as a
member not yet subscribed can post no work (docs/benchmarks.md, "From subscribe() to the first
record"). Its first record follows `on_assign` closely too: the fetch handle's metadata request
for the new partitions waited 40-60 ms for librdkafka's second connection, until `subscribe()`
named the topics to the handle ahead (docs/benchmarks.md, "A young fetch handle")."""

from __future__ import annotations

import statistics
import time
import uuid
from typing import Any

import pytest

from kconsumer import Consumer
from kconsumer.testing import ReferenceCluster

TOPIC = "join-latency"


def _join(bootstrap: str) -> tuple[float, float]:
    """A fresh consumer in a fresh group: the seconds from `subscribe()` to `on_assign`, and from
    `on_assign` to the first record."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"join-latency-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
        }
    )
    assigned: list[float] = []

    def on_assign(_consumer: Any, partitions: list[Any]) -> None:
        if partitions and not assigned:
            assigned.append(time.monotonic())

    try:
        subscribed = time.monotonic()
        consumer.subscribe([TOPIC], on_assign=on_assign)
        deadline = subscribed + 10
        record = None
        while record is None:
            assert time.monotonic() < deadline, "no record in 10 s"
            record = consumer.poll(0.005)
        assert record.error() is None, record.error()
        first = time.monotonic()
    finally:
        consumer.close()
    return assigned[0] - subscribed, first - assigned[0]


def _five_joins() -> list[tuple[float, float]]:
    """Five fresh members, one after the other, on a topic with records in every partition."""
    with ReferenceCluster() as cluster:
        cluster.create_topic(TOPIC, 4)
        cluster.produce(TOPIC, [b"x"] * 8)
        return [_join(cluster.bootstrap_servers) for _ in range(5)]


@pytest.mark.timing  # latency bounds: run on a quiet machine (tests/run_all.py)
def test_a_new_members_assignment_reaches_its_callback_without_a_fixed_wait() -> None:
    joins = _five_joins()
    assert statistics.median(join for join, _fetch in joins) < 0.03, joins


@pytest.mark.timing
def test_a_new_members_first_record_follows_its_assignment_without_a_connection_wait() -> None:
    joins = _five_joins()
    assert statistics.median(fetch for _join, fetch in joins) < 0.025, joins
