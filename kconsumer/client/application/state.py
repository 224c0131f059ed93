"""What the application core knows and remembers (`AppState`), the rebalance callbacks the
application registered (`Callbacks`), and the work a driver awaits for it (`Awaited`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError, Message, TopicPartition

from ..listener import ConsumerRebalanceListener
from ..member.effects import CommitFinished, InvokeCallback
from ..member.model import CallbackKind, LeaveReason, OffsetReset, PartitionOffset, TopicIdPartition


@dataclass
class Awaited:
    """Work the asyncio consumer awaits before anything else runs: a rebalance callback that
    returned an awaitable, or (`in_thread`) the blocking preparation of a StartFetching, to be
    run in a worker thread. `finish(result, error)` completes the work."""

    awaitable: Any
    finish: Callable[[Any, BaseException | None], None]
    in_thread: bool = False


Key = tuple[str, int]

#: A rebalance callback ``f(consumer, partitions)``; the asyncio consumer awaits what it returns.
PartitionsCallback = Callable[[Any, list[TopicPartition]], object]


@dataclass
class Callbacks:
    """The rebalance callbacks registered at subscribe time (confluent-kafka style or a listener)."""

    on_assign: PartitionsCallback | None = None
    on_revoke: PartitionsCallback | None = None
    on_lost: PartitionsCallback | None = None
    listener: ConsumerRebalanceListener | None = None
    #: ``PartitionAssignor.on_assignment`` runner, set when local assignors are configured.
    on_assignment: Callable[[InvokeCallback], None] | None = None

    def kinds(self) -> frozenset[CallbackKind]:
        """The listener callbacks the core must wait for."""
        if self.listener is not None:
            return frozenset({CallbackKind.ASSIGNED, CallbackKind.REVOKED, CallbackKind.LOST})
        kinds = set()
        if self.on_assign is not None:
            kinds.add(CallbackKind.ASSIGNED)
        if self.on_revoke is not None:
            kinds.update({CallbackKind.REVOKED, CallbackKind.LOST})  # lost goes to on_revoke by default
        if self.on_lost is not None:
            kinds.add(CallbackKind.LOST)
        return frozenset(kinds)


@dataclass
class AppState:
    """What the application thread knows: owned partitions, errors to raise, finished requests."""

    owned: dict[Key, TopicIdPartition] = field(default_factory=dict)
    #: Positions of partitions when they stopped, reported again if stopped twice.
    stopped: dict[Key, PartitionOffset] = field(default_factory=dict)
    #: Assigned partitions with no committed offset and auto.offset.reset=none: waiting for seek().
    awaiting_seek: dict[Key, TopicIdPartition] = field(default_factory=dict)
    errors: list[BaseException] = field(default_factory=list)
    fatal: BaseException | None = None
    #: The fatal error was handed out (as one _FATAL error event).
    fatal_reported: bool = False
    commits: dict[int, CommitFinished] = field(default_factory=dict)
    leaves: set[LeaveReason] = field(default_factory=set)
    #: The partitions of the on_partitions_revoked callback running now: still this member's until
    #: it returns, so commit() and store_offsets() inside it cover them.
    revoking: dict[Key, TopicIdPartition] = field(default_factory=dict)
    #: The partitions of the on_partitions_lost callback running now.
    losing: dict[Key, TopicIdPartition] = field(default_factory=dict)
    #: Partitions on_revoke was given (they are not reported to on_lost again, as librdkafka).
    revoked: set[Key] = field(default_factory=set)
    #: The partitions of the on_partitions_assigned callback running now, and the start offsets
    #: the application chose for them inside it (incremental_assign/assign/seek, as confluent-kafka
    #: allows), used instead of the committed offsets when fetching starts.
    assigning: dict[Key, TopicIdPartition] = field(default_factory=dict)
    start_at: dict[Key, int | OffsetReset] = field(default_factory=dict)
    #: Offsets store_offsets() stored (enable.auto.offset.store=false), until the partition goes.
    stored: dict[Key, PartitionOffset] = field(default_factory=dict)
    #: The offset this member last committed per partition since it got it: an auto-commit
    #: leaves out partitions that have not moved since (as librdkafka does).
    last_committed: dict[Key, int] = field(default_factory=dict)
    #: The offsets each commit() (by token) asked for, until it finishes.
    requested: dict[int, tuple[PartitionOffset, ...]] = field(default_factory=dict)
    #: Tokens of the synchronous commits whose callers wait; only their answers are kept (in
    #: `commits`) until the caller takes them or gives up.
    awaited_commits: set[int] = field(default_factory=set)
    #: Error events poll()/consume() hand out as messages (confluent-kafka's error messages).
    error_events: list[Message] = field(default_factory=list)
    #: on_commit reports decided on this thread, delivered by the next poll like the others.
    commit_reports: list[tuple[KafkaError | None, list[TopicPartition]]] = field(default_factory=list)

    def committable(self) -> tuple[TopicIdPartition, ...]:
        """What a commit of "every owned partition" covers: the owned ones and, inside
        on_partitions_revoked, the ones being revoked."""
        return (*self.owned.values(), *(tp for key, tp in self.revoking.items() if key not in self.owned))
