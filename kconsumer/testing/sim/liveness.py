"""Liveness: once the faults stop, the group must converge, and then every record gets processed.

*Converged* means, all at once: a coordinator is serving; the target assignment is at the group
epoch; the group's members are exactly the live processes; every process is subscribed, polling
(not stalled, not inside a callback), not paused and not leaving; its core is STABLE at the group
epoch with no reconciliation step and owns exactly its target; the coordinator has it STABLE at
the group epoch with exactly its target assigned and nothing pending revocation; its application
fetches exactly its target and has no queued rebalance work (stops, starts, callbacks, leaves;
periodic commits may be queued); and no zombie is left.

Every subscribed partition must be assigned, except in a group converted from a classic one and
at the epoch of its conversion: Apache Kafka 4.4 takes the classic members' assignment as the
target and computes the topics' metadata hash at that moment, so partitions added while the
group was classic stay unassigned until something else bumps the epoch (the fidelity scenario
``classic_group_converted_after_its_topic_grew`` shows it; the reference coordinator does the same).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...broker.coordinator.classic.model import ClassicState
from ...broker.coordinator.model import ConsumerGroup, MemberAssignmentState
from ...client.member import MemberState
from ...client.member.effects import InvokeCallback, LeaveDone, StartFetching, StopFetching
from ...patterns import searched_topics
from ...protocol.uuid import Uuid

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
    classic = host.classic_group() if group is None else None
    if group is not None:
        epoch, members = group.group_epoch, set(group.members)
        if group.assignment_epoch != epoch:
            state.reason = f"target at epoch {group.assignment_epoch} behind group epoch {epoch}"
            return False
    elif classic is not None:
        epoch, members = classic.generation, set(classic.members)
        if classic.state is not ClassicState.STABLE:
            state.reason = f"classic group {classic.state.name}"
            return False
    else:
        state.reason = "no group"
        return False
    procs = world.processes()
    if len(procs) != world.params.members:
        state.reason = f"{world.params.members - len(procs)} member processes not running"
        return False
    ids = {proc.group_member_id for proc in procs}
    if members != ids:
        extra = sorted(members - ids)
        missing = sorted(ids - members)
        state.reason = f"group members differ from the live processes: extra {extra}, missing {missing}"
        return False
    assignments = host.assignments()
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
        target = assignments[proc.group_member_id]
        assigned = (
            target if group is None else _coordinator_assigned(group, proc.group_member_id, epoch, state)
        )
        if assigned is None:
            state.reason = f"{label}: {state.reason}"
            return False
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
    stranded_by_conversion = group is not None and world.checker.converted_at_epoch == epoch
    if (unassigned := _unassigned(world, assignments)) and not stranded_by_conversion:
        state.reason = f"{unassigned} subscribed partitions assigned to nobody"
        return False
    if world.checker.zombies_now:
        state.reason = f"zombies left: {world.checker.zombies_now}"
        return False
    state.reason = "converged"
    state.epoch = epoch
    return True


def _coordinator_assigned(
    group: ConsumerGroup, member_id: str, epoch: int, state: Convergence
) -> set[tuple[Uuid, int]] | None:
    """What a consumer group has the member assigned, once it is STABLE at `epoch` with nothing
    pending revocation (None otherwise, with the reason in `state`)."""
    current = group.members[member_id].current
    if current.state != MemberAssignmentState.STABLE or current.member_epoch != epoch:
        state.reason = f"{current.state.name} at epoch {current.member_epoch} on the coordinator"
        return None
    if any(current.pending_revocation.values()):
        state.reason = "partitions pending revocation"
        return None
    return {(t, p) for t, parts in current.assigned.items() for p in parts}


def _unassigned(world: World, assignments: dict[str, set[tuple[Uuid, int]]]) -> int:
    """Partitions of live topics some process subscribes to that no member has (a classic leader
    assigns every one of them)."""
    live = [topic.name for topic in world.topics.live.values()]
    subscribed = {
        name
        for proc in world.processes()
        if (sub := proc.core.subscription)
        for name in (searched_topics(sub.pattern, live) if sub.pattern else sub.topics)
    }
    wanted = {
        (topic.topic_id, p)
        for topic in world.topics.live.values()
        if topic.name in subscribed
        for p in range(topic.num_partitions)
    }
    return len(wanted - set().union(*assignments.values()))


def pending_records(world: World) -> int:
    """Records of the group's assigned partitions (live topics) not processed yet by anyone."""
    topics = world.topics
    coverage = world.checker.coverage
    left = 0
    for keys in world.host.assignments().values():
        for key in keys:
            if topics.is_live(key[0]):
                done = coverage[key].prefix if key in coverage else 0
                left += max(0, topics.hw.get(key, 0) - done)
    return left
