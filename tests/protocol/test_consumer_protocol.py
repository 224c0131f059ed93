"""Kafka's ConsumerProtocol bytes (classic JoinGroup metadata and SyncGroup assignments): every
version round-trips, malformed bytes name the field, and what real classic clients (librdkafka,
kafka-python) put on the wire decodes to what they subscribed to and were assigned."""

from __future__ import annotations

import time

import confluent_kafka
import pytest

from kconsumer.errors import ProtocolError
from kconsumer.protocol.consumer_protocol import (
    ConsumerAssignment,
    ConsumerSubscription,
    ConsumerTopicPartitions,
    decode_consumer_protocol,
    encode_consumer_protocol,
)
from kconsumer.testing import ReferenceCluster

FULL = ConsumerSubscription(
    topics=["a", "b"],
    user_data=b"ud",
    owned_partitions=[ConsumerTopicPartitions(topic="a", partitions=[0, 2])],
    generation_id=7,
    rack_id="rack-1",
)


@pytest.mark.parametrize("version", range(4))
def test_subscription_versions_round_trip(version: int) -> None:
    expected = FULL
    if version < 3:
        expected = expected.replace(rack_id=None)
    if version < 2:
        expected = expected.replace(generation_id=-1)
    if version < 1:
        expected = expected.replace(owned_partitions=[])
    assert decode_consumer_protocol(ConsumerSubscription, encode_consumer_protocol(expected, version)) == (
        expected,
        version,
    )


def test_a_newer_version_is_read_as_far_as_known() -> None:
    data = bytearray(encode_consumer_protocol(FULL, 3))
    data[0:2] = (9).to_bytes(2, "big")
    assert decode_consumer_protocol(ConsumerSubscription, bytes(data) + b"later fields") == (FULL, 9)


def test_assignment_round_trips_and_bad_bytes_name_the_field() -> None:
    assignment = ConsumerAssignment(assigned_partitions=[ConsumerTopicPartitions(topic="a", partitions=[1])])
    for version in range(4):
        assert decode_consumer_protocol(ConsumerAssignment, encode_consumer_protocol(assignment, version))[
            0
        ] == (assignment)
    with pytest.raises(ProtocolError, match="AssignedPartitions"):
        decode_consumer_protocol(ConsumerAssignment, b"\x00\x00\x00")
    with pytest.raises(ValueError):
        encode_consumer_protocol(assignment, 4)


def test_what_librdkafka_sends_decodes() -> None:
    with ReferenceCluster(initial_rebalance_delay_ms=0) as cluster:
        cluster.create_topic("t", 3)
        consumer = confluent_kafka.Consumer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "group.id": "g",
                "group.protocol": "classic",
                "partition.assignment.strategy": "cooperative-sticky",
                "client.rack": "rack-7",
                "session.timeout.ms": 6000,
                "log_level": 3,
            }
        )
        consumer.subscribe(["t"])
        deadline = time.monotonic() + 20
        group = None
        while time.monotonic() < deadline:
            consumer.poll(0.1)
            group = cluster.describe_classic_group("g")
            if group is not None and group.state == "Stable" and consumer.assignment():
                break
        consumer.close()
        assert group is not None and group.state == "Stable"
        (member,) = group.members.values()
        subscription, version = decode_consumer_protocol(
            ConsumerSubscription, member.metadata("cooperative-sticky")
        )
        assert subscription.topics == ["t"] and version >= 1
        if version >= 3:
            assert subscription.rack_id == "rack-7"
        assignment, _ = decode_consumer_protocol(ConsumerAssignment, member.assignment)
        assert [(tp.topic, sorted(tp.partitions)) for tp in assignment.assigned_partitions] == [
            ("t", [0, 1, 2])
        ]
