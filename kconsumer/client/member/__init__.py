"""The client side of KIP-848 as a sans-IO state machine (see `kconsumer.client.member.core`).

Events in, effects out: the runtime feeds `MemberCore.handle` with the events of
`kconsumer.client.member.events` and executes the effects of `kconsumer.client.member.effects`.
"""

from __future__ import annotations

from .core import MemberCore
from .model import (
    AssignmentMetadata,
    CallbackKind,
    ClientAssignor,
    CommitReason,
    FetchPosition,
    LeaveReason,
    MemberConfig,
    OffsetReset,
    PartitionOffset,
    Subscription,
    TopicIdPartition,
)
from .state import ALLOWED_PREDECESSORS, IllegalTransitionError, MemberState, check_transition

__all__ = [
    "ALLOWED_PREDECESSORS",
    "AssignmentMetadata",
    "CallbackKind",
    "ClientAssignor",
    "CommitReason",
    "FetchPosition",
    "IllegalTransitionError",
    "LeaveReason",
    "MemberConfig",
    "MemberCore",
    "MemberState",
    "OffsetReset",
    "PartitionOffset",
    "Subscription",
    "TopicIdPartition",
    "check_transition",
]
