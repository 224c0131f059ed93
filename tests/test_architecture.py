"""The rules of DESIGN.md that keep the layering honest, checked on the source."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "kconsumer"
SANS_IO = ("client/member", "broker/coordinator", "protocol", "assignment")
FORBIDDEN_IN_CORES = {"asyncio", "threading", "socket", "time", "random", "uuid", "secrets", "selectors"}
MAX_MODULE_LINES = 750


def _modules(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def _imported_roots(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    roots: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def _imported_modules(path: Path) -> set[str]:
    """Every module `path` imports, by its full dotted name: relative imports are resolved, and
    ``from package import name`` counts as importing ``package.name`` too (it may be a module)."""
    package = list(path.relative_to(PACKAGE.parent).parts[:-1])  # for __init__.py: the package itself
    tree = ast.parse(path.read_text(), str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def _importers_of(roots: tuple[str, ...], prefixes: tuple[str, ...]) -> dict[str, list[str]]:
    """The modules under `roots` (folders of the package) that import anything under `prefixes`."""
    offenders: dict[str, list[str]] = {}
    for root in roots:
        for path in _modules(PACKAGE / root):
            bad = sorted(m for m in _imported_modules(path) if m.startswith(prefixes))
            if bad:
                offenders[str(path.relative_to(PACKAGE))] = bad
    return offenders


def test_import_resolution() -> None:
    """The resolver above: absolute, relative (``.``, ``..``, ``from . import``), in packages."""
    found = _imported_modules(PACKAGE / "client" / "runtime" / "client_assignment.py")
    assert {"kconsumer.assignment.conversions", "kconsumer.client.config", "asyncio"} <= found
    assert "kconsumer.client.runtime.connection" in found
    serve = PACKAGE / "broker" / "server" / "serve.py"
    assert "kconsumer.broker.coordinator.assignors" in _imported_modules(serve)
    assert "kconsumer.assignment.builtin" in _imported_modules(PACKAGE / "__init__.py")


def test_the_client_and_the_shared_layers_never_import_the_broker() -> None:
    """DESIGN.md: the client never imports the broker; what both need is in assignment/ or protocol/."""
    offenders = _importers_of(("client", "assignment", "protocol"), ("kconsumer.broker",))
    assert not offenders, f"modules importing kconsumer.broker: {offenders}"


def test_assignment_imports_neither_side() -> None:
    """assignment/ lies below the client and the broker, and the testing tools."""
    sides = ("kconsumer.client", "kconsumer.broker", "kconsumer.testing")
    offenders = _importers_of(("assignment",), sides)
    assert not offenders, f"assignment/ modules importing the client, the broker or testing: {offenders}"


@pytest.mark.parametrize("core", SANS_IO)
def test_sans_io_cores_import_no_io_clock_or_randomness(core: str) -> None:
    offenders = {
        str(path.relative_to(PACKAGE)): sorted(_imported_roots(path) & FORBIDDEN_IN_CORES)
        for path in _modules(PACKAGE / core)
    }
    offenders = {name: found for name, found in offenders.items() if found}
    assert not offenders, f"sans-IO modules import I/O, clock or randomness: {offenders}"


def test_aiokafka_is_imported_in_one_module_only() -> None:
    importers = [
        str(path.relative_to(PACKAGE)) for path in _modules(PACKAGE) if "aiokafka" in _imported_roots(path)
    ]
    assert importers == ["protocol/_aiokafka.py"]


def test_modules_stay_small() -> None:
    too_long = {
        str(path.relative_to(PACKAGE)): n
        for path in _modules(PACKAGE)
        if (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert not too_long, f"modules over {MAX_MODULE_LINES} lines (split them): {too_long}"
