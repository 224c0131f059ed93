"""Fixtures of the consumer tests: a cluster with short group timers on each backend (the
reference cluster, Apache Kafka), and a factory of polling members that are all stopped at the
end of the test, whatever happened."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from backends import Cluster, open_cluster
from consumer_harness import feeders, members

__all__ = ["cluster", "feeders", "members"]


@pytest.fixture
def cluster(backend: str, request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """A cluster of `backend`: heartbeat 100 ms, session timeout 1.5 s (or the test's indirect
    parameter), assignment at once."""
    with open_cluster(backend, session_timeout_ms=getattr(request, "param", 1500)) as running:
        yield running
