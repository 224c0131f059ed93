"""Topic creation, growth, deletion and recreation (facts §5.15, §5.13.8, §5.14).

kconsumer's coordinator applies a metadata image synchronously (`update_metadata`): the group epoch
is bumped at once for every group whose subscribed topics changed, where Kafka requests a refresh
and bumps on the group's next heartbeat. The target is computed by the next heartbeat either way.
"""

from __future__ import annotations

from typing import Any

from kconsumer.broker.coordinator import GroupCoordinator, MetadataImage, TopicMetadata
from kconsumer.broker.coordinator.model import MemberAssignmentState
from kconsumer.broker.coordinator.records import (
    GroupEpochRecord,
    OffsetCommitRecord,
    OffsetTombstone,
    OffsetValue,
)
from kconsumer.protocol.messages.offsets import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopics,
)
from kconsumer.protocol.uuid import ZERO_UUID, Uuid


def recreate(d: Any, name: str, partitions: int | None = None) -> Uuid:
    """Delete and create `name` again in one metadata update: same name, new id."""
    old = d.topics[name]
    new_id = Uuid.from_int(0xE000 + d._next_id)
    d._next_id += 1
    d.topics[name] = TopicMetadata(new_id, name, partitions or old.num_partitions)
    d._publish()
    return new_id


def commit(d: Any, name: str, partition: int, offset: int, group: str = "admin", version: int = 9) -> int:
    topic = OffsetCommitRequestTopic(
        name=name,
        topic_id=d.topic_id(name) if name in d.topics else Uuid.from_int(1),
        partitions=[OffsetCommitRequestPartition(partition_index=partition, committed_offset=offset)],
    )
    request = OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=-1, topics=[topic])
    code: int = (
        d.coordinator.offset_commit(request, version, d.now).response.topics[0].partitions[0].error_code
    )
    return code


def fetch(d: Any, name: str, partition: int, group: str = "admin", version: int = 9) -> int:
    topic = OffsetFetchRequestTopics(
        name=name,
        topic_id=d.topic_id(name) if name in d.topics else Uuid.from_int(1),
        partition_indexes=[partition],
    )
    request = OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id=group, topics=[topic])])
    response = d.coordinator.offset_fetch(request, version, d.now).response
    result: int = response.groups[0].topics[0].partitions[0].committed_offset
    return result


def two_topics(d: Any) -> None:
    """A owns foo-0..1 and bar-0..1; B owns foo-2..3 and bar-2..3; both stable at epoch 3."""
    d.create_topic("foo", 4)
    d.create_topic("bar", 4)
    d.join("A", topics=["foo", "bar"], server_assignor="range")
    d.join("B", topics=["foo", "bar"], server_assignor="range")
    everything = {"foo": range(4), "bar": range(4)}
    d.heartbeat("A", 2, owned=everything)
    d.heartbeat("A", 2, owned=d.target("A"))
    d.heartbeat("B", 3, owned={})
    assert d.assigned("A") == {"bar": [0, 1], "foo": [0, 1]}
    assert d.assigned("B") == {"bar": [2, 3], "foo": [2, 3]}


# -- partitions added ------------------------------------------------------------------------------


def test_partitions_added_bump_subscribed_groups_only(driver: Any) -> None:
    d = driver
    d.create_topic("foo", 2)
    d.create_topic("bar", 2)
    d.join("A", topics=["foo"], group="g1")
    d.join("A", topics=["bar"], group="g2")
    d.set_partitions("foo", 4)
    g1, g2 = d.coordinator.group("g1"), d.coordinator.group("g2")
    assert (g1.group_epoch, g1.assignment_epoch) == (3, 2)
    assert (g2.group_epoch, g2.assignment_epoch) == (2, 2)
    response = d.heartbeat("A", 2, group="g1")
    assert (response.member_epoch, d.response_assignment(response)) == (3, {"foo": [0, 1, 2, 3]})


def test_partitions_added_are_spread(driver: Any) -> None:
    d = driver
    two_topics(d)
    d.set_partitions("foo", 6)
    g = d.coordinator.group("g")
    assert g.group_epoch == 4
    d.heartbeat("A", 3)
    assert d.target("A") == {"bar": [0, 1], "foo": [0, 1, 2]}
    assert d.target("B") == {"bar": [2, 3], "foo": [3, 4, 5]}


def test_a_subscribed_topic_created_later(driver: Any) -> None:
    d = driver
    d.create_topic("foo", 2)
    d.join("A", topics=["foo", "later"])
    assert d.assigned("A") == {"foo": [0, 1]}
    d.create_topic("later", 2)
    assert d.coordinator.group("g").group_epoch == 3
    response = d.heartbeat("A", 2)
    assert d.response_assignment(response) == {"foo": [0, 1], "later": [0, 1]}


def test_unrelated_topic_changes_do_not_bump(driver: Any) -> None:
    d = driver
    d.create_topic("foo", 2)
    d.join("A")
    g = d.coordinator.group("g")
    d.create_topic("other", 3)
    d.set_partitions("other", 5)
    d.delete_topic("other")
    assert g.group_epoch == 2


def test_groups_without_members_are_not_bumped(driver: Any) -> None:
    d = driver
    d.create_topic("foo", 2)
    d.join("A")
    d.heartbeat("A", -1)
    g = d.coordinator.group("g")
    epoch = g.group_epoch
    records = d.coordinator.update_metadata(
        MetadataImage.of([TopicMetadata(d.topic_id("foo"), "foo", 5)], 99), d.now
    )
    assert not any(isinstance(r, GroupEpochRecord) for r in records)
    assert g.group_epoch == epoch


# -- deletion ------------------------------------------------------------------------------------


def test_a_deleted_topic_is_revoked_and_leaves_the_target(driver: Any) -> None:
    d = driver
    two_topics(d)
    bar = d.topic_id("bar")
    d.delete_topic("bar")
    g = d.coordinator.group("g")
    assert g.group_epoch == 4
    # A still reports bar: it must revoke it first (and keeps its epoch meanwhile).
    a = d.coordinator.heartbeat(
        _request("A", 3, [(d.topic_id("foo"), [0, 1]), (bar, [0, 1])]), 1, d.now
    ).response
    assert bar not in g.target_of("A").partitions and bar not in g.target_of("B").partitions
    assert (a.error_code, a.member_epoch) == (0, 3)
    assert d.member("A").state == MemberAssignmentState.UNREVOKED_PARTITIONS
    assert set(d.member("A").current.pending_revocation) == {bar}
    assert d.response_assignment(a) == {"foo": [0, 1]}
    # Once it no longer reports them, it moves on.
    a = d.heartbeat("A", 3, owned={"foo": [0, 1]})
    assert a.member_epoch == 4 and d.member("A").current.pending_revocation == {}
    # B never reported anything: it moves on at once.
    b = d.heartbeat("B", 3, owned={"foo": [2, 3]})
    assert (b.member_epoch, d.response_assignment(b)) == (4, {"foo": [2, 3]})


def _request(member_id: str, epoch: int, owned: list[tuple[Uuid, list[int]]]) -> Any:
    from kconsumer.protocol.messages.consumer_group import ConsumerGroupHeartbeatRequest, TopicPartitions

    return ConsumerGroupHeartbeatRequest(
        group_id="g",
        member_id=member_id,
        member_epoch=epoch,
        topic_partitions=[TopicPartitions(topic_id=t, partitions=p) for t, p in owned],
    )


def test_the_only_subscribed_topic_deleted(driver: Any) -> None:
    d = driver
    d.create_topic("foo", 2)
    d.join("A")
    d.delete_topic("foo")
    response = d.heartbeat("A", 2, owned={})
    assert (response.member_epoch, d.response_assignment(response)) == (3, {})
    assert d.member("A").current.assigned == {}


# -- recreation ----------------------------------------------------------------------------------


def test_a_recreated_topic_moves_the_assignment_to_the_new_id(driver: Any) -> None:
    d = driver
    two_topics(d)
    old = d.topic_id("foo")
    new = recreate(d, "foo")
    g = d.coordinator.group("g")
    assert g.group_epoch == 4  # the topic hash changed with the id
    a = d.coordinator.heartbeat(
        _request("A", 3, [(old, [0, 1]), (d.topic_id("bar"), [0, 1])]), 1, d.now
    ).response
    # The old id's partitions are revoked first; the new id's come after the acknowledgement.
    assert old in d.member("A").current.pending_revocation
    assert new not in d.member("A").current.assigned
    assert a.member_epoch == 3
    a = d.heartbeat("A", 3, owned={"bar": [0, 1]})
    assert a.member_epoch == 4
    assert dict(d.member("A").current.assigned) == {d.topic_id("bar"): {0: 2, 1: 2}, new: {0: 4, 1: 4}}
    assert d.response_assignment(a) == {"bar": [0, 1], "foo": [0, 1]}  # "foo" is the new id now


def test_a_topic_deleted_then_created_again(driver: Any) -> None:
    d = driver
    d.create_topic("foo", 2)
    d.join("A")
    old = d.topic_id("foo")
    d.delete_topic("foo")
    d.create_topic("foo", 3)
    new = d.topic_id("foo")
    assert new != old
    response = d.heartbeat("A", 2, owned={})
    assert d.response_assignment(response) == {"foo": [0, 1, 2]}
    assert set(d.member("A").current.assigned) == {new}


# -- offsets of deleted and recreated topics ------------------------------------------------------


def test_offsets_of_a_deleted_topic_are_removed(driver: Any) -> None:
    d = driver
    d.create_topic("foo", 2)
    d.create_topic("bar", 2)
    assert commit(d, "foo", 0, 10) == 0 and commit(d, "foo", 1, 11) == 0
    assert commit(d, "bar", 0, 20) == 0
    assert commit(d, "foo", 0, 30, group="other") == 0
    d.topics.pop("foo")
    d._version += 1
    records = d.coordinator.update_metadata(MetadataImage.of(d.topics.values(), d._version), d.now)
    tombstones = sorted((r.group_id, r.topic, r.partition) for r in records if isinstance(r, OffsetTombstone))
    assert tombstones == [("admin", "foo", 0), ("admin", "foo", 1), ("other", "foo", 0)]
    assert d.coordinator.state.offsets["admin"] == {
        ("bar", 0): d.coordinator.state.offsets["admin"][("bar", 0)]
    }


def test_recreation_removes_the_old_offsets_and_does_not_serve_them(driver: Any) -> None:
    d = driver
    d.create_topic("foo", 2)
    commit(d, "foo", 0, 10)
    assert fetch(d, "foo", 0) == 10
    recreate(d, "foo")
    assert ("foo", 0) not in d.coordinator.state.offsets.get("admin", {})
    assert fetch(d, "foo", 0) == -1
    assert fetch(d, "foo", 0, version=10) == -1
    commit(d, "foo", 0, 3)  # under the new id
    assert fetch(d, "foo", 0) == 3


def test_deletion_removes_only_offsets_of_that_topic_id(driver: Any) -> None:
    """4.3 (onTopicsDeleted): offsets stored under another id survive; legacy ones (zero id) go."""
    d = driver
    d.create_topic("foo", 3)
    foo = d.topic_id("foo")
    state = d.coordinator.state
    other = Uuid.from_int(0xABC)
    state.replay(OffsetCommitRecord("g1", "foo", 0, OffsetValue(1, -1, "", 0, foo)))
    state.replay(OffsetCommitRecord("g1", "foo", 1, OffsetValue(2, -1, "", 0, ZERO_UUID)))
    state.replay(OffsetCommitRecord("g1", "foo", 2, OffsetValue(3, -1, "", 0, other)))
    d.delete_topic("foo")
    assert set(state.offsets["g1"]) == {("foo", 2)}


def test_offsets_of_an_old_id_are_not_served_after_a_failover(driver: Any) -> None:
    """4.1+: an offset stored under another id than the topic's current one is "no offset".
    A coordinator loaded with a newer image (the topic was recreated meanwhile) still holds them."""
    d = driver
    d.create_topic("foo", 2)
    commit(d, "foo", 0, 10)
    commit(d, "foo", 1, 11)
    image = MetadataImage.of([TopicMetadata(Uuid.from_int(0xDDD), "foo", 2)], 50)
    replayed = GroupCoordinator.replaying(d.coordinator.log, d.now, d.config, image)
    assert ("foo", 0) in replayed.state.offsets["admin"]  # still stored
    d.coordinator = replayed
    d.topics["foo"] = image.topics_by_name["foo"]
    assert fetch(d, "foo", 0) == -1 and fetch(d, "foo", 1) == -1
    assert fetch(d, "foo", 0, version=10) == -1
    # All topics (Topics null) does not serve them either.
    request = OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id="admin", topics=None)])
    response = replayed.offset_fetch(request, 9, d.now).response
    offsets = {p.partition_index: p.committed_offset for t in response.groups[0].topics for p in t.partitions}
    assert offsets == {0: -1, 1: -1}


def test_a_deleted_topic_cannot_be_committed(driver: Any) -> None:
    d = driver
    d.create_topic("foo", 1)
    old = d.topic_id("foo")
    d.delete_topic("foo")
    assert commit(d, "foo", 0, 1) == 3  # UNKNOWN_TOPIC_OR_PARTITION
    topic = OffsetCommitRequestTopic(
        topic_id=old, partitions=[OffsetCommitRequestPartition(partition_index=0, committed_offset=1)]
    )
    request = OffsetCommitRequest(group_id="admin", generation_id_or_member_epoch=-1, topics=[topic])
    assert d.coordinator.offset_commit(request, 10, d.now).response.topics[0].partitions[0].error_code == 100
