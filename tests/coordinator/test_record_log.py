"""The record log stays as large as the state, not as the history, and still replays exactly."""

from __future__ import annotations

from typing import Any

from kconsumer.broker.coordinator import GroupCoordinator, MetadataImage
from kconsumer.protocol.messages.consumer_group import ConsumerGroupHeartbeatRequest
from kconsumer.protocol.messages.offsets import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)


def test_repeated_commits_and_heartbeats_do_not_grow_the_log(driver: Any) -> None:
    d = driver
    d.create_topic("foo", 2)
    d.join("A")
    d.heartbeat("A", 2, owned={"foo": [0, 1]})
    retained = len(d.coordinator.log)
    for offset in range(500):
        partitions = [OffsetCommitRequestPartition(partition_index=0, committed_offset=offset)]
        request = OffsetCommitRequest(
            group_id="g",
            generation_id_or_member_epoch=2,
            member_id="A",
            topics=[OffsetCommitRequestTopic(name="foo", partitions=partitions)],
        )
        assert d.coordinator.offset_commit(request, 9, d.now).response.topics[0].partitions[0].error_code == 0
    assert d.coordinator.log.appended > 500
    assert len(d.coordinator.log) == retained + 1  # one offset record survives
    image = MetadataImage.of(d.topics.values(), 99)
    twin = GroupCoordinator.replaying(d.coordinator.log, d.now, d.config, image)
    assert twin.state.snapshot() == d.coordinator.state.snapshot()
    assert twin.state.offsets["g"][("foo", 0)].offset == 499


def test_a_removed_member_leaves_nothing_behind(driver: Any) -> None:
    d = driver
    d.create_topic("foo", 2)
    d.join("A")
    d.join("B")
    before = {type(r).__name__ for r in d.coordinator.log if getattr(r, "member_id", None) == "B"}
    assert before  # B's metadata, target and current assignment
    leave = ConsumerGroupHeartbeatRequest(group_id="g", member_id="B", member_epoch=-1)
    assert d.coordinator.heartbeat(leave, 1, d.now).response.error_code == 0
    after = [r for r in d.coordinator.log if getattr(r, "member_id", None) == "B"]
    after += [r for r in d.coordinator.log if getattr(getattr(r, "metadata", None), "member_id", None) == "B"]
    assert after == []
