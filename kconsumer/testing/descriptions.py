"""What a test sees of a consumer group: `GroupDescription` and its `MemberDescription`s, the same
type from the reference cluster (its coordinator's state) and from Apache Kafka (its
ConsumerGroupDescribe answer)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

PartitionsByTopic = Mapping[str, tuple[int, ...]]


@dataclass(frozen=True)
class MemberDescription:
    """One member of a consumer group, as the coordinator sees it right now."""

    member_id: str
    instance_id: str | None
    #: The member's epoch (it reaches the group's assignment epoch once reconciled).
    member_epoch: int
    #: Reconciliation state: ``stable``, ``unrevoked_partitions``, ``unreleased_partitions``,
    #: ``unknown`` (the reference cluster); Apache Kafka's describe only tells ``stable`` from
    #: ``reconciling``.
    state: str
    #: Partitions the member may use now, by topic name.
    assignment: PartitionsByTopic
    #: Partitions it must still give up (it owns them until it acknowledges the revocation).
    pending_revocation: PartitionsByTopic
    #: Its partitions in the target assignment.
    target: PartitionsByTopic
    client_id: str
    client_host: str
    subscribed_topics: tuple[str, ...]
    subscribed_regex: str | None

    @property
    def owned(self) -> set[tuple[str, int]]:
        """Every (topic, partition) the member holds: assigned or pending revocation."""
        held = {(t, p) for t, parts in self.assignment.items() for p in parts}
        held.update((t, p) for t, parts in self.pending_revocation.items() for p in parts)
        return held


@dataclass(frozen=True)
class GroupDescription:
    """A consumer group: epochs, state and members (by member id)."""

    group_id: str
    #: The group epoch.
    epoch: int
    #: ``Empty``, ``Assigning``, ``Reconciling`` or ``Stable``.
    state: str
    #: The epoch of the current target assignment.
    assignment_epoch: int
    members: Mapping[str, MemberDescription] = field(default_factory=dict)
    #: The node id of the broker coordinating the group.
    coordinator: int = 1

    @property
    def owners(self) -> dict[tuple[str, int], list[str]]:
        """(topic, partition) → the member ids holding it (more than one would be a bug)."""
        out: dict[tuple[str, int], list[str]] = {}
        for member in self.members.values():
            for tp in member.owned:
                out.setdefault(tp, []).append(member.member_id)
        return out


@dataclass(frozen=True)
class ClassicMemberDescription:
    """One member of a classic group, as DescribeGroups shows it."""

    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    #: Its metadata for the group's chosen protocol (the consumer protocol's subscription).
    protocol_metadata: bytes
    #: What the leader assigned it (the consumer protocol's assignment bytes).
    assignment: bytes

    def metadata(self, protocol: str | None = None) -> bytes:
        """Its metadata for the group's protocol (the only one a coordinator describes)."""
        return self.protocol_metadata


@dataclass(frozen=True)
class ClassicGroupDescription:
    """A classic group: state (``Empty``, ``PreparingRebalance``, ``CompletingRebalance``,
    ``Stable``), protocol type and chosen protocol, members by member id. The chosen protocol and
    the members' metadata are those of a Stable group: during a rebalance both are empty (as
    Kafka's DescribeGroups shows them); the members' last assignments are always there."""

    group_id: str
    state: str
    protocol_type: str
    protocol_name: str
    members: Mapping[str, ClassicMemberDescription] = field(default_factory=dict)
