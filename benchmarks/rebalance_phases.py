"""When the rebalance benchmark's events start (`benchmarks.rebalance`): a random point of the
heartbeat interval, drawn alike for every client, and spread evenly over a cell's events.

How long partitions stay unowned after a join, leave or crash depends on where the event falls in
the members' heartbeat cycles (each member hears of a new target at its next heartbeat). Without
a wait, an event would start a fixed time after the previous one settled, so at the same point of
each client's cycles run after run, a point set by that client's own timing: a bias that more
runs do not average out. With a random wait, the point is chance, drawn alike for every client.

Independent draws bunch, though: fifteen leaves whose waits happen to fall early in the interval
all wait long for the next heartbeat, and such a run says more about the draws than about the
client. So the waits are stratified (`HeartbeatPhases`): every `count` of them take one point of
each of `count` equal slices of the interval, the slices in random order. A cell's events of one
kind share one such draw over all the runs of the benchmark (`PhasePlan`): nine leaves in three
runs of three cover nine ninths, and the three crashes of three runs (one per run) three thirds.

A wait only spreads events over the members' cycles if it counts from a point that keeps its place
in them, so it counts from the moment the group went quiet (its last ownership change, which a
member's heartbeat answer made, plus the convergence check's quiet period), not from when the
parent, polling, saw that: a lead of `LEAD_S` covers the polling.
"""

from __future__ import annotations

import math
import random
import time

from .rebalance_members import TIMERS

#: Time from the moment a group went quiet to the earliest start of its next event: more than the
#: convergence check's polling period (0.2 s) and its work on a long run's event log.
LEAD_S = 0.5
#: Events a group makes `Settings.repeats` times per run; the others once per run.
REPEATED = ("join", "leave")


class HeartbeatPhases:
    """Stratified random waits of up to one heartbeat interval (see the module docstring)."""

    def __init__(self, count: int, interval_s: float = TIMERS.heartbeat_interval_ms / 1000) -> None:
        self.count = count
        self.interval_s = interval_s
        self._left: list[float] = []

    def next(self) -> float:
        """The next wait in seconds."""
        if not self._left:
            slices = list(range(self.count))
            random.shuffle(slices)
            self._left = [(k + random.random()) / self.count * self.interval_s for k in slices]
        return self._left.pop()

    def start_after(self, quiet: float, now: float) -> float:
        """When an event should start, on the monotonic clock: `LEAD_S` and the next wait after
        `quiet` (when the group went quiet), whole intervals later if that is before `now`."""
        start = quiet + LEAD_S + self.next()
        if start < now:
            start += math.ceil((now - start) / self.interval_s) * self.interval_s
        return start

    def wait_after(self, quiet: float) -> None:
        """Sleep until `start_after(quiet)`."""
        now = time.monotonic()
        time.sleep(max(0.0, self.start_after(quiet, now) - now))


class PhasePlan:
    """The waits of a whole benchmark: one `HeartbeatPhases` per cell and event, stratified over
    all the events of that kind the cell makes in all its runs."""

    def __init__(self, repeats: int, runs: int) -> None:
        self.repeats, self.runs = repeats, runs
        self._phases: dict[tuple[str, str, int, int, str], HeartbeatPhases] = {}

    def phases(self, client: str, broker: str, members: int, partitions: int, event: str) -> HeartbeatPhases:
        """The waits before `event` in the cell (`client`, `broker`, `members`, `partitions`)."""
        key = (client, broker, members, partitions, event)
        if key not in self._phases:
            per_run = self.repeats if event in REPEATED else 1
            self._phases[key] = HeartbeatPhases(per_run * self.runs)
        return self._phases[key]
