"""DeleteGroups on the coordinator: which groups may go (empty ones, with their offsets), and the
answers for the others; the deletion survives a failover (it is written as records)."""

from __future__ import annotations

from typing import Any

from kconsumer.broker.coordinator import GroupCoordinator
from kconsumer.errors import ErrorCode
from kconsumer.protocol.messages.list_groups import DeleteGroupsRequest
from kconsumer.protocol.messages.offsets import OffsetFetchRequest

from .conftest import Driver
from .test_offset_delete import ClassicDriver
from .test_offsets import commit


def delete(d: Any, *groups: str) -> dict[str, int]:
    response = d.coordinator.handle(DeleteGroupsRequest(groups_names=list(groups)), 2, d.now).response
    return {r.group_id: r.error_code for r in response.results}


def committed(d: Any, group: str) -> dict[tuple[str, int], int]:
    response = d.coordinator.offset_fetch(OffsetFetchRequest(group_id=group, topics=None), 7, d.now).response
    return {(t.name, p.partition_index): p.committed_offset for t in response.topics for p in t.partitions}


def test_unknown_groups_are_not_found_and_offsets_only_groups_go_with_their_offsets() -> None:
    d = Driver()
    d.create_topic("foo", 2)
    commit(d, {"foo": [0, 1]}, group="admin")
    assert delete(d, "nobody", "admin") == {"nobody": ErrorCode.GROUP_ID_NOT_FOUND, "admin": ErrorCode.NONE}
    assert committed(d, "admin") == {}
    assert delete(d, "admin") == {"admin": ErrorCode.GROUP_ID_NOT_FOUND}


def test_a_consumer_group_must_be_empty_and_then_goes_for_good() -> None:
    d = Driver()
    d.create_topic("foo", 2)
    joined = d.join("m1", ["foo"])
    commit(d, {"foo": [0]}, member=joined.member_id, epoch=joined.member_epoch)
    assert delete(d, "g") == {"g": ErrorCode.NON_EMPTY_GROUP}
    d.heartbeat("m1", -1)
    assert delete(d, "g") == {"g": ErrorCode.NONE}
    assert d.coordinator.group("g") is None and committed(d, "g") == {}
    replayed = GroupCoordinator.replaying(d.coordinator.log, d.now, d.config, d.coordinator.image)
    assert replayed.group("g") is None and "g" not in replayed.state.offsets
    rejoined = d.join("m2", ["foo"])
    assert rejoined.error_code == 0 and rejoined.member_epoch == joined.member_epoch  # a new group


def test_a_classic_group_must_be_empty() -> None:
    d = ClassicDriver()
    d.create_topic("foo", 1)
    first = d.join_group("", (("range", b""),))
    d.join_group(first.member_id, (("range", b""),))
    assert delete(d, "g") == {"g": ErrorCode.NON_EMPTY_GROUP}
