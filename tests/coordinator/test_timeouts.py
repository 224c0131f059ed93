"""Session and rebalance timeouts, `next_deadline`, and the 4.3 assignment interval (facts §5.7.2, §5.11)."""

from __future__ import annotations

from typing import Any

from kconsumer.broker.coordinator.context import rebalance_timer, session_timer
from kconsumer.broker.coordinator.model import GroupState, MemberAssignmentState
from kconsumer.broker.coordinator.records import (
    CurrentAssignmentTombstone,
    GroupEpochRecord,
    MemberMetadataTombstone,
    TargetMemberTombstone,
)
from kconsumer.errors import ErrorCode

SESSION_MS = 45_000


def stable(d: Any, rebalance_timeout_ms: int = 60_000) -> None:
    """foo has 4 partitions: A owns 0-1 and B 2-3 at epoch 3."""
    d.create_topic("foo", 4)
    d.join("A", rebalance_timeout_ms=rebalance_timeout_ms)
    d.join("B", rebalance_timeout_ms=rebalance_timeout_ms)
    d.heartbeat("A", 2, owned={"foo": range(4)})
    d.heartbeat("A", 2, owned={"foo": [0, 1]})
    d.heartbeat("B", 3, owned={})
    assert (d.assigned("A"), d.assigned("B")) == ({"foo": [0, 1]}, {"foo": [2, 3]})


# -- session timeout -----------------------------------------------------------------------------


def test_session_timeout_fences_the_member(driver: Any) -> None:
    d = driver
    stable(d)
    g = d.coordinator.group("g")
    d.advance(SESSION_MS - 1)
    assert set(g.members) == {"A", "B"}
    d.heartbeat("B", 3)  # B stays alive
    d.now += 1
    records = d.coordinator.poll(d.now)
    assert [type(r) for r in records] == [
        CurrentAssignmentTombstone,
        TargetMemberTombstone,
        MemberMetadataTombstone,
        GroupEpochRecord,
    ]
    assert set(g.members) == {"B"} and g.group_epoch == 4
    assert g.owner_of(d.topic_id("foo"), 0) is None
    b = d.heartbeat("B", 3, owned={"foo": [2, 3]})
    assert (b.member_epoch, d.response_assignment(b)) == (4, {"foo": [0, 1, 2, 3]})


def test_session_timeout_of_every_member(driver: Any) -> None:
    d = driver
    stable(d)
    g = d.coordinator.group("g")
    d.advance(SESSION_MS)
    assert g.members == {} and g.state() == GroupState.EMPTY
    assert g.group_epoch == 5  # one bump per member
    assert d.coordinator.next_deadline() is None


def test_heartbeats_reset_the_session_timeout(driver: Any) -> None:
    d = driver
    stable(d)
    g = d.coordinator.group("g")
    for _ in range(5):
        d.advance(SESSION_MS - 1_000)
        d.heartbeat("A", 3)
        d.heartbeat("B", 3)
    assert set(g.members) == {"A", "B"} and g.group_epoch == 3
    last = d.now
    assert d.coordinator.timers.get(session_timer("g", "A"))[0] == last + SESSION_MS
    d.advance(SESSION_MS)
    assert g.members == {}


def test_a_failed_heartbeat_does_not_reset_the_session_timeout(driver: Any) -> None:
    d = driver
    stable(d)
    deadline = d.coordinator.timers.get(session_timer("g", "A"))
    d.advance(10_000)
    assert d.heartbeat("A", 9).error_code == ErrorCode.FENCED_MEMBER_EPOCH
    assert d.heartbeat("A", 3, server_assignor="nope").error_code == ErrorCode.UNSUPPORTED_ASSIGNOR
    assert d.coordinator.timers.get(session_timer("g", "A")) == deadline


def test_a_rejoin_resets_the_session_timeout(driver: Any) -> None:
    d = driver
    stable(d)
    d.advance(40_000)
    d.join("A")
    assert d.coordinator.timers.get(session_timer("g", "A"))[0] == d.now + SESSION_MS


def test_session_timeout_follows_the_configuration(make_driver: Any) -> None:
    d = make_driver(session_timeout_ms=3_000, heartbeat_interval_ms=1_000)
    d.create_topic("foo", 1)
    d.join("A")
    assert d.coordinator.next_deadline() == d.now + 3_000
    d.advance(2_999)
    assert "A" in d.coordinator.group("g").members
    d.advance(1)
    assert "A" not in d.coordinator.group("g").members


def test_timer_of_a_member_that_left_is_ignored(driver: Any) -> None:
    d = driver
    stable(d)
    g = d.coordinator.group("g")
    d.heartbeat("A", -1)
    assert g.group_epoch == 4
    # Even if its timer were still armed, firing it does nothing: the member is gone.
    d.coordinator.timers.schedule(session_timer("g", "A"), d.now + 1)
    d.advance(1)
    assert g.group_epoch == 4 and set(g.members) == {"B"}


def test_timer_of_a_replaced_static_member_is_ignored(driver: Any) -> None:
    d = driver
    d.create_topic("foo", 2)
    d.join("A", instance_id="i")
    d.heartbeat("A", -2, instance_id="i")
    g = d.coordinator.group("g")
    d.join("A2", instance_id="i")
    epoch = g.group_epoch
    # A stale timer for the old member id fires: ignored, the new member stays.
    d.coordinator.timers.schedule(session_timer("g", "A"), d.now + 1)
    d.advance(1)
    assert set(g.members) == {"A2"} and g.group_epoch == epoch


def test_timers_of_a_missing_group_are_ignored(driver: Any) -> None:
    d = driver
    d.coordinator.timers.schedule(session_timer("nope", "A"), d.now + 1)
    d.coordinator.timers.schedule(rebalance_timer("nope", "A"), d.now + 1, 3)
    d.advance(1)
    assert d.coordinator.group("nope") is None


# -- rebalance timeout ---------------------------------------------------------------------------


def revoking(d: Any, rebalance_timeout_ms: int = 10_000) -> None:
    """A must revoke a partition for epoch 5 (C and D joined); it is told and does not acknowledge."""
    stable(d, rebalance_timeout_ms)
    d.join("C", rebalance_timeout_ms=rebalance_timeout_ms)
    d.join("D", rebalance_timeout_ms=rebalance_timeout_ms)
    d.heartbeat("A", 3, owned={"foo": [0, 1]})
    assert d.member("A").state == MemberAssignmentState.UNREVOKED_PARTITIONS


def test_rebalance_timeout_fences_a_member_that_does_not_revoke(driver: Any) -> None:
    d = driver
    revoking(d)
    g = d.coordinator.group("g")
    assert d.coordinator.timers.get(rebalance_timer("g", "A")) == (d.now + 10_000, 3)
    for _ in range(9):  # A keeps heartbeating but never acknowledges
        d.advance(1_000)
        d.heartbeat("A", 3, owned={"foo": [0, 1]})
    assert "A" in g.members
    epoch = g.group_epoch
    d.advance(1_000)
    assert "A" not in g.members and g.group_epoch == epoch + 1


def test_rebalance_timeout_is_cancelled_by_the_acknowledgement(driver: Any) -> None:
    d = driver
    revoking(d)
    kept = d.target("A")["foo"]
    d.heartbeat("A", 3, owned={"foo": kept})
    assert d.member("A").state == MemberAssignmentState.STABLE
    assert d.coordinator.timers.get(rebalance_timer("g", "A")) is None
    d.advance(10_000)
    assert "A" in d.coordinator.group("g").members


def test_rebalance_timeout_is_cancelled_by_a_temporary_leave(driver: Any) -> None:
    d = driver
    d.create_topic("foo", 4)
    d.join("A", instance_id="i", rebalance_timeout_ms=5_000)
    d.join("B")
    d.heartbeat("A", 2, owned={"foo": range(4)})
    assert d.member("A").state == MemberAssignmentState.UNREVOKED_PARTITIONS
    d.heartbeat("A", -2, instance_id="i")
    assert d.coordinator.timers.get(rebalance_timer("g", "A")) is None
    d.advance(5_000)
    assert "A" in d.coordinator.group("g").members


def test_rebalance_timer_fires_only_for_the_epoch_it_was_scheduled_for(driver: Any) -> None:
    d = driver
    revoking(d)
    g = d.coordinator.group("g")
    # A timer scheduled when A was at another epoch (2) fires: ignored, A is at epoch 3.
    d.coordinator.timers.schedule(rebalance_timer("g", "A"), d.now + 1, 2)
    d.advance(1)
    assert "A" in g.members
    # The same timer for its current epoch fences it.
    d.coordinator.timers.schedule(rebalance_timer("g", "A"), d.now + 1, 3)
    d.advance(1)
    assert "A" not in g.members


def test_rebalance_timer_is_rescheduled_when_the_revocation_changes(driver: Any) -> None:
    d = driver
    revoking(d)
    first = d.coordinator.timers.get(rebalance_timer("g", "A"))
    d.advance(3_000)
    d.heartbeat("A", 3, owned={"foo": [0, 1]})  # nothing changes: the deadline stays
    assert d.coordinator.timers.get(rebalance_timer("g", "A")) == first
    # A subscription change while revoking changes the member: the timer restarts.
    d.heartbeat("A", 3, owned={"foo": [0, 1]}, subscribed_topic_names=[])
    assert d.member("A").state == MemberAssignmentState.UNREVOKED_PARTITIONS
    assert d.coordinator.timers.get(rebalance_timer("g", "A")) == (d.now + 10_000, 3)


def test_rebalance_timeout_uses_the_members_own_value(driver: Any) -> None:
    d = driver
    revoking(d, rebalance_timeout_ms=2_500)
    d.advance(2_499)
    assert "A" in d.coordinator.group("g").members
    d.advance(1)
    assert "A" not in d.coordinator.group("g").members


def test_stable_members_have_no_rebalance_timer(driver: Any) -> None:
    d = driver
    stable(d)
    assert d.coordinator.timers.get(rebalance_timer("g", "A")) is None
    assert d.coordinator.timers.get(rebalance_timer("g", "B")) is None


# -- next_deadline -------------------------------------------------------------------------------


def test_next_deadline(driver: Any) -> None:
    d = driver
    assert d.coordinator.next_deadline() is None
    d.create_topic("foo", 4)
    start = d.now
    d.join("A")
    assert d.coordinator.next_deadline() == start + SESSION_MS
    d.advance(1_000)
    d.join("B")
    assert d.coordinator.next_deadline() == start + SESSION_MS  # A's comes first
    d.advance(1_000)
    d.heartbeat("A", 2)
    assert d.coordinator.next_deadline() == start + 1_000 + SESSION_MS  # now B's
    d.heartbeat("A", 2, owned={"foo": range(4)})  # A revokes: its 60 s rebalance timer comes later
    assert d.coordinator.next_deadline() == start + 1_000 + SESSION_MS


def test_next_deadline_includes_rebalance_timers(driver: Any) -> None:
    d = driver
    revoking(d, rebalance_timeout_ms=2_000)
    assert d.coordinator.next_deadline() == d.now + 2_000


def test_poll_before_the_deadline_does_nothing(driver: Any) -> None:
    d = driver
    stable(d)
    deadline = d.coordinator.next_deadline()
    assert d.coordinator.poll(deadline - 1) == []
    assert d.coordinator.poll(deadline) != []


# -- 4.3 assignment interval (§5.7.2) ------------------------------------------------------------


def test_assignment_interval_delays_the_target(make_driver: Any) -> None:
    d = make_driver(assignment_interval_ms=1_000)
    d.create_topic("foo", 4)
    a = d.join("A")  # the first computation is never delayed (no previous timestamp)
    g = d.coordinator.group("g")
    assert (g.group_epoch, g.assignment_epoch, a.member_epoch) == (2, 2, 2)
    computed_at = d.now
    assert g.last_assignment_ms == computed_at
    d.advance(500)
    b = d.join("B")  # bump within the interval: no new target
    assert (g.group_epoch, g.assignment_epoch) == (3, 2)
    assert g.state() == GroupState.ASSIGNING
    assert b.member_epoch == 2 and d.response_assignment(b) == {}
    assert d.target("A") == {"foo": [0, 1, 2, 3]}
    # No timer is scheduled for it: only the session timers.
    assert d.coordinator.next_deadline() == computed_at + SESSION_MS
    d.advance(499)
    d.heartbeat("A", 2)
    assert g.assignment_epoch == 2
    # The first heartbeat at or after the interval computes it.
    d.advance(1)
    a = d.heartbeat("A", 2, owned={"foo": range(4)})
    assert (g.group_epoch, g.assignment_epoch) == (3, 3)
    assert g.last_assignment_ms == computed_at + 1_000
    assert len(d.target("A")["foo"]) == 2 and len(d.target("B")["foo"]) == 2
    assert g.state() == GroupState.RECONCILING


def test_assignment_interval_batches_several_bumps(make_driver: Any) -> None:
    d = make_driver(assignment_interval_ms=1_000)
    d.create_topic("foo", 6)
    d.join("A")
    g = d.coordinator.group("g")
    for member in "BCD":
        d.advance(100)
        d.join(member)
    assert (g.group_epoch, g.assignment_epoch) == (5, 2)
    d.advance(1_000)
    d.heartbeat("C", 2)
    assert (g.group_epoch, g.assignment_epoch) == (5, 5)
    assert sorted(len(d.target(m).get("foo", [])) for m in "ABCD") == [1, 1, 2, 2]


def test_zero_interval_computes_at_once(driver: Any) -> None:
    d = driver
    assert d.config.assignment_interval_ms == 0
    stable(d)
    d.join("C")
    g = d.coordinator.group("g")
    assert g.group_epoch == g.assignment_epoch == 4


def test_a_bump_from_a_timeout_is_computed_by_the_next_heartbeat(make_driver: Any) -> None:
    # The timer only fences: the target is computed inside a heartbeat (facts §5.7.1), and after the
    # interval since the last computation.
    d = make_driver(assignment_interval_ms=1_000, session_timeout_ms=3_000, heartbeat_interval_ms=1_000)
    d.create_topic("foo", 2)
    d.join("A")  # t=1000: epoch 2
    d.advance(500)
    d.join("B")  # t=1500: epoch 3, delayed
    d.advance(500)
    d.heartbeat("B", 2)  # t=2000: computes epoch 3
    g = d.coordinator.group("g")
    assert g.assignment_epoch == 3 and g.last_assignment_ms == 2_000
    d.advance(1_500)
    d.heartbeat("B", 3)  # t=3500
    d.advance(500)  # t=4000: A's session expires
    assert "A" not in g.members and (g.group_epoch, g.assignment_epoch) == (4, 3)
    assert g.state() == GroupState.ASSIGNING
    b = d.heartbeat("B", 3)
    assert (g.assignment_epoch, b.member_epoch) == (4, 4) and d.target("B") == {"foo": [0, 1]}
