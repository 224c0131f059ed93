"""The worker-group APIs as the coordinator serves them, their timers, failover, and the
worker groups' entries in ListGroups and DescribeGroups."""

from __future__ import annotations

from collections.abc import Iterable

from ....errors import KafkaApiError
from ....protocol.api import ApiKey
from ....protocol.messages.classic_group import DescribedGroup, DescribedGroupMember
from ....protocol.messages.list_groups import ListedGroup
from ....protocol.messages.worker_group import (
    ConnectGroupHeartbeatRequest,
    ConnectGroupHeartbeatResponse,
    ConnectGroupInstallAssignmentRequest,
    ConnectGroupInstallAssignmentResponse,
    ConnectGroupPrepareAssignmentRequest,
    ConnectGroupPrepareAssignmentResponse,
    encode_units,
)
from ....protocol.schema import Message
from ..context import Context
from . import assignment, heartbeat
from .membership import remove_worker
from .model import CONNECT_GROUP_TYPE, WorkerGroup, WorkerState
from .timer_keys import revocation_timer, session_timer

#: The worker-group APIs (advertised in ApiVersions by the reference coordinator only).
WORKER_APIS = frozenset(
    {
        ApiKey.CONNECT_GROUP_HEARTBEAT,
        ApiKey.CONNECT_GROUP_PREPARE_ASSIGNMENT,
        ApiKey.CONNECT_GROUP_INSTALL_ASSIGNMENT,
    }
)
#: Timer kinds of worker groups.
TIMER_KINDS = frozenset({"worker-session", "worker-rebalance", "worker-assignment"})


def handle(ctx: Context, request: Message, client_id: str, client_host: str) -> tuple[Message, bool]:
    """(response, failed): a failed request's records must be rolled back by the caller."""
    try:
        if isinstance(request, ConnectGroupHeartbeatRequest):
            return heartbeat.handle(ctx, request, client_id, client_host), False
        if isinstance(request, ConnectGroupPrepareAssignmentRequest):
            return assignment.prepare(ctx, request), False
        if isinstance(request, ConnectGroupInstallAssignmentRequest):
            assignment.install(ctx, request)
            return ConnectGroupInstallAssignmentResponse(), False
    except KafkaApiError as exc:
        error = {"error_code": int(exc.code), "error_message": exc.message}
        if isinstance(request, ConnectGroupHeartbeatRequest):
            return ConnectGroupHeartbeatResponse(**error), True
        if isinstance(request, ConnectGroupPrepareAssignmentRequest):
            return ConnectGroupPrepareAssignmentResponse(**error), True
        return ConnectGroupInstallAssignmentResponse(**error), True
    raise ValueError(f"not a worker-group request: {request!r}")


def on_timer(ctx: Context, key: tuple[str, ...], payload: object) -> None:
    """A worker's session or revocation deadline passed (it is removed), or the chosen worker's
    assignment deadline (another is chosen)."""
    kind, group_id = key[0], key[1]
    group = ctx.state.worker_groups.get(group_id)
    if group is None:
        return
    if kind == "worker-assignment":
        assignment.on_deadline(ctx, group)
        return
    worker = group.workers.get(key[2])
    if worker is None:
        return
    if kind == "worker-session" or (
        kind == "worker-rebalance"
        and worker.state == WorkerState.UNREVOKED
        and worker.member_epoch == payload
    ):
        remove_worker(ctx, group, worker.member_id)


def on_loaded(ctx: Context) -> None:
    """After a failover: every worker's session restarts now, revocations get their deadline
    again; computations are asked again by the next heartbeat."""
    for group in ctx.state.worker_groups.values():
        for worker in group.workers.values():
            timeout = worker.classic.session_timeout_ms if worker.classic else ctx.config.session_timeout_ms
            ctx.timers.schedule(session_timer(group.group_id, worker.member_id), ctx.now_ms + timeout)
            if worker.state == WorkerState.UNREVOKED:
                ctx.timers.schedule(
                    revocation_timer(group.group_id, worker.member_id),
                    ctx.now_ms + max(worker.rebalance_timeout_ms, 0),
                    worker.member_epoch,
                )


def listed(ctx: Context, states: set[str], types: set[str]) -> Iterable[ListedGroup]:
    """ListGroups entries of the worker groups (type and protocol type ``connect``)."""
    if types and CONNECT_GROUP_TYPE not in types:
        return
    for group_id, group in sorted(ctx.state.worker_groups.items()):
        if not states or group.state_name.lower() in states:
            yield ListedGroup(
                group_id=group_id,
                protocol_type=CONNECT_GROUP_TYPE,
                group_state=group.state_name,
                group_type=CONNECT_GROUP_TYPE,
            )


def described(group: WorkerGroup) -> DescribedGroup:
    """DescribeGroups' entry: protocol ``connect``, the assignor as protocol, and each worker's
    units (assigned or still being revoked) as its assignment, a ConnectorsAndTasks struct
    encoded as in ConnectGroupHeartbeat v0 (docs/worker-protocol.md §8)."""
    return DescribedGroup(
        group_id=group.group_id,
        group_state=group.state_name,
        protocol_type=CONNECT_GROUP_TYPE,
        protocol_data=group.assignor_name,
        members=[
            DescribedGroupMember(
                member_id=worker.member_id,
                group_instance_id=worker.instance_id,
                client_id=worker.client_id,
                client_host=worker.client_host,
                member_assignment=encode_units(worker.holds.to_wire()),
            )
            for _, worker in sorted(group.workers.items())
        ],
    )
