"""The differential suite's fixtures: one cluster per backend for a whole module, and the two
implementations every scenario runs with (confluent-kafka's KIP-848 consumer and kconsumer's)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# The consumer tests' ledger and helpers (tests/consumer/consumer_harness.py) serve here too.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "consumer"))

from backends import Cluster, open_cluster
from parity_harness import PROTOCOLS


@pytest.fixture(scope="module", params=PROTOCOLS)
def cluster(request: pytest.FixtureRequest, backend: str) -> Iterator[Cluster]:
    """A cluster of `backend` with fast group timers, shared by a module's scenarios (each
    scenario uses topics and groups of its own), once per group protocol: both implementations
    run each scenario with ``group.protocol=consumer``, then with ``classic`` (`parity_protocol`)."""
    with open_cluster(backend, initial_rebalance_delay_ms=300) as running:
        running.parity_protocol = request.param  # type: ignore[attr-defined]
        yield running
