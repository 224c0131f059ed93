"""The records a coordinator writes: every durable state change, as data.

Handlers never mutate state; they emit records, and replaying a record is the only way state
changes (`CoordinatorState.replay`). Replaying a coordinator's whole log into a fresh one rebuilds
an identical state: that is failover. The records mirror Kafka's ``__consumer_offsets`` record
types for consumer groups (group metadata, member metadata, target assignment member and metadata,
current member assignment, resolved regular expression, offset commit), each with a tombstone.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...protocol.uuid import Uuid
from .classic.model import ClassicGroup
from .model import CurrentAssignment, MemberRegistration, ResolvedRegex, TargetMember
from .workers.model import WorkerGroup


@dataclass(frozen=True)
class GroupEpochRecord:
    """The group exists at `epoch`; `metadata_hash` summarises its subscribed topics."""

    group_id: str
    epoch: int
    metadata_hash: int


@dataclass(frozen=True)
class MemberMetadataRecord:
    """A member joined or changed what it told the coordinator."""

    group_id: str
    metadata: MemberRegistration


@dataclass(frozen=True)
class MemberMetadataTombstone:
    group_id: str
    member_id: str


@dataclass(frozen=True)
class TargetMemberRecord:
    """A member's entry in the target assignment."""

    group_id: str
    member_id: str
    target: TargetMember


@dataclass(frozen=True)
class TargetMemberTombstone:
    group_id: str
    member_id: str


@dataclass(frozen=True)
class TargetMetadataRecord:
    """The target assignment is complete for `assignment_epoch`."""

    group_id: str
    assignment_epoch: int
    #: When it was computed; None for the empty target of a new group (the next computation
    #: is then not delayed by the assignment interval).
    timestamp_ms: int | None


@dataclass(frozen=True)
class CurrentAssignmentRecord:
    """A member's current assignment changed (epoch, state, assigned, pending revocation)."""

    group_id: str
    member_id: str
    current: CurrentAssignment


@dataclass(frozen=True)
class CurrentAssignmentTombstone:
    group_id: str
    member_id: str


@dataclass(frozen=True)
class RegexRecord:
    """The resolution of a subscription regex used by the group."""

    group_id: str
    regex: str
    resolved: ResolvedRegex


@dataclass(frozen=True)
class RegexTombstone:
    group_id: str
    regex: str


@dataclass(frozen=True)
class OffsetValue:
    """A committed offset; `topic_id` is the id the topic had when the offset was committed."""

    offset: int
    leader_epoch: int
    metadata: str | None
    commit_timestamp_ms: int
    topic_id: Uuid


@dataclass(frozen=True)
class OffsetCommitRecord:
    group_id: str
    topic: str
    partition: int
    value: OffsetValue


@dataclass(frozen=True)
class OffsetTombstone:
    group_id: str
    topic: str
    partition: int


@dataclass(frozen=True)
class PendingOffsetRecord:
    """An offset committed inside producer `producer_id`'s transaction (TxnOffsetCommit): not
    visible until the transaction's COMMIT marker turns it into an `OffsetCommitRecord`."""

    group_id: str
    producer_id: int
    topic: str
    partition: int
    value: OffsetValue


@dataclass(frozen=True)
class PendingOffsetTombstone:
    """The transaction ended (its offset was committed or dropped)."""

    group_id: str
    producer_id: int
    topic: str
    partition: int


@dataclass(frozen=True)
class SimpleGroupRecord:
    """A group with no consumer-protocol members, created by an admin offset commit (Kafka: a
    "simple" classic group)."""

    group_id: str


@dataclass(frozen=True)
class SimpleGroupTombstone:
    group_id: str


@dataclass(frozen=True)
class ClassicGroupRecord:
    """A classic group's next version. `durable` records are the ones Kafka persists (its
    GroupMetadata record: a new or empty group, an assignment stored at SyncGroup, a static member
    replaced); the others carry in-memory rebalance progress, are replayed like every record, and
    are left out of the log a coordinator taking over replays."""

    group_id: str
    group: ClassicGroup
    durable: bool = False


@dataclass(frozen=True)
class ClassicGroupTombstone:
    group_id: str


@dataclass(frozen=True)
class ConsumerGroupTombstone:
    """An empty consumer group is deleted (a classic member joins its id)."""

    group_id: str


@dataclass(frozen=True)
class WorkerGroupRecord:
    """A worker group's next version (the whole group: docs/worker-protocol.md §6)."""

    group_id: str
    group: WorkerGroup


@dataclass(frozen=True)
class WorkerGroupTombstone:
    """A worker group is deleted (its last worker left)."""

    group_id: str


Record = (
    GroupEpochRecord
    | MemberMetadataRecord
    | MemberMetadataTombstone
    | TargetMemberRecord
    | TargetMemberTombstone
    | TargetMetadataRecord
    | CurrentAssignmentRecord
    | CurrentAssignmentTombstone
    | RegexRecord
    | RegexTombstone
    | OffsetCommitRecord
    | OffsetTombstone
    | PendingOffsetRecord
    | PendingOffsetTombstone
    | SimpleGroupRecord
    | SimpleGroupTombstone
    | ClassicGroupRecord
    | ClassicGroupTombstone
    | ConsumerGroupTombstone
    | WorkerGroupRecord
    | WorkerGroupTombstone
)
