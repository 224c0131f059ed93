"""Classic workers inside a worker group (docs/worker-protocol.md §9): the JoinGroup, SyncGroup,
Heartbeat and LeaveGroup of workers speaking Connect's incremental cooperative protocol while
the group runs on the new one (between an upgrade and the downgrade, see `migration`).

A classic worker is a worker like any other, reconciled by the coordinator towards the target a
new-protocol worker computed: its JoinGroup is its heartbeat with the units it runs (its
allocation) and is answered at once, its member epoch as the generation and nobody as leader;
its SyncGroup gives it, in Connect's format, every unit it may run (what it keeps and what is
new: a Connect worker adds them to what it runs) and those it must stop; its Heartbeat answers
REBALANCE_IN_PROGRESS whenever a rejoin would move it forward (a new target, a revocation to
confirm, units freed for it). A static classic worker's LeaveGroup keeps its place and units for
its next process until its session ends, as the new protocol's static leave does.
"""

from __future__ import annotations

from dataclasses import replace

from ....assignment.connect_protocol import (
    CONNECT_PROTOCOL_TYPE,
    PROTOCOL_VERSIONS,
    ConnectAssignment,
    decode_worker_state,
)
from ....assignment.work_units import WorkUnits
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
from ....protocol.messages.consumer_group import LEAVE_GROUP_STATIC_MEMBER_EPOCH
from ..classic.join import REQUIRE_KNOWN_MEMBER_ID_VERSION, join_error
from ..classic.membership import leave_each
from ..context import Context
from ..model import ClassicMemberMetadata
from .membership import bump, remove_worker, save
from .migration import announced_offset, assignment_bytes, runs_of
from .model import Worker, WorkerGroup, WorkerState
from .reconcile import reconcile
from .timer_keys import revocation_timer, session_timer

#: The protocols a classic worker may use inside a worker group: the incremental ones (an eager
#: worker stops everything at each rebalance, which the coordinator's hand-over cannot follow).
INCREMENTAL = tuple(name for name, version in PROTOCOL_VERSIONS.items() if version >= 1)


def join(
    ctx: Context,
    group: WorkerGroup,
    request: JoinGroupRequest,
    version: int,
    client_id: str,
    client_host: str,
) -> JoinGroupResponse:
    """A classic worker joins (or rejoins) the worker group."""
    member_id = request.member_id or ctx.new_member_id()
    instance_id = request.group_instance_id
    protocols = _incremental_first(request)
    if request.protocol_type != CONNECT_PROTOCOL_TYPE or protocols is None:
        return join_error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id)
    try:
        announced = decode_worker_state(protocols[0][1])
    except ProtocolError:
        return join_error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id)
    runs = announced.runs
    if runs.problem():
        return join_error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id)
    worker = group.workers.get(member_id)
    static = None if instance_id is None else group.by_instance(instance_id)
    if not request.member_id and static is None:
        if version >= REQUIRE_KNOWN_MEMBER_ID_VERSION and instance_id is None:
            ctx.replies.issue(group.group_id, member_id)
            return join_error(ErrorCode.MEMBER_ID_REQUIRED, member_id)
    elif request.member_id and worker is None and static is None:
        if not ctx.replies.claim(group.group_id, member_id):
            # An id the group no longer knows (its units were handed over): it joins afresh.
            return join_error(ErrorCode.UNKNOWN_MEMBER_ID, member_id)
    elif static is not None and request.member_id and static.member_id != member_id:
        return join_error(ErrorCode.FENCED_INSTANCE_ID, member_id)
    if static is not None and static.member_id != member_id and static.active:
        # Another process holds the instance and may still run its units: as the new protocol
        # answers, it must leave (or its session end) first. Stricter than a classic group,
        # where the newcomer replaces it at once.
        return join_error(ErrorCode.UNRELEASED_INSTANCE_ID, member_id)
    classic = ClassicMemberMetadata(request.session_timeout_ms, protocols)
    if worker is not None and (not worker.active or not worker.uses_classic):
        return join_error(ErrorCode.UNKNOWN_MEMBER_ID, member_id)
    if (
        worker is None
        and static is None
        and sum(1 for _ in group.active_workers()) >= ctx.config.max_group_size
    ):
        return join_error(ErrorCode.GROUP_MAX_SIZE_REACHED, member_id)
    # Every check passed: from here on the group changes.
    if worker is None and static is not None:
        # The static worker is back under a new member id (a classic one, or a new-protocol one
        # that left for a while): it takes over its place and units.
        worker = replace(
            static, member_id=member_id, assignors=(), client_id=client_id, client_host=client_host
        )
        if not worker.active:
            worker = replace(worker, member_epoch=worker.previous_member_epoch)
        target = {(member_id if k == static.member_id else k): v for k, v in group.target.items()}
        ctx.timers.cancel(session_timer(group.group_id, static.member_id))
        ctx.timers.cancel(revocation_timer(group.group_id, static.member_id))
        group = replace(group.without_worker(static.member_id), target=target)
    elif worker is None:
        worker = Worker(member_id, instance_id, request.rebalance_timeout_ms, (), client_id, client_host)
        group = bump(group)
    elif _config_offset(worker) not in (announced.config_offset, None):
        # Its configuration moved on (Connect: the config topic; kconsumer: its declared work):
        # as a new-protocol worker's rebalance reason, it asks for a new assignment.
        group = bump(group)
    worker = replace(worker, rebalance_timeout_ms=request.rebalance_timeout_ms, classic=classic)
    worker = _adopt(group, worker, runs)
    reconciled = reconcile(group, worker, runs)
    group = save(ctx, group.with_worker(reconciled))
    _watch(ctx, group, worker, reconciled)
    return JoinGroupResponse(
        member_id=member_id,
        generation_id=reconciled.member_epoch,
        protocol_type=CONNECT_PROTOCOL_TYPE,
        protocol_name=classic.protocol_name,
        leader="",
        members=[],
    )


def _config_offset(worker: Worker) -> int | None:
    """The config offset of the worker's last JoinGroup (None: not a classic one, or unreadable)."""
    if worker.classic is None:
        return None
    try:
        return decode_worker_state(worker.classic.metadata).config_offset
    except ProtocolError:
        return None


def _incremental_first(request: JoinGroupRequest) -> tuple[tuple[str, bytes], ...] | None:
    """Its protocols, the most preferred incremental one first (None: it offers none)."""
    offered = [(p.name, p.metadata) for p in request.protocols]
    chosen = next((p for p in offered if p[0] in INCREMENTAL), None)
    if chosen is None:
        return None
    return (chosen, *(p for p in offered if p is not chosen))


def _adopt(group: WorkerGroup, worker: Worker, runs: WorkUnits) -> Worker:
    """A unit the worker says it runs that nobody else holds is counted as its own (it will be
    told to stop it unless its target keeps it): the coordinator never loses sight of a unit a
    worker runs."""
    unknown = runs - worker.holds - group.held_by_others(worker.member_id)
    if not unknown:
        return worker
    return replace(worker, assigned=worker.assigned | unknown)


def _watch(ctx: Context, group: WorkerGroup, before: Worker, after: Worker) -> None:
    assert after.classic is not None
    group_id, member_id = group.group_id, after.member_id
    if group_id not in ctx.state.worker_groups:
        return  # converted back to a classic group meanwhile
    ctx.timers.schedule(session_timer(group_id, member_id), ctx.now_ms + after.classic.session_timeout_ms)
    if after.state != WorkerState.UNREVOKED:
        ctx.timers.cancel(revocation_timer(group_id, member_id))
    elif before.state != WorkerState.UNREVOKED:
        deadline = ctx.now_ms + max(after.rebalance_timeout_ms, 0)
        ctx.timers.schedule(revocation_timer(group_id, member_id), deadline, after.member_epoch)


def _classic_worker(group: WorkerGroup, member_id: str, instance_id: str | None, generation: int) -> Worker:
    worker = group.workers.get(member_id)
    if instance_id is not None:
        holder = group.by_instance(instance_id)
        if holder is not None and holder.member_id != member_id:
            raise KafkaApiError(
                ErrorCode.FENCED_INSTANCE_ID, f"Instance {instance_id} is held by another worker."
            )
    if worker is None or not worker.active or not worker.uses_classic:
        raise KafkaApiError(
            ErrorCode.UNKNOWN_MEMBER_ID, f"Worker {member_id} is not a classic worker of the group."
        )
    if generation != worker.member_epoch:
        raise KafkaApiError(
            ErrorCode.ILLEGAL_GENERATION,
            f"The generation {generation} is not the worker's epoch {worker.member_epoch}.",
        )
    return worker


def sync(ctx: Context, group: WorkerGroup, request: SyncGroupRequest) -> SyncGroupResponse:
    """Every unit the worker may run, and those it must stop."""
    try:
        worker = _classic_worker(group, request.member_id, request.group_instance_id, request.generation_id)
    except KafkaApiError as exc:
        return SyncGroupResponse(error_code=int(exc.code))
    classic = worker.classic
    assert classic is not None
    if (request.protocol_type not in (None, CONNECT_PROTOCOL_TYPE)) or (
        request.protocol_name not in (None, classic.protocol_name)
    ):
        return SyncGroupResponse(error_code=ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    runs = runs_of(classic.metadata)
    assignment = ConnectAssignment(
        assigned=worker.assigned,
        revoked=(worker.pending_revocation | (runs - worker.holds)) & runs,
        config_offset=announced_offset(classic.metadata),
    )
    ctx.timers.schedule(
        session_timer(group.group_id, worker.member_id), ctx.now_ms + classic.session_timeout_ms
    )
    return SyncGroupResponse(
        protocol_type=CONNECT_PROTOCOL_TYPE,
        protocol_name=classic.protocol_name,
        assignment=assignment_bytes(classic.protocol_name, assignment),
    )


def heartbeat(ctx: Context, group: WorkerGroup, request: HeartbeatRequest) -> HeartbeatResponse:
    """Alive; REBALANCE_IN_PROGRESS when a rejoin would move its assignment forward."""
    try:
        worker = _classic_worker(group, request.member_id, request.group_instance_id, request.generation_id)
    except KafkaApiError as exc:
        return HeartbeatResponse(error_code=int(exc.code))
    assert worker.classic is not None
    ctx.timers.schedule(
        session_timer(group.group_id, worker.member_id), ctx.now_ms + worker.classic.session_timeout_ms
    )
    if worker.state == WorkerState.UNREVOKED or reconcile(group, worker, None) != worker:
        return HeartbeatResponse(error_code=ErrorCode.REBALANCE_IN_PROGRESS)
    return HeartbeatResponse()


def leave(ctx: Context, group: WorkerGroup, request: LeaveGroupRequest, version: int) -> LeaveGroupResponse:
    """Classic workers leave (a static one named by its instance id alone, too)."""
    current = [group]

    def remove(member_id: str, instance_id: str | None) -> bool:
        group = current[0]
        if group.group_id not in ctx.state.worker_groups:
            raise KafkaApiError(ErrorCode.UNKNOWN_MEMBER_ID)  # a classic group again since
        holder = None if instance_id is None else group.by_instance(instance_id)
        named = holder.member_id if holder is not None and not member_id else member_id
        worker = group.workers.get(named)
        if worker is None or not worker.uses_classic:
            raise KafkaApiError(ErrorCode.UNKNOWN_MEMBER_ID)
        if holder is not None and holder.member_id != named:
            raise KafkaApiError(ErrorCode.FENCED_INSTANCE_ID)
        if holder is not None and worker.active:
            # A static worker that stopped its units: its place and units wait for its next
            # process until its session ends (the new protocol's static leave).
            away = replace(
                worker,
                member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                previous_member_epoch=worker.member_epoch,
            )
            ctx.timers.cancel(revocation_timer(group.group_id, named))
            current[0] = save(ctx, group.with_worker(away))
        else:
            current[0] = remove_worker(ctx, group, named)
        return True

    return leave_each(request, version, remove)[0]
