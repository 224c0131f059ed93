"""The documentation's self-contained Python snippets run verbatim (each in its own interpreter):
every ```python block of README.md and docs/*.md that imports what it uses and starts its own
reference cluster. A snippet that stops working fails here, not in a new user's hands."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def _snippets() -> list[tuple[str, str]]:
    found = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for index, block in enumerate(_BLOCK.findall(path.read_text())):
            if "ReferenceCluster(" in block and "import " in block:
                found.append((f"{path.relative_to(ROOT)}#{index}", block))
    return found


SNIPPETS = _snippets()


def test_there_are_snippets_to_run() -> None:
    assert len(SNIPPETS) >= 3, SNIPPETS


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("where", "code"), SNIPPETS, ids=[where for where, _ in SNIPPETS])
def test_the_snippet_runs(where: str, code: str) -> None:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=100, cwd=ROOT)
    assert done.returncode == 0, f"{where} failed:\n{code}\n{done.stderr[-3000:]}"
    # the reference cluster's shutdown leaves no asyncio task behind (it used to, mid-TLS-handshake)
    assert "Task was destroyed but it is pending" not in done.stderr, done.stderr[-3000:]
