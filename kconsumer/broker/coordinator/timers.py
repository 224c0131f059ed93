"""Keyed timers driven by the caller's clock (session, rebalance and assignment deadlines)."""

from __future__ import annotations

import heapq
from typing import Any

#: Timer keys are tuples of strings, e.g. ("session", group id, member id).
TimerKey = tuple[str, ...]


class Timers:
    """A set of keyed deadlines. Rescheduling a key replaces its deadline; nothing runs by itself:
    `expired(now_ms)` returns what is due and the caller acts on it."""

    def __init__(self) -> None:
        self._deadlines: dict[TimerKey, tuple[int, int, Any]] = {}
        self._heap: list[tuple[int, int, TimerKey]] = []
        self._seq = 0

    def schedule(self, key: TimerKey, deadline_ms: int, payload: Any = None) -> None:
        self._seq += 1
        self._deadlines[key] = (deadline_ms, self._seq, payload)
        heapq.heappush(self._heap, (deadline_ms, self._seq, key))
        if len(self._heap) > 4 * len(self._deadlines) + 64:
            self._compact()

    def cancel(self, key: TimerKey) -> None:
        self._deadlines.pop(key, None)

    def get(self, key: TimerKey) -> tuple[int, Any] | None:
        entry = self._deadlines.get(key)
        return None if entry is None else (entry[0], entry[2])

    def expired(self, now_ms: int) -> list[tuple[TimerKey, Any]]:
        """Remove and return the (key, payload) of every timer due at `now_ms`, earliest first."""
        due: list[tuple[TimerKey, Any]] = []
        heap = self._heap
        while heap and heap[0][0] <= now_ms:
            _deadline, seq, key = heapq.heappop(heap)
            entry = self._deadlines.get(key)
            if entry is not None and entry[1] == seq:
                del self._deadlines[key]
                due.append((key, entry[2]))
        return due

    def next_deadline(self) -> int | None:
        heap = self._heap
        while heap:
            deadline, seq, key = heap[0]
            entry = self._deadlines.get(key)
            if entry is not None and entry[1] == seq:
                return deadline
            heapq.heappop(heap)
        return None

    def __len__(self) -> int:
        return len(self._deadlines)

    def _compact(self) -> None:
        self._heap = [(d, s, k) for k, (d, s, _p) in self._deadlines.items()]
        heapq.heapify(self._heap)
