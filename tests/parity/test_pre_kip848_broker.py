"""A cluster without the consumer group protocol (brokers before Kafka 4.0, or
``group.coordinator.rebalance.protocols=classic``): what a ``group.protocol=consumer`` user sees.
An intended difference (docs/parity.md): confluent-kafka says nothing and retries forever,
kconsumer fails at the first poll with one fatal error that names the cause."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from parity_harness import Run, compare

from kconsumer.errors import ConfigError, ErrorCode
from kconsumer.protocol.api import ApiKey
from kconsumer.protocol.messages.consumer_group import ConsumerGroupHeartbeatRequest
from kconsumer.testing import ReferenceCluster
from kconsumer.testing.wire import WireClient


@pytest.fixture(scope="module")
def classic_only() -> Iterator[ReferenceCluster]:
    with ReferenceCluster(group_protocols=("classic",), heartbeat_interval_ms=100) as running:
        yield running


def _outcomes(consumer: Any, seconds: float) -> list[Any]:
    """Error events and raised errors as (kind, code, text), records as "record"."""
    seen: list[Any] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            message = consumer.poll(0.1)
        except KafkaException as exc:
            error: KafkaError = exc.args[0]
            seen.append(("raised", error.code(), error.str()))
            break
        if message is None:
            continue
        if message.error() is not None:
            seen.append(("event", message.error().code(), message.error().str()))
        else:
            seen.append("record")
    return seen


def test_group_protocol_consumer_on_a_broker_without_kip848(classic_only: ReferenceCluster) -> None:
    def scenario(run: Run) -> dict[str, Any]:
        topic, group = run.topic("pre-kip848", 2, records=3), run.group("pre-kip848")
        consumer = run.consumer(group)
        consumer.subscribe([topic])
        return {"polls": _outcomes(consumer, 4.0), "committed": sorted(run.cluster.committed(group).items())}

    observed: dict[str, Any] = {}

    def recording(run: Run) -> dict[str, Any]:
        observed[run.implementation] = result = scenario(run)
        return result

    compare("broker without KIP-848", recording, classic_only)
    assert observed["confluent"]["polls"] == []  # what we differ from: nothing at all
    [(kind, code, text)] = observed["kconsumer"]["polls"]
    assert kind == "event" and code == KafkaError._FATAL, observed["kconsumer"]
    assert "KIP-848" in text and "group.coordinator.rebalance.protocols" in text, text


def test_the_broker_advertises_and_answers_as_kafka_without_the_consumer_protocol(
    classic_only: ReferenceCluster,
) -> None:
    client = WireClient.connect("127.0.0.1", classic_only.port)
    try:
        keys = set(client.broker_versions)
        assert ApiKey.JOIN_GROUP in keys and ApiKey.OFFSET_COMMIT in keys
        assert ApiKey.CONSUMER_GROUP_HEARTBEAT not in keys
        assert ApiKey.CONSUMER_GROUP_DESCRIBE not in keys
        request = ConsumerGroupHeartbeatRequest(
            group_id="g",
            member_id="m",
            member_epoch=0,
            rebalance_timeout_ms=1000,
            subscribed_topic_names=["t"],
            topic_partitions=[],
        )
        response = client.request(request, 0)
        assert response.error_code == ErrorCode.UNSUPPORTED_VERSION
    finally:
        client.close()


def test_only_the_consumer_protocol_can_be_turned_off() -> None:
    with pytest.raises(ConfigError, match="group_protocols"):
        ReferenceCluster(group_protocols=("consumer",))
