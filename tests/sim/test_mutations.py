"""The checker catches bugs: with a deliberately wrong core behaviour switched on, some seed of a
small range reports the violation it must cause, and that seed reproduces it."""

from __future__ import annotations

import pytest
from mutations import (
    MIXED_MUTATIONS,
    MUTATIONS,
    TRANSACTIONAL_MUTATIONS,
    classic_member_joins_without_releasing,
)

from kconsumer.testing.sim import run_seed

#: Seeds searched for a reproducing seed (the first few usually suffice).
BUDGET = 120


_CASES = [(name, "consumer") for name in sorted(MUTATIONS)] + [
    (name, "mixed") for name in sorted(MIXED_MUTATIONS)
]


@pytest.mark.parametrize(("name", "protocols"), _CASES)
def test_mutation_is_caught_with_a_reproducing_seed(
    name: str, protocols: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    mutate, kinds = {**MUTATIONS, **MIXED_MUTATIONS}[name]
    mutate(monkeypatch)
    found = None
    for seed in range(BUDGET):
        result = run_seed(seed, protocols=protocols)
        if result.violations:
            found = result
            break
    assert found is not None, f"{name}: no violation in seeds 0..{BUDGET - 1}"
    assert found.violations[0].kind in kinds, f"{name}: unexpected first violation\n{found.report()}"
    report = found.report()
    assert f"seed {found.seed}: VIOLATION" in report and found.faults.describe() in report
    assert f"--seed {found.seed}" in report and found.tail[-1] in report
    again = run_seed(found.seed, protocols=protocols)  # the seed reproduces it, step for step
    assert again.trace_hash == found.trace_hash and again.violations == found.violations
    monkeypatch.undo()
    assert run_seed(found.seed, protocols=protocols).ok, f"{name}: seed {found.seed} fails without it too"


def test_a_classic_group_catches_a_member_joining_with_its_partitions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """In a classic group the coordinator does not know owners: the applications' exclusivity
    catches a member that rejoins still holding partitions (its generation is the current one,
    so it is no zombie), not only the consumer group's ownership checks."""
    classic_member_joins_without_releasing(monkeypatch)
    for seed in range(BUDGET):
        result = run_seed(seed, protocols="mixed")
        if result.violations and result.violations[0].kind in ("double-fetch", "double-hold"):
            return
    pytest.fail(f"no seed of 0..{BUDGET - 1} reports a double fetch or hold")


@pytest.mark.parametrize("name", sorted(TRANSACTIONAL_MUTATIONS))
def test_an_exactly_once_mutation_is_caught(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Exactly-once pipelines: the seed found for the mutation reports one of its violations,
    reproducibly, and passes once the mutation is undone."""
    mutate, seed, kinds = TRANSACTIONAL_MUTATIONS[name]
    mutate(monkeypatch)
    found = run_seed(seed, protocols="transactional")
    assert {v.kind for v in found.violations} & kinds, f"{name}: seed {seed}\n{found.report()}"
    again = run_seed(seed, protocols="transactional")
    assert again.trace_hash == found.trace_hash and again.violations == found.violations
    monkeypatch.undo()
    assert run_seed(seed, protocols="transactional").ok, f"{name}: seed {seed} fails without it too"
