"""`WorkerCore`: a worker's membership as a sans-IO state machine (docs/workers.md).

Events in (`start`, `tick`, `answered`, `failed`, `callback_done`, `request_rebalance`, `close`),
effects out (`SendHeartbeat`, `RunCallback`, `ComputeAssignment`, `Failed`). The core owns what
the worker runs (`owned`: changed only when a callback finished) and what it announces; a driver
does the I/O, the clock and the application's callbacks, and feeds their outcomes back.

The rules it keeps:

- One callback at a time; units are stopped (``on_revoked`` / ``on_lost``) before the
  coordinator is told, and started (``on_assigned``) only once it gave them.
- Revocations first: when an answer both takes and gives units, the taken ones are revoked,
  confirmed, and only then are the given ones started.
- **The lease.** A worker that has had no heartbeat answered for `lease_ms` (counted from when
  the last answered heartbeat was *sent*) stops everything it runs (``on_lost``) and rejoins. The
  coordinator removes a silent worker only a session timeout after it last *received* from it,
  which is later; with `lease_ms` below the coordinator's session timeout, a worker cut off from
  the coordinator has stopped its units before any other worker may start them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from ..assignment.work_units import NO_UNITS, WorkUnits
from ..client.member.backoff import ExponentialBackoff
from ..client.member.transitions import TransitionTable
from ..errors import ErrorCode
from ..protocol.messages.consumer_group import LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH
from ..protocol.messages.worker_group import (
    ConnectGroupHeartbeatRequest,
    ConnectGroupHeartbeatResponse,
    WorkerAssignor,
)
from .computation import Note, work_fingerprint


class WorkerState(enum.Enum):
    UNJOINED = "unjoined"
    JOINING = "joining"
    STABLE = "stable"
    #: A callback runs (on_assigned or on_revoked).
    RECONCILING = "reconciling"
    #: on_lost runs: the worker lost its membership (fenced, or its lease ran out).
    LOSING = "losing"
    #: close(): stopping its units, then leaving.
    LEAVING = "leaving"
    CLOSED = "closed"
    #: An error the worker cannot recover from (see `WorkerCore.error`).
    FAILED = "failed"


_S = WorkerState
TRANSITIONS = TransitionTable[WorkerState](
    "worker",
    {
        _S.UNJOINED: frozenset(),
        _S.JOINING: frozenset({_S.UNJOINED, _S.LOSING, _S.STABLE, _S.RECONCILING}),
        _S.STABLE: frozenset({_S.JOINING, _S.RECONCILING}),
        _S.RECONCILING: frozenset({_S.JOINING, _S.STABLE}),
        _S.LOSING: frozenset({_S.JOINING, _S.STABLE, _S.RECONCILING}),
        _S.LEAVING: frozenset({_S.UNJOINED, _S.JOINING, _S.STABLE, _S.RECONCILING, _S.LOSING}),
        _S.CLOSED: frozenset({_S.UNJOINED, _S.LEAVING, _S.FAILED, _S.LOSING}),
        _S.FAILED: frozenset({_S.JOINING, _S.STABLE, _S.RECONCILING, _S.LOSING, _S.LEAVING}),
    },
)


class CallbackKind(enum.Enum):
    ASSIGNED = "on_assigned"
    REVOKED = "on_revoked"
    LOST = "on_lost"


@dataclass(frozen=True)
class SendHeartbeat:
    request: ConnectGroupHeartbeatRequest


@dataclass(frozen=True)
class RunCallback:
    kind: CallbackKind
    units: WorkUnits


@dataclass(frozen=True)
class ComputeAssignment:
    """The coordinator chose this worker: prepare, assign and install (at this epoch)."""

    member_epoch: int


@dataclass(frozen=True)
class AssignmentNote:
    """New assignment metadata. The driver reads the `computation.Note` in it: it asks for a
    rebalance when the declared work changed since, and at the time the note names."""

    metadata: bytes


@dataclass(frozen=True)
class Failed:
    error: ErrorCode
    message: str


Effect = SendHeartbeat | RunCallback | ComputeAssignment | AssignmentNote | Failed

#: Errors after which the worker abandons its units and joins again.
_FENCED = frozenset({ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID})
#: Errors after which it asks again later (the driver finds the coordinator again).
RETRIABLE = frozenset(
    {
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.REQUEST_TIMED_OUT,
    }
)


@dataclass(frozen=True)
class WorkerSettings:
    group_id: str
    member_id: str
    instance_id: str | None
    rebalance_timeout_ms: int
    lease_ms: int
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 1_000


class WorkerCore:
    """One worker's membership (see the module docstring)."""

    def __init__(self, settings: WorkerSettings, assignors: list[WorkerAssignor]) -> None:
        self.settings = settings
        self.assignors = assignors
        self.state = WorkerState.UNJOINED
        self.epoch = 0
        #: What the application runs (on_assigned done, on_revoked / on_lost not yet).
        self.owned: WorkUnits = NO_UNITS
        #: What the coordinator last said this worker may run.
        self.assigned: WorkUnits = NO_UNITS
        self.error: Failed | None = None
        #: What the assignor wrote for this worker with its current assignment.
        self.assignment_metadata = b""
        self.heartbeat_interval_ms = 1_000
        self._running: RunCallback | None = None
        self._in_flight = False
        self._leave_sent = False
        self._due_ms = 0
        self._full = True
        self._sent_owned: WorkUnits | None = None
        self._sent_assignors: list[WorkerAssignor] | None = None
        #: A rebalance reason not yet carried by an answered heartbeat (0: none), and the one
        #: the heartbeat in flight carries.
        self._reason = 0
        self._reason_in_flight = 0
        self._last_answered_sent_ms: int | None = None
        self._backoff = ExponentialBackoff(settings.retry_backoff_ms, settings.retry_backoff_max_ms)
        self._attempts = 0

    # -- queries --------------------------------------------------------------------------------

    @property
    def member_id(self) -> str:
        return self.settings.member_id

    def outdated(self, work: WorkUnits) -> bool:
        """Whether its assignment was computed from other declared work than `work` (by the
        note kconsumer's workers put in the assignment metadata; False without one)."""
        note = Note.decode(self.assignment_metadata)
        return note is not None and work_fingerprint(work) != note.fingerprint

    def reported_owned(self) -> WorkUnits:
        """What the heartbeat says the worker runs: its units, and those an on_assigned that
        has not returned yet is starting (so the coordinator never takes a unit for stopped
        while the application may be starting it)."""
        running = self._running
        if running is not None and running.kind is CallbackKind.ASSIGNED:
            return self.owned | running.units
        return self.owned

    @property
    def callback_running(self) -> bool:
        return self._running is not None

    def next_deadline(self) -> int | None:
        """When `tick` next has work (None: nothing until an answer or a callback)."""
        lease = self._lease_deadline()
        if self.state not in (_S.JOINING, _S.STABLE, _S.RECONCILING) or self._in_flight:
            return lease  # no heartbeat is due: one is out, or the state sends none by time
        return self._due_ms if lease is None else min(self._due_ms, lease)

    def _lease_deadline(self) -> int | None:
        if self._last_answered_sent_ms is None or not self.owned:
            return None
        if self.state not in (_S.JOINING, _S.STABLE, _S.RECONCILING):
            return None  # losing, leaving or done: it is stopping everything anyway
        return self._last_answered_sent_ms + self.settings.lease_ms

    # -- events ---------------------------------------------------------------------------------

    def start(self, now_ms: int) -> list[Effect]:
        self._go(_S.JOINING)
        self.epoch = 0
        self._full = True
        return self.tick(now_ms)

    def tick(self, now_ms: int) -> list[Effect]:
        """Time passed: a heartbeat may be due, a lease may have run out."""
        effects: list[Effect] = []
        lease = self._lease_deadline()
        if lease is not None and now_ms >= lease and self.state not in (_S.LEAVING, _S.CLOSED, _S.FAILED):
            effects += self._lose()
        if self._in_flight:
            return effects
        if self.state == _S.LEAVING:
            if self._running is None and not self.owned and not self._leave_sent:
                self._leave_sent = True
                effects.append(self._send(self._leave_epoch(), now_ms))
        elif self.state in (_S.JOINING, _S.STABLE, _S.RECONCILING) and now_ms >= self._due_ms:
            effects.append(self._send(self.epoch, now_ms))
        return effects

    def answered(self, response: ConnectGroupHeartbeatResponse, sent_ms: int, now_ms: int) -> list[Effect]:
        """A heartbeat (sent at `sent_ms`) was answered."""
        self._in_flight = False
        code = ErrorCode.of(response.error_code)
        if self.state == _S.LEAVING:
            return self._leaving_answered(now_ms)
        if self.state in (_S.CLOSED, _S.FAILED):
            return []
        if code in (ErrorCode.NONE, ErrorCode.COMPUTE_ASSIGNMENT):
            self._attempts = 0
            self._last_answered_sent_ms = sent_ms
            if self._reason_in_flight and self._reason == self._reason_in_flight:
                self._reason = 0  # asked: the next announcement says 0 again
            self.epoch = response.member_epoch
            self.heartbeat_interval_ms = response.heartbeat_interval_ms or self.heartbeat_interval_ms
            self._due_ms = now_ms + self.heartbeat_interval_ms
            if self.state == _S.JOINING:
                self._go(_S.STABLE)
            effects: list[Effect] = []
            if response.assignment is not None:
                self.assigned = WorkUnits.from_wire(response.assignment.units)
                metadata = response.assignment.metadata_bytes
                if metadata and metadata != self.assignment_metadata:
                    effects.append(AssignmentNote(metadata))
                self.assignment_metadata = metadata
            effects += self._reconcile()
            if code == ErrorCode.COMPUTE_ASSIGNMENT:
                effects.append(ComputeAssignment(self.epoch))
            return effects
        self._full = True
        if code in _FENCED:
            return self._lose()
        if code in RETRIABLE:
            return self._retry_later(now_ms)
        return self._fail(code, response.error_message or code.name)

    def failed(self, now_ms: int) -> list[Effect]:
        """The heartbeat got no answer (transport failure, timeout)."""
        self._in_flight = False
        self._full = True
        if self.state == _S.LEAVING:
            # Leaving without an answer: its session timeout removes it (its units are stopped).
            return self._leaving_answered(now_ms)
        return self._retry_later(now_ms)

    def callback_done(self, now_ms: int) -> list[Effect]:
        """The application finished the callback `RunCallback` asked for."""
        done, self._running = self._running, None
        assert done is not None, "no callback was running"
        # The next heartbeat says what runs now, changed or not: it confirms a revocation even
        # when the units revoked were never reported (given and taken between two heartbeats).
        self._sent_owned = None
        if done.kind is CallbackKind.ASSIGNED:
            self.owned = self.owned | done.units
        else:
            self.owned = self.owned - done.units
        if self.state == _S.LEAVING:
            return self._leave_steps(now_ms)
        if self.state == _S.FAILED:
            return self._stop_after_failure()
        if self.state == _S.CLOSED:
            return []
        if self.state == _S.LOSING and done.kind is not CallbackKind.LOST and self.owned:
            self._running = RunCallback(CallbackKind.LOST, self.owned)  # lost while it ran
            return [self._running]
        if self.state == _S.LOSING:
            self.assigned = NO_UNITS
            self.epoch = 0
            self._full = True
            self._go(_S.JOINING)
            self._due_ms = now_ms
            return self.tick(now_ms)
        self._go(_S.STABLE)
        if done.kind is CallbackKind.REVOKED:
            self._due_ms = now_ms  # confirm the revocation at once
        return self._reconcile() + self.tick(now_ms)

    def request_rebalance(self, reason: int, now_ms: int) -> list[Effect]:
        """Ask the group for a new assignment (the assignors are sent with `reason`)."""
        if not 1 <= reason <= 127:
            raise ValueError(f"a rebalance reason is 1..127, got {reason}")
        self._reason = reason
        self._due_ms = now_ms
        return self.tick(now_ms)

    def heartbeat_now(self, now_ms: int) -> list[Effect]:
        """Send the next heartbeat at once (this worker just installed an assignment)."""
        self._due_ms = now_ms
        return self.tick(now_ms)

    def fail(self, code: ErrorCode, message: str) -> list[Effect]:
        """The driver found an error the worker cannot recover from."""
        if self.state in (_S.CLOSED, _S.FAILED):
            return []
        return self._fail(code, message)

    def close(self, now_ms: int) -> list[Effect]:
        """Stop every unit (on_revoked), then leave the group."""
        if self.state in (_S.CLOSED, _S.FAILED):
            self._go(_S.CLOSED)
            return []
        if self.state == _S.UNJOINED:
            self._go(_S.CLOSED)
            return []
        self._go(_S.LEAVING)
        return self._leave_steps(now_ms)

    # -- steps ----------------------------------------------------------------------------------

    def _go(self, target: WorkerState) -> None:
        self.state = TRANSITIONS.check(self.state, target)

    def _leaving_answered(self, now_ms: int) -> list[Effect]:
        if self._leave_sent:
            self._go(_S.CLOSED)
            return []
        return self._leave_steps(now_ms)

    def _leave_steps(self, now_ms: int) -> list[Effect]:
        if self._running is not None:
            return []
        if self.owned:
            self._running = RunCallback(CallbackKind.REVOKED, self.owned)
            return [self._running]
        return self.tick(now_ms)

    def _leave_epoch(self) -> int:
        if self.epoch <= 0:
            return LEAVE_GROUP_MEMBER_EPOCH
        return LEAVE_GROUP_STATIC_MEMBER_EPOCH if self.settings.instance_id else LEAVE_GROUP_MEMBER_EPOCH

    def _reconcile(self) -> list[Effect]:
        """Start the next callback the assignment calls for: revocations before assignments."""
        if self._running is not None or self.state not in (_S.STABLE, _S.RECONCILING):
            return []
        revoked = self.owned - self.assigned
        added = self.assigned - self.owned
        if not revoked and not added:
            if self.state == _S.RECONCILING:
                self._go(_S.STABLE)
            return []
        self._go(_S.RECONCILING)
        self._running = RunCallback(
            CallbackKind.REVOKED if revoked else CallbackKind.ASSIGNED, revoked or added
        )
        return [self._running]

    def _lose(self) -> list[Effect]:
        """Membership lost: stop everything, then join again (with epoch 0)."""
        if self.state == _S.LEAVING:
            return []  # close() stops everything anyway
        self._last_answered_sent_ms = None
        if self._running is not None:
            self._go(_S.LOSING)
            return []  # the running callback finishes first; callback_done sees LOSING
        if not self.owned:
            self.epoch, self.assigned, self._full = 0, NO_UNITS, True
            self._go(_S.JOINING)
            return []
        self._go(_S.LOSING)
        self._running = RunCallback(CallbackKind.LOST, self.owned)
        return [self._running]

    def _retry_later(self, now_ms: int) -> list[Effect]:
        self._due_ms = now_ms + self._backoff.backoff(self._attempts)
        self._attempts += 1
        return []

    def _fail(self, code: ErrorCode, message: str) -> list[Effect]:
        """The worker cannot go on: it stops what it runs (``on_lost``) and reports why."""
        self.error = Failed(code, message)
        self._go(_S.FAILED)
        return [*self._stop_after_failure(), self.error]

    def _stop_after_failure(self) -> list[Effect]:
        lost = lost_owed(self._running, self.owned)
        if lost is None:
            return []
        self._running = lost
        return [lost]

    def _send(self, epoch: int, now_ms: int) -> SendHeartbeat:
        """The next heartbeat: unchanged fields are left out (null), unless a full one is due."""
        self._in_flight = True
        joining = epoch == 0
        full = self._full or joining
        owned = self.reported_owned()
        send_owned = full or owned != self._sent_owned
        announced = [_with_reason(a, self._reason) for a in self.assignors]
        send_assignors = full or announced != self._sent_assignors
        request = ConnectGroupHeartbeatRequest(
            group_id=self.settings.group_id,
            member_id=self.settings.member_id,
            member_epoch=epoch,
            instance_id=self.settings.instance_id,
            rebalance_timeout_ms=self.settings.rebalance_timeout_ms if full else -1,
            client_assignors=announced if send_assignors else None,
            owned=owned.to_wire() if send_owned else None,
        )
        self._full = False
        self._sent_owned = owned
        self._sent_assignors = announced
        # Kept until a heartbeat carrying it is answered (a lost one is sent again, in full).
        self._reason_in_flight = self._reason if send_assignors else 0
        self._due_ms = now_ms + self.heartbeat_interval_ms
        return SendHeartbeat(request)


def lost_owed(running: RunCallback | None, owned: WorkUnits) -> RunCallback | None:
    """The ``on_lost`` a failed worker starts now for what it runs: none while a callback runs
    (it finishes first, and the core asks again when it is done) or when it runs nothing."""
    if running is not None or not owned:
        return None
    return RunCallback(CallbackKind.LOST, owned)


def _with_reason(assignor: WorkerAssignor, reason: int) -> WorkerAssignor:
    return WorkerAssignor(
        name=assignor.name,
        minimum_version=assignor.minimum_version,
        maximum_version=assignor.maximum_version,
        reason=reason,
        metadata_version=assignor.metadata_version,
        metadata_bytes=assignor.metadata_bytes,
    )
