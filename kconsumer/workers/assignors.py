"""Client-side assignors of worker groups (docs/workers.md): the worker the coordinator chooses
computes the group's assignment with one of these.

An assignor sees the group (`GroupView`: each worker, what it runs, its target, its metadata,
and the state the previous computation kept) and the declared work, and returns each worker's
units (`Computed`). The coordinator then revokes before it assigns, so an assignor only says where
units should be; it never has to sequence a hand-over itself.

Built in:

- `RoundRobinAssignor` (``round-robin``): units dealt in order over the workers; stable for a
  fixed membership, but a change may move many units.
- `IncrementalCooperativeAssignor` (``incremental``): Kafka Connect's rule. Units stay where they
  run; only what a balanced spread needs moves. Units of a worker that went away are held back
  for `max_delay_ms` (Connect's ``scheduled.rebalance.max.delay.ms``) so that a worker that comes
  back in time gets them again instead of the group shuffling twice; a new worker that joins in
  the meantime gets them at once, and when the delay ends they go to the least loaded workers.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..assignment.work_units import NO_UNITS, TaskId, WorkUnits

#: The version of the incremental assignor's kept state (JSON).
_STATE_VERSION = 1


@dataclass(frozen=True)
class WorkerView:
    """One worker as the assignor sees it."""

    member_id: str
    instance_id: str | None
    #: What it runs now (revoked units it has not confirmed stopping included).
    owned: WorkUnits
    #: Its part of the current target.
    target: WorkUnits
    metadata_version: int = 0
    metadata: bytes = b""
    reason: int = 0
    #: A static worker that left and may come back within its session timeout: its units are
    #: still its own (assigning them elsewhere waits for the coordinator to remove it).
    away: bool = False


@dataclass(frozen=True)
class GroupView:
    """The group at the epoch being computed."""

    group_epoch: int
    workers: tuple[WorkerView, ...]
    #: What the previous computation asked to keep (empty the first time; the coordinator keeps
    #: it durably, so it survives a change of computing worker and a coordinator failover).
    state: bytes = b""
    state_version: int = 0
    #: Wall-clock time of the computation (ms since the epoch): kept deadlines use it, since the
    #: next computation may run on another worker.
    now_ms: int = 0

    @property
    def present(self) -> list[WorkerView]:
        """The workers that may get new units (not away), sorted by member id."""
        return sorted((w for w in self.workers if not w.away), key=lambda w: w.member_id)


@dataclass(frozen=True)
class Computed:
    """An assignor's result."""

    units: Mapping[str, WorkUnits]
    state: bytes = b""
    state_version: int = 0
    #: Ask for another computation this many ms from now (the delay rule), or None.
    rebalance_in_ms: int | None = None
    error: int = 0
    metadata: Mapping[str, tuple[int, bytes]] = field(default_factory=dict)


class WorkerAssignor(ABC):
    """A client-side assignor of worker groups. Every worker of a group must offer an assignor
    of the same name with overlapping versions; the coordinator picks one of the common ones and
    the worker it chooses computes with it."""

    #: Unique among a worker's assignors; what the group agrees on.
    name: str = ""
    minimum_version: int = 0
    maximum_version: int = 0

    def metadata(self) -> tuple[int, bytes]:
        """(version, bytes) this worker announces to the assignor (default: nothing)."""
        return self.maximum_version, b""

    @abstractmethod
    def assign(self, group: GroupView, work: WorkUnits) -> Computed:
        """Where each unit of `work` runs: a part for each worker of `group`."""


def _ordered(units: WorkUnits) -> list[str | TaskId]:
    """Sorted by connector, a connector before its own tasks."""
    return sorted([*units.connectors, *units.tasks], key=_sort_key)


def _units(items: list[str | TaskId]) -> WorkUnits:
    return WorkUnits.of(
        [u for u in items if isinstance(u, str)], [u for u in items if not isinstance(u, str)]
    )


class RoundRobinAssignor(WorkerAssignor):
    """Units dealt in order over the present workers (an away static worker keeps its own)."""

    name = "round-robin"

    def assign(self, group: GroupView, work: WorkUnits) -> Computed:
        kept = {w.member_id: w.owned & work for w in group.workers if w.away}
        taken = NO_UNITS
        for units in kept.values():
            taken = taken | units
        present = group.present
        dealt: dict[str, list[str | TaskId]] = {w.member_id: [] for w in present}
        for i, unit in enumerate(_ordered(work - taken)):
            if present:
                dealt[present[i % len(present)].member_id].append(unit)
        return Computed({**kept, **{m: _units(items) for m, items in dealt.items()}})


class IncrementalCooperativeAssignor(WorkerAssignor):
    """Kafka Connect's incremental cooperative rule (see the module docstring)."""

    name = "incremental"

    def __init__(self, max_delay_ms: int = 300_000) -> None:
        if max_delay_ms < 0:
            raise ValueError(f"max_delay_ms must not be negative, got {max_delay_ms}")
        self.max_delay_ms = max_delay_ms

    def assign(self, group: GroupView, work: WorkUnits) -> Computed:
        kept = _KeptState.decode(group.state)
        present = group.present
        members = {w.member_id for w in group.workers}
        newcomers = [w for w in present if kept.members and w.member_id not in kept.members]
        # Units stay where they run (or are headed), if still declared and not doubly claimed.
        placed: dict[str, set[str | TaskId]] = {w.member_id: set() for w in group.workers}
        taken: set[str | TaskId] = set()
        # Where the last computation sent a unit wins over where it still runs.
        for side in ("target", "owned"):
            for worker in sorted(group.workers, key=lambda w: w.member_id):
                for unit in _ordered(getattr(worker, side) & work):
                    if unit not in taken:
                        placed[worker.member_id].add(unit)
                        taken.add(unit)
        free = [u for u in _ordered(work) if u not in taken]
        # Units of workers that went away: held back until the delay ends, unless a newcomer can
        # take them now.
        previously = set(kept.placed)
        lost = [u for u in free if _key(u) in previously]
        deadline = kept.deadline_ms
        held: list[str | TaskId] = []
        if lost and not newcomers and self.max_delay_ms > 0:
            deadline = deadline or group.now_ms + self.max_delay_ms
            if group.now_ms < deadline:
                held = lost
        if not held:
            deadline = 0
        assignable = [u for u in free if u not in held]
        targets = newcomers if held == [] and lost and newcomers else present
        self._spread(placed, assignable, targets, present)
        units = {m: _units(sorted(items, key=_sort_key)) for m, items in placed.items() if m in members}
        state = _KeptState(
            members=sorted(members),
            placed=sorted({_key(u) for items in placed.values() for u in items} | {_key(u) for u in held}),
            deadline_ms=deadline,
        )
        return Computed(
            units,
            state=state.encode(),
            state_version=_STATE_VERSION,
            rebalance_in_ms=(deadline - group.now_ms) if held else None,
        )

    @staticmethod
    def _spread(
        placed: dict[str, set[str | TaskId]],
        free: list[str | TaskId],
        first: list[WorkerView],
        present: list[WorkerView],
    ) -> None:
        """Give `free` units to the least loaded of `first` (newcomers, when they take lost
        units) and then balance: a present worker above the ceiling gives units to one below the
        floor (the coordinator revokes them before the other starts them)."""
        if not present:
            return
        for unit in free:
            target = min(first or present, key=lambda w: (len(placed[w.member_id]), w.member_id))
            placed[target.member_id].add(unit)
        total = sum(len(placed[w.member_id]) for w in present)
        floor, extra = divmod(total, len(present))
        ordered = sorted(present, key=lambda w: (-len(placed[w.member_id]), w.member_id))
        ceilings = {w.member_id: floor + (1 if i < extra else 0) for i, w in enumerate(ordered)}
        donors = [w.member_id for w in ordered if len(placed[w.member_id]) > ceilings[w.member_id]]
        takers = [w.member_id for w in reversed(ordered) if len(placed[w.member_id]) < ceilings[w.member_id]]
        for donor in donors:
            for unit in sorted(placed[donor], key=_sort_key, reverse=True):
                if len(placed[donor]) <= ceilings[donor]:
                    break
                taker = next((t for t in takers if len(placed[t]) < ceilings[t]), None)
                if taker is None:
                    return
                placed[donor].discard(unit)
                placed[taker].add(unit)


def _key(unit: str | TaskId) -> str:
    return json.dumps(unit)


def _sort_key(unit: str | TaskId) -> tuple[str, int]:
    return (unit, -1) if isinstance(unit, str) else unit


@dataclass(frozen=True)
class _KeptState:
    """What the incremental assignor keeps between computations: the workers and placed units
    of the last one, and the end of the current delay (0: none)."""

    members: list[str] = field(default_factory=list)
    placed: list[str] = field(default_factory=list)
    deadline_ms: int = 0

    def encode(self) -> bytes:
        value = {"members": self.members, "placed": self.placed, "deadline_ms": self.deadline_ms}
        return json.dumps(value, sort_keys=True).encode()

    @staticmethod
    def decode(data: bytes) -> _KeptState:
        if not data:
            return _KeptState()
        try:
            value = json.loads(data)
            return _KeptState(list(value["members"]), list(value["placed"]), int(value["deadline_ms"]))
        except (ValueError, KeyError, TypeError):
            return _KeptState()  # another assignor's state, or a damaged one: start afresh
