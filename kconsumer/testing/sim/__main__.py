"""``python -m kconsumer.testing.sim``: replay one seed, sweep a range, or sweep it on Spark.

    python -m kconsumer.testing.sim --seed 42             # verbose trace of seed 42, then its report
    python -m kconsumer.testing.sim --seeds 0:1000        # sweep, progress bar, summary
    python -m kconsumer.testing.sim --seeds 0:5000 --protocols mixed   # classic members too
    python -m kconsumer.testing.sim --seeds 0:600 --protocols transactional   # exactly-once pipelines
    python -m kconsumer.testing.sim --seeds 0:20000 --spark local[2]
    python -m kconsumer.testing.sim --seeds 0:100000 --spark spark://host:7077 --partitions 400

Exit status 1 when a seed violates an invariant.
"""

from __future__ import annotations

import argparse
import sys

from .params import FAULTS
from .sweep import SeedSummary, SweepSummary, spark_sweep, sweep
from .world import PROTOCOLS, run_seed


def _range(text: str) -> tuple[int, int]:
    first, sep, last = text.partition(":")
    if not sep:
        raise argparse.ArgumentTypeError("expected A:B (seeds A to B-1)")
    start, end = int(first), int(last)
    if end <= start:
        raise argparse.ArgumentTypeError("B must be greater than A")
    return start, end


def _faults(text: str) -> frozenset[str]:
    names = frozenset(name.strip() for name in text.split(",") if name.strip())
    unknown = sorted(names - set(FAULTS))
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown faults {unknown}; known: {', '.join(FAULTS)}")
    return names


def main(argv: list[str] | None = None) -> int:
    """The command line; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m kconsumer.testing.sim",
        description="Deterministic simulation of KIP-848 consumer groups under faults.",
    )
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--seed", type=int, help="replay one seed with its whole trace")
    what.add_argument("--seeds", type=_range, metavar="A:B", help="sweep seeds A to B-1")
    parser.add_argument(
        "--spark",
        nargs="?",
        const="local[*]",
        metavar="MASTER",
        help="run the sweep as a PySpark job (default master local[*])",
    )
    parser.add_argument("--partitions", type=int, help="Spark partitions of the seed range")
    parser.add_argument("--faults", type=_faults, help="switch on exactly these faults (comma-separated)")
    parser.add_argument(
        "--protocols",
        choices=PROTOCOLS,
        default="consumer",
        help="consumer: KIP-848 members only; mixed: classic members too (groups convert online)",
    )
    parser.add_argument("--quiet", action="store_true", help="with --seed: only the report, not the trace")
    args = parser.parse_args(argv)

    if args.seed is not None:
        if args.spark:
            parser.error("--spark goes with --seeds")
        sink = None if args.quiet else print
        result = run_seed(
            args.seed, verbose=not args.quiet, sink=sink, only_faults=args.faults, protocols=args.protocols
        )
        print(result.report(), f"\ntrace hash {result.trace_hash}", sep="")
        return 0 if result.ok else 1

    first, last = args.seeds

    def failed(summary: SeedSummary) -> None:
        print(f"\nVIOLATION {summary.report}", file=sys.stderr)

    summary: SweepSummary
    if args.spark:
        summary = spark_sweep(
            first,
            last,
            args.spark,
            partitions=args.partitions,
            only_faults=args.faults,
            protocols=args.protocols,
            on_failure=failed,
        )
    else:
        summary = sweep(
            first,
            last,
            only_faults=args.faults,
            protocols=args.protocols,
            progress=sys.stderr,
            on_failure=failed,
        )
    print(summary.format())
    return 0 if summary.ok else 1


if __name__ == "__main__":
    sys.exit(main())
