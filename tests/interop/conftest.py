"""Peers nobody here wrote, in their own processes: the Apache Kafka Java client and franz-go.
The consumer tests' ledger and members (tests/consumer) serve here too."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "consumer"))

from backends import Cluster, open_cluster
from consumer_harness import feeders, members

__all__ = ["feeders", "members"]


@pytest.fixture
def cluster(backend: str) -> Iterator[Cluster]:
    """A cluster of `backend` with fast group timers (session timeout 3 s: JVM peers start slower)."""
    with open_cluster(backend, session_timeout_ms=3000) as running:
        yield running
