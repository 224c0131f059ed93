"""The coordinator's in-memory model of consumer groups (KIP-848).

A group has an epoch, members, a target assignment with its own epoch and, per member, the
*current* assignment the member is reconciling towards its target. Members are immutable values
(`dataclasses.replace` makes the next version); only `kconsumer.broker.coordinator.state` changes a group,
and only while replaying records.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ...assignment.announcements import AnnouncedAssignor, AssignorOutput
from ...assignment.interface import PartitionsByTopicId
from ...protocol.uuid import Uuid

#: The protocol type of consumers in classic groups (Kafka's ConsumerProtocol.PROTOCOL_TYPE).
CONSUMER_PROTOCOL_TYPE = "consumer"

#: Partition → the epoch at which the member was assigned it (Kafka 4.3, KIP-1251).
AssignedPartitions = Mapping[Uuid, Mapping[int, int]]


class MemberAssignmentState(enum.IntEnum):
    """Per-member reconciliation state (Kafka's MemberState)."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127


class GroupState(enum.Enum):
    """Consumer group states as ConsumerGroupDescribe and ListGroups name them."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True)
class ClassicMemberMetadata:
    """What a member using the classic protocol inside a consumer group joined with (Kafka's
    ClassicMemberMetadata): its session timeout and its JoinGroup protocols, (name, metadata) in
    its order of preference."""

    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]

    @property
    def protocol_name(self) -> str:
        """The protocol its JoinGroup and SyncGroup answers name: its first (Kafka's choice)."""
        return self.protocols[0][0]

    @property
    def metadata(self) -> bytes:
        """Its subscription (every protocol carries the same one)."""
        return self.protocols[0][1]


@dataclass(frozen=True)
class MemberRegistration:
    """What a member told the coordinator about itself (persisted by MemberMetadataRecord, Kafka's
    name; not the assignor API's `kconsumer.MemberMetadata`)."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    client_assignors: tuple[AnnouncedAssignor, ...] = ()
    rebalance_timeout_ms: int = -1
    #: Set while the member uses the classic protocol (JoinGroup/SyncGroup/Heartbeat).
    classic: ClassicMemberMetadata | None = None

    @property
    def uses_classic_protocol(self) -> bool:
        return self.classic is not None

    def session_timeout_ms(self, group_session_timeout_ms: int) -> int:
        """Its session timeout: its own with the classic protocol, the group's otherwise."""
        return group_session_timeout_ms if self.classic is None else self.classic.session_timeout_ms

    def client_assignor(self, name: str) -> AnnouncedAssignor | None:
        for assignor in self.client_assignors:
            if assignor.name == name:
                return assignor
        return None


@dataclass(frozen=True)
class CurrentAssignment:
    """A member's current assignment (persisted by CurrentAssignmentRecord)."""

    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberAssignmentState = MemberAssignmentState.STABLE
    assigned: AssignedPartitions = field(default_factory=dict)
    #: Partitions the member must give up, still with the epoch at which each was assigned (4.3,
    #: Kafka's TopicPartitionsWithEpochs): offset commits are checked against it.
    pending_revocation: AssignedPartitions = field(default_factory=dict)

    def assigned_sets(self) -> dict[Uuid, frozenset[int]]:
        """The assigned partitions without their assignment epochs."""
        return {topic: frozenset(parts) for topic, parts in self.assigned.items()}


@dataclass(frozen=True)
class ConsumerGroupMember:
    """A member: its metadata plus its current assignment."""

    metadata: MemberRegistration
    current: CurrentAssignment = field(default_factory=CurrentAssignment)

    @property
    def member_id(self) -> str:
        return self.metadata.member_id

    @property
    def instance_id(self) -> str | None:
        return self.metadata.instance_id

    @property
    def member_epoch(self) -> int:
        return self.current.member_epoch

    @property
    def state(self) -> MemberAssignmentState:
        return self.current.state

    @property
    def uses_classic_protocol(self) -> bool:
        return self.metadata.classic is not None


@dataclass(frozen=True)
class TargetMember:
    """One member's entry in the target assignment. `assignor_output` is set when a client-side
    assignor computed it (None for server-side assignors)."""

    partitions: PartitionsByTopicId
    assignor_output: AssignorOutput | None = None


EMPTY_TARGET = TargetMember({})


@dataclass(frozen=True)
class ResolvedRegex:
    """The topics a subscription regex matched, and the metadata version it was resolved at."""

    topics: frozenset[str]
    metadata_version: int
    timestamp_ms: int


class ConsumerGroup:
    """A consumer group. Mutated only by `CoordinatorState.replay`."""

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.metadata_hash = 0
        self.members: dict[str, ConsumerGroupMember] = {}
        self.static_members: dict[str, str] = {}
        self.target: dict[str, TargetMember] = {}
        self.assignment_epoch = 0
        self.last_assignment_ms: int | None = None
        self.resolved_regexes: dict[str, ResolvedRegex] = {}
        # Derived indexes, maintained on replay.
        self.subscribed_names: Counter[str] = Counter()
        self.subscribed_regexes: Counter[str] = Counter()
        self.owners: dict[Uuid, dict[int, str]] = {}

    # -- queries ---------------------------------------------------------------------------

    @property
    def num_members(self) -> int:
        return len(self.members)

    def member_by_instance(self, instance_id: str) -> ConsumerGroupMember | None:
        member_id = self.static_members.get(instance_id)
        return None if member_id is None else self.members.get(member_id)

    def target_of(self, member_id: str) -> TargetMember:
        return self.target.get(member_id, EMPTY_TARGET)

    def owner_of(self, topic_id: Uuid, partition: int) -> str | None:
        """The member holding the partition as assigned or pending revocation, if any."""
        owners = self.owners.get(topic_id)
        return None if owners is None else owners.get(partition)

    def state(self) -> GroupState:
        """The group state as Kafka derives it."""
        if not self.members:
            return GroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return GroupState.ASSIGNING
        for member in self.members.values():
            if (
                member.current.state != MemberAssignmentState.STABLE
                or member.current.member_epoch != self.assignment_epoch
            ):
                return GroupState.RECONCILING
        return GroupState.STABLE

    def subscribed_topic_names(self, resolved_only: bool = True) -> set[str]:
        """Topic names any member subscribes to, by name or through a resolved regex."""
        names = set(self.subscribed_names)
        for regex in self.subscribed_regexes:
            resolved = self.resolved_regexes.get(regex)
            if resolved is not None:
                names.update(resolved.topics)
        return names

    def member_topic_names(self, metadata: MemberRegistration) -> set[str]:
        """The topic names one member subscribes to (names plus its resolved regex)."""
        names = set(metadata.subscribed_topic_names)
        if metadata.subscribed_topic_regex:
            resolved = self.resolved_regexes.get(metadata.subscribed_topic_regex)
            if resolved is not None:
                names.update(resolved.topics)
        return names

    def classic_members(self) -> list[ConsumerGroupMember]:
        """The members using the classic protocol."""
        return [m for m in self.members.values() if m.metadata.classic is not None]

    def supports_classic_protocols(self, protocol_type: str, names: Iterable[str]) -> bool:
        """Whether a classic member with these protocols fits (Kafka's supportsClassicProtocols):
        the consumer protocol type, and one protocol every classic member supports."""
        if protocol_type != CONSUMER_PROTOCOL_TYPE:
            return False
        names = set(names)
        if not self.members:
            return bool(names)
        for member in self.classic_members():
            assert member.metadata.classic is not None
            names &= {name for name, _ in member.metadata.classic.protocols}
        return bool(names)

    def all_members_use_classic_except(self, member_id: str) -> bool:
        """Whether every member but `member_id` uses the classic protocol, and it does not."""
        member = self.members.get(member_id)
        if member is None or member.uses_classic_protocol:
            return False
        return all(m.uses_classic_protocol for mid, m in self.members.items() if mid != member_id)

    def is_homogeneous(self) -> bool:
        """Every member subscribes to the same names and no regex, or all to one regex."""
        count = len(self.members)
        if not self.subscribed_regexes:
            return all(n == count for n in self.subscribed_names.values())
        if self.subscribed_names or len(self.subscribed_regexes) != 1:
            return False
        return next(iter(self.subscribed_regexes.values())) == count

    # -- index maintenance (called by replay only) -------------------------------------------

    def _index_subscription(self, metadata: MemberRegistration, sign: int) -> None:
        for name in set(metadata.subscribed_topic_names):
            self.subscribed_names[name] += sign
            if self.subscribed_names[name] <= 0:
                del self.subscribed_names[name]
        if metadata.subscribed_topic_regex:
            regex = metadata.subscribed_topic_regex
            self.subscribed_regexes[regex] += sign
            if self.subscribed_regexes[regex] <= 0:
                del self.subscribed_regexes[regex]

    def _index_ownership(self, member_id: str, current: CurrentAssignment, add: bool) -> None:
        for topic_id, partitions in _owned(current):
            owners = self.owners.setdefault(topic_id, {})
            for partition in partitions:
                if add:
                    holder = owners.get(partition)
                    if holder is not None and holder != member_id:
                        raise AssertionError(
                            f"group {self.group_id}: partition {topic_id}-{partition} would be owned by "
                            f"{member_id} and {holder}"
                        )
                    owners[partition] = member_id
                elif owners.get(partition) == member_id:
                    del owners[partition]
            if not owners:
                del self.owners[topic_id]


def _owned(current: CurrentAssignment) -> Iterable[tuple[Uuid, Iterable[int]]]:
    yield from current.assigned.items()
    yield from current.pending_revocation.items()


def assignment_equal(left: PartitionsByTopicId, right: PartitionsByTopicId) -> bool:
    """Equality of two assignments, ignoring topics with no partition."""
    return {t: p for t, p in left.items() if p} == {t: p for t, p in right.items() if p}
