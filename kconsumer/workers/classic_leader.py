"""The leader's computation of a classic worker group (``group.protocol=classic``), as a pure
function: the members' JoinGroup metadata in, each member's SyncGroup assignment out.

The assignor is the same as on the new protocol (`assignors.WorkerAssignor`); what the
coordinator does there for the new protocol, the leader does here, in Connect's incremental
cooperative way: a member keeps the units of its target it runs, is told to stop the others, and
is given only target units that no member runs. A unit that moves is therefore revoked in one
generation and given in the next, after its old owner rejoined without it.

Connect's leader sends each member only what is new to it; this one sends everything the member
is to run (what it keeps and what is new). A Connect worker adds the assignment to what it runs,
so both read the same; and a static member's new process, handed its predecessor's stored
assignment by the coordinator without a rebalance, learns everything it is to run.

The leader keeps the assignor's state and the last targets in memory (`LeaderMemory`), as
Connect's leader does: a new leader starts without them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ..assignment.connect_protocol import (
    ConnectAssignment,
    decode_worker_state,
    encode_assignment,
    work_offset,
)
from ..assignment.work_units import NO_UNITS, WorkUnits
from ..protocol.messages.classic_group import JoinGroupResponseMember
from .assignors import Computed, GroupView, WorkerAssignor, WorkerView


@dataclass(frozen=True)
class LeaderMemory:
    """What a leader remembers between generations."""

    targets: dict[str, WorkUnits] = field(default_factory=dict)
    state: bytes = b""
    state_version: int = 0


@dataclass(frozen=True)
class Led:
    """The leader's result: each member's assignment bytes, and what it remembers next."""

    assignments: dict[str, bytes]
    memory: LeaderMemory


def lead(
    assignor: WorkerAssignor,
    leader_id: str,
    generation: int,
    members: Iterable[JoinGroupResponseMember],
    work: WorkUnits,
    memory: LeaderMemory,
    wall_ms: int,
    version: int,
) -> Led:
    """Assign `work` over `members` (raises ProtocolError for a member's undecodable metadata)."""
    runs = {m.member_id: decode_worker_state(m.metadata).runs for m in members}
    instances = {m.member_id: m.group_instance_id for m in members}
    view = GroupView(
        group_epoch=generation,
        workers=tuple(
            WorkerView(
                member_id=member_id,
                instance_id=instances[member_id],
                owned=owned,
                target=memory.targets.get(member_id, owned),
            )
            for member_id, owned in sorted(runs.items())
        ),
        state=memory.state,
        state_version=memory.state_version,
        now_ms=wall_ms,
    )
    computed: Computed = assignor.assign(view, work)
    offset = work_offset(work)
    assignments = {}
    for member_id, owned in runs.items():
        target = computed.units.get(member_id, NO_UNITS)
        run_by_others = NO_UNITS
        for other, units in runs.items():
            if other != member_id:
                run_by_others = run_by_others | units
        delay = computed.rebalance_in_ms if member_id == leader_id and computed.rebalance_in_ms else 0
        assignment = ConnectAssignment(
            assigned=(target & owned) | (target - run_by_others),
            revoked=owned - target,
            leader=leader_id,
            config_offset=offset,
            delay_ms=max(int(delay), 0),
        )
        assignments[member_id] = encode_assignment(assignment, version)
    kept = LeaderMemory(dict(computed.units), computed.state, computed.state_version)
    return Led(assignments, kept)
