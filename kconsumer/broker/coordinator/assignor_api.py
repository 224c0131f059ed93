"""The interface between the coordinator and its server-side assignors (`uniform`, `range`, custom).

The coordinator builds a `GroupSpec` from its members' subscriptions (topic names and resolved
regexes, already turned into topic ids that exist in the metadata image) and their current *target*
assignments, calls `ServerAssignor.assign`, and diffs the result against the previous target.
Assignors are pure: same spec in, same assignment out (no clock, no randomness).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from ...protocol.uuid import Uuid

#: A member's partitions, by topic id. Topics with no partition are left out.
Assignment = Mapping[Uuid, frozenset[int]]

EMPTY_ASSIGNMENT: Assignment = {}


class SubscriptionType(enum.Enum):
    """HOMOGENEOUS when every member subscribes to the same topics, else HETEROGENEOUS (facts §5.6)."""

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
    assignment: Assignment


@dataclass(frozen=True)
class GroupSpec:
    """Everything an assignor may use. `topics` holds every subscribed topic that exists."""

    members: Mapping[str, MemberSpec]
    topics: Mapping[Uuid, TopicMetadata]
    subscription_type: SubscriptionType


class PartitionAssignorError(Exception):
    """The assignor cannot compute an assignment (for example a subscribed topic vanished)."""


class ServerAssignor(Protocol):
    """A server-side assignor, selected by `name` (``group.consumer.assignors``)."""

    @property
    def name(self) -> str: ...

    def assign(self, spec: GroupSpec) -> dict[str, Assignment]:
        """The new target: an entry for every member of `spec` (empty mappings allowed).

        Every partition of every topic that at least one member subscribes to is assigned to
        exactly one member that subscribes to it.
        """
        ...
