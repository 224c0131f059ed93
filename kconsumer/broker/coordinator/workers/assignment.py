"""Client-side assignment of a worker group: which worker computes (§3 of docs/
worker-protocol.md), ConnectGroupPrepareAssignment and ConnectGroupInstallAssignment.

The coordinator never assigns units itself: it does not know the connectors and tasks, the
workers do. When the group epoch is ahead of the target, it chooses one worker and answers its
next heartbeat COMPUTE_ASSIGNMENT; that worker fetches the group with PrepareAssignment,
computes with its assignor and installs the result.
"""

from __future__ import annotations

from dataclasses import replace

from ....assignment.announcements import computing_members, ranked_candidates
from ....assignment.work_units import NO_UNITS, WorkUnits
from ....errors import ErrorCode, KafkaApiError
from ....protocol.messages.worker_group import (
    ConnectGroupInstallAssignmentRequest,
    ConnectGroupPrepareAssignmentRequest,
    ConnectGroupPrepareAssignmentResponse,
    PreparedWorker,
)
from ..context import Context
from .membership import FENCED_EPOCH, save
from .model import TargetEntry, WorkerGroup
from .runs import WorkerRun
from .timer_keys import assignment_timer


def group_assignor(group: WorkerGroup) -> str | None:
    """The assignor every active worker supports with overlapping versions, best ranked first."""
    workers = sorted(group.computing_workers(), key=lambda w: w.member_id)
    ranked = ranked_candidates([w.assignors for w in workers])
    return ranked[0] if ranked else None


def selectable(group: WorkerGroup, name: str) -> list[str]:
    """The workers that may compute with assignor `name`, best first: those whose version range
    covers every worker's range (the seed's rule: of A[1-5], B[3-4], C[2-4] only A), else those
    that read every worker's metadata version, else every active worker (sorted by id)."""
    workers = {w.member_id: w for w in group.computing_workers()}
    announced = {member_id: worker.assignors for member_id, worker in workers.items()}
    ranges = [a.versions for w in workers.values() if (a := w.assignor(name)) is not None]
    low, high = min(r.minimum for r in ranges), max(r.maximum for r in ranges)
    covering_all = [
        member_id
        for member_id, worker in sorted(workers.items())
        if (a := worker.assignor(name)) is not None and a.covers(low) and a.covers(high)
    ]
    return covering_all or computing_members(announced, name) or sorted(workers)


def chosen_run(ctx: Context, group: WorkerGroup) -> WorkerRun | None:
    """The computation the group needs, choosing a worker for it when nobody computes (None:
    the target is up to date, or no assignor is common to every worker)."""
    group_id = group.group_id
    run = ctx.worker_runs.get(group_id)
    if group.group_epoch <= group.assignment_epoch:
        if run is not None:
            del ctx.worker_runs[group_id]
            ctx.timers.cancel(assignment_timer(group_id))
        return None
    alive = run is not None and run.chosen in group.workers and group.workers[run.chosen].active
    if run is not None and alive and run.prepared:
        return run  # computing: it installs or its deadline passes
    name = group_assignor(group)
    if name is None:
        return None
    candidates = selectable(group, name)
    if run is not None and alive and run.assignor == name and run.chosen in candidates:
        return run  # still a right choice (workers that joined since may change that)
    tried = run.tried if run is not None else set()
    chosen = next((m for m in candidates if m not in tried), candidates[0])
    timeout = max(group.workers[chosen].rebalance_timeout_ms, 0)
    run = WorkerRun(name, chosen, group.group_epoch, ctx.now_ms + timeout, tried | {chosen})
    ctx.worker_runs[group_id] = run
    ctx.timers.schedule(assignment_timer(group_id), run.deadline_ms)
    return run


def on_deadline(ctx: Context, group: WorkerGroup) -> None:
    """The chosen worker did not install in time: another one is chosen (the same when alone)."""
    run = ctx.worker_runs.get(group.group_id)
    if run is not None:
        run.chosen = ""
        chosen_run(ctx, group)


def _chosen_worker(
    ctx: Context, group_id: str, member_id: str, member_epoch: int, installing: bool = False
) -> WorkerGroup:
    """The checks both APIs share (§5): the group, the worker, its epoch (for an install, the
    epoch it prepared at will do too), that it was chosen."""
    if not group_id or not member_id or member_epoch < 0:
        raise KafkaApiError(
            ErrorCode.INVALID_REQUEST, "GroupId and MemberId must be non-empty and MemberEpoch >= 0."
        )
    group = ctx.state.worker_groups.get(group_id)
    if group is None:
        raise KafkaApiError(ErrorCode.GROUP_ID_NOT_FOUND, f"Worker group {group_id} does not exist.")
    worker = group.workers.get(member_id)
    if worker is None:
        raise KafkaApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"Worker {member_id} is not in the group.")
    run = ctx.worker_runs.get(group_id)
    prepared_at = run.prepared_epoch if run is not None and run.chosen == member_id and installing else None
    if member_epoch not in (worker.member_epoch, prepared_at):
        raise KafkaApiError(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"The member epoch {member_epoch} is not the worker's epoch {worker.member_epoch}.",
        )
    if run is None or run.chosen != member_id:
        raise KafkaApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"Worker {member_id} was not chosen to assign.")
    return group


def prepare(
    ctx: Context, request: ConnectGroupPrepareAssignmentRequest
) -> ConnectGroupPrepareAssignmentResponse:
    """The group as the assignor needs it: every worker, its metadata, what it runs and its
    current target, and the state the previous computation kept."""
    group = _chosen_worker(ctx, request.group_id, request.member_id, request.member_epoch)
    run = ctx.worker_runs[group.group_id]
    run.prepared, run.prepared_epoch = True, request.member_epoch
    run.instances = {w.member_id: w.instance_id for w in group.workers.values() if w.instance_id}
    members = []
    for worker in sorted(group.workers.values(), key=lambda w: w.member_id):
        if worker.member_epoch == FENCED_EPOCH:
            continue  # out of the group: its units are reserved only until its session ends
        assignor = worker.assignor(run.assignor)
        members.append(
            PreparedWorker(
                member_id=worker.member_id,
                member_epoch=worker.member_epoch,
                instance_id=worker.instance_id,
                reason=assignor.reason if assignor else 0,
                metadata_version=assignor.metadata_version if assignor else 0,
                metadata_bytes=assignor.metadata_bytes if assignor else b"",
                owned=worker.holds.to_wire(),
                target=group.target_of(worker.member_id).units.to_wire(),
            )
        )
    return ConnectGroupPrepareAssignmentResponse(
        group_epoch=group.group_epoch,
        assignor_name=run.assignor,
        members=members,
        assignor_state_version=group.assignor_state_version,
        assignor_state=group.assignor_state,
    )


def install(ctx: Context, request: ConnectGroupInstallAssignmentRequest) -> None:
    """Validate and store the computed target (for the group epoch the worker prepared)."""
    group = _chosen_worker(ctx, request.group_id, request.member_id, request.member_epoch, installing=True)
    if not group.assignment_epoch <= request.group_epoch <= group.group_epoch:
        raise KafkaApiError(
            ErrorCode.INVALID_REQUEST,
            f"GroupEpoch {request.group_epoch} is not between the target's epoch "
            f"{group.assignment_epoch} and the group epoch {group.group_epoch}.",
        )
    run = ctx.worker_runs[group.group_id]
    target: dict[str, TargetEntry] = {}
    given = NO_UNITS
    for member in request.members:
        units = WorkUnits.from_wire(member.units)
        if member.member_id in target:
            raise KafkaApiError(ErrorCode.INVALID_REQUEST, f"Worker {member.member_id} is assigned twice.")
        if problem := units.problem():
            raise KafkaApiError(ErrorCode.INVALID_REQUEST, f"Worker {member.member_id}: {problem}.")
        if twice := units & given:
            raise KafkaApiError(ErrorCode.INVALID_REQUEST, f"Units {twice} are assigned to two workers.")
        given = given | units
        owner = _current_owner(group, run, member.member_id)
        if owner is not None:  # a worker gone since the prepare is left out
            target[owner] = TargetEntry(units, member.metadata_version, member.metadata_bytes)
    ctx.worker_runs.pop(group.group_id)
    ctx.timers.cancel(assignment_timer(group.group_id))
    save(
        ctx,
        replace(
            group,
            assignment_epoch=request.group_epoch,
            target=target,
            assignor_name=run.assignor,
            assignor_error=request.error,
            assignor_state_version=request.assignor_state_version,
            assignor_state=request.assignor_state,
        ),
    )


def _current_owner(group: WorkerGroup, run: WorkerRun, member_id: str) -> str | None:
    """Who gets the part the install gives `member_id`: itself, or the static worker that
    replaced it since the prepare (same instance id); None when it is gone for good."""
    worker = group.workers.get(member_id)
    if worker is not None:
        return None if worker.member_epoch == FENCED_EPOCH else member_id
    instance = run.instances.get(member_id)
    replacement = None if instance is None else group.by_instance(instance)
    return None if replacement is None else replacement.member_id
