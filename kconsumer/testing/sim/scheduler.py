"""The simulated clock: a queue of actions ordered by (time, insertion order).

Nothing in the simulation reads a real clock. An action scheduled for a time in the past runs at the
current time; two actions for the same time run in the order they were scheduled, so a run depends
only on the seed.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any

Action = Callable[..., None]


class Scheduler:
    """A discrete-event loop over simulated milliseconds."""

    def __init__(self) -> None:
        self.now = 0
        self._heap: list[tuple[int, int, Action, tuple[Any, ...]]] = []
        self._seq = 0
        #: How many actions ran (a cost measure, reported in the results).
        self.steps = 0
        #: Called after every action (the invariant checks hook in here).
        self.after_step: Callable[[], None] | None = None

    def at(self, time_ms: int, action: Action, *args: Any) -> None:
        """Run `action(*args)` at `time_ms` (or now, if that is in the past)."""
        self._seq += 1
        heapq.heappush(self._heap, (max(time_ms, self.now), self._seq, action, args))

    def after(self, delay_ms: int, action: Action, *args: Any) -> None:
        """Run `action(*args)` `delay_ms` from now."""
        self.at(self.now + max(delay_ms, 0), action, *args)

    def run_until(self, end_ms: int, stop: Callable[[], bool] | None = None) -> None:
        """Run every action due up to `end_ms` (inclusive), then set the clock to `end_ms`.
        Returns early, with the clock at the last action, once `stop()` is true."""
        heap = self._heap
        after_step = self.after_step
        while heap and heap[0][0] <= end_ms:
            time_ms, _seq, action, args = heapq.heappop(heap)
            self.now = time_ms
            action(*args)
            self.steps += 1
            if after_step is not None:
                after_step()
            if stop is not None and stop():
                return
        self.now = max(self.now, end_ms)

    @property
    def pending(self) -> int:
        """Actions still queued."""
        return len(self._heap)
