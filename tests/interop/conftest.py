"""Peers nobody here wrote, in their own processes: the Apache Kafka Java client and franz-go.
The consumer tests' ledger and members (tests/consumer) serve here too."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "consumer"))

from backends import Cluster, in_ci, open_cluster
from consumer_harness import feeders, members

from peers.build import PeerUnavailable, go_peer, java_peer

__all__ = ["feeders", "members"]


def _built(build: object) -> list[str]:
    try:
        return build()  # type: ignore[operator, no-any-return]
    except PeerUnavailable as exc:
        if in_ci():
            pytest.fail(f"a peer is required under CI but cannot be built: {exc}", pytrace=False)
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def java() -> list[str]:
    """The command running the Java peer (kafka-clients from Maven Central, compiled once)."""
    return _built(java_peer)


@pytest.fixture(scope="session")
def franz_go() -> list[str]:
    """The command running the franz-go peer (built once with the Go toolchain)."""
    return _built(go_peer)


@pytest.fixture
def cluster(backend: str) -> Iterator[Cluster]:
    """A cluster of `backend` with fast group timers (session timeout 3 s: JVM peers start slower)."""
    with open_cluster(backend, session_timeout_ms=3000) as running:
        yield running
