"""`ClassicWorkerCore`: a worker on Connect's classic group protocol (``group.protocol=classic``,
docs/workers.md), as a sans-IO state machine beside `core.WorkerCore`.

It speaks JoinGroup / SyncGroup / Heartbeat / LeaveGroup with Connect's incremental cooperative
protocol (``sessioned``, then ``compatible``), so it can share a classic group with other
classic workers, and keep working while the group is converted to a worker group and back
(the coordinator then answers its JoinGroup and SyncGroup itself).

Events in (`start`, `tick`, `answered`, `failed`, `led`, `callback_done`, `request_rebalance`,
`close`), effects out (`SendClassic`, `Lead`, `RunCallback`, `RejoinLater`, `Failed`), with
the same rules as `WorkerCore`: one callback at a time, revocations before assignments, and the
lease (no answered request for `lease_ms`: stop everything, join again).

A rebalance: JoinGroup announcing what the worker runs; the leader (`Lead`: the driver runs the
assignor over the members) sends every member's assignment in its SyncGroup; each member gets
everything it is to run and what it must stop. A worker told to stop units rejoins once they are
stopped, so that the leader can hand them to their new owner in the next generation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..assignment.connect_protocol import (
    COMPATIBLE,
    CONNECT_PROTOCOL_TYPE,
    SESSIONED,
    ConnectWorkerState,
    decode_assignment,
    encode_worker_state,
    work_offset,
)
from ..assignment.work_units import NO_UNITS, WorkUnits
from ..client.member.backoff import ExponentialBackoff
from ..errors import ErrorCode, ProtocolError
from ..protocol.messages.classic_group import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    JoinGroupResponseMember,
    LeaveGroupRequest,
    MemberIdentity,
    SyncGroupRequest,
    SyncGroupRequestAssignment,
    SyncGroupResponse,
)
from ..protocol.schema import Message
from .core import RETRIABLE, CallbackKind, Failed, RunCallback, WorkerState, lost_owed
from .core import TRANSITIONS as _TRANSITIONS

_S = WorkerState


@dataclass(frozen=True)
class SendClassic:
    request: Message


@dataclass(frozen=True)
class Lead:
    """This worker leads the generation: assign the members (then call `led`)."""

    generation: int
    members: tuple[JoinGroupResponseMember, ...]


@dataclass(frozen=True)
class RejoinLater:
    """The leader asked for a rebalance `delay_ms` from now (the incremental assignor's delay)."""

    delay_ms: int


@dataclass(frozen=True)
class CheckWork:
    """A new assignment: ask for a rebalance if it was made for other declared work
    (`outdated`)."""


ClassicEffect = SendClassic | Lead | RunCallback | RejoinLater | CheckWork | Failed

#: After these the worker's membership is gone: it stops everything and joins afresh.
_GONE = frozenset({ErrorCode.UNKNOWN_MEMBER_ID})
#: Rejoin, keeping its units: it is still a member, of a group that moved on (a cooperative
#: leader, or the coordinator, never gives a member's units away without revoking them first).
_REJOIN = frozenset({ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.ILLEGAL_GENERATION})


@dataclass(frozen=True)
class ClassicWorkerSettings:
    group_id: str
    instance_id: str | None
    session_timeout_ms: int
    rebalance_timeout_ms: int
    heartbeat_interval_ms: int
    lease_ms: int
    #: What the worker announces as its url (Connect's REST url; kconsumer: its client id).
    url: str = ""
    #: The config offset it announces at each JoinGroup: Connect's config-topic position;
    #: kconsumer's, the fingerprint of its declared work (`connect_protocol.work_offset`), so
    #: that a rejoin after the work changed asks for a new assignment.
    config_offset: Callable[[], int] = lambda: -1
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 1_000


class ClassicWorkerCore:
    """One classic worker's membership (see the module docstring)."""

    def __init__(self, settings: ClassicWorkerSettings) -> None:
        self.settings = settings
        self.state = WorkerState.UNJOINED
        self.member_id = ""
        self.generation = -1
        self.protocol_name: str | None = None
        self.owned: WorkUnits = NO_UNITS
        self.assigned: WorkUnits = NO_UNITS
        self.error: Failed | None = None
        #: The ConfigOffset of its last assignment: the configuration it was made for (-1: none).
        self.assignment_offset = -1
        self._running: RunCallback | None = None
        self._in_flight: str | None = None  # "join", "sync", "heartbeat" or "leave"
        self._rejoin = True
        #: A rebalance the application asked for since the last JoinGroup was sent (that
        #: JoinGroup's generation does not answer it: another one must follow).
        self._asked = False
        self._leave_sent = False
        self._due_ms = 0
        #: When the last Heartbeat answered without error was sent (the lease counts from it).
        self._last_answered_sent_ms: int | None = None
        #: When the last SyncGroup was answered, and whether a Heartbeat sent since was
        #: answered without error (new units start only then).
        self._synced_at_ms = 0
        self._confirmed = False
        self._backoff = ExponentialBackoff(settings.retry_backoff_ms, settings.retry_backoff_max_ms)
        self._attempts = 0

    @property
    def epoch(self) -> int:
        """Its generation (-1 before it joined)."""
        return self.generation

    def outdated(self, work: WorkUnits) -> bool:
        """Whether its assignment was made for other declared work than `work` (its ConfigOffset
        names another; False when it names none)."""
        return self.assignment_offset >= 0 and work_offset(work) != self.assignment_offset

    @property
    def callback_running(self) -> bool:
        return self._running is not None

    def reported_owned(self) -> WorkUnits:
        """What its JoinGroup says it runs: its units, and those an on_assigned still running is
        starting."""
        running = self._running
        if running is not None and running.kind is CallbackKind.ASSIGNED:
            return self.owned | running.units
        return self.owned

    def next_deadline(self) -> int | None:
        """When `tick` next has work (None: nothing until an answer, `led` or a callback)."""
        lease = self._lease_deadline()
        if not self._sends_by_time():
            return lease
        return self._due_ms if lease is None else min(self._due_ms, lease)

    def _sends_by_time(self) -> bool:
        """Whether a request goes out once `_due_ms` passes: a JoinGroup when it must rejoin and
        no callback runs, else a Heartbeat once it has a generation (not while it waits for its
        JoinGroup's or SyncGroup's answer, or for `led`)."""
        if self._in_flight or self.state not in (_S.JOINING, _S.STABLE, _S.RECONCILING):
            return False
        if self._rejoin and self._running is None:
            return True
        return self.state != _S.JOINING

    def _lease_deadline(self) -> int | None:
        if self._last_answered_sent_ms is None or not self.owned:
            return None
        if self.state not in (_S.JOINING, _S.STABLE, _S.RECONCILING):
            return None
        return self._last_answered_sent_ms + self.settings.lease_ms

    # -- events ---------------------------------------------------------------------------------

    def start(self, now_ms: int) -> list[ClassicEffect]:
        """Join the group."""
        self._go(_S.JOINING)
        self._rejoin = True
        return self.tick(now_ms)

    def tick(self, now_ms: int) -> list[ClassicEffect]:
        """Time passed: a request may be due, the lease may have run out."""
        effects: list[ClassicEffect] = []
        lease = self._lease_deadline()
        if lease is not None and now_ms >= lease:
            effects += self._lose(forget_member=False)
        if self._in_flight:
            return effects
        if self.state == _S.LEAVING:
            if self._running is None and not self.owned and not self._leave_sent:
                effects += self._leave()
        elif self._sends_by_time() and now_ms >= self._due_ms:
            if self._rejoin and self._running is None:
                effects.append(self._join(now_ms))
            else:
                effects.append(self._heartbeat(now_ms))
        return effects

    def answered(self, response: Message, sent_ms: int, now_ms: int) -> list[ClassicEffect]:
        """A request (sent at `sent_ms`) was answered."""
        kind, self._in_flight = self._in_flight, None
        if self.state == _S.LEAVING:
            return self._after_leave(now_ms)
        if self.state in (_S.CLOSED, _S.FAILED):
            return []
        if self.state == _S.LOSING:
            self._rejoin = True  # it is stopping everything: whatever came is for a lost member
            return []
        code = ErrorCode.of(getattr(response, "error_code", 0))
        if code == ErrorCode.NONE:
            self._attempts = 0
        if kind == "join":
            assert isinstance(response, JoinGroupResponse)
            return self._joined(response, code, now_ms)
        if kind == "sync":
            assert isinstance(response, SyncGroupResponse)
            return self._synced(response, code, now_ms)
        assert isinstance(response, HeartbeatResponse)
        if code == ErrorCode.NONE:
            # Only a Heartbeat surely restarts its session on the coordinator (a classic group
            # does not for a JoinGroup or SyncGroup answered at once while Stable): the lease
            # counts from it, and units of a new generation start once one sent after the
            # SyncGroup was answered.
            self._last_answered_sent_ms = sent_ms
            self._due_ms = now_ms + self.settings.heartbeat_interval_ms
            if sent_ms >= self._synced_at_ms and not self._confirmed:
                self._confirmed = True
                return self._reconcile()
            return []
        return self._error(code, now_ms)

    def failed(self, now_ms: int) -> list[ClassicEffect]:
        """The request got no answer."""
        kind, self._in_flight = self._in_flight, None
        if self.state == _S.LEAVING:
            return self._after_leave(now_ms)
        if kind in ("join", "sync"):
            self._rejoin = True  # the rebalance did not complete for this worker: again
        return self._retry_later(now_ms)

    def led(self, assignments: dict[str, bytes], now_ms: int) -> list[ClassicEffect]:
        """The driver computed the members' assignments (this worker leads): sync them."""
        if self.state != _S.JOINING or self._in_flight:
            return []
        return [self._sync(assignments)]

    def callback_done(self, now_ms: int) -> list[ClassicEffect]:
        """The application finished the callback `RunCallback` asked for."""
        done, self._running = self._running, None
        assert done is not None, "no callback was running"
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
        if self.state == _S.LOSING:
            if self.owned:
                self._running = RunCallback(CallbackKind.LOST, self.owned)
                return [self._running]
            self.assigned = NO_UNITS
            self._go(_S.JOINING)
            self._rejoin, self._due_ms = True, now_ms
            return self.tick(now_ms)
        if done.kind is CallbackKind.REVOKED:
            self._due_ms = now_ms  # rejoin now: the leader may hand them over
        return self._reconcile() + self.tick(now_ms)

    def request_rebalance(self, reason: int, now_ms: int) -> list[ClassicEffect]:
        """Rejoin (a classic group has no reasons: `reason` is checked, then unused)."""
        if not 1 <= reason <= 127:
            raise ValueError(f"a rebalance reason is 1..127, got {reason}")
        if self.state in (_S.STABLE, _S.RECONCILING, _S.JOINING):
            self._rejoin, self._asked, self._due_ms = True, True, now_ms
        return self.tick(now_ms)

    def fail(self, code: ErrorCode, message: str) -> list[ClassicEffect]:
        """The driver found an error the worker cannot recover from."""
        if self.state in (_S.CLOSED, _S.FAILED):
            return []
        return self._fail(code, message)

    def close(self, now_ms: int) -> list[ClassicEffect]:
        """Stop every unit (on_revoked), then leave the group."""
        if self.state in (_S.CLOSED, _S.FAILED, _S.UNJOINED):
            self._go(_S.CLOSED)
            return []
        self._go(_S.LEAVING)
        return self._leave_steps(now_ms)

    # -- answers --------------------------------------------------------------------------------

    def _joined(self, response: JoinGroupResponse, code: ErrorCode, now_ms: int) -> list[ClassicEffect]:
        if code == ErrorCode.MEMBER_ID_REQUIRED:
            self.member_id, self._due_ms, self._rejoin = response.member_id, now_ms, True
            return self.tick(now_ms)
        if code != ErrorCode.NONE:
            return self._error(code, now_ms)
        self.member_id = response.member_id
        self.generation = response.generation_id
        self.protocol_name = response.protocol_name
        if response.leader == self.member_id:
            return [Lead(response.generation_id, tuple(response.members))]
        return [self._sync({})]

    def _synced(self, response: SyncGroupResponse, code: ErrorCode, now_ms: int) -> list[ClassicEffect]:
        if code != ErrorCode.NONE:
            return self._error(code, now_ms)
        if not response.assignment:
            # The leader assigned nothing to anyone (its assignor failed): try again later.
            self._rejoin = True
            return self._retry_later(now_ms)
        try:
            assignment = decode_assignment(response.assignment)
        except ProtocolError as exc:
            return self._fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"the assignment does not decode: {exc}")
        # This generation is its rejoin (also after it lost everything while its JoinGroup
        # waited: what it gets back nobody else was given), unless a rebalance was asked since
        # that JoinGroup went. Units revoked wait for its next JoinGroup to be handed over: it
        # rejoins once they are stopped (at once if it already stopped them).
        self._rejoin = bool(assignment.revoked) or self._asked
        self._due_ms = now_ms  # a Heartbeat at once: it confirms the membership (`answered`)
        self._synced_at_ms, self._confirmed = now_ms, False
        # What it runs (as its JoinGroup said), less what is revoked, plus what it is given.
        self.assigned = (self.reported_owned() - assignment.revoked) | assignment.assigned
        self.assignment_offset = assignment.config_offset
        self._go(_S.STABLE)
        effects: list[ClassicEffect] = [CheckWork()]
        if assignment.delay_ms > 0:
            effects.append(RejoinLater(assignment.delay_ms))
        return effects + self._reconcile()

    def _error(self, code: ErrorCode, now_ms: int) -> list[ClassicEffect]:
        if code in _REJOIN:
            self._rejoin = True
            if self.state != _S.LOSING:
                self._go(_S.JOINING if self._running is None else self.state)
            self._due_ms = now_ms
            return self.tick(now_ms)
        if code in _GONE:
            return self._lose(forget_member=True)
        if code in RETRIABLE:
            self._rejoin = self._rejoin or self.state == _S.JOINING
            return self._retry_later(now_ms)
        if code == ErrorCode.FENCED_INSTANCE_ID:
            return self._fail(code, "another worker took this worker's group.instance.id")
        return self._fail(code, f"{code.name}: the group refused this worker")

    # -- steps ----------------------------------------------------------------------------------

    def _go(self, target: WorkerState) -> None:
        self.state = _TRANSITIONS.check(self.state, target)

    def _reconcile(self) -> list[ClassicEffect]:
        if self._running is not None or self.state not in (_S.STABLE, _S.RECONCILING):
            return []
        revoked = self.owned - self.assigned
        added = self.assigned - self.owned
        if not revoked and not self._confirmed:
            added = NO_UNITS  # stopping is always safe; starting waits for a Heartbeat's answer
        if not revoked and not added:
            if self.state == _S.RECONCILING:
                self._go(_S.STABLE)
            return []
        self._go(_S.RECONCILING)
        self._running = RunCallback(
            CallbackKind.REVOKED if revoked else CallbackKind.ASSIGNED, revoked or added
        )
        return [self._running]

    def _lose(self, forget_member: bool) -> list[ClassicEffect]:
        if forget_member:
            self.member_id = ""
        self.generation = -1
        self._last_answered_sent_ms = None
        self._rejoin = True
        if self.state == _S.LEAVING:
            return []
        self.assigned = NO_UNITS
        if self._running is not None:
            self._go(_S.LOSING)
            return []
        if not self.owned:
            self._go(_S.JOINING)
            return []
        self._go(_S.LOSING)
        self._running = RunCallback(CallbackKind.LOST, self.owned)
        return [self._running]

    def _leave_steps(self, now_ms: int) -> list[ClassicEffect]:
        if self._running is not None:
            return []
        if self.owned:
            self._running = RunCallback(CallbackKind.REVOKED, self.owned)
            return [self._running]
        return self.tick(now_ms)

    def _leave(self) -> list[ClassicEffect]:
        self._leave_sent = True
        if not self.member_id:
            self._go(_S.CLOSED)  # it never joined: nobody to tell
            return []
        # A static worker leaves too, once it stopped everything (unlike a classic consumer): in
        # a worker group its place and units then wait for its next process; in a classic
        # group it is removed and its units go to the others.
        self._in_flight = "leave"
        identity = MemberIdentity(
            member_id=self.member_id,
            group_instance_id=self.settings.instance_id,
            reason="the worker is closing",
        )
        return [
            SendClassic(
                LeaveGroupRequest(
                    group_id=self.settings.group_id, member_id=self.member_id, members=[identity]
                )
            )
        ]

    def _after_leave(self, now_ms: int) -> list[ClassicEffect]:
        if self._leave_sent:
            self._go(_S.CLOSED)
            return []
        return self._leave_steps(now_ms)

    def _retry_later(self, now_ms: int) -> list[ClassicEffect]:
        self._due_ms = now_ms + self._backoff.backoff(self._attempts)
        self._attempts += 1
        return []

    def _fail(self, code: ErrorCode, message: str) -> list[ClassicEffect]:
        """The worker cannot go on: it stops what it runs (``on_lost``) and reports why."""
        self.error = Failed(code, message)
        self._go(_S.FAILED)
        return [*self._stop_after_failure(), self.error]

    def _stop_after_failure(self) -> list[ClassicEffect]:
        lost = lost_owed(self._running, self.owned)
        if lost is None:
            return []
        self._running = lost
        return [lost]

    def _join(self, now_ms: int) -> SendClassic:
        self._go(_S.JOINING)
        self._in_flight = "join"
        self._rejoin = self._asked = False
        self._due_ms = now_ms + self.settings.heartbeat_interval_ms
        state = ConnectWorkerState(self.settings.url, self.settings.config_offset(), self.reported_owned())
        return SendClassic(
            JoinGroupRequest(
                group_id=self.settings.group_id,
                session_timeout_ms=self.settings.session_timeout_ms,
                rebalance_timeout_ms=self.settings.rebalance_timeout_ms,
                member_id=self.member_id,
                group_instance_id=self.settings.instance_id,
                protocol_type=CONNECT_PROTOCOL_TYPE,
                protocols=[
                    JoinGroupRequestProtocol(name=SESSIONED, metadata=encode_worker_state(state, 2)),
                    JoinGroupRequestProtocol(name=COMPATIBLE, metadata=encode_worker_state(state, 1)),
                ],
                reason="rebalance",
            )
        )

    def _sync(self, assignments: dict[str, bytes]) -> SendClassic:
        self._in_flight = "sync"
        return SendClassic(
            SyncGroupRequest(
                group_id=self.settings.group_id,
                generation_id=self.generation,
                member_id=self.member_id,
                group_instance_id=self.settings.instance_id,
                protocol_type=CONNECT_PROTOCOL_TYPE,
                protocol_name=self.protocol_name,
                assignments=[
                    SyncGroupRequestAssignment(member_id=m, assignment=a)
                    for m, a in sorted(assignments.items())
                ],
            )
        )

    def _heartbeat(self, now_ms: int) -> SendClassic:
        self._in_flight = "heartbeat"
        self._due_ms = now_ms + self.settings.heartbeat_interval_ms
        return SendClassic(
            HeartbeatRequest(
                group_id=self.settings.group_id,
                generation_id=self.generation,
                member_id=self.member_id,
                group_instance_id=self.settings.instance_id,
            )
        )
