"""PrepareAssignment responses for the tests of the client-side conversions and the runner."""

from __future__ import annotations

from typing import Any

from kconsumer.protocol.messages.consumer_group import TopicPartitions
from kconsumer.protocol.messages.extensions import (
    ConsumerGroupPrepareAssignmentResponse,
    MemberAssignorState,
    PreparedMember,
    PreparedTopic,
)
from kconsumer.protocol.uuid import Uuid

T = Uuid.from_int(0x7)
OLD = Uuid.from_int(0x8)
GONE = Uuid.from_int(0x9)


def prepared_member(
    member_id: str,
    target: dict[Uuid, list[int]] | None = None,
    version: int = 0,
    data: bytes = b"",
    reason: int = 0,
) -> PreparedMember:
    return PreparedMember(
        member_id=member_id,
        member_epoch=4,
        instance_id=None,
        rack_id="r1",
        subscribed_topic_ids=[T],
        assignor=MemberAssignorState(reason=reason, metadata_version=version, metadata_bytes=data),
        topic_partitions=[TopicPartitions(topic_id=t, partitions=p) for t, p in (target or {}).items()],
    )


def prepare_response(*members: PreparedMember, partitions: int = 4, name: str = "scripted") -> Any:
    return ConsumerGroupPrepareAssignmentResponse(
        group_epoch=7,
        assignor_name=name,
        members=list(members),
        topics=[PreparedTopic(topic_id=T, topic_name="t", num_partitions=partitions)],
    )
