"""ConnectGroupHeartbeat (docs/worker-protocol.md §2): a worker joins, stays, reconciles and
leaves; the coordinator fences it when its epoch is wrong and asks it to compute when chosen."""

from __future__ import annotations

from dataclasses import replace

from ....assignment.announcements import AnnouncedAssignor, ranked_candidates
from ....assignment.versions import VersionRange
from ....assignment.work_units import NO_UNITS, WorkUnits
from ....errors import ErrorCode, KafkaApiError
from ....protocol.messages.consumer_group import (
    JOIN_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
)
from ....protocol.messages.worker_group import (
    ConnectGroupHeartbeatRequest,
    ConnectGroupHeartbeatResponse,
    WorkerAssignment,
)
from ..context import Context
from ..records import ClassicGroupTombstone
from .assignment import chosen_run
from .membership import FENCED_EPOCH, bump, fence_worker, remove_worker, save
from .migration import upgrade
from .model import CONNECT_GROUP_TYPE, TargetEntry, Worker, WorkerGroup, WorkerState
from .reconcile import reconcile
from .timer_keys import revocation_timer, session_timer


def handle(
    ctx: Context, request: ConnectGroupHeartbeatRequest, client_id: str, client_host: str
) -> ConnectGroupHeartbeatResponse:
    """Process one heartbeat (raises KafkaApiError for an error that changes nothing)."""
    validate(request)
    group = _group(ctx, request)
    if request.member_epoch < 0:
        return _leave(ctx, group, request)
    if request.member_epoch == JOIN_GROUP_MEMBER_EPOCH:
        group = _join(ctx, group, request, client_id, client_host)
    else:
        known = _known(ctx, group, request)
        if isinstance(known, ConnectGroupHeartbeatResponse):
            return known
    worker = group.workers[request.member_id]
    group, worker = _update(group, worker, request)
    owned = None if request.owned is None else WorkUnits.from_wire(request.owned)
    reconciled = reconcile(group, worker, owned)
    group = group.with_worker(reconciled)
    if group != ctx.state.worker_groups.get(group.group_id):
        save(ctx, group)
    _watch(ctx, group, worker, reconciled)
    run = chosen_run(ctx, group)
    compute = run is not None and run.chosen == reconciled.member_id and not run.prepared
    send_assignment = (
        request.owned is not None or reconciled != worker or request.member_epoch != reconciled.member_epoch
    )
    return ConnectGroupHeartbeatResponse(
        error_code=int(ErrorCode.COMPUTE_ASSIGNMENT) if compute else 0,
        error_message="Compute the group's assignment." if compute else None,
        member_epoch=reconciled.member_epoch,
        heartbeat_interval_ms=ctx.config.heartbeat_interval_ms,
        assignment=_assignment(group, reconciled) if send_assignment else None,
    )


def validate(request: ConnectGroupHeartbeatRequest) -> None:
    """INVALID_REQUEST and UNSUPPORTED_ASSIGNOR checks, before anything changes (§2)."""

    def invalid(why: str) -> KafkaApiError:
        return KafkaApiError(ErrorCode.INVALID_REQUEST, why)

    if not request.group_id:
        raise invalid("GroupId can't be empty.")
    if not request.member_id:
        raise invalid("MemberId can't be empty.")
    if request.member_epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise invalid(f"MemberEpoch {request.member_epoch} is invalid.")
    if request.instance_id is not None and not request.instance_id:
        raise invalid("InstanceId can't be empty.")
    if request.server_assignor is not None and request.client_assignors is not None:
        raise invalid("ServerAssignor and ClientAssignors can't both be set.")
    if request.server_assignor is not None:
        raise KafkaApiError(
            ErrorCode.UNSUPPORTED_ASSIGNOR, "Worker groups are assigned by a worker: use ClientAssignors."
        )
    if request.member_epoch == JOIN_GROUP_MEMBER_EPOCH:
        if request.rebalance_timeout_ms <= 0:
            raise invalid("RebalanceTimeoutMs must be provided in first request.")
        if not request.client_assignors:
            raise invalid("ClientAssignors must be provided in first request.")
        if request.owned is not None and WorkUnits.from_wire(request.owned):
            raise invalid("A joining worker runs nothing: Owned must be empty.")
    names = [a.name for a in request.client_assignors or ()]
    if any(not name for name in names) or len(set(names)) != len(names):
        raise invalid(f"ClientAssignors names must be non-empty and unique: {names}.")
    for assignor in request.client_assignors or ():
        versions = VersionRange(assignor.minimum_version, assignor.maximum_version)
        if versions.problem() is not None or not versions.covers(assignor.metadata_version):
            raise invalid(
                f"ClientAssignor {assignor.name}: versions must satisfy -1 <= MinimumVersion <= "
                "MetadataVersion <= MaximumVersion and MaximumVersion >= 0."
            )
    if request.owned is not None and (problem := WorkUnits.from_wire(request.owned).problem()):
        raise invalid(f"Owned: {problem}.")


def _group(ctx: Context, request: ConnectGroupHeartbeatRequest) -> WorkerGroup:
    group_id = request.group_id
    group = ctx.state.worker_groups.get(group_id)
    if group is not None:
        return group
    state = ctx.state
    if request.member_epoch != JOIN_GROUP_MEMBER_EPOCH:
        raise KafkaApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"Worker group {group_id} does not exist.")
    classic = state.classic_groups.get(group_id)
    if classic is not None and classic.members:
        return upgrade(ctx, classic)  # the first new-protocol worker of a classic connect group
    if classic is not None and classic.protocol_type in (None, "", CONNECT_GROUP_TYPE):
        ctx.writer.write(ClassicGroupTombstone(group_id))  # an empty one gives way, as in Kafka
    elif group_id in state.groups or classic is not None or group_id in state.simple_groups:
        raise KafkaApiError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a worker group.")
    # As a consumer group (Kafka 4.3): a new group starts at epoch 1 with an empty target at 1,
    # so a worker is never at epoch 0 (the join epoch) once it is in.
    return WorkerGroup(group_id, group_epoch=1, assignment_epoch=1)


def _leave(
    ctx: Context, group: WorkerGroup, request: ConnectGroupHeartbeatRequest
) -> ConnectGroupHeartbeatResponse:
    worker = group.workers.get(request.member_id)
    if worker is None:
        raise KafkaApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"Worker {request.member_id} is not in the group.")
    if request.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH and worker.instance_id is not None:
        # It may come back within its session timeout: its units stay its own meanwhile.
        left = replace(
            worker, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH, previous_member_epoch=worker.member_epoch
        )
        save(ctx, group.with_worker(left))
        ctx.timers.cancel(revocation_timer(group.group_id, worker.member_id))
    else:
        remove_worker(ctx, group, worker.member_id)
    return ConnectGroupHeartbeatResponse(member_epoch=request.member_epoch, heartbeat_interval_ms=0)


def _check_assignors(group: WorkerGroup, member_id: str, assignors: tuple[AnnouncedAssignor, ...]) -> None:
    others = [w.assignors for w in group.computing_workers() if w.member_id != member_id]
    if not ranked_candidates([*others, assignors]):
        raise KafkaApiError(
            ErrorCode.UNSUPPORTED_ASSIGNOR,
            "No client assignor of this worker is shared, with overlapping versions, "
            "by every worker of the group.",
        )


def _announced(request: ConnectGroupHeartbeatRequest) -> tuple[AnnouncedAssignor, ...]:
    return tuple(
        AnnouncedAssignor(
            a.name, a.minimum_version, a.maximum_version, a.metadata_version, a.metadata_bytes, a.reason
        )
        for a in request.client_assignors or ()
    )


def _join(
    ctx: Context, group: WorkerGroup, request: ConnectGroupHeartbeatRequest, client_id: str, client_host: str
) -> WorkerGroup:
    """The group with the worker in it, at epoch 0 (a new worker bumps the group epoch)."""
    member_id, instance_id = request.member_id, request.instance_id
    assignors = _announced(request)
    _check_assignors(group, member_id, assignors)
    fresh = Worker(member_id, instance_id, request.rebalance_timeout_ms, assignors, client_id, client_host)
    static = None if instance_id is None else group.by_instance(instance_id)
    if static is not None and static.member_id != member_id:
        if static.active:
            raise KafkaApiError(
                ErrorCode.UNRELEASED_INSTANCE_ID, f"Instance {instance_id} is held by an active worker."
            )
        # The static worker is back (a new process, a new member id): it takes over its units.
        replaced = replace(
            fresh,
            member_epoch=static.previous_member_epoch,
            previous_member_epoch=static.previous_member_epoch,
            state=static.state,
            assigned=static.assigned,
            pending_revocation=static.pending_revocation,
        )
        target = {k: v for k, v in group.target.items() if k != static.member_id}
        if static.member_id in group.target:
            target[member_id] = group.target[static.member_id]
        ctx.timers.cancel(session_timer(group.group_id, static.member_id))
        group = replace(group.without_worker(static.member_id), target=target)
        return group.with_worker(replaced)
    if member_id in group.workers:
        # Its join answer was lost, or it rejoins after abandoning its units (it joins with epoch
        # 0 only once they are stopped): it runs nothing. A fenced worker comes back into the
        # target, at a new epoch.
        worker = group.workers[member_id]
        back = replace(
            worker, member_epoch=0, state=WorkerState.STABLE, assigned=NO_UNITS, pending_revocation=NO_UNITS
        )
        group = group.with_worker(back)
        return bump(group) if worker.member_epoch == FENCED_EPOCH else group
    if sum(1 for _ in group.active_workers()) >= ctx.config.max_group_size:
        raise KafkaApiError(ErrorCode.GROUP_MAX_SIZE_REACHED, f"Worker group {group.group_id} is full.")
    return bump(group.with_worker(fresh))


def _known(
    ctx: Context, group: WorkerGroup, request: ConnectGroupHeartbeatRequest
) -> Worker | ConnectGroupHeartbeatResponse:
    """The worker of a heartbeat at epoch > 0, or the answer fencing it (it is removed: §2's
    re-acceptance rule excepted, where its answer was lost but what it runs is still its own)."""
    worker = group.workers.get(request.member_id)
    if worker is None or not worker.active:
        raise KafkaApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"Worker {request.member_id} is not in the group.")
    if request.member_epoch == worker.member_epoch:
        return worker
    owned = None if request.owned is None else WorkUnits.from_wire(request.owned)
    if request.member_epoch < worker.member_epoch and owned is not None and owned.issubset(worker.holds):
        return worker  # what it runs is what the coordinator counts it as holding
    fence_worker(ctx, group, worker)
    return ConnectGroupHeartbeatResponse(
        error_code=int(ErrorCode.FENCED_MEMBER_EPOCH),
        error_message=(
            f"The member epoch {request.member_epoch} is not the worker's epoch {worker.member_epoch}."
        ),
        member_epoch=-1,
    )


def _update(
    group: WorkerGroup, worker: Worker, request: ConnectGroupHeartbeatRequest
) -> tuple[WorkerGroup, Worker]:
    """What the heartbeat changes about the worker; new assignor metadata, or any non-zero
    reason, asks for a new assignment (the group epoch is bumped)."""
    updated = worker
    if request.rebalance_timeout_ms > 0:
        updated = replace(updated, rebalance_timeout_ms=request.rebalance_timeout_ms)
    if request.client_assignors is not None:
        assignors = _announced(request)
        if assignors != worker.assignors:
            _check_assignors(group, worker.member_id, assignors)
        updated = replace(updated, assignors=assignors)
        if _without_reasons(assignors) != _without_reasons(worker.assignors) or any(
            a.reason for a in assignors
        ):
            group = bump(group)  # a reason back to 0 alone asks for nothing
    return group.with_worker(updated), updated


def _without_reasons(assignors: tuple[AnnouncedAssignor, ...]) -> tuple[AnnouncedAssignor, ...]:
    return tuple(replace(a, reason=0) for a in assignors)


def _watch(ctx: Context, group: WorkerGroup, before: Worker, after: Worker) -> None:
    group_id, member_id = group.group_id, after.member_id
    ctx.timers.schedule(session_timer(group_id, member_id), ctx.now_ms + ctx.config.session_timeout_ms)
    if after.state != WorkerState.UNREVOKED:
        ctx.timers.cancel(revocation_timer(group_id, member_id))
    elif (
        before.state != WorkerState.UNREVOKED or ctx.timers.get(revocation_timer(group_id, member_id)) is None
    ):
        deadline = ctx.now_ms + max(after.rebalance_timeout_ms, 0)
        ctx.timers.schedule(revocation_timer(group_id, member_id), deadline, after.member_epoch)


def _assignment(group: WorkerGroup, worker: Worker) -> WorkerAssignment:
    entry = (
        group.target_of(worker.member_id) if worker.member_epoch == group.assignment_epoch else TargetEntry()
    )
    return WorkerAssignment(
        error=group.assignor_error,
        units=worker.assigned.to_wire(),
        metadata_version=entry.metadata_version,
        metadata_bytes=entry.metadata_bytes,
    )
