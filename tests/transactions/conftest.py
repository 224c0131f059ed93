"""Transactions and exactly-once pipelines, on both backends: workers of `examples/exactly_once.py`
run as processes (so a test can crash or stall them), and the output is read back by a
read_committed reader."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "consumer"))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))

from backends import Cluster, open_cluster


@pytest.fixture
def cluster(backend: str) -> Iterator[Cluster]:
    """A cluster of `backend` with fast group timers."""
    with open_cluster(backend, session_timeout_ms=3000) as running:
        yield running
