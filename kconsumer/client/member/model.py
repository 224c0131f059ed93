"""Value types shared by the member core's events, effects and modules.

All of them are small frozen dataclasses or enums: they cross the boundary between the sans-IO core
and the runtime that executes its effects.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ...assignment.announcements import AnnouncedAssignor, AssignorOutput
from ...protocol.uuid import Uuid

#: The shared types under their old member-side names (the member code will move to the new ones).
ClientAssignor = AnnouncedAssignor
AssignmentMetadata = AssignorOutput


class Ids:
    """The core's single source of request, callback and commit ids (1, 2, 3, ...)."""

    def __init__(self) -> None:
        self._last = 0

    def next(self) -> int:
        """A new id, never returned before by this source."""
        self._last += 1
        return self._last


@dataclass(frozen=True)
class ClassicSettings:
    """What a member of the classic protocol (``group.protocol=classic``) needs besides the rest:
    its ``partition.assignment.strategy`` names in preference order, all eager or all cooperative,
    ``session.timeout.ms`` and ``heartbeat.interval.ms``."""

    strategies: tuple[str, ...] = ("range", "roundrobin")
    cooperative: bool = False
    #: The application's own strategies (`PartitionAssignor`s, run off the session like the
    #: consumer protocol's local assignors) by name: the user data their subscription carries.
    local_strategies: Mapping[str, bytes] = field(default_factory=dict)
    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 3_000
    metadata_refresh_ms: int = 300_000
    """How often a member re-reads its topics' metadata (``topic.metadata.refresh.interval.ms``):
    it rejoins when a topic's id or partition count changed since its last assignment."""


@dataclass(frozen=True)
class ClassicMember:
    """A member of a classic group as JoinGroup tells the leader: its id, instance id and its
    subscription (ConsumerProtocol bytes)."""

    member_id: str
    instance_id: str | None
    metadata: bytes


@dataclass(frozen=True)
class TopicIdPartition:
    """One partition, by topic id and (resolved) topic name.

    Identity is the whole triple; the core never has two names for one topic id.
    """

    topic_id: Uuid
    topic: str
    partition: int

    @property
    def key(self) -> tuple[Uuid, int]:
        """(topic id, partition): how the coordinator identifies it."""
        return (self.topic_id, self.partition)

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


def sort_partitions(partitions: Iterable[TopicIdPartition]) -> tuple[TopicIdPartition, ...]:
    """A deterministic order: by topic name, then partition, then topic id."""
    return tuple(sorted(partitions, key=lambda tp: (tp.topic, tp.partition, tp.topic_id.bytes)))


class OffsetReset(enum.Enum):
    """What to do for a partition without a committed offset (``auto.offset.reset``)."""

    EARLIEST = "earliest"
    LATEST = "latest"
    NONE = "none"
    """Raise an error to the application (the runtime raises it from poll)."""


#: A committed offset as the member's offset fetch reports it for a partition whose topic is gone
#: (the coordinator answered UNKNOWN_TOPIC_ID or UNKNOWN_TOPIC_OR_PARTITION): not to be fetched.
TOPIC_GONE_OFFSET = -3


@dataclass(frozen=True)
class PartitionOffset:
    """An offset for a partition: to commit, or as read back by OffsetFetch (-1 = none committed,
    `TOPIC_GONE_OFFSET` = the topic is gone)."""

    partition: TopicIdPartition
    offset: int
    leader_epoch: int | None = None
    metadata: str = ""


@dataclass(frozen=True)
class FetchPosition:
    """Where the fetch path starts a partition: a committed offset, or a logical reset position."""

    partition: TopicIdPartition
    offset: int | OffsetReset
    leader_epoch: int | None = None


class CallbackKind(enum.Enum):
    """The application callbacks the core asks the runtime to run (on the application thread)."""

    ASSIGNMENT = "on_assignment"
    """``PartitionAssignor.on_assignment(metadata, partitions)`` of the local assignor, once per epoch."""
    ASSIGNED = "on_partitions_assigned"
    REVOKED = "on_partitions_revoked"
    LOST = "on_partitions_lost"


#: The rebalance-listener callbacks (the ones an application registers at subscribe time).
LISTENER_CALLBACKS: frozenset[CallbackKind] = frozenset(
    {CallbackKind.ASSIGNED, CallbackKind.REVOKED, CallbackKind.LOST}
)


class CommitReason(enum.Enum):
    """Why a commit is made; decides its retry rules (see `kconsumer.client.member.commits`)."""

    AUTO = "auto"
    """Periodic auto-commit (``auto.commit.interval.ms``)."""
    REVOCATION = "revocation"
    """Auto-commit of partitions about to be revoked (reconciliation or unsubscribe)."""
    CLOSE = "close"
    """Auto-commit of every owned partition on close."""
    USER_SYNC = "user_sync"
    """``Consumer.commit(asynchronous=False)``."""
    USER_ASYNC = "user_async"
    """``Consumer.commit(asynchronous=True)``."""


class LeaveReason(enum.Enum):
    """Why the member leaves its group."""

    UNSUBSCRIBE = "unsubscribe"
    CLOSE = "close"
    POLL_EXPIRED = "poll_expired"
    """``max.poll.interval.ms`` elapsed without a poll: partitions are lost, the member goes STALE."""


@dataclass(frozen=True)
class Subscription:
    """Topic names or one pattern (RE2 syntax, validated by the caller). Exactly one is used."""

    topics: tuple[str, ...] = ()
    pattern: str | None = None

    def __post_init__(self) -> None:
        if self.pattern is not None and self.topics:
            raise ValueError("a subscription is either topic names or one pattern, not both")
        if self.pattern == "":
            raise ValueError("an empty pattern subscribes to nothing: use unsubscribe")

    @property
    def is_empty(self) -> bool:
        """True when it subscribes to nothing."""
        return self.pattern is None and not self.topics


@dataclass(frozen=True)
class MemberConfig:
    """The configuration the member core needs (built from `ConsumerConfig` by the runtime).

    `rebalance_timeout_ms` is ``max.poll.interval.ms``: it is both the RebalanceTimeoutMs the
    heartbeat announces and the poll timer after which the member leaves and goes STALE.
    """

    group_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = 300_000
    server_assignor: str | None = None
    client_assignors: tuple[ClientAssignor, ...] = ()
    auto_commit: bool = True
    auto_commit_interval_ms: int = 5_000
    auto_offset_reset: OffsetReset = OffsetReset.LATEST
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 1_000
    default_api_timeout_ms: int = 60_000
    #: OffsetFetch asks for stable offsets (``isolation.level=read_committed``, KIP-447): a
    #: partition whose offset is pending in an open transaction is fetched again once it ends.
    require_stable: bool = False
    #: Regular heartbeats on the group's ticks once the driver sends the wall clock
    #: (``heartbeat.alignment=group``; `grid`); the consumer protocol only.
    align_heartbeats: bool = True
    classic: ClassicSettings | None = None
    """Set for ``group.protocol=classic`` (JoinGroup/SyncGroup); None for the consumer protocol."""

    def __post_init__(self) -> None:
        if not self.group_id:
            raise ValueError("the member core needs a group id")
        if self.server_assignor is not None and self.client_assignors:
            raise ValueError("a server assignor and client assignors are mutually exclusive")
        names = [a.name for a in self.client_assignors]
        if len(names) != len(set(names)):
            raise ValueError(f"client assignor names must be unique: {names}")
        for name in ("rebalance_timeout_ms", "auto_commit_interval_ms", "retry_backoff_ms"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive")
        if self.retry_backoff_max_ms < self.retry_backoff_ms:
            raise ValueError("retry_backoff_max_ms must be >= retry_backoff_ms")
        if self.classic is not None and (self.client_assignors or self.server_assignor):
            raise ValueError("the classic protocol assigns with partition.assignment.strategy only")

    @property
    def static(self) -> bool:
        """True for a static member (``group.instance.id`` set)."""
        return self.instance_id is not None

    @property
    def has_local_assignors(self) -> bool:
        """True when assignors of the application's run on this member (the consumer protocol's
        client-side assignors, or the classic protocol's own strategies): it then gets their
        ``on_assignment``."""
        return bool(self.client_assignors) or (
            self.classic is not None and bool(self.classic.local_strategies)
        )
