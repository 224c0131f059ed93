"""`GroupAdmin` (behind ``kconsumer groups``) retries coordinator answers as the member does
(`COORDINATOR_RETRIES`): the same coordinator again while it loads, the coordinator found anew
after it says it moved."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from kconsumer.errors import ErrorCode
from kconsumer.groups.admin import GroupAdmin
from kconsumer.protocol.api import ApiKey
from kconsumer.testing import ReferenceCluster


@pytest.fixture
def cluster() -> Iterator[ReferenceCluster]:
    with ReferenceCluster() as running:
        running.create_topic("t", 2)
        yield running


def _committed_with_lookups(cluster: ReferenceCluster, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, int]:
    """The group's committed offsets through GroupAdmin, and how many FindCoordinator it sent."""
    lookups = 0
    original = GroupAdmin._to_any

    async def counting(self: GroupAdmin, api_key: int, *args: Any, **kwargs: Any) -> Any:
        nonlocal lookups
        lookups += api_key == ApiKey.FIND_COORDINATOR
        return await original(self, api_key, *args, **kwargs)

    monkeypatch.setattr(GroupAdmin, "_to_any", counting)

    async def run() -> Any:
        async with GroupAdmin(cluster.bootstrap_servers, timeout_s=10.0) as admin:
            return await admin.committed("g")

    return asyncio.run(run()), lookups


@pytest.mark.parametrize(
    ("answer", "lookups"),
    [
        # A loading coordinator is asked again, without a new lookup.
        (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, 1),
        # A coordinator that says it moved is looked up again each time.
        (ErrorCode.NOT_COORDINATOR, 3),
    ],
)
def test_coordinator_answers_are_retried_as_the_member_retries_them(
    cluster: ReferenceCluster, monkeypatch: pytest.MonkeyPatch, answer: ErrorCode, lookups: int
) -> None:
    cluster.inject_error(ApiKey.OFFSET_FETCH, answer, count=2)
    assert _committed_with_lookups(cluster, monkeypatch) == ({}, lookups)
