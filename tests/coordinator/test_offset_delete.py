"""OffsetDelete (KIP-496) on the coordinator: which offsets a group may lose, and why not."""

from __future__ import annotations

from typing import Any

from kconsumer.errors import ErrorCode
from kconsumer.protocol.consumer_protocol import ConsumerSubscription, encode_consumer_protocol
from kconsumer.protocol.messages.offsets import (
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
    OffsetFetchRequest,
)

from .classic_calls import ClassicCalls
from .conftest import Driver
from .test_offsets import commit


class ClassicDriver(Driver, ClassicCalls):
    """A consumer-protocol driver that also speaks JoinGroup."""

    def __init__(self, **config: Any) -> None:
        super().__init__(**config)
        self.answers: dict[int, Any] = {}


def delete(d: Any, parts: dict[str, list[int]], group: str = "g") -> tuple[int, dict[tuple[str, int], int]]:
    request = OffsetDeleteRequest(
        group_id=group,
        topics=[
            OffsetDeleteRequestTopic(
                name=name, partitions=[OffsetDeleteRequestPartition(partition_index=p) for p in indexes]
            )
            for name, indexes in parts.items()
        ],
    )
    response = d.coordinator.handle(request, 0, d.now).response
    codes = {(t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions}
    return response.error_code, codes


def committed(d: Any, group: str = "g") -> dict[tuple[str, int], int]:
    response = d.coordinator.offset_fetch(OffsetFetchRequest(group_id=group, topics=None), 7, d.now).response
    return {
        (t.name, p.partition_index): p.committed_offset
        for t in response.topics
        for p in t.partitions
        if p.committed_offset >= 0
    }


def test_an_unknown_group_is_group_id_not_found() -> None:
    d = Driver()
    d.create_topic("foo", 2)
    assert delete(d, {"foo": [0]}) == (ErrorCode.GROUP_ID_NOT_FOUND, {})


def test_offsets_of_an_admin_group_are_deleted_and_missing_ones_are_fine() -> None:
    d = Driver()
    d.create_topic("foo", 2)
    assert set(commit(d, {"foo": [0, 1]}).values()) == {ErrorCode.NONE}
    error, codes = delete(d, {"foo": [0], "bar": [3]})
    assert error == ErrorCode.NONE and codes == {("foo", 0): 0, ("bar", 3): 0}
    assert committed(d) == {("foo", 1): 100}


def test_a_consumer_group_keeps_the_offsets_of_topics_it_subscribes_to() -> None:
    d = Driver()
    d.create_topic("foo", 2)
    d.create_topic("old", 1)
    joined = d.join("m1", ["foo"])
    codes = commit(d, {"old": [0], "foo": [0]}, member=joined.member_id, epoch=joined.member_epoch)
    assert set(codes.values()) == {ErrorCode.NONE}
    error, codes = delete(d, {"foo": [0], "old": [0]})
    assert error == ErrorCode.NONE
    assert codes == {("foo", 0): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, ("old", 0): ErrorCode.NONE}
    assert committed(d) == {("foo", 0): 100}


def test_a_classic_group_of_another_protocol_type_must_be_empty() -> None:
    d = ClassicDriver()
    d.create_topic("foo", 1)
    first = d.join_group("", (("rr", b"x"),), protocol_type="connect")
    d.join_group(first.member_id, (("rr", b"x"),), protocol_type="connect")
    assert delete(d, {"foo": [0]}) == (ErrorCode.NON_EMPTY_GROUP, {})


def test_a_classic_consumer_group_keeps_offsets_of_its_members_topics() -> None:
    d = ClassicDriver()
    d.create_topic("foo", 1)
    d.create_topic("old", 1)
    metadata = encode_consumer_protocol(ConsumerSubscription(topics=["foo"]), 1)
    first = d.join_group("", (("range", metadata),))
    d.join_group(first.member_id, (("range", metadata),))
    d.advance(10_000)  # the initial rebalance delay
    error, codes = delete(d, {"foo": [0], "old": [0]})
    assert error == ErrorCode.NONE
    assert codes == {("foo", 0): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, ("old", 0): ErrorCode.NONE}


def test_kafka_pythons_admin_deletes_offsets_on_the_reference_cluster() -> None:
    """A peer nobody here wrote: kafka-python's KafkaAdminClient.delete_group_offsets (OffsetDelete)."""
    import time

    import kafka
    from kafka.admin import KafkaAdminClient

    from kconsumer import Consumer
    from kconsumer.testing import ReferenceCluster

    with ReferenceCluster(
        heartbeat_interval_ms=100, session_timeout_ms=3000, assignment_interval_ms=0
    ) as cluster:
        cluster.create_topic("kept", 1)
        cluster.create_topic("old", 2)
        cluster.produce("old", ["x", "y"])
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        try:
            # an admin commit of the old topic, then a member subscribed to the other one
            admin.alter_group_offsets(
                "peer",
                {kafka.TopicPartition("old", p): kafka.structs.OffsetAndMetadata(1, "", -1) for p in (0, 1)},
            )
            member = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "peer"})
            member.subscribe(["kept"])
            deadline = time.monotonic() + 15
            while not member.assignment() and time.monotonic() < deadline:
                member.poll(0.05)
            refused = admin.delete_group_offsets("peer", [kafka.TopicPartition("kept", 0)])
            assert refused[kafka.TopicPartition("kept", 0)].__name__ == "GroupSubscribedToTopicError"
            deleted = admin.delete_group_offsets("peer", [kafka.TopicPartition("old", 0)])
            assert deleted[kafka.TopicPartition("old", 0)].__name__ == "NoError"
            assert cluster.committed("peer") == {("old", 1): 1}
            member.close()
        finally:
            admin.close()
