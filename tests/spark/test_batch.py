"""Batch reads (``spark.read.format("kconsumer")``): explicit ranges and a group's backlog."""

from __future__ import annotations

import time
from typing import Any

import pytest
from backends import Cluster
from confluent_kafka import TopicPartition

from kconsumer import Consumer

pytestmark = pytest.mark.spark


def _read(spark: Any, cluster: Cluster, **options: str) -> list[tuple[str, int, int]]:
    reader = spark.read.format("kconsumer").option("kafka.bootstrap.servers", cluster.bootstrap_servers)
    for key, value in options.items():
        reader = reader.option(key, value)
    return sorted((r.topic, r.partition, r.offset) for r in reader.load().collect())


def test_explicit_offset_ranges(spark: Any, cluster: Cluster) -> None:
    cluster.create_topic("t", partitions=2)
    cluster.produce("t", [f"v{i}" for i in range(20)])  # 10 per partition
    rows = _read(
        spark,
        cluster,
        subscribe="t",
        startingOffsets='{"t": {"0": 2, "1": -2}}',
        endingOffsets='{"t": {"0": 5, "1": -1}}',
    )
    assert rows == [("t", 0, 2), ("t", 0, 3), ("t", 0, 4)] + [("t", 1, o) for o in range(10)]
    assert _read(spark, cluster, assign='{"t": [1]}', startingOffsets="latest") == []
    assert len(_read(spark, cluster, subscribePattern="t|u")) == 20


def test_a_groups_backlog_from_committed_to_latest(spark: Any, cluster: Cluster) -> None:
    cluster.create_topic("t", partitions=2)
    cluster.produce("t", [f"v{i}" for i in range(20)])
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "backfill"})
    try:
        consumer.subscribe(["t"])
        deadline = time.monotonic() + 10
        while len(consumer.assignment()) < 2 and time.monotonic() < deadline:
            consumer.poll(0.05)
        consumer.commit(offsets=[TopicPartition("t", 0, 7)], asynchronous=False)
    finally:
        consumer.close()
    rows = _read(spark, cluster, subscribe="t", startingOffsets="committed", **{"group.id": "backfill"})
    # Partition 0 from its committed offset; partition 1 has none: from the earliest.
    assert rows == [("t", 0, o) for o in range(7, 10)] + [("t", 1, o) for o in range(10)]
    # The read committed nothing and did not join.
    assert cluster.committed("backfill") == {("t", 0): 7}


def test_read_committed_by_default_skipping_aborted_records_and_markers(spark: Any, cluster: Cluster) -> None:
    """Aborted transactions and transaction markers take offsets no row has: a range ends at its
    end offset all the same, and only read_uncommitted reads return the aborted records."""
    import confluent_kafka as ck

    cluster.create_topic("t", partitions=1)
    producer = ck.Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": "spark-txn"})
    producer.init_transactions(30)
    offsets: dict[str, list[int]] = {"commit": [], "abort": []}
    for end, count in (("commit", 3), ("abort", 2), ("commit", 1)):
        producer.begin_transaction()
        for i in range(count):
            producer.produce(
                "t",
                value=f"{end}{i}".encode(),
                partition=0,
                on_delivery=lambda _e, m, e=end: offsets[e].append(m.offset()),
            )
        producer.flush(30)
        (producer.commit_transaction if end == "commit" else producer.abort_transaction)(30)
    committed = [("t", 0, o) for o in sorted(offsets["commit"])]
    everything = sorted(committed + [("t", 0, o) for o in offsets["abort"]])
    assert _read(spark, cluster, subscribe="t") == committed
    assert _read(spark, cluster, subscribe="t", **{"kafka.isolation.level": "read_uncommitted"}) == everything


def test_more_ranges_than_task_slots_are_read_by_fewer_tasks_with_the_same_rows(
    spark: Any, cluster: Cluster
) -> None:
    cluster.create_topic("t", partitions=6)
    cluster.produce("t", [f"v{i}" for i in range(60)])

    def load(**options: str) -> Any:
        reader = spark.read.format("kconsumer").option("kafka.bootstrap.servers", cluster.bootstrap_servers)
        for key, value in {"subscribe": "t", **options}.items():
            reader = reader.option(key, value)
        return reader.load()

    packed, one_per_range = load(), load(taskSlots="0")
    # The session has two task slots (local[2]): register() made that the taskSlots default.
    assert packed.rdd.getNumPartitions() == 2
    assert one_per_range.rdd.getNumPartitions() == 6
    assert load(taskSlots="3").rdd.getNumPartitions() == 3
    rows = sorted((r.partition, r.offset, r.value) for r in packed.collect())
    assert rows == sorted((r.partition, r.offset, r.value) for r in one_per_range.collect())
    assert len(rows) == 60 and {p for p, _o, _v in rows} == set(range(6))
