"""Online migration between classic ``connect`` groups and worker groups (the seed's "Migration
to the new protocol"; docs/worker-protocol.md §9).

Upgrade: the first ConnectGroupHeartbeat worker to join a non-empty classic group of protocol
type ``connect`` converts it. Each classic worker is carried over at the group's generation,
holding what it may run (below), with that as its target: the group epoch starts at the
generation, and the joining worker's arrival bumps it, so the next target is computed by a
new-protocol worker (classic workers are never asked to compute).

Downgrade: when the last new-protocol worker is gone (left, or removed when its session ended),
the classic workers that remain form a classic group again, at the group epoch as generation,
and rebalance at once; their leader assigns from what each reports running.

What a classic worker may run is taken conservatively, as for consumer groups: what its last
JoinGroup said it runs (its allocation) plus what its last SyncGroup gave it, so no unit is
handed to a second worker while its holder may still run it. Two workers claiming one unit (a
classic rebalance half done) make the joining worker retry.
"""

from __future__ import annotations

import dataclasses
import logging

from ....assignment.connect_protocol import (
    CONNECT_PROTOCOL_TYPE,
    PROTOCOL_VERSIONS,
    ConnectAssignment,
    decode_assignment,
    decode_worker_state,
    encode_assignment,
)
from ....assignment.work_units import WorkUnits
from ....errors import ErrorCode, KafkaApiError, ProtocolError
from ..classic.migration import answer_waiting_members
from ..classic.model import ClassicGroup, ClassicMember, ClassicState
from ..classic.rebalance import prepare_rebalance, reschedule_heartbeat, write
from ..context import Context
from ..model import ClassicMemberMetadata
from ..records import ClassicGroupTombstone, WorkerGroupRecord, WorkerGroupTombstone
from .model import TargetEntry, Worker, WorkerGroup
from .timer_keys import assignment_timer, revocation_timer, session_timer

logger = logging.getLogger("kconsumer.broker.coordinator")


def runs_of(metadata: bytes) -> WorkUnits:
    """What a classic worker's JoinGroup metadata says it runs (ProtocolError when malformed)."""
    return decode_worker_state(metadata).runs


def announced_offset(metadata: bytes) -> int:
    """The ConfigOffset a classic worker's JoinGroup announced (-1 when unreadable). The
    coordinator's assignments carry it back: the configuration they were made for, as far as the
    coordinator knows (a worker whose configuration moved on since asks for a rebalance)."""
    try:
        return decode_worker_state(metadata).config_offset
    except ProtocolError:
        return -1


def assignment_bytes(protocol: str, assignment: ConnectAssignment) -> bytes:
    """`assignment` in the version of the classic worker's protocol (1 for ``default``: an eager
    worker is never in a worker group, but a downgraded group's describe still decodes)."""
    return encode_assignment(assignment, max(PROTOCOL_VERSIONS.get(protocol, 1), 1))


def _held(classic: ClassicGroup, member: ClassicMember) -> WorkUnits:
    metadata = member.metadata(classic.protocol_name) or (member.protocols[0][1] if member.protocols else b"")
    try:
        held = runs_of(metadata)
        if member.assignment:
            given = decode_assignment(member.assignment)
            held = held | given.assigned
    except ProtocolError as exc:
        logger.info("classic group %s not upgraded: malformed Connect protocol (%s)", classic.group_id, exc)
        raise KafkaApiError(
            ErrorCode.GROUP_ID_NOT_FOUND,
            f"Group {classic.group_id} is not a worker group: its Connect protocol is malformed ({exc}).",
        ) from None
    return held


def upgrade(ctx: Context, classic: ClassicGroup) -> WorkerGroup:
    """The worker group a non-empty classic ``connect`` group becomes (written), or
    GROUP_ID_NOT_FOUND (another protocol type) / COORDINATOR_LOAD_IN_PROGRESS (retry: two
    workers claim one unit while the classic group rebalances)."""
    group_id = classic.group_id
    if classic.protocol_type != CONNECT_PROTOCOL_TYPE:
        raise KafkaApiError(
            ErrorCode.GROUP_ID_NOT_FOUND,
            f"Group {group_id} is a classic group of protocol type {classic.protocol_type!r}, not 'connect'.",
        )
    epoch = classic.generation
    workers: dict[str, Worker] = {}
    claimed: dict[str, str] = {}
    for member in classic.members.values():
        held = _held(classic, member)
        for unit in held:
            holder = claimed.setdefault(unit, member.member_id)
            if holder != member.member_id:
                raise KafkaApiError(
                    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                    f"Group {group_id} is rebalancing and cannot be converted yet: "
                    f"{holder} and {member.member_id} both claim {unit}.",
                )
        workers[member.member_id] = Worker(
            member_id=member.member_id,
            instance_id=member.instance_id,
            rebalance_timeout_ms=member.rebalance_timeout_ms,
            assignors=(),
            client_id=member.client_id,
            client_host=member.client_host,
            member_epoch=epoch,
            previous_member_epoch=epoch,
            assigned=held,
            classic=ClassicMemberMetadata(member.session_timeout_ms, _preferred_first(classic, member)),
        )
    answer_waiting_members(ctx, classic)
    group = WorkerGroup(
        group_id,
        group_epoch=epoch,
        assignment_epoch=epoch,
        workers=workers,
        target={member_id: TargetEntry(w.assigned) for member_id, w in workers.items()},
    )
    logger.info(
        "classic group %s (generation %d, %d workers) upgraded to a worker group",
        group_id,
        epoch,
        len(workers),
    )
    ctx.writer.write(ClassicGroupTombstone(group_id))
    ctx.writer.write(WorkerGroupRecord(group_id, group))
    for worker in workers.values():
        assert worker.classic is not None
        ctx.timers.schedule(
            session_timer(group_id, worker.member_id), ctx.now_ms + worker.classic.session_timeout_ms
        )
    return group


def _preferred_first(classic: ClassicGroup, member: ClassicMember) -> tuple[tuple[str, bytes], ...]:
    """Its protocols with the group's chosen one first (the one its answers name)."""
    chosen = classic.protocol_name
    return tuple(sorted(member.protocols, key=lambda p: p[0] != chosen))


def downgrade(ctx: Context, group: WorkerGroup) -> ClassicGroup:
    """The classic group the worker group becomes once only classic workers remain (written,
    rebalancing): each keeps what it holds as its assignment, the generation is the epoch."""
    group_id, epoch = group.group_id, group.group_epoch
    members: dict[str, ClassicMember] = {}
    for worker in group.workers.values():
        classic = worker.classic
        assert classic is not None, "only classic workers remain"
        members[worker.member_id] = ClassicMember(
            member_id=worker.member_id,
            instance_id=worker.instance_id,
            client_id=worker.client_id,
            client_host=worker.client_host,
            rebalance_timeout_ms=worker.rebalance_timeout_ms,
            session_timeout_ms=classic.session_timeout_ms,
            protocol_type=CONNECT_PROTOCOL_TYPE,
            protocols=classic.protocols,
            assignment=assignment_bytes(
                classic.protocol_name,
                ConnectAssignment(assigned=worker.holds, config_offset=announced_offset(classic.metadata)),
            ),
        )
    converted = ClassicGroup(
        group_id,
        state=ClassicState.STABLE,
        previous_state=ClassicState.STABLE,
        state_timestamp_ms=ctx.now_ms,
        generation=epoch,
        protocol_type=CONNECT_PROTOCOL_TYPE,
        members=members,
        leader=min(members, default=None),
    )
    converted = dataclasses.replace(converted, protocol_name=converted.select_protocol())
    logger.info(
        "worker group %s (epoch %d) downgraded to a classic group of %d workers",
        group_id,
        epoch,
        len(members),
    )
    for member_id in group.workers:
        ctx.timers.cancel(session_timer(group_id, member_id))
        ctx.timers.cancel(revocation_timer(group_id, member_id))
    ctx.worker_runs.pop(group_id, None)
    ctx.timers.cancel(assignment_timer(group_id))
    ctx.writer.write(WorkerGroupTombstone(group_id))
    converted = write(ctx, converted, durable=True)
    for member_id in converted.members:
        reschedule_heartbeat(ctx, converted, member_id)
    return prepare_rebalance(ctx, converted, f"downgrade of group {group_id} from a worker group to classic")


def unsettled_downgrade(group: ClassicGroup) -> bool:
    """Whether a classic ``connect`` group a coordinator just loaded still holds the assignments
    a downgrade gave (no leader made them: their Leader field is empty). The rebalance the
    downgrade started was lost with the coordinator that started it, and without one the units
    the last new-protocol worker released would stay unassigned: the loaded group rebalances."""
    if group.protocol_type != CONNECT_PROTOCOL_TYPE or not group.members:
        return False
    for member in group.members.values():
        try:
            if member.assignment and decode_assignment(member.assignment).leader == "":
                return True
        except ProtocolError:
            continue
    return False
