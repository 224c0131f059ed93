"""stats_cb as lag dashboards read it (see parity_harness): the group object and per-partition
committed offsets and lag."""

from __future__ import annotations

import json
import time
from typing import Any

from confluent_kafka import TopicPartition
from parity_harness import Run, compare, read

from kconsumer.testing import ReferenceCluster

PARTITION_FIELDS = ("fetch_state", "committed_offset", "stored_offset", "consumer_lag", "consumer_lag_stored")


def test_stats_cb_reports_the_group_and_the_lag(cluster: ReferenceCluster) -> None:
    def scenario(run: Run) -> dict[str, Any]:
        topic, group = run.topic("stats", 2, records=25), run.group("stats")
        reports: list[str] = []
        consumer = run.consumer(group, statistics_interval_ms=100, stats_cb=reports.append)
        consumer.subscribe([topic])
        read(consumer, 50)
        consumer.commit(
            offsets=[TopicPartition(topic, 0, 20), TopicPartition(topic, 1, 15)], asynchronous=False
        )
        reports.clear()
        deadline = time.monotonic() + 10
        while len(reports) < 3 and time.monotonic() < deadline:
            consumer.poll(0.1)
        stats = json.loads(reports[-1])
        group_stats = stats["cgrp"]
        partitions = stats["topics"][topic]["partitions"]
        return {
            "cgrp": {
                key: group_stats[key] for key in ("state", "join_state", "rebalance_cnt", "assignment_size")
            },
            "partitions": {p: {key: partitions[str(p)][key] for key in PARTITION_FIELDS} for p in (0, 1)},
        }

    compare("stats_cb", scenario, cluster)
