"""Deterministic simulation of KIP-848 consumer groups under faults (docs/simulation.md).

Real member cores (each with a simulated runtime and application) and the real coordinator core
run over a simulated network and clock; one seeded `random.Random` drives everything, so a seed is
a reproducible run. Invariants are checked after every step, liveness once the faults stop, and
at-least-once processing at the end.

    result = run_seed(42)          # SimResult: ok, violations, report(), trace_hash, stats
    python -m kconsumer.testing.sim --seed 42
    python -m kconsumer.testing.sim --seeds 0:1000 [--spark local[2]]
"""

from __future__ import annotations

from .invariants import Violation
from .params import FAULTS, FaultMix, SimParams
from .sweep import SeedSummary, SweepSummary, spark_sweep, summarize, sweep
from .world import SimResult, World, run_seed

__all__ = [
    "FAULTS",
    "FaultMix",
    "SeedSummary",
    "SimParams",
    "SimResult",
    "SweepSummary",
    "Violation",
    "World",
    "run_seed",
    "spark_sweep",
    "summarize",
    "sweep",
]
