"""When the next heartbeat is due (Kafka's ``HeartbeatRequestState``).

* At most one heartbeat is in flight.
* A regular heartbeat is due ``HeartbeatIntervalMs`` after the previous one was sent (the interval
  comes from the last successful response).
* An *urgent* heartbeat (joining, acknowledging, leaving, a changed subscription) is due at once.
* After a failure the next heartbeat is due as soon as the backoff allows
  (``retry.backoff.ms`` growing to ``retry.backoff.max.ms``), whatever the interval; a success
  resets the backoff.
"""

from __future__ import annotations

from .backoff import ExponentialBackoff, Retry


def is_due(due_at: int | None, now_ms: int) -> bool:
    """Whether a request due at `due_at` (None: one is in flight) should go at `now_ms`."""
    return due_at is not None and now_ms >= due_at


class HeartbeatSchedule:
    """Timing and in-flight bookkeeping of the heartbeat."""

    def __init__(self, backoff: ExponentialBackoff) -> None:
        self.interval_ms = 0
        self.in_flight: int | None = None
        self.in_flight_leave = False
        self.in_flight_epoch = 0
        self._last_sent_ms: int | None = None
        self._retry = Retry(backoff)

    def due_at(self, urgent: bool) -> int | None:
        """When the next heartbeat may go, or None while one is in flight."""
        if self.in_flight is not None:
            return None
        base = 0 if urgent or self._last_sent_ms is None else self._last_sent_ms + self.interval_ms
        return max(base, self._retry.not_before)

    def sent(self, request_id: int, now_ms: int, member_epoch: int, leave: bool) -> None:
        """A heartbeat left at `now_ms`."""
        self.in_flight = request_id
        self.in_flight_leave = leave
        self.in_flight_epoch = member_epoch
        self._last_sent_ms = now_ms

    def succeeded(self, interval_ms: int) -> None:
        """A response without error arrived; `interval_ms` is its HeartbeatIntervalMs."""
        self.in_flight = None
        self.interval_ms = max(interval_ms, 0)
        self._retry.succeeded()

    def failed(self, now_ms: int) -> None:
        """An error or no response: the next heartbeat waits for the backoff, not the interval."""
        self.in_flight = None
        self._last_sent_ms = None
        self._retry.failed(now_ms)

    def failed_no_backoff(self) -> None:
        """An error after which the next heartbeat goes at once (fenced: rejoin now)."""
        self.in_flight = None
        self._last_sent_ms = None
        self._retry.succeeded()

    def forget_in_flight(self) -> None:
        """Stop waiting for the heartbeat in flight: its answer will be ignored."""
        self.in_flight = None
        self._last_sent_ms = None
