"""ACLs on the reference cluster, seen by kconsumer and by confluent-kafka: a denied group is a
fatal error naming it (nothing committed), a topic that may be described but not read fails alone
while the other subscribed topic flows, topics that may not be described are hidden from a listing
of all topics, and none of it makes a client reconnect in a loop."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import confluent_kafka
import pytest
from confluent_kafka import KafkaError, KafkaException
from consumer_harness import config, fast_cluster, wait_until

from kconsumer import Consumer
from kconsumer.testing import Acl, ReferenceCluster

ALICE = "User:alice"
ACLS = [
    Acl(ALICE, "Read", "group", "allowed-", prefixed=True),
    Acl(ALICE, "Read", "topic", "readable"),
    Acl(ALICE, "Describe", "topic", "describe-only"),
]


@pytest.fixture(scope="module")
def cluster() -> Iterator[ReferenceCluster]:
    with fast_cluster(
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanisms=("PLAIN",),
        users={"alice": "alice-secret", "admin": "admin-secret"},
        acls=ACLS,
        super_users=("User:admin",),
    ) as cluster:
        for topic in ("readable", "describe-only", "hidden"):
            cluster.create_topic(topic, 2)
            for partition in range(2):
                cluster.produce(topic, [b"x%d" % i for i in range(5)], partition=partition)
        yield cluster


def _settings(cluster: ReferenceCluster, group: str) -> dict[str, Any]:
    return {**config(cluster.bootstrap_servers, group), **cluster.client_config("alice")}


def _poll_for(consumer: Consumer, seconds: float) -> tuple[list[Any], list[KafkaException]]:
    messages, raised = [], []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            message = consumer.poll(0.1)
        except KafkaException as exc:
            raised.append(exc)
            if exc.args[0].fatal():
                break
            continue
        if message is not None:
            messages.append(message)
    return messages, raised


def test_a_denied_group_is_a_fatal_error_naming_it_and_nothing_is_committed(
    cluster: ReferenceCluster,
) -> None:
    before = cluster.accepted_connections()
    consumer = Consumer(_settings(cluster, "forbidden-group"))
    try:
        consumer.subscribe(["readable"])
        messages, raised = _poll_for(consumer, 5)
        attempts = cluster.accepted_connections() - before
    finally:
        consumer.close(timeout=2)
    # As confluent-kafka: a _FATAL error event (see docs/parity.md) naming the group; the fetch
    # handle may add its own GROUP_AUTHORIZATION_FAILED from its coordinator lookup.
    errors = [m.error() for m in messages if m.error() is not None]
    assert not raised and errors, (raised, errors)
    fatal = [e for e in errors if e.code() == KafkaError._FATAL]
    assert len(fatal) == 1, errors
    assert "GROUP_AUTHORIZATION_FAILED" in fatal[0].str() and "forbidden-group" in fatal[0].str()
    others = [e for e in errors if e.code() != KafkaError._FATAL]
    assert all(e.code() == KafkaError.GROUP_AUTHORIZATION_FAILED for e in others), errors
    assert not [m for m in messages if m.error() is None]
    assert cluster.committed("forbidden-group") == {}
    assert attempts < 20, f"{attempts} connections"


def test_a_topic_that_cannot_be_read_fails_alone_while_the_other_flows(cluster: ReferenceCluster) -> None:
    before = cluster.accepted_connections()
    consumer = Consumer(_settings(cluster, "allowed-two-topics"))
    try:
        consumer.subscribe(["readable", "describe-only"])
        messages, raised = _poll_for(consumer, 5)
        attempts = cluster.accepted_connections() - before
    finally:
        consumer.close(timeout=2)
    values = [m for m in messages if m.error() is None]
    assert {(m.topic(), m.partition()) for m in values} == {("readable", 0), ("readable", 1)}
    assert len(values) == 10
    errors = [m.error() for m in messages if m.error() is not None] + [e.args[0] for e in raised]
    assert any(e.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED for e in errors), errors
    assert not any(e.fatal() for e in errors)
    assert attempts < 20, f"{attempts} connections in 5 s: no reconnect storm"


def test_a_subscribed_topic_that_cannot_be_described_is_reported(cluster: ReferenceCluster) -> None:
    consumer = Consumer(_settings(cluster, "allowed-hidden"))
    try:
        consumer.subscribe(["hidden"])
        messages, raised = _poll_for(consumer, 2)
        assert consumer.assignment() == []
    finally:
        consumer.close(timeout=2)
    assert raised and raised[0].args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert not raised[0].args[0].fatal()
    assert not [m for m in messages if m.error() is None]


def test_a_listing_of_all_topics_hides_what_may_not_be_described(cluster: ReferenceCluster) -> None:
    alice = confluent_kafka.Consumer({**cluster.client_config("alice"), "group.id": "x"})
    admin = confluent_kafka.Consumer({**cluster.client_config("admin"), "group.id": "x"})
    try:
        assert set(alice.list_topics(timeout=10).topics) == {"readable", "describe-only"}
        assert {"readable", "describe-only", "hidden"} <= set(admin.list_topics(timeout=10).topics)
        named = alice.list_topics("hidden", timeout=10).topics["hidden"]
        assert named.error is not None and named.error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    finally:
        alice.close()
        admin.close()


def test_confluent_kafka_sees_the_same_group_denial(cluster: ReferenceCluster) -> None:
    """The peer's view of the same ACLs (what a user switching from confluent-kafka knows)."""
    errors: list[KafkaError] = []
    consumer = confluent_kafka.Consumer(
        {**_settings(cluster, "forbidden-peer"), "group.protocol": "consumer", "error_cb": errors.append}
    )
    seen: list[KafkaError] = []
    try:
        consumer.subscribe(["readable"])
        wait_until(lambda: _peer_error(consumer, seen) or bool(errors), timeout=10, what="the peer's error")
    finally:
        consumer.close()
    assert any(e.code() == KafkaError.GROUP_AUTHORIZATION_FAILED for e in seen + errors)


def _peer_error(consumer: confluent_kafka.Consumer, seen: list[KafkaError]) -> bool:
    try:
        message = consumer.poll(0.2)
    except KafkaException as exc:
        seen.append(exc.args[0])
        return True
    if message is not None and message.error() is not None:
        seen.append(message.error())
        return True
    return False
