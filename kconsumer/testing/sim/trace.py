"""The event trace of one simulated run: a running hash of every line, and the last lines kept for
failure reports (all of them in verbose mode).

Two runs of one seed must produce the same hash: that is the determinism check. Lines hold only
values derived from the seed (simulated times, ids drawn from the seeded generator, epochs,
partition numbers), never object addresses or hash-ordered collections.
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Callable

#: Lines kept for the report of a failing seed.
TAIL_LINES = 80


class Trace:
    """Hashes and keeps the simulation's event lines."""

    def __init__(self, verbose: bool = False, sink: Callable[[str], None] | None = None) -> None:
        self._hash = hashlib.sha256()
        self.tail: deque[str] = deque(maxlen=TAIL_LINES)
        self.lines = 0
        self.verbose = verbose
        self._sink = sink

    def log(self, now_ms: int, who: str, text: str) -> None:
        """Record one line: the time, who (a member, the coordinator, a fault) and what."""
        line = f"{now_ms:>8} {who:<6} {text}"
        self._hash.update(line.encode())
        self._hash.update(b"\n")
        self.tail.append(line)
        self.lines += 1
        if self.verbose and self._sink is not None:
            self._sink(line)

    @property
    def digest(self) -> str:
        """The hex hash of every line so far."""
        return self._hash.hexdigest()
