"""The leave sequence of a member (unsubscribe, close, expired poll timer), and the sub-states around
it: the `Rejoin` after partitions were lost, the `Shutdown` the application asked for.

Unsubscribe or close (state PREPARE_LEAVING): the owned partitions are stopped (`StopFetching`,
waited for: `FetchingStopped` brings their positions); then

1. the auto-commit of those positions (REVOCATION for unsubscribe, CLOSE for close), waited for;
2. ``on_partitions_revoked`` for them (``on_partitions_lost`` if the member was fenced meanwhile),
   waited for;
3. the leave heartbeat (state LEAVING), unless the member was fenced: then it is already out.

An expired poll timer goes straight to step 3: the partitions are lost, not revoked.

The leave epoch is -1, or -2 (a temporary leave that keeps the assignment for the session timeout)
for a static member that closes or times out; a static member that unsubscribes leaves for good (-1).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from ...protocol.messages.consumer_group import LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH
from .effects import LeaveDone
from .model import CallbackKind, LeaveReason, PartitionOffset, TopicIdPartition
from .operations import CallbackNeed, CommitNeed, Need, Outcome, Pending, StopNeed
from .reconciler import Release


class LeavePhase(enum.Enum):
    """The next thing a leave does."""

    STOP = "stop"
    COMMIT = "commit"
    CALLBACK = "callback"
    SEND = "send"


@dataclass
class Rejoin:
    """After losing the partitions (fenced, poll timer expired): what the member waits for before
    joining again (a sub-state of FENCED, and of a poll-timer leave up to STALE)."""

    waiting: bool
    """The application thread has not yet stopped the partitions or run on_partitions_lost."""
    needs_poll: bool
    """The poll timer expired: the member rejoins only once the application polls again."""
    polled: bool = False

    @property
    def ready(self) -> bool:
        """Nothing left to wait for."""
        return not self.waiting and (self.polled or not self.needs_poll)


@dataclass
class Shutdown:
    """What the application asked to end (unsubscribe, close) and is owed an answer for."""

    owed: LeaveReason | None = None
    """The LeaveDone the application waits for (CLOSE wins over UNSUBSCRIBE)."""
    closing: bool = False
    deadline_ms: int | None = None
    """Close: the commit retries end here."""
    closed: bool = False
    """The close completed: every later event is ignored."""

    def owe(self, reason: LeaveReason) -> None:
        """The application waits for a LeaveDone of `reason`."""
        if reason is LeaveReason.CLOSE or self.owed is None:
            self.owed = reason

    def pay(self) -> list[LeaveDone]:
        """The LeaveDone owed now (none if none), marking a close complete."""
        reason, self.owed = self.owed, None
        if reason is LeaveReason.CLOSE:
            self.closed = True
        return [] if reason is None else [LeaveDone(reason)]


@dataclass
class Leave:
    """A leave in progress (a sub-state of PREPARE_LEAVING and LEAVING)."""

    reason: LeaveReason
    phase: LeavePhase
    release: Release
    positions: tuple[PartitionOffset, ...] = ()
    """Positions of the released partitions, reported when fetching stopped."""
    fenced: bool = False
    """Fenced while preparing: no leave heartbeat, and the partitions are lost rather than revoked."""
    waiting: Need | None = None
    """What the leave waits for (None while it runs)."""

    @classmethod
    def start(
        cls, reason: LeaveReason, release: Release, interrupted: list[Pending]
    ) -> tuple[Leave, Pending | None]:
        """An unsubscribe or close leave giving up `release`, and the operation it adopts from the
        `interrupted` reconciliation: with nothing to stop, it waits for an interrupted
        revocation's callback instead (a stop queued after that callback would imply it had
        returned)."""
        leave = cls(reason, LeavePhase.STOP, release, positions=release.positions)
        if release.stop or not release.revoking_callback:
            return leave, None
        revoke = next(p for p in interrupted if isinstance(p.need, CallbackNeed))
        leave.phase, leave.waiting = LeavePhase.COMMIT, revoke.need
        return leave, revoke

    def next(self) -> Need | None:
        """The next need of the leave; None once it is ready to send (or to end, if fenced)."""
        while True:
            phase = self.phase
            if phase is LeavePhase.STOP:
                self.phase = LeavePhase.COMMIT
                if self.release.stop:
                    return self._wait(StopNeed(self.release.stop))
            elif phase is LeavePhase.COMMIT:
                self.phase = LeavePhase.CALLBACK
                if self.release.owned and not self.fenced:
                    return self._wait(CommitNeed(self.release.owned, self.positions))
            elif phase is LeavePhase.CALLBACK:
                self.phase = LeavePhase.SEND
                if self.release.callback:
                    kind = CallbackKind.LOST if self.fenced else CallbackKind.REVOKED
                    return self._wait(CallbackNeed(kind, self.release.callback))
            else:
                return None

    def resume(self, outcome: Outcome = None) -> None:
        """The need it waited for was met (`outcome`: positions after a stop)."""
        if isinstance(self.waiting, StopNeed) and isinstance(outcome, tuple):
            self.positions = (*self.positions, *outcome)
        self.waiting = None

    def _wait(self, need: Need) -> Need:
        self.waiting = need
        return need


def leave_epoch(reason: LeaveReason, static: bool, closing: bool) -> int:
    """The MemberEpoch of the leave heartbeat."""
    temporary = reason is not LeaveReason.UNSUBSCRIBE or closing
    return LEAVE_GROUP_STATIC_MEMBER_EPOCH if static and temporary else LEAVE_GROUP_MEMBER_EPOCH


def reported_partitions(
    reported: frozenset[TopicIdPartition], leave: Leave | None
) -> frozenset[TopicIdPartition]:
    """The TopicPartitions a heartbeat reports: `reported`, what the member owns or may still
    start fetching (`Reconciler.reported`), and, while preparing to `leave`, the partitions the
    application has not yet been told it gave up (assigned ones of an interrupted step included)."""
    return reported if leave is None else reported | frozenset(leave.release.callback)
