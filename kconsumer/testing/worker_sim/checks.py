"""The worker-group simulation's invariants.

- **exclusive**: no unit is started by a worker's application while another live worker's
  application runs it (a unit runs from the start of ``on_assigned`` to the end of the
  ``on_revoked`` or ``on_lost`` that stops it; a crashed process runs nothing).
- **coordinator-exclusive**: in the coordinator's state no unit is held (assigned or pending
  revocation) by two workers.
- **converges** (checked after the faults stopped): every declared unit ends up run by exactly one
  live worker, nothing undeclared runs, the group is Stable and no callback is left running.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...assignment.work_units import NO_UNITS

if TYPE_CHECKING:
    from .world import SimWorker, World


@dataclass(frozen=True)
class Violation:
    kind: str
    time_ms: int
    message: str

    def __str__(self) -> str:
        return f"[{self.kind}] at {self.time_ms} ms: {self.message}"


class Checks:
    """Watches one world (see the module docstring); `violations` holds what broke."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.violations: list[Violation] = []
        self.convergence_reason = "not checked"

    def violation(self, kind: str, message: str) -> None:
        found = Violation(kind, self.world.sched.now, message)
        self.violations.append(found)
        self.world.trace.log(found.time_ms, "CHECK", str(found))

    def starting(self, worker: SimWorker, units: set[str]) -> None:
        """`worker`'s application starts `units` (on_assigned begins)."""
        for other in self.world.live():
            if other is not worker and (both := sorted(units & other.app.running)):
                self.violation("exclusive", f"{worker.label} starts {both} while {other.label} runs them")

    def after_step(self) -> None:
        group = self.world.coordinator.state.worker_groups.get("workers")
        if group is None:
            return
        seen = NO_UNITS
        for worker in group.workers.values():
            if twice := worker.holds & seen:
                self.violation("coordinator-exclusive", f"units {twice} held twice in the coordinator")
            seen = seen | worker.holds

    def converged(self) -> bool:
        """Whether the world has settled (the reason is kept in `convergence_reason`)."""
        world = self.world
        declared = set(world.declared())
        runners: dict[str, list[str]] = {}
        active = [w for w in world.live() if w.core.state.value not in ("closed", "failed")]
        for worker in active:
            if worker.app.busy is not None:
                self.convergence_reason = f"{worker.label} runs a callback"
                return False
            for unit in worker.app.running:
                runners.setdefault(unit, []).append(worker.label)
        if not active:
            self.convergence_reason = "no worker"
            return False
        missing = sorted(declared - set(runners))
        extra = sorted(set(runners) - declared)
        doubled = sorted(u for u, ws in runners.items() if len(ws) > 1)
        if missing or extra or doubled:
            self.convergence_reason = f"missing {missing}, undeclared {extra}, doubled {doubled}"
            return False
        state = world.coordinator.state
        group = state.worker_groups.get("workers")
        classic = state.classic_groups.get("workers")
        if all(w.kind_classic for w in active):
            # Only classic workers: a classic group (converted back if it was a worker group).
            if classic is None or classic.state.name != "STABLE":
                self.convergence_reason = f"classic group {'gone' if classic is None else classic.state.name}"
                return False
        elif group is None or group.state_name != "Stable":
            self.convergence_reason = f"group {'gone' if group is None else group.state_name}"
            return False
        self.convergence_reason = "converged"
        return True
