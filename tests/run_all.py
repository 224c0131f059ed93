"""The whole test suite as ``./dev test`` runs it (what CI runs): three pytest processes at once,
then two more, one after the other.

* the tests that need no Apache Kafka, on three xdist workers (most of them wait on brokers, not
  on the CPU: on two cores the reference backend alone took 10m21s on two workers, 7m25s on three
  and 6m25s on four, and a fourth would crowd the parts running beside it);
* the tests that run on Apache Kafka (``-m kafka``), in one process: one broker cluster at a time;
* the fidelity suite (it compares both servers), in one process of its own;
* then the Spark tests, on both backends, with nothing else running: Spark gives the Python
  process behind a streaming source a fixed 10 s to start and connect back (not configurable),
  and with every part sharing two cores that start took longer, one query in about every other
  run ("Python worker failed to connect back", each time in a different Spark test);
* then, alone on a quiet machine, the tests that measure its timing (``@pytest.mark.timing``).

Each part writes its report to ``.test-reports/<part>.txt``; the reports are printed as the parts
end, and the exit status is the first non-zero one. Extra arguments go to every part
(``--backend reference`` leaves the Kafka parts with nothing to run, which is fine).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parents[1]
REPORTS = ROOT / ".test-reports"
WORKERS = os.environ.get("KCONSUMER_TEST_WORKERS", "3")

#: The Spark tests: run by a part of their own, after the parts run at once.
SPARK = ["tests/spark", "tests/sim/test_spark.py"]
#: What the parts run at once leave out: the fidelity suite (a part of its own) and Spark.
_ELSEWHERE = ["--ignore=tests/fidelity", *(f"--ignore={path}" for path in SPARK)]
#: (name, pytest arguments) of the parts run at once.
PARTS = (
    ("apache-kafka", ["-m", "kafka and not timing", *_ELSEWHERE, "-p", "no:xdist"]),
    ("fidelity", ["tests/fidelity", "-p", "no:xdist"]),
    ("reference", ["-m", "not kafka and not timing", *_ELSEWHERE, "-n", WORKERS]),
)
#: The parts run alone afterwards, one after the other.
ALONE = (
    ("spark", [*SPARK, "-m", "not timing", "-p", "no:xdist"]),
    ("timing", ["-m", "timing", "--ignore=tests/fidelity", "-p", "no:xdist"]),
)
#: pytest's status when a part selected no test at all (the reference backend alone, say).
NO_TESTS = 5

Running = tuple[str, "subprocess.Popen[bytes]", IO[bytes]]


def _start(name: str, arguments: list[str], extra: list[str]) -> Running:
    report = (REPORTS / f"{name}.txt").open("wb")
    command = [sys.executable, "-m", "pytest", "-q", "--durations=15", *arguments, *extra]
    print(f"run_all: {name}: {' '.join(command[3:])}", flush=True)
    return name, subprocess.Popen(command, cwd=ROOT, stdout=report, stderr=subprocess.STDOUT), report


def _finish(part: Running, started: float) -> int:
    name, process, report = part
    code = process.wait()
    report.close()
    print(f"\n===== {name} (exit {code}, done after {time.monotonic() - started:.0f} s) =====", flush=True)
    sys.stdout.write((REPORTS / f"{name}.txt").read_text(errors="replace"))
    return code


def main(extra: list[str]) -> int:
    REPORTS.mkdir(exist_ok=True)
    started = time.monotonic()
    running = [_start(name, arguments, extra) for name, arguments in PARTS]
    codes = [_finish(part, started) for part in running]
    codes += [_finish(_start(name, arguments, extra), started) for name, arguments in ALONE]
    failed = [code for code in codes if code not in (0, NO_TESTS)]
    # A part may select nothing (the Kafka parts under --backend reference); all of them may not.
    status = failed[0] if failed else (NO_TESTS if all(c == NO_TESTS for c in codes) else 0)
    print(f"\nrun_all: every part done in {time.monotonic() - started:.0f} s; exit {status}", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
