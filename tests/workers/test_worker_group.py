"""Worker groups on the reference cluster: the seed's scenarios with real workers (threads,
sockets), each under the exclusivity ledger (`fleet.Ledger`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kconsumer.testing import ReferenceCluster

from waiting import wait_until
from fleet import FleetWorker, Ledger, wait_spread


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
