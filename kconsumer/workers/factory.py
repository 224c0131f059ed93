"""Building a worker's runner from its configuration: the protocol ``group.protocol`` names
(`runner.HeartbeatRunner` for worker groups, `classic_runner.ClassicWorkerRunner` for Connect's
classic protocol), its assignors, its connections and how it reads the declared work."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Any

from ..assignment.work_units import WorkUnits
from ..errors import ConfigError
from ..groups.admin import GroupAdmin
from .assignors import IncrementalCooperativeAssignor, RoundRobinAssignor, WorkerAssignor
from .classic_runner import classic_runner
from .config import parse_config
from .core import RunCallback, WorkerCore, WorkerSettings
from .runner import HeartbeatRunner, WorkerRunner, announce


def declared_work(work: Callable[[], Any]) -> Callable[[], WorkUnits]:
    """The application's declaration as WorkUnits: it returns either WorkUnits or a mapping of
    connector name to task count (``{"tenant-a": 2}``: the connector and its tasks 0 and 1)."""

    def units() -> WorkUnits:
        declared = work()
        if isinstance(declared, WorkUnits):
            return declared
        tasks = [(str(name), task) for name, count in declared.items() for task in range(int(count))]
        return WorkUnits.of((str(name) for name in declared), tasks)

    return units


def make_runner(
    settings: Mapping[str, Any],
    work: Callable[[], Any],
    assignors: list[WorkerAssignor] | None,
    deliver: Callable[[RunCallback], None],
) -> WorkerRunner[Any]:
    """A runner for a worker configured by `settings` (ConfigError naming a bad key), on the
    protocol ``group.protocol`` names."""
    config = parse_config(settings)
    chosen = assignors if assignors is not None else default_assignors(config.scheduled_delay_ms)
    names = [a.name for a in chosen]
    if not chosen or any(not name for name in names) or len(set(names)) != len(names):
        raise ConfigError("assignors", f"need at least one, with unique non-empty names, got {names}")
    admin = GroupAdmin(
        config.bootstrap_servers,
        {"client.id": config.client_id, **config.security},
        timeout_s=config.request_timeout_ms / 1000,
    )
    if config.protocol == "classic":
        classic = classic_runner(config, admin, chosen, declared_work(work), deliver)
        classic.work_check_s = config.work_check_ms / 1000
        return classic
    core = WorkerCore(
        WorkerSettings(
            group_id=config.group_id,
            member_id=str(uuid.uuid4()),
            instance_id=config.instance_id,
            rebalance_timeout_ms=config.rebalance_timeout_ms,
            lease_ms=config.lease_ms,
            retry_backoff_ms=config.retry_backoff_ms,
            retry_backoff_max_ms=config.retry_backoff_max_ms,
        ),
        [announce(a) for a in chosen],
    )
    runner = HeartbeatRunner(core, admin, chosen, declared_work(work), deliver)
    runner.work_check_s = config.work_check_ms / 1000
    return runner


def default_assignors(scheduled_delay_ms: int) -> list[WorkerAssignor]:
    """The incremental cooperative assignor first, round-robin as the fallback."""
    return [IncrementalCooperativeAssignor(scheduled_delay_ms), RoundRobinAssignor()]
