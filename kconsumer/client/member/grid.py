"""Group-aligned heartbeats: every member of a group heartbeats at the same points of the interval.

With the consumer protocol a member hears of its new target assignment only in the answer to its
next heartbeat. When a member leaves or crashes, each member that takes over its partitions waits
for its own next heartbeat, so the hand-over lasts as long as the longest of those waits: with
independent phases, k such members wait k/(k+1) of an interval on average. And a partition that
moves from one member to another needs two heartbeats in turn: the old owner's, after which it
revokes and acknowledges at once, then the new owner's next one.

So the regular heartbeats of kconsumer's members fall on the group's *ticks*: the wall-clock
times ``t`` with ``t mod period == crc32(group id) mod period`` (groups differ in phase, so a
coordinator's groups do not all heartbeat at once), the period being the interval and a hundredth
of it (`grid_period_ms`). Every member then hears of a change at the same tick, half an interval
after it on average. And when an answer shows the group changing
(a new member epoch or assignment, or the member's own join), the member's next heartbeat goes a
little after the coming tick (`collect_delay_ms`), once the others have heard of the change and
acknowledged their revocations, to collect what they released, instead of a whole interval later.

The wall clock is the only thing the members of a group share; clocks a few milliseconds apart
(NTP) keep the members aligned, and farther apart they fall back to independent phases, which is
what every other client has. The wall clock is an input: the driver sends the difference between
it and the member's clock (`ClockOffset`); until then the member heartbeats at its own interval.
A regular heartbeat is never later than one period after the previous one (the member moves
to the grid by shortening one interval), except a collecting heartbeat, at most the collect
delay later.
"""

from __future__ import annotations

import zlib


def grid_period_ms(interval_ms: int) -> int:
    """How far apart the ticks are: the interval and a hundredth of it (at least 1 ms more).

    A member that crashed is removed a session timeout after the coordinator heard its last
    heartbeat. With ticks exactly an interval apart and a session timeout that is a multiple of it
    (Kafka's defaults: 45 s and 5 s), that falls on the tick at which everyone else heartbeats,
    and which the coordinator handles first decides whether they hear of it then or an interval
    later (two of three crashes waited the extra interval in one measurement). A hundredth of an
    interval longer, the others' heartbeats come ``session timeout / interval`` hundredths of an
    interval after the removal (60 ms with 6 s and 1 s; 450 ms with 45 s and 5 s)."""
    return interval_ms + max(1, interval_ms // 100)


def collect_delay_ms(interval_ms: int) -> int:
    """How long after a tick a member collects released partitions: a tenth of the interval (the
    time the others have to revoke and acknowledge), at least 50 ms but no more than half."""
    return max(interval_ms // 10, min(50, interval_ms // 2))


class HeartbeatGrid:
    """The ticks of one group's heartbeats (see the module docstring)."""

    def __init__(self, group_id: str) -> None:
        self._phase_seed = zlib.crc32(group_id.encode("utf-8"))
        #: The wall clock minus the member's clock, in ms; None until the driver tells.
        self.wall_offset_ms: int | None = None

    @property
    def ready(self) -> bool:
        """Whether the member knows the wall clock (else it heartbeats at its own interval)."""
        return self.wall_offset_ms is not None

    def tick_after(self, t_ms: int, interval_ms: int) -> int:
        """The group's first tick strictly after `t_ms` (the member's clock), for a heartbeat
        interval of `interval_ms`."""
        assert self.wall_offset_ms is not None and interval_ms > 0
        period = grid_period_ms(interval_ms)
        phase = self._phase_seed % period
        wall = t_ms + self.wall_offset_ms
        return phase + ((wall - phase) // period + 1) * period - self.wall_offset_ms

    def collect_slot(self, sent_ms: int, interval_ms: int, joined: bool) -> int | None:
        """When to collect after a change shown by the answer to a heartbeat sent at `sent_ms`:
        `collect_delay_ms` after the tick at which the other members hear of it. For a join that is
        the coming tick; for a heartbeat sent at a tick (up to half the delay after it), that tick:
        the others heard at it too. None for a heartbeat off the grid (nothing to time by)."""
        delay = collect_delay_ms(interval_ms)
        if joined:
            return self.tick_after(sent_ms, interval_ms) + delay
        tick = self.tick_after(sent_ms - delay // 2 - 1, interval_ms)
        return tick + delay if tick <= sent_ms else None
