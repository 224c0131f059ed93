"""Three processes share per-tenant pollers through a worker group; one is killed, and after the
scheduled delay its pollers move to the other two.

    python examples/worker_group.py
    python examples/worker_group.py --bootstrap-servers localhost:9092   # a `kconsumer serve` cluster

The parent starts a reference cluster and three worker processes (this same file, run with
``worker NAME``). The group's work is one poller connector per tenant with two tasks each; the
incremental cooperative assignor spreads them. The parent then kills one worker (SIGKILL: no
goodbye), and the survivors keep running what they had: the lost pollers wait for the killed
worker for ``scheduled.rebalance.max.delay.ms`` in case it comes back, then move. Exits 0 once every
poller runs again and no poller ever ran twice.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

from kconsumer.testing import ReferenceCluster
from kconsumer.workers import WorkerGroup, WorkUnits

TENANTS = ["acme", "globex", "initech", "umbrella"]
TASKS_PER_TENANT = 2
UNITS = len(TENANTS) * (1 + TASKS_PER_TENANT)
SESSION_TIMEOUT_MS = 3_000
DELAY_MS = 4_000


def work() -> dict[str, int]:
    """What the group must run: a poller connector per tenant, with its tasks."""
    return {f"poller-{tenant}": TASKS_PER_TENANT for tenant in TENANTS}


def run_worker(name: str, bootstrap: str) -> None:
    """One worker process: reports every change on stdout (one JSON line each)."""

    def report(event: str, units: WorkUnits) -> None:
        line = {"worker": name, "event": event, "units": list(units), "at": time.monotonic()}
        print(json.dumps(line), flush=True)

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    config = {
        "bootstrap.servers": bootstrap,
        "group.id": "tenant-pollers",
        "client.id": name,
        "lease.timeout.ms": 2_000,  # below the coordinator's session timeout
        "scheduled.rebalance.max.delay.ms": DELAY_MS,
    }
    with WorkerGroup(
        config,
        work=work,
        on_assigned=lambda units: report("start", units),
        on_revoked=lambda units: report("stop", units),
        on_lost=lambda units: report("lost", units),
    ) as worker:
        while not stop.is_set():
            worker.poll(0.1)


class Fleet:
    """The parent's view: who runs what, from the workers' reports.

    Each worker's reports come through a pipe of its own, read by a thread of its own, so one
    worker's "stop" can be read after another's "start" of the same poller although it happened
    first: whether a poller ever ran twice is decided from every report in the order of the
    times they carry (one monotonic clock for the whole machine), in `double()`."""

    def __init__(self) -> None:
        self.running: dict[str, str] = {}
        self.reports: list[tuple[float, str, str, list[str]]] = []
        self.lock = threading.Lock()

    def follow(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            report = json.loads(line)
            with self.lock:
                self.reports.append((report["at"], report["worker"], report["event"], report["units"]))
                _apply(self.running, report["worker"], report["event"], report["units"])

    def killed(self, worker: str) -> list[str]:
        """`worker` was killed now: it runs nothing any more. The pollers it ran."""
        with self.lock:
            orphans = [unit for unit, runner in self.running.items() if runner == worker]
            self.reports.append((time.monotonic(), worker, "killed", orphans))
            _apply(self.running, worker, "killed", orphans)
            return orphans

    def double(self) -> list[str]:
        """The pollers a worker started while another ran them, replaying every report in order."""
        with self.lock:
            reports = sorted(self.reports, key=lambda report: report[0])
        running: dict[str, str] = {}
        double: list[str] = []
        for _at, worker, event, units in reports:
            if event == "start":
                double += [unit for unit in units if running.get(unit, worker) != worker]
            _apply(running, worker, event, units)
        return double

    def counts(self) -> dict[str, int]:
        with self.lock:
            counts: dict[str, int] = {}
            for worker in self.running.values():
                counts[worker] = counts.get(worker, 0) + 1
            return dict(sorted(counts.items()))

    def wait(self, what: str, condition: object, timeout_s: float = 25.0) -> float:
        started = time.monotonic()
        while not condition():  # type: ignore[operator]
            if time.monotonic() - started > timeout_s:
                raise SystemExit(f"timed out waiting for {what}: {self.counts()}")
            time.sleep(0.05)
        return time.monotonic() - started


def _apply(running: dict[str, str], worker: str, event: str, units: list[str]) -> None:
    """One report's change to who runs what (a stop, a loss or a kill ends only the worker's own)."""
    for unit in units:
        if event == "start":
            running[unit] = worker
        elif running.get(unit) == worker:
            del running[unit]


@contextlib.contextmanager
def cluster_at(bootstrap: str | None) -> Iterator[str]:
    """`bootstrap`, or an in-process reference cluster's address (worker groups need a
    coordinator that serves them: kconsumer's reference cluster, not Apache Kafka)."""
    if bootstrap is not None:
        yield bootstrap
        return
    with ReferenceCluster(session_timeout_ms=SESSION_TIMEOUT_MS, heartbeat_interval_ms=300) as cluster:
        yield cluster.bootstrap_servers


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument(
        "--bootstrap-servers", help="a `kconsumer serve` cluster (default: an in-process one)"
    )
    with cluster_at(parser.parse_args().bootstrap_servers) as bootstrap:
        fleet = Fleet()
        processes = {}
        for name in ("worker-1", "worker-2", "worker-3"):
            processes[name] = subprocess.Popen(
                [sys.executable, __file__, "worker", name, bootstrap],
                stdout=subprocess.PIPE,
                text=True,
            )
            threading.Thread(target=fleet.follow, args=(processes[name],), daemon=True).start()
        fleet.wait(
            "three workers sharing the pollers",
            lambda: len(fleet.counts()) == 3 and sum(fleet.counts().values()) == UNITS,
        )
        print(f"{UNITS} pollers running: {fleet.counts()}")

        os.kill(processes["worker-3"].pid, signal.SIGKILL)
        processes["worker-3"].wait()
        orphans = fleet.killed("worker-3")
        print(f"worker-3 killed; its {len(orphans)} pollers wait for it (delay {DELAY_MS} ms)")
        moved = fleet.wait("the orphaned pollers to move", lambda: sum(fleet.counts().values()) == UNITS)
        print(f"after {moved:.1f} s they run again: {fleet.counts()}")

        for name in ("worker-1", "worker-2"):
            processes[name].send_signal(signal.SIGTERM)
        for name in ("worker-1", "worker-2"):
            processes[name].wait(15)
        double = fleet.double()
        if double:
            print(f"pollers started twice: {double}")
            return 1
        if moved * 1000 < DELAY_MS:
            print("the pollers moved before the delay ended")
            return 1
        print("no poller ever ran twice")
        return 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "worker":
        run_worker(sys.argv[2], sys.argv[3])
    else:
        sys.exit(main())
