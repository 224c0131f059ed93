"""SyncGroup, Heartbeat and LeaveGroup on a classic group (Kafka's classicGroupSyncToClassicGroup,
classicGroupHeartbeatToClassicGroup and classicGroupLeaveToClassicGroup)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from ....errors import ErrorCode, KafkaApiError
from ....protocol.messages.classic_group import (
    HeartbeatRequest,
    HeartbeatResponse,
    LeaveGroupMemberResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    MemberIdentity,
    SyncGroupRequest,
    SyncGroupResponse,
)
from ..context import Context
from .join import validate_member
from .model import ClassicGroup, ClassicState
from .rebalance import (
    drop_member,
    maybe_complete_join_phase,
    rebalance_or_complete_join,
    reschedule_heartbeat,
    store_assignment,
    sync_timer,
    write,
)
from .replies import Deferred

#: LeaveGroup v3+ batches members (and answers per member).
BATCHED_LEAVE_VERSION = 3


def sync(ctx: Context, group: ClassicGroup, request: SyncGroupRequest) -> SyncGroupResponse | Deferred:
    """A member asks for its assignment; the leader brings everyone's."""
    if group.is_empty:
        return SyncGroupResponse(error_code=ErrorCode.UNKNOWN_MEMBER_ID)
    member_id = request.member_id
    code = validate_member(group, member_id, request.group_instance_id)
    if code == ErrorCode.NONE and request.generation_id != group.generation:
        code = ErrorCode.ILLEGAL_GENERATION
    if code == ErrorCode.NONE and (
        _inconsistent(request.protocol_type, group.protocol_type)
        or _inconsistent(request.protocol_name, group.protocol_name)
    ):
        code = ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    if code != ErrorCode.NONE:
        return SyncGroupResponse(error_code=int(code))
    if group.state == ClassicState.PREPARING_REBALANCE:
        return SyncGroupResponse(error_code=ErrorCode.REBALANCE_IN_PROGRESS)
    if group.state == ClassicState.COMPLETING_REBALANCE:
        deferred = ctx.replies.wait_sync(group.group_id, member_id)
        group = _synced(ctx, group, member_id)
        if member_id == group.leader:
            assignments = {a.member_id: a.assignment for a in request.assignments}
            store_assignment(ctx, group, assignments)
        return deferred
    _synced(ctx, group, member_id)
    member = group.members[member_id]
    return SyncGroupResponse(
        protocol_type=group.protocol_type, protocol_name=group.protocol_name, assignment=member.assignment
    )


def _inconsistent(requested: str | None, actual: str | None) -> bool:
    return requested is not None and requested != actual


def _synced(ctx: Context, group: ClassicGroup, member_id: str) -> ClassicGroup:
    if member_id not in group.pending_sync:
        return group
    group = write(ctx, dataclasses.replace(group, pending_sync=group.pending_sync - {member_id}))
    if not group.pending_sync:
        ctx.timers.cancel(sync_timer(group.group_id))
    return group


def classic_commit_error(
    group: ClassicGroup, member_id: str, instance_id: str | None, generation: int
) -> int:
    """Whether a classic group takes an offset commit (Kafka's ClassicGroup.validateOffsetCommit):
    admin commits (no generation, no member) only while it is empty; members at its generation,
    not while the assignment is being decided."""
    if generation < 0 and group.state == ClassicState.EMPTY:
        return ErrorCode.NONE
    if generation >= 0 or member_id or instance_id is not None:
        code = validate_member(group, member_id, instance_id)
        if code != ErrorCode.NONE:
            return code
        if generation != group.generation:
            return ErrorCode.ILLEGAL_GENERATION
    elif group.state != ClassicState.EMPTY:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if group.state == ClassicState.COMPLETING_REBALANCE:
        return ErrorCode.REBALANCE_IN_PROGRESS
    return ErrorCode.NONE


def heartbeat(ctx: Context, group: ClassicGroup, request: HeartbeatRequest) -> HeartbeatResponse:
    """A member is alive; during a rebalance it is told to rejoin."""
    code = validate_member(group, request.member_id, request.group_instance_id)
    if code == ErrorCode.NONE and request.generation_id != group.generation:
        code = ErrorCode.ILLEGAL_GENERATION
    if code != ErrorCode.NONE:
        return HeartbeatResponse(error_code=int(code))
    if group.state == ClassicState.EMPTY:
        return HeartbeatResponse(error_code=ErrorCode.UNKNOWN_MEMBER_ID)
    reschedule_heartbeat(ctx, group, request.member_id)
    if group.state == ClassicState.PREPARING_REBALANCE:
        return HeartbeatResponse(error_code=ErrorCode.REBALANCE_IN_PROGRESS)
    return HeartbeatResponse()


def leave(ctx: Context, group: ClassicGroup, request: LeaveGroupRequest, version: int) -> LeaveGroupResponse:
    """Members leave (v3+: several, static ones also by instance id alone); the rebalance starts
    once the whole batch is out."""
    current = group

    def remove(member_id: str, instance_id: str | None) -> bool:
        nonlocal current
        if member_id == "":
            held = None if instance_id is None else current.static_member_id(instance_id)
            if held is None:
                raise KafkaApiError(ErrorCode.UNKNOWN_MEMBER_ID)
            current = drop_member(ctx, current, held)
            return True
        if member_id in current.pending_members:
            current = drop_member(ctx, current, member_id)
            return False
        code = validate_member(current, member_id, instance_id)
        if code != ErrorCode.NONE:
            raise KafkaApiError(ErrorCode.of(code))
        current = drop_member(ctx, current, member_id)
        return True

    response, left = leave_each(request, version, remove)
    if left:
        if current.state in (ClassicState.STABLE, ClassicState.COMPLETING_REBALANCE):
            rebalance_or_complete_join(ctx, current, "members left")
        elif current.state == ClassicState.PREPARING_REBALANCE:
            maybe_complete_join_phase(ctx, current)
    return response


def leave_each(
    request: LeaveGroupRequest, version: int, remove: Callable[[str, str | None], bool]
) -> tuple[LeaveGroupResponse, bool]:
    """Answer a LeaveGroup member by member: `remove(member id, instance id)` removes one,
    returning whether a member left, or raises KafkaApiError for its answer. (The response,
    whether any member left.)"""
    identities = (
        request.members if version >= BATCHED_LEAVE_VERSION else [MemberIdentity(member_id=request.member_id)]
    )
    answers: list[LeaveGroupMemberResponse] = []
    left = False
    for identity in identities:
        member_id, instance_id = identity.member_id, identity.group_instance_id
        code: int = ErrorCode.NONE
        try:
            left = remove(member_id, instance_id) or left
        except KafkaApiError as exc:
            code = exc.code
        answers.append(
            LeaveGroupMemberResponse(member_id=member_id, group_instance_id=instance_id, error_code=int(code))
        )
    if version < BATCHED_LEAVE_VERSION:
        return LeaveGroupResponse(error_code=answers[0].error_code), left
    return LeaveGroupResponse(members=answers), left


__all__ = ["classic_commit_error", "heartbeat", "leave", "leave_each", "sync"]
