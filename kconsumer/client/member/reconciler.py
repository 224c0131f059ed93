"""Reconciliation: turning the target assignment from the coordinator into owned partitions.

The coordinator sends the member's assignment by topic id. Names are resolved through the metadata
the runtime reports (and the names of topics already owned); for ids it cannot resolve yet, the
reconciler asks for a metadata refresh and, as Kafka's consumer does, reconciles the part it can
resolve in the meantime, so a revocation is never held up by an unrelated new topic. (Only when a
local assignor's AssignmentMetadata is pending does the assign step wait for every name, so that
``on_assignment`` sees the whole target before any ``on_partitions_assigned`` of that epoch.) Ids
still unknown after a metadata update are asked for again after the retry backoff.

One reconciliation is a sequence of *steps*, one at a time, each followed by an acknowledgement
when it changed the owned set (the core sends that heartbeat at once). The reconciler decides; the
core acts: every input is answered with the next `Need` of the step (stop fetching, commit, a
callback, an offset fetch, start fetching, a metadata refresh; see `operations`) or a `Progress`,
and the core resumes it with `resume` when the need is met:

1. **Revoke** (owned - target), when anything is revoked:
   `StopFetching` (waits for `FetchingStopped`, which carries the positions) -> auto-commit of
   those positions (waits for the result) -> ``on_partitions_revoked`` (waits for it) -> the
   partitions leave the owned set -> acknowledge.
2. **Assign** (target - owned), after any revocation was acknowledged:
   ``on_assignment`` of the local assignor (once per epoch, with the AssignmentMetadata) ->
   ``on_partitions_assigned`` -> OffsetFetch of the committed offsets -> `StartFetching` at the
   committed offset, or per ``auto.offset.reset`` when none -> the partitions join the owned set ->
   acknowledge.

``on_partitions_assigned`` is also called, with no partitions, where Kafka's consumers call it with
nothing new: for the first assignment after (re)joining when it is empty (applications waiting for
their first assignment see it); after a revocation that adds nothing (the consumer protocol calls
it after every reconciliation); and, for a classic member, after every rebalance it completes.

A new target arriving while a step runs is stored; the step finishes, then the next step is planned
from the newest target. So a partition revoked by a later target after its ``on_partitions_assigned``
gets its ``on_partitions_revoked`` rather than silently disappearing.

**A callback that raises** does not stop the reconciliation: the exception goes to the application
(the consumer facade raises it from the poll that ran the callback, wrapped in KafkaException), and
the step carries on as if the callback had returned. The alternative, leaving the member stuck in
RECONCILING until the coordinator's rebalance timeout fences it (what Kafka's consumer does), stalls
the whole group for up to ``max.poll.interval.ms`` because of one application bug; we prefer a
reported error and a group that keeps moving.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ...protocol.uuid import Uuid
from .backoff import ExponentialBackoff, Retry
from .model import (
    TOPIC_GONE_OFFSET,
    AssignmentMetadata,
    CallbackKind,
    FetchPosition,
    OffsetReset,
    PartitionOffset,
    TopicIdPartition,
    sort_partitions,
)
from .operations import (
    CallbackNeed,
    CommitNeed,
    NamesNeed,
    Need,
    OffsetsNeed,
    Outcome,
    StartNeed,
    StopNeed,
)


def _by_bytes(ids: Iterable[Uuid]) -> tuple[Uuid, ...]:
    return tuple(sorted(ids, key=lambda u: u.bytes))


class Progress(enum.Enum):
    """Where the reconciliation stands after an input."""

    IDLE = "idle"
    """Nothing left to do: the owned set is the (resolved) target."""
    WAITING = "waiting"
    """A step waits for a callback, a commit, an OffsetFetch, or metadata."""
    ACK = "ack"
    """A step changed the owned set: acknowledge it now."""


class StepKind(enum.Enum):
    """The two kinds of step."""

    REVOKE = "revoke"
    ASSIGN = "assign"


class Phase(enum.Enum):
    """What a step does next (after the need it waits for, if any, is met)."""

    STOP = "stop"
    COMMIT = "commit"
    ON_ASSIGNMENT = "on_assignment"
    CALLBACK = "callback"
    FETCH_OFFSETS = "fetch_offsets"
    START = "start"
    FINISH = "finish"


@dataclass
class Step:
    """One revoke or assign step in progress."""

    kind: StepKind
    partitions: tuple[TopicIdPartition, ...]
    phase: Phase
    #: The need the step waits for (None while it runs).
    waiting: Need | None = None
    #: ASSIGN: the application was (or may have been) told about `partitions`.
    told: bool = False
    #: REVOKE: on_partitions_revoked was asked for `partitions`.
    revoke_called: bool = False
    #: REVOKE: fetching stopped (the stop came back), with these positions.
    stopped: bool = False
    positions: tuple[PartitionOffset, ...] = ()
    #: ASSIGN: where fetching starts, once the committed offsets are known.
    starts: tuple[FetchPosition, ...] = ()


#: What the reconciler answers an input with: the next need of the step, or where it stands.
Next = Need | Progress


@dataclass(frozen=True)
class Release:
    """Partitions to give up when leaving or losing the assignment."""

    stop: tuple[TopicIdPartition, ...]
    """Still being fetched: stop them first."""
    owned: tuple[TopicIdPartition, ...]
    """Owned (acknowledged) partitions: the ones a leave commits."""
    callback: tuple[TopicIdPartition, ...]
    """The ones the application believes it has and has not yet been told it lost/revoked."""
    positions: tuple[PartitionOffset, ...] = ()
    """Positions of partitions an interrupted revoke step had already stopped."""
    revoking_callback: bool = False
    """An interrupted revoke step's ``on_partitions_revoked`` was asked for and has not returned:
    a leave gives its partitions up only once it has (the core hands that operation over)."""


class Reconciler:
    """Owned partitions, the target, and the step machine between them."""

    def __init__(self, offset_reset: OffsetReset, backoff: ExponentialBackoff) -> None:
        self._offset_reset = offset_reset
        self._owned: dict[tuple[Uuid, int], TopicIdPartition] = {}
        self._names: dict[Uuid, str] = {}
        self._target: dict[Uuid, frozenset[int]] | None = None
        self._pending_metadata: AssignmentMetadata | None = None
        #: Partitions of the target not released to this member yet, for on_assignment.
        self._pending_for_callback: dict[Uuid, frozenset[int]] = {}
        self._metadata_epoch = -1
        self._target_for_callback: tuple[TopicIdPartition, ...] = ()
        #: An on_partitions_assigned call is owed even with no new partition (see the module doc).
        self._assigned_owed = True
        self._classic = False
        self._has_assignors = False
        self.step: Step | None = None
        self._unresolved_asked: frozenset[Uuid] = frozenset()
        self._metadata_retry = Retry(backoff)
        self._metadata_retry_at: int | None = None

    # -- inspection -----------------------------------------------------------------------------

    @property
    def owned(self) -> frozenset[TopicIdPartition]:
        """The partitions the member owns."""
        return frozenset(self._owned.values())

    @property
    def reported(self) -> frozenset[TopicIdPartition]:
        """What heartbeats report as owned: the owned partitions, the partitions of an assign step
        under way, and the target (the partitions the coordinator granted, resolved or not; an
        unresolved one has an empty topic name here). The member may still start fetching any of
        them, so the coordinator must keep them pending revocation (not hand them to another
        member) until this member stops reporting them, which it does for the target's partitions
        as soon as a newer target drops them. Revoked partitions are in none of these sets."""
        reported = dict(self._owned)
        step = self.step
        if step is not None and step.kind is StepKind.ASSIGN:
            reported.update((tp.key, tp) for tp in step.partitions)
        for topic_id, partitions in (self._target or {}).items():
            name = self._names.get(topic_id, "")
            for partition in partitions:
                reported.setdefault((topic_id, partition), TopicIdPartition(topic_id, name, partition))
        return frozenset(reported.values())

    @property
    def revoking(self) -> frozenset[TopicIdPartition]:
        """The owned partitions of a revoke step under way (fetching them stopped or stopping)."""
        step = self.step
        if step is None or step.kind is not StepKind.REVOKE:
            return frozenset()
        return frozenset(step.partitions)

    @property
    def target(self) -> Mapping[Uuid, frozenset[int]] | None:
        """The last target received since (re)joining, by topic id."""
        return self._target

    @property
    def names(self) -> Mapping[Uuid, str]:
        """The topic names the reconciler knows, by id."""
        return self._names

    # -- inputs ---------------------------------------------------------------------------------

    def configure(self, has_assignors: bool, classic: bool = False) -> None:
        """Whether a local assignor is configured (on_assignment is called only then), and
        whether the member speaks the classic protocol (on_partitions_assigned follows every
        rebalance it completes, rather than every reconciliation that revoked)."""
        self._has_assignors = has_assignors
        self._classic = classic

    def receive(
        self,
        assignment: Mapping[Uuid, Iterable[int]],
        metadata: AssignmentMetadata | None,
        member_epoch: int,
        pending: Mapping[Uuid, Iterable[int]] | None = None,
        release_only: bool = False,
    ) -> None:
        """A new target from a heartbeat response (topics with no partitions are dropped).
        `pending` are the response's PendingTopicPartitions: on_assignment sees them too (the
        member's whole target, seed: "contains partitions that are not revoked yet").
        A classic member's target is a SyncGroup's assignment, which completes a rebalance,
        unless `release_only`: what it keeps of its own before it joins again."""
        self._target = {tid: frozenset(parts) for tid, parts in assignment.items() if parts}
        self._assigned_owed = self._assigned_owed or (self._classic and not release_only)
        if metadata is not None and self._has_assignors and member_epoch > self._metadata_epoch:
            self._metadata_epoch = member_epoch
            self._pending_metadata = metadata
            self._pending_for_callback = {
                tid: frozenset(parts) for tid, parts in (pending or {}).items() if parts
            }

    def learn_names(self, names: Mapping[Uuid, str], now_ms: int) -> None:
        """Topic names from a metadata update; schedules a new refresh if ids stay unknown."""
        self._names.update(names)
        if self._unresolved_asked and self._unresolved() & self._unresolved_asked:
            self._metadata_retry_at = self._metadata_retry.failed(now_ms)
        else:
            self._metadata_retry.succeeded()
            self._metadata_retry_at = None

    def rejoin(self) -> None:
        """Forget the target (the member joins again with nothing owned)."""
        assert not self._owned and self.step is None, "rejoining with an assignment"
        self._target = None
        self._pending_metadata = None
        self._metadata_epoch = -1
        self._assigned_owed = True
        self._unresolved_asked = frozenset()
        self._metadata_retry_at = None

    # -- planning -------------------------------------------------------------------------------

    def _unresolved(self) -> frozenset[Uuid]:
        if self._target is None:
            return frozenset()
        ids = set(self._target)
        if self._pending_metadata is not None:
            ids.update(self._pending_for_callback)
        return frozenset(tid for tid in ids if tid not in self._names)

    def _resolved_target(self) -> list[TopicIdPartition]:
        assert self._target is not None
        return [
            TopicIdPartition(tid, self._names[tid], p)
            for tid, parts in self._target.items()
            if tid in self._names
            for p in parts
        ]

    def advance(self) -> Next:
        """Plan the next step if none runs: its first need; IDLE when the target is reconciled,
        WAITING while a step waits or names are missing."""
        if self.step is not None:
            return Progress.WAITING
        while self.step is None:
            if self._target is None:
                return Progress.IDLE
            unresolved = self._unresolved()
            newly_unresolved = unresolved - self._unresolved_asked
            self._unresolved_asked = unresolved
            if newly_unresolved:
                return NamesNeed(_by_bytes(unresolved))  # resumed at once: planning goes on
            target_keys = {(tid, p) for tid, parts in self._target.items() for p in parts}
            revoked = sort_partitions(tp for key, tp in self._owned.items() if key not in target_keys)
            if revoked:
                self.step = Step(StepKind.REVOKE, revoked, Phase.STOP)
                return self._run()
            resolved = self._resolved_target()
            added = sort_partitions(tp for tp in resolved if tp.key not in self._owned)
            # on_assignment sees the whole target and comes before on_partitions_assigned: with
            # assignment metadata pending, wait for every name. So does the empty first assignment.
            metadata = self._pending_metadata is not None
            if (
                (metadata and not unresolved)
                or (added and not metadata)
                or (self._assigned_owed and not unresolved)
            ):
                pending = [
                    TopicIdPartition(tid, self._names[tid], p)
                    for tid, parts in self._pending_for_callback.items()
                    if tid in self._names
                    for p in parts
                ]
                self._target_for_callback = sort_partitions({*resolved, *pending})
                self.step = Step(StepKind.ASSIGN, added, Phase.ON_ASSIGNMENT)
                outcome = self._run()
                if outcome is not Progress.IDLE:
                    return outcome
                continue
            return Progress.WAITING if unresolved else Progress.IDLE
        return Progress.WAITING

    def resume(self, outcome: Outcome = None) -> Next:
        """The need last answered was met (`outcome`: positions after a stop, committed offsets
        after a fetch, else None): go on with the step, or plan the next one."""
        step = self.step
        if step is None:
            return self.advance()
        need, step.waiting = step.waiting, None
        if isinstance(need, StopNeed):
            step.stopped = True
            step.positions = outcome if isinstance(outcome, tuple) else ()
        elif isinstance(need, OffsetsNeed):
            assert isinstance(outcome, Mapping)
            step.starts = self._start_positions(step.partitions, outcome)
        result = self._run()
        return self.advance() if result is Progress.IDLE else result

    def _run(self) -> Next:
        """Drive the current step until it needs something or ends. `phase` is the next thing to
        do; a need returned is recorded as what the step waits for."""
        step = self.step
        assert step is not None
        need = self._next_need(step)
        if isinstance(need, Progress):
            return need
        step.waiting = need
        return need

    def _next_need(self, step: Step) -> Next:
        while True:
            phase = step.phase
            if step.kind is StepKind.REVOKE:
                if phase is Phase.STOP:
                    step.phase = Phase.COMMIT
                    return StopNeed(step.partitions)
                if phase is Phase.COMMIT:
                    step.phase = Phase.CALLBACK
                    return CommitNeed(step.partitions, step.positions)
                if phase is Phase.CALLBACK:
                    step.phase = Phase.FINISH
                    step.revoke_called = True
                    return CallbackNeed(CallbackKind.REVOKED, step.partitions)
                for tp in step.partitions:
                    self._owned.pop(tp.key, None)
                self._assigned_owed = self._assigned_owed or not self._classic  # a reconciliation
                self.step = None
                return Progress.ACK
            if phase is Phase.ON_ASSIGNMENT:
                step.phase = Phase.CALLBACK
                metadata, self._pending_metadata = self._pending_metadata, None
                if metadata is not None:
                    return CallbackNeed(CallbackKind.ASSIGNMENT, self._target_for_callback, metadata)
            elif phase is Phase.CALLBACK:
                step.phase = Phase.FETCH_OFFSETS
                if step.partitions or self._assigned_owed:
                    self._assigned_owed = False
                    step.told = True
                    return CallbackNeed(CallbackKind.ASSIGNED, step.partitions)
            elif phase is Phase.FETCH_OFFSETS and step.partitions:
                step.phase = Phase.START
                return OffsetsNeed(step.partitions)
            elif phase is Phase.START:
                step.phase = Phase.FINISH
                return StartNeed(step.starts)
            elif phase is Phase.FINISH:
                for tp in step.partitions:
                    self._owned[tp.key] = tp
                self.step = None
                return Progress.ACK
            else:
                self.step = None
                return Progress.IDLE

    def _start_positions(
        self,
        partitions: tuple[TopicIdPartition, ...],
        offsets: Mapping[tuple[Uuid, int], PartitionOffset],
    ) -> tuple[FetchPosition, ...]:
        """The committed offset of each partition, or the reset policy where none is committed;
        none for a partition whose topic is gone (`TOPIC_GONE_OFFSET`: owned, never fetched,
        until the next assignment takes it away)."""
        positions = []
        for tp in partitions:
            committed = offsets.get(tp.key)
            if committed is not None and committed.offset == TOPIC_GONE_OFFSET:
                continue
            if committed is not None and committed.offset >= 0:
                positions.append(FetchPosition(tp, committed.offset, committed.leader_epoch))
            else:
                positions.append(FetchPosition(tp, self._offset_reset))
        return tuple(positions)

    # -- metadata timer -------------------------------------------------------------------------

    def timers(self, now_ms: int) -> NamesNeed | None:
        """Ask again for metadata of ids still unknown once the backoff ended."""
        if self._metadata_retry_at is not None and now_ms >= self._metadata_retry_at:
            self._metadata_retry_at = None
            unresolved = self._unresolved()
            if unresolved:
                self._unresolved_asked = unresolved
                return NamesNeed(_by_bytes(unresolved))
        return None

    def next_deadline(self) -> int | None:
        """When `timers` has something to do."""
        return self._metadata_retry_at

    # -- giving partitions up -------------------------------------------------------------------

    def release(self, *, lost: bool) -> Release:
        """Give up everything (leave, fence, stale, fatal): ends any step and clears the target.

        For a revocation (`lost` False), partitions whose ``on_partitions_revoked`` was already
        asked for by an interrupted revoke step are not in `callback` again. The owned set is left
        as it is (a leave still commits it); call `drop_owned` when done. Whatever the step
        waited for is no longer awaited by the reconciler.
        """
        step, self.step = self.step, None
        revoking = set(step.partitions) if step and step.kind is StepKind.REVOKE else set()
        already_revoked = revoking if (step and step.revoke_called and not lost) else set()
        # Partitions of a revoke step whose stop is confirmed need no new stop; the others are
        # stopped again (the runtime reports the position a partition had when it first stopped).
        stopped = revoking if step and step.stopped else set()
        told = step.partitions if step and step.kind is StepKind.ASSIGN and step.told else ()
        owned = sort_partitions(self._owned.values())
        self._target = None
        self._pending_metadata = None
        self._metadata_retry_at = None
        self._unresolved_asked = frozenset()
        revoke_running = bool(already_revoked) and step is not None and step.waiting is not None
        return Release(
            stop=tuple(tp for tp in owned if tp not in stopped),
            owned=owned,
            callback=sort_partitions([tp for tp in owned if tp not in already_revoked] + list(told)),
            positions=step.positions if step is not None and step.stopped else (),
            revoking_callback=revoke_running,
        )

    def drop_owned(self) -> None:
        """Forget every owned partition (after a release)."""
        self._owned.clear()
