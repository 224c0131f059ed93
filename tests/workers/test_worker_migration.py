"""Classic workers (``group.protocol=classic``: Connect's JoinGroup protocol) and the online
migration of their group to a worker group and back (the seed's "Migration to the new
protocol"), on the reference cluster, each under the exclusivity ledger (`fleet.Ledger`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fleet import FleetWorker, Ledger, wait_spread
from waiting import wait_until

from kconsumer.testing import ReferenceCluster

WORK = {"c": 3, "d": 1}  # 6 units
ALL = {"c", "c-0", "c-1", "c-2", "d", "d-0"}


@pytest.fixture
def cluster() -> Iterator[ReferenceCluster]:
    with ReferenceCluster(session_timeout_ms=6_000, heartbeat_interval_ms=200) as running:
        yield running


def config(cluster: ReferenceCluster, protocol: str, **extra: Any) -> dict[str, Any]:
    settings: dict[str, Any] = {
        "bootstrap.servers": cluster.bootstrap_servers,
        "group.id": "rolling",
        "group.protocol": protocol,
        "rebalance.timeout.ms": 10_000,
        "lease.timeout.ms": 4_000,
        "scheduled.rebalance.max.delay.ms": 0,
        **extra,
    }
    if protocol == "classic":
        settings.update({"session.timeout.ms": 6_000, "heartbeat.interval.ms": 300})
    return settings


def worker(cluster: ReferenceCluster, name: str, protocol: str, ledger: Ledger) -> FleetWorker:
    return FleetWorker(name, config(cluster, protocol), lambda: WORK, ledger)


def everything_runs(ledger: Ledger, workers: list[FleetWorker]) -> dict[str, set[str]]:
    holders = wait_spread(ledger, workers, len(ALL), timeout=30)
    assert set().union(*holders.values()) == ALL
    return holders


def kind(cluster: ReferenceCluster) -> str:
    if cluster.worker_group("rolling") is not None:
        return "worker"
    return "classic" if cluster.classic_group_state("rolling") is not None else "none"


def test_classic_workers_share_the_units_and_hand_them_over(cluster: ReferenceCluster) -> None:
    ledger = Ledger()
    a = worker(cluster, "a", "classic", ledger)
    everything_runs(ledger, [a])
    b = worker(cluster, "b", "classic", ledger)
    holders = everything_runs(ledger, [a, b])
    assert sorted(len(units) for units in holders.values()) == [3, 3]
    assert kind(cluster) == "classic"
    a.close()
    everything_runs(ledger, [b])
    b.close()
    assert not ledger.violations, ledger.violations
    assert ledger.holders() == {}


def test_a_rolling_upgrade_converts_the_group_and_a_rollback_converts_it_back(
    cluster: ReferenceCluster,
) -> None:
    ledger = Ledger()
    a = worker(cluster, "a", "classic", ledger)
    b = worker(cluster, "b", "classic", ledger)
    everything_runs(ledger, [a, b])
    assert kind(cluster) == "classic"

    # Roll a: the first new-protocol worker converts the group; b stays classic inside it.
    a.close()
    everything_runs(ledger, [b])
    a2 = worker(cluster, "a2", "connect", ledger)
    wait_until(lambda: kind(cluster) == "worker", 15)
    everything_runs(ledger, [a2, b])
    group = cluster.worker_group("rolling")
    assert group is not None and len(group.workers) == 2

    # Roll b: the group is all new-protocol now.
    b.close()
    everything_runs(ledger, [a2])
    b2 = worker(cluster, "b2", "connect", ledger)
    everything_runs(ledger, [a2, b2])
    assert kind(cluster) == "worker"

    # Roll back: a classic worker joins the worker group, then the new-protocol ones leave; the
    # last one's leave converts the group back to a classic group.
    c = worker(cluster, "c", "classic", ledger)
    everything_runs(ledger, [a2, b2, c])
    a2.close()
    everything_runs(ledger, [b2, c])
    assert kind(cluster) == "worker"
    b2.close()
    wait_until(lambda: kind(cluster) == "classic", 15)
    everything_runs(ledger, [c])
    d = worker(cluster, "d", "classic", ledger)
    everything_runs(ledger, [c, d])
    assert kind(cluster) == "classic"
    c.close()
    d.close()
    assert not ledger.violations, ledger.violations
    assert ledger.holders() == {}


def test_classic_workers_pick_up_a_change_of_the_work_nobody_announces(cluster: ReferenceCluster) -> None:
    ledger = Ledger()
    work = {"c": 1}
    settings = config(cluster, "classic", **{"work.check.interval.ms": 300})
    a = FleetWorker("a", settings, lambda: dict(work), ledger)
    b = FleetWorker("b", settings, lambda: dict(work), ledger)
    wait_spread(ledger, [a, b], 2, timeout=30)
    work["d"] = 1
    wait_until(lambda: set().union(*ledger.holders().values()) == {"c", "c-0", "d", "d-0"}, 30)
    a.close()
    b.close()
    assert not ledger.violations
