"""Fixtures of the consumer tests: a reference cluster with short group timers, and a factory of
polling members that are all stopped at the end of the test, whatever happened."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from consumer_harness import fast_cluster, feeders, members

__all__ = ["cluster", "feeders", "members"]

from kconsumer.testing import ReferenceCluster


@pytest.fixture
def cluster(request: pytest.FixtureRequest) -> Iterator[ReferenceCluster]:
    """A reference cluster: heartbeat 100 ms, session timeout 1.5 s (or the test's indirect
    parameter), assignment at once."""
    with fast_cluster(session_timeout_ms=getattr(request, "param", 1500)) as running:
        yield running
