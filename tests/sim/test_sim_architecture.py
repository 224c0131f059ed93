"""The simulation package reads no clock and starts no thread: all time is simulated, all
randomness comes from the seed's `random.Random`."""

from __future__ import annotations

import ast
from pathlib import Path

import kconsumer.testing.sim

SIM = Path(kconsumer.testing.sim.__file__).resolve().parent
FORBIDDEN = {"asyncio", "threading", "socket", "time", "secrets", "uuid", "selectors", "datetime"}


def _imports(path: Path) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def test_no_clock_thread_or_socket() -> None:
    offenders = {p.name: sorted(_imports(p) & FORBIDDEN) for p in sorted(SIM.glob("*.py"))}
    assert not {name: found for name, found in offenders.items() if found}


def test_random_only_through_a_seeded_generator() -> None:
    for path in sorted(SIM.glob("*.py")):
        text = path.read_text()
        assert "random.random()" not in text and "random.randint(" not in text, path.name
        assert "SystemRandom" not in text and "os.urandom" not in text, path.name


def test_modules_stay_small() -> None:
    sizes = {p.name: len(p.read_text().splitlines()) for p in SIM.glob("*.py")}
    assert max(sizes.values()) < 700, sizes
