"""A new member's `on_assign` follows its join closely: the application thread looks for the
member's work in short slices from the subscription on. It waited a whole 50 ms slice, as a
member not yet subscribed can post no work (docs/benchmarks.md, "From subscribe() to the first
record"). The first record still comes 40-60 ms after `on_assign`: librdkafka's spacing of a
new handle's connections, left at its default (see there)."""

from __future__ import annotations

import statistics
import time
import uuid
from typing import Any

import pytest

from kconsumer import Consumer
from kconsumer.testing import ReferenceCluster

TOPIC = "join-latency"


def _join(bootstrap: str) -> float:
    """A fresh consumer in a fresh group: the seconds from `subscribe()` to `on_assign`."""
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
        while not assigned:
            assert time.monotonic() < deadline, "no assignment in 10 s"
            consumer.poll(0.05)
    finally:
        consumer.close()
    return assigned[0] - subscribed


@pytest.mark.timing  # latency bounds: run on a quiet machine (tests/run_all.py)
def test_a_new_members_assignment_reaches_its_callback_without_a_fixed_wait() -> None:
    with ReferenceCluster() as cluster:
        cluster.create_topic(TOPIC, 4)
        joins = [_join(cluster.bootstrap_servers) for _ in range(5)]
    assert statistics.median(joins) < 0.03, joins
