"""Moving a member's current assignment towards its target (Kafka's CurrentAssignmentBuilder;
Kafka 4.3 semantics).

A partition moves only after its previous owner has acknowledged the revocation: the new owner
gets it once no other member holds it as assigned or pending revocation ("unreleased"), so no
partition is ever owned by two members.

===================== =========================================================================
member state           on a heartbeat
===================== =========================================================================
STABLE                 epoch ≠ target epoch: compute the next assignment. Else, if the
                       subscription changed: drop unsubscribed topics (revoking them if owned).
UNREVOKED_PARTITIONS   still owns a partition pending revocation (or sent no owned list): wait.
                       Else compute the next assignment with the *same* epoch (4.2+).
UNRELEASED_PARTITIONS  compute the next assignment (picks up partitions released meanwhile).
UNKNOWN                owns partitions: FENCED_MEMBER_EPOCH. Else reconcile from scratch.
===================== =========================================================================

The next assignment: assigned = current ∩ target; pending revocation = current - assigned;
pending assignment = target - assigned - unreleased. Revocations still owned → UNREVOKED at the
current epoch; else the new partitions are granted at the target epoch (STABLE, or
UNRELEASED_PARTITIONS while some are held elsewhere).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ...assignment.interface import PartitionsByTopicId
from ...errors import ErrorCode, FencedMemberEpochError
from ...protocol.uuid import Uuid
from .model import AssignedPartitions, CurrentAssignment, MemberAssignmentState

#: Returns the member holding a partition (assigned or pending revocation), or None.
OwnerLookup = Callable[[Uuid, int], "str | None"]


def reconcile(
    member_id: str,
    current: CurrentAssignment,
    target_epoch: int,
    target: PartitionsByTopicId,
    owned: PartitionsByTopicId | None,
    owner_of: OwnerLookup,
    subscribed_topic_ids: frozenset[Uuid],
    subscription_changed: bool,
) -> CurrentAssignment:
    """The member's next current assignment. `owned` is what the member reported owning
    (None when it did not send its owned partitions: then it is assumed to still own everything)."""
    # 4.2+: the target counts as empty for topics the member no longer subscribes to.
    target = {t: p for t, p in target.items() if t in subscribed_topic_ids}
    state = current.state
    if state == MemberAssignmentState.STABLE:
        if current.member_epoch != target_epoch:
            return _next_assignment(
                member_id, current, current.member_epoch, target_epoch, target, owned, owner_of
            )
        if subscription_changed:
            return _drop_unsubscribed(current, subscribed_topic_ids, owned)
        return current
    if state == MemberAssignmentState.UNREVOKED_PARTITIONS:
        if subscription_changed:
            current = _drop_unsubscribed(current, subscribed_topic_ids, owned)
            if current.state != MemberAssignmentState.UNREVOKED_PARTITIONS:
                return _next_assignment(
                    member_id, current, current.member_epoch, target_epoch, target, owned, owner_of
                )
        if _owns_any(owned, current.pending_revocation):
            return current
        return _next_assignment(
            member_id, current, current.member_epoch, target_epoch, target, owned, owner_of
        )
    if state == MemberAssignmentState.UNRELEASED_PARTITIONS:
        return _next_assignment(
            member_id, current, current.member_epoch, target_epoch, target, owned, owner_of
        )
    # UNKNOWN
    if owned is None or any(owned.values()):
        raise FencedMemberEpochError(
            ErrorCode.FENCED_MEMBER_EPOCH,
            "The consumer group member is in an unknown state. The member must abandon all its "
            "partitions and rejoin.",
        )
    return _next_assignment(member_id, current, target_epoch, target_epoch, target, owned, owner_of)


def _owns_any(owned: PartitionsByTopicId | None, partitions: AssignedPartitions) -> bool:
    """Whether the client still reports any of `partitions` (None = it did not say: assume yes)."""
    if not any(partitions.values()):
        return False
    if owned is None:
        return True
    return any(p in owned.get(topic, ()) for topic, parts in partitions.items() for p in parts)


def _drop_unsubscribed(
    current: CurrentAssignment, subscribed_topic_ids: frozenset[Uuid], owned: PartitionsByTopicId | None
) -> CurrentAssignment:
    """Revoke the assigned partitions of topics the member no longer subscribes to."""
    kept: dict[Uuid, Mapping[int, int]] = {}
    revoked: dict[Uuid, Mapping[int, int]] = {t: p for t, p in current.pending_revocation.items() if p}
    for topic, partitions in current.assigned.items():
        if topic in subscribed_topic_ids:
            kept[topic] = partitions
        elif partitions:
            revoked[topic] = {**revoked.get(topic, {}), **partitions}
    if len(kept) == len(current.assigned) and revoked == dict(current.pending_revocation):
        return current
    if _owns_any(owned, revoked):
        return CurrentAssignment(
            member_epoch=current.member_epoch,
            previous_member_epoch=current.member_epoch,
            state=MemberAssignmentState.UNREVOKED_PARTITIONS,
            assigned=kept,
            pending_revocation=revoked,
        )
    return CurrentAssignment(
        member_epoch=current.member_epoch,
        previous_member_epoch=current.previous_member_epoch,
        state=current.state
        if current.state != MemberAssignmentState.UNREVOKED_PARTITIONS
        else (MemberAssignmentState.STABLE),
        assigned=kept,
        pending_revocation={},
    )


def _next_assignment(
    member_id: str,
    current: CurrentAssignment,
    member_epoch: int,
    target_epoch: int,
    target: PartitionsByTopicId,
    owned: PartitionsByTopicId | None,
    owner_of: OwnerLookup,
) -> CurrentAssignment:
    assigned: dict[Uuid, dict[int, int]] = {}
    pending_revocation: dict[Uuid, dict[int, int]] = {}
    pending_assignment: dict[Uuid, list[int]] = {}
    has_unreleased = False
    for topic in set(target) | set(current.assigned):
        wanted = target.get(topic, frozenset())
        held: Mapping[int, int] = current.assigned.get(topic, {})
        kept = {p: e for p, e in held.items() if p in wanted}
        revoked = {p: e for p, e in held.items() if p not in wanted}
        to_add = []
        for partition in wanted:
            if partition in kept:
                continue
            holder = owner_of(topic, partition)
            # 4.2+ (KAFKA-19449): partitions this member itself holds are not "unreleased".
            if holder is not None and holder != member_id:
                has_unreleased = True
            else:
                to_add.append(partition)
        if kept:
            assigned[topic] = kept
        if revoked:
            pending_revocation[topic] = revoked
        if to_add:
            pending_assignment[topic] = to_add

    if pending_revocation and _owns_any(owned, pending_revocation):
        return CurrentAssignment(
            member_epoch=member_epoch,
            previous_member_epoch=current.member_epoch,
            state=MemberAssignmentState.UNREVOKED_PARTITIONS,
            assigned=assigned,
            pending_revocation=pending_revocation,
        )
    for topic, partitions in pending_assignment.items():
        granted = assigned.setdefault(topic, {})
        for partition in partitions:
            granted[partition] = target_epoch
    state = MemberAssignmentState.UNRELEASED_PARTITIONS if has_unreleased else MemberAssignmentState.STABLE
    return CurrentAssignment(
        member_epoch=target_epoch,
        previous_member_epoch=current.member_epoch,
        state=state,
        assigned=assigned,
        pending_revocation={},
    )


def same_assigned_partitions(left: AssignedPartitions, right: AssignedPartitions) -> bool:
    """Whether two current assignments grant the same partitions (ignoring assignment epochs)."""
    return {t: frozenset(p) for t, p in left.items() if p} == {t: frozenset(p) for t, p in right.items() if p}
