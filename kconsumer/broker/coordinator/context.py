"""What a request handler works with: the state, the metadata image, configuration, timers, the
record writer of the current operation, and the soft (non-replayed) state of client-side
assignment runs."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ...assignment.interface import ServerAssignor
from ...assignment.validation import GroupSnapshot
from ...protocol.uuid import Uuid
from .classic.replies import PendingReplies
from .config import CoordinatorConfig
from .metadata import MetadataImage
from .state import CoordinatorState, RecordWriter
from .timers import Timers

if TYPE_CHECKING:
    from .workers.runs import WorkerRun


@dataclass
class ClientAssignmentRun:
    """A client-side assignment the coordinator has asked one member to compute."""

    assignor: str
    chosen_member: str
    requested_epoch: int
    deadline_ms: int
    #: True until the chosen member calls PrepareAssignment (its heartbeats keep telling it).
    awaiting_prepare: bool = True
    tried: set[str] = field(default_factory=set)
    #: The group as each ConsumerGroupPrepareAssignment response described it, by group epoch, to
    #: validate the matching install (docs/assignor-protocol.md §4: against the state of GroupEpoch).
    prepared: dict[int, GroupSnapshot[Uuid]] = field(default_factory=dict)
    #: The instance id of each static member a prepare listed: an install that names a static
    #: member replaced since (same instance id, new member id) gives its part to the replacement.
    instances: dict[str, str] = field(default_factory=dict)


@dataclass
class Context:
    """Everything a handler may read; it changes state only through `writer`."""

    state: CoordinatorState
    image: MetadataImage
    config: CoordinatorConfig
    assignors: Mapping[str, ServerAssignor]
    #: The name of the default server-side assignor (the first configured).
    default_assignor: str
    timers: Timers
    writer: RecordWriter
    client_runs: dict[str, ClientAssignmentRun]
    new_member_id: Callable[[], str]
    now_ms: int
    #: Waiting classic JoinGroup / SyncGroup requests (soft state).
    replies: PendingReplies = field(default_factory=PendingReplies)
    #: Worker-group assignments being computed (soft state), by group id.
    worker_runs: dict[str, WorkerRun] = field(default_factory=dict)


# Timer keys.
def session_timer(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("session", group_id, member_id)


def rebalance_timer(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("rebalance", group_id, member_id)


def regex_timer(group_id: str, regex: str) -> tuple[str, str, str]:
    """The resolution of a regex the group uses but has not resolved yet (due at once)."""
    return ("regex", group_id, regex)


def consumer_join_timer(group_id: str, member_id: str) -> tuple[str, str, str]:
    """A classic member of a consumer group told to rejoin must JoinGroup before it fires."""
    return ("consumer-join", group_id, member_id)


def consumer_sync_timer(group_id: str, member_id: str) -> tuple[str, str, str]:
    """A classic member of a consumer group must SyncGroup after its JoinGroup before it fires."""
    return ("consumer-sync", group_id, member_id)


def member_timers(group_id: str, member_id: str) -> tuple[tuple[str, str, str], ...]:
    """Every timer of a consumer group member."""
    return (
        session_timer(group_id, member_id),
        rebalance_timer(group_id, member_id),
        consumer_join_timer(group_id, member_id),
        consumer_sync_timer(group_id, member_id),
    )


def client_assignment_timer(group_id: str) -> tuple[str, str]:
    return ("client-assignment", group_id)
