"""Member epochs, group-epoch bumps, reconciliation and the heartbeat response (facts §5.5, §5.6, §5.8)."""

from __future__ import annotations

from typing import Any

import pytest

from kconsumer.broker.coordinator.model import CurrentAssignment, GroupState, MemberAssignmentState
from kconsumer.broker.coordinator.records import (
    CurrentAssignmentRecord,
    GroupEpochRecord,
    MemberMetadataRecord,
)
from kconsumer.errors import ErrorCode
from kconsumer.protocol.messages.consumer_group import ConsumerGroupHeartbeatRequest


def stable_pair(d: Any) -> None:
    """foo has 6 partitions; A owns 0-2 and B 3-5, both stable at epoch 3."""
    d.create_topic("foo", 6)
    d.join("A")
    d.join("B")
    d.heartbeat("A", 2, owned={"foo": range(6)})
    d.heartbeat("A", 2, owned={"foo": [0, 1, 2]})
    d.heartbeat("B", 3, owned={})
    assert d.assigned("A") == {"foo": [0, 1, 2]} and d.assigned("B") == {"foo": [3, 4, 5]}
    assert (d.member("A").member_epoch, d.member("B").member_epoch) == (3, 3)
    assert d.coordinator.group("g").state() == GroupState.STABLE


def raw(d: Any, member_id: str, epoch: int, **fields: Any) -> Any:
    """A heartbeat returning the whole Result (records and response)."""
    request = ConsumerGroupHeartbeatRequest(group_id="g", member_id=member_id, member_epoch=epoch, **fields)
    return d.coordinator.heartbeat(request, 1, d.now, "client", "/127.0.0.1")


def group_epoch_records(result: Any) -> list[GroupEpochRecord]:
    return [r for r in result.records if isinstance(r, GroupEpochRecord)]


# -- §5.5 the epoch check -----------------------------------------------------------------------


def test_same_epoch_is_accepted(driver: Any) -> None:
    d = driver
    stable_pair(d)
    response = d.heartbeat("A", 3, owned={"foo": [0, 1, 2]})
    assert (response.error_code, response.member_epoch) == (0, 3)


@pytest.mark.parametrize("received", [4, 5, 1000])
def test_greater_epoch_is_fenced(driver: Any, received: int) -> None:
    d = driver
    stable_pair(d)
    result = raw(d, "A", received)
    assert result.response.error_code == ErrorCode.FENCED_MEMBER_EPOCH
    assert result.response.error_message == (
        f"The consumer group member has a greater member epoch ({received}) than the one known by the group "
        "coordinator (3). The member must abandon all its partitions and rejoin."
    )
    assert result.records == []
    assert d.assigned("A") == {"foo": [0, 1, 2]}  # nothing changes until the member rejoins


def test_epoch_zero_is_always_accepted_for_an_existing_member(driver: Any) -> None:
    """4.2+ (KAFKA-19233): a fenced member rejoining with its id keeps its state and assignment."""
    d = driver
    stable_pair(d)
    g = d.coordinator.group("g")
    result = raw(d, "A", 0, rebalance_timeout_ms=60_000, subscribed_topic_names=["foo"], topic_partitions=[])
    response = result.response
    assert response.error_code == 0
    assert (response.member_id, response.member_epoch) == ("A", 3)
    assert d.response_assignment(response) == {"foo": [0, 1, 2]}  # epoch 0 always gets the assignment
    assert d.assigned("A") == {"foo": [0, 1, 2]}
    assert g.group_epoch == 3 and group_epoch_records(result) == []  # same subscription: no bump
    assert result.records == []  # nothing changed at all


def test_epoch_zero_rejoin_acknowledges_pending_revocations(driver: Any) -> None:
    # A rejoining member owns nothing (TopicPartitions must be empty), so revocations are done.
    d = driver
    stable_pair(d)
    d.join("C")
    d.heartbeat("A", 3, owned={"foo": [0, 1, 2]})
    assert d.member("A").state == MemberAssignmentState.UNREVOKED_PARTITIONS
    response = d.join("A")
    assert response.member_epoch == 4
    assert d.response_assignment(response) == {"foo": [0, 1]}
    assert d.pending("A") == {} and d.member("A").state == MemberAssignmentState.STABLE


def test_epoch_zero_rejoin_with_a_new_subscription_bumps(driver: Any) -> None:
    d = driver
    stable_pair(d)
    d.create_topic("bar", 2)
    d.join("A", topics=["foo", "bar"])
    assert d.coordinator.group("g").group_epoch == 4


def test_lost_response_previous_epoch_with_owned_subset_is_accepted(driver: Any) -> None:
    d = driver
    stable_pair(d)
    member = d.member("A")
    assert (member.member_epoch, member.current.previous_member_epoch) == (3, 2)
    # The response that moved A to epoch 3 was lost: A still says 2, owning what it has.
    for owned in ({"foo": [0, 1, 2]}, {"foo": [0]}, {}):
        response = d.heartbeat("A", 2, owned=owned)
        assert (response.error_code, response.member_epoch) == (0, 3), owned
    # The epoch the member learns is the current one.
    assert d.member("A").member_epoch == 3


def test_lost_response_not_a_subset_is_fenced(driver: Any) -> None:
    d = driver
    stable_pair(d)
    response = d.heartbeat("A", 2, owned={"foo": [0, 1, 2, 3]})
    assert response.error_code == ErrorCode.FENCED_MEMBER_EPOCH
    assert response.error_message == (
        "The consumer group member has a smaller member epoch (2) than the one known by the group "
        "coordinator (3). The member must abandon all its partitions and rejoin."
    )


def test_lost_response_without_owned_partitions_is_fenced(driver: Any) -> None:
    d = driver
    stable_pair(d)
    assert d.heartbeat("A", 2).error_code == ErrorCode.FENCED_MEMBER_EPOCH


def test_epoch_older_than_the_previous_one_is_fenced(driver: Any) -> None:
    d = driver
    stable_pair(d)
    assert d.heartbeat("A", 1, owned={}).error_code == ErrorCode.FENCED_MEMBER_EPOCH


def test_previous_epoch_equal_to_the_current_one_tolerates_nothing_older(driver: Any) -> None:
    # B joined at epoch 3 and got its partitions at epoch 3: its previous epoch is 3 as well, so
    # no older epoch is tolerated.
    d = driver
    stable_pair(d)
    current = d.member("B").current
    assert (current.member_epoch, current.previous_member_epoch) == (3, 3)
    assert d.heartbeat("B", 2, owned={}).error_code == ErrorCode.FENCED_MEMBER_EPOCH


def test_lost_response_subset_check_uses_topic_ids(driver: Any) -> None:
    d = driver
    stable_pair(d)
    d.create_topic("bar", 6)
    # foo-0 is A's; bar-0 (another topic id, same partition number) is not.
    assert d.heartbeat("A", 2, owned={"bar": [0]}).error_code == ErrorCode.FENCED_MEMBER_EPOCH


# -- §5.6 group-epoch bumps ---------------------------------------------------------------------


def test_first_member_of_a_new_group(driver: Any) -> None:
    """4.3 (KAFKA-20268): a new group starts at epoch 1 with an empty target at epoch 1."""
    d = driver
    d.create_topic("foo", 2)
    result = raw(d, "A", 0, rebalance_timeout_ms=1, subscribed_topic_names=["foo"], topic_partitions=[])
    epochs = [r.epoch for r in group_epoch_records(result)]
    assert epochs == [1, 2]
    assert result.response.member_epoch == 2


def test_joining_with_an_empty_subscription_does_not_bump(driver: Any) -> None:
    d = driver
    d.create_topic("foo", 2)
    response = d.join("A", topics=[])
    g = d.coordinator.group("g")
    assert (g.group_epoch, g.assignment_epoch) == (1, 1)
    assert response.member_epoch == 1  # the member moves to the assignment epoch
    d.join("B")
    assert g.group_epoch == 2
    response = d.join("C", topics=[])
    assert g.group_epoch == 2 and response.member_epoch == 2


def test_joining_with_topics_bumps(driver: Any) -> None:
    d = driver
    stable_pair(d)
    d.join("C")
    assert d.coordinator.group("g").group_epoch == 4


def test_subscription_change_bumps(driver: Any) -> None:
    d = driver
    stable_pair(d)
    d.create_topic("bar", 2)
    result = raw(d, "A", 3, subscribed_topic_names=["foo", "bar"])
    assert [r.epoch for r in group_epoch_records(result)] == [4]


def test_same_subscription_in_another_order_or_with_duplicates_does_not_bump(driver: Any) -> None:
    d = driver
    d.create_topic("foo", 2)
    d.create_topic("bar", 2)
    d.join("A", topics=["foo", "bar"])
    for names in (["bar", "foo"], ["foo", "bar", "foo"]):
        result = raw(d, "A", 2, subscribed_topic_names=names)
        assert result.response.error_code == 0
        assert group_epoch_records(result) == [], names


def test_subscribing_to_a_topic_that_does_not_exist_bumps(driver: Any) -> None:
    # (a) is about the set of names, not about the topics that exist.
    d = driver
    stable_pair(d)
    result = raw(d, "A", 3, subscribed_topic_names=["foo", "not-yet"])
    assert [r.epoch for r in group_epoch_records(result)] == [4]


@pytest.mark.parametrize(
    "fields",
    [
        {"rack_id": "rack-1"},
        {"server_assignor": "range"},
        {"rebalance_timeout_ms": 5_000},
        {"rack_id": "r", "server_assignor": "uniform", "rebalance_timeout_ms": 1},
    ],
)
def test_changes_that_do_not_bump(driver: Any, fields: dict[str, Any]) -> None:
    d = driver
    stable_pair(d)
    result = raw(d, "A", 3, **fields)
    assert result.response.error_code == 0
    assert group_epoch_records(result) == []
    assert d.coordinator.group("g").group_epoch == 3
    # The member metadata is updated (and recorded).
    records = [r for r in result.records if isinstance(r, MemberMetadataRecord)]
    assert len(records) == 1
    metadata = d.member("A").metadata
    for name, value in fields.items():
        assert getattr(metadata, name) == value


def test_client_id_and_host_are_always_updated(driver: Any) -> None:
    d = driver
    stable_pair(d)
    request = ConsumerGroupHeartbeatRequest(group_id="g", member_id="A", member_epoch=3)
    result = d.coordinator.heartbeat(request, 1, d.now, "other-client", "/10.0.0.1")
    assert result.response.error_code == 0 and group_epoch_records(result) == []
    metadata = d.member("A").metadata
    assert (metadata.client_id, metadata.client_host) == ("other-client", "/10.0.0.1")


def test_an_unchanged_heartbeat_writes_nothing(driver: Any) -> None:
    d = driver
    stable_pair(d)
    result = raw(d, "A", 3, topic_partitions=d.tps({"foo": [0, 1, 2]}))
    assert result.response.error_code == 0 and result.records == []


def test_null_fields_mean_unchanged(driver: Any) -> None:
    d = driver
    d.create_topic("foo", 2)
    d.join("A", rack_id="r1", server_assignor="range", instance_id="i")
    assert raw(d, "A", 2, instance_id="i").response.error_code == 0
    metadata = d.member("A").metadata
    assert (metadata.rack_id, metadata.server_assignor, metadata.subscribed_topic_names) == (
        "r1",
        "range",
        ("foo",),
    )
    assert metadata.rebalance_timeout_ms == 60_000


# -- §5.8 reconciliation and the response -------------------------------------------------------


def test_response_carries_the_assignment_on_join(driver: Any) -> None:
    d = driver
    stable_pair(d)
    response = d.join("C")
    assert d.response_assignment(response) == {}  # not None: an empty assignment


def test_response_carries_the_assignment_on_a_full_request(driver: Any) -> None:
    d = driver
    stable_pair(d)
    full = d.heartbeat(
        "A", 3, owned={"foo": [0, 1, 2]}, rebalance_timeout_ms=60_000, subscribed_topic_names=["foo"]
    )
    assert d.response_assignment(full) == {"foo": [0, 1, 2]}
    full_regex = d.heartbeat(
        "A", 3, owned={"foo": [0, 1, 2]}, rebalance_timeout_ms=60_000, subscribed_topic_regex=""
    )
    assert d.response_assignment(full_regex) == {"foo": [0, 1, 2]}


@pytest.mark.parametrize(
    "fields",
    [
        {"subscribed_topic_names": ["foo"]},  # no rebalance timeout
        {"rebalance_timeout_ms": 60_000},  # no subscription
        {"rebalance_timeout_ms": 60_000, "subscribed_topic_names": ["foo"], "topic_partitions": None},
    ],
)
def test_response_without_change_has_no_assignment(driver: Any, fields: dict[str, Any]) -> None:
    d = driver
    stable_pair(d)
    fields = {"topic_partitions": d.tps({"foo": [0, 1, 2]}), **fields}
    response = raw(d, "A", 3, **fields).response
    assert response.error_code == 0 and response.assignment is None


def test_response_carries_the_assignment_when_it_changed(driver: Any) -> None:
    d = driver
    stable_pair(d)
    d.join("C")
    response = d.heartbeat("A", 3, owned={"foo": [0, 1, 2]})
    assert d.response_assignment(response) == {"foo": [0, 1]}
    # Waiting for the revocation: nothing changes, nothing is sent.
    assert d.heartbeat("A", 3, owned={"foo": [0, 1, 2]}).assignment is None


def test_response_excludes_partitions_pending_revocation(driver: Any) -> None:
    d = driver
    stable_pair(d)
    d.join("C")
    response = d.heartbeat("A", 3, owned={"foo": [0, 1, 2]})
    assert d.response_assignment(response) == {"foo": [0, 1]}
    assert d.pending("A") == {"foo": [2]}
    # A rejoin (epoch 0 gets the assignment) shows the same.
    assert (response.member_epoch, d.member("A").state) == (3, MemberAssignmentState.UNREVOKED_PARTITIONS)


def test_response_excludes_unreleased_partitions(driver: Any) -> None:
    d = driver
    stable_pair(d)
    response = d.join("C")
    assert d.target("C") == {"foo": [2, 5]}
    assert d.response_assignment(response) == {}
    assert response.member_epoch == 4
    assert d.member("C").state == MemberAssignmentState.UNRELEASED_PARTITIONS
    # The extension's PendingTopicPartitions lists what C waits for.
    pending = [(tp.topic_id, sorted(tp.partitions)) for tp in response.pending_topic_partitions]
    assert pending == [(d.topic_id("foo"), [2, 5])]


def test_unrevoked_member_moves_on_at_its_own_epoch(driver: Any) -> None:
    """4.2+ (KAFKA-19974): once released, the next assignment is computed with the *same* epoch,
    so a member that must revoke again stays at its epoch (4.0/4.1 moved it to epoch + 1)."""
    d = driver
    stable_pair(d)
    d.join("C")  # epoch 4: A=[0,1], B=[3,4], C=[2,5]
    d.heartbeat("A", 3, owned={"foo": [0, 1, 2]})
    assert d.member("A").state == MemberAssignmentState.UNREVOKED_PARTITIONS
    for member in "DEF":  # epochs 5-7 while A is revoking: one partition each
        d.join(member)
    g = d.coordinator.group("g")
    assert g.group_epoch == g.assignment_epoch == 7
    a_target = d.target("A")["foo"]
    assert len(a_target) == 1
    # A acknowledges foo-2; now it must revoke more: still at epoch 3, not 4.
    response = d.heartbeat("A", 3, owned={"foo": [0, 1]})
    member = d.member("A")
    assert member.state == MemberAssignmentState.UNREVOKED_PARTITIONS
    assert (response.member_epoch, member.member_epoch) == (3, 3)
    assert d.response_assignment(response) == {"foo": a_target}
    # After the second acknowledgement it jumps to the target epoch.
    response = d.heartbeat("A", 3, owned={"foo": a_target})
    assert response.member_epoch == 7 and d.member("A").state == MemberAssignmentState.STABLE


def test_unrevoked_member_that_reports_nothing_still_owns_its_partitions(driver: Any) -> None:
    d = driver
    stable_pair(d)
    d.join("C")
    d.heartbeat("A", 3, owned={"foo": [0, 1, 2]})
    response = d.heartbeat("A", 3)  # TopicPartitions null: still owns what it had
    assert response.member_epoch == 3 and d.pending("A") == {"foo": [2]}
    assert d.member("C").state == MemberAssignmentState.UNRELEASED_PARTITIONS
    c = d.heartbeat("C", 4, owned={})
    assert d.assigned("C") == {} and c.assignment is None


def test_a_partition_is_never_granted_before_its_owner_acknowledges(driver: Any) -> None:
    d = driver
    stable_pair(d)
    d.join("C")
    for _ in range(3):
        d.heartbeat("C", 4, owned={})
        assert d.assigned("C") == {}
    # A is told, but has not acknowledged.
    d.heartbeat("A", 3, owned={"foo": [0, 1, 2]})
    d.heartbeat("C", 4, owned={})
    assert d.assigned("C") == {}
    g = d.coordinator.group("g")
    assert g.owner_of(d.topic_id("foo"), 2) == "A"
    # B has not even been told yet; A acknowledges: C gets foo-2 only.
    d.heartbeat("A", 3, owned={"foo": [0, 1]})
    assert g.owner_of(d.topic_id("foo"), 2) is None
    c = d.heartbeat("C", 4, owned={})
    assert d.response_assignment(c) == {"foo": [2]}
    assert g.owner_of(d.topic_id("foo"), 5) == "B"


def test_a_revocation_acknowledged_in_the_same_heartbeat_is_not_held(driver: Any) -> None:
    # A member that already stopped owning the partitions it must revoke goes straight to the new epoch.
    d = driver
    stable_pair(d)
    d.join("C")
    response = d.heartbeat("A", 3, owned={"foo": [0, 1]})
    assert response.member_epoch == 4 and d.pending("A") == {}
    assert d.response_assignment(response) == {"foo": [0, 1]}


def test_assignment_epochs_per_partition(driver: Any) -> None:
    """4.3 (KIP-1251): each assigned partition records the epoch at which it was assigned."""
    d = driver
    stable_pair(d)
    assert dict(d.member("A").current.assigned[d.topic_id("foo")]) == {0: 2, 1: 2, 2: 2}
    assert dict(d.member("B").current.assigned[d.topic_id("foo")]) == {3: 3, 4: 3, 5: 3}
    d.join("C")
    d.heartbeat("A", 3, owned={"foo": [0, 1, 2]})
    d.heartbeat("A", 3, owned={"foo": [0, 1]})
    d.heartbeat("C", 4, owned={})
    # Kept partitions keep their epoch; new ones get the target epoch.
    assert dict(d.member("A").current.assigned[d.topic_id("foo")]) == {0: 2, 1: 2}
    assert dict(d.member("C").current.assigned[d.topic_id("foo")]) == {2: 4}


def test_pending_revocation_keeps_the_assignment_epochs(driver: Any) -> None:
    """4.3 (KIP-1251): partitions pending revocation keep the epoch at which they were assigned
    (Kafka's TopicPartitionsWithEpochs), so offset commits can still be checked against it."""
    d = driver
    stable_pair(d)
    d.join("C")
    d.heartbeat("B", 3, owned={"foo": [3, 4, 5]})
    assert dict(d.member("B").current.pending_revocation[d.topic_id("foo")]) == {5: 3}


def test_unreleased_member_advances_to_the_target_epoch(driver: Any) -> None:
    d = driver
    stable_pair(d)
    d.join("C")
    member = d.member("C")
    assert (member.member_epoch, member.state) == (4, MemberAssignmentState.UNRELEASED_PARTITIONS)
    assert d.coordinator.group("g").state() == GroupState.RECONCILING


def test_subscription_change_at_the_target_epoch_revokes_unsubscribed_topics(make_driver: Any) -> None:
    """4.2+: a STABLE member whose subscription changed drops the topics it no longer subscribes
    to at once, even before a new target is computed (here held back by the 4.3 interval)."""
    d = make_driver(assignment_interval_ms=10_000)
    d.create_topic("foo", 2)
    d.create_topic("bar", 2)
    d.join("A", topics=["foo", "bar"])
    assert d.assigned("A") == {"bar": [0, 1], "foo": [0, 1]}
    g = d.coordinator.group("g")
    response = d.heartbeat("A", 2, owned={"foo": [0, 1], "bar": [0, 1]}, subscribed_topic_names=["foo"])
    assert g.group_epoch == 3 and g.assignment_epoch == 2  # not recomputed yet
    assert d.response_assignment(response) == {"foo": [0, 1]}
    assert d.pending("A") == {"bar": [0, 1]}
    assert d.member("A").state == MemberAssignmentState.UNREVOKED_PARTITIONS
    assert response.member_epoch == 2


def test_subscription_change_of_a_member_that_already_dropped_the_topic(make_driver: Any) -> None:
    d = make_driver(assignment_interval_ms=10_000)
    d.create_topic("foo", 2)
    d.create_topic("bar", 2)
    d.join("A", topics=["foo", "bar"])
    d.heartbeat("A", 2, owned={"foo": [0, 1]}, subscribed_topic_names=["foo"])
    assert d.assigned("A") == {"foo": [0, 1]} and d.pending("A") == {}
    assert d.member("A").state == MemberAssignmentState.STABLE


def test_unknown_member_state_is_fenced_if_it_owns_partitions(driver: Any) -> None:
    """A member in the UNKNOWN state (a newer coordinator's state, seen after a downgrade) is fenced
    unless it reports owning nothing; then it is reconciled from scratch."""
    d = driver
    stable_pair(d)
    g = d.coordinator.group("g")
    current = d.member("A").current
    unknown = CurrentAssignment(3, 2, MemberAssignmentState.UNKNOWN, current.assigned, {})
    d.coordinator.state.replay(CurrentAssignmentRecord("g", "A", unknown))
    assert d.heartbeat("A", 3, owned={"foo": [0]}).error_code == ErrorCode.FENCED_MEMBER_EPOCH
    assert d.heartbeat("A", 3).error_code == ErrorCode.FENCED_MEMBER_EPOCH
    response = d.heartbeat("A", 3, owned={})
    assert response.error_code == 0 and response.member_epoch == g.assignment_epoch
    assert d.member("A").state == MemberAssignmentState.STABLE
