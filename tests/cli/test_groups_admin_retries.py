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


def test_a_loading_coordinator_is_asked_again_without_a_new_lookup(
    cluster: ReferenceCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster.inject_error(ApiKey.OFFSET_FETCH, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, count=2)
    committed, lookups = _committed_with_lookups(cluster, monkeypatch)
    assert committed == {}
    assert lookups == 1


def test_a_coordinator_that_moved_is_looked_up_again(
    cluster: ReferenceCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster.inject_error(ApiKey.OFFSET_FETCH, ErrorCode.NOT_COORDINATOR, count=2)
    committed, lookups = _committed_with_lookups(cluster, monkeypatch)
    assert committed == {}
    assert lookups == 3
