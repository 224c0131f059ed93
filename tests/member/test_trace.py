"""The member trace's short forms of events and effects (docs/operations.md)."""

from __future__ import annotations

import logging

import pytest

from kconsumer.client.member import events as ev
from kconsumer.client.member.trace import describe, trace_step
from kconsumer.protocol.messages.consumer_group import (
    Assignment,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from kconsumer.protocol.uuid import ZERO_UUID


def test_a_heartbeat_answer_shows_its_epoch_error_and_partition_count() -> None:
    response = ConsumerGroupHeartbeatResponse(
        error_code=0,
        member_epoch=10,
        heartbeat_interval_ms=1000,
        assignment=Assignment(topic_partitions=[TopicPartitions(topic_id=ZERO_UUID, partitions=[0, 1, 2])]),
    )
    line = describe(ev.HeartbeatResponseReceived(request_id=7, response=response))
    assert line == "HeartbeatResponseReceived(request_id=7, member_epoch=10, error_code=0, assignment=3)"


def test_each_step_is_one_debug_line(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="kconsumer.trace"):
        trace_step(1234, ev.Poll(), [])
    assert [r.getMessage() for r in caplog.records] == ["1234 event Poll() -> []"]
