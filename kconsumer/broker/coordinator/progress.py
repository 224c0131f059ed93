"""The steps every way of joining a consumer group shares (ConsumerGroupHeartbeat, and JoinGroup
from a classic member): a static member taking over its predecessor's place, the target
assignment computed when due, and a member's current assignment moved towards its target."""

from __future__ import annotations

import dataclasses

from ...assignment.interface import PartitionAssignorError
from ...errors import ErrorCode, KafkaApiError
from ...protocol.uuid import Uuid
from .client_assignment import request_client_assignment, select_assignor
from .context import Context, rebalance_timer
from .membership import remove_member
from .model import ConsumerGroup, ConsumerGroupMember, MemberAssignmentState
from .reconciliation import reconcile
from .records import CurrentAssignmentRecord, MemberMetadataRecord, TargetMemberRecord
from .target import assignment_due, compute_server_target, subscribed_topic_ids


def replace_static_member(
    ctx: Context, group: ConsumerGroup, old: ConsumerGroupMember, new_member_id: str
) -> ConsumerGroupMember:
    """A static member rejoining under a new member id takes over the old one's assignment."""
    target = group.target.get(old.member_id)
    # Its session timer stays armed and is ignored when it fires. The new member takes
    # over its subscription: the regexes it uses stay resolved (a change of subscription in this
    # heartbeat drops the ones left unused, as any subscription change does).
    remove_member(ctx, group, old.member_id, cancel_timers=False, drop_regexes=False)
    metadata = dataclasses.replace(old.metadata, member_id=new_member_id)
    ctx.writer.write(MemberMetadataRecord(group.group_id, metadata))
    if target is not None:
        ctx.writer.write(TargetMemberRecord(group.group_id, new_member_id, target))
    current = dataclasses.replace(old.current, member_epoch=0, previous_member_epoch=0, pending_revocation={})
    ctx.writer.write(CurrentAssignmentRecord(group.group_id, new_member_id, current))
    return group.members[new_member_id]


def maybe_update_target(ctx: Context, group: ConsumerGroup) -> KafkaApiError | None:
    """Facts §5.7: compute a new target when the group epoch is ahead and the interval allows."""
    if not assignment_due(group, ctx.config.assignment_interval_ms, ctx.now_ms):
        return None
    selection = select_assignor(group, ctx.default_assignor)
    if selection.client_side:
        request_client_assignment(ctx, group, selection.name)
        if group.group_id in ctx.client_runs:
            return None
        selection = select_assignor(group, ctx.default_assignor)
        if selection.client_side:  # nobody can compute it: fall back to the default server assignor
            selection = dataclasses.replace(selection, name=ctx.default_assignor, client_side=False)
    ctx.client_runs.pop(group.group_id, None)
    assignor = ctx.assignors.get(selection.name) or ctx.assignors[ctx.default_assignor]
    try:
        compute_server_target(ctx.writer, group, ctx.image, assignor, ctx.now_ms)
    except PartitionAssignorError as exc:
        return KafkaApiError(
            ErrorCode.UNKNOWN_SERVER_ERROR, f"Failed to compute a new target assignment: {exc}"
        )
    return None


def reconcile_member(
    ctx: Context,
    group: ConsumerGroup,
    member: ConsumerGroupMember,
    owned: dict[Uuid, frozenset[int]] | None,
    subscription_changed: bool,
) -> ConsumerGroupMember:
    current = member.current
    if (
        current.state == MemberAssignmentState.STABLE
        and current.member_epoch == group.assignment_epoch
        and not subscription_changed
    ):
        return member  # fully reconciled: nothing to do
    new_current = reconcile(
        member.member_id,
        current,
        group.assignment_epoch,
        group.target_of(member.member_id).partitions,
        owned,
        group.owner_of,
        subscribed_topic_ids(group, member.metadata, ctx.image),
        subscription_changed,
    )
    timer = rebalance_timer(group.group_id, member.member_id)
    if new_current != current:
        ctx.writer.write(CurrentAssignmentRecord(group.group_id, member.member_id, new_current))
        if new_current.state == MemberAssignmentState.UNREVOKED_PARTITIONS:
            timeout = max(member.metadata.rebalance_timeout_ms, 0)
            ctx.timers.schedule(timer, ctx.now_ms + timeout, new_current.member_epoch)
    if new_current.state != MemberAssignmentState.UNREVOKED_PARTITIONS:
        ctx.timers.cancel(timer)
    return group.members[member.member_id]
