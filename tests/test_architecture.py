"""The rules of DESIGN.md that keep the layering honest, checked on the source."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "kconsumer"
SANS_IO = ("client/member", "broker/coordinator", "protocol")
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
