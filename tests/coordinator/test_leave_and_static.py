"""Leaving (epochs -1 and -2) and static membership (facts §5.3, §5.4.5, §5.10)."""

from __future__ import annotations

from typing import Any

import pytest

from kconsumer.broker.coordinator.context import session_timer
from kconsumer.broker.coordinator.model import GroupState, MemberAssignmentState
from kconsumer.broker.coordinator.records import (
    CurrentAssignmentRecord,
    CurrentAssignmentTombstone,
    GroupEpochRecord,
    MemberMetadataTombstone,
    TargetMemberTombstone,
)
from kconsumer.errors import ErrorCode
from kconsumer.protocol.messages.consumer_group import ConsumerGroupHeartbeatRequest

SESSION_MS = 45_000


def raw(d: Any, member_id: str, epoch: int, **fields: Any) -> Any:
    request = ConsumerGroupHeartbeatRequest(group_id="g", member_id=member_id, member_epoch=epoch, **fields)
    return d.coordinator.heartbeat(request, 1, d.now, "client", "/127.0.0.1")


def stable(d: Any, static: bool = False) -> None:
    """foo has 4 partitions: A owns 0-1 and B 2-3 at epoch 3 (instances iA and iB when static)."""
    d.create_topic("foo", 4)
    extra_a = {"instance_id": "iA"} if static else {}
    extra_b = {"instance_id": "iB"} if static else {}
    d.join("A", **extra_a)
    d.join("B", **extra_b)
    d.heartbeat("A", 2, owned={"foo": range(4)})
    d.heartbeat("A", 2, owned={"foo": [0, 1]})
    d.heartbeat("B", 3, owned={})
    assert (d.assigned("A"), d.assigned("B")) == ({"foo": [0, 1]}, {"foo": [2, 3]})
    assert d.coordinator.group("g").state() == GroupState.STABLE


def assert_error(result: Any, code: ErrorCode, message: str | None = None) -> None:
    assert result.response.error_code == code, (result.response.error_code, result.response.error_message)
    if message is not None:
        assert result.response.error_message == message
    assert result.records == []


# -- dynamic members -----------------------------------------------------------------------------


def test_dynamic_leave_of_an_unknown_member(driver: Any) -> None:
    d = driver
    stable(d)
    assert_error(raw(d, "Z", -1), ErrorCode.UNKNOWN_MEMBER_ID, "Member Z is not a member of group g.")


def test_dynamic_leave_removes_the_member_and_bumps(driver: Any) -> None:
    d = driver
    stable(d)
    g = d.coordinator.group("g")
    result = raw(d, "A", -1)
    assert (result.response.error_code, result.response.member_id, result.response.member_epoch) == (
        0,
        "A",
        -1,
    )
    assert result.response.assignment is None
    kinds = [type(r) for r in result.records]
    assert kinds == [
        CurrentAssignmentTombstone,
        TargetMemberTombstone,
        MemberMetadataTombstone,
        GroupEpochRecord,
    ]
    assert "A" not in g.members and "A" not in g.target
    assert g.group_epoch == 4
    # Its partitions are free at once: B takes them on its next heartbeat.
    assert g.owner_of(d.topic_id("foo"), 0) is None
    b = d.heartbeat("B", 3, owned={"foo": [2, 3]})
    assert (b.member_epoch, d.response_assignment(b)) == (4, {"foo": [0, 1, 2, 3]})


def test_dynamic_leave_does_not_check_the_epoch(driver: Any) -> None:
    # A member in the middle of a revocation (or with any epoch) may leave.
    d = driver
    stable(d)
    d.join("C")
    d.join("D")  # one partition each: A must revoke one
    d.heartbeat("A", 3, owned={"foo": [0, 1]})
    assert d.member("A").state == MemberAssignmentState.UNREVOKED_PARTITIONS
    assert raw(d, "A", -1).response.error_code == 0
    assert "A" not in d.coordinator.group("g").members


def test_dynamic_leave_of_the_last_member_empties_the_group(driver: Any) -> None:
    d = driver
    d.create_topic("foo", 2)
    d.join("A")
    g = d.coordinator.group("g")
    assert raw(d, "A", -1).response.error_code == 0
    assert g.members == {} and g.state() == GroupState.EMPTY
    assert g.group_epoch == 3
    # As Kafka 4.4 describes it (found by the fidelity suite): the empty target is at the new epoch.
    assert g.assignment_epoch == 3
    assert d.coordinator.next_deadline() is None  # its session timer is gone
    # The group still exists: a new member continues from its epoch.
    assert d.join("B").member_epoch == 4


def test_dynamic_leave_cancels_the_session_timer(driver: Any) -> None:
    d = driver
    stable(d)
    raw(d, "A", -1)
    assert d.coordinator.timers.get(session_timer("g", "A")) is None
    assert d.coordinator.timers.get(session_timer("g", "B")) is not None


def test_a_member_that_left_is_unknown(driver: Any) -> None:
    d = driver
    stable(d)
    raw(d, "A", -1)
    assert_error(raw(d, "A", 3), ErrorCode.UNKNOWN_MEMBER_ID)
    assert_error(raw(d, "A", -1), ErrorCode.UNKNOWN_MEMBER_ID)
    # It may join again (as a new member).
    assert d.join("A").error_code == 0


def test_dynamic_leave_with_an_instance_id_of_nobody(driver: Any) -> None:
    # With an instance id the static rules apply, even for a member that joined without one.
    d = driver
    stable(d)
    assert_error(
        raw(d, "A", -1, instance_id="iX"),
        ErrorCode.UNKNOWN_MEMBER_ID,
        "Instance id iX is unknown in group g.",
    )


# -- static members: leave paths ----------------------------------------------------------------


@pytest.mark.parametrize("epoch", [-1, -2])
def test_static_leave_of_an_unknown_instance(driver: Any, epoch: int) -> None:
    d = driver
    stable(d, static=True)
    assert_error(raw(d, "A", epoch, instance_id="nobody"), ErrorCode.UNKNOWN_MEMBER_ID)


@pytest.mark.parametrize("epoch", [-1, -2])
def test_static_leave_with_another_members_instance(driver: Any, epoch: int) -> None:
    d = driver
    stable(d, static=True)
    assert_error(
        raw(d, "A", epoch, instance_id="iB"),
        ErrorCode.FENCED_INSTANCE_ID,
        "Instance id iB belongs to member B, not A.",
    )


def test_static_temporary_leave_keeps_the_assignment(driver: Any) -> None:
    d = driver
    stable(d, static=True)
    g = d.coordinator.group("g")
    result = raw(d, "A", -2, instance_id="iA")
    response = result.response
    assert (response.error_code, response.member_id, response.member_epoch) == (0, "A", -2)
    assert [type(r) for r in result.records] == [CurrentAssignmentRecord]  # one record, no bump
    assert g.group_epoch == 3
    member = d.member("A")
    assert member.member_epoch == -2
    assert d.assigned("A") == {"foo": [0, 1]}  # kept
    assert d.target("A") == {"foo": [0, 1]}
    # 4.3: its assignment epochs are reset to 0.
    assert dict(member.current.assigned[d.topic_id("foo")]) == {0: 0, 1: 0}
    # The partitions stay with A: B does not get them.
    d.heartbeat("B", 3, owned={"foo": [2, 3]})
    assert d.assigned("B") == {"foo": [2, 3]}
    assert g.owner_of(d.topic_id("foo"), 0) == "A"


def test_static_temporary_leave_clears_partitions_pending_revocation(driver: Any) -> None:
    d = driver
    stable(d, static=True)
    d.join("C")
    d.join("D")  # one partition each: A must revoke one
    d.heartbeat("A", 3, owned={"foo": [0, 1]})
    assert len(d.pending("A")["foo"]) == 1
    revoked = d.pending("A")["foo"][0]
    raw(d, "A", -2, instance_id="iA")
    assert d.pending("A") == {}
    assert d.coordinator.group("g").owner_of(d.topic_id("foo"), revoked) is None
    # The partition it was revoking is released: its new owner gets it.
    new_owner = next(m for m in "CD" if revoked in d.target(m).get("foo", []))
    epoch = d.member(new_owner).member_epoch
    response = d.heartbeat(new_owner, epoch, owned=d.assigned(new_owner))
    assert revoked in d.assigned(new_owner)["foo"]
    assert response.error_code == 0


def test_static_temporary_leave_keeps_the_session_timer(driver: Any) -> None:
    d = driver
    stable(d, static=True)
    deadline_before = d.coordinator.timers.get(session_timer("g", "A"))
    raw(d, "A", -2, instance_id="iA")
    assert d.coordinator.timers.get(session_timer("g", "A")) == deadline_before
    g = d.coordinator.group("g")
    # B keeps heartbeating; A does not come back: removed at its session timeout, with a bump.
    while "A" in g.members:
        d.advance(5_000)
        if "A" in g.members:
            d.heartbeat("B", d.member("B").member_epoch)
    assert g.group_epoch == 4
    assert "iA" not in g.static_members
    b = d.heartbeat("B", 3, owned={"foo": [2, 3]})
    assert d.response_assignment(b) == {"foo": [0, 1, 2, 3]}


def test_static_temporary_leave_is_removed_exactly_at_the_session_timeout(driver: Any) -> None:
    d = driver
    stable(d, static=True)
    g = d.coordinator.group("g")
    left_at = d.now
    raw(d, "A", -2, instance_id="iA")
    d.advance(SESSION_MS - 1)
    assert "A" in g.members
    d.advance(1)
    assert "A" not in g.members and d.now == left_at + SESSION_MS


def test_static_member_heartbeating_after_a_temporary_leave_is_fenced(driver: Any) -> None:
    d = driver
    stable(d, static=True)
    raw(d, "A", -2, instance_id="iA")
    assert_error(raw(d, "A", 3, instance_id="iA"), ErrorCode.FENCED_MEMBER_EPOCH)


def test_static_full_leave(driver: Any) -> None:
    d = driver
    stable(d, static=True)
    g = d.coordinator.group("g")
    result = raw(d, "A", -1, instance_id="iA")
    assert (result.response.member_id, result.response.member_epoch) == ("A", -1)
    assert "A" not in g.members and "iA" not in g.static_members
    assert g.group_epoch == 4
    assert g.owner_of(d.topic_id("foo"), 0) is None


def test_static_full_leave_after_a_temporary_leave(driver: Any) -> None:
    d = driver
    stable(d, static=True)
    raw(d, "A", -2, instance_id="iA")
    assert raw(d, "A", -1, instance_id="iA").response.error_code == 0
    assert "A" not in d.coordinator.group("g").members


# -- static members: rejoining and replacement (§5.4.5) ------------------------------------------


def test_static_member_rejoining_with_its_own_id(driver: Any) -> None:
    d = driver
    stable(d, static=True)
    g = d.coordinator.group("g")
    raw(d, "A", -2, instance_id="iA")
    response = d.join("A", instance_id="iA")
    assert response.error_code == 0
    assert (response.member_epoch, d.response_assignment(response)) == (3, {"foo": [0, 1]})
    assert g.group_epoch == 3


def test_static_replacement_takes_the_old_assignment_without_a_rebalance(driver: Any) -> None:
    d = driver
    stable(d, static=True)
    g = d.coordinator.group("g")
    raw(d, "A", -2, instance_id="iA")
    result = raw(
        d,
        "A2",
        0,
        instance_id="iA",
        rebalance_timeout_ms=60_000,
        subscribed_topic_names=["foo"],
        topic_partitions=[],
    )
    response = result.response
    assert (response.error_code, response.member_id) == (0, "A2")
    assert (response.member_epoch, d.response_assignment(response)) == (3, {"foo": [0, 1]})
    assert not any(isinstance(r, GroupEpochRecord) for r in result.records)
    assert g.group_epoch == 3 and g.state() == GroupState.STABLE
    assert set(g.members) == {"A2", "B"} and g.static_members["iA"] == "A2"
    assert d.target("A2") == {"foo": [0, 1]} and "A" not in g.target
    assert d.assigned("A2") == {"foo": [0, 1]}
    # The new member has its own session timer (the old one's is ignored when it fires, below).
    assert d.coordinator.timers.get(session_timer("g", "A2")) == (d.now + SESSION_MS, None)
    # The old member id is unknown now.
    assert_error(raw(d, "A", 3), ErrorCode.UNKNOWN_MEMBER_ID)
    assert_error(raw(d, "A", 3, instance_id="iA"), ErrorCode.FENCED_INSTANCE_ID)


def test_static_replacement_keeps_the_old_metadata_unless_sent(driver: Any) -> None:
    d = driver
    d.create_topic("foo", 2)
    d.join("A", instance_id="iA", rack_id="r1", server_assignor="range")
    raw(d, "A", -2, instance_id="iA")
    d.join("A2", instance_id="iA")
    metadata = d.member("A2").metadata
    assert (metadata.rack_id, metadata.server_assignor, metadata.instance_id) == ("r1", "range", "iA")


def test_static_replacement_with_a_new_subscription_bumps(driver: Any) -> None:
    d = driver
    stable(d, static=True)
    d.create_topic("bar", 2)
    raw(d, "A", -2, instance_id="iA")
    d.join("A2", topics=["foo", "bar"], instance_id="iA")
    g = d.coordinator.group("g")
    assert g.group_epoch == 4
    assert "bar" in d.target("A2")


def test_unreleased_instance_id(driver: Any) -> None:
    d = driver
    stable(d, static=True)
    result = raw(
        d,
        "A2",
        0,
        instance_id="iA",
        rebalance_timeout_ms=60_000,
        subscribed_topic_names=["foo"],
        topic_partitions=[],
    )
    assert_error(
        result,
        ErrorCode.UNRELEASED_INSTANCE_ID,
        "Static member A2 with instance id iA cannot join the group because the instance id is owned by "
        "member A.",
    )
    assert set(d.coordinator.group("g").members) == {"A", "B"}


def test_unreleased_instance_id_while_the_old_member_is_revoking(driver: Any) -> None:
    d = driver
    stable(d, static=True)
    d.join("C")
    d.join("D")
    d.heartbeat("A", 3, owned={"foo": [0, 1]})
    assert_error(
        raw(
            d,
            "A2",
            0,
            instance_id="iA",
            rebalance_timeout_ms=1,
            subscribed_topic_names=[],
            topic_partitions=[],
        ),
        ErrorCode.UNRELEASED_INSTANCE_ID,
    )


@pytest.mark.parametrize("epoch", [1, 3, 4])
def test_non_zero_epoch_with_another_members_instance(driver: Any, epoch: int) -> None:
    d = driver
    stable(d, static=True)
    assert_error(
        raw(d, "B", epoch, instance_id="iA"),
        ErrorCode.FENCED_INSTANCE_ID,
        "Instance id iA belongs to member A, not B.",
    )
    # Even after a temporary leave of A, only epoch 0 may take the instance over.
    raw(d, "A", -2, instance_id="iA")
    assert_error(raw(d, "A2", epoch, instance_id="iA"), ErrorCode.FENCED_INSTANCE_ID)


def test_non_zero_epoch_with_an_unknown_instance(driver: Any) -> None:
    d = driver
    stable(d, static=True)
    assert_error(
        raw(d, "A", 3, instance_id="iZ"),
        ErrorCode.UNKNOWN_MEMBER_ID,
        "Instance id iZ is unknown in the group.",
    )


def test_static_member_epoch_check_still_applies(driver: Any) -> None:
    d = driver
    stable(d, static=True)
    assert_error(raw(d, "A", 7, instance_id="iA"), ErrorCode.FENCED_MEMBER_EPOCH)
    assert raw(d, "A", 3, instance_id="iA").response.error_code == 0


def test_replaced_member_timer_does_not_remove_the_new_member(driver: Any) -> None:
    d = driver
    stable(d, static=True)
    g = d.coordinator.group("g")
    raw(d, "A", -2, instance_id="iA")
    d.advance(SESSION_MS - 10)
    d.join("A2", instance_id="iA")
    d.heartbeat("B", 3)
    d.advance(20)  # A's original deadline passes
    assert set(g.members) == {"A2", "B"} and g.group_epoch == 3


def test_static_member_rejoins_after_its_replacement_left(driver: Any) -> None:
    d = driver
    stable(d, static=True)
    raw(d, "A", -2, instance_id="iA")
    d.join("A2", instance_id="iA")
    raw(d, "A2", -2, instance_id="iA")
    response = d.join("A3", instance_id="iA")
    assert (response.member_epoch, d.response_assignment(response)) == (3, {"foo": [0, 1]})
    assert set(d.coordinator.group("g").members) == {"A3", "B"}
