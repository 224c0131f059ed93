"""ConsumerGroupDescribe and ListGroups (facts §3.5, §3.6, §5.12)."""

from __future__ import annotations

from typing import Any

import pytest

from kconsumer.errors import ErrorCode
from kconsumer.protocol.messages.consumer_group import ConsumerGroupDescribeRequest
from kconsumer.protocol.messages.list_groups import ListGroupsRequest
from kconsumer.protocol.messages.offsets import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)


def describe(d: Any, *group_ids: str, version: int = 1) -> list[Any]:
    result = d.coordinator.describe(ConsumerGroupDescribeRequest(group_ids=list(group_ids)), version, d.now)
    assert result.records == []  # describing never writes
    groups: list[Any] = result.response.groups
    return groups


def state(d: Any, group: str = "g") -> str:
    [described] = describe(d, group)
    assert described.error_code == 0
    value: str = described.group_state
    return value


def listed(
    d: Any, states: list[str] | None = None, types: list[str] | None = None
) -> list[tuple[str, str, str, str]]:
    request = ListGroupsRequest(states_filter=states or [], types_filter=types or [])
    result = d.coordinator.list_groups(request, 5, d.now)
    assert result.records == [] and result.response.error_code == 0
    return [(g.group_id, g.protocol_type, g.group_state, g.group_type) for g in result.response.groups]


def admin_commit(d: Any, group: str) -> None:
    topic = OffsetCommitRequestTopic(
        name="foo", partitions=[OffsetCommitRequestPartition(partition_index=0, committed_offset=1)]
    )
    request = OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=-1, topics=[topic])
    assert d.coordinator.offset_commit(request, 9, d.now).response.topics[0].partitions[0].error_code == 0


@pytest.fixture
def d(driver: Any) -> Any:
    driver.create_topic("foo", 4)
    return driver


# -- ConsumerGroupDescribe: states ---------------------------------------------------------------


def test_states_through_a_rebalance(d: Any) -> None:
    d.join("A")
    assert state(d) == "Stable"
    d.join("B")  # B waits for partitions A still owns
    assert state(d) == "Reconciling"
    d.heartbeat("A", 2, owned={"foo": range(4)})  # A revoking
    assert state(d) == "Reconciling"
    d.heartbeat("A", 2, owned=d.target("A"))
    assert state(d) == "Reconciling"  # B has not got its partitions yet
    d.heartbeat("B", 3, owned={})
    assert state(d) == "Stable"
    d.heartbeat("A", -1)
    assert state(d) == "Assigning"  # the target for the new epoch comes with the next heartbeat
    d.heartbeat("B", 3)
    assert state(d) == "Stable"
    d.heartbeat("B", -1)
    assert state(d) == "Empty"


def test_assigning_while_the_target_is_delayed(make_driver: Any) -> None:
    d = make_driver(assignment_interval_ms=1_000)
    d.create_topic("foo", 2)
    d.join("A")
    d.advance(10)
    d.join("B")
    [group] = describe(d, "g")
    assert (group.group_state, group.group_epoch, group.assignment_epoch) == ("Assigning", 3, 2)
    d.advance(1_000)
    d.heartbeat("A", 2)
    assert state(d) == "Reconciling"


def test_assigning_after_a_metadata_change(d: Any) -> None:
    d.join("A")
    d.set_partitions("foo", 6)
    assert state(d) == "Assigning"


def test_a_static_member_away_makes_the_group_reconciling(d: Any) -> None:
    # Its epoch (-2) is not the assignment epoch: the group is not Stable (Kafka's isReconciledTo).
    d.join("A", instance_id="i")
    d.heartbeat("A", -2, instance_id="i")
    assert state(d) == "Reconciling"
    d.join("A", instance_id="i")
    assert state(d) == "Stable"


def test_a_group_whose_members_all_left_is_empty_not_dead(d: Any) -> None:
    d.join("A")
    d.advance(d.config.session_timeout_ms)
    [group] = describe(d, "g")
    assert (group.error_code, group.group_state, group.members) == (0, "Empty", [])
    assert group.group_epoch == 3


# -- ConsumerGroupDescribe: content --------------------------------------------------------------


def test_describe_a_group(d: Any) -> None:
    d.create_topic("bar", 2)
    d.join("A", topics=["foo", "bar"], instance_id="iA", rack_id="r1", server_assignor="range")
    d.join("B", topics=["bar", "foo"])
    d.heartbeat("A", 2, owned={"foo": range(4), "bar": range(2)})  # A revokes B's share
    [group] = describe(d, "g")
    assert (group.error_code, group.error_message) == (0, None)
    assert (group.group_id, group.group_state, group.group_epoch, group.assignment_epoch) == (
        "g",
        "Reconciling",
        3,
        3,
    )
    assert group.assignor_name == "range"
    assert group.authorized_operations == -(2**31)
    a, b = group.members
    assert (a.member_id, b.member_id) == ("A", "B")
    assert (a.instance_id, a.rack_id, a.member_epoch) == ("iA", "r1", 2)
    assert (b.instance_id, b.rack_id, b.member_epoch) == (None, None, 3)
    assert (a.client_id, a.client_host) == ("client", "/127.0.0.1")
    assert sorted(a.subscribed_topic_names) == ["bar", "foo"]
    assert a.subscribed_topic_regex == ""  # as Kafka: empty, not null
    assert (a.member_type, b.member_type) == (1, 1)

    def parts(assignment: Any) -> dict[str, list[int]]:
        return {tp.topic_name: tp.partitions for tp in assignment.topic_partitions}

    # 4.3 (KAFKA-20431): the assignment includes the partitions pending revocation.
    assert parts(a.assignment) == {"bar": [0, 1], "foo": [0, 1, 2, 3]}
    assert d.pending("A") == {"bar": [1], "foo": [2, 3]}
    assert parts(a.target_assignment) == {"bar": [0], "foo": [0, 1]}
    assert parts(b.assignment) == {}
    assert parts(b.target_assignment) == {"bar": [1], "foo": [2, 3]}
    ids = {tp.topic_name: tp.topic_id for tp in a.assignment.topic_partitions}
    assert ids == {"bar": d.topic_id("bar"), "foo": d.topic_id("foo")}


def test_describe_leaves_deleted_topics_out(d: Any) -> None:
    d.create_topic("bar", 2)
    d.join("A", topics=["foo", "bar"])
    bar = d.topic_id("bar")
    d.delete_topic("bar")
    from kconsumer.protocol.messages.consumer_group import ConsumerGroupHeartbeatRequest, TopicPartitions

    owned = [
        TopicPartitions(topic_id=d.topic_id("foo"), partitions=[0, 1, 2, 3]),
        TopicPartitions(topic_id=bar, partitions=[0, 1]),
    ]
    request = ConsumerGroupHeartbeatRequest(
        group_id="g", member_id="A", member_epoch=2, topic_partitions=owned
    )
    assert d.coordinator.heartbeat(request, 1, d.now).response.error_code == 0
    assert bar in d.member("A").current.pending_revocation  # A still holds bar's partitions
    [member] = describe(d, "g")[0].members
    assert [tp.topic_name for tp in member.assignment.topic_partitions] == ["foo"]
    assert [tp.topic_name for tp in member.target_assignment.topic_partitions] == ["foo"]


def test_describe_default_assignor_name(d: Any) -> None:
    d.join("A")
    assert describe(d, "g")[0].assignor_name == "uniform"


def test_describe_several_groups_in_request_order(d: Any) -> None:
    d.join("A", group="g2")
    d.join("A", group="g1")
    admin_commit(d, "simple")
    groups = describe(d, "g2", "missing", "", "g1", "simple")
    summary = [(g.group_id, g.error_code, g.error_message) for g in groups]
    assert summary == [
        ("g2", 0, None),
        ("missing", ErrorCode.GROUP_ID_NOT_FOUND, "Group missing not found."),
        ("", ErrorCode.INVALID_GROUP_ID, "Group id can't be empty."),
        ("g1", 0, None),
        ("simple", ErrorCode.GROUP_ID_NOT_FOUND, "Group simple not found."),  # not a consumer group
    ]
    assert [m.member_id for m in groups[0].members] == ["A"]


def test_describe_v0_has_no_member_type_on_the_wire(d: Any) -> None:
    d.join("A")
    [group] = describe(d, "g", version=0)
    assert group.members[0].member_type == 1  # set, but the v0 codec leaves it out
    response = d.coordinator.describe(ConsumerGroupDescribeRequest(group_ids=["g"]), 0, d.now).response
    assert type(response).decode(response.encode(0), 0).groups[0].members[0].member_type == -1


# -- ListGroups ----------------------------------------------------------------------------------


def groups_in_every_state(d: Any) -> None:
    d.join("A", group="stable")
    d.join("A", group="reconciling")
    d.join("B", group="reconciling")
    d.join("A", group="empty")
    d.heartbeat("A", -1, group="empty")
    admin_commit(d, "simple")
    assert state(d, "reconciling") == "Reconciling"


def test_list_all_groups(d: Any) -> None:
    groups_in_every_state(d)
    assert listed(d) == [
        ("empty", "consumer", "Empty", "consumer"),
        ("reconciling", "consumer", "Reconciling", "consumer"),
        ("stable", "consumer", "Stable", "consumer"),
        ("simple", "", "Empty", "classic"),
    ]


@pytest.mark.parametrize(
    ("states", "expected"),
    [
        (["Stable"], ["stable"]),
        (["stable"], ["stable"]),
        (["EMPTY"], ["empty", "simple"]),
        (["reconciling", "STABLE"], ["reconciling", "stable"]),
        (["Assigning"], []),
        (["Dead"], []),
        (["nonsense"], []),
    ],
)
def test_list_groups_state_filter(d: Any, states: list[str], expected: list[str]) -> None:
    groups_in_every_state(d)
    assert [g[0] for g in listed(d, states=states)] == expected


@pytest.mark.parametrize(
    ("types", "expected"),
    [
        (["consumer"], ["empty", "reconciling", "stable"]),
        (["CONSUMER"], ["empty", "reconciling", "stable"]),
        (["Classic"], ["simple"]),
        (["classic", "consumer"], ["empty", "reconciling", "stable", "simple"]),
        (["share"], []),
        (["streams"], []),
    ],
)
def test_list_groups_type_filter(d: Any, types: list[str], expected: list[str]) -> None:
    groups_in_every_state(d)
    assert [g[0] for g in listed(d, types=types)] == expected


def test_list_groups_both_filters(d: Any) -> None:
    groups_in_every_state(d)
    assert [g[0] for g in listed(d, states=["empty"], types=["consumer"])] == ["empty"]
    assert [g[0] for g in listed(d, states=["empty"], types=["classic"])] == ["simple"]
    assert listed(d, states=["stable"], types=["classic"]) == []


def test_list_groups_when_there_are_none(d: Any) -> None:
    assert listed(d) == []


def test_a_simple_group_converted_to_a_consumer_group_is_listed_once(d: Any) -> None:
    admin_commit(d, "g")
    d.join("A")
    assert listed(d) == [("g", "consumer", "Stable", "consumer")]
