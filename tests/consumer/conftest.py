"""Fixtures of the consumer tests: a reference cluster with short group timers, and a factory of
polling members that are all stopped at the end of the test, whatever happened."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from consumer_harness import Feeder, Member, fast_cluster

from kconsumer.testing import ReferenceCluster


@pytest.fixture
def cluster(request: pytest.FixtureRequest) -> Iterator[ReferenceCluster]:
    """A reference cluster: heartbeat 100 ms, session timeout 1.5 s (or the test's indirect
    parameter), assignment at once."""
    with fast_cluster(session_timeout_ms=getattr(request, "param", 1500)) as running:
        yield running


@pytest.fixture
def members() -> Iterator[Callable[..., Member]]:
    """`members(ledger, name, settings, topics, ...)` starts a `Member`; all are closed at teardown."""
    started: list[Member] = []

    def start(*args: Any, **kwargs: Any) -> Member:
        member = Member(*args, **kwargs)
        started.append(member)
        return member

    yield start
    for member in started:
        member.close()


@pytest.fixture
def feeders() -> Iterator[Callable[..., Feeder]]:
    """`feeders(cluster, topic, ...)` starts a `Feeder`; all are stopped at teardown."""
    started: list[Feeder] = []

    def start(*args: Any, **kwargs: Any) -> Feeder:
        feeder = Feeder(*args, **kwargs)
        started.append(feeder)
        return feeder

    yield start
    for feeder in started:
        feeder.stop()
