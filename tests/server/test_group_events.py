"""Group events are logged at INFO under ``kconsumer.broker.server``: joins, epochs, targets, member epochs,
leaves, removals by timeout and fencing."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from kconsumer.errors import ErrorCode
from kconsumer.protocol.messages.consumer_group import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from kconsumer.testing import ReferenceCluster
from kconsumer.testing.wire import WireClient

from .conftest import wait_for

Connect = Callable[..., WireClient]


def _heartbeat(
    client: WireClient, member: str, epoch: int, **fields: object
) -> ConsumerGroupHeartbeatResponse:
    request = ConsumerGroupHeartbeatRequest(group_id="g", member_id=member, member_epoch=epoch, **fields)
    return client.call(request, ConsumerGroupHeartbeatResponse, 1)


def _join(client: WireClient, member: str) -> ConsumerGroupHeartbeatResponse:
    return _heartbeat(
        client,
        member,
        0,
        rebalance_timeout_ms=1000,
        subscribed_topic_names=["t"],
        subscribed_topic_regex="",
        topic_partitions=[],
    )


def test_join_leave_and_fencing_are_logged(
    cluster: ReferenceCluster, connect: Connect, caplog: pytest.LogCaptureFixture
) -> None:
    cluster.create_topic("t", 2)
    client = connect(client_id="app-1")
    with caplog.at_level(logging.INFO, logger="kconsumer.broker.server"):
        joined = _join(client, "member-a")
        assert joined.error_code == 0
        fenced = _heartbeat(client, "member-a", joined.member_epoch + 5)
        assert fenced.error_code == ErrorCode.FENCED_MEMBER_EPOCH
        _join(client, "member-a")
        left = _heartbeat(client, "member-a", -1)
        assert left.error_code == 0
    text = caplog.text
    assert "group g: created at epoch 1" in text
    assert "member member-a joined (client app-1 at /127.0.0.1), subscribed to ['t']" in text
    assert "group g: target assignment for epoch 2: {'member-a': {'t': [0, 1]}}" in text
    assert "member member-a at epoch 2 (stable): assigned {'t': [0, 1]}" in text
    assert "member member-a (epoch 7) fenced: FENCED_MEMBER_EPOCH" in text
    assert "member member-a left the group" in text
    assert "group g: group epoch is now" in text


def test_removal_by_session_timeout_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    with ReferenceCluster(
        heartbeat_interval_ms=50, session_timeout_ms=300, assignment_interval_ms=0
    ) as cluster:
        cluster.create_topic("t", 1)
        host, port = cluster.bootstrap_servers.rsplit(":", 1)
        with (
            caplog.at_level(logging.INFO, logger="kconsumer.broker.server"),
            WireClient.connect(host, int(port)) as client,
        ):
            assert _join(client, "sleepy").error_code == 0
            # No more heartbeats: the loop's timer removes the member after the session timeout.
            wait_for(lambda: not cluster.describe_group("g").members, what="the member to time out")  # type: ignore[union-attr]
            wait_for(lambda: "member sleepy removed" in caplog.text, what="the removal log line")
    assert "member sleepy removed: its session or rebalance timeout expired" in caplog.text
