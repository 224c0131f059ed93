"""A seed is a reproducible run: the same seed gives the same trace (and so the same hash), in this
process and in another one with a different string-hash seed (a Spark executor, a replay)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from kconsumer.testing.sim import run_seed

SEEDS = [0, 1, 7, 42, 443, 992, 2024, 31337]


@pytest.mark.parametrize("seed", SEEDS)
def test_same_seed_same_trace(seed: int) -> None:
    first, second = run_seed(seed), run_seed(seed)
    assert first.trace_hash == second.trace_hash
    assert first.stats == second.stats and first.violations == second.violations
    assert first.tail == second.tail


def test_different_seeds_give_different_traces() -> None:
    hashes = {run_seed(seed).trace_hash for seed in SEEDS[:4]}
    assert len(hashes) == 4


def test_verbose_replay_gives_the_same_trace() -> None:
    lines: list[str] = []
    verbose = run_seed(SEEDS[1], verbose=True, sink=lines.append)
    assert verbose.trace_hash == run_seed(SEEDS[1]).trace_hash
    assert lines[-len(verbose.tail) :] == verbose.tail


def test_trace_does_not_depend_on_the_hash_seed() -> None:
    seeds = SEEDS[:3]
    expected = [run_seed(seed).trace_hash for seed in seeds]
    code = (
        f"from kconsumer.testing.sim import run_seed;print(' '.join(run_seed(s).trace_hash for s in {seeds}))"
    )
    for hash_seed in ("0", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        assert out.stdout.split() == expected, f"PYTHONHASHSEED={hash_seed}"
