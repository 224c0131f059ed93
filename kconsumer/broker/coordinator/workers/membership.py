"""Writing a worker group's changes: saving the group, removing workers, bumping the epoch, and
the timers that watch workers (session, revocation, assignment deadline)."""

from __future__ import annotations

from dataclasses import replace

from ..context import Context
from ..records import WorkerGroupRecord, WorkerGroupTombstone
from .migration import downgrade
from .model import Worker, WorkerGroup, WorkerState
from .timer_keys import assignment_timer, revocation_timer, session_timer

#: The member epoch of a fenced worker whose units stay reserved until its session timeout.
FENCED_EPOCH = -1


def save(ctx: Context, group: WorkerGroup) -> WorkerGroup:
    """Write the group's next version (a group without workers is deleted; one with only
    classic workers left becomes a classic group again: `migration.downgrade`)."""
    if group.only_classic:
        downgrade(ctx, group)
    elif group.workers:
        ctx.writer.write(WorkerGroupRecord(group.group_id, group))
    elif group.group_id in ctx.state.worker_groups:
        ctx.writer.write(WorkerGroupTombstone(group.group_id))
    return group


def bump(group: WorkerGroup) -> WorkerGroup:
    """The next group epoch: a new target must be computed."""
    return replace(group, group_epoch=group.group_epoch + 1)


def remove_worker(ctx: Context, group: WorkerGroup, member_id: str) -> WorkerGroup:
    """The group without the worker (its units are free at once: it stopped them, or it was
    fenced), at the next epoch, saved; its timers cancelled, its computation abandoned."""
    group_id = group.group_id
    for key in (session_timer(group_id, member_id), revocation_timer(group_id, member_id)):
        ctx.timers.cancel(key)
    run = ctx.worker_runs.get(group_id)
    if run is not None and run.chosen == member_id:
        del ctx.worker_runs[group_id]
        ctx.timers.cancel(assignment_timer(group_id))
    return save(ctx, bump(group.without_worker(member_id)))


def fence_worker(ctx: Context, group: WorkerGroup, worker: Worker) -> WorkerGroup:
    """The worker is out of the group (FENCED_MEMBER_EPOCH), but the units it may still run stay
    reserved until its session timeout: it stops them when it hears it was fenced or when its
    lease runs out, and both come before that (docs/worker-protocol.md §2). A worker holding
    nothing is removed at once. The group epoch is bumped either way."""
    if not worker.holds:
        return remove_worker(ctx, group, worker.member_id)
    group_id = group.group_id
    ctx.timers.cancel(revocation_timer(group_id, worker.member_id))
    ctx.timers.schedule(session_timer(group_id, worker.member_id), ctx.now_ms + ctx.config.session_timeout_ms)
    run = ctx.worker_runs.get(group_id)
    if run is not None and run.chosen == worker.member_id:
        del ctx.worker_runs[group_id]
        ctx.timers.cancel(assignment_timer(group_id))
    fenced = replace(worker, member_epoch=FENCED_EPOCH, state=WorkerState.STABLE)
    target = {k: v for k, v in group.target.items() if k != worker.member_id}
    return save(ctx, bump(replace(group.with_worker(fenced), target=target)))
