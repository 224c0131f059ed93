"""The multi-broker tests reuse the consumer tests' ledger and members (tests/consumer)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "consumer"))


from collections.abc import Callable, Iterator
from typing import Any

import pytest
from consumer_harness import Feeder, Member


@pytest.fixture
def members() -> Iterator[Callable[..., Member]]:
    """`members(ledger, name, settings, topics)` starts a `Member`; all are closed at teardown."""
    started: list[Member] = []

    def start(*args: Any, **kwargs: Any) -> Member:
        started.append(Member(*args, **kwargs))
        return started[-1]

    yield start
    for member in started:
        member.close()


@pytest.fixture
def feeders() -> Iterator[Callable[..., Feeder]]:
    """`feeders(cluster, topic)` starts a `Feeder`; all are stopped at teardown."""
    started: list[Feeder] = []

    def start(*args: Any, **kwargs: Any) -> Feeder:
        started.append(Feeder(*args, **kwargs))
        return started[-1]

    yield start
    for feeder in started:
        feeder.stop()
