"""``python -m kconsumer.testing.worker_sim --seeds A:B`` (or ``--seed N -v`` to replay one)."""

from __future__ import annotations

import argparse
import sys

from .run import PROTOCOLS, run_seed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="the worker-group simulation")
    parser.add_argument("--seeds", default="0:200", help="a range A:B of seeds")
    parser.add_argument("--seed", type=int, help="one seed, with its trace (-v)")
    parser.add_argument("-v", "--verbose", action="store_true")
    parser.add_argument(
        "--protocols", choices=PROTOCOLS, default="connect", help="mixed: half the workers are classic"
    )
    args = parser.parse_args(argv)
    if args.seed is not None:
        result = run_seed(args.seed, verbose=args.verbose, protocols=args.protocols)
        print(result.report())
        print(f"trace hash {result.trace_hash}")
        return 0 if result.ok else 1
    first, last = (int(x) for x in args.seeds.split(":"))
    failing = []
    faults: dict[str, int] = {}
    restarts = 0
    for seed in range(first, last):
        result = run_seed(seed, protocols=args.protocols)
        for kind, count in result.faults.items():
            faults[kind] = faults.get(kind, 0) + count
        restarts += result.restarts
        if not result.ok:
            failing.append(seed)
            print(result.report())
    print(f"{last - first} seeds, {len(failing)} failing: {failing[:20]}")
    print(
        f"faults injected: {dict(sorted(faults.items()))}; "
        f"static workers restarted after UNRELEASED_INSTANCE_ID: {restarts}"
    )
    return 0 if not failing else 1


if __name__ == "__main__":
    sys.exit(main())
