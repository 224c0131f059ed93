"""The classic rebalance: preparing it, ending the join phase, expiring members and syncs
(Kafka's GroupMetadataManager for classic groups; docs/classic-protocol.md lists the rules).

Every function takes the handler's `Context` and the group as it is now, writes the group's next
version as a record, and returns it; timers are keyed by group (join, sync) or member (heartbeat).
"""

from __future__ import annotations

import dataclasses

from ....errors import ErrorCode
from ....protocol.messages.classic_group import (
    JoinGroupResponse,
    JoinGroupResponseMember,
    SyncGroupResponse,
)
from ..context import Context
from ..records import ClassicGroupRecord
from .model import CAN_REBALANCE, ClassicGroup, ClassicState


# -- timer keys ------------------------------------------------------------------------------
def heartbeat_timer(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("classic-heartbeat", group_id, member_id)


def join_timer(group_id: str) -> tuple[str, str]:
    return ("classic-join", group_id)


def sync_timer(group_id: str) -> tuple[str, str]:
    return ("classic-sync", group_id)


#: Join-timer payloads: the initial rebalance (delay, remaining) or the end of the join phase.
COMPLETE_JOIN = ("complete",)


def write(ctx: Context, group: ClassicGroup, durable: bool = False) -> ClassicGroup:
    """Record the group's next version (durable: as Kafka persists it)."""
    ctx.writer.write(ClassicGroupRecord(group.group_id, group, durable))
    return group


def reschedule_heartbeat(
    ctx: Context, group: ClassicGroup, member_id: str, timeout_ms: int | None = None
) -> None:
    member = group.members.get(member_id)
    if timeout_ms is None:
        timeout_ms = member.session_timeout_ms if member is not None else 0
    ctx.timers.schedule(heartbeat_timer(group.group_id, member_id), ctx.now_ms + timeout_ms)


def join_response(
    group: ClassicGroup, member_id: str, with_members: bool, skip: bool = False
) -> JoinGroupResponse:
    """The JoinGroup answer for the current generation (the leader gets everyone's metadata)."""
    members = []
    if with_members:
        members = [
            JoinGroupResponseMember(
                member_id=m.member_id,
                group_instance_id=m.instance_id,
                metadata=m.metadata(group.protocol_name),
            )
            for m in group.members.values()
        ]
    return JoinGroupResponse(
        generation_id=group.generation,
        protocol_type=group.protocol_type,
        protocol_name=group.protocol_name,
        leader=group.leader or "",
        skip_assignment=skip,
        member_id=member_id,
        members=members,
    )


def prepare_rebalance(ctx: Context, group: ClassicGroup, reason: str) -> ClassicGroup:
    """Start a rebalance: waiting SyncGroups are told to rejoin; an empty group's first
    rebalance waits `group.initial.rebalance.delay.ms` for more members."""
    if group.state == ClassicState.COMPLETING_REBALANCE:
        group = group.updated_members(assignment=b"")
        _propagate(ctx, group, ErrorCode.REBALANCE_IN_PROGRESS)
    ctx.timers.cancel(sync_timer(group.group_id))
    group = dataclasses.replace(group, pending_sync=frozenset())
    initial = group.state == ClassicState.EMPTY
    if initial:
        delay = ctx.config.classic_initial_rebalance_delay_ms
        remaining = max(group.rebalance_timeout_ms() - delay, 0)
        ctx.timers.schedule(join_timer(group.group_id), ctx.now_ms + delay, ("initial", delay, remaining))
    group = write(ctx, group.transition(ClassicState.PREPARING_REBALANCE, ctx.now_ms))
    if initial:
        return group
    if group.has_all_members_joined():
        return complete_join(ctx, group)
    ctx.timers.schedule(join_timer(group.group_id), ctx.now_ms + group.rebalance_timeout_ms(), COMPLETE_JOIN)
    return group


def maybe_complete_join_phase(ctx: Context, group: ClassicGroup) -> ClassicGroup:
    """End the join phase if everyone rejoined (never during the initial delay)."""
    if (
        group.state == ClassicState.PREPARING_REBALANCE
        and group.previous_state != ClassicState.EMPTY
        and group.has_all_members_joined()
    ):
        return complete_join(ctx, group)
    return group


def rebalance_or_complete_join(ctx: Context, group: ClassicGroup, reason: str) -> ClassicGroup:
    if group.state in CAN_REBALANCE:
        return prepare_rebalance(ctx, group, reason)
    return maybe_complete_join_phase(ctx, group)


def complete_join(ctx: Context, group: ClassicGroup) -> ClassicGroup:
    """End the join phase: dynamic members that did not rejoin are removed, the generation is
    bumped, the protocol chosen, and every waiting JoinGroup answered (the leader gets the
    members); the group then waits for SyncGroups (or is empty)."""
    group_id = group.group_id
    ctx.timers.cancel(join_timer(group_id))
    for member in list(group.members.values()):
        if not member.awaiting_join and member.instance_id is None:
            group = group.without_member(member.member_id)
            ctx.timers.cancel(heartbeat_timer(group_id, member.member_id))
    leader = group.members.get(group.leader) if group.leader else None
    if leader is not None and not leader.awaiting_join:
        joined = next((m for m in group.members.values() if m.awaiting_join), None)
        if joined is None:
            # Nobody rejoined: wait another rebalance timeout for the session timeouts to act.
            ctx.timers.schedule(
                join_timer(group_id), ctx.now_ms + group.rebalance_timeout_ms(), COMPLETE_JOIN
            )
            return write(ctx, group)
        group = dataclasses.replace(group, leader=joined.member_id)
    group = dataclasses.replace(group, generation=group.generation + 1, pending_sync=frozenset())
    if not group.members:
        group = dataclasses.replace(group, protocol_name=None, leader=None)
        return write(ctx, group.transition(ClassicState.EMPTY, ctx.now_ms), durable=True)
    group = dataclasses.replace(group, protocol_name=group.select_protocol())
    group = group.transition(ClassicState.COMPLETING_REBALANCE, ctx.now_ms)
    for member in group.members.values():
        response = join_response(group, member.member_id, with_members=member.member_id == group.leader)
        ctx.replies.answer_join(group_id, member.member_id, response)
        reschedule_heartbeat(ctx, group, member.member_id)
    group = group.updated_members(awaiting_join=False, is_new=False)
    group = dataclasses.replace(group, pending_sync=frozenset(group.members))
    ctx.timers.schedule(sync_timer(group_id), ctx.now_ms + group.rebalance_timeout_ms(), group.generation)
    return write(ctx, group)


def store_assignment(ctx: Context, group: ClassicGroup, assignments: dict[str, bytes]) -> ClassicGroup:
    """The leader's SyncGroup: every member gets its assignment (empty if the leader gave none),
    the group is Stable, and the assignment is persisted."""
    members = {
        mid: dataclasses.replace(m, assignment=assignments.get(mid, b"")) for mid, m in group.members.items()
    }
    group = dataclasses.replace(group, members=members).transition(ClassicState.STABLE, ctx.now_ms)
    _propagate(ctx, group, ErrorCode.NONE)
    return write(ctx, group, durable=True)


def _propagate(ctx: Context, group: ClassicGroup, error: int) -> None:
    """Answer every waiting SyncGroup with its assignment (or the error)."""
    ok = error == ErrorCode.NONE
    for member in group.members.values():
        response = SyncGroupResponse(
            error_code=int(error),
            protocol_type=group.protocol_type if ok else None,
            protocol_name=group.protocol_name if ok else None,
            assignment=member.assignment,
        )
        if ctx.replies.answer_sync(group.group_id, member.member_id, response):
            reschedule_heartbeat(ctx, group, member.member_id)


def drop_member(ctx: Context, group: ClassicGroup, member_id: str) -> ClassicGroup:
    """The group without the member; its waiting requests are answered UNKNOWN_MEMBER_ID (so a
    client still there rejoins) and its session timer stops."""
    ctx.replies.answer_join(
        group.group_id, member_id, JoinGroupResponse(error_code=ErrorCode.UNKNOWN_MEMBER_ID, member_id="")
    )
    ctx.replies.answer_sync(
        group.group_id, member_id, SyncGroupResponse(error_code=ErrorCode.UNKNOWN_MEMBER_ID)
    )
    ctx.timers.cancel(heartbeat_timer(group.group_id, member_id))
    return write(ctx, group.without_member(member_id))


def remove_member(ctx: Context, group: ClassicGroup, member_id: str, reason: str) -> ClassicGroup:
    """A member is gone (its session expired): the group rebalances (or its join phase may end)."""
    group = drop_member(ctx, group, member_id)
    if group.state in (ClassicState.STABLE, ClassicState.COMPLETING_REBALANCE):
        return rebalance_or_complete_join(ctx, group, reason)
    if group.state == ClassicState.PREPARING_REBALANCE and group.has_all_members_joined():
        return complete_join(ctx, group)
    return group


# -- timers ----------------------------------------------------------------------------------
def on_heartbeat_expired(ctx: Context, group: ClassicGroup, member_id: str) -> None:
    """A member's (or pending member's) session ran out."""
    if member_id in group.pending_members:
        group = write(ctx, dataclasses.replace(group, pending_members=group.pending_members - {member_id}))
        if group.state == ClassicState.PREPARING_REBALANCE and group.has_all_members_joined():
            complete_join(ctx, group)
        return
    member = group.members.get(member_id)
    if member is None:
        return
    # A member waiting for the rebalance is not expected to heartbeat, unless it is new.
    waiting = member.awaiting_join or ctx.replies.is_awaiting_sync(group.group_id, member_id)
    if member.is_new or not waiting:
        remove_member(ctx, group, member_id, f"member {member_id} session expired")


def on_join_timer(ctx: Context, group: ClassicGroup, payload: tuple[object, ...]) -> None:
    """The initial delay ran out (extended while members keep coming, up to the rebalance
    timeout), or the join phase's rebalance timeout did."""
    if payload[0] == "initial":
        delay, remaining = int(payload[1]), int(payload[2])  # type: ignore[call-overload]
        if group.new_member_added and remaining != 0:
            next_delay = min(ctx.config.classic_initial_rebalance_delay_ms, remaining)
            next_remaining = max(remaining - delay, 0)
            write(ctx, dataclasses.replace(group, new_member_added=False))
            ctx.timers.schedule(
                join_timer(group.group_id), ctx.now_ms + next_delay, ("initial", next_delay, next_remaining)
            )
            return
    complete_join(ctx, group)


def on_sync_expired(ctx: Context, group: ClassicGroup, generation: int) -> None:
    """Members that never sent SyncGroup after the join phase are removed, and the group rebalances."""
    if generation != group.generation or not group.pending_sync:
        return
    if group.state not in (ClassicState.COMPLETING_REBALANCE, ClassicState.STABLE):
        return
    missing = sorted(group.pending_sync)
    for member_id in missing:
        group = drop_member(ctx, group, member_id)
    prepare_rebalance(ctx, group, f"removing {missing} on pending sync request expiration")
