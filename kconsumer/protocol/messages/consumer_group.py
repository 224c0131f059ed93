"""ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69), KIP-848.

The heartbeat carries kconsumer's client-side-assignor extension as tagged fields 10000+
(docs/assignor-protocol.md §1); a real broker skips them.
"""

from __future__ import annotations

from ..schema import Message, Struct, field
from ..types import BOOL, BYTES, INT8, INT16, INT32, STRING, UUID, Array
from ..uuid import Uuid

#: MemberEpoch values with a meaning of their own.
JOIN_GROUP_MEMBER_EPOCH = 0
LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2


class TopicPartitions(Struct):
    """Partitions of one topic, by id (heartbeat request and response)."""

    topic_id: Uuid = field(UUID, "0+")
    partitions: list[int] = field(Array(INT32), "0+")


class Assignor(Struct):
    """One client-side assignor a member supports (extension, docs/assignor-protocol.md §1)."""

    name: str = field(STRING, "0+")
    minimum_version: int = field(INT16, "0+")
    maximum_version: int = field(INT16, "0+")
    reason: int = field(INT8, "0+")
    metadata_version: int = field(INT16, "0+")
    metadata_bytes: bytes = field(BYTES, "0+")


class ConsumerGroupHeartbeatRequest(Message, api_key=68, valid="0-1", flexible="0+"):
    group_id: str = field(STRING, "0+")
    member_id: str = field(STRING, "0+")
    member_epoch: int = field(INT32, "0+")
    instance_id: str | None = field(STRING, "0+", nullable="0+", default=None)
    rack_id: str | None = field(STRING, "0+", nullable="0+", default=None)
    rebalance_timeout_ms: int = field(INT32, "0+", default=-1)
    subscribed_topic_names: list[str] | None = field(Array(STRING), "0+", nullable="0+", default=None)
    subscribed_topic_regex: str | None = field(STRING, "1+", nullable="1+", default=None)
    server_assignor: str | None = field(STRING, "0+", nullable="0+", default=None)
    topic_partitions: list[TopicPartitions] | None = field(
        Array(TopicPartitions), "0+", nullable="0+", default=None
    )
    # Extension (docs/assignor-protocol.md §1): null = unchanged since the last heartbeat.
    client_assignors: list[Assignor] | None = field(
        Array(Assignor), "0+", nullable="0+", default=None, tag=10000
    )


class Assignment(Struct):
    """The partitions a member may use now."""

    topic_partitions: list[TopicPartitions] = field(Array(TopicPartitions), "0+")


class AssignmentMetadata(Struct):
    """What the client-side assignor computed for this member (extension)."""

    error: int = field(INT8, "0+")
    metadata_version: int = field(INT16, "0+")
    metadata_bytes: bytes = field(BYTES, "0+")


class ConsumerGroupHeartbeatResponse(Message, api_key=68, valid="0-1", flexible="0+"):
    throttle_time_ms: int = field(INT32, "0+")
    error_code: int = field(INT16, "0+")
    error_message: str | None = field(STRING, "0+", nullable="0+", default=None)
    member_id: str | None = field(STRING, "0+", nullable="0+", default=None)
    member_epoch: int = field(INT32, "0+")
    heartbeat_interval_ms: int = field(INT32, "0+")
    assignment: Assignment | None = field(Assignment, "0+", nullable="0+", default=None)
    # Extensions (docs/assignor-protocol.md §1).
    should_compute_assignment: bool = field(BOOL, "0+", tag=10000)
    assignment_metadata: AssignmentMetadata | None = field(
        AssignmentMetadata, "0+", nullable="0+", default=None, tag=10001
    )
    pending_topic_partitions: list[TopicPartitions] | None = field(
        Array(TopicPartitions), "0+", nullable="0+", default=None, tag=10002
    )


class ConsumerGroupDescribeRequest(Message, api_key=69, valid="0-1", flexible="0+"):
    group_ids: list[str] = field(Array(STRING), "0+")
    include_authorized_operations: bool = field(BOOL, "0+")


class DescribedTopicPartitions(Struct):
    """Partitions of one topic, by id and name (describe responses)."""

    topic_id: Uuid = field(UUID, "0+")
    topic_name: str = field(STRING, "0+")
    partitions: list[int] = field(Array(INT32), "0+")


class DescribedAssignment(Struct):
    topic_partitions: list[DescribedTopicPartitions] = field(Array(DescribedTopicPartitions), "0+")


class DescribedMember(Struct):
    member_id: str = field(STRING, "0+")
    instance_id: str | None = field(STRING, "0+", nullable="0+", default=None)
    rack_id: str | None = field(STRING, "0+", nullable="0+", default=None)
    member_epoch: int = field(INT32, "0+")
    client_id: str = field(STRING, "0+")
    client_host: str = field(STRING, "0+")
    subscribed_topic_names: list[str] = field(Array(STRING), "0+")
    subscribed_topic_regex: str | None = field(STRING, "0+", nullable="0+", default=None)
    assignment: DescribedAssignment = field(DescribedAssignment, "0+")
    target_assignment: DescribedAssignment = field(DescribedAssignment, "0+")
    member_type: int = field(INT8, "1+", default=-1, ignorable=True)


class DescribedGroup(Struct):
    error_code: int = field(INT16, "0+")
    error_message: str | None = field(STRING, "0+", nullable="0+", default=None)
    group_id: str = field(STRING, "0+")
    group_state: str = field(STRING, "0+")
    group_epoch: int = field(INT32, "0+")
    assignment_epoch: int = field(INT32, "0+")
    assignor_name: str = field(STRING, "0+")
    members: list[DescribedMember] = field(Array(DescribedMember), "0+")
    authorized_operations: int = field(INT32, "0+", default=-(2**31))


class ConsumerGroupDescribeResponse(Message, api_key=69, valid="0-1", flexible="0+"):
    throttle_time_ms: int = field(INT32, "0+")
    groups: list[DescribedGroup] = field(Array(DescribedGroup), "0+")
