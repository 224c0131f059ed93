"""Worker groups: named units of work (connectors and tasks) spread over a fleet of processes by
Kafka's group coordinator, with incremental hand-over, liveness and fencing (docs/workers.md).

    from kconsumer.workers import WorkerGroup

    def start(units): ...
    def stop(units): ...

    with WorkerGroup({"bootstrap.servers": "...", "group.id": "pollers"},
                     work=lambda: {"tenant-a": 2, "tenant-b": 1},
                     on_assigned=start, on_revoked=stop) as worker:
        while running:
            worker.poll(1.0)

Worker groups are a kconsumer extension of the new group protocol (docs/worker-protocol.md),
served by kconsumer's reference cluster; Apache Kafka does not implement them.
"""

from ..assignment.work_units import WorkUnits
from .aio import AIOWorkerGroup
from .assignors import (
    Computed,
    GroupView,
    IncrementalCooperativeAssignor,
    RoundRobinAssignor,
    WorkerAssignor,
    WorkerView,
)
from .facade import WorkerGroupError
from .group import WorkerGroup

__all__ = [
    "AIOWorkerGroup",
    "Computed",
    "GroupView",
    "IncrementalCooperativeAssignor",
    "RoundRobinAssignor",
    "WorkUnits",
    "WorkerAssignor",
    "WorkerGroup",
    "WorkerGroupError",
    "WorkerView",
]
