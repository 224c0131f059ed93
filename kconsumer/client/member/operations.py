"""What the member core's parts ask of it, and what it waits for.

The reconciler and the leave sequence decide *what* happens next; only the core makes things
happen. They answer every input with a **need** (a value, defined here) or with a result of their
own; the core performs the need and, when the need takes time (the application thread must stop
fetching or run a callback, a commit or an offset fetch must come back), records a `Pending`
operation under the id its effect carries. The event that completes that id (`FetchingStopped`,
`CallbackCompleted`, a finished commit or offset fetch) finds the `Pending` and, through its
`Waiter`, the part that resumes; no chain of id comparisons decides who was waiting.

A need the core can satisfy at once (a callback the application did not register, a commit with
auto-commit off, starting to fetch, a metadata refresh) is performed and the part resumes
immediately.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

from ...protocol.uuid import Uuid
from .commits import CommitManager, CommitOutput, Membership
from .effects import Effect, InvokeCallback, RefreshMetadata, StartFetching, StopFetching
from .model import (
    AssignmentMetadata,
    CallbackKind,
    CommitReason,
    FetchPosition,
    Ids,
    MemberConfig,
    PartitionOffset,
    TopicIdPartition,
    sort_partitions,
)


class Waiter(enum.Enum):
    """Which part of the core resumes when a pending operation completes."""

    RECONCILIATION = "reconciliation"
    """A revoke or assign step of the reconciler."""
    LEAVE = "leave"
    """The leave sequence (unsubscribe, close)."""
    REJOIN = "rejoin"
    """After losing the partitions (fenced, poll timer expired): the member rejoins once the
    application thread has stopped fetching them and run ``on_partitions_lost``."""


@dataclass(frozen=True)
class StopNeed:
    """Stop fetching `partitions`; resumes with their positions (`PartitionOffset` tuple)."""

    partitions: tuple[TopicIdPartition, ...]


@dataclass(frozen=True)
class CommitNeed:
    """Auto-commit the `positions` of `partitions` (skipped with auto-commit off or nothing to commit)."""

    partitions: tuple[TopicIdPartition, ...]
    positions: tuple[PartitionOffset, ...]


@dataclass(frozen=True)
class CallbackNeed:
    """Run an application callback (skipped when the application did not register `kind`)."""

    kind: CallbackKind
    partitions: tuple[TopicIdPartition, ...]
    metadata: AssignmentMetadata | None = None


@dataclass(frozen=True)
class OffsetsNeed:
    """Fetch the committed offsets of `partitions`; resumes with them, by partition key."""

    partitions: tuple[TopicIdPartition, ...]


@dataclass(frozen=True)
class StartNeed:
    """Start fetching at these positions (done at once)."""

    positions: tuple[FetchPosition, ...]


@dataclass(frozen=True)
class NamesNeed:
    """Ask for the names of these topic ids (a metadata refresh; done at once)."""

    topic_ids: tuple[Uuid, ...]


#: Everything a part of the core may ask for.
Need = StopNeed | CommitNeed | CallbackNeed | OffsetsNeed | StartNeed | NamesNeed
#: The same, for isinstance checks.
NEEDS = (StopNeed, CommitNeed, CallbackNeed, OffsetsNeed, StartNeed, NamesNeed)

#: What a resumed part receives: positions after a stop, committed offsets after a fetch, else None.
Outcome = tuple[PartitionOffset, ...] | Mapping[tuple[Uuid, int], PartitionOffset] | None


@dataclass(frozen=True)
class Pending:
    """An operation under way: the id its effect carries, what it was for, and who resumes."""

    op_id: int
    waiter: Waiter
    need: Need


class Operations:
    """Performs the needs of the core's parts and keeps what they wait for.

    `perform` turns a need into effects and, when it takes time, the id of the operation that will
    complete it; the core records it with `wait`. Completions come back through `complete` (stops
    and callbacks, from the application thread) or, for commits and offset fetches, through the
    commit manager's outputs (`absorb`), queued until `take_completed`.
    """

    def __init__(self, config: MemberConfig, commits: CommitManager, ids: Ids, has_assignors: bool) -> None:
        self._config = config
        self.commits = commits
        self._ids = ids
        self._has_assignors = has_assignors
        #: The rebalance-listener callbacks the application registered.
        self.callbacks: frozenset[CallbackKind] = frozenset()
        self._pending: dict[int, Pending] = {}
        self._completed: list[tuple[int, Outcome]] = []

    def perform(
        self,
        need: Need,
        member: Membership,
        now_ms: int,
        *,
        closing: bool = False,
        close_deadline_ms: int | None = None,
    ) -> tuple[int | None, list[Effect]]:
        """The effects of `need` and the id of the operation that completes it (None if it is done
        already, or nothing was needed: an unregistered callback, auto-commit off, no position).
        `closing`: a leave's commit is the CLOSE commit, bounded by `close_deadline_ms`."""
        if isinstance(need, StopNeed):
            stop_id = self._ids.next()
            return stop_id, [StopFetching(stop_id, need.partitions)]
        if isinstance(need, CallbackNeed):
            if need.kind is CallbackKind.ASSIGNMENT:
                registered = self._has_assignors
            else:
                registered = need.kind in self.callbacks
            if not registered:
                return None, []
            callback_id = self._ids.next()
            partitions = sort_partitions(need.partitions)
            return callback_id, [InvokeCallback(callback_id, need.kind, partitions, need.metadata)]
        if isinstance(need, CommitNeed):
            wanted = {tp.key for tp in need.partitions}
            offsets = tuple(p for p in need.positions if p.partition.key in wanted)
            if not self._config.auto_commit or not offsets:
                return None, []
            output = self.commits.commit(
                CommitReason.CLOSE if closing else CommitReason.REVOCATION,
                now_ms,
                member,
                offsets=offsets,
                deadline_ms=close_deadline_ms if closing else None,
            )
            return output.started, self.absorb(output)
        if isinstance(need, OffsetsNeed):
            output = self.commits.fetch(need.partitions, member)
            return output.started, self.absorb(output)
        if isinstance(need, StartNeed):
            return None, [StartFetching(need.positions)]
        return None, [RefreshMetadata(topic_ids=need.topic_ids)]

    def wait(self, op_id: int, waiter: Waiter, need: Need) -> None:
        """`waiter` resumes when operation `op_id` completes."""
        self._pending[op_id] = Pending(op_id, waiter, need)

    def complete(self, op_id: int) -> Pending | None:
        """Operation `op_id` completed: what waited for it (None: nothing did)."""
        return self._pending.pop(op_id, None)

    def drop(self, waiter: Waiter | None = None) -> list[Pending]:
        """Stop waiting for the operations of `waiter` (all when None); returns them. An offset
        fetch nobody waits for any more is cancelled."""
        dropped = [p for p in self._pending.values() if waiter is None or p.waiter is waiter]
        for pending in dropped:
            del self._pending[pending.op_id]
            if isinstance(pending.need, OffsetsNeed):
                self.commits.cancel_fetch(pending.op_id)
        return dropped

    def absorb(self, output: CommitOutput) -> list[Effect]:
        """A commit manager's effects; the commits and the fetch it ended are queued as completed."""
        self._completed.extend((commit_id, None) for commit_id in output.finished)
        if output.fetched is not None:
            self._completed.append(output.fetched)
        return output.effects

    def take_completed(self) -> list[tuple[Pending, Outcome]]:
        """The queued completions that something waits for, in order (the queue is emptied)."""
        completed, self._completed = self._completed, []
        found = [(self._pending.pop(op_id, None), outcome) for op_id, outcome in completed]
        return [(pending, outcome) for pending, outcome in found if pending is not None]
