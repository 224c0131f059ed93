"""Errors as a confluent-kafka user receives them (see parity_harness)."""

from __future__ import annotations

import socket
import time
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition
from parity_harness import Run, compare, drain, read

from kconsumer.errors import ErrorCode
from kconsumer.protocol.api import ApiKey
from kconsumer.testing import ReferenceCluster


def _outcomes(consumer: Any, polls: int) -> list[Any]:
    """What `polls` polls give: error event codes, raised KafkaError codes, records as "record"."""
    seen: list[Any] = []
    for _ in range(polls):
        try:
            message = consumer.poll(0.1)
        except KafkaException as exc:
            seen.append(("raised", exc.args[0].code()))
            continue
        if message is None:
            continue
        seen.append(("event", message.error().code()) if message.error() is not None else "record")
    return seen


@pytest.mark.reference_only("injects the coordinator's refusal into the reference broker")
def test_group_authorization_failure_is_one_fatal_event(cluster: ReferenceCluster) -> None:
    """The coordinator refuses the group: one _FATAL error event, then nothing more; nothing is
    consumed or committed."""

    def scenario(run: Run) -> dict[str, Any]:
        topic, group = run.topic("denied", 1, records=3), run.group("denied")
        run.cluster.inject_error(ApiKey.CONSUMER_GROUP_HEARTBEAT, ErrorCode.GROUP_AUTHORIZATION_FAILED, 1000)
        try:
            consumer = run.consumer(group)
            consumer.subscribe([topic])
            seen = {"polls": _outcomes(consumer, 20)}
        finally:
            run.cluster.clear_faults()
        seen["committed"] = sorted(run.cluster.committed(group).items())
        return seen

    compare("group authorization failure", scenario, cluster)


@pytest.mark.reference_only("injects the coordinator's refusal into the reference broker")
def test_a_fatal_error_of_a_member_with_partitions_is_only_the_event(cluster: ReferenceCluster) -> None:
    """The coordinator refuses the group of a member that owns partitions. With the consumer
    protocol the application hears one _FATAL error event (kconsumer runs on_lost first: an
    intended difference). A classic member's Heartbeat refused so is sent again, as Kafka's classic
    consumer and librdkafka do: no event, no callback, the partitions stay."""

    def scenario(run: Run) -> dict[str, Any]:
        topic, group = run.topic("fatal-owned", 2, records=3), run.group("fatal-owned")
        callbacks: list[Any] = []

        def record(kind: str) -> Any:
            return lambda _c, partitions: callbacks.append((kind, sorted(p.partition for p in partitions)))

        consumer = run.consumer(group)
        consumer.subscribe(
            [topic], on_assign=record("assign"), on_revoke=record("revoke"), on_lost=record("lost")
        )
        read(consumer, 6)
        before = list(callbacks)
        heartbeat = ApiKey.HEARTBEAT if run.protocol == "classic" else ApiKey.CONSUMER_GROUP_HEARTBEAT
        run.cluster.inject_error(heartbeat, ErrorCode.GROUP_AUTHORIZATION_FAILED, 1000)
        try:
            polls = _outcomes(consumer, 40)
        finally:
            run.cluster.clear_faults()
        return {
            "callbacks before": before,
            "polls": polls,
            "callbacks after the failure": callbacks[len(before) :],
            "assignment after": sorted(p.partition for p in consumer.assignment()),
        }

    compare("fatal error with partitions", scenario, cluster)


class CallbackFailure(Exception):
    """The application's own exception."""


def test_callback_exceptions_are_raised_unchanged(cluster: ReferenceCluster) -> None:
    def scenario(run: Run) -> dict[str, Any]:
        topic, group = run.topic("callback-raises", 1, records=3), run.group("callback-raises")
        consumer = run.consumer(group)

        def on_assign(_c: Any, _partitions: list[TopicPartition]) -> None:
            raise CallbackFailure("on_assign went wrong")

        consumer.subscribe([topic], on_assign=on_assign)
        raised: list[Any] = []
        for _ in range(50):
            try:
                consumer.poll(0.1)
            except CallbackFailure as exc:
                raised.append(("CallbackFailure", str(exc)))
                break
        afterwards = len(drain(consumer, 2.0))
        assert run.implementation == "confluent" or afterwards == 3, "kconsumer lost a record"
        return {"raised": raised, "records afterwards": afterwards}

    compare("callback exceptions", scenario, cluster)


def test_no_committed_offset_with_reset_error(cluster: ReferenceCluster) -> None:
    """auto.offset.reset=error and no committed offset: one _AUTO_OFFSET_RESET error event naming
    the partition; seek() then chooses where it starts."""

    def scenario(run: Run) -> dict[str, Any]:
        topic, group = run.topic("reset-error", 1, records=5), run.group("reset-error")
        consumer = run.consumer(group, auto_offset_reset="error")
        consumer.subscribe([topic])
        events: list[Any] = []
        for _ in range(30):
            message = consumer.poll(0.1)
            if message is not None and message.error() is not None:
                events.append((message.error().code(), message.topic() == topic, message.partition()))
                break
        try:
            consumer.seek(TopicPartition(topic, 0, 2))
            seek: Any = "accepted"
        except KafkaException as exc:
            seek = exc.args[0].code()
        first = [m.offset() for m in drain(consumer, 2.0)][:1]
        return {"events": events, "seek": seek, "first offset after seek": first}

    compare("auto.offset.reset=error", scenario, cluster)


def test_error_cb_when_no_broker_answers(cluster: ReferenceCluster) -> None:
    """Nothing listens at the bootstrap address: error_cb hears _TRANSPORT and _ALL_BROKERS_DOWN,
    and poll() raises nothing (both consumers keep trying)."""

    def scenario(run: Run) -> dict[str, Any]:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        codes: set[int] = set()
        consumer = run.consumer(
            run.group("nobody"), bootstrap_servers=f"127.0.0.1:{port}", error_cb=lambda e: codes.add(e.code())
        )
        consumer.subscribe(["anything"])
        raised: list[Any] = []
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            try:
                consumer.poll(0.1)
            except KafkaException as exc:
                raised.append(exc.args[0].code())
        return {"error_cb codes": sorted(codes), "raised": raised}

    compare("error_cb, no broker", scenario, cluster)


@pytest.mark.reference_only("starts a three-broker reference cluster of its own")
def test_error_cb_when_the_coordinators_broker_stops(cluster: ReferenceCluster) -> None:
    """On three brokers, the coordinator's broker stops: error_cb hears at most _TRANSPORT
    (connection refused), poll() raises nothing, and the consumer keeps its partitions."""

    def scenario(run: Run) -> dict[str, Any]:
        with ReferenceCluster(brokers=3, heartbeat_interval_ms=100, session_timeout_ms=3000) as three:
            three.create_topic("moving", 3)
            for partition in range(3):
                three.produce("moving", [b"a", b"b"], partition=partition)
            codes: set[int] = set()
            run.cluster = three
            group = run.group("moving")
            consumer = run.consumer(group, error_cb=lambda e: codes.add(e.code()))
            consumer.subscribe(["moving"])
            before = read(consumer, 6)
            three.stop_broker(three.coordinator_node(group))
            for partition in range(3):
                three.produce("moving", [b"c"], partition=partition)
            after = read(consumer, 3)
            consumer.close()
            run.made.remove(consumer)
        return {
            # Whether a client retries the stopped broker before it learns the new coordinator
            # (and so hears _TRANSPORT) is a race in both: anything else must not be reported.
            "error_cb codes other than _TRANSPORT": sorted(codes - {KafkaError._TRANSPORT}),
            "records": sorted((m.partition(), m.offset()) for m in before + after),
        }

    compare("error_cb, coordinator broker stops", scenario, cluster)
