"""A fleet of `WorkerGroup` workers polling on their own threads, and the ledger every worker
test keeps: no unit is started by a worker while another one runs it, and every event is
recorded with its time (the exclusivity check of worker groups, as the at-least-once ledger is
for consumers)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from waiting import wait_until

from kconsumer.workers import WorkerGroup, WorkUnits


@dataclass
class Ledger:
    """Who runs which unit, and every start and stop in order."""

    running: dict[str, str] = field(default_factory=dict)
    events: list[tuple[float, str, str, str]] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def started(self, worker: str, units: WorkUnits) -> None:
        with self.lock:
            for unit in units:
                holder = self.running.get(unit)
                if holder is not None and holder != worker:
                    self.violations.append(f"{worker} started {unit} while {holder} runs it")
                self.running[unit] = worker
                self.events.append((time.monotonic(), "start", worker, unit))

    def stopped(self, worker: str, units: WorkUnits, how: str = "stop") -> None:
        with self.lock:
            for unit in units:
                if self.running.get(unit) == worker:
                    del self.running[unit]
                self.events.append((time.monotonic(), how, worker, unit))

    def holders(self) -> dict[str, set[str]]:
        with self.lock:
            by_worker: dict[str, set[str]] = {}
            for unit, worker in self.running.items():
                by_worker.setdefault(worker, set()).add(unit)
            return by_worker

    def first(self, kind: str, worker: str, unit: str, since: int = 0) -> float | None:
        """When `worker` first did `kind` to `unit`, among the events from index `since` on."""
        with self.lock:
            events = self.events[since:]
            return next((t for t, k, w, u in events if (k, w, u) == (kind, worker, unit)), None)


class FleetWorker:
    """One worker and the thread that polls it."""

    def __init__(
        self, name: str, config: dict[str, Any], work: Callable[[], Any], ledger: Ledger, **kwargs: Any
    ) -> None:
        self.name = name
        self.ledger = ledger
        self.group = WorkerGroup(
            config,
            work=work,
            on_assigned=lambda units: ledger.started(name, units),
            on_revoked=lambda units: ledger.stopped(name, units),
            on_lost=lambda units: ledger.stopped(name, units, "lost"),
            **kwargs,
        )
        self._stop = threading.Event()
        self.errors: list[BaseException] = []
        self.thread = threading.Thread(target=self._poll, daemon=True)
        self.thread.start()

    def _poll(self) -> None:
        while not self._stop.is_set():
            try:
                self.group.poll(0.05)
            except BaseException as exc:  # surfaced by the test
                self.errors.append(exc)
                return

    def close(self) -> None:
        """Stop polling and close (clean leave: on_revoked for everything)."""
        self._stop.set()
        self.thread.join(5)
        self.group.close(10)

    def crash(self) -> None:
        """Stop polling and heartbeating without a word (a process that died): its units are
        counted as stopped now, since a dead process runs nothing."""
        self._stop.set()
        self.thread.join(5)
        self.ledger.stopped(self.name, self.group.assignment, "crash")
        loop, task = self.group._runner.loop, self.group._runner_task
        assert loop is not None and task is not None
        loop.call_soon_threadsafe(task.cancel)  # its connections close; no leave is sent
        self.group._thread.join(5)


def wait_spread(
    ledger: Ledger, workers: list[FleetWorker], units: int, timeout: float = 20.0
) -> dict[str, set[str]]:
    """Wait until `units` units run, each worker running some, and return who runs what."""

    def spread() -> bool:
        holders = ledger.holders()
        return sum(len(u) for u in holders.values()) == units and all(w.name in holders for w in workers)

    wait_until(
        spread, timeout, describe=lambda: f"units: {ledger.holders()}; errors: {[w.errors for w in workers]}"
    )
    return ledger.holders()
