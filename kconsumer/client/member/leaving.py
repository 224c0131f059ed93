"""The leave sequence of a member (unsubscribe, close, expired poll timer).

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
from typing import Protocol

from ...protocol.messages.consumer_group import LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH
from .model import CallbackKind, LeaveReason, PartitionOffset, TopicIdPartition
from .reconciler import Release


class LeaveHost(Protocol):
    """What a leave needs from the core."""

    def commit_before_leaving(
        self, partitions: tuple[TopicIdPartition, ...], positions: tuple[PartitionOffset, ...]
    ) -> int | None:
        """Auto-commit the `positions` of `partitions`; the commit id, or None if none started."""

    def invoke_callback(self, kind: CallbackKind, partitions: tuple[TopicIdPartition, ...]) -> int | None:
        """Emit `InvokeCallback` if registered; its id, or None."""


class LeavePhase(enum.Enum):
    """The next thing a leave does."""

    COMMIT = "commit"
    CALLBACK = "callback"
    SEND = "send"


@dataclass
class Leave:
    """A leave in progress."""

    reason: LeaveReason
    phase: LeavePhase
    release: Release
    waiting: int | None = None
    """The stop, commit or callback id it waits for."""
    positions: tuple[PartitionOffset, ...] = ()
    """Positions of the released partitions, reported when fetching stopped."""
    fenced: bool = False
    """Fenced while preparing: no leave heartbeat, and the partitions are lost rather than revoked."""

    def advance(self, host: LeaveHost) -> bool:
        """Run the phases until one waits; True once the leave is ready to send (or to end if fenced)."""
        while self.waiting is None:
            if self.phase is LeavePhase.COMMIT:
                self.phase = LeavePhase.CALLBACK
                if self.release.owned and not self.fenced:
                    self.waiting = host.commit_before_leaving(self.release.owned, self.positions)
            elif self.phase is LeavePhase.CALLBACK:
                self.phase = LeavePhase.SEND
                if self.release.callback:
                    kind = CallbackKind.LOST if self.fenced else CallbackKind.REVOKED
                    self.waiting = host.invoke_callback(kind, self.release.callback)
            else:
                return True
        return False


def leave_epoch(reason: LeaveReason, static: bool, closing: bool) -> int:
    """The MemberEpoch of the leave heartbeat."""
    temporary = reason is not LeaveReason.UNSUBSCRIBE or closing
    return LEAVE_GROUP_STATIC_MEMBER_EPOCH if static and temporary else LEAVE_GROUP_MEMBER_EPOCH
