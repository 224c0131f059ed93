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


#: The events only the application core sends the member: whoever builds one decides what the
#: application thread does, which is the core's job.
APPLICATION_CORE_EVENTS = {"FetchingStopped", "PositionsCollected", "CallbackCompleted", "CommitRequested"}


def _called_names(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call):
            func = node.func
            names.add(func.id if isinstance(func, ast.Name) else getattr(func, "attr", ""))
    return names


def test_the_simulated_application_drives_the_shipped_application_core() -> None:
    """No copy of the application thread's policy in the simulation: it builds none of the events
    that policy sends, and its application constructs the core both consumers use."""
    builders = {p.name: sorted(_called_names(p) & APPLICATION_CORE_EVENTS) for p in sorted(SIM.glob("*.py"))}
    assert not {name: found for name, found in builders.items() if found}
    assert "ApplicationCore" in _called_names(SIM / "app.py")
    client = SIM.parent.parent / "client"
    assert "ApplicationCore" in _called_names(client / "engine.py")  # what Consumer and AIOConsumer drive
    assert not (client / "app_thread.py").exists()
