"""Streaming queries of the kconsumer source against the reference cluster (local[2] Spark)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kconsumer.testing import ReferenceCluster

from .conftest import Sink, high_watermarks, produced, start_query, wait_for

pytestmark = pytest.mark.spark


def test_every_record_exactly_once_and_the_group_offsets_follow(
    spark: Any, cluster: ReferenceCluster, tmp_path: Path
) -> None:
    cluster.create_topic("orders", partitions=3)
    cluster.produce("orders", [f"a{i}" for i in range(150)])
    sink = Sink()
    query = start_query(
        spark,
        cluster,
        sink,
        group="exactly-once",
        topics="orders",
        checkpoint=str(tmp_path / "ck"),
        startingOffsets="earliest",
    )
    try:
        wait_for(lambda: len(sink.records()) >= 150, what="the first 150 records", query=query)
        cluster.produce("orders", [f"b{i}" for i in range(60)], key="k")
        wait_for(lambda: len(sink.records()) >= 210, what="all 210 records", query=query)
        expected = high_watermarks(cluster, "orders")
        wait_for(lambda: cluster.committed("exactly-once") == expected, what="committed offsets", query=query)
    finally:
        query.stop()
    rows = sink.rows()
    assert len(rows) == len(set(rows)), "a record was delivered twice by one query"
    assert sink.records() == produced(cluster, "orders")
    # The group's committed offsets are exactly what the sink holds.
    assert cluster.committed("exactly-once") == sink.ends()
    # The member leaves the group when the query stops (before its 10 s session could expire).
    wait_for(lambda: not cluster.describe_group("exactly-once").members, timeout=8, what="the member leaving")


def test_rows_have_the_kafka_schema(spark: Any, cluster: ReferenceCluster, tmp_path: Path) -> None:
    cluster.create_topic("typed", partitions=1)
    cluster.produce("typed", ["v1"], key="k1")
    received: list[Any] = []

    def sink(df: Any, batch_id: int) -> None:
        received.extend(df.collect())

    query = (
        spark.readStream.format("kconsumer")
        .option("kafka.bootstrap.servers", cluster.bootstrap_servers)
        .option("group.id", "schema")
        .option("subscribe", "typed")
        .option("startingOffsets", "earliest")
        .load()
        .writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(60)
    assert query.exception() is None
    schema = (
        spark.readStream.format("kconsumer")
        .option("kafka.bootstrap.servers", "x:1")
        .option("group.id", "g")
        .option("subscribe", "typed")
        .load()
        .schema
    )
    assert [(f.name, f.dataType.simpleString()) for f in schema.fields] == [
        ("key", "binary"),
        ("value", "binary"),
        ("topic", "string"),
        ("partition", "int"),
        ("offset", "bigint"),
        ("timestamp", "timestamp"),
        ("timestampType", "int"),
        ("headers", "array<struct<key:string,value:binary>>"),
    ]
    [row] = received
    assert (bytes(row.key), bytes(row.value), row.topic, row.partition, row.offset) == (
        b"k1",
        b"v1",
        "typed",
        0,
        0,
    )
    assert row.timestampType == 0 and row.timestamp is not None and row.headers == []


def test_restart_from_the_checkpoint_resumes_without_loss(
    spark: Any, cluster: ReferenceCluster, tmp_path: Path
) -> None:
    cluster.create_topic("events", partitions=2)
    cluster.produce("events", [f"x{i}" for i in range(40)])
    checkpoint = str(tmp_path / "ck")
    first = Sink()
    query = start_query(
        spark,
        cluster,
        first,
        group="restart",
        topics="events",
        checkpoint=checkpoint,
        startingOffsets="earliest",
    )
    try:
        wait_for(lambda: len(first.records()) >= 40, what="the first 40 records", query=query)
        # Committed to the group only once Spark's commit log has the batch: stopping now
        # leaves no batch to replay.
        done = high_watermarks(cluster, "events")
        wait_for(lambda: cluster.committed("restart") == done, what="committed offsets", query=query)
    finally:
        query.stop()
    # Written while the query is down: the restarted query must read them, and only them.
    cluster.produce("events", [f"y{i}" for i in range(30)])
    second = Sink()
    query = start_query(spark, cluster, second, group="restart", topics="events", checkpoint=checkpoint)
    try:
        wait_for(lambda: len(first.records() | second.records()) >= 70, what="all 70 records", query=query)
        expected = high_watermarks(cluster, "events")
        wait_for(lambda: cluster.committed("restart") == expected, what="committed offsets", query=query)
    finally:
        query.stop()
    assert first.records() | second.records() == produced(cluster, "events")
    assert not first.records() & second.records(), "the restarted query read completed batches again"


def test_available_now_with_max_records_per_trigger(
    spark: Any, cluster: ReferenceCluster, tmp_path: Path
) -> None:
    cluster.create_topic("backlog", partitions=2)
    cluster.produce("backlog", [f"r{i}" for i in range(100)])
    sink = Sink()
    query = start_query(
        spark,
        cluster,
        sink,
        group="available-now",
        topics="backlog",
        checkpoint=str(tmp_path / "ck"),
        trigger={"availableNow": True},
        startingOffsets="earliest",
        maxRecordsPerTrigger="30",
    )
    assert query.awaitTermination(90), "Trigger.AvailableNow did not end"
    assert query.exception() is None
    sizes = [len(rows) for _, rows in sink.batches if rows]
    assert sizes and max(sizes) <= 30 and sum(sizes) == 100, sizes
    assert sink.records() == produced(cluster, "backlog")
    assert cluster.committed("available-now") == high_watermarks(cluster, "backlog")
