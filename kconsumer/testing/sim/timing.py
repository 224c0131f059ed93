"""The members' timing promises, checked after every step of a member (`Checker`):

* ``heartbeat-late``: while a member heartbeats and its last heartbeat was answered, its next
  regular heartbeat is due at most one grid period (the interval and a hundredth) after the
  previous one, and the collecting delay more for a collecting heartbeat (`client.member.grid`):
  aligned heartbeats move onto the group's ticks by shortening an interval, never by lengthening
  one, whatever the wall clock does (skews, steps).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...client.member.grid import collect_delay_ms, grid_period_ms
from ...client.member.state import HEARTBEATING

if TYPE_CHECKING:
    from .runtime import SimMember


def late_heartbeat(proc: SimMember) -> str | None:
    """What is wrong with `proc`'s heartbeat timing (None: nothing)."""
    core = proc.core
    schedule = core.heartbeats.schedule
    gap, interval = schedule.regular_gap_ms(), schedule.interval_ms
    if core.state not in HEARTBEATING or gap is None or interval <= 0:
        return None
    if gap <= grid_period_ms(interval) + collect_delay_ms(interval):
        return None
    return f"{proc.label}: next regular heartbeat due {gap} ms after the previous one (interval {interval})"
