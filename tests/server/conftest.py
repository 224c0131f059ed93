"""Fixtures for the reference cluster's tests: a running cluster and wire clients to it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from waiting import wait_until

from kconsumer.testing import ReferenceCluster
from kconsumer.testing.wire import WireClient


@pytest.fixture
def cluster() -> Iterator[ReferenceCluster]:
    """A reference cluster with Kafka's group timers shortened for tests."""
    with ReferenceCluster(
        heartbeat_interval_ms=100, session_timeout_ms=3000, assignment_interval_ms=0
    ) as running:
        yield running


@pytest.fixture
def connect(cluster: ReferenceCluster) -> Iterator[Callable[..., WireClient]]:
    """Opens `WireClient`s to `cluster` (closed at the end of the test)."""
    clients: list[WireClient] = []

    def open_client(**options: Any) -> WireClient:
        host, port = cluster.bootstrap_servers.rsplit(":", 1)
        client = WireClient.connect(host, int(port), **options)
        clients.append(client)
        return client

    yield open_client
    for client in clients:
        client.close()


def wait_for(
    condition: Callable[[], Any],
    timeout: float = 10.0,
    interval: float = 0.02,
    what: str = "",
    describe: Callable[[], str] | None = None,
) -> Any:
    """`wait_until` with the server tests' shorter default timeout."""
    return wait_until(condition, timeout, interval, what, describe=describe)
