"""Classic members inside a consumer group (Kafka's classicGroupJoinToConsumerGroup,
classicGroupSyncToConsumerGroup, classicGroupHeartbeatToConsumerGroup and
classicGroupLeaveToConsumerGroup).

A classic member of a consumer group is a consumer group member like any other, reconciled by the
coordinator: its JoinGroup is its heartbeat with a full subscription (the owned partitions come
from its ConsumerProtocol metadata) and is answered at once with its member epoch as the
generation; its SyncGroup returns its current assignment; its Heartbeat answers
REBALANCE_IN_PROGRESS whenever it must rejoin to make progress (a new group epoch, partitions to
revoke, partitions freed for it). Nobody is its leader: the coordinator assigns.
"""

from __future__ import annotations

from ....errors import ErrorCode, KafkaApiError, ProtocolError
from ....protocol.messages.classic_group import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from ..context import Context, consumer_join_timer, consumer_sync_timer, session_timer
from ..membership import bump_group_epoch, remove_member
from ..model import (
    CONSUMER_PROTOCOL_TYPE,
    ClassicMemberMetadata,
    ConsumerGroup,
    ConsumerGroupMember,
    MemberAssignmentState,
    MemberRegistration,
)
from ..progress import maybe_update_target, reconcile_member, replace_static_member
from ..records import MemberMetadataRecord
from . import join as classic_join
from .membership import leave_each
from .migration import (
    decode_subscription,
    downgrade,
    encode_assignment,
    may_downgrade_on_replacement,
    partition_ids,
)
from .replies import Deferred

_join_error = classic_join.join_error


def join(
    ctx: Context,
    group: ConsumerGroup,
    request: JoinGroupRequest,
    version: int,
    client_id: str,
    client_host: str,
) -> JoinGroupResponse | Deferred:
    """A classic member joins (or rejoins) a non-empty consumer group."""
    member_id = request.member_id
    unknown = member_id == ""
    if unknown:
        member_id = ctx.new_member_id()
    if member_id not in group.members and group.num_members >= ctx.config.max_group_size:
        return _join_error(ErrorCode.GROUP_MAX_SIZE_REACHED, member_id)
    if not group.supports_classic_protocols(request.protocol_type, [p.name for p in request.protocols]):
        return _join_error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id)
    instance_id = request.group_instance_id
    if instance_id is None and unknown and version >= classic_join.REQUIRE_KNOWN_MEMBER_ID_VERSION:
        ctx.replies.issue(group.group_id, member_id)
        return _join_error(ErrorCode.MEMBER_ID_REQUIRED, member_id)
    try:
        subscription = decode_subscription(request.protocols[0].metadata)[0]
    except ProtocolError:
        return _join_error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id)
    holder = None if instance_id is None else group.member_by_instance(instance_id)
    replaced: ConsumerGroupMember | None = None
    member: ConsumerGroupMember | None = group.members.get(member_id)
    if (
        instance_id is None
        and not unknown
        and member is None
        and not ctx.replies.claim(group.group_id, member_id)
    ):
        # Stricter than Kafka (which adds the member back): an id the group no longer knows (the
        # member was removed, its partitions handed over) and did not just hand out is refused,
        # so the member gives its partitions up before it joins again as a new member.
        return _join_error(ErrorCode.UNKNOWN_MEMBER_ID, member_id)
    if instance_id is not None:
        if unknown:
            member, replaced = None, holder
        elif holder is None:
            return _join_error(ErrorCode.UNKNOWN_MEMBER_ID, member_id)
        elif holder.member_id != member_id:
            return _join_error(ErrorCode.FENCED_INSTANCE_ID, member_id)
    if replaced is not None and may_downgrade_on_replacement(ctx, group, replaced.member_id):
        # The last consumer-protocol member is replaced by a classic one: the group is classic
        # again, and the classic join replaces the member there.
        downgrade(ctx, group, replaced.member_id, request)
        return classic_join.join(ctx, request, version, client_id, client_host)

    # Every check passed: from here on, records are written.
    if replaced is not None:
        member = replace_static_member(ctx, group, replaced, member_id)
    old = member.metadata if member is not None else MemberRegistration(member_id)
    new = MemberRegistration(
        member_id=member_id,
        instance_id=instance_id,
        rack_id=subscription.rack_id or old.rack_id,
        client_id=client_id,
        client_host=client_host,
        subscribed_topic_names=tuple(sorted(set(subscription.topics))),
        subscribed_topic_regex=None,
        server_assignor=old.server_assignor,
        rebalance_timeout_ms=request.rebalance_timeout_ms
        if request.rebalance_timeout_ms != -1
        else old.rebalance_timeout_ms,
        classic=ClassicMemberMetadata(
            request.session_timeout_ms, tuple((p.name, p.metadata) for p in request.protocols)
        ),
    )
    if member is None or new != old:
        ctx.writer.write(MemberMetadataRecord(group.group_id, new))
    subscription_changed = member is None or (
        set(new.subscribed_topic_names) != set(old.subscribed_topic_names)
        or new.subscribed_topic_regex != old.subscribed_topic_regex
    )
    if subscription_changed or (
        replaced is not None and ctx.image.topics_hash(group.subscribed_topic_names()) != group.metadata_hash
    ):
        bump_group_epoch(ctx, group)
    error = maybe_update_target(ctx, group)
    if error is not None:
        ctx.writer.rollback()  # as a failed heartbeat: nothing of this join is kept
        return _join_error(error.code, member_id)
    owned = partition_ids(ctx.image, subscription.owned_partitions)
    member = reconcile_member(ctx, group, group.members[member_id], owned, subscription_changed)
    group_id = group.group_id
    ctx.timers.cancel(consumer_join_timer(group_id, member_id))
    ctx.timers.schedule(session_timer(group_id, member_id), ctx.now_ms + request.session_timeout_ms)
    ctx.timers.schedule(
        consumer_sync_timer(group_id, member_id), ctx.now_ms + max(new.rebalance_timeout_ms, 0)
    )
    assert new.classic is not None
    return JoinGroupResponse(
        member_id=member_id,
        generation_id=member.member_epoch,
        protocol_type=CONSUMER_PROTOCOL_TYPE,
        protocol_name=new.classic.protocol_name,
        leader="",
        members=[],
    )


def _classic_member(group: ConsumerGroup, member_id: str, instance_id: str | None) -> ConsumerGroupMember:
    """The classic member a SyncGroup or Heartbeat comes from (Kafka's validateConsumerGroupMember
    and throwIfMemberDoesNotUseClassicProtocol)."""
    if instance_id is None:
        member = group.members.get(member_id)
        if member is None:
            raise KafkaApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not in the group.")
    else:
        member = group.member_by_instance(instance_id)
        if member is None:
            raise KafkaApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
        if member.member_id != member_id:
            raise KafkaApiError(
                ErrorCode.FENCED_INSTANCE_ID, f"Instance id {instance_id} is held by another member."
            )
    if not member.uses_classic_protocol:
        raise KafkaApiError(
            ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member.member_id} does not use the classic protocol."
        )
    return member


def _check_generation(member: ConsumerGroupMember, generation: int) -> None:
    if generation != member.member_epoch:
        raise KafkaApiError(
            ErrorCode.ILLEGAL_GENERATION,
            f"The generation id {generation} is not the member epoch {member.member_epoch}.",
        )


def _must_rejoin(ctx: Context, group: ConsumerGroup, member: ConsumerGroupMember) -> None:
    """Its rejoin is awaited within its rebalance timeout (Kafka's join timeout, set if absent)."""
    key = consumer_join_timer(group.group_id, member.member_id)
    if ctx.timers.get(key) is None:
        ctx.timers.schedule(key, ctx.now_ms + max(member.metadata.rebalance_timeout_ms, 0))


def sync(ctx: Context, group: ConsumerGroup, request: SyncGroupRequest) -> SyncGroupResponse:
    """The member's current assignment, in the ConsumerProtocol version it subscribed with."""
    try:
        if not group.members:
            raise KafkaApiError(ErrorCode.UNKNOWN_MEMBER_ID)
        member = _classic_member(group, request.member_id, request.group_instance_id)
        _check_generation(member, request.generation_id)
        classic = member.metadata.classic
        assert classic is not None
        if (request.protocol_type is not None and request.protocol_type != CONSUMER_PROTOCOL_TYPE) or (
            request.protocol_name is not None and request.protocol_name != classic.protocol_name
        ):
            raise KafkaApiError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if (
            group.group_epoch > member.member_epoch
            and member.state != MemberAssignmentState.UNREVOKED_PARTITIONS
        ):
            _must_rejoin(ctx, group, member)
            raise KafkaApiError(ErrorCode.REBALANCE_IN_PROGRESS)
    except KafkaApiError as exc:
        return SyncGroupResponse(error_code=int(exc.code))
    group_id, member_id = group.group_id, member.member_id
    ctx.timers.cancel(consumer_sync_timer(group_id, member_id))
    ctx.timers.schedule(session_timer(group_id, member_id), ctx.now_ms + classic.session_timeout_ms)
    return SyncGroupResponse(
        protocol_type=request.protocol_type,
        protocol_name=request.protocol_name,
        assignment=encode_assignment(ctx.image, member.current.assigned, classic.metadata),
    )


def heartbeat(ctx: Context, group: ConsumerGroup, request: HeartbeatRequest) -> HeartbeatResponse:
    """Alive; told to rejoin when a rejoin would move its assignment forward."""
    try:
        member = _classic_member(group, request.member_id, request.group_instance_id)
        _check_generation(member, request.generation_id)
    except KafkaApiError as exc:
        return HeartbeatResponse(error_code=int(exc.code))
    classic = member.metadata.classic
    assert classic is not None
    ctx.timers.schedule(
        session_timer(group.group_id, member.member_id), ctx.now_ms + classic.session_timeout_ms
    )
    state = member.state
    if (
        member.member_epoch < group.group_epoch
        or state == MemberAssignmentState.UNREVOKED_PARTITIONS
        or (state == MemberAssignmentState.UNRELEASED_PARTITIONS and not _waits_on_unreleased(group, member))
    ):
        _must_rejoin(ctx, group, member)
        return HeartbeatResponse(error_code=ErrorCode.REBALANCE_IN_PROGRESS)
    return HeartbeatResponse()


def _waits_on_unreleased(group: ConsumerGroup, member: ConsumerGroupMember) -> bool:
    """Whether a partition of its target is still held by another member."""
    assigned = member.current.assigned
    for topic_id, partitions in group.target_of(member.member_id).partitions.items():
        for partition in partitions:
            if partition not in assigned.get(topic_id, {}):
                holder = group.owner_of(topic_id, partition)
                if holder is not None and holder != member.member_id:
                    return True
    return False


def leave(ctx: Context, group: ConsumerGroup, request: LeaveGroupRequest, version: int) -> LeaveGroupResponse:
    """Classic members leave; the group epoch is bumped once for the batch."""

    def remove(member_id: str, instance_id: str | None) -> bool:
        if instance_id is None:
            member = _classic_member(group, member_id, None)
        else:
            holder = group.member_by_instance(instance_id)
            # An administrative removal names the instance id alone.
            named = holder.member_id if holder is not None and not member_id else member_id
            member = _classic_member(group, named, instance_id)
        remove_member(ctx, group, member.member_id)
        return True

    response, left = leave_each(request, version, remove)
    if left:
        bump_group_epoch(ctx, group)
    return response
