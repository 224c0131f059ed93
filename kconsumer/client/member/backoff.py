"""Exponential retry backoff with injected jitter (Kafka's ``ExponentialBackoff``).

``backoff(n) = min(max_ms, initial_ms * 2**n * random(1 - jitter, 1 + jitter))``. The random source
is a callable returning a float in [0, 1), passed in by the runtime (``random.random``) or a test;
without one the factor is exactly 1, so the core stays deterministic.
"""

from __future__ import annotations

import math
from collections.abc import Callable

#: Kafka's retry backoff: base 2, jitter 20 %.
MULTIPLIER = 2
JITTER = 0.2


def _no_jitter() -> float:
    return 0.5


class ExponentialBackoff:
    """``retry.backoff.ms`` growing exponentially to ``retry.backoff.max.ms``."""

    def __init__(
        self,
        initial_ms: int,
        max_ms: int,
        rand: Callable[[], float] | None = None,
        jitter: float = JITTER,
    ) -> None:
        self.initial_ms = min(initial_ms, max_ms)
        self.max_ms = max_ms
        self.jitter = jitter
        self._rand = rand or _no_jitter
        # The exponent beyond which the backoff is capped anyway (avoids huge powers).
        self._max_exponent = (
            math.log(max_ms / max(self.initial_ms, 1), MULTIPLIER) if max_ms > self.initial_ms else 0.0
        )

    def backoff(self, attempts: int) -> int:
        """The delay in ms before retry number ``attempts + 1`` (attempts counts failures so far)."""
        if self._max_exponent == 0.0:
            return self.initial_ms
        term = self.initial_ms * MULTIPLIER ** min(attempts, self._max_exponent)
        factor = 1.0 - self.jitter + 2.0 * self.jitter * self._rand()
        return min(int(term * factor), self.max_ms)


class Retry:
    """Failure count and the earliest time of the next attempt, for one kind of request."""

    def __init__(self, backoff: ExponentialBackoff) -> None:
        self._backoff = backoff
        self.attempts = 0
        self.not_before = 0

    def failed(self, now_ms: int) -> int:
        """Record a failure at `now_ms`; returns the time the next attempt may start."""
        self.not_before = now_ms + self._backoff.backoff(self.attempts)
        self.attempts += 1
        return self.not_before

    def succeeded(self) -> None:
        """Record a success: the next failure backs off from the initial delay again."""
        self.attempts = 0
        self.not_before = 0
