"""The CI budget: a fixed range of seeds must pass, and together cover every fault.

A failure prints each failing seed's report (its fault mix, world, violations and the last trace
events); replay one with ``python -m kconsumer.testing.sim --seed S``."""

from __future__ import annotations

import pytest

from kconsumer.testing.sim import FAULTS, SweepSummary, sweep

#: The seeds CI runs, in chunks (so a failure names a small range, and xdist can spread them).
CHUNKS = [(start, start + 50) for start in range(0, 400, 50)]
_summaries: dict[tuple[int, int], SweepSummary] = {}


@pytest.mark.parametrize(("first", "last"), CHUNKS, ids=[f"seeds-{a}-{b - 1}" for a, b in CHUNKS])
def test_seed_range_passes(first: int, last: int) -> None:
    summary = sweep(first, last)
    _summaries[(first, last)] = summary
    reports = "\n\n".join(f.report or "" for f in summary.failures)
    assert summary.ok, f"{len(summary.failures)} seeds violate invariants:\n{reports}"


#: Seeds with classic members next to consumer-protocol ones (``--protocols mixed``).
MIXED_CHUNKS = [(start, start + 50) for start in range(0, 400, 50)]


@pytest.mark.parametrize(("first", "last"), MIXED_CHUNKS, ids=[f"mixed-{a}-{b - 1}" for a, b in MIXED_CHUNKS])
def test_mixed_seed_range_passes(first: int, last: int) -> None:
    summary = sweep(first, last, protocols="mixed")
    reports = "\n\n".join(f.report or "" for f in summary.failures)
    assert summary.ok, f"{len(summary.failures)} seeds violate invariants:\n{reports}"
    assert summary.totals["classic_members"] > 0, "no classic member ran"


#: Exactly-once pipelines (``--protocols transactional``): every member transacts.
TRANSACTIONAL_CHUNKS = [(start, start + 100) for start in range(0, 400, 100)]


@pytest.mark.parametrize(
    ("first", "last"),
    TRANSACTIONAL_CHUNKS,
    ids=[f"transactional-{a}-{b - 1}" for a, b in TRANSACTIONAL_CHUNKS],
)
def test_transactional_seed_range_passes(first: int, last: int) -> None:
    summary = sweep(first, last, protocols="transactional")
    reports = "\n\n".join(f.report or "" for f in summary.failures)
    assert summary.ok, f"{len(summary.failures)} seeds violate invariants:\n{reports}"
    assert summary.totals["txn_committed"] > 0 and summary.totals["txn_aborted"] > 0, summary.totals


def test_the_budget_covers_every_fault() -> None:
    total = SweepSummary()
    for first, last in CHUNKS:
        summary = _summaries.get((first, last)) or sweep(first, last)
        for failure in summary.failures:
            total.add(failure)
        total.seeds_with_fault.update(summary.seeds_with_fault)
        total.injections.update(summary.injections)
        total.totals.update(summary.totals)
    for name in FAULTS:
        assert total.seeds_with_fault[name] >= 20, f"fault {name} is on in too few seeds"
    for name in ("drop", "partition", "failover", "crash", "restart", "pause", "overrun", "recreate_topic"):
        assert total.injections[name] >= 20, f"fault {name} was injected too rarely"
    assert total.totals["zombie_episodes"] > 0, "no zombie was ever seen: the zombie checks are untested"
