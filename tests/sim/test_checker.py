"""Building blocks of the checker and of sweep summaries."""

from __future__ import annotations

import pytest
from reverted_fixes import (
    checker_compares_client_epochs_with_stored_generations,
    checker_counts_only_members_gone_as_zombies,
)

from kconsumer.testing.sim import SweepSummary, run_seed, summarize
from kconsumer.testing.sim.coverage import Coverage
from kconsumer.testing.sim.invariants import Violation


@pytest.mark.parametrize(
    ("spans", "intervals", "prefix"),
    [
        ([], [], 0),
        ([(0, 5)], [[0, 5]], 5),
        ([(3, 5)], [[3, 5]], 0),
        ([(0, 2), (2, 4)], [[0, 4]], 4),
        ([(5, 7), (0, 2), (2, 5)], [[0, 7]], 7),
        ([(0, 2), (4, 6), (8, 9), (1, 8)], [[0, 9]], 9),
        ([(4, 6), (0, 1), (2, 3)], [[0, 1], [2, 3], [4, 6]], 1),
        ([(0, 3), (1, 2)], [[0, 3]], 3),
    ],
)
def test_coverage_merges_processed_ranges(
    spans: list[tuple[int, int]], intervals: list[list[int]], prefix: int
) -> None:
    coverage = Coverage()
    for start, end in spans:
        coverage.add(start, end)
    assert coverage.intervals == intervals
    assert coverage.prefix == prefix


def test_violation_text_names_kind_and_time() -> None:
    assert str(Violation("liveness", 1234, "stuck")) == "[liveness] at 1234 ms: stuck"


def test_summary_counts_faults_and_failures() -> None:
    results = [run_seed(seed) for seed in (0, 1)]
    summary = SweepSummary()
    for result in results:
        summary.add(summarize(result))
    assert summary.seeds == 2 and summary.ok and (summary.first, summary.last) == (0, 1)
    for name in results[0].faults.on | results[1].faults.on:
        assert summary.seeds_with_fault[name] >= 1
    assert summary.totals["steps"] == sum(r.stats["steps"] for r in results)
    text = summary.format()
    assert "seeds 0..1: 2 run, 0 with violations" in text and "faults (seeds with it on" in text
    failing = summarize(results[0])
    failing = type(failing)(
        **{**failing.__dict__, "ok": False, "violations": ("liveness: stuck",), "report": "r"}
    )
    summary.add(failing)
    assert len(summary.failures) == 1 and summary.violation_kinds["liveness"] == 1
    assert "failing seeds: 0" in summary.format()


def test_result_stats_and_report() -> None:
    result = run_seed(0)
    assert result.ok and result.stats["steps"] > 0 and result.stats["sim_ms"] > 10_000
    assert "converge_ms" in result.stats and "drain_ms" in result.stats
    assert result.report().startswith("seed 0: ok")


def test_a_static_classic_member_left_out_of_a_generation_is_a_zombie(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Kafka keeps a static member that did not rejoin in time in the group, but the generation
    goes on without it and its partitions go to others; until it hears ILLEGAL_GENERATION it is a
    zombie (the checker's exclusivity exempts it), not a second owner. Counting only members the
    group no longer has as zombies reports a double hold there (seed 7047; 6660, 1632 and 2519, a
    static classic member paused past the rebalance timeout, before their course changed)."""
    seed = 7047
    result = run_seed(seed, protocols="mixed")
    assert result.ok, result.report()
    checker_counts_only_members_gone_as_zombies(monkeypatch)
    result = run_seed(seed, protocols="mixed")
    assert [v.kind for v in result.violations][:1] == ["double-hold"], result.report()


def test_a_generation_handed_out_but_never_stored_counts_for_client_epochs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A classic member takes its generation from the JoinGroup answer; a rebalance that then
    fails at SyncGroup is never stored, yet the member heartbeats with that generation. Seed 2100
    has one (8699, 5469 and 2859 before their courses changed): checked against the stored
    generations only, it reports a client epoch too high."""
    assert run_seed(2100, protocols="mixed").ok
    checker_compares_client_epochs_with_stored_generations(monkeypatch)
    result = run_seed(2100, protocols="mixed")
    assert [v.kind for v in result.violations][:1] == ["client-epoch"], result.report()
