"""JoinGroup on a classic group (Kafka's classicGroupJoinToClassicGroup and what it calls).

New dynamic members get an id and are asked to rejoin with it (MEMBER_ID_REQUIRED, v4+); a
static member rejoining with a new id replaces its old one (fencing it) and, in a Stable group
whose protocol does not change, gets the current generation back without a rebalance.
"""

from __future__ import annotations

import dataclasses

from ....errors import ErrorCode
from ....protocol.messages.classic_group import JoinGroupRequest, JoinGroupResponse, SyncGroupResponse
from ..config import CLASSIC_NEW_MEMBER_JOIN_TIMEOUT_MS
from ..context import Context
from ..records import ConsumerGroupTombstone, SimpleGroupTombstone
from .model import ClassicGroup, ClassicMember, ClassicState
from .rebalance import (
    heartbeat_timer,
    join_response,
    maybe_complete_join_phase,
    prepare_rebalance,
    rebalance_or_complete_join,
    reschedule_heartbeat,
    write,
)
from .replies import Deferred

#: JoinGroup v4+ requires a known member id (MEMBER_ID_REQUIRED first).
REQUIRE_KNOWN_MEMBER_ID_VERSION = 4
#: JoinGroup v9+ lets a rejoining static leader skip the assignment.
SKIP_ASSIGNMENT_VERSION = 9


def join_error(code: int, member_id: str) -> JoinGroupResponse:
    """A JoinGroup refused with `code`."""
    return JoinGroupResponse(error_code=int(code), member_id=member_id, protocol_name=None)


def checked(
    ctx: Context, request: JoinGroupRequest, version: int
) -> tuple[JoinGroupRequest, JoinGroupResponse | None]:
    """The checks every JoinGroup passes whatever group it goes to (Kafka's GroupCoordinatorService):
    (the request, with v0's rebalance timeout filled in; the refusal, or None)."""
    config = ctx.config
    if not request.group_id:
        return request, join_error(ErrorCode.INVALID_GROUP_ID, request.member_id)
    timeout = request.session_timeout_ms
    if not config.classic_min_session_timeout_ms <= timeout <= config.classic_max_session_timeout_ms:
        return request, join_error(ErrorCode.INVALID_SESSION_TIMEOUT, request.member_id)
    if version == 0:  # v0 has no rebalance timeout: the session timeout is used
        request = request.replace(rebalance_timeout_ms=timeout)
    return request, None


def join(
    ctx: Context, request: JoinGroupRequest, version: int, client_id: str, client_host: str
) -> JoinGroupResponse | Deferred:
    """Answer a checked JoinGroup to a classic group (or a new one) now, or a `Deferred` ticket
    answered when the join phase ends."""
    member_id = request.member_id
    group = _group_for_join(ctx, request.group_id, member_id == "")
    if group is None:
        return join_error(ErrorCode.UNKNOWN_MEMBER_ID, member_id)
    if not _accepts(ctx, group, member_id):
        return join_error(ErrorCode.GROUP_MAX_SIZE_REACHED, "")
    names = [p.name for p in request.protocols]
    if not group.supports(request.protocol_type, names):
        return join_error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id)
    if member_id == "":
        return _join_new(ctx, group, request, version, client_id, client_host)
    return _join_existing(ctx, group, request, version, client_id, client_host)


def _group_for_join(ctx: Context, group_id: str, unknown_member: bool) -> ClassicGroup | None:
    """The classic group to join; created (durably, as Kafka writes an empty group) for a new
    member. An empty consumer group of that id is deleted first; a simple group becomes it."""
    state = ctx.state
    existing = state.classic_groups.get(group_id)
    if existing is not None:
        return existing
    if not unknown_member:
        return None
    consumer = state.group(group_id)
    if consumer is not None and not consumer.members:
        ctx.writer.write(ConsumerGroupTombstone(group_id))
    if group_id in state.simple_groups:
        ctx.writer.write(SimpleGroupTombstone(group_id))
    return write(ctx, ClassicGroup(group_id, state_timestamp_ms=ctx.now_ms), durable=True)


def _accepts(ctx: Context, group: ClassicGroup, member_id: str) -> bool:
    """`group.classic.max.size` (Kafka's acceptJoiningMember)."""
    limit = ctx.config.classic_max_group_size
    member = group.members.get(member_id)
    if group.state == ClassicState.EMPTY:
        return True
    if group.state == ClassicState.PREPARING_REBALANCE:
        return (member is not None and member.awaiting_join) or group.awaiting_join_count() < limit
    return member is not None or len(group.members) < limit


def _new_member(request: JoinGroupRequest, member_id: str, client_id: str, client_host: str) -> ClassicMember:
    return ClassicMember(
        member_id=member_id,
        instance_id=request.group_instance_id,
        client_id=client_id,
        client_host=client_host,
        rebalance_timeout_ms=request.rebalance_timeout_ms,
        session_timeout_ms=request.session_timeout_ms,
        protocol_type=request.protocol_type,
        protocols=tuple((p.name, p.metadata) for p in request.protocols),
        awaiting_join=True,
        is_new=True,
    )


def _join_new(
    ctx: Context, group: ClassicGroup, request: JoinGroupRequest, version: int, client_id: str, host: str
) -> JoinGroupResponse | Deferred:
    instance_id = request.group_instance_id
    new_id = f"{instance_id or client_id}-{ctx.new_member_id()}"
    if instance_id is not None:
        existing = group.static_member_id(instance_id)
        if existing is not None:
            return _replace_static_member(ctx, group, request, version, existing, new_id)
        return _add_member(ctx, group, _new_member(request, new_id, client_id, host))
    if version >= REQUIRE_KNOWN_MEMBER_ID_VERSION:
        write(ctx, dataclasses.replace(group, pending_members=group.pending_members | {new_id}))
        ctx.timers.schedule(heartbeat_timer(group.group_id, new_id), ctx.now_ms + request.session_timeout_ms)
        return join_error(ErrorCode.MEMBER_ID_REQUIRED, new_id)
    return _add_member(ctx, group, _new_member(request, new_id, client_id, host))


def _add_member(ctx: Context, group: ClassicGroup, member: ClassicMember) -> Deferred:
    if group.state == ClassicState.PREPARING_REBALANCE and group.previous_state == ClassicState.EMPTY:
        group = dataclasses.replace(group, new_member_added=True)
    group = write(ctx, group.with_member(member))
    deferred = ctx.replies.wait_join(group.group_id, member.member_id)
    # A new member cannot heartbeat while its JoinGroup waits: its join is timed instead.
    reschedule_heartbeat(ctx, group, member.member_id, CLASSIC_NEW_MEMBER_JOIN_TIMEOUT_MS)
    rebalance_or_complete_join(ctx, group, f"adding new member {member.member_id}")
    return deferred


def _update_member(
    ctx: Context, group: ClassicGroup, member: ClassicMember, request: JoinGroupRequest
) -> Deferred:
    updated = dataclasses.replace(
        member,
        protocols=tuple((p.name, p.metadata) for p in request.protocols),
        rebalance_timeout_ms=request.rebalance_timeout_ms,
        session_timeout_ms=request.session_timeout_ms,
        awaiting_join=True,
    )
    group = write(ctx, group.with_member(updated))
    deferred = ctx.replies.wait_join(group.group_id, member.member_id)
    rebalance_or_complete_join(ctx, group, f"member {member.member_id} rejoining")
    return deferred


def validate_member(group: ClassicGroup, member_id: str, instance_id: str | None) -> int:
    """UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID (another member holds the instance id) or NONE."""
    if instance_id is not None:
        holder = group.static_member_id(instance_id)
        if holder is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if holder != member_id:
            return ErrorCode.FENCED_INSTANCE_ID
    return ErrorCode.NONE if member_id in group.members else ErrorCode.UNKNOWN_MEMBER_ID


def _join_existing(
    ctx: Context, group: ClassicGroup, request: JoinGroupRequest, version: int, client_id: str, host: str
) -> JoinGroupResponse | Deferred:
    member_id = request.member_id
    if member_id in group.pending_members:
        if request.group_instance_id is not None:
            return join_error(ErrorCode.INVALID_REQUEST, member_id)
        return _add_member(ctx, group, _new_member(request, member_id, client_id, host))
    code = validate_member(group, member_id, request.group_instance_id)
    if code != ErrorCode.NONE:
        return join_error(code, member_id)
    member = group.members[member_id]
    protocols = tuple((p.name, p.metadata) for p in request.protocols)
    if group.state == ClassicState.PREPARING_REBALANCE:
        return _update_member(ctx, group, member, request)
    if group.state == ClassicState.COMPLETING_REBALANCE:
        if member.matches(protocols):  # a lost JoinGroup response: the same generation again
            return join_response(group, member_id, with_members=member_id == group.leader)
        return _update_member(ctx, group, member, request)
    if group.state == ClassicState.STABLE:
        if member_id == group.leader or not member.matches(protocols):
            return _update_member(ctx, group, member, request)
        return join_response(group, member_id, with_members=False)
    return join_error(ErrorCode.UNKNOWN_MEMBER_ID, member_id)


def _replace_static_member(
    ctx: Context, group: ClassicGroup, request: JoinGroupRequest, version: int, old_id: str, new_id: str
) -> JoinGroupResponse | Deferred:
    """A static member rejoins with an unknown id: the old id is fenced and replaced."""
    group_id = group.group_id
    fenced_join = JoinGroupResponse(
        error_code=ErrorCode.FENCED_INSTANCE_ID, member_id=old_id, protocol_name=None
    )
    ctx.replies.answer_join(group_id, old_id, fenced_join)
    ctx.replies.answer_sync(group_id, old_id, SyncGroupResponse(error_code=ErrorCode.FENCED_INSTANCE_ID))
    ctx.timers.cancel(heartbeat_timer(group_id, old_id))
    old = group.members[old_id]
    previous_leader = group.leader
    replaced = dataclasses.replace(
        old,
        member_id=new_id,
        protocols=tuple((p.name, p.metadata) for p in request.protocols),
        rebalance_timeout_ms=request.rebalance_timeout_ms,
        session_timeout_ms=request.session_timeout_ms,
        awaiting_join=True,
    )
    members = {
        (new_id if mid == old_id else mid): (replaced if mid == old_id else m)
        for mid, m in group.members.items()
    }
    group = dataclasses.replace(
        group,
        members=members,
        leader=new_id if group.leader == old_id else group.leader,
        pending_sync=frozenset(new_id if m == old_id else m for m in group.pending_sync),
    )
    reschedule_heartbeat(ctx, group, new_id)
    if group.state == ClassicState.STABLE:
        if group.protocol_name == group.select_protocol():
            # Nothing changes for the others: persist the new id and hand back this generation.
            group = group.with_member(dataclasses.replace(replaced, awaiting_join=False))
            write(ctx, group, durable=True)
            if version >= SKIP_ASSIGNMENT_VERSION:
                is_leader = group.leader == new_id
                return join_response(group, new_id, with_members=is_leader, skip=is_leader)
            response = join_response(group, new_id, with_members=False)
            return response.replace(leader=previous_leader or "")
        group = write(ctx, group)
        deferred = ctx.replies.wait_join(group_id, new_id)
        rebalance_or_complete_join(ctx, group, f"static member {new_id} changed the selected protocol")
        return deferred
    group = write(ctx, group)
    deferred = ctx.replies.wait_join(group_id, new_id)
    if group.state == ClassicState.COMPLETING_REBALANCE:
        prepare_rebalance(ctx, group, f"static member {new_id} replaced during the sync phase")
    else:
        maybe_complete_join_phase(ctx, group)
    return deferred
