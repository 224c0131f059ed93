"""Online migration between classic and consumer groups (``group.consumer.migration.policy``;
Kafka's convertToConsumerGroup / convertToClassicGroup and their validations).

Upgrade: a non-empty classic group becomes a consumer group when a ConsumerGroupHeartbeat member
joins it. Every classic member is carried over at the group's generation, Stable, holding what it
may own; the joining member's heartbeat then bumps the epoch and the members reconcile.

Downgrade: a consumer group whose last consumer-protocol member leaves (or is fenced) becomes a
classic group again, Stable at the group epoch, and rebalances at once; a static consumer member
replaced by a classic one with the same instance id converts it too (the classic join then
takes over the old member's place, as any static replacement does).

Ownership is carried over conservatively so that no partition is ever handed to a second member
while its holder may still read it (docs/classic-protocol.md, "Migration"): a classic member is
taken to hold its last SyncGroup assignment plus the partitions its last JoinGroup said it owned,
and a consumer member to hold its assigned partitions plus those pending revocation.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Mapping

from ....errors import ErrorCode, KafkaApiError, ProtocolError
from ....protocol.consumer_protocol import (
    ConsumerAssignment,
    ConsumerSubscription,
    ConsumerTopicPartitions,
    decode_consumer_protocol,
    encode_consumer_protocol,
)
from ....protocol.messages.classic_group import JoinGroupRequest, JoinGroupResponse, SyncGroupResponse
from ....protocol.uuid import Uuid
from ..context import Context, client_assignment_timer, member_timers, session_timer
from ..metadata import MetadataImage
from ..model import (
    CONSUMER_PROTOCOL_TYPE,
    ClassicMemberMetadata,
    ConsumerGroup,
    ConsumerGroupMember,
    CurrentAssignment,
    MemberAssignmentState,
    MemberRegistration,
    TargetMember,
    assignment_equal,
)
from ..records import (
    ClassicGroupTombstone,
    ConsumerGroupTombstone,
    CurrentAssignmentRecord,
    GroupEpochRecord,
    MemberMetadataRecord,
    TargetMemberRecord,
    TargetMetadataRecord,
)
from .model import ClassicGroup, ClassicMember, ClassicState
from .rebalance import join_timer, prepare_rebalance, reschedule_heartbeat, sync_timer, write

PartitionSets = dict[Uuid, frozenset[int]]

logger = logging.getLogger("kconsumer.broker.coordinator")


def _refused(group_id: str, why: str) -> KafkaApiError:
    logger.info("classic group %s not upgraded: %s", group_id, why)
    return KafkaApiError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group: {why}.")


def decode_subscription(metadata: bytes) -> tuple[ConsumerSubscription, int]:
    """A classic consumer's JoinGroup metadata (raises ProtocolError when malformed)."""
    return decode_consumer_protocol(ConsumerSubscription, metadata)


def partition_ids(image: MetadataImage, topics: Iterable[ConsumerTopicPartitions]) -> PartitionSets:
    """Named partitions as topic ids. Topics the cluster no longer has, and partitions their
    topic does not have (a topic deleted and created again with fewer partitions since a member
    named them), are left out: nobody can hold them, and a target naming one would never be
    reached."""
    result: dict[Uuid, frozenset[int]] = {}
    for entry in topics:
        topic = image.topics_by_name.get(entry.topic)
        existing = frozenset(
            p for p in entry.partitions if topic is not None and 0 <= p < topic.num_partitions
        )
        if topic is not None and existing:
            result[topic.topic_id] = result.get(topic.topic_id, frozenset()) | existing
    return result


def named_partitions(
    image: MetadataImage, partitions: Mapping[Uuid, Iterable[int]]
) -> list[ConsumerTopicPartitions]:
    """Partitions by topic id as ConsumerProtocol's named lists (sorted)."""
    result = []
    for topic_id, parts in partitions.items():
        topic = image.topics_by_id.get(topic_id)
        if topic is not None and parts:
            result.append(ConsumerTopicPartitions(topic=topic.name, partitions=sorted(parts)))
    return sorted(result, key=lambda entry: entry.topic)


def encode_assignment(
    image: MetadataImage, partitions: Mapping[Uuid, Iterable[int]], subscription: bytes
) -> bytes:
    """An assignment in the ConsumerProtocol version of the member's subscription."""
    try:
        version = decode_subscription(subscription)[1]
    except ProtocolError:
        version = 0
    assignment = ConsumerAssignment(assigned_partitions=named_partitions(image, partitions), user_data=None)
    return encode_consumer_protocol(assignment, min(version, 3))


def answer_waiting_members(ctx: Context, classic: ClassicGroup) -> None:
    """REBALANCE_IN_PROGRESS to every JoinGroup and SyncGroup waiting in a classic group that is
    being converted (its members join the new group with their next request)."""
    group_id = classic.group_id
    for member_id in list(classic.members) + sorted(classic.pending_members):
        ctx.replies.answer_join(
            group_id,
            member_id,
            JoinGroupResponse(error_code=ErrorCode.REBALANCE_IN_PROGRESS, member_id=member_id),
        )
        ctx.replies.answer_sync(
            group_id, member_id, SyncGroupResponse(error_code=ErrorCode.REBALANCE_IN_PROGRESS)
        )


# -- upgrade: classic → consumer ---------------------------------------------------------------


def upgrade(ctx: Context, classic: ClassicGroup) -> None:
    """Convert a non-empty classic group into a consumer group, or raise GROUP_ID_NOT_FOUND with
    the reason Kafka would log (policy, protocol type, size, malformed embedded protocol, an
    assignment carrying an assignor's user data)."""
    group_id = classic.group_id
    if not ctx.config.allows_upgrade:
        raise _refused(group_id, "the online upgrade is disabled (group.consumer.migration.policy)")
    if classic.protocol_type != CONSUMER_PROTOCOL_TYPE:
        raise _refused(group_id, f"its protocol type is {classic.protocol_type!r}, not 'consumer'")
    if len(classic.members) > ctx.config.max_group_size:
        raise _refused(group_id, "its size exceeds group.consumer.max.size")
    members = [_converted_member(ctx, classic, member) for member in classic.members.values()]
    claimed: dict[tuple[Uuid, int], str] = {}
    for registration, held in members:
        for topic_id, parts in held.items():
            for partition in parts:
                other = claimed.setdefault((topic_id, partition), registration.member_id)
                if other != registration.member_id:
                    # Transient (a rebalancing member still reports what another was given):
                    # the joining member retries until the classic rebalance settles.
                    why = f"members {other} and {registration.member_id} both claim a partition"
                    logger.info("classic group %s not upgraded yet: %s", group_id, why)
                    raise KafkaApiError(
                        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                        f"Group {group_id} is rebalancing and cannot be converted yet: {why}.",
                    )

    answer_waiting_members(ctx, classic)
    epoch = classic.generation
    logger.info(
        "classic group %s (generation %d, %d members) upgraded to a consumer group",
        group_id,
        epoch,
        len(members),
    )
    names = {name for registration, _ in members for name in registration.subscribed_topic_names}
    ctx.writer.write(ClassicGroupTombstone(group_id))
    for registration, _ in members:
        ctx.writer.write(MemberMetadataRecord(group_id, registration))
    ctx.writer.write(GroupEpochRecord(group_id, epoch, ctx.image.topics_hash(names)))
    for registration, held in members:
        ctx.writer.write(TargetMemberRecord(group_id, registration.member_id, TargetMember(held)))
    ctx.writer.write(TargetMetadataRecord(group_id, epoch, ctx.now_ms))
    for registration, held in members:
        current = CurrentAssignment(
            member_epoch=epoch,
            previous_member_epoch=epoch,
            state=MemberAssignmentState.STABLE,
            assigned={topic: dict.fromkeys(parts, epoch) for topic, parts in held.items()},
        )
        ctx.writer.write(CurrentAssignmentRecord(group_id, registration.member_id, current))
        timeout = registration.session_timeout_ms(ctx.config.session_timeout_ms)
        ctx.timers.schedule(session_timer(group_id, registration.member_id), ctx.now_ms + timeout)


def _converted_member(
    ctx: Context, classic: ClassicGroup, member: ClassicMember
) -> tuple[MemberRegistration, PartitionSets]:
    metadata = member.metadata(classic.protocol_name) or (member.protocols[0][1] if member.protocols else b"")
    try:
        subscription = decode_subscription(metadata)[0]
        assignment = None
        if member.assignment:
            assignment = decode_consumer_protocol(ConsumerAssignment, member.assignment)[0]
    except ProtocolError as exc:
        raise _refused(classic.group_id, f"the embedded consumer protocol is malformed ({exc})") from None
    if assignment is not None and assignment.user_data:
        # The consumer protocol has no place for an assignor's own data: Kafka (since 4.0) refuses
        # to convert rather than drop it, whichever assignor wrote it.
        raise _refused(
            classic.group_id,
            f"member {member.member_id}'s assignment carries user data of its assignor, which the "
            "consumer protocol would lose (an unsupported custom assignor)",
        )
    assigned = [] if assignment is None else assignment.assigned_partitions
    held: PartitionSets = partition_ids(ctx.image, assigned)
    for topic_id, parts in partition_ids(ctx.image, subscription.owned_partitions).items():
        held[topic_id] = held.get(topic_id, frozenset()) | parts
    registration = MemberRegistration(
        member_id=member.member_id,
        instance_id=member.instance_id,
        rack_id=subscription.rack_id or None,
        client_id=member.client_id,
        client_host=member.client_host,
        subscribed_topic_names=tuple(sorted(set(subscription.topics))),
        rebalance_timeout_ms=member.rebalance_timeout_ms,
        classic=ClassicMemberMetadata(member.session_timeout_ms, member.protocols),
    )
    return registration, held


# -- downgrade: consumer → classic -------------------------------------------------------------


def may_downgrade_on_leave(ctx: Context, group: ConsumerGroup, leaving_member_id: str) -> bool:
    """Kafka's validateOnlineDowngradeWithFencedMember: the last consumer-protocol member leaves
    a group that still has (classic) members, the policy allows it, and they fit a classic group."""
    return (
        group.all_members_use_classic_except(leaving_member_id)
        and group.num_members > 1
        and ctx.config.allows_downgrade
        and group.num_members - 1 <= ctx.config.classic_max_group_size
    )


def may_downgrade_on_replacement(ctx: Context, group: ConsumerGroup, replaced_member_id: str) -> bool:
    """Kafka's validateOnlineDowngradeWithReplacedMemberId: the last consumer-protocol member is a
    static member a classic member with its instance id replaces."""
    return (
        group.all_members_use_classic_except(replaced_member_id)
        and ctx.config.allows_downgrade
        and group.num_members <= ctx.config.classic_max_group_size
    )


def downgrade(
    ctx: Context, group: ConsumerGroup, leaving_member_id: str, successor: JoinGroupRequest | None = None
) -> ClassicGroup:
    """Convert the consumer group into a classic group. Without a `successor` the leaving member
    is dropped and the group rebalances; with one (a classic static member replacing it), the
    leaving member stays under its old id with the successor's protocols, for the classic join to
    replace it, and the group rebalances only if it was not fully reconciled."""
    group_id = group.group_id
    epoch = group.group_epoch
    members: dict[str, ClassicMember] = {}
    for member in group.members.values():
        classic = member.metadata.classic
        if member.member_id == leaving_member_id:
            if successor is None:
                continue
            classic = ClassicMemberMetadata(
                successor.session_timeout_ms, tuple((p.name, p.metadata) for p in successor.protocols)
            )
        assert classic is not None
        members[member.member_id] = ClassicMember(
            member_id=member.member_id,
            instance_id=member.instance_id,
            client_id=member.metadata.client_id,
            client_host=member.metadata.client_host,
            rebalance_timeout_ms=member.metadata.rebalance_timeout_ms,
            session_timeout_ms=classic.session_timeout_ms,
            protocol_type=CONSUMER_PROTOCOL_TYPE,
            protocols=classic.protocols,
            assignment=b"",
        )
    converted = ClassicGroup(
        group_id,
        state=ClassicState.STABLE,
        previous_state=ClassicState.STABLE,
        state_timestamp_ms=ctx.now_ms,
        generation=epoch,
        protocol_type=CONSUMER_PROTOCOL_TYPE,
        members=members,
        leader=next(iter(members), None),
    )
    protocol = converted.select_protocol()
    converted = dataclasses.replace(
        converted,
        protocol_name=protocol,
        members={
            member_id: _with_held_assignment(ctx, group.members[member_id], member, protocol)
            for member_id, member in members.items()
        },
    )
    reconciled = _holds_its_target(group)
    logger.info(
        "consumer group %s (epoch %d) downgraded to a classic group of %d members (%s)",
        group_id,
        epoch,
        len(members),
        "rebalancing" if successor is None or not reconciled else f"{leaving_member_id} replaced",
    )
    for member_id in group.members:
        _cancel_consumer_timers(ctx, group_id, member_id)
    ctx.client_runs.pop(group_id, None)
    ctx.timers.cancel(client_assignment_timer(group_id))
    ctx.timers.cancel(join_timer(group_id))
    ctx.timers.cancel(sync_timer(group_id))
    ctx.writer.write(ConsumerGroupTombstone(group_id))
    converted = write(ctx, converted, durable=True)
    for member_id in converted.members:
        reschedule_heartbeat(ctx, converted, member_id)
    if successor is None:
        return prepare_rebalance(ctx, converted, f"downgrade of group {group_id} from consumer to classic")
    if not reconciled:
        return prepare_rebalance(ctx, converted, f"group {group_id} downgraded while reconciling")
    return converted


def _holds_its_target(group: ConsumerGroup) -> bool:
    """Whether the target is computed for the group epoch and every member holds exactly its
    target (a static member that left temporarily included, whatever its epoch)."""
    if group.group_epoch != group.assignment_epoch:
        return False
    for member in group.members.values():
        current = member.current
        if any(current.pending_revocation.values()):
            return False
        if not assignment_equal(current.assigned_sets(), group.target_of(member.member_id).partitions):
            return False
    return True


def _with_held_assignment(
    ctx: Context, member: ConsumerGroupMember, classic: ClassicMember, protocol: str
) -> ClassicMember:
    held: dict[Uuid, set[int]] = {}
    for partitions in (member.current.assigned, member.current.pending_revocation):
        for topic_id, parts in partitions.items():
            held.setdefault(topic_id, set()).update(parts)
    assignment = encode_assignment(ctx.image, held, classic.metadata(protocol))
    return dataclasses.replace(classic, assignment=assignment)


def _cancel_consumer_timers(ctx: Context, group_id: str, member_id: str) -> None:
    for key in member_timers(group_id, member_id):
        ctx.timers.cancel(key)
