"""Worker groups on the reference cluster: the seed's scenarios with real workers (threads,
sockets), each under the exclusivity ledger (`fleet.Ledger`)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from fleet import FleetWorker, Ledger, wait_spread
from waiting import wait_until

from kconsumer.testing import ReferenceCluster


@pytest.fixture
def cluster() -> Iterator[ReferenceCluster]:
    with ReferenceCluster(session_timeout_ms=3_000, heartbeat_interval_ms=200) as running:
        yield running


def config(cluster: ReferenceCluster, group: str = "pollers", **extra: Any) -> dict[str, Any]:
    return {
        "bootstrap.servers": cluster.bootstrap_servers,
        "group.id": group,
        "lease.timeout.ms": 2_000,
        "scheduled.rebalance.max.delay.ms": 0,
        **extra,
    }


def test_two_workers_share_the_units_and_a_clean_leave_hands_them_over(cluster: ReferenceCluster) -> None:
    ledger = Ledger()
    work = {"tenant-a": 2, "tenant-b": 1}  # 5 units
    a = FleetWorker("a", config(cluster), lambda: work, ledger)
    wait_spread(ledger, [a], 5)
    b = FleetWorker("b", config(cluster), lambda: work, ledger)
    holders = wait_spread(ledger, [a, b], 5)
    assert sorted(len(units) for units in holders.values()) == [2, 3]
    a.close()
    wait_spread(ledger, [b], 5)
    b.close()
    assert not ledger.violations
    assert ledger.holders() == {}


def _moved_after_stop(
    ledger: Ledger, unit: str, old: str, new: str, stop: str = "stop", since: int = 0
) -> None:
    """`old` stopped `unit` before `new` started it, counting events from index `since` (the
    spread before it may have moved units already: whichever worker joined first hands some over)."""
    stopped, started = ledger.first(stop, old, unit, since), ledger.first("start", new, unit, since)
    assert stopped is not None and started is not None, ledger.events
    assert stopped <= started, f"{new} started {unit} before {old} stopped it"


def test_a_crashed_worker_s_units_move_after_its_session_times_out(cluster: ReferenceCluster) -> None:
    ledger = Ledger()
    work = {"c": 3}
    a = FleetWorker("a", config(cluster), lambda: work, ledger)
    b = FleetWorker("b", config(cluster), lambda: work, ledger)
    holders = wait_spread(ledger, [a, b], 4)
    lost, settled = holders["a"], len(ledger.events)
    a.crash()
    wait_until(lambda: ledger.holders().get("b") == {"c", "c-0", "c-1", "c-2"}, 15)
    for unit in lost:
        _moved_after_stop(ledger, unit, "a", "b", "crash", settled)
    b.close()
    assert not ledger.violations


def test_connectors_added_and_removed_and_task_counts_changed(cluster: ReferenceCluster) -> None:
    ledger = Ledger()
    work = {"c": 1}
    a = FleetWorker("a", config(cluster), lambda: dict(work), ledger)
    b = FleetWorker("b", config(cluster), lambda: dict(work), ledger)
    wait_spread(ledger, [a, b], 2)
    work["d"] = 2  # a connector added
    b.group.request_rebalance("connector d added")
    wait_until(lambda: sum(map(len, ledger.holders().values())) == 5, 10, describe=ledger.holders)
    work["c"] = 3  # more tasks
    a.group.request_rebalance("c has 3 tasks")
    wait_until(lambda: sum(map(len, ledger.holders().values())) == 7, 10, describe=ledger.holders)
    del work["d"]  # a connector removed: its units are stopped
    a.group.request_rebalance("connector d removed")
    expected = {"c", "c-0", "c-1", "c-2"}
    wait_until(lambda: set().union(*ledger.holders().values()) == expected, 10, describe=ledger.holders)
    for unit in ("d", "d-0", "d-1"):
        assert any(ledger.first("stop", w, unit) for w in ("a", "b")), unit
    a.close()
    b.close()
    assert not ledger.violations


def test_a_worker_cut_off_from_the_coordinator_stops_its_units_before_another_starts_them() -> None:
    """Fencing: the lease (2 s) ends before the coordinator's session timeout (6 s: its own
    cluster, so that a loaded machine running a's on_lost late still keeps the order), so the
    cut-off worker's on_lost runs before the survivor's on_assigned, unit by unit."""
    with ReferenceCluster(session_timeout_ms=6_000, heartbeat_interval_ms=200) as cluster:
        _cut_off(cluster)


def _cut_off(cluster: ReferenceCluster) -> None:
    ledger = Ledger()
    work = {"c": 3}
    a = FleetWorker("a", config(cluster), lambda: work, ledger)
    b = FleetWorker("b", config(cluster), lambda: work, ledger)
    holders = wait_spread(ledger, [a, b], 4)
    cut_off, settled = holders["a"], len(ledger.events)

    async def unreachable(*_args: Any, **_kwargs: Any) -> Any:
        from kconsumer.client.runtime.connection import TransportError

        raise TransportError("cut off by the test")

    a.group._runner.admin.send_to_coordinator = unreachable  # type: ignore[method-assign]
    wait_until(lambda: ledger.holders().get("b") == {"c", "c-0", "c-1", "c-2"}, 15, describe=ledger.holders)
    for unit in cut_off:
        _moved_after_stop(ledger, unit, "a", "b", "lost", settled)
    assert not ledger.violations
    b.close()
    a.close()


def test_a_static_worker_back_within_its_session_timeout_keeps_its_units() -> None:
    # Its own cluster, with a session timeout that a restart under CI's load stays well within
    # (at 3 s a CI run saw the worker removed before its replacement joined).
    with ReferenceCluster(session_timeout_ms=15_000, heartbeat_interval_ms=200) as cluster:
        _static_worker_back(cluster)


def _static_worker_back(cluster: ReferenceCluster) -> None:
    ledger = Ledger()
    work = {"c": 3}
    static = config(cluster, **{"group.instance.id": "worker-a"})
    a = FleetWorker("a", static, lambda: work, ledger)
    b = FleetWorker("b", config(cluster), lambda: work, ledger)
    holders = wait_spread(ledger, [a, b], 4)
    settled = len(ledger.events)  # whichever joined first handed units over before this
    a.close()  # a static worker's leave keeps its units reserved (epoch -2)
    again = FleetWorker("a", static, lambda: work, ledger)
    wait_until(lambda: ledger.holders().get("a") == holders["a"], 10, describe=ledger.holders)
    assert ledger.holders()["b"] == holders["b"]
    b_moved = [e for e in ledger.events[settled:] if e[2] == "b"]
    assert not b_moved, f"b was asked to move: {b_moved}"
    again.close()
    b.close()
    assert not ledger.violations


def test_a_worker_back_within_the_scheduled_delay_gets_its_units_back(cluster: ReferenceCluster) -> None:
    """The incremental cooperative rule: a crashed worker's units wait for it (here 6 s) instead
    of moving to the survivor; the worker that comes back gets them."""
    ledger = Ledger()
    work = {"c": 3}
    delayed = config(cluster, **{"scheduled.rebalance.max.delay.ms": 6_000})
    a = FleetWorker("a", delayed, lambda: work, ledger)
    b = FleetWorker("b", delayed, lambda: work, ledger)
    holders = wait_spread(ledger, [a, b], 4)
    a.crash()
    wait_until(lambda: len(cluster.worker_group("pollers").workers) == 1, 10)  # type: ignore[union-attr]  # a's session timed out
    back = FleetWorker("a2", delayed, lambda: work, ledger)
    wait_until(lambda: ledger.holders().get("a2") == holders["a"], 10, describe=ledger.holders)
    assert ledger.holders()["b"] == holders["b"]
    back.close()
    b.close()
    assert not ledger.violations


def test_held_back_units_go_to_the_survivors_when_the_delay_ends(cluster: ReferenceCluster) -> None:
    ledger = Ledger()
    work = {"c": 3}
    delayed = config(cluster, **{"scheduled.rebalance.max.delay.ms": 2_000})
    a = FleetWorker("a", delayed, lambda: work, ledger)
    b = FleetWorker("b", delayed, lambda: work, ledger)
    wait_spread(ledger, [a, b], 4)
    a.crash()
    wait_until(lambda: len(cluster.worker_group("pollers").workers) == 1, 10)  # type: ignore[union-attr]
    assert len(ledger.holders()["b"]) == 2  # held back meanwhile
    wait_until(lambda: len(ledger.holders().get("b", ())) == 4, 10, describe=ledger.holders)
    b.close()
    assert not ledger.violations


def test_kconsumer_groups_lists_and_describes_worker_groups(cluster: ReferenceCluster) -> None:
    ledger = Ledger()
    a = FleetWorker("a", config(cluster), lambda: {"t": 2}, ledger)
    wait_spread(ledger, [a], 3)

    def groups(*args: str) -> str:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "kconsumer",
                "groups",
                *args,
                "--bootstrap-servers",
                cluster.bootstrap_servers,
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert "pollers  connect  Stable  connect" in groups("list", "--type", "connect")
    described = groups("describe", "pollers")
    assert "group pollers (connect): Stable, 1 member  assignor incremental" in described
    assert "t t-0 t-1" in described
    a.close()


def test_a_change_of_the_work_nobody_announces_is_picked_up(cluster: ReferenceCluster) -> None:
    """No request_rebalance: each worker reads `work` every work.check.interval.ms and asks when
    its assignment was made for other work."""
    ledger = Ledger()
    work = {"c": 1}
    checked = config(cluster, **{"work.check.interval.ms": 300})
    a = FleetWorker("a", checked, lambda: dict(work), ledger)
    b = FleetWorker("b", checked, lambda: dict(work), ledger)
    wait_spread(ledger, [a, b], 2)
    work["d"] = 1
    wait_until(lambda: set().union(*ledger.holders().values()) == {"c", "c-0", "d", "d-0"}, 15)
    a.close()
    b.close()
    assert not ledger.violations
