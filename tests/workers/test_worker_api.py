"""The worker API's edges: configuration checked at construction (naming the key), the asyncio
worker on the same core, and assignors rejected before anything is sent."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kconsumer.errors import ConfigError
from kconsumer.testing import ReferenceCluster
from kconsumer.workers import AIOWorkerGroup, RoundRobinAssignor, WorkerGroup, WorkUnits

BASE = {"bootstrap.servers": "127.0.0.1:1", "group.id": "g"}


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ({"group.id": ""}, "group.id"),
        ({"bootstrap.servers": None}, "bootstrap.servers"),
        ({"lease.timeout.ms": 0}, "lease.timeout.ms"),
        ({"lease.timeout.ms": "soon"}, "lease.timeout.ms"),
        ({"lease.timeout.ms": 70_000}, "lease.timeout.ms"),  # not below rebalance.timeout.ms
        ({"rebalance.timeout.ms": True}, "rebalance.timeout.ms"),
        ({"scheduled.rebalance.max.delay.ms": -1}, "scheduled.rebalance.max.delay.ms"),
        ({"retry.backoff.max.ms": 10}, "retry.backoff.max.ms"),
        ({"group.instance.id": " "}, "group.instance.id"),
        ({"session.timeout.ms": 1000}, "session.timeout.ms"),  # the coordinator's, not the worker's
        ({"heartbeat.interval.ms": 100}, "heartbeat.interval.ms"),
        ({"group.protocol": "consumer"}, "group.protocol"),
        ({"group.protocol": "classic", "session.timeout.ms": 10_000}, "lease.timeout.ms"),
        ({"group.protocol": "classic", "heartbeat.interval.ms": 50_000}, "heartbeat.interval.ms"),
        ({"security.protocol": "CARRIER_PIGEON"}, "security.protocol"),
    ],
)
def test_bad_settings_fail_at_construction_naming_the_key(change: dict[str, Any], key: str) -> None:
    settings = {k: v for k, v in {**BASE, **change}.items() if v is not None}
    with pytest.raises(ConfigError) as raised:
        WorkerGroup(settings, work=dict)
    assert raised.value.key == key


def test_assignors_need_unique_names() -> None:
    with pytest.raises(ConfigError, match="assignors"):
        WorkerGroup(BASE, work=dict, assignors=[RoundRobinAssignor(), RoundRobinAssignor()])


CLASSIC = {"group.protocol": "classic", "session.timeout.ms": 10_000, "lease.timeout.ms": 5_000}


@pytest.mark.parametrize("extra", [{}, CLASSIC], ids=["connect", "classic"])
def test_the_asyncio_worker_runs_coroutine_callbacks_on_the_loop(extra: dict[str, Any]) -> None:
    async def scenario(bootstrap: str) -> list[tuple[str, list[str]]]:
        events: list[tuple[str, list[str]]] = []
        loop = asyncio.get_running_loop()

        async def started(units: WorkUnits) -> None:
            assert asyncio.get_running_loop() is loop
            await asyncio.sleep(0.01)
            events.append(("start", list(units)))

        def stopped(units: WorkUnits) -> None:
            events.append(("stop", list(units)))

        config = {"bootstrap.servers": bootstrap, "group.id": "aio-workers", **extra}
        async with AIOWorkerGroup(
            config, work=lambda: {"job": 1}, on_assigned=started, on_revoked=stopped
        ) as worker:
            for _ in range(200):
                if worker.assignment:
                    break
                await asyncio.sleep(0.05)
            assert sorted(worker.assignment) == ["job", "job-0"]
        assert worker.state == "closed"
        return events

    with ReferenceCluster() as cluster:
        events = asyncio.run(scenario(cluster.bootstrap_servers))
    assert events == [("start", ["job", "job-0"]), ("stop", ["job", "job-0"])]
