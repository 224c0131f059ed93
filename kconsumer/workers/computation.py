"""The chosen worker's computation, as pure functions: the prepared group as the assignor sees it,
the assignor's run, and the install request built from its result. The runner and the worker
simulation both use these (the network around them is theirs)."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from ..assignment.work_units import WorkUnits
from ..protocol.messages.worker_group import (
    ConnectGroupInstallAssignmentRequest,
    ConnectGroupPrepareAssignmentResponse,
    InstalledWorker,
)
from .assignors import Computed, GroupView, WorkerAssignor, WorkerView

logger = logging.getLogger("kconsumer.workers")

#: Rebalance reasons on the wire (int8, docs/worker-protocol.md §7).
REASON_REQUESTED = 1
REASON_DELAY_ENDED = 2
REASON_WORK_CHANGED = 3

#: The assignment metadata version of a `Note`.
NOTE_VERSION = 0


@dataclass(frozen=True)
class Note:
    """What the computation tells each worker with its part of the target (its assignment
    metadata, unless the assignor writes its own): a fingerprint of the declared work the
    assignment was computed from, and the wall-clock time at which to ask for a rebalance (the
    end of the incremental assignor's delay), if any.

    The fingerprint lets a worker that sees other work than its assignment was computed from ask
    for a rebalance, so a change of the declared work that nobody announced (say, made while no
    worker ran) is still picked up. The time travels with the target rather than staying with
    the worker that computed, and every worker is told: whichever is still there when it comes
    asks (each a little after it, `ask_delay_ms`, and only if no newer assignment came since),
    so the rebalance is not lost with a worker that left, or that a classic worker replaced."""

    fingerprint: bytes
    ask_at_ms: int | None = None

    def encode(self) -> bytes:
        return self.fingerprint + (b"" if self.ask_at_ms is None else self.ask_at_ms.to_bytes(8, "big"))

    @staticmethod
    def decode(metadata: bytes) -> Note | None:
        """The note in `metadata`, or None when it is not one (an assignor's own metadata)."""
        if len(metadata) == 16:
            return Note(metadata)
        if len(metadata) == 24:
            return Note(metadata[:16], int.from_bytes(metadata[16:], "big"))
        return None


def work_fingerprint(work: WorkUnits) -> bytes:
    """16 bytes naming a declared work."""
    return hashlib.sha256("\n".join(work).encode()).digest()[:16]


def group_view(prepared: ConnectGroupPrepareAssignmentResponse, wall_ms: int) -> GroupView:
    """The prepared group as the assignor sees it (`wall_ms`: the wall clock, for kept deadlines)."""
    return GroupView(
        group_epoch=prepared.group_epoch,
        workers=tuple(
            WorkerView(
                member_id=m.member_id,
                instance_id=m.instance_id,
                owned=WorkUnits.from_wire(m.owned),
                target=WorkUnits.from_wire(m.target),
                metadata_version=m.metadata_version,
                metadata=m.metadata_bytes,
                reason=m.reason,
                away=m.member_epoch < 0,
            )
            for m in prepared.members
        ),
        state=prepared.assignor_state,
        state_version=prepared.assignor_state_version,
        now_ms=wall_ms,
    )


def compute(
    assignors: Mapping[str, WorkerAssignor],
    prepared: ConnectGroupPrepareAssignmentResponse,
    work: Callable[[], WorkUnits],
    wall_ms: int,
) -> Computed | None:
    """The group's assignor's result for the declared `work`, or None when this worker lacks
    the assignor or it (or `work`) failed (logged; the coordinator chooses again when the
    deadline passes)."""
    assignor = assignors.get(prepared.assignor_name)
    if assignor is None:
        logger.error("the group chose assignor %r, which this worker lacks", prepared.assignor_name)
        return None
    try:
        declared = work()
        view = group_view(prepared, wall_ms)
        computed = assignor.assign(view, declared)
    except Exception:
        logger.exception("assigning with %s failed; the coordinator will choose again", assignor.name)
        return None
    fingerprint = work_fingerprint(declared)
    ask_at = None if computed.rebalance_in_ms is None else wall_ms + computed.rebalance_in_ms
    note = (NOTE_VERSION, Note(fingerprint, ask_at).encode())
    metadata = {member_id: computed.metadata.get(member_id, note) for member_id in computed.units}
    return replace(computed, metadata=metadata)


def work_changed(note: Note, work: Callable[[], WorkUnits]) -> bool:
    """Whether `work()` declares other work than `note` was computed from (False when `work`
    fails: logged)."""
    try:
        return work_fingerprint(work()) != note.fingerprint
    except Exception:
        logger.exception("the declared work could not be read")
        return False


def ask_delay_ms(member_id: str) -> int:
    """How long after a note's time this worker asks (0-999 ms, fixed per worker): the first to
    ask gets the group a new assignment, and the others, seeing it, need not ask."""
    return int.from_bytes(hashlib.sha256(member_id.encode()).digest()[:2], "big") % 1_000


def note_rebalances(
    metadata: bytes, work: Callable[[], WorkUnits], member_id: str
) -> list[tuple[int, int | None]]:
    """The rebalances the note in `metadata` calls for, as (reason, wall-clock time to ask at,
    None: now): one when the declared work changed since the assignment was computed, one a
    little after the time the note names (the end of the incremental assignor's delay: ask then
    only if `still_due`)."""
    note = Note.decode(metadata)
    if note is None:
        return []
    asks: list[tuple[int, int | None]] = []
    if work_changed(note, work):
        asks.append((REASON_WORK_CHANGED, None))
    if note.ask_at_ms is not None:
        asks.append((REASON_DELAY_ENDED, note.ask_at_ms + ask_delay_ms(member_id)))
    return asks


def still_due(metadata: bytes, at_ms: int, member_id: str) -> bool:
    """Whether the worker's current assignment metadata still calls for the rebalance scheduled
    at `at_ms` (False once a newer assignment came: it answered that, or names its own time)."""
    note = Note.decode(metadata)
    return (
        note is not None and note.ask_at_ms is not None and note.ask_at_ms + ask_delay_ms(member_id) == at_ms
    )


def install_request(
    group_id: str,
    member_id: str,
    member_epoch: int,
    prepared: ConnectGroupPrepareAssignmentResponse,
    computed: Computed,
) -> ConnectGroupInstallAssignmentRequest:
    """The install of `computed` (for workers the prepare listed; others are dropped)."""
    known = {m.member_id for m in prepared.members}
    return ConnectGroupInstallAssignmentRequest(
        group_id=group_id,
        member_id=member_id,
        member_epoch=member_epoch,
        group_epoch=prepared.group_epoch,
        error=computed.error,
        members=[
            InstalledWorker(
                member_id=worker,
                units=units.to_wire(),
                metadata_version=computed.metadata.get(worker, (0, b""))[0],
                metadata_bytes=computed.metadata.get(worker, (0, b""))[1],
            )
            for worker, units in sorted(computed.units.items())
            if worker in known
        ],
        assignor_state_version=computed.state_version,
        assignor_state=computed.state,
    )
