"""A worker's way from its current assignment to its target: revoke first, assign after.

A worker never gets new units in the same step in which it must give some up (docs/
worker-protocol.md §4): while it has units to revoke, it is told only what it keeps; once it
confirms it stopped the others (its heartbeat's owned units no longer include them), it moves to
the target epoch and gets every unit of its target that no other worker holds any more. The
rest follows in later heartbeats, as other workers release them.
"""

from __future__ import annotations

from dataclasses import replace

from ....assignment.work_units import NO_UNITS, WorkUnits
from .model import Worker, WorkerGroup, WorkerState


def reconcile(group: WorkerGroup, worker: Worker, owned: WorkUnits | None) -> Worker:
    """The worker's next current assignment; `owned` is what its heartbeat says it runs (None:
    unchanged since its last heartbeat)."""
    if not worker.active:
        return worker
    if worker.state == WorkerState.UNREVOKED:
        if owned is None or not owned.isdisjoint(worker.pending_revocation):
            return worker  # not confirmed yet
        worker = replace(worker, pending_revocation=NO_UNITS, state=WorkerState.STABLE)
    epoch = group.assignment_epoch
    target = group.target_of(worker.member_id).units
    if worker.member_epoch == epoch and worker.state == WorkerState.STABLE and worker.assigned == target:
        return worker
    revoked = worker.assigned - target
    if revoked and owned is not None and owned.isdisjoint(revoked):
        # This very heartbeat says it runs none of them (it never heard they were its own: the
        # answer that gave them was lost): nothing to wait for.
        worker = replace(worker, assigned=worker.assigned - revoked)
    elif revoked:
        return replace(
            worker,
            assigned=worker.assigned - revoked,
            pending_revocation=revoked,
            state=WorkerState.UNREVOKED,
        )
    wanted = target - worker.assigned
    free = wanted - group.held_by_others(worker.member_id)
    state = WorkerState.STABLE if free == wanted else WorkerState.UNRELEASED
    previous = worker.member_epoch if worker.member_epoch != epoch else worker.previous_member_epoch
    return replace(
        worker,
        assigned=worker.assigned | free,
        state=state,
        member_epoch=epoch,
        previous_member_epoch=previous,
    )
