"""The KIP-848 seed's case studies (seeds/000_d20c13cc3a263702.txt, "Case Studies"), step by step.

Kafka 4.3 differs from the seed's drawings in one way that shows in every epoch below: a new group
starts at epoch 1 with an empty target at epoch 1 (KAFKA-20268), so the first computed assignment
is epoch 2, and each later event is one epoch higher than the seed's numbers. The seed also lets a
member move to the new epoch while still waiting for partitions it cannot have yet; Kafka (and we)
do the same (UNRELEASED_PARTITIONS at the target epoch). Where the seed's second study starts
from epoch 21, we build the same group from scratch and note the epochs we get.
"""

from __future__ import annotations

from typing import Any

from kconsumer.broker.coordinator.model import GroupState, MemberAssignmentState


def test_new_members_joining(driver: Any) -> None:
    d = driver
    d.create_topic("foo", 3)

    # A joins: group epoch 2 (4.3: the group was created at 1), A gets everything at once.
    a = d.join("A")
    assert (a.member_epoch, d.response_assignment(a)) == (2, {"foo": [0, 1, 2]})
    g = d.coordinator.group("g")
    assert (g.group_epoch, g.assignment_epoch) == (2, 2)

    # B joins: epoch 3; target A=[0,1], B=[2]. B moves to epoch 3 but cannot have foo-2 yet.
    b = d.join("B")
    assert (g.group_epoch, g.assignment_epoch) == (3, 3)
    assert d.target("A") == {"foo": [0, 1]} and d.target("B") == {"foo": [2]}
    assert (b.member_epoch, d.response_assignment(b)) == (3, {})
    assert d.member("B").state == MemberAssignmentState.UNRELEASED_PARTITIONS

    # A heartbeats: told to revoke foo-2 (assignment shrinks, epoch stays 2).
    a = d.heartbeat("A", 2, owned={"foo": [0, 1, 2]})
    assert (a.member_epoch, d.response_assignment(a)) == (2, {"foo": [0, 1]})
    assert d.pending("A") == {"foo": [2]}
    assert d.member("A").state == MemberAssignmentState.UNREVOKED_PARTITIONS

    # B heartbeats meanwhile: still nothing, foo-2 is not released.
    b = d.heartbeat("B", 3, owned={})
    assert d.assigned("B") == {} and b.assignment is None

    # A acknowledges: epoch 3, foo-2 released.
    a = d.heartbeat("A", 2, owned={"foo": [0, 1]})
    assert a.member_epoch == 3 and d.pending("A") == {}
    # B heartbeats: gets foo-2.
    b = d.heartbeat("B", 3, owned={})
    assert (b.member_epoch, d.response_assignment(b)) == (3, {"foo": [2]})
    assert g.state() == GroupState.STABLE

    # C joins: epoch 4; target A=[0], B=[2], C=[1].
    c = d.join("C")
    assert g.group_epoch == 4
    assert (d.target("A"), d.target("B"), d.target("C")) == ({"foo": [0]}, {"foo": [2]}, {"foo": [1]})
    assert (c.member_epoch, d.response_assignment(c)) == (4, {})
    # B has nothing to revoke: straight to epoch 4.
    b = d.heartbeat("B", 3, owned={"foo": [2]})
    assert b.member_epoch == 4 and d.assigned("B") == {"foo": [2]}
    # A is told to revoke foo-1, then acknowledges.
    a = d.heartbeat("A", 3, owned={"foo": [0, 1]})
    assert (a.member_epoch, d.response_assignment(a)) == (3, {"foo": [0]})
    a = d.heartbeat("A", 3, owned={"foo": [0]})
    assert a.member_epoch == 4
    c = d.heartbeat("C", 4, owned={})
    assert (c.member_epoch, d.response_assignment(c)) == (4, {"foo": [1]})
    # All members have advanced to the group epoch.
    assert {m: d.member(m).member_epoch for m in "ABC"} == {"A": 4, "B": 4, "C": 4}
    assert g.state() == GroupState.STABLE


def _stable_pair(d: Any) -> None:
    """A owns foo-0..2 and B foo-3..5 (the seed's starting point at its epoch 21)."""
    d.create_topic("foo", 6)
    d.join("A")
    d.join("B")
    d.heartbeat("A", 2, owned={"foo": range(6)})
    d.heartbeat("A", 2, owned={"foo": [0, 1, 2]})
    d.heartbeat("B", 3, owned={})
    assert d.assigned("A") == {"foo": [0, 1, 2]} and d.assigned("B") == {"foo": [3, 4, 5]}
    assert {m: d.member(m).member_epoch for m in "AB"} == {"A": 3, "B": 3}


def test_third_member_joining_waits_for_two_revocations(driver: Any) -> None:
    d = driver
    _stable_pair(d)
    g = d.coordinator.group("g")

    d.join("C")  # seed's epoch 22 is our 4
    assert g.group_epoch == 4
    assert (d.target("A"), d.target("B"), d.target("C")) == (
        {"foo": [0, 1]},
        {"foo": [3, 4]},
        {"foo": [2, 5]},
    )
    assert d.member("C").member_epoch == 4 and d.assigned("C") == {}

    d.heartbeat("A", 3, owned={"foo": [0, 1, 2]})  # told to revoke foo-2
    d.heartbeat("B", 3, owned={"foo": [3, 4, 5]})  # told to revoke foo-5
    assert d.pending("A") == {"foo": [2]} and d.pending("B") == {"foo": [5]}
    c = d.heartbeat("C", 4, owned={})
    assert c.assignment is None  # no change for C

    a = d.heartbeat("A", 3, owned={"foo": [0, 1]})  # acknowledges: epoch 4, foo-2 released
    assert a.member_epoch == 4 and d.assigned("A") == {"foo": [0, 1]}
    c = d.heartbeat("C", 4, owned={})  # gets foo-2, still waits for foo-5
    assert d.response_assignment(c) == {"foo": [2]}
    assert d.member("C").state == MemberAssignmentState.UNRELEASED_PARTITIONS

    b = d.heartbeat("B", 3, owned={"foo": [3, 4]})
    assert b.member_epoch == 4
    c = d.heartbeat("C", 4, owned={"foo": [2]})
    assert d.response_assignment(c) == {"foo": [2, 5]}
    assert d.member("C").state == MemberAssignmentState.STABLE
    assert g.state() == GroupState.STABLE


def test_member_failure(driver: Any) -> None:
    d = driver
    _stable_pair(d)
    d.join("C")
    d.heartbeat("A", 3, owned={"foo": [0, 1, 2]})
    d.heartbeat("A", 3, owned={"foo": [0, 1]})
    d.heartbeat("B", 3, owned={"foo": [3, 4, 5]})
    d.heartbeat("B", 3, owned={"foo": [3, 4]})
    d.heartbeat("C", 4, owned={})
    g = d.coordinator.group("g")
    assert {m: d.assigned(m) for m in "ABC"} == {
        "A": {"foo": [0, 1]},
        "B": {"foo": [3, 4]},
        "C": {"foo": [2, 5]},
    }

    # B and C keep heartbeating; A does not. After the session timeout A is removed: epoch 5.
    while "A" in g.members:
        d.advance(1_000)
        if "A" in g.members:
            assert d.heartbeat("B", 4).member_epoch == 4
            assert d.heartbeat("C", 4).member_epoch == 4
    assert g.group_epoch == 5 and g.assignment_epoch == 4
    # The next heartbeats compute the target (B and C take foo-0 and foo-1) and move them to epoch 5.
    b = d.heartbeat("B", 4)
    c = d.heartbeat("C", 4)
    assert d.target("B") == {"foo": [0, 3, 4]} and d.target("C") == {"foo": [1, 2, 5]}
    assert (b.member_epoch, d.response_assignment(b)) == (5, {"foo": [0, 3, 4]})
    assert (c.member_epoch, d.response_assignment(c)) == (5, {"foo": [1, 2, 5]})
    assert g.state() == GroupState.STABLE


def test_partition_added(driver: Any) -> None:
    d = driver
    d.create_topic("foo", 1)
    d.join("A")
    d.join("B")
    d.heartbeat("A", 2, owned={"foo": [0]})
    d.heartbeat("B", 3, owned={})
    d.heartbeat("A", 2, owned={"foo": [0]})
    g = d.coordinator.group("g")
    assert (d.assigned("A"), d.assigned("B"), g.group_epoch) == ({"foo": [0]}, {}, 3)

    d.set_partitions("foo", 2)  # detected: the group epoch is bumped
    assert g.group_epoch == 4 and g.assignment_epoch == 3
    a = d.heartbeat("A", 3)  # computes the target; A keeps foo-0 at epoch 4
    assert d.target("A") == {"foo": [0]} and d.target("B") == {"foo": [1]}
    assert a.member_epoch == 4
    b = d.heartbeat("B", 3)
    assert (b.member_epoch, d.response_assignment(b)) == (4, {"foo": [1]})
