"""The classic group APIs' entry points: which group a request goes to, its timers, and the
state a coordinator taking over starts from."""

from __future__ import annotations

from typing import Any

from ....errors import ErrorCode
from ....protocol.api import ApiKey
from ....protocol.messages.classic_group import (
    DescribeGroupsRequest,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    LeaveGroupRequest,
    LeaveGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from ....protocol.schema import Message
from ..context import Context
from ..model import ConsumerGroup
from ..workers import classic_workers
from ..workers.migration import unsettled_downgrade
from ..workers.model import WorkerGroup
from . import in_consumer_group, join, membership, rebalance
from .describe import describe_groups
from .model import ClassicGroup
from .replies import Deferred

CLASSIC_APIS = frozenset(
    {ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT, ApiKey.LEAVE_GROUP, ApiKey.DESCRIBE_GROUPS}
)


def handle(
    ctx: Context, request: Message, version: int, client_id: str, client_host: str
) -> Message | Deferred:
    """Answer one classic API request (or a ticket for a later answer)."""
    if isinstance(request, DescribeGroupsRequest):
        return describe_groups(ctx, request, version)
    group_id = vars(request)["group_id"]
    consumer_group = ctx.state.group(group_id)
    if isinstance(request, JoinGroupRequest):
        request, refusal = join.checked(ctx, request, version)
        if refusal is not None:
            return refusal
        worker_group = ctx.state.worker_groups.get(group_id)
        if worker_group is not None:
            return classic_workers.join(ctx, worker_group, request, version, client_id, client_host)
        if consumer_group is not None and consumer_group.members:
            return in_consumer_group.join(ctx, consumer_group, request, version, client_id, client_host)
        return join.join(ctx, request, version, client_id, client_host)
    if group_id in ctx.state.worker_groups:
        return _to_worker_group(ctx, ctx.state.worker_groups[group_id], request, version)
    group = ctx.state.classic_groups.get(group_id)
    if group is None and consumer_group is not None:
        return _to_consumer_group(ctx, consumer_group, request, version)
    if isinstance(request, SyncGroupRequest):
        if group is None:
            return SyncGroupResponse(error_code=ErrorCode.UNKNOWN_MEMBER_ID)
        return membership.sync(ctx, group, request)
    if isinstance(request, HeartbeatRequest):
        if group is None:
            return HeartbeatResponse(error_code=ErrorCode.UNKNOWN_MEMBER_ID)
        return membership.heartbeat(ctx, group, request)
    if isinstance(request, LeaveGroupRequest):
        if group is None:
            return LeaveGroupResponse(error_code=ErrorCode.UNKNOWN_MEMBER_ID)
        return membership.leave(ctx, group, request, version)
    raise ValueError(f"not a classic group API: {type(request).__name__}")


def _to_consumer_group(ctx: Context, group: ConsumerGroup, request: Message, version: int) -> Message:
    if isinstance(request, SyncGroupRequest):
        return in_consumer_group.sync(ctx, group, request)
    if isinstance(request, HeartbeatRequest):
        return in_consumer_group.heartbeat(ctx, group, request)
    if isinstance(request, LeaveGroupRequest):
        return in_consumer_group.leave(ctx, group, request, version)
    raise ValueError(f"not a classic group API: {type(request).__name__}")


def _to_worker_group(ctx: Context, group: WorkerGroup, request: Message, version: int) -> Message:
    if isinstance(request, SyncGroupRequest):
        return classic_workers.sync(ctx, group, request)
    if isinstance(request, HeartbeatRequest):
        return classic_workers.heartbeat(ctx, group, request)
    if isinstance(request, LeaveGroupRequest):
        return classic_workers.leave(ctx, group, request, version)
    raise ValueError(f"not a classic group API: {type(request).__name__}")


def on_timer(ctx: Context, group: ClassicGroup, key: tuple[Any, ...], payload: Any) -> None:
    """A classic timer fired (a member's session, the join phase, the sync phase)."""
    kind = key[0]
    if kind == "classic-heartbeat":
        rebalance.on_heartbeat_expired(ctx, group, key[2])
    elif kind == "classic-join":
        rebalance.on_join_timer(ctx, group, payload)
    elif kind == "classic-sync":
        rebalance.on_sync_expired(ctx, group, payload)


def on_loaded(ctx: Context) -> None:
    """After a coordinator replayed another's log: each classic group as Kafka loads it (Stable
    with its members, or Empty), every member's session timer started; a connect group a
    downgrade left unsettled rebalances (`migration.unsettled_downgrade`)."""
    for group in list(ctx.state.classic_groups.values()):
        loaded = rebalance.write(ctx, group.loaded())
        for member_id in loaded.members:
            rebalance.reschedule_heartbeat(ctx, loaded, member_id)
        if unsettled_downgrade(loaded):
            rebalance.prepare_rebalance(ctx, loaded, "a downgrade's rebalance was lost in a failover")
