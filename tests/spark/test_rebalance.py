"""Two streaming queries and a plain kconsumer in one consumer group: partitions are split, move
at batch boundaries as members join and leave, and no record is lost."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from backends import Cluster

from kconsumer import Consumer

from .conftest import Record, Sink, high_watermarks, produced, start_query, wait_for

pytestmark = pytest.mark.spark

TOPIC = "shared"
GROUP = "shared-group"


class Producer(threading.Thread):
    """Appends a few records every 50 ms until stopped."""

    def __init__(self, cluster: Cluster) -> None:
        super().__init__(daemon=True)
        self._cluster = cluster
        self._stop_event = threading.Event()
        self.count = 0

    def run(self) -> None:
        while not self._stop_event.is_set():
            self._cluster.produce(TOPIC, [f"m{self.count + i}" for i in range(6)])
            self.count += 6
            self._stop_event.wait(0.05)

    def stop(self) -> None:
        self._stop_event.set()
        self.join(10)


class PlainMember(threading.Thread):
    """A plain kconsumer in the group (auto-commit: what poll returned is recorded before the
    next poll commits it)."""

    def __init__(self, cluster: Cluster) -> None:
        super().__init__(daemon=True)
        self._consumer = Consumer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "group.id": GROUP,
                "auto.offset.reset": "earliest",
                "auto.commit.interval.ms": 200,
            }
        )
        self._stop_event = threading.Event()
        self.records: list[Record] = []

    def run(self) -> None:
        self._consumer.subscribe([TOPIC])
        while not self._stop_event.is_set():
            message = self._consumer.poll(0.1)
            if message is not None and message.error() is None:
                self.records.append((message.topic(), message.partition(), message.offset(), message.value()))
        self._consumer.close()

    def stop(self) -> None:
        self._stop_event.set()
        if self.ident is None:  # never started (a test failing earlier must show its own error)
            self._consumer.close()
        else:
            self.join(30)


def _owned(cluster: Cluster) -> dict[str, set[tuple[str, int]]]:
    group = cluster.describe_group(GROUP)
    return {} if group is None else {m.member_id: m.owned for m in group.members.values()}


def _split(cluster: Cluster, members: int) -> bool:
    """`members` members, each owning something, all 6 partitions owned, nothing in flight."""
    group = cluster.describe_group(GROUP)
    if group is None or len(group.members) != members:
        return False
    owned = [m.owned for m in group.members.values()]
    stable = all(m.state == "stable" for m in group.members.values())
    return stable and all(owned) and sum(len(o) for o in owned) == 6


def test_queries_and_a_plain_consumer_share_partitions_without_loss(
    spark: Any, cluster: Cluster, tmp_path: Path
) -> None:
    cluster.create_topic(TOPIC, partitions=6)
    producer = Producer(cluster)
    producer.start()
    first, second = Sink(), Sink()
    plain = PlainMember(cluster)
    queries = []
    try:
        a = start_query(
            spark,
            cluster,
            first,
            group=GROUP,
            topics=TOPIC,
            checkpoint=str(tmp_path / "a"),
            startingOffsets="earliest",
        )
        queries.append(a)
        # The first wait includes starting the query and its first micro-batch: up to a minute
        # and more when CI's tiers share the machine's two cores (a CI run timed out at 30 s).
        wait_for(
            lambda: _split(cluster, 1) and first.rows(), timeout=90, what="query A owning everything", query=a
        )
        a_member = next(iter(_owned(cluster)))

        b = start_query(spark, cluster, second, group=GROUP, topics=TOPIC, checkpoint=str(tmp_path / "b"))
        queries.append(b)
        wait_for(lambda: _split(cluster, 2), what="A and B splitting the partitions", query=b)
        wait_for(lambda: second.rows(), what="B reading", query=b)

        plain.start()
        wait_for(lambda: _split(cluster, 3) and plain.records, what="the plain consumer joining", query=b)
        handed_over = _owned(cluster)[a_member]  # A's partitions when it stops
        a.stop()
        wait_for(lambda: _split(cluster, 2), what="B and the plain consumer taking A's partitions", query=b)
        time.sleep(1.0)  # keep producing through the handoff
        producer.stop()
        total = producer.count
        everything = produced(cluster, TOPIC)
        assert len(everything) == total

        def delivered() -> set[Record]:
            return first.records() | second.records() | set(plain.records)

        wait_for(lambda: len(delivered()) == total, what=f"all {total} records", query=b)
        expected = high_watermarks(cluster, TOPIC)
        wait_for(lambda: cluster.committed(GROUP) == expected, what="committed offsets", query=b)
    finally:
        producer.stop()
        for query in queries:
            query.stop()
        plain.stop()

    assert delivered() == everything, "records lost"
    # The group's committed offsets are exactly the end of what the sinks hold.
    ends: dict[tuple[str, int], int] = {}
    for topic, partition, offset, _ in delivered():
        ends[(topic, partition)] = max(ends.get((topic, partition), 0), offset + 1)
    assert cluster.committed(GROUP) == ends
    for name, rows in (("A", first.rows()), ("B", second.rows()), ("plain", plain.records)):
        assert len(rows) == len(set(rows)), f"{name} read a record twice"
    # Handoffs while A and B kept running (B joining, the plain consumer joining) happened at
    # batch boundaries, with the completed batch's offsets committed first: no overlap at all.
    # Only A's stop can repeat records: a batch interrupted by stop() is not completed.
    readers: dict[tuple[str, int, int], int] = {}
    for records in (first.records(), second.records(), set(plain.records)):
        for topic, partition, offset, _ in records:
            readers[(topic, partition, offset)] = readers.get((topic, partition, offset), 0) + 1
    repeated = {(t, p) for (t, p, _), n in readers.items() if n > 1}
    assert repeated <= handed_over, f"records repeated outside A's final partitions: {repeated - handed_over}"
    # Every query and the plain consumer got a share.
    for sink in (first, second):
        assert sink.rows()
    assert plain.records
