"""Heartbeats aligned across a group (``heartbeat.alignment``, `kconsumer.client.member.grid`), with
the real runtime and clocks, on each backend: members that joined at different moments heartbeat
together, at the group's wall-clock phase; with ``heartbeat.alignment=none`` each keeps the phase
of its own join. Partitions move meanwhile (a second member joins, then leaves), so the
at-least-once ledger checks every record."""

from __future__ import annotations

import logging
import statistics
import time
import zlib
from collections.abc import Callable, Iterator

import pytest
from backends import Cluster, open_cluster
from consumer_harness import Member, cluster_committed, config
from ledger import Ledger
from waiting import wait_until

from kconsumer.client.member.grid import grid_period_ms

pytestmark = pytest.mark.timing

INTERVAL_MS = 400
#: The ticks' period (`grid_period_ms`): the interval and a hundredth.
PERIOD_MS = grid_period_ms(INTERVAL_MS)
GROUP = "aligned"
TOPIC = "aligned-topic"

MemberFactory = Callable[..., Member]


def balanced(cluster: Cluster, members: list[Member], partitions: int) -> bool:
    """Every member owns its equal share and the coordinator shows the group stable."""
    description = cluster.describe_group(GROUP)
    if description is None or description.state != "Stable" or len(description.members) != len(members):
        return False
    return sorted(len(m.owned()) for m in members) == [partitions // len(members)] * len(members)


class _HeartbeatTimes(logging.Handler):
    """When each member's regular heartbeats left (the ``kconsumer.trace`` lines of its thread:
    the session's clock, monotonic milliseconds), by member name."""

    def __init__(self, names: tuple[str, ...]) -> None:
        super().__init__(logging.DEBUG)
        self.threads = {f"kconsumer-{name}": name for name in names}
        self.sent: dict[str, list[int]] = {name: [] for name in names}

    def emit(self, record: logging.LogRecord) -> None:
        name = self.threads.get(record.threadName or "")
        message = record.getMessage()
        if name is not None and "SendHeartbeat(" in message and "leave=False" in message:
            self.sent[name].append(int(message.split()[0]))


@pytest.fixture
def heartbeats() -> Iterator[_HeartbeatTimes]:
    handler = _HeartbeatTimes(("a", "b"))
    trace = logging.getLogger("kconsumer.trace")
    level = trace.level
    trace.setLevel(logging.DEBUG)
    trace.addHandler(handler)
    yield handler
    trace.removeHandler(handler)
    trace.setLevel(level)


@pytest.fixture
def slow_cluster(backend: str) -> Iterator[Cluster]:
    """A cluster of `backend` with a 400 ms heartbeat interval (phases measurable to a few ms)."""
    with open_cluster(backend, heartbeat_interval_ms=INTERVAL_MS, session_timeout_ms=4_000) as running:
        yield running


def _phase_error(sent_ms: int, phase: int, offset_ms: int, period: int = PERIOD_MS) -> int:
    """How far (ms, either way) a heartbeat sent at `sent_ms` fell from `phase` of `period`."""
    off = (sent_ms + offset_ms - phase) % period
    return min(off, period - off)


def _run_group(
    cluster: Cluster, members: MemberFactory, heartbeats: _HeartbeatTimes, alignment: str
) -> tuple[list[int], list[int]]:
    """a joins, b joins 200 ms later (half an interval); while both run, the heartbeats of a
    second of steady state; then b leaves. Returns (a's, b's) heartbeat send times then."""
    cluster.create_topic(TOPIC, 4)
    cluster.produce(TOPIC, [f"r{i}" for i in range(40)])
    ledger = Ledger(cluster_committed(cluster, GROUP))
    settings = config(cluster.bootstrap_servers, GROUP, verbatim={"heartbeat.alignment": alignment})
    a = members(ledger, "a", settings, [TOPIC])
    wait_until(lambda: balanced(cluster, [a], 4), what="a owning everything")
    time.sleep(INTERVAL_MS / 2000)
    b = members(ledger, "b", settings, [TOPIC])
    wait_until(lambda: balanced(cluster, [a, b], 4), what="a and b with two partitions each")
    time.sleep(2 * INTERVAL_MS / 1000)  # past b's join and the collecting heartbeats
    since = int(time.monotonic() * 1000)
    time.sleep(2.5)
    steady = {name: [t for t in sent if t >= since] for name, sent in heartbeats.sent.items()}
    b.close()
    wait_until(lambda: balanced(cluster, [a], 4), what="a owning everything again")
    ledger.check({(TOPIC, p): list(range(10)) for p in range(4)})
    assert a.errors == [] and b.errors == []
    return steady["a"], steady["b"]


def test_members_that_joined_apart_heartbeat_together_at_the_groups_phase(
    slow_cluster: Cluster, members: MemberFactory, heartbeats: _HeartbeatTimes
) -> None:
    a, b = _run_group(slow_cluster, members, heartbeats, "group")
    offset_ms = int(time.time() * 1000) - int(time.monotonic() * 1000)  # the runtime's ClockOffset
    phase = zlib.crc32(GROUP.encode()) % PERIOD_MS
    assert len(a) >= 5 and len(b) >= 5, (a, b)
    errors = sorted(_phase_error(t, phase, offset_ms) for t in a + b)
    # On a quiet machine within a few ms; a loaded one delays a timer now and then.
    assert statistics.median(errors) <= 15, errors
    assert sum(error <= 40 for error in errors) >= 0.75 * len(errors), errors


def test_without_alignment_each_member_keeps_the_phase_of_its_join(
    slow_cluster: Cluster, members: MemberFactory, heartbeats: _HeartbeatTimes
) -> None:
    a, b = _run_group(slow_cluster, members, heartbeats, "none")
    assert len(a) >= 5 and len(b) >= 5, (a, b)
    # b's heartbeats fall about half an interval from a's (b joined 200 ms later).
    a_phase = statistics.median(t % INTERVAL_MS for t in a)
    apart = statistics.median(_phase_error(t, int(a_phase), 0, INTERVAL_MS) for t in b)
    assert apart >= 100, (a, b)
