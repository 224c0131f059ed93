"""Reconciliation: turning the target assignment from the coordinator into owned partitions.

The coordinator sends the member's assignment by topic id. Names are resolved through the metadata
the runtime reports (and the names of topics already owned); for ids it cannot resolve yet, the
reconciler asks for a metadata refresh and, as Kafka's consumer does, reconciles the part it can
resolve in the meantime, so a revocation is never held up by an unrelated new topic. (Only when a
local assignor's AssignmentMetadata is pending does the assign step wait for every name, so that
``on_assignment`` sees the whole target before any ``on_partitions_assigned`` of that epoch.) Ids
still unknown after a metadata update are asked for again after the retry backoff.

One reconciliation is a sequence of *steps*, one at a time, each followed by an acknowledgement
when it changed the owned set (the core sends that heartbeat at once):

1. **Revoke** (owned - target), when anything is revoked:
   `StopFetching` (waits for `FetchingStopped`, which carries the positions) -> auto-commit of
   those positions (waits for the result) -> ``on_partitions_revoked`` (waits for it) -> the
   partitions leave the owned set -> acknowledge.
2. **Assign** (target - owned), after any revocation was acknowledged:
   ``on_assignment`` of the local assignor (once per epoch, with the AssignmentMetadata) ->
   ``on_partitions_assigned`` -> OffsetFetch of the committed offsets -> `StartFetching` at the
   committed offset, or per ``auto.offset.reset`` when none -> the partitions join the owned set ->
   acknowledge.

``on_partitions_assigned`` is also called once, with no partitions, for the first assignment after
(re)joining when that assignment is empty, as Kafka's consumer does, so applications waiting for
their first assignment see it.

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
from typing import Protocol

from ...protocol.uuid import Uuid
from .backoff import ExponentialBackoff, Retry
from .effects import Effect, RefreshMetadata, StartFetching
from .model import (
    AssignmentMetadata,
    CallbackKind,
    FetchPosition,
    OffsetReset,
    PartitionOffset,
    TopicIdPartition,
    sort_partitions,
)


def _by_bytes(ids: Iterable[Uuid]) -> tuple[Uuid, ...]:
    return tuple(sorted(ids, key=lambda u: u.bytes))


class ReconcileHost(Protocol):
    """What the reconciler needs from the core."""

    def emit(self, effect: Effect) -> None:
        """Append an effect to the current output."""

    def invoke_callback(
        self,
        kind: CallbackKind,
        partitions: tuple[TopicIdPartition, ...],
        metadata: AssignmentMetadata | None = None,
    ) -> int | None:
        """Emit `InvokeCallback` when the application registered `kind`; its id, or None if skipped."""

    def stop_fetching(self, partitions: tuple[TopicIdPartition, ...]) -> int:
        """Emit `StopFetching` for `partitions`; the id its `FetchingStopped` will carry."""

    def commit_revoked(
        self, partitions: tuple[TopicIdPartition, ...], positions: tuple[PartitionOffset, ...]
    ) -> int | None:
        """Auto-commit the `positions` of `partitions`; the commit id, or None if none started."""

    def fetch_committed(self, partitions: tuple[TopicIdPartition, ...]) -> int:
        """Start an OffsetFetch; returns its fetch id."""

    def cancel_fetch(self, fetch_id: int) -> None:
        """Forget an OffsetFetch."""


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
    """What a step is doing or waiting for."""

    COMMIT = "commit"
    ON_ASSIGNMENT = "on_assignment"
    CALLBACK = "callback"
    FETCH_OFFSETS = "fetch_offsets"
    FINISH = "finish"


@dataclass
class Step:
    """One revoke or assign step in progress."""

    kind: StepKind
    partitions: tuple[TopicIdPartition, ...]
    phase: Phase
    waiting: int | None = None
    #: ASSIGN: the application was (or may have been) told about `partitions`.
    told: bool = False
    #: REVOKE: on_partitions_revoked was emitted for `partitions`.
    revoke_called: bool = False
    #: REVOKE: fetching stopped (`FetchingStopped` arrived), with these positions.
    stopped: bool = False
    positions: tuple[PartitionOffset, ...] = ()


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
    revoking_callback: int | None = None
    """The ``on_partitions_revoked`` of an interrupted revoke step, emitted and not yet returned
    (a leave gives its partitions up only once it has)."""


class Reconciler:
    """Owned partitions, the target, and the step machine between them."""

    def __init__(self, host: ReconcileHost, offset_reset: OffsetReset, backoff: ExponentialBackoff) -> None:
        self._host = host
        self._offset_reset = offset_reset
        self._owned: dict[tuple[Uuid, int], TopicIdPartition] = {}
        self._names: dict[Uuid, str] = {}
        self._target: dict[Uuid, frozenset[int]] | None = None
        self._pending_metadata: AssignmentMetadata | None = None
        #: Partitions of the target not released to this member yet, for on_assignment.
        self._pending_for_callback: dict[Uuid, frozenset[int]] = {}
        self._metadata_epoch = -1
        self._target_for_callback: tuple[TopicIdPartition, ...] = ()
        self._first_assignment = True
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

    # -- inputs ---------------------------------------------------------------------------------

    def configure(self, has_assignors: bool) -> None:
        """Whether a local assignor is configured (on_assignment is called only then)."""
        self._has_assignors = has_assignors

    def receive(
        self,
        assignment: Mapping[Uuid, Iterable[int]],
        metadata: AssignmentMetadata | None,
        member_epoch: int,
        pending: Mapping[Uuid, Iterable[int]] | None = None,
    ) -> None:
        """A new target from a heartbeat response (topics with no partitions are dropped).
        `pending` are the response's PendingTopicPartitions: on_assignment sees them too (the
        member's whole target, seed: "contains partitions that are not revoked yet")."""
        self._target = {tid: frozenset(parts) for tid, parts in assignment.items() if parts}
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
        self._first_assignment = True
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

    def advance(self) -> Progress:
        """Start the next step if none runs; IDLE when the target is reconciled."""
        while self.step is None:
            if self._target is None:
                return Progress.IDLE
            unresolved = self._unresolved()
            if unresolved - self._unresolved_asked:
                self._host.emit(RefreshMetadata(topic_ids=_by_bytes(unresolved)))
            self._unresolved_asked = unresolved
            target_keys = {(tid, p) for tid, parts in self._target.items() for p in parts}
            revoked = sort_partitions(tp for key, tp in self._owned.items() if key not in target_keys)
            if revoked:
                self.step = Step(StepKind.REVOKE, revoked, Phase.COMMIT)
                self.step.waiting = self._host.stop_fetching(revoked)
                return Progress.WAITING
            resolved = self._resolved_target()
            added = sort_partitions(tp for tp in resolved if tp.key not in self._owned)
            # on_assignment sees the whole target and comes before on_partitions_assigned: with
            # assignment metadata pending, wait for every name. So does the empty first assignment.
            metadata = self._pending_metadata is not None
            if (
                (metadata and not unresolved)
                or (added and not metadata)
                or (self._first_assignment and not unresolved)
            ):
                pending = [
                    TopicIdPartition(tid, self._names[tid], p)
                    for tid, parts in self._pending_for_callback.items()
                    if tid in self._names
                    for p in parts
                ]
                self._target_for_callback = sort_partitions({*resolved, *pending})
                self.step = Step(StepKind.ASSIGN, added, Phase.ON_ASSIGNMENT)
                progress = self._run()
                if progress is not Progress.IDLE:
                    return progress
                continue
            return Progress.WAITING if unresolved else Progress.IDLE
        return Progress.WAITING

    def _run(self) -> Progress:
        """Drive the current step until it waits or ends. `phase` is the next thing to do;
        `waiting` the id of what the previous phase started."""
        step = self.step
        assert step is not None
        host = self._host
        while step.waiting is None:
            phase = step.phase
            if step.kind is StepKind.REVOKE:
                if phase is Phase.COMMIT:
                    step.phase = Phase.CALLBACK
                    step.waiting = host.commit_revoked(step.partitions, step.positions)
                elif phase is Phase.CALLBACK:
                    step.phase = Phase.FINISH
                    step.revoke_called = True
                    step.waiting = host.invoke_callback(CallbackKind.REVOKED, step.partitions)
                else:
                    for tp in step.partitions:
                        self._owned.pop(tp.key, None)
                    self.step = None
                    return Progress.ACK
            elif phase is Phase.ON_ASSIGNMENT:
                step.phase = Phase.CALLBACK
                metadata, self._pending_metadata = self._pending_metadata, None
                if metadata is not None:
                    step.waiting = host.invoke_callback(
                        CallbackKind.ASSIGNMENT, self._target_for_callback, metadata
                    )
            elif phase is Phase.CALLBACK:
                step.phase = Phase.FETCH_OFFSETS
                if step.partitions or self._first_assignment:
                    self._first_assignment = False
                    step.told = True
                    step.waiting = host.invoke_callback(CallbackKind.ASSIGNED, step.partitions)
            elif phase is Phase.FETCH_OFFSETS and step.partitions:
                step.phase = Phase.FINISH
                step.waiting = host.fetch_committed(step.partitions)
            else:
                self.step = None
                return Progress.IDLE
        return Progress.WAITING

    # -- completions ----------------------------------------------------------------------------

    def _complete(self, waiting_id: int) -> Progress | None:
        step = self.step
        if step is None or step.waiting != waiting_id:
            return None
        step.waiting = None
        progress = self._run()
        return self.advance() if progress is Progress.IDLE else progress

    def on_fetching_stopped(self, stop_id: int, positions: tuple[PartitionOffset, ...]) -> Progress | None:
        """The application thread stopped fetching a revoke step's partitions."""
        step = self.step
        if step is None or step.kind is not StepKind.REVOKE or step.waiting != stop_id:
            return None
        step.stopped = True
        step.positions = positions
        return self._complete(stop_id)

    def on_callback_done(self, callback_id: int) -> Progress | None:
        """A callback finished; None if no step waited for it."""
        return self._complete(callback_id)

    def on_commit_done(self, commit_id: int) -> Progress | None:
        """A revocation commit finished (success or not); None if no step waited for it."""
        return self._complete(commit_id)

    def on_committed_offsets(
        self, fetch_id: int, offsets: Mapping[tuple[Uuid, int], PartitionOffset]
    ) -> Progress | None:
        """Committed offsets arrived: start fetching the added partitions and own them."""
        step = self.step
        if step is None or step.kind is not StepKind.ASSIGN or step.waiting != fetch_id:
            return None
        assert step.phase is Phase.FINISH
        positions = []
        for tp in step.partitions:
            committed = offsets.get(tp.key)
            if committed is not None and committed.offset >= 0:
                positions.append(FetchPosition(tp, committed.offset, committed.leader_epoch))
            else:
                positions.append(FetchPosition(tp, self._offset_reset))
        self._host.emit(StartFetching(tuple(positions)))
        for tp in step.partitions:
            self._owned[tp.key] = tp
        self.step = None
        return Progress.ACK

    # -- metadata timer -------------------------------------------------------------------------

    def timers(self, now_ms: int) -> None:
        """Ask again for metadata of ids still unknown once the backoff ended."""
        if self._metadata_retry_at is not None and now_ms >= self._metadata_retry_at:
            self._metadata_retry_at = None
            unresolved = self._unresolved()
            if unresolved:
                self._unresolved_asked = unresolved
                self._host.emit(RefreshMetadata(topic_ids=_by_bytes(unresolved)))

    def next_deadline(self) -> int | None:
        """When `timers` has something to do."""
        return self._metadata_retry_at

    # -- giving partitions up -------------------------------------------------------------------

    def _abort_step(self) -> tuple[TopicIdPartition, ...]:
        """End the step in progress; returns the added partitions the application was told about."""
        step, self.step = self.step, None
        if step is None:
            return ()
        if step.kind is StepKind.ASSIGN:
            if step.phase is Phase.FINISH and step.waiting is not None:
                self._host.cancel_fetch(step.waiting)
            return step.partitions if step.told else ()
        return ()

    def release(self, *, lost: bool) -> Release:
        """Give up everything (leave, fence, stale, fatal): ends any step and clears the target.

        For a revocation (`lost` False), partitions whose ``on_partitions_revoked`` was already
        emitted by an interrupted revoke step are not in `callback` again. The owned set is left as
        it is (a leave still commits it); call `drop_owned` when done.
        """
        step = self.step
        revoking = set(step.partitions) if step and step.kind is StepKind.REVOKE else set()
        already_revoked = revoking if (step and step.revoke_called and not lost) else set()
        # Partitions of a revoke step whose stop is confirmed need no new stop; the others are
        # stopped again (the runtime reports the position a partition had when it first stopped).
        stopped = revoking if step and step.stopped else set()
        told = self._abort_step()
        owned = sort_partitions(self._owned.values())
        self._target = None
        self._pending_metadata = None
        self._metadata_retry_at = None
        self._unresolved_asked = frozenset()
        return Release(
            stop=tuple(tp for tp in owned if tp not in stopped),
            owned=owned,
            callback=sort_partitions([tp for tp in owned if tp not in already_revoked] + list(told)),
            positions=step.positions if step is not None and step.stopped else (),
            revoking_callback=step.waiting if already_revoked and step is not None else None,
        )

    def drop_owned(self) -> None:
        """Forget every owned partition (after a release)."""
        self._owned.clear()
