"""Group-aligned heartbeats (`kconsumer.client.member.grid`): regular heartbeats on the group's
wall-clock ticks, a collecting heartbeat after an answer that showed the group changing."""

from __future__ import annotations

import itertools
import zlib

import pytest
from member_driver import Driver

from kconsumer.client.member.effects import SendHeartbeat
from kconsumer.client.member.events import ClockOffset, Subscribe
from kconsumer.client.member.grid import HeartbeatGrid, collect_delay_ms, grid_period_ms
from kconsumer.client.member.model import ClassicSettings

INTERVAL = 1_000
#: The ticks' period: the interval and a hundredth.
PERIOD = 1_010
#: The wall clock minus the test's clock.
OFFSET = 1_700_000_000_123
PHASE = zlib.crc32(b"g") % PERIOD


def _on_tick(t: int) -> bool:
    return (t + OFFSET) % PERIOD == PHASE


class _Clocked(Driver):
    """A driver that records the time of every heartbeat it sees leave."""

    def __init__(self, **config: object) -> None:
        super().__init__(**config)
        self.now_of: dict[int, int] = {}

    def send(self, event, at=None):  # type: ignore[no-untyped-def]
        effects = super().send(event, at)
        for effect in effects:
            if isinstance(effect, SendHeartbeat):
                self.now_of[id(effect)] = self.now
        return effects


def _joined(**config: object) -> _Clocked:
    """A member that knows the wall clock, joined (answered at once) and owning foo-0."""
    d = _Clocked(**config)
    d.send(ClockOffset(OFFSET))
    d.join({"foo": [0]}, interval=INTERVAL)
    return d


def _until_heartbeat(d: _Clocked) -> int:
    """Tick until a heartbeat is in flight; when it left."""
    while not d.pending(SendHeartbeat):
        deadline = d.core.next_deadline(d.now)
        assert deadline is not None
        d.advance(max(deadline - d.now, 0))
    return d.now_of[id(d.in_flight())]


def _next_heartbeat(d: _Clocked) -> int:
    """Tick until the next heartbeat leaves; answer it without news; its send time."""
    sent = _until_heartbeat(d)
    d.respond(d.core.member_epoch, interval=INTERVAL)
    return sent


# -- the grid's arithmetic ---------------------------------------------------------------------


def test_ticks_are_the_wall_clock_times_at_the_groups_phase() -> None:
    grid = HeartbeatGrid("g")
    grid.wall_offset_ms = OFFSET
    t = 5_000
    tick = grid.tick_after(t, INTERVAL)
    assert _on_tick(tick) and t < tick <= t + PERIOD
    assert grid.tick_after(tick, INTERVAL) == tick + PERIOD  # strictly after
    assert grid.tick_after(tick - 1, INTERVAL) == tick
    other = HeartbeatGrid("another group")
    other.wall_offset_ms = OFFSET
    assert other.tick_after(t, INTERVAL) != tick  # groups differ in phase
    skewed = HeartbeatGrid("g")
    skewed.wall_offset_ms = OFFSET + 7  # a clock 7 ms ahead: its ticks come 7 ms earlier
    assert skewed.tick_after(t, INTERVAL) == tick - 7


def test_the_period_is_a_hundredth_longer_and_the_collect_delay_a_tenth_within_bounds() -> None:
    assert grid_period_ms(INTERVAL) == PERIOD and grid_period_ms(5_000) == 5_050
    assert grid_period_ms(50) == 51  # at least a millisecond more
    assert collect_delay_ms(5_000) == 500 and collect_delay_ms(1_000) == 100
    assert collect_delay_ms(200) == 50 and collect_delay_ms(60) == 30


def test_the_first_tick_after_a_crashed_members_removal_is_after_it() -> None:
    """A session timeout that is a multiple of the interval: the removal, a session timeout after
    the victim's heartbeat at a tick, comes before the others' first tick after it, by six
    hundredths of the interval (not at it, where who comes first would be chance)."""
    grid = HeartbeatGrid("g")
    grid.wall_offset_ms = OFFSET
    victims_last = grid.tick_after(50_000, INTERVAL)
    removal = victims_last + 6 * INTERVAL
    assert grid.tick_after(removal - 1, INTERVAL) == removal + 60


def test_collecting_times_by_the_tick_at_which_the_others_hear() -> None:
    grid = HeartbeatGrid("g")
    grid.wall_offset_ms = OFFSET
    tick = grid.tick_after(10_000, INTERVAL)
    delay = collect_delay_ms(INTERVAL)
    # Sent at a tick (up to half the delay after it): the others heard at that tick too.
    assert grid.collect_slot(tick, INTERVAL, joined=False) == tick + delay
    assert grid.collect_slot(tick + delay // 2, INTERVAL, joined=False) == tick + delay
    assert grid.collect_slot(tick + delay // 2 + 1, INTERVAL, joined=False) is None  # off the grid
    # A join: the others hear of it at the coming tick, even right after one.
    assert grid.collect_slot(tick + 1, INTERVAL, joined=True) == tick + PERIOD + delay


# -- the member -------------------------------------------------------------------------------


def test_without_the_wall_clock_the_member_keeps_its_own_interval() -> None:
    d = _Clocked()
    d.join({"foo": [0]}, interval=INTERVAL)
    first = _next_heartbeat(d)
    assert _next_heartbeat(d) == first + INTERVAL


def test_regular_heartbeats_move_onto_the_ticks_and_are_never_more_than_a_period_apart() -> None:
    d = _joined()
    sends = [_next_heartbeat(d) for _ in range(6)]
    # The join's answer asked for a collecting heartbeat a little after the coming tick ...
    assert _on_tick(sends[0] - collect_delay_ms(INTERVAL))
    # ... then every regular one is on a tick, one interval apart.
    assert all(_on_tick(t) for t in sends[1:])
    assert [b - a for a, b in itertools.pairwise(sends[1:])] == [PERIOD] * 4
    assert all(0 < b - a <= PERIOD for a, b in itertools.pairwise(sends))


def test_an_answer_with_a_new_epoch_sends_a_collecting_heartbeat_after_the_acknowledgement() -> None:
    d = _joined()
    for _ in range(2):
        tick = _next_heartbeat(d)
    assert _on_tick(tick)
    # At the next tick the group changed: a new epoch and a partition more.
    tick = _until_heartbeat(d)
    d.respond(d.core.member_epoch + 1, {"foo": [0, 1]}, interval=INTERVAL)
    d.settle()  # callback done, offsets fetched: the acknowledgement goes at once
    ack = d.in_flight()
    assert d.now_of[id(ack)] - tick < collect_delay_ms(INTERVAL)
    d.respond(d.core.member_epoch, interval=INTERVAL)
    # The collecting heartbeat, a little after the tick, then the next tick again.
    assert _next_heartbeat(d) == tick + collect_delay_ms(INTERVAL)
    assert _next_heartbeat(d) == tick + PERIOD


def test_a_join_answered_at_epoch_0_without_partitions_still_collects_after_the_coming_tick() -> None:
    """librdkafka's mock cluster answers a newcomer whose partitions are all still held with epoch
    0 and no assignment (Apache Kafka gives a new epoch at once). The others hear of the join at
    the coming tick and release; the newcomer's next heartbeat must come a little after that tick
    to collect, not a whole period later, and again each period while it waits at epoch 0."""
    d = _Clocked()
    d.send(ClockOffset(OFFSET))
    d.send(Subscribe(topics=("foo",)))
    d.metadata()
    joined_at = d.now_of[id(d.in_flight())]
    d.respond(0, interval=INTERVAL)
    d.settle()
    coming_tick = joined_at + 1
    while not _on_tick(coming_tick):
        coming_tick += 1
    assert _until_heartbeat(d) == coming_tick + collect_delay_ms(INTERVAL)
    d.respond(0, interval=INTERVAL)  # still held: epoch 0 again
    assert _until_heartbeat(d) == coming_tick + PERIOD + collect_delay_ms(INTERVAL)
    d.respond(3, {"foo": [0]}, interval=INTERVAL)
    d.settle()
    assert d.core.member_epoch == 3


def test_a_newcomer_that_collected_out_of_epoch_0_heartbeats_at_the_coming_tick() -> None:
    """The collecting heartbeat of a newcomer that waited at epoch 0 brings its partitions: its
    next regular heartbeat is at the coming tick with the others, not a collecting delay after
    it (it would hear of the next change after the others had, and the next newcomer collecting
    at that slot would find its partitions not yet released: a whole period more per rolling
    restart's step on librdkafka's mock, `docs/benchmarks.md`)."""
    d = _Clocked()
    d.send(ClockOffset(OFFSET))
    d.send(Subscribe(topics=("foo",)))
    d.metadata()
    d.respond(0, interval=INTERVAL)
    d.settle()
    collected_at = _until_heartbeat(d)
    assert _on_tick(collected_at - collect_delay_ms(INTERVAL))
    d.respond(3, {"foo": [0]}, interval=INTERVAL)
    d.settle()
    while d.pending(SendHeartbeat):  # the acknowledgement, at once
        d.respond(3, interval=INTERVAL)
        d.settle()
    assert _until_heartbeat(d) == collected_at - collect_delay_ms(INTERVAL) + PERIOD


def test_a_clock_step_moves_the_ticks() -> None:
    d = _joined()
    for _ in range(2):
        _next_heartbeat(d)
    d.send(ClockOffset(OFFSET + 300))  # the wall clock jumped 300 ms ahead
    sends = [_next_heartbeat(d) for _ in range(2)]
    assert all((t + OFFSET + 300) % PERIOD == PHASE for t in sends)
    assert sends[1] - sends[0] == PERIOD


def test_a_failed_heartbeat_backs_off_and_forgets_the_collecting_slot() -> None:
    d = _joined(retry_backoff_ms=20, retry_backoff_max_ms=20)
    _until_heartbeat(d)
    failed_at = d.now
    d.fail_heartbeat()
    assert _until_heartbeat(d) == failed_at + 20  # the retry backoff, not the grid


@pytest.mark.parametrize(
    "config",
    [{"align_heartbeats": False}, {"classic": ClassicSettings(heartbeat_interval_ms=INTERVAL)}],
    ids=["heartbeat.alignment=none", "classic"],
)
def test_the_wall_clock_changes_nothing_without_alignment(config: dict[str, object]) -> None:
    d = _Clocked(**config)
    d.send(ClockOffset(OFFSET))
    assert d.core._hb.schedule.grid is None or not d.core._hb.schedule.grid.ready
    if "classic" in config:
        d.send(Subscribe(topics=("foo",)))
        assert d.pending(SendHeartbeat) == []  # classic joins with JoinGroup, not a heartbeat
        return
    d.join({"foo": [0]}, interval=INTERVAL)
    first = _next_heartbeat(d)
    assert _next_heartbeat(d) == first + INTERVAL
