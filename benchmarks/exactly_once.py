"""The exactly-once pipeline of `examples/exactly_once.py` on the reference cluster and on Apache
Kafka 4.4, measured in the same run: one worker (kconsumer reading, a confluent-kafka
transactional producer writing, input offsets committed in each transaction) turns an input topic
of `--records` records of `--size` bytes into an output topic, `--batch` records per transaction.

Reported per broker: transactions per second and records per second between the first and the
last commit (the group join before is left out), and the reference cluster's rate as a ratio of
Apache Kafka's. The committed output is read back afterwards and must hold every input record
exactly once, or the run fails.

    python -m benchmarks.exactly_once [--records 20000] [--size 100] [--batch 200]
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

from .common import GroupTimers, broker, log, produce

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

from exactly_once import committed_output, run_worker

PARTITIONS = 4


def measure(kind: str, records: int, size: int, batch: int) -> dict[str, float]:
    """One broker's run: transactions/s and records/s of the pipeline."""
    timers = GroupTimers(session_timeout_ms=10_000, heartbeat_interval_ms=1_000)
    with broker(kind, [("eos-in", PARTITIONS), ("eos-out", PARTITIONS)], timers) as bootstrap:
        produce(bootstrap, "eos-in", PARTITIONS, records // PARTITIONS, size)
        total = PARTITIONS * (records // PARTITIONS)
        commits: list[tuple[float, int]] = []
        done = threading.Event()

        def report(line: str) -> None:
            if line.startswith("committed"):
                count = int(line.split()[1])
                commits.append((time.perf_counter(), (commits[-1][1] if commits else 0) + count))
                if commits[-1][1] >= total:
                    done.set()

        worker = threading.Thread(
            target=run_worker,
            args=(bootstrap, "eos-bench", "eos-in", "eos-out", "eos-bench-worker"),
            kwargs={"stop": done.is_set, "report": report, "batch": batch},
        )
        worker.start()
        finished = done.wait(600)
        worker.join(60)
        if not finished or len(commits) < 2:
            raise RuntimeError(f"{kind}: the pipeline did not finish ({len(commits)} transactions)")
        keys = committed_output(bootstrap, "eos-out", PARTITIONS)
        if len(keys) != total or len(set(keys)) != total:
            raise RuntimeError(
                f"{kind}: {len(set(keys))} distinct of {len(keys)} output records, {total} input"
            )
        span = commits[-1][0] - commits[0][0]
        moved = commits[-1][1] - commits[0][1]
        return {"transactions_per_s": (len(commits) - 1) / span, "records_per_s": moved / span}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--batch", type=int, default=200)
    parser.add_argument("--brokers", default="reference,kafka")
    args = parser.parse_args(argv)
    results = {}
    for kind in args.brokers.split(","):
        log(f"exactly-once pipeline on {kind}: {args.records} records of {args.size} B, {args.batch} a batch")
        results[kind] = measure(kind, args.records, args.size, args.batch)
        row = results[kind]
        rates = f"{row['transactions_per_s']:8.1f} transactions/s  {row['records_per_s']:10.0f} records/s"
        print(f"{kind:>10}: {rates}")
    if "reference" in results and "kafka" in results:
        ratio = results["reference"]["records_per_s"] / results["kafka"]["records_per_s"]
        print(f"reference ÷ Apache Kafka: {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
