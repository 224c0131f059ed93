"""Seeds for the simulation's regression and mutation tests.

Searching (default): new seeds for a regression whose seed changed course (``test_regressions``),
for a checker test (``reverted_fixes.CHECKER_REVERTS``, ``test_checker``) or for a mutation
(``mutations``). A seed qualifies when it passes as the code is and, with the fix
undone (or the mutation on), its first violation is one of the kinds expected.

Counting (``--count``): how many seeds of a range report a violation with the fix undone (or the
mutation on), by kind of the first violation, and the first such seed: how well the checker
catches it.

    python tests/sim/search_seeds.py auto_commit_includes_revoking --from 0 --to 400 --want 2
    python tests/sim/search_seeds.py members_fetch_unstable_offsets --protocols transactional
    python tests/sim/search_seeds.py retried_commit_keeps_its_first_epoch --count --from 530000 --to 530399
    python tests/sim/search_seeds.py checker_compares_client_epochs_with_stored_generations --protocols mixed
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mutations import MIXED_MUTATIONS, MUTATIONS, TRANSACTIONAL_MUTATIONS
from reverted_fixes import CHECKER_REVERTS, REVERTS

from kconsumer.testing.sim import run_seed


def _undo(name: str) -> tuple[Callable[[pytest.MonkeyPatch], None], frozenset[str]]:
    if name in REVERTS or name in CHECKER_REVERTS:
        revert, kinds = {**REVERTS, **CHECKER_REVERTS}[name]
        return revert, frozenset(kinds)
    if name in TRANSACTIONAL_MUTATIONS:
        mutate, _seed, kinds = TRANSACTIONAL_MUTATIONS[name]
        return mutate, frozenset(kinds)
    mutate, kinds = {**MUTATIONS, **MIXED_MUTATIONS}[name]
    return mutate, frozenset(kinds)


def search(name: str, protocols: str, first: int, last: int, want: int) -> list[int]:
    """Seeds of first..last (up to `want`) that pass as they are and catch `name` undone."""
    undo, kinds = _undo(name)
    found: list[int] = []
    for seed in range(first, last + 1):
        with pytest.MonkeyPatch.context() as patch:
            undo(patch)
            broken = run_seed(seed, protocols=protocols)
        if not broken.violations or broken.violations[0].kind not in kinds:
            continue
        if run_seed(seed, protocols=protocols).ok:
            found.append(seed)
            print(f"seed {seed}: {broken.violations[0].kind}", flush=True)
            if len(found) >= want:
                break
    return found


def count(name: str, protocols: str, first: int, last: int) -> tuple[Counter[str], int | None]:
    """The first violations' kinds over first..last with `name` undone, and the first seed."""
    undo, _kinds = _undo(name)
    kinds: Counter[str] = Counter()
    first_seed = None
    with pytest.MonkeyPatch.context() as patch:
        undo(patch)
        for seed in range(first, last + 1):
            result = run_seed(seed, protocols=protocols)
            if result.violations:
                kinds[result.violations[0].kind] += 1
                first_seed = seed if first_seed is None else first_seed
    return kinds, first_seed


def main(argv: list[str] | None = None) -> int:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument(
        "name", help="a reverted fix (reverted_fixes.REVERTS, CHECKER_REVERTS) or a mutation (mutations)"
    )
    parser.add_argument("--protocols", default="consumer", help="consumer, mixed or transactional")
    parser.add_argument("--from", dest="first", type=int, default=0)
    parser.add_argument("--to", dest="last", type=int, default=2000)
    parser.add_argument("--want", type=int, default=2, help="stop after this many seeds")
    parser.add_argument("--count", action="store_true", help="count the seeds that catch it instead")
    args: Any = parser.parse_args(argv)
    if args.count:
        kinds, first_seed = count(args.name, args.protocols, args.first, args.last)
        caught, seeds = sum(kinds.values()), args.last - args.first + 1
        print(f"{args.name} ({args.protocols}): {caught} of {seeds} seeds {dict(kinds)}, first {first_seed}")
        return 0 if kinds else 1
    found = search(args.name, args.protocols, args.first, args.last, args.want)
    print(f"{args.name} ({args.protocols}): {found or 'no seed'} in {args.first}..{args.last}")
    return 0 if found else 1


if __name__ == "__main__":
    sys.exit(main())
