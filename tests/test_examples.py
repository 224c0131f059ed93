"""Each consumer example runs by itself (it starts its own reference cluster) and exits 0.

Each runs as a subprocess, with a timeout; a failure shows the example's output.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = [
    "basic_consumer.py",
    "commit_on_revoke.py",
    "regex_subscription.py",
    "static_membership.py",
    "asyncio_service.py",
    "worker_group.py",
]
TIMEOUT_S = 90

pytestmark = pytest.mark.timeout(TIMEOUT_S + 30)


class Examples:
    """The examples a test asked for, each started once, on demand: under xdist each example
    runs in the one worker that runs its test (starting them all in every worker that ran any
    of them ran each up to once per worker)."""

    def __init__(self) -> None:
        self.started: dict[str, subprocess.Popen[str]] = {}

    def run(self, name: str) -> subprocess.Popen[str]:
        if name not in self.started:
            self.started[name] = subprocess.Popen(
                [sys.executable, str(ROOT / "examples" / name)],
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                start_new_session=True,  # its own process group: the teardown stops its children too
            )
        return self.started[name]


@pytest.fixture(scope="module")
def examples() -> Iterator[Examples]:
    started = Examples()
    yield started
    # An example that starts processes of its own (worker_group.py) leaves them running when it is
    # killed, or when it fails before stopping them: the whole group goes.
    for process in started.started.values():
        with contextlib.suppress(ProcessLookupError):  # the example and all it started have exited
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_runs_and_exits_zero(examples: Examples, name: str) -> None:
    process = examples.run(name)
    deadline = time.monotonic() + TIMEOUT_S
    try:
        output, _ = process.communicate(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        process.kill()
        output, _ = process.communicate()
        pytest.fail(f"{name} did not finish within {TIMEOUT_S} s:\n{output}")
    assert process.returncode == 0, f"{name} exited {process.returncode}:\n{output}"


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_explains_itself(name: str) -> None:
    source = (ROOT / "examples" / name).read_text()
    assert source.startswith('"""'), f"{name} must start with a docstring saying what it shows"
    assert "--bootstrap-servers" in source and "ReferenceCluster" in source
