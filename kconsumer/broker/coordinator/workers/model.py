"""The coordinator's model of a worker group (group type ``connect``, docs/worker-protocol.md).

A worker group is one immutable value (`WorkerGroup`), replaced as a whole by each change and
persisted as one record (`WorkerGroupRecord`): worker groups are small (workers and their
connectors and tasks), and a single record keeps replay trivially consistent.

The group has an epoch, workers and a *target* assignment with its own epoch, installed by the
worker the coordinator chose to compute it. Each worker has a *current* assignment that it
reconciles towards its target: revocations first, acknowledged by the worker, then new units,
each only once no other worker holds it any more.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace

from ....assignment.announcements import AnnouncedAssignor
from ....assignment.work_units import NO_UNITS, WorkUnits
from ..model import ClassicMemberMetadata

#: The ListGroups type and the protocol type of worker groups.
CONNECT_GROUP_TYPE = "connect"


class WorkerState(enum.IntEnum):
    """Where a worker's current assignment is on its way to its target."""

    STABLE = 0
    #: It must stop units first; the coordinator waits for its acknowledgement.
    UNREVOKED = 1
    #: Units of its target are still held by other workers.
    UNRELEASED = 2


@dataclass(frozen=True)
class Worker:
    """One worker: what it told the coordinator and its current assignment."""

    member_id: str
    instance_id: str | None
    rebalance_timeout_ms: int
    assignors: tuple[AnnouncedAssignor, ...]
    client_id: str = ""
    client_host: str = ""
    #: -2: a static worker that left and may come back (its units stay reserved).
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: WorkerState = WorkerState.STABLE
    assigned: WorkUnits = NO_UNITS
    #: Units it was told to stop and has not confirmed stopping.
    pending_revocation: WorkUnits = NO_UNITS
    #: A worker of Connect's classic protocol (JoinGroup / SyncGroup, docs/worker-protocol.md
    #: §9): its session timeout and JoinGroup protocols. It never computes an assignment.
    classic: ClassicMemberMetadata | None = None

    @property
    def holds(self) -> WorkUnits:
        """Everything it may still run: assigned, or revoked but unconfirmed."""
        return self.assigned | self.pending_revocation

    @property
    def active(self) -> bool:
        """In the group (not a static worker that left)."""
        return self.member_epoch >= 0

    @property
    def uses_classic(self) -> bool:
        return self.classic is not None

    def assignor(self, name: str) -> AnnouncedAssignor | None:
        return next((a for a in self.assignors if a.name == name), None)


@dataclass(frozen=True)
class TargetEntry:
    """A worker's part of the target, with what the assignor wrote for it."""

    units: WorkUnits = NO_UNITS
    metadata_version: int = 0
    metadata_bytes: bytes = b""


@dataclass(frozen=True)
class WorkerGroup:
    """A worker group's durable state."""

    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    workers: Mapping[str, Worker] = field(default_factory=dict)
    target: Mapping[str, TargetEntry] = field(default_factory=dict)
    #: The assignor of the installed target, and its error (0: none).
    assignor_name: str = ""
    assignor_error: int = 0
    #: Opaque state the assignor asked to keep for its next computation.
    assignor_state_version: int = 0
    assignor_state: bytes = b""

    def with_worker(self, worker: Worker) -> WorkerGroup:
        return replace(self, workers={**self.workers, worker.member_id: worker})

    def without_worker(self, member_id: str) -> WorkerGroup:
        workers = {k: v for k, v in self.workers.items() if k != member_id}
        target = {k: v for k, v in self.target.items() if k != member_id}
        return replace(self, workers=workers, target=target)

    def target_of(self, member_id: str) -> TargetEntry:
        return self.target.get(member_id, TargetEntry())

    def active_workers(self) -> Iterator[Worker]:
        return (w for w in self.workers.values() if w.active)

    def computing_workers(self) -> Iterator[Worker]:
        """The active workers of the new protocol: those that agree on an assignor and may be
        chosen to compute (classic workers are assigned, never asked)."""
        return (w for w in self.active_workers() if not w.uses_classic)

    @property
    def only_classic(self) -> bool:
        """Workers remain, and every one is classic: the group goes back to a classic group."""
        return bool(self.workers) and all(w.uses_classic for w in self.workers.values())

    def by_instance(self, instance_id: str) -> Worker | None:
        return next((w for w in self.workers.values() if w.instance_id == instance_id), None)

    def held_by_others(self, member_id: str) -> WorkUnits:
        """Units another worker may still run (assigned or revoked without acknowledgement)."""
        held = NO_UNITS
        for other in self.workers.values():
            if other.member_id != member_id:
                held = held | other.holds
        return held

    @property
    def state_name(self) -> str:
        """ListGroups / DescribeGroups state: Empty, Assigning, Reconciling or Stable."""
        if not self.workers:
            return "Empty"
        if self.group_epoch > self.assignment_epoch:
            return "Assigning"
        if any(
            w.state != WorkerState.STABLE or w.member_epoch != self.assignment_epoch
            for w in self.active_workers()
        ):
            return "Reconciling"
        return "Stable"
