"""The worker-group simulation: a seed range passes (new-protocol workers only, and mixed with
classic ones, so groups are converted back and forth), a seed replays exactly, and mutations
are caught: the coordinator giving units away before their revocation is confirmed, and a
classic leader giving units their holder has not been told to stop."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from kconsumer.assignment.connect_protocol import decode_assignment, encode_assignment
from kconsumer.assignment.work_units import NO_UNITS
from kconsumer.broker.coordinator.workers import heartbeat
from kconsumer.broker.coordinator.workers.model import Worker, WorkerGroup, WorkerState
from kconsumer.broker.coordinator.workers.reconcile import reconcile
from kconsumer.testing.worker_sim import classic as sim_classic
from kconsumer.testing.worker_sim import run_seed
from kconsumer.workers import classic_leader


@pytest.mark.parametrize("first", range(0, 300, 100))
def test_a_seed_range_passes(first: int) -> None:
    failing = [r.report() for r in map(run_seed, range(first, first + 100)) if not r.ok]
    assert not failing, "\n\n".join(failing[:3])


@pytest.mark.parametrize("first", range(0, 300, 100))
def test_a_mixed_seed_range_passes(first: int) -> None:
    failing = [
        r.report() for r in (run_seed(s, protocols="mixed") for s in range(first, first + 100)) if not r.ok
    ]
    assert not failing, "\n\n".join(failing[:3])


#: Mixed seeds that found bugs (the fix in parentheses): 322 (a rejoin asked while a JoinGroup
#: waited repeated after it), 416 and 955 (a restarted static process took over units its
#: predecessor still ran), 436 (units revoked from a worker that had already stopped them were
#: never handed over), 633 (a SyncGroup waiting a rebalance timeout outlived the session), 671
#: and 812 (lost JoinGroup answers; a static process's first assignment was a delta), 3017 (a
#: classic static worker fenced after a failover), 5632 and 6137 (a rebalance asked while a
#: JoinGroup waited was forgotten), 5051 (a static process took over a place in a downgraded
#: group whose work had changed meanwhile: nobody asked for a rebalance), 7396, 8874 and 9539 (the
#: worker asked to announce a change of the work was cut off and crashed: every worker now
#: checks the work periodically), 23220 (the end of the scheduled delay, told to one worker, was
#: lost when a classic process replaced it: every worker is told now), 52893 (a classic member
#: started units after a SyncGroup, which does not restart its session, and was removed a moment
#: later: units start after an answered Heartbeat), 52042 (a downgrade's rebalance lost in a
#: failover).
MIXED_REGRESSION_SEEDS = [
    *(322, 416, 436, 633, 671, 812, 955, 1793, 2216, 3017, 3340),
    *(5051, 5632, 6137, 7396, 8874, 9539, 23220, 52042, 52893),
]


@pytest.mark.parametrize("seed", MIXED_REGRESSION_SEEDS)
def test_mixed_regression_seeds_pass(seed: int) -> None:
    result = run_seed(seed, protocols="mixed")
    assert result.ok, result.report()


@pytest.mark.parametrize("protocols", ["connect", "mixed"])
def test_a_seed_replays_exactly(protocols: str) -> None:
    assert run_seed(17, protocols=protocols).trace_hash == run_seed(17, protocols=protocols).trace_hash


def test_a_classic_leader_giving_units_that_are_still_run_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The mutation: the leader gives each member its whole target at once, instead of revoking a
    moving unit in one generation and giving it in the next."""

    def hasty(*args: Any) -> classic_leader.Led:
        led = classic_leader.lead(*args)
        version = args[-1]
        whole = {
            member_id: encode_assignment(
                replace(decode_assignment(data), assigned=led.memory.targets.get(member_id, NO_UNITS)),
                version,
            )
            for member_id, data in led.assignments.items()
        }
        return classic_leader.Led(whole, led.memory)

    monkeypatch.setattr(sim_classic, "lead", hasty)
    caught = next((r for r in (run_seed(s, protocols="mixed") for s in range(0, 300)) if not r.ok), None)
    assert caught is not None, "the mutation went unnoticed in seeds 0-299"
    assert caught.violations[0].kind == "exclusive", caught.report()


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
