"""Classic groups as the coordinator holds them (Kafka's ClassicGroup and ClassicGroupMember).

Values are immutable: a handler computes the group's next version (`dataclasses.replace`) and
writes it as a `ClassicGroupRecord`; replaying the record is what changes the coordinator's state.
A group carries both what Kafka persists (generation, protocol, leader, members with their
metadata and assignment) and what it keeps only in memory (the rebalance state, who has rejoined,
pending members, who still owes a SyncGroup); `loaded` is the group as a coordinator taking over
rebuilds it from the last durable record.
"""

from __future__ import annotations

import dataclasses
import enum
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field


class ClassicState(enum.Enum):
    """Classic group states, with the names DescribeGroups and ListGroups use."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


#: The states a group may enter PreparingRebalance from (Kafka's canRebalance).
CAN_REBALANCE = frozenset({ClassicState.EMPTY, ClassicState.COMPLETING_REBALANCE, ClassicState.STABLE})


@dataclass(frozen=True)
class ClassicMember:
    """One member of a classic group. `protocols` are (name, metadata) in the member's order of
    preference; `awaiting_join` is set while its JoinGroup waits for the join phase to end."""

    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    assignment: bytes = b""
    awaiting_join: bool = False
    #: Joined in the current rebalance (its JoinGroup is timed by the new-member join timeout).
    is_new: bool = False

    @property
    def protocol_names(self) -> frozenset[str]:
        return frozenset(name for name, _ in self.protocols)

    def metadata(self, protocol: str | None) -> bytes:
        """The member's metadata for `protocol` (empty when it does not support it)."""
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        return b""

    def vote(self, candidates: Iterable[str]) -> str:
        """The first protocol of the member's own order that every member supports."""
        allowed = set(candidates)
        for name, _ in self.protocols:
            if name in allowed:
                return name
        raise ValueError(f"member {self.member_id} supports none of {sorted(allowed)}")

    def matches(self, protocols: Iterable[tuple[str, bytes]]) -> bool:
        """Whether a JoinGroup carries the same protocols and metadata as the member has."""
        return tuple(protocols) == self.protocols


@dataclass(frozen=True)
class ClassicGroup:
    """A classic group (see the module docstring)."""

    group_id: str
    state: ClassicState = ClassicState.EMPTY
    previous_state: ClassicState = ClassicState.EMPTY
    state_timestamp_ms: int | None = None
    generation: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str | None = None
    members: Mapping[str, ClassicMember] = field(default_factory=dict)
    #: Dynamic members given an id by MEMBER_ID_REQUIRED that have not joined with it yet.
    pending_members: frozenset[str] = frozenset()
    #: Members whose SyncGroup the coordinator still waits for after the join phase.
    pending_sync: frozenset[str] = frozenset()
    #: A member joined during the initial rebalance delay, which is then extended.
    new_member_added: bool = False

    # -- queries ---------------------------------------------------------------------------

    @property
    def is_empty(self) -> bool:
        return self.state == ClassicState.EMPTY

    def member(self, member_id: str) -> ClassicMember | None:
        return self.members.get(member_id)

    def static_member_id(self, instance_id: str) -> str | None:
        for member in self.members.values():
            if member.instance_id == instance_id:
                return member.member_id
        return None

    def awaiting_join_count(self) -> int:
        return sum(1 for member in self.members.values() if member.awaiting_join)

    def has_all_members_joined(self) -> bool:
        return self.awaiting_join_count() == len(self.members) and not self.pending_members

    def rebalance_timeout_ms(self) -> int:
        """The longest rebalance timeout of the members (Kafka's group rebalance timeout)."""
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def candidate_protocols(self) -> set[str]:
        """Protocols every member supports."""
        counts: Counter[str] = Counter()
        for member in self.members.values():
            counts.update(member.protocol_names)
        return {name for name, count in counts.items() if count == len(self.members)}

    def supports(self, protocol_type: str, protocols: Iterable[str]) -> bool:
        """Whether a member joining with this type and these protocols fits the group."""
        names = set(protocols)
        if self.state == ClassicState.EMPTY:
            return bool(protocol_type) and bool(names)
        # Kafka counts, per protocol, the members supporting it and wants one the count of which
        # is the number of members: a group rebalancing with no member left accepts any.
        counts: Counter[str] = Counter()
        for member in self.members.values():
            counts.update(member.protocol_names)
        return self.protocol_type == protocol_type and any(
            counts[name] == len(self.members) for name in names
        )

    def select_protocol(self) -> str:
        """The protocol most members vote for among those all support (ties: the first seen)."""
        candidates = self.candidate_protocols()
        votes: Counter[str] = Counter(member.vote(candidates) for member in self.members.values())
        return max(votes, key=lambda name: votes[name])

    def loaded(self) -> ClassicGroup:
        """The group as a new coordinator loads it from its durable record: Stable with its
        members (Empty without), nothing awaited, nothing pending."""
        members = {
            mid: dataclasses.replace(m, awaiting_join=False, is_new=False) for mid, m in self.members.items()
        }
        state = ClassicState.STABLE if members else ClassicState.EMPTY
        return dataclasses.replace(
            self,
            state=state,
            previous_state=state,
            members=members,
            pending_members=frozenset(),
            pending_sync=frozenset(),
            new_member_added=False,
        )

    # -- the next version ------------------------------------------------------------------

    def transition(self, state: ClassicState, now_ms: int) -> ClassicGroup:
        return dataclasses.replace(self, state=state, previous_state=self.state, state_timestamp_ms=now_ms)

    def with_member(self, member: ClassicMember) -> ClassicGroup:
        """The group with `member` added or replaced (the first member sets the protocol type and
        becomes the leader if there is none)."""
        members = dict(self.members)
        members[member.member_id] = member
        return dataclasses.replace(
            self,
            members=members,
            protocol_type=self.protocol_type if self.members else member.protocol_type,
            leader=self.leader or member.member_id,
            pending_members=self.pending_members - {member.member_id},
        )

    def without_member(self, member_id: str) -> ClassicGroup:
        """The group without `member_id` (a leader leaving hands over to the next member)."""
        members = {mid: m for mid, m in self.members.items() if mid != member_id}
        leader = self.leader
        if leader == member_id:
            leader = next(iter(members), None)
        return dataclasses.replace(
            self,
            members=members,
            leader=leader,
            pending_members=self.pending_members - {member_id},
            pending_sync=self.pending_sync - {member_id},
        )

    def updated_members(self, **changes: object) -> ClassicGroup:
        """Every member with `changes` applied."""
        members = {mid: dataclasses.replace(m, **changes) for mid, m in self.members.items()}  # type: ignore[arg-type]
        return dataclasses.replace(self, members=members)
