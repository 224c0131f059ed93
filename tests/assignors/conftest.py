"""Fixtures for the client-side assignor tests: a fast reference cluster and a group on it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from assignor_harness import Group, fast_cluster

from kconsumer.testing import ReferenceCluster


@pytest.fixture
def cluster() -> Iterator[ReferenceCluster]:
    """A running reference cluster with short group timers and topic ``t`` of 6 partitions."""
    with fast_cluster() as running:
        running.create_topic("t", 6)
        yield running


@pytest.fixture
def group(cluster: ReferenceCluster) -> Iterator[Group]:
    """Group ``g`` on `cluster`, subscribed to ``t``; every consumer is closed at the end."""
    g = Group(cluster)
    try:
        yield g
    finally:
        g.close_all()
