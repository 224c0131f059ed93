"""Sweeps: many seeds, in this process or as a PySpark job, with a summary of what they covered.

A seed's outcome is reduced to a small, picklable `SeedSummary` (the full report only for failures),
so a sweep of tens of thousands of seeds, or a Spark job collecting them, stays cheap. No wall clock
is read here (the simulation package never reads one): time a sweep from outside.
"""

from __future__ import annotations

import os
import sys
import tempfile
import zipfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from .params import FAULTS
from .world import SimResult, run_seed

#: Counters summed over a sweep (from `SimResult.stats`).
_SUMMED = (
    "steps",
    "sim_ms",
    "zombie_episodes",
    "zombie_fetch_ms",
    "zombie_records",
    "failovers",
    "records",
    "classic_members",
    "txn_committed",
    "txn_aborted",
    "txn_fenced",
    "txn_timed_out",
)


@dataclass(frozen=True)
class SeedSummary:
    """What a sweep keeps of one seed."""

    seed: int
    ok: bool
    faults: tuple[str, ...]
    injected: dict[str, int]
    violations: tuple[str, ...]
    stats: dict[str, int]
    trace_hash: str
    report: str | None = None


def summarize(result: SimResult) -> SeedSummary:
    """The summary of one seed's result (its report only if it failed)."""
    injected = {k.removeprefix("injected_"): v for k, v in result.stats.items() if k.startswith("injected_")}
    return SeedSummary(
        seed=result.seed,
        ok=result.ok,
        faults=tuple(sorted(result.faults.on)),
        injected=injected,
        violations=tuple(f"{v.kind}: {v.message}" for v in result.violations[:3]),
        stats={k: v for k, v in result.stats.items() if not k.startswith("injected_")},
        trace_hash=result.trace_hash,
        report=None if result.ok else result.report(),
    )


def run_summaries(
    seeds: Iterable[int], only_faults: frozenset[str] | None = None, protocols: str = "consumer"
) -> Iterator[SeedSummary]:
    """Simulate `seeds` one after the other."""
    for seed in seeds:
        yield summarize(run_seed(seed, only_faults=only_faults, protocols=protocols))


@dataclass
class SweepSummary:
    """Totals of a sweep: seeds, failures, fault coverage, violation kinds, zombie overlap."""

    seeds: int = 0
    failures: list[SeedSummary] = field(default_factory=list)
    seeds_with_fault: Counter[str] = field(default_factory=Counter)
    injections: Counter[str] = field(default_factory=Counter)
    violation_kinds: Counter[str] = field(default_factory=Counter)
    totals: Counter[str] = field(default_factory=Counter)
    max_converge_ms: int = 0
    max_zombie_ms: int = 0
    first: int | None = None
    last: int | None = None

    def add(self, summary: SeedSummary) -> None:
        """Count one seed."""
        self.seeds += 1
        self.first = summary.seed if self.first is None else min(self.first, summary.seed)
        self.last = summary.seed if self.last is None else max(self.last, summary.seed)
        self.seeds_with_fault.update(summary.faults)
        self.injections.update(summary.injected)
        for name in _SUMMED:
            self.totals[name] += summary.stats.get(name, 0)
        self.max_converge_ms = max(self.max_converge_ms, summary.stats.get("converge_ms", 0))
        self.max_zombie_ms = max(self.max_zombie_ms, summary.stats.get("zombie_longest_ms", 0))
        if not summary.ok:
            self.failures.append(summary)
            self.violation_kinds.update({v.split(":", 1)[0] for v in summary.violations})

    @property
    def ok(self) -> bool:
        """No seed failed."""
        return not self.failures

    def format(self) -> str:
        """The human-readable summary."""
        n = max(self.seeds, 1)
        lines = [
            f"seeds {self.first}..{self.last}: {self.seeds} run, {len(self.failures)} with violations",
            f"simulated {self.totals['sim_ms'] / 1000:.0f} s in {self.totals['steps']} steps; "
            f"{self.totals['records']} records produced; {self.totals['failovers']} coordinator failovers"
            + (
                f"; transactions: {self.totals['txn_committed']} committed, "
                f"{self.totals['txn_aborted']} aborted"
                f" ({self.totals['txn_fenced']} fenced, {self.totals['txn_timed_out']} timed out)"
                if self.totals["txn_committed"]
                else ""
            ),
            f"zombies: {self.totals['zombie_episodes']} episodes, {self.totals['zombie_fetch_ms']} ms "
            f"fetching in total (longest {self.max_zombie_ms} ms), {self.totals['zombie_records']} "
            "records processed by zombies",
            f"slowest convergence after the faults stopped: {self.max_converge_ms} ms",
            "faults (seeds with it on / times injected):",
        ]
        for name in FAULTS:
            on = self.seeds_with_fault[name]
            injected = self.injections.get(name)
            extra = f" / {injected} injected" if injected else ""
            lines.append(f"  {name:<17} {on:>7} seeds ({100 * on / n:4.1f}%){extra}")
        if self.injections.get("fatal_restart"):
            lines.append(
                f"  (members restarted after UNRELEASED_INSTANCE_ID: {self.injections['fatal_restart']})"
            )
        if self.violation_kinds:
            lines.append(
                "violations: " + ", ".join(f"{k} x{v}" for k, v in self.violation_kinds.most_common())
            )
            seeds = ", ".join(str(f.seed) for f in sorted(self.failures, key=lambda f: f.seed)[:20])
            lines.append(f"failing seeds: {seeds}")
        return "\n".join(lines)


def _progress_bar(done: int, total: int, failures: int, out: TextIO) -> None:
    width = 40
    filled = width * done // max(total, 1)
    out.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} seeds, {failures} failing")
    if done == total:
        out.write("\n")
    out.flush()


def sweep(
    first: int,
    last: int,
    *,
    only_faults: frozenset[str] | None = None,
    protocols: str = "consumer",
    progress: TextIO | None = None,
    on_failure: Callable[[SeedSummary], None] | None = None,
) -> SweepSummary:
    """Run seeds ``first`` to ``last - 1`` in this process; print a progress bar to `progress`
    and hand each failure to `on_failure` as it happens."""
    summary = SweepSummary()
    total = last - first
    step = max(1, total // 200)
    for i, seed_summary in enumerate(run_summaries(range(first, last), only_faults, protocols), start=1):
        summary.add(seed_summary)
        if not seed_summary.ok and on_failure is not None:
            on_failure(seed_summary)
        if progress is not None and (i % step == 0 or i == total):
            _progress_bar(i, total, len(summary.failures), progress)
    return summary


# -- Spark ---------------------------------------------------------------------------------------


def _partition(seeds: Iterable[int], only: list[str] | None, protocols: str) -> Iterator[SeedSummary]:
    """Runs in a Spark executor: simulate a partition of the seed range."""
    yield from run_summaries(seeds, None if only is None else frozenset(only), protocols)


def _package_zip(directory: Path) -> Path:
    """Zip the kconsumer package (for `SparkContext.addPyFile`: executors import it from there)."""
    package = Path(__file__).resolve().parents[2]
    target = directory / "kconsumer.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(package.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix in (".py", ".typed"):
                archive.write(path, path.relative_to(package.parent))
    return target


def spark_sweep(
    first: int,
    last: int,
    master: str = "local[*]",
    *,
    partitions: int | None = None,
    only_faults: frozenset[str] | None = None,
    protocols: str = "consumer",
    on_failure: Callable[[SeedSummary], None] | None = None,
) -> SweepSummary:
    """Run the seed range as a PySpark job on `master` (``local[*]``, ``local[2]``,
    ``spark://host:7077``, ``yarn``, ...): the seeds become an RDD, executors simulate them
    and the failures (with their reports) are collected here.

    The kconsumer package is shipped to the executors as a zip (``addPyFile``); its
    dependencies (aiokafka, google-re2, confluent-kafka) must be installed there. In local mode
    the executors use this interpreter unless ``PYSPARK_PYTHON`` says otherwise."""
    from pyspark.sql import SparkSession

    if master.startswith("local"):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark: Any = (
        SparkSession.builder.master(master)
        .appName(f"kconsumer-sim {first}:{last}")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "true")
        .getOrCreate()
    )
    summary = SweepSummary()
    try:
        context = spark.sparkContext
        with tempfile.TemporaryDirectory() as directory:
            context.addPyFile(str(_package_zip(Path(directory))))
            slices = partitions or max(context.defaultParallelism * 8, 1)
            only = None if only_faults is None else sorted(only_faults)
            rdd = context.parallelize(range(first, last), min(slices, max(last - first, 1)))
            for seed_summary in rdd.mapPartitions(lambda seeds: _partition(seeds, only, protocols)).collect():
                summary.add(seed_summary)
                if not seed_summary.ok and on_failure is not None:
                    on_failure(seed_summary)
    finally:
        spark.stop()
    return summary
