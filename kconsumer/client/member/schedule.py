"""When the next heartbeat is due (Kafka's ``HeartbeatRequestState``).

* At most one heartbeat is in flight.
* A regular heartbeat is due ``HeartbeatIntervalMs`` after the previous one was sent (the interval
  comes from the last successful response); with a `grid` that knows the wall clock, at the
  group's next tick instead (at most that long after the previous one), or at the collecting slot
  after an answer that showed the group changing (`grid`'s module docstring).
* An *urgent* heartbeat (joining, acknowledging, leaving, a changed subscription) is due at once.
* After a failure the next heartbeat is due as soon as the backoff allows
  (``retry.backoff.ms`` growing to ``retry.backoff.max.ms``), whatever the interval; a success
  resets the backoff.
"""

from __future__ import annotations

from .backoff import ExponentialBackoff, Retry
from .grid import HeartbeatGrid


def is_due(due_at: int | None, now_ms: int) -> bool:
    """Whether a request due at `due_at` (None: one is in flight) should go at `now_ms`."""
    return due_at is not None and now_ms >= due_at


class HeartbeatSchedule:
    """Timing and in-flight bookkeeping of the heartbeat."""

    def __init__(self, backoff: ExponentialBackoff, grid: HeartbeatGrid | None = None) -> None:
        """`grid`: the group's ticks (the consumer protocol with ``heartbeat.alignment=group``)."""
        self.interval_ms = 0
        self.in_flight: int | None = None
        self.in_flight_leave = False
        self.in_flight_epoch = 0
        self.grid = grid
        self._last_sent_ms: int | None = None
        #: The collecting slot after an answer that showed the group changing (grid only).
        self._collect_at: int | None = None
        #: Whether the heartbeat in flight went at (or after) the collecting slot.
        self._in_flight_collecting = False
        self._retry = Retry(backoff)

    def set_wall_offset(self, offset_ms: int) -> None:
        """The wall clock minus the member's clock (`ClockOffset`): from now on the regular
        heartbeats fall on the grid (nothing without one)."""
        if self.grid is not None:
            self.grid.wall_offset_ms = offset_ms

    def due_at(self, urgent: bool) -> int | None:
        """When the next heartbeat may go, or None while one is in flight."""
        if self.in_flight is not None:
            return None
        last = self._last_sent_ms
        base = 0 if urgent or last is None else self._regular_due(last)
        return max(base, self._retry.not_before)

    def regular_gap_ms(self) -> int | None:
        """How long after the previous heartbeat the next regular one is due: at most the interval
        (on the grid: its period, `grid_period_ms`), and `collect_delay_ms` more for a collecting
        one (None: one is in flight, none was sent since the last failure, or a retry backoff
        decides)."""
        last = self._last_sent_ms
        if self.in_flight is not None or last is None:
            return None
        due = self._regular_due(last)
        return None if self._retry.not_before > due else due - last

    def _regular_due(self, last_sent_ms: int) -> int:
        if self._collect_at is not None:
            return self._collect_at
        if self._aligned():
            assert self.grid is not None
            return self.grid.tick_after(last_sent_ms, self.interval_ms)
        return last_sent_ms + self.interval_ms

    def _aligned(self) -> bool:
        return self.grid is not None and self.grid.ready and self.interval_ms > 0

    def sent(self, request_id: int, now_ms: int, member_epoch: int, leave: bool) -> None:
        """A heartbeat left at `now_ms` (one at or after the collecting slot is the collecting one)."""
        self.in_flight = request_id
        self.in_flight_leave = leave
        self.in_flight_epoch = member_epoch
        self._last_sent_ms = now_ms
        self._in_flight_collecting = self._collect_at is not None and now_ms >= self._collect_at
        if self._in_flight_collecting:
            self._collect_at = None

    def succeeded(self, interval_ms: int, now_ms: int = 0, news: bool = False, epoch: int = 0) -> None:
        """A response without error arrived at `now_ms`; `interval_ms` is its HeartbeatIntervalMs,
        `epoch` its member epoch. `news`: it showed the group changing (a new epoch or
        assignment). The answer to a join is news whatever it holds: Apache Kafka answers a join
        with a new epoch, but librdkafka's mock cluster answers epoch 0 and no assignment while
        the newcomer's partitions are all still held, and the newcomer must still collect them
        once the others release them. On the grid, the next heartbeat after news collects what
        the others release (`grid`). A newcomer whose collecting heartbeat brings it out of
        epoch 0 has collected: its next heartbeat is at the coming tick, with the others (the
        join rule would put it a collecting delay after that tick, where it would hear of the
        next change later than they do)."""
        joined = self.in_flight_epoch == 0 and not (self._in_flight_collecting and epoch > 0)
        self.in_flight = None
        self.interval_ms = max(interval_ms, 0)
        self._retry.succeeded()
        if not (news or joined) or not self._aligned() or self._last_sent_ms is None:
            return
        assert self.grid is not None
        slot = self.grid.collect_slot(self._last_sent_ms, self.interval_ms, joined)
        if slot is not None and slot > now_ms:
            self._collect_at = slot if self._collect_at is None else min(slot, self._collect_at)

    def failed(self, now_ms: int) -> None:
        """An error or no response: the next heartbeat waits for the backoff, not the interval."""
        self.forget_in_flight()
        self._retry.failed(now_ms)

    def failed_no_backoff(self) -> None:
        """An error after which the next heartbeat goes at once (fenced: rejoin now)."""
        self.forget_in_flight()
        self._retry.succeeded()

    def forget_in_flight(self) -> None:
        """Stop waiting for the heartbeat in flight: its answer will be ignored."""
        self.in_flight = None
        self._last_sent_ms = None
        self._collect_at = None
        self._in_flight_collecting = False
