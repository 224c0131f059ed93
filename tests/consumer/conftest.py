"""Fixtures of the consumer tests: a cluster with short group timers on each backend (the
reference cluster, Apache Kafka), and a factory of polling members that are all stopped at the
end of the test, whatever happened."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from backends import Cluster, in_ci, open_cluster
from consumer_harness import feeders, members

from kconsumer.aio import handout

__all__ = ["cluster", "feeders", "members", "record_run_form"]


@pytest.fixture
def cluster(backend: str, request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """A cluster of `backend`: heartbeat 100 ms, session timeout 1.5 s (or the test's indirect
    parameter), assignment at once."""
    with open_cluster(backend, session_timeout_ms=getattr(request, "param", 1500)) as running:
        yield running


@pytest.fixture(params=["C", "Python"])
def record_run_form(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each form of `async for`'s record runs in turn (`kconsumer.aio.handout`): the C one is
    skipped where the install could not build it, except under CI, where it must be there."""
    if request.param == "Python":
        monkeypatch.setattr(handout, "_C_RECORD_RUN", None)
    elif handout.IMPLEMENTATION != "C":
        if in_ci():
            pytest.fail("the C form of the record runs was not built", pytrace=False)
        pytest.skip("the C form of the record runs was not built (no C compiler at install?)")
    return str(request.param)
