"""The member session: everything a consumer-group member decides, sans-IO.

`MemberSession` (events in, effects out) is what a driver runs: the asyncio runtime
(`kconsumer.client.runtime`) and the deterministic simulation (`kconsumer.testing.sim`) both drive
it, adding only I/O. Inside it, `MemberCore` is the KIP-848 state machine (one transition table,
`state`); the session turns the core's group work into requests (`calls`, `dispatch`, `cluster`)
and runs the client-side assignment (`client_assignment`) and the application's queries
(`queries`). The events are in `events`, the effects in `effects`.
"""

from __future__ import annotations

from .core import MemberCore
from .effects import Node
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
from .session import MemberSession
from .state import ALLOWED_PREDECESSORS, MemberState, check_transition
from .transitions import IllegalTransitionError

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
    "MemberSession",
    "MemberState",
    "Node",
    "OffsetReset",
    "PartitionOffset",
    "Subscription",
    "TopicIdPartition",
    "check_transition",
]
