"""Computing and installing a group's target assignment.

The target is recomputed when the group epoch is ahead of the target's epoch. A server-side
assignor computes it inline; a client-side one is asked through a member (see
`client_assignment`). Either way the result is installed the same way: one record per member
whose target changed, then the target metadata record carrying the new assignment epoch.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...assignment.interface import (
    GroupSpec,
    MemberSpec,
    ServerAssignor,
    SubscriptionType,
    TopicMetadata,
)
from ...protocol.uuid import Uuid
from .metadata import MetadataImage
from .model import ConsumerGroup, MemberRegistration, TargetMember
from .records import TargetMemberRecord, TargetMemberTombstone, TargetMetadataRecord
from .state import RecordWriter


def subscribed_topic_ids(
    group: ConsumerGroup, metadata: MemberRegistration, image: MetadataImage
) -> frozenset[Uuid]:
    """The ids of the existing topics a member subscribes to, by name or through its regex."""
    return image.topic_ids(group.member_topic_names(metadata))


def assignment_due(group: ConsumerGroup, interval_ms: int, now_ms: int) -> bool:
    """Whether a new target may be computed now (Kafka 4.3 batches computations by an interval)."""
    if group.group_epoch <= group.assignment_epoch:
        return False
    last = group.last_assignment_ms
    return last is None or interval_ms == 0 or now_ms >= last + interval_ms


def build_group_spec(group: ConsumerGroup, image: MetadataImage) -> GroupSpec:
    """The assignor input: every member's subscription (as existing topic ids) and current target."""
    members: dict[str, MemberSpec] = {}
    topics: dict[Uuid, TopicMetadata] = {}
    by_id = image.topics_by_id
    # Members with the same subscription share one frozenset: assignors compare subscriptions,
    # and the same object compares at once (10,000 members usually have a handful of distinct ones).
    resolved: dict[tuple[tuple[str, ...], str | None], frozenset[Uuid]] = {}
    for member_id, member in group.members.items():
        key = (member.metadata.subscribed_topic_names, member.metadata.subscribed_topic_regex)
        topic_ids = resolved.get(key)
        if topic_ids is None:
            topic_ids = subscribed_topic_ids(group, member.metadata, image)
            resolved[key] = topic_ids
            for topic_id in topic_ids:
                topics[topic_id] = by_id[topic_id]
        members[member_id] = MemberSpec(
            member_id=member_id,
            instance_id=member.metadata.instance_id,
            rack_id=member.metadata.rack_id,
            subscribed_topic_ids=topic_ids,
            assignment=group.target_of(member_id).partitions,
        )
    kind = SubscriptionType.HOMOGENEOUS if group.is_homogeneous() else SubscriptionType.HETEROGENEOUS
    return GroupSpec(members, topics, kind)


def compute_server_target(
    writer: RecordWriter,
    group: ConsumerGroup,
    image: MetadataImage,
    assignor: ServerAssignor,
    now_ms: int,
) -> None:
    """Run a server-side assignor and install its result at the group epoch.

    Raises PartitionAssignorError (the caller answers UNKNOWN_SERVER_ERROR, as Kafka does).
    """
    result = assignor.assign(build_group_spec(group, image))
    targets = {member_id: TargetMember(_non_empty(result.get(member_id, {}))) for member_id in group.members}
    install_target(writer, group, targets, group.group_epoch, now_ms)


def install_target(
    writer: RecordWriter,
    group: ConsumerGroup,
    targets: Mapping[str, TargetMember],
    assignment_epoch: int,
    now_ms: int,
) -> None:
    """Write the records turning the group's target into `targets` at `assignment_epoch`."""
    group_id = group.group_id
    for member_id, target in targets.items():
        if member_id in group.members and group.target.get(member_id) != target:
            writer.write(TargetMemberRecord(group_id, member_id, target))
    for member_id in list(group.target):
        if member_id not in targets or member_id not in group.members:
            writer.write(TargetMemberTombstone(group_id, member_id))
    writer.write(TargetMetadataRecord(group_id, assignment_epoch, now_ms))


def _non_empty(assignment: Mapping[Uuid, frozenset[int]]) -> dict[Uuid, frozenset[int]]:
    return {topic: frozenset(parts) for topic, parts in assignment.items() if parts}
