"""The whole test suite as ``./dev test`` runs it (what CI runs): three pytest processes at once.

* the tests that need no Apache Kafka, on two xdist workers (most of them wait on brokers, not on
  the CPU);
* the tests that run on Apache Kafka (``-m kafka``), in one process: one broker cluster at a time;
* the fidelity suite (it compares both servers), in one process of its own.

Each writes its report to ``.test-reports/<part>.txt``; the reports are printed when all three
are done, and the exit status is the first non-zero one. Extra arguments go to every part
(``--backend reference`` leaves the Kafka parts with nothing to run, which is fine).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPORTS = ROOT / ".test-reports"

#: (name, pytest arguments)
PARTS = (
    ("apache-kafka", ["-m", "kafka", "--ignore=tests/fidelity", "-p", "no:xdist"]),
    ("fidelity", ["tests/fidelity", "-p", "no:xdist"]),
    (
        "reference",
        ["-m", "not kafka", "--ignore=tests/fidelity", "-n", os.environ.get("KCONSUMER_TEST_WORKERS", "2")],
    ),
)
#: pytest's status when a part selected no test at all (the reference backend alone, say).
NO_TESTS = 5


def main(extra: list[str]) -> int:
    REPORTS.mkdir(exist_ok=True)
    started = time.monotonic()
    running = []
    for name, arguments in PARTS:
        report = (REPORTS / f"{name}.txt").open("w")
        command = [sys.executable, "-m", "pytest", "-q", "--durations=15", *arguments, *extra]
        process = subprocess.Popen(command, cwd=ROOT, stdout=report, stderr=subprocess.STDOUT)
        running.append((name, process, report))
        print(f"run_all: {name}: {' '.join(command[3:])}", flush=True)
    codes = []
    for name, process, report in running:
        code = process.wait()
        report.close()
        codes.append(code)
        print(
            f"\n===== {name} (exit {code}, done after {time.monotonic() - started:.0f} s) =====", flush=True
        )
        sys.stdout.write((REPORTS / f"{name}.txt").read_text())
    failed = [code for code in codes if code not in (0, NO_TESTS)]
    # A part may select nothing (the Kafka parts under --backend reference); all of them may not.
    status = failed[0] if failed else (NO_TESTS if all(c == NO_TESTS for c in codes) else 0)
    print(f"\nrun_all: every part done in {time.monotonic() - started:.0f} s; exit {status}", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
