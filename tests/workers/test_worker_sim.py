"""The worker-group simulation: a seed range passes, a seed replays exactly, and a mutation of
the coordinator (units given away before their revocation is confirmed) is caught."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kconsumer.assignment.work_units import NO_UNITS
from kconsumer.broker.coordinator.workers import heartbeat
from kconsumer.broker.coordinator.workers.model import Worker, WorkerGroup, WorkerState
from kconsumer.broker.coordinator.workers.reconcile import reconcile
from kconsumer.testing.worker_sim import run_seed


@pytest.mark.parametrize("first", range(0, 300, 100))
def test_a_seed_range_passes(first: int) -> None:
    failing = [r.report() for r in map(run_seed, range(first, first + 100)) if not r.ok]
    assert not failing, "\n\n".join(failing[:3])


def test_a_seed_replays_exactly() -> None:
    assert run_seed(17).trace_hash == run_seed(17).trace_hash


def test_giving_units_away_before_their_revocation_is_confirmed_is_caught(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def eager(group: WorkerGroup, worker: Worker, owned: object) -> Worker:
        after = reconcile(group, worker, owned)  # type: ignore[arg-type]
        if after.state == WorkerState.UNREVOKED:  # the mutation: no waiting for the worker
            after = replace(after, pending_revocation=NO_UNITS, state=WorkerState.STABLE)
        return after

    monkeypatch.setattr(heartbeat, "reconcile", eager)
    caught = next((r for r in map(run_seed, range(0, 200)) if not r.ok), None)
    assert caught is not None, "the mutation went unnoticed in seeds 0-199"
    assert caught.violations[0].kind == "exclusive", caught.report()
