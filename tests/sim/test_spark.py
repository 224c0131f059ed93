"""A sweep as a PySpark job (local mode): seeds as an RDD, simulated in executors that import the
shipped package, failures collected on the driver."""

from __future__ import annotations

import shutil

import pytest

pytest.importorskip("pyspark")
pytestmark = [
    pytest.mark.spark,
    pytest.mark.skipif(shutil.which("java") is None, reason="PySpark needs Java (no java on PATH)"),
]


def test_spark_sweep_matches_the_local_sweep() -> None:
    from kconsumer.testing.sim import spark_sweep, sweep

    remote = spark_sweep(20, 26, "local[2]", partitions=3)
    local = sweep(20, 26)
    assert remote.ok and remote.seeds == 6
    assert remote.totals == local.totals and remote.injections == local.injections


def test_spark_sweep_collects_failures(monkeypatch: pytest.MonkeyPatch) -> None:
    from kconsumer.testing.sim import spark_sweep

    # Executors run the shipped package in other processes: restrict the fault mix instead of
    # patching. Failures are collected with their reports; here the sweep is clean.
    collected: list[object] = []
    summary = spark_sweep(0, 2, "local[1]", only_faults=frozenset({"crash"}), on_failure=collected.append)
    assert summary.seeds == 2 and summary.seeds_with_fault["crash"] == 2
    assert collected == summary.failures
