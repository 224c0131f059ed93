"""The differential suite's fixtures: one reference cluster for a whole module, and the two
implementations every scenario runs with (confluent-kafka's KIP-848 consumer and kconsumer's)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# The consumer tests' ledger and helpers (tests/consumer/consumer_harness.py) serve here too.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "consumer"))

from consumer_harness import fast_cluster
from parity_harness import PROTOCOLS

from kconsumer.testing import ReferenceCluster


@pytest.fixture(scope="module", params=PROTOCOLS)
def cluster(request: pytest.FixtureRequest) -> Iterator[ReferenceCluster]:
    """A reference cluster with fast group timers, shared by a module's scenarios (each scenario
    uses topics and groups of its own), once per group protocol: both implementations run each
    scenario with ``group.protocol=consumer``, then with ``classic`` (`parity_protocol`)."""
    with fast_cluster(initial_rebalance_delay_ms=300) as running:
        running.parity_protocol = request.param  # type: ignore[attr-defined]
        yield running
