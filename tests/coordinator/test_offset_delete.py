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
