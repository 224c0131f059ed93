"""Liveness: once the faults stop, the group must converge, and then every record gets processed.

*Converged* means, all at once: a coordinator is serving; the target assignment is at the group
epoch; the group's members are exactly the live processes; every process is subscribed, polling
(not stalled, not inside a callback), not paused and not leaving; its core is STABLE at the group
epoch with no reconciliation step and owns exactly its target; the coordinator has it STABLE at
the group epoch with exactly its target assigned and nothing pending revocation; its application
fetches exactly its target and has no queued rebalance work (stops, starts, callbacks, leaves;
periodic commits may be queued); and no zombie is left.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...broker.coordinator.model import MemberAssignmentState
from ...client.member import MemberState
from ...client.member.effects import InvokeCallback, LeaveDone, StartFetching, StopFetching

if TYPE_CHECKING:
    from .world import World

#: Application work that belongs to a rebalance (periodic commits and their results do not).
_REBALANCE_WORK = (StopFetching, StartFetching, InvokeCallback, LeaveDone)


@dataclass
class Convergence:
    """What the last probe found: why the group is not converged yet, or its epoch once it is."""

    reason: str = "not probed"
    epoch: int = 0


def converged(world: World, state: Convergence) -> bool:
    """Whether the group has converged (see the module docstring); sets `state.reason` if not."""
    host = world.host
    if not host.serving:
        state.reason = "no coordinator serving"
        return False
    group = host.group()
    if group is None:
        state.reason = "no group"
        return False
    epoch = group.group_epoch
    if group.assignment_epoch != epoch:
        state.reason = f"target at epoch {group.assignment_epoch} behind group epoch {epoch}"
        return False
    procs = world.processes()
    if len(procs) != world.params.members:
        state.reason = f"{world.params.members - len(procs)} member processes not running"
        return False
    ids = {proc.member_id for proc in procs}
    if set(group.members) != ids:
        extra = sorted(set(group.members) - ids)
        missing = sorted(ids - set(group.members))
        state.reason = f"group members differ from the live processes: extra {extra}, missing {missing}"
        return False
    for proc in procs:
        label = proc.label
        app = proc.app
        if proc.paused or app.leaving is not None or not app.subscribed or not app.polling:
            state.reason = f"{label} paused, leaving, unsubscribed, not polling or inside a callback"
            return False
        core = proc.core
        if core.state is not MemberState.STABLE or core.member_epoch != epoch:
            state.reason = f"{label} is {core.state.name} at epoch {core.member_epoch} (group epoch {epoch})"
            return False
        if core.reconciler.step is not None:
            state.reason = f"{label} has a reconciliation step under way"
            return False
        current = group.members[proc.member_id].current
        if current.state != MemberAssignmentState.STABLE or current.member_epoch != epoch:
            state.reason = (
                f"{label} is {current.state.name} at epoch {current.member_epoch} on the coordinator"
            )
            return False
        if any(current.pending_revocation.values()):
            state.reason = f"{label} has partitions pending revocation"
            return False
        target = {(t, p) for t, parts in group.target_of(proc.member_id).partitions.items() for p in parts}
        assigned = {(t, p) for t, parts in current.assigned.items() for p in parts}
        owned = {tp.key for tp in core.reconciler.owned}
        if not target == assigned == owned == set(app.fetching):
            state.reason = (
                f"{label}: target {len(target)}, coordinator-assigned {len(assigned)}, "
                f"core-owned {len(owned)}, fetching {len(app.fetching)} partitions differ"
            )
            return False
        rebalance_work = [work for work in app.queue if isinstance(work, _REBALANCE_WORK)]
        if rebalance_work:
            state.reason = f"{label} has {len(rebalance_work)} queued rebalance work items"
            return False
    if world.checker.zombies_now:
        state.reason = f"zombies left: {world.checker.zombies_now}"
        return False
    state.reason = "converged"
    state.epoch = epoch
    return True


def pending_records(world: World) -> int:
    """Records of the group's target partitions (live topics) not processed yet by anyone."""
    group = world.host.group()
    if group is None:
        return 0
    topics = world.topics
    coverage = world.checker.coverage
    left = 0
    for member_id in group.members:
        for topic_id, partitions in group.target_of(member_id).partitions.items():
            if not topics.is_live(topic_id):
                continue
            for partition in partitions:
                key = (topic_id, partition)
                done = coverage[key].prefix if key in coverage else 0
                left += max(0, topics.hw.get(key, 0) - done)
    return left
