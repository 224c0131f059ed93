"""The by-topic-id interface of assignment algorithms (`uniform`, `range`, custom ones).

The coordinator runs these algorithms as its server-side assignors: it builds a `GroupSpec` from
its members' subscriptions (topic names and resolved regexes, already turned into topic ids that
exist in the metadata image) and their current *target* assignments, calls `ServerAssignor.assign`,
and diffs the result against the previous target. The client's built-in `RangeAssignor` and
`UniformAssignor` (`kconsumer.assignment.builtin`) run the same algorithms on a member.
Assignors are pure: same spec in, same assignment out (no clock, no randomness).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from ..protocol.uuid import Uuid

#: A member's partitions, by topic id. Topics with no partition are left out. (Not the wire
#: struct `kconsumer.protocol.messages.consumer_group.Assignment`.)
PartitionsByTopicId = Mapping[Uuid, frozenset[int]]


class SubscriptionType(enum.Enum):
    """HOMOGENEOUS when every member subscribes to the same topics, else HETEROGENEOUS."""

    HOMOGENEOUS = "homogeneous"
    HETEROGENEOUS = "heterogeneous"

    @classmethod
    def of(cls, subscriptions: Iterable[frozenset[Uuid]]) -> SubscriptionType:
        """The type of a group whose members subscribe to `subscriptions` (one set per member)."""
        return cls.HOMOGENEOUS if len(set(subscriptions)) <= 1 else cls.HETEROGENEOUS


@dataclass(frozen=True)
class TopicMetadata:
    """A topic as the metadata image knows it."""

    topic_id: Uuid
    name: str
    num_partitions: int


@dataclass(frozen=True)
class MemberSpec:
    """One member as an assignor sees it."""

    member_id: str
    instance_id: str | None
    rack_id: str | None
    subscribed_topic_ids: frozenset[Uuid]
    #: The member's current target assignment (what the previous computation gave it).
    assignment: PartitionsByTopicId


@dataclass(frozen=True)
class GroupSpec:
    """Everything an assignor may use. `topics` holds every subscribed topic that exists."""

    members: Mapping[str, MemberSpec]
    topics: Mapping[Uuid, TopicMetadata]
    subscription_type: SubscriptionType


class PartitionAssignorError(Exception):
    """The assignor cannot compute an assignment (for example a subscribed topic vanished)."""


class ServerAssignor(Protocol):
    """An assignment algorithm by topic id, selected by `name`: the coordinator runs it as a
    server-side assignor (``group.consumer.assignors``), `kconsumer.assignment.builtin`'s
    `ServerAlgorithmAssignor` runs it on a member."""

    @property
    def name(self) -> str: ...

    def assign(self, spec: GroupSpec) -> dict[str, PartitionsByTopicId]:
        """The new target: an entry for every member of `spec` (empty mappings allowed).

        Every partition of every topic that at least one member subscribes to is assigned to
        exactly one member that subscribes to it.
        """
        ...
