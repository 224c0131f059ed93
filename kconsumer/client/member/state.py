"""The member's states and the one table of allowed transitions (docs/member-states.md).

Every state change of the member goes through `check_transition`, which rejects any change the
table does not list with an `IllegalTransitionError` naming both states. The table is written as
*allowed predecessors* of each state, the way Kafka's ``MemberState`` writes it, so that reading one
row answers "how can the member get here?".
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Mapping

from .transitions import TransitionTable

log = logging.getLogger("kconsumer")


class MemberState(enum.Enum):
    """Where the member stands in its group (KIP-848, client side)."""

    UNSUBSCRIBED = "UNSUBSCRIBED"
    """No subscription, not in the group, no heartbeats. The initial state."""
    JOINING = "JOINING"
    """Sending heartbeats with epoch 0 (join or rejoin) until a response gives it an epoch."""
    RECONCILING = "RECONCILING"
    """Applying a target assignment: revoke, callbacks, commits, offset fetches, start fetching."""
    ACKNOWLEDGING = "ACKNOWLEDGING"
    """A reconciliation step finished: the next heartbeat (sent at once) reports the owned partitions."""
    STABLE = "STABLE"
    """Owns exactly its target assignment; heartbeats on the coordinator's interval."""
    FENCED = "FENCED"
    """The coordinator fenced it: partitions are lost; waiting for on_partitions_lost, then rejoins."""
    PREPARE_LEAVING = "PREPARE_LEAVING"
    """Leaving on unsubscribe/close: stop fetching, commit, on_partitions_revoked; still heartbeating."""
    LEAVING = "LEAVING"
    """The leave heartbeat (epoch -1, or -2 for a static member) is due or in flight."""
    STALE = "STALE"
    """Left because the application did not poll within max.poll.interval.ms; rejoins at its next poll."""
    FATAL = "FATAL"
    """An unrecoverable error. No more requests; the error is raised to the application."""


S = MemberState

#: Allowed predecessors of every state. A change from a state not listed here is a bug.
#: (Staying in the same state is not a change and is always allowed.)
ALLOWED_PREDECESSORS: Mapping[MemberState, frozenset[MemberState]] = {
    S.UNSUBSCRIBED: frozenset({S.PREPARE_LEAVING, S.LEAVING, S.FENCED, S.STALE}),
    S.JOINING: frozenset({S.UNSUBSCRIBED, S.FENCED, S.STALE}),
    S.RECONCILING: frozenset({S.JOINING, S.STABLE, S.ACKNOWLEDGING}),
    S.ACKNOWLEDGING: frozenset({S.RECONCILING}),
    S.STABLE: frozenset({S.JOINING, S.RECONCILING, S.ACKNOWLEDGING}),
    S.FENCED: frozenset({S.JOINING, S.RECONCILING, S.ACKNOWLEDGING, S.STABLE}),
    S.PREPARE_LEAVING: frozenset({S.JOINING, S.RECONCILING, S.ACKNOWLEDGING, S.STABLE}),
    S.LEAVING: frozenset({S.PREPARE_LEAVING}),
    S.STALE: frozenset({S.LEAVING}),
    S.FATAL: frozenset({S.JOINING, S.RECONCILING, S.ACKNOWLEDGING, S.STABLE, S.PREPARE_LEAVING, S.LEAVING}),
}

#: States in which the member is (or is becoming) an active member that accepts new assignments.
IN_GROUP: frozenset[MemberState] = frozenset({S.JOINING, S.RECONCILING, S.ACKNOWLEDGING, S.STABLE})

#: States in which the member sends heartbeats.
HEARTBEATING: frozenset[MemberState] = IN_GROUP | {S.PREPARE_LEAVING, S.LEAVING}


#: The member state machine's table: every change of `MemberState` goes through it.
MEMBER_TRANSITIONS = TransitionTable("member state", ALLOWED_PREDECESSORS)


def is_allowed(current: MemberState, target: MemberState) -> bool:
    """True when the member may go from `current` to `target` (same state included)."""
    return MEMBER_TRANSITIONS.allows(current, target)


def check_transition(current: MemberState, target: MemberState) -> MemberState:
    """Return `target` if the table allows ``current -> target``; raise `IllegalTransitionError` if not."""
    return MEMBER_TRANSITIONS.check(current, target)


def log_transition(group: str, member: str, before: MemberState, after: MemberState, epoch: int) -> None:
    """The one INFO line of a member state change; its fields are also on the record (``extra``)
    for structured logging: ``group_id``, ``member_id``, ``member_epoch``, ``member_state``."""
    fields = {"group_id": group, "member_id": member, "member_epoch": epoch, "member_state": after.name}
    log.info(
        "member %s of group %s: %s -> %s (epoch %d)",
        member,
        group,
        before.name,
        after.name,
        epoch,
        extra=fields,
    )
