"""Units of work of a worker group: connectors and their tasks (docs/worker-protocol.md).

A worker group assigns named units instead of partitions: a *connector* (a name) and a *task*
(a connector's name and a task number). `WorkUnits` is an immutable set of both, shared by the
coordinator, the worker and the assignors, with its wire form (`ConnectorsAndTasks`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ..protocol.messages.worker_group import ConnectorsAndTasks, ConnectorTaskId

#: A task: (connector name, task number).
TaskId = tuple[str, int]


@dataclass(frozen=True)
class WorkUnits:
    """Connectors and tasks, as sets (set operations return new values).

    >>> a = WorkUnits.of(["c"], [("c", 0), ("c", 1)])
    >>> sorted(a - WorkUnits.of([], [("c", 1)]))
    ['c', 'c-0']
    """

    connectors: frozenset[str] = frozenset()
    tasks: frozenset[TaskId] = frozenset()

    @staticmethod
    def of(connectors: Iterable[str] = (), tasks: Iterable[TaskId] = ()) -> WorkUnits:
        """Units from connector names and (connector, task) pairs."""
        return WorkUnits(frozenset(connectors), frozenset((str(c), int(t)) for c, t in tasks))

    def __or__(self, other: WorkUnits) -> WorkUnits:
        return WorkUnits(self.connectors | other.connectors, self.tasks | other.tasks)

    def __and__(self, other: WorkUnits) -> WorkUnits:
        return WorkUnits(self.connectors & other.connectors, self.tasks & other.tasks)

    def __sub__(self, other: WorkUnits) -> WorkUnits:
        return WorkUnits(self.connectors - other.connectors, self.tasks - other.tasks)

    def __bool__(self) -> bool:
        return bool(self.connectors or self.tasks)

    def __len__(self) -> int:
        return len(self.connectors) + len(self.tasks)

    def __iter__(self) -> Iterator[str]:
        """Labels, connectors first: ``name`` and ``name-task``."""
        yield from sorted(self.connectors)
        for connector, task in sorted(self.tasks):
            yield f"{connector}-{task}"

    def issubset(self, other: WorkUnits) -> bool:
        return self.connectors <= other.connectors and self.tasks <= other.tasks

    def isdisjoint(self, other: WorkUnits) -> bool:
        return self.connectors.isdisjoint(other.connectors) and self.tasks.isdisjoint(other.tasks)

    def __str__(self) -> str:
        return "{" + ", ".join(self) + "}"

    def to_wire(self) -> ConnectorsAndTasks:
        """The wire form, sorted (so equal sets encode equally)."""
        return ConnectorsAndTasks(
            connectors=sorted(self.connectors),
            tasks=[ConnectorTaskId(connector=c, task=t) for c, t in sorted(self.tasks)],
        )

    @staticmethod
    def from_wire(wire: ConnectorsAndTasks) -> WorkUnits:
        return WorkUnits.of(wire.connectors, ((t.connector, t.task) for t in wire.tasks))

    def problem(self) -> str | None:
        """Why these units cannot be sent, or None (empty names, negative task numbers)."""
        if any(not name for name in self.connectors) or any(not c for c, _ in self.tasks):
            return "connector names must be non-empty"
        negative = [f"{c}-{t}" for c, t in self.tasks if t < 0 or t >= 2**31]
        return f"task numbers must be int32 and >= 0: {negative}" if negative else None


NO_UNITS = WorkUnits()
