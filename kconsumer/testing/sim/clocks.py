"""The member processes' wall clocks: what their heartbeat grids align by (`client.member.grid`).

A seed draws its clocks from a generator of their own (``f"{seed}:clocks"``), so a seed's other
draws, and its course where no member heeds a wall clock, stay what they were:

* how far each member slot's clock is ahead of true time: within 3 ms of each other in most seeds
  (NTP), one slot up to an interval off in some, every slot anywhere in an interval in others;
  a slot may have no wall clock at all (its process never sends `ClockOffset`: it heartbeats at
  its own interval, as every other client does), and in a few seeds none has one;
* clock steps: in some seeds a slot's clock jumps (forward or back, up to two intervals) once
  during the fault phase, as after an NTP step; a live process hears of it at once (the runtime
  notices at its next event).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

#: True time at the simulation's start, in wall-clock ms (any value; a real one looks real).
_EPOCH_MS = (1_600_000_000_000, 1_900_000_000_000)


@dataclass(frozen=True)
class ClockStep:
    """Slot `slot`'s clock jumps by `by_ms` at simulated time `at_ms`."""

    at_ms: int
    slot: int
    by_ms: int


@dataclass(frozen=True)
class ClockPlan:
    """Every member slot's wall clock for one seed (see the module docstring)."""

    epoch_ms: int
    #: Per slot, ms ahead of true time; None: the slot's processes have no wall clock.
    skews: tuple[int | None, ...]
    steps: tuple[ClockStep, ...]

    @classmethod
    def draw(cls, seed: int, members: int, interval_ms: int, fault_phase_ms: int) -> ClockPlan:
        """The clocks of a seed of `members` slots (see the module docstring)."""
        rng = random.Random(f"{seed}:clocks")
        epoch = rng.randint(*_EPOCH_MS)
        kind = rng.random()
        skews: list[int | None]
        if kind < 0.05:
            skews = [None] * members
        elif kind < 0.2:
            skews = [rng.randrange(interval_ms) for _ in range(members)]
        else:
            skews = [rng.randint(-3, 3) for _ in range(members)]
            if kind < 0.4:
                skews[rng.randrange(members)] = rng.randint(-interval_ms, interval_ms)
        skews = [None if rng.random() < 0.1 else skew for skew in skews]
        steps: list[ClockStep] = []
        if rng.random() < 0.2:
            jump = rng.randint(50, 2 * interval_ms) * rng.choice((-1, 1))
            steps.append(ClockStep(rng.randint(500, fault_phase_ms), rng.randrange(members), jump))
        return cls(epoch, tuple(skews), tuple(steps))

    def offset_ms(self, slot: int, now_ms: int) -> int | None:
        """Slot `slot`'s wall clock minus the simulated clock at `now_ms` (None: no wall clock)."""
        skew = self.skews[slot]
        if skew is None:
            return None
        stepped = sum(step.by_ms for step in self.steps if step.slot == slot and step.at_ms <= now_ms)
        return self.epoch_ms + skew + stepped

    def describe(self) -> str:
        """The plan in a few words, for a seed's report."""
        skews = ",".join("-" if s is None else str(s) for s in self.skews)
        steps = "".join(f" step m{s.slot}{s.by_ms:+d}ms@{s.at_ms}" for s in self.steps)
        return f"clocks {skews}{steps}"
