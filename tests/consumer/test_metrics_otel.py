"""The OpenTelemetry exporter, read back with the SDK's in-memory reader."""

from __future__ import annotations

import time
from typing import Any

from backends import open_cluster
from confluent_kafka import Message
from consumer_harness import config, poll_until, wait_until
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from kconsumer import Consumer
from kconsumer.client.metrics import METRICS
from kconsumer.otel import PREFIX, export_metrics


def collected(reader: InMemoryMetricReader) -> dict[str, tuple[Any, dict[str, Any], str]]:
    """{instrument name: (value, attributes, unit)} of one collection."""
    data = reader.get_metrics_data()
    found: dict[str, tuple[Any, dict[str, Any], str]] = {}
    if data is None:
        return found
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                for point in metric.data.data_points:
                    found[metric.name] = (point.value, dict(point.attributes or {}), metric.unit or "")
    return found


def test_the_exporter_reports_what_metrics_says(backend: str) -> None:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    with open_cluster(backend) as cluster:
        cluster.create_topic("observed", 2)
        cluster.produce("observed", [f"v{i}" for i in range(20)])
        consumer = Consumer(
            config(cluster.bootstrap_servers, "observed-group", statistics_interval_ms=100, client_id="svc")
        )
        exporter = export_metrics(consumer, provider)
        try:
            consumer.subscribe(["observed"])
            committed: list[Message] = []

            def commit(message: Message) -> None:
                consumer.commit(message=message, asynchronous=False)
                committed.append(message)

            poll_until(consumer, lambda: len(committed) >= 20, timeout=20, on_record=commit)
            wait_until(
                lambda: consumer.poll(0.05) is None and consumer.metrics()["records-consumed-total"] >= 20
            )
            time.sleep(0.6)  # past the exporter's reuse of one reading
            points = collected(reader)
            expected = consumer.metrics()
            assert points[PREFIX + "commit_total"][0] == expected["commit-total"] == 20
            assert points[PREFIX + "assigned_partitions"][0] == 2
            assert points[PREFIX + "rebalance_total"][0] == expected["rebalance-total"] >= 1
            assert points[PREFIX + "records_consumed_total"][0] >= 20
            assert points[PREFIX + "commit_latency_max"][2] == "ms"
            assert points[PREFIX + "member_epoch"][1] == {"client.id": "svc", "group.id": "observed-group"}
            # no value yet (NaN) is no point: no partition was lost
            assert PREFIX + "partition_lost_latency_avg" not in points
            assert set(points) <= {PREFIX + name.replace("-", "_") for name in METRICS}
        finally:
            consumer.close()
        assert collected(reader) == {}  # a closed consumer reports nothing
        exporter.close()
        provider.shutdown()
