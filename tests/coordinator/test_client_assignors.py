"""Client-side assignors on the coordinator (docs/assignor-protocol.md §3-§5; the KIP-848 seed's design).

Selection, the chosen member, ConsumerGroupPrepareAssignment and ConsumerGroupInstallAssignment
(checks, content, validation), the deadline, installs for an older epoch, Reason/metadata bumps,
AssignmentMetadata, and the seed's client-side flow as a case study.
"""

from __future__ import annotations

from typing import Any

import pytest

from kconsumer.broker.coordinator.context import client_assignment_timer
from kconsumer.broker.coordinator.model import GroupState, MemberAssignmentState
from kconsumer.broker.coordinator.records import GroupEpochRecord, TargetMemberRecord, TargetMetadataRecord
from kconsumer.errors import ErrorCode
from kconsumer.protocol.messages.consumer_group import (
    Assignor,
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    TopicPartitions,
)
from kconsumer.protocol.messages.extensions import (
    ConsumerGroupInstallAssignmentRequest,
    ConsumerGroupPrepareAssignmentRequest,
    InstalledMember,
)
from kconsumer.protocol.uuid import Uuid

REBALANCE_MS = 30_000


def ca(
    name: str = "sticky", low: int = 0, high: int = 2, reason: int = 0, version: int = 1, data: bytes = b""
) -> Assignor:
    return Assignor(
        name=name,
        minimum_version=low,
        maximum_version=high,
        reason=reason,
        metadata_version=version,
        metadata_bytes=data,
    )


def join(d: Any, member_id: str, *assignors: Assignor, topics: list[str] | None = None, **fields: Any) -> Any:
    fields.setdefault("rebalance_timeout_ms", REBALANCE_MS)
    return d.join(member_id, topics=topics, client_assignors=list(assignors), **fields)


def raw(d: Any, member_id: str, epoch: int, **fields: Any) -> Any:
    request = ConsumerGroupHeartbeatRequest(group_id="g", member_id=member_id, member_epoch=epoch, **fields)
    return d.coordinator.heartbeat(request, 1, d.now, "client", "/127.0.0.1")


def prepare(d: Any, member_id: str, epoch: int | None = None, group: str = "g") -> Any:
    if epoch is None:
        epoch = d.member(member_id).member_epoch
    request = ConsumerGroupPrepareAssignmentRequest(group_id=group, member_id=member_id, member_epoch=epoch)
    return d.coordinator.prepare_assignment(request, 0, d.now)


def install(
    d: Any,
    member_id: str,
    group_epoch: int,
    assignment: dict[str, dict[str, list[int]]],
    *,
    epoch: int | None = None,
    error: int = 0,
    metadata: dict[str, tuple[int, bytes]] | None = None,
    group: str = "g",
    raw_members: list[InstalledMember] | None = None,
) -> Any:
    if epoch is None:
        epoch = d.member(member_id).member_epoch
    members = raw_members
    if members is None:
        members = []
        for member, parts in assignment.items():
            version, data = (metadata or {}).get(member, (0, b""))
            topic_partitions = [
                TopicPartitions(topic_id=_id(d, name), partitions=sorted(p))
                for name, p in sorted(parts.items())
            ]
            members.append(
                InstalledMember(
                    member_id=member,
                    topic_partitions=topic_partitions,
                    metadata_version=version,
                    metadata_bytes=data,
                )
            )
    request = ConsumerGroupInstallAssignmentRequest(
        group_id=group,
        member_id=member_id,
        member_epoch=epoch,
        group_epoch=group_epoch,
        error=error,
        members=members,
    )
    return d.coordinator.install_assignment(request, 0, d.now)


def _id(d: Any, name: str) -> Uuid:
    return d.topic_id(name) if name in d.topics else Uuid.from_int(0x777)


def chosen(d: Any, group: str = "g") -> str | None:
    run = d.coordinator.client_runs.get(group)
    return None if run is None else run.chosen_member


def should_compute(d: Any, member_id: str) -> bool:
    response = d.heartbeat(member_id, d.member(member_id).member_epoch)
    assert response.error_code == 0
    value: bool = response.should_compute_assignment
    return value


def assignor_name(d: Any) -> str:
    response = d.coordinator.describe(ConsumerGroupDescribeRequest(group_ids=["g"]), 1, d.now).response
    name: str = response.groups[0].assignor_name
    return name


@pytest.fixture
def d(driver: Any) -> Any:
    driver.create_topic("foo", 4)
    return driver


def two_members(d: Any) -> None:
    """A and B both list sticky [0, 2] (metadata v1): A is asked to compute epoch 3."""
    join(d, "A", ca(data=b"a"))
    join(d, "B", ca(data=b"b"))
    g = d.coordinator.group("g")
    assert (g.group_epoch, g.assignment_epoch) == (3, 1)
    assert chosen(d) == "A"


# -- selection (§3.1) ----------------------------------------------------------------------------


def test_every_member_listing_the_assignor_selects_it(d: Any) -> None:
    response = join(d, "A", ca())
    g = d.coordinator.group("g")
    # No server-side computation: the target stays at the new group's empty epoch 1.
    assert (g.group_epoch, g.assignment_epoch) == (2, 1)
    assert response.should_compute_assignment is True
    assert (response.member_epoch, d.response_assignment(response)) == (1, {})
    assert chosen(d) == "A" and assignor_name(d) == "sticky"
    assert g.state() == GroupState.ASSIGNING


def test_a_member_without_it_means_server_side(d: Any) -> None:
    join(d, "A", ca())
    response = d.join("B")  # no client assignors
    g = d.coordinator.group("g")
    assert (g.group_epoch, g.assignment_epoch) == (3, 3)  # computed by the default server assignor
    assert chosen(d) is None and assignor_name(d) == "uniform"
    assert response.should_compute_assignment is False
    assert prepare(d, "A").response.error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_a_member_with_other_assignors_means_server_side(d: Any) -> None:
    join(d, "A", ca("x"))
    join(d, "B", ca("y"))
    assert chosen(d) is None and assignor_name(d) == "uniform"


def test_server_side_fallback_uses_the_most_common_server_assignor(d: Any) -> None:
    join(d, "A", ca())
    d.join("B", server_assignor="range")
    assert assignor_name(d) == "range"


def test_version_ranges_must_overlap(d: Any) -> None:
    join(d, "A", ca(low=0, high=1, version=1))
    join(d, "B", ca(low=2, high=3, version=2))
    assert chosen(d) is None and assignor_name(d) == "uniform"


def test_precedence_follows_the_members_list_order(d: Any) -> None:
    join(d, "A", ca("x"), ca("y"))
    join(d, "B", ca("x"), ca("y"))
    assert assignor_name(d) == "x" and d.coordinator.client_runs["g"].assignor == "x"


def test_precedence_across_members_with_different_orders(d: Any) -> None:
    """The members' list positions are summed (kconsumer's choice where members disagree; the
    extension says only that the list order is the precedence); ties go to the smaller name."""
    join(d, "A", ca("x"), ca("y"))
    join(d, "B", ca("y"), ca("x"))
    assert assignor_name(d) == "x"  # 1 : 1, then by name
    join(d, "C", ca("y"), ca("x"))
    assert assignor_name(d) == "y"  # x: 0+1+1, y: 1+0+0


def test_a_candidate_no_member_can_compute_is_skipped(d: Any) -> None:
    # x: A covers [0,1] and B [1,2] (they overlap), but A uses v0 and B v2: nobody covers both.
    join(d, "A", ca("x", low=0, high=1, version=0), ca("y"))
    join(d, "B", ca("x", low=1, high=2, version=2), ca("y"))
    assert assignor_name(d) == "y"


def test_no_candidate_anyone_can_compute_means_server_side(d: Any) -> None:
    join(d, "A", ca("x", low=0, high=1, version=0))
    join(d, "B", ca("x", low=1, high=2, version=2))
    assert chosen(d) is None and assignor_name(d) == "uniform"
    assert d.coordinator.group("g").assignment_epoch == 3


# -- the chosen member (§3.2) ----------------------------------------------------------------------


def test_the_chosen_member_covers_every_metadata_version(d: Any) -> None:
    join(d, "A", ca(low=0, high=1, version=1))
    join(d, "B", ca(low=0, high=2, version=2))
    assert chosen(d) == "B"  # A cannot read B's v2 metadata


def test_should_compute_until_prepare(d: Any) -> None:
    two_members(d)
    assert should_compute(d, "A") is True
    assert should_compute(d, "B") is False
    assert should_compute(d, "A") is True  # told again on every heartbeat
    assert prepare(d, "A").response.error_code == 0
    assert should_compute(d, "A") is False


def test_the_chosen_member_learns_it_in_the_response_that_chose_it(d: Any) -> None:
    join(d, "A", ca())
    response = join(d, "B", ca())
    assert chosen(d) == "A" and response.should_compute_assignment is False
    assert should_compute(d, "A") is True


def test_a_chosen_member_that_leaves_is_replaced(d: Any) -> None:
    two_members(d)
    d.heartbeat("A", -1)
    assert "g" not in d.coordinator.client_runs
    assert d.coordinator.timers.get(client_assignment_timer("g")) is None
    response = d.heartbeat("B", d.member("B").member_epoch)
    assert chosen(d) == "B" and response.should_compute_assignment is True


# -- ConsumerGroupPrepareAssignment --------------------------------------------------------------


def test_prepare_checks_in_order(d: Any) -> None:
    two_members(d)

    def code(member: str, epoch: int, group: str = "g") -> tuple[int, str | None]:
        result = prepare(d, member, epoch, group)
        assert result.records == []
        return result.response.error_code, result.response.error_message

    assert code("A", 1, group="nope") == (ErrorCode.GROUP_ID_NOT_FOUND, "Group nope not found.")
    assert code("Z", 99) == (ErrorCode.UNKNOWN_MEMBER_ID, "Member Z is not a member of g.")
    assert code("A", 99) == (
        ErrorCode.STALE_MEMBER_EPOCH,
        "Member epoch 99 does not match the current epoch 1.",
    )
    assert code("B", 1) == (
        ErrorCode.UNKNOWN_MEMBER_ID,
        "Member B is not the member chosen to compute the assignment.",
    )
    assert code("B", 99)[0] == ErrorCode.STALE_MEMBER_EPOCH  # the epoch is checked before the choice
    assert code("A", 1) == (0, None)


def test_prepare_without_a_computation_pending(d: Any) -> None:
    d.join("A")
    assert prepare(d, "A").response.error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_prepare_content(d: Any) -> None:
    d.create_topic("bar", 2)
    d.create_topic("other", 1)
    join(
        d,
        "A",
        ca(data=b"a", version=1, reason=3),
        ca("other-assignor", data=b"zzz"),
        instance_id="iA",
        rack_id="r",
    )
    join(d, "B", ca(data=b"b", version=2), topics=["foo", "bar"])
    join(d, "C", ca(), topics=None, subscribed_topic_names=None, subscribed_topic_regex="ba.")
    g = d.coordinator.group("g")
    assert chosen(d) == "A"
    response = prepare(d, "A").response
    assert response.error_code == 0 and response.error_message is None
    # C's join bumps (its assignors are new), then the resolution of its regex after the answer.
    assert (response.group_epoch, response.assignor_name) == (g.group_epoch, "sticky") == (5, "sticky")
    members = {m.member_id: m for m in response.members}
    assert list(members) == ["A", "B", "C"]
    a, b, c = members["A"], members["B"], members["C"]
    assert (a.member_epoch, a.instance_id, a.rack_id) == (1, "iA", "r")
    assert (b.instance_id, b.rack_id) == (None, None)
    foo, bar = d.topic_id("foo"), d.topic_id("bar")
    assert a.subscribed_topic_ids == [foo]
    assert sorted(b.subscribed_topic_ids) == sorted([foo, bar])
    assert c.subscribed_topic_ids == [bar]  # through its regex
    # The metadata of the selected assignor only.
    assert (a.assignor.reason, a.assignor.metadata_version, a.assignor.metadata_bytes) == (3, 1, b"a")
    assert (b.assignor.reason, b.assignor.metadata_version, b.assignor.metadata_bytes) == (0, 2, b"b")
    assert all(m.topic_partitions == [] for m in response.members)  # no target yet
    topics = {t.topic_id: (t.topic_name, t.num_partitions) for t in response.topics}
    assert topics == {foo: ("foo", 4), bar: ("bar", 2)}  # subscribed topics only


def test_prepare_lists_the_current_targets(d: Any) -> None:
    two_members(d)
    prepare(d, "A")
    assert install(d, "A", 3, {"A": {"foo": [0, 1]}, "B": {"foo": [2, 3]}}).response.error_code == 0
    join(d, "C", ca())
    assert chosen(d) == "A"
    response = prepare(d, "A").response
    targets = {
        m.member_id: [(tp.topic_id, tp.partitions) for tp in m.topic_partitions] for m in response.members
    }
    foo = d.topic_id("foo")
    assert targets == {"A": [(foo, [0, 1])], "B": [(foo, [2, 3])], "C": []}


# -- ConsumerGroupInstallAssignment: checks ------------------------------------------------------


def test_install_checks_in_order(d: Any) -> None:
    two_members(d)
    prepare(d, "A")
    good = {"A": {"foo": [0, 1]}, "B": {"foo": [2, 3]}}

    def code(member: str, epoch: int, group: str = "g") -> int:
        result = install(d, member, 3, good, epoch=epoch, group=group)
        value: int = result.response.error_code
        assert value == 0 or result.records == []
        return value

    assert code("A", 1, group="nope") == ErrorCode.GROUP_ID_NOT_FOUND
    assert code("Z", 1) == ErrorCode.UNKNOWN_MEMBER_ID
    assert code("A", 7) == ErrorCode.STALE_MEMBER_EPOCH
    assert code("B", 1) == ErrorCode.UNKNOWN_MEMBER_ID
    assert code("A", 1) == ErrorCode.NONE


def test_install_needs_a_prepared_epoch(d: Any) -> None:
    two_members(d)
    result = install(d, "A", 3, {"A": {"foo": [0, 1, 2, 3]}})
    assert result.response.error_code == ErrorCode.INVALID_REQUEST
    assert result.response.error_message == (
        "GroupEpoch 3 was not prepared: call ConsumerGroupPrepareAssignment first."
    )
    prepare(d, "A")
    result = install(d, "A", 2, {"A": {"foo": [0, 1, 2, 3]}})
    assert result.response.error_code == ErrorCode.INVALID_REQUEST


def test_install_succeeds(d: Any) -> None:
    two_members(d)
    prepare(d, "A")
    result = install(d, "A", 3, {"A": {"foo": [0, 1]}, "B": {"foo": [2, 3]}}, metadata={"A": (1, b"x")})
    assert (result.response.error_code, result.response.error_message) == (0, None)
    kinds = [type(r) for r in result.records]
    assert kinds == [TargetMemberRecord, TargetMemberRecord, TargetMetadataRecord]
    g = d.coordinator.group("g")
    assert (g.group_epoch, g.assignment_epoch) == (3, 3)
    assert (d.target("A"), d.target("B")) == ({"foo": [0, 1]}, {"foo": [2, 3]})
    assert "g" not in d.coordinator.client_runs
    assert d.coordinator.timers.get(client_assignment_timer("g")) is None
    assert should_compute(d, "A") is False
    # Installing the same epoch twice is refused.
    assert install(d, "A", 3, {"A": {"foo": [0, 1, 2, 3]}}).response.error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_an_install_naming_a_static_member_replaced_since_the_prepare_assigns_its_replacement(d: Any) -> None:
    """Simulation seed 1230916: the partitions installed for a static member's old incarnation
    stayed with that gone member id, the new incarnation (no new group epoch) got nothing."""
    join(d, "A", ca(data=b"a"))
    join(d, "B", ca(data=b"b"), instance_id="iB")
    assert chosen(d) == "A"
    epoch = prepare(d, "A").response.group_epoch
    assert raw(d, "B", -2, instance_id="iB").response.error_code == 0  # B leaves for a while
    join(d, "B2", ca(data=b"b"), instance_id="iB")  # its next incarnation takes its place
    assert d.coordinator.group("g").group_epoch == epoch
    result = install(d, "A", epoch, {"A": {"foo": [0, 1]}, "B": {"foo": [2, 3]}})
    assert result.response.error_code == 0
    assert d.target("B2") == {"foo": [2, 3]} and d.target("A") == {"foo": [0, 1]}


# -- ConsumerGroupInstallAssignment: validation rules --------------------------------------------


def invalid(d: Any, assignment: dict[str, dict[str, list[int]]], rule: str, **kw: Any) -> str:
    before = d.coordinator.state.snapshot()
    result = install(d, "A", 3, assignment, **kw)
    assert result.response.error_code == ErrorCode.INVALID_REQUEST
    message: str = result.response.error_message
    assert message.startswith(f"Invalid assignment (rule: {rule}): "), message
    assert result.records == [] and d.coordinator.state.snapshot() == before
    assert chosen(d) == "A"  # the member may try again
    return message


@pytest.fixture
def prepared(d: Any) -> Any:
    d.create_topic("bar", 2)
    join(d, "A", ca(), topics=["foo", "bar"])
    join(d, "B", ca(), topics=["foo"])
    prepare(d, "A")
    return d


def test_every_partition_must_be_assigned(prepared: Any) -> None:
    d = prepared
    message = invalid(
        d,
        {"A": {"foo": [0, 1], "bar": [0]}, "B": {"foo": [2]}},
        "every partition of every subscribed topic assigned",
    )
    assert "[3]" in message or "[1]" in message


def test_a_partition_must_be_assigned_once(prepared: Any) -> None:
    d = prepared
    message = invalid(
        d,
        {"A": {"foo": [0, 1], "bar": [0, 1]}, "B": {"foo": [1, 2, 3]}},
        "each partition assigned exactly once",
    )
    assert message.endswith("is assigned to A and B")


def test_only_to_subscribed_members(prepared: Any) -> None:
    d = prepared
    message = invalid(
        d,
        {"A": {"foo": [0, 1]}, "B": {"foo": [2, 3], "bar": [0, 1]}},
        "only to members subscribed to the topic",
    )
    assert message.endswith(f"member B does not subscribe to topic {d.topic_id('bar')}")


def test_only_members_of_the_prepared_epoch(prepared: Any) -> None:
    d = prepared
    message = invalid(
        d,
        {"A": {"foo": [0, 1], "bar": [0, 1]}, "B": {"foo": [2]}, "Z": {"foo": [3]}},
        "only members of the group at the prepared epoch",
    )
    assert message.endswith("member Z was not a member at epoch 3")


def test_only_subscribed_topics(prepared: Any) -> None:
    d = prepared
    d.create_topic("unsubscribed", 1)
    invalid(
        d,
        {"A": {"foo": [0, 1], "bar": [0, 1], "unsubscribed": [0]}, "B": {"foo": [2, 3]}},
        "only subscribed topics",
    )


def test_only_existing_partitions(prepared: Any) -> None:
    d = prepared
    message = invalid(
        d, {"A": {"foo": [0, 1], "bar": [0, 1, 2]}, "B": {"foo": [2, 3]}}, "only existing partitions"
    )
    assert message.endswith("has 2 partitions, got partition 2")


def test_one_entry_per_member(prepared: Any) -> None:
    d = prepared
    foo = d.topic_id("foo")
    members = [
        InstalledMember(member_id="A", topic_partitions=[TopicPartitions(topic_id=foo, partitions=[0])]),
        InstalledMember(member_id="A", topic_partitions=[TopicPartitions(topic_id=foo, partitions=[1])]),
    ]
    invalid(d, {}, "one entry per member", raw_members=members)


def test_members_left_out_get_nothing(prepared: Any) -> None:
    d = prepared
    result = install(d, "A", 3, {"A": {"foo": [0, 1, 2, 3], "bar": [0, 1]}})
    assert result.response.error_code == 0
    assert d.target("B") == {}


def test_validation_is_against_the_prepared_state(prepared: Any) -> None:
    """A member that left after Prepare may still be in the installed assignment; it gets nothing
    (it is gone) and the group computes again at once."""
    d = prepared
    d.heartbeat("B", -1)
    g = d.coordinator.group("g")
    assert g.group_epoch == 4
    result = install(d, "A", 3, {"A": {"foo": [0, 1], "bar": [0, 1]}, "B": {"foo": [2, 3]}})
    assert result.response.error_code == 0
    assert g.assignment_epoch == 3 and "B" not in g.target
    assert chosen(d) == "A" and should_compute(d, "A") is True


# -- the deadline (§3.2) ---------------------------------------------------------------------------


def test_deadline_chooses_another_member_without_fencing(d: Any) -> None:
    two_members(d)
    started = d.now
    assert d.coordinator.timers.get(client_assignment_timer("g")) == (started + REBALANCE_MS, None)
    assert d.coordinator.next_deadline() == started + REBALANCE_MS
    prepare(d, "A")  # A prepares but never installs
    d.advance(REBALANCE_MS - 1)
    d.heartbeat("A", 1)
    d.heartbeat("B", 1)
    assert chosen(d) == "A"
    d.advance(1)
    assert chosen(d) == "B"
    g = d.coordinator.group("g")
    assert set(g.members) == {"A", "B"} and g.group_epoch == 3  # A is not fenced
    assert should_compute(d, "B") is True and should_compute(d, "A") is False
    # A's late install is refused; B's goes through.
    late = install(d, "A", 3, {"A": {"foo": [0, 1]}, "B": {"foo": [2, 3]}})
    assert late.response.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert prepare(d, "B").response.error_code == 0
    assert install(d, "B", 3, {"A": {"foo": [0, 1]}, "B": {"foo": [2, 3]}}).response.error_code == 0


def test_deadline_is_the_chosen_members_rebalance_timeout(d: Any) -> None:
    join(d, "A", ca(), rebalance_timeout_ms=1_000)
    join(d, "B", ca(), rebalance_timeout_ms=50_000)
    assert chosen(d) == "A"
    d.advance(1_000)
    assert chosen(d) == "B"
    assert d.coordinator.timers.get(client_assignment_timer("g")) == (d.now + 50_000, None)


def test_deadline_with_a_single_member_asks_it_again(d: Any) -> None:
    join(d, "A", ca())
    d.advance(REBALANCE_MS)
    assert chosen(d) == "A" and should_compute(d, "A") is True


def test_deadline_after_the_group_moved_to_server_side(d: Any) -> None:
    two_members(d)
    d.join("C")  # no client assignor: server side
    d.advance(REBALANCE_MS)
    assert chosen(d) is None


# -- installing for an older epoch ---------------------------------------------------------------


def test_install_for_an_older_epoch_then_recompute_at_once(d: Any) -> None:
    two_members(d)
    prepare(d, "A")
    join(d, "C", ca())  # epoch 4 while A computes epoch 3
    g = d.coordinator.group("g")
    assert g.group_epoch == 4
    result = install(d, "A", 3, {"A": {"foo": [0, 1]}, "B": {"foo": [2, 3]}})
    assert result.response.error_code == 0
    assert g.assignment_epoch == 3 and d.target("C") == {}
    # A new computation is requested from A at once, with a fresh deadline.
    assert chosen(d) == "A" and should_compute(d, "A") is True
    assert d.coordinator.timers.get(client_assignment_timer("g")) == (d.now + REBALANCE_MS, None)
    response = prepare(d, "A").response
    assert response.group_epoch == 4 and [m.member_id for m in response.members] == ["A", "B", "C"]
    a_epoch = d.member("A").member_epoch
    assert install(d, "A", 4, {"A": {"foo": [0]}, "B": {"foo": [2, 3]}, "C": {"foo": [1]}}, epoch=a_epoch)
    assert g.assignment_epoch == 4 and d.target("C") == {"foo": [1]}
    assert chosen(d) is None


# -- Reason and metadata changes (§3.3) ------------------------------------------------------------


def bumps(d: Any, member: str, *assignors: Assignor) -> list[int]:
    result = raw(d, member, d.member(member).member_epoch, client_assignors=list(assignors))
    assert result.response.error_code == 0
    return [r.epoch for r in result.records if isinstance(r, GroupEpochRecord)]


def test_reason_and_metadata_changes_bump(d: Any) -> None:
    two_members(d)
    prepare(d, "A")
    install(d, "A", 3, {"A": {"foo": [0, 1]}, "B": {"foo": [2, 3]}})
    assert bumps(d, "B", ca(data=b"b")) == []  # unchanged
    assert bumps(d, "B", ca(data=b"b", reason=1)) == [4]  # a non-zero Reason asks for a new assignment
    assert bumps(d, "B", ca(data=b"b", reason=1)) == []  # the same Reason again: nothing new
    assert bumps(d, "B", ca(data=b"b", reason=2)) == [5]
    assert bumps(d, "B", ca(data=b"b", reason=0)) == []  # back to zero: no new assignment
    assert bumps(d, "B", ca(data=b"new")) == [6]  # metadata bytes
    assert bumps(d, "B", ca(data=b"new", version=2)) == [7]  # metadata version
    # Null ClientAssignors: unchanged.
    result = raw(d, "B", d.member("B").member_epoch)
    assert not any(isinstance(r, GroupEpochRecord) for r in result.records)


def test_a_bump_asks_the_chosen_member_again(d: Any) -> None:
    two_members(d)
    prepare(d, "A")
    install(d, "A", 3, {"A": {"foo": [0, 1]}, "B": {"foo": [2, 3]}})
    assert chosen(d) is None
    bumps(d, "B", ca(data=b"b", reason=1))
    assert chosen(d) == "A" and should_compute(d, "A") is True


# -- AssignmentMetadata --------------------------------------------------------------------------


def test_assignment_metadata_comes_with_the_assignment(d: Any) -> None:
    two_members(d)
    prepare(d, "A")
    install(
        d,
        "A",
        3,
        {"A": {"foo": [0, 1]}, "B": {"foo": [2, 3]}},
        error=5,
        metadata={"A": (1, b"for-a"), "B": (2, b"for-b")},
    )
    a = d.heartbeat("A", 1, owned={})
    assert (a.member_epoch, d.response_assignment(a)) == (3, {"foo": [0, 1]})
    meta = a.assignment_metadata
    assert (meta.error, meta.metadata_version, meta.metadata_bytes) == (5, 1, b"for-a")
    b = d.heartbeat("B", 1, owned={})
    meta = b.assignment_metadata
    assert (meta.error, meta.metadata_version, meta.metadata_bytes) == (5, 2, b"for-b")
    # Without an Assignment, no AssignmentMetadata.
    again = d.heartbeat("A", 3, owned={"foo": [0, 1]})
    assert again.assignment is None and again.assignment_metadata is None
    # A rejoin gets both again.
    rejoin = join(d, "A", ca(data=b"a"))
    assert rejoin.assignment_metadata is not None and rejoin.assignment_metadata.metadata_bytes == b"for-a"


def test_no_assignment_metadata_from_server_side_assignors(d: Any) -> None:
    response = d.join("A")
    assert response.assignment is not None and response.assignment_metadata is None


def test_assignment_metadata_comes_when_the_epoch_moves_without_new_partitions(d: Any) -> None:
    # A only gives partitions up: once it acknowledged, its epoch moves and it gets its metadata
    # for that epoch (on_assignment once per epoch) though its partitions do not change again.
    join(d, "A", ca())
    prepare(d, "A")
    install(d, "A", 2, {"A": {"foo": [0, 1, 2, 3]}}, metadata={"A": (1, b"all")})
    d.heartbeat("A", 1, owned={})
    join(d, "B", ca())
    d.heartbeat("A", 2, owned={"foo": [0, 1, 2, 3]})
    prepare(d, "A")
    install(d, "A", 3, {"A": {"foo": [0, 1]}, "B": {"foo": [2, 3]}}, metadata={"A": (1, b"half")})
    told = d.heartbeat("A", 2, owned={"foo": [0, 1, 2, 3]})
    assert told.member_epoch == 2 and told.assignment_metadata is None
    acked = d.heartbeat("A", 2, owned={"foo": [0, 1]})
    assert (acked.member_epoch, d.response_assignment(acked)) == (3, {"foo": [0, 1]})
    assert acked.assignment_metadata.metadata_bytes == b"half" and acked.pending_topic_partitions == []
    # Nothing changes any more: no assignment, no metadata.
    again = d.heartbeat("A", 3, owned={"foo": [0, 1]})
    assert again.assignment is None and again.assignment_metadata is None


def test_assignment_metadata_comes_when_the_partitions_do(d: Any) -> None:
    # B waits for partitions A still owns: its (empty) assignment does not change, so nothing is
    # sent; its metadata comes with the partitions.
    join(d, "A", ca())
    prepare(d, "A")
    install(d, "A", 2, {"A": {"foo": [0, 1, 2, 3]}})
    d.heartbeat("A", 1, owned={})
    assert d.assigned("A") == {"foo": [0, 1, 2, 3]}
    join(d, "B", ca())
    prepare(d, "A")
    install(d, "A", 3, {"A": {"foo": [0, 1]}, "B": {"foo": [2, 3]}}, metadata={"B": (1, b"b")})
    b = d.heartbeat("B", d.member("B").member_epoch, owned={})
    assert b.member_epoch == 3 and d.member("B").state == MemberAssignmentState.UNRELEASED_PARTITIONS
    assert b.assignment is None and b.assignment_metadata is None
    d.heartbeat("A", 2, owned={"foo": [0, 1, 2, 3]})
    d.heartbeat("A", 2, owned={"foo": [0, 1]})
    b = d.heartbeat("B", 3, owned={})
    assert d.response_assignment(b) == {"foo": [2, 3]}
    assert b.assignment_metadata is not None and b.assignment_metadata.metadata_bytes == b"b"
    assert b.pending_topic_partitions == []


# -- the seed's client-side flow, step by step ---------------------------------------------------


def test_case_study_client_side_assignment(d: Any) -> None:
    """The seed's "Client-Side Mode": the coordinator picks a member and tells it through the
    heartbeat; the member gets the group state with PrepareAssignment, runs its assignor and
    installs the result; every member then reconciles to exactly that assignment, revoking before
    anything is reassigned."""
    g = d.coordinator.group
    foo = d.topic_id("foo")

    # 1. A joins with a client-side assignor. The group (epoch 2) needs an assignment; A is asked.
    a = join(d, "A", ca(data=b"lag=0"))
    assert (g("g").group_epoch, g("g").assignment_epoch) == (2, 1)
    assert a.should_compute_assignment is True and (a.member_epoch, d.response_assignment(a)) == (1, {})

    # 2. A prepares: the group as the assignor must see it.
    state = prepare(d, "A").response
    assert (state.group_epoch, state.assignor_name) == (2, "sticky")
    assert [(m.member_id, m.subscribed_topic_ids, m.assignor.metadata_bytes) for m in state.members] == [
        ("A", [foo], b"lag=0")
    ]
    assert [(t.topic_name, t.num_partitions) for t in state.topics] == [("foo", 4)]

    # 3. A computes (everything to itself) and installs.
    assert (
        install(d, "A", 2, {"A": {"foo": [0, 1, 2, 3]}}, metadata={"A": (1, b"tasks=4")}).response.error_code
        == 0
    )
    assert g("g").assignment_epoch == 2

    # 4. A heartbeats: epoch 2, all partitions, with its assignment metadata.
    a = d.heartbeat("A", 1, owned={})
    assert (a.member_epoch, d.response_assignment(a)) == (2, {"foo": [0, 1, 2, 3]})
    assert a.assignment_metadata.metadata_bytes == b"tasks=4" and a.should_compute_assignment is False

    # 5. B joins: epoch 3. A (first member covering every metadata version) is asked again.
    b = join(d, "B", ca(data=b"lag=7"))
    assert g("g").group_epoch == 3 and chosen(d) == "A"
    assert (b.member_epoch, d.response_assignment(b)) == (2, {})  # B is at the installed epoch, with nothing
    a = d.heartbeat("A", 2, owned={"foo": [0, 1, 2, 3]})
    assert a.should_compute_assignment is True and a.assignment is None

    # 6. A prepares and installs its split: A keeps 0 and 2, B gets 1 and 3.
    state = prepare(d, "A").response
    assert [(m.member_id, m.assignor.metadata_bytes) for m in state.members] == [
        ("A", b"lag=0"),
        ("B", b"lag=7"),
    ]
    assert [(m.member_id, [tp.partitions for tp in m.topic_partitions]) for m in state.members] == [
        ("A", [[0, 1, 2, 3]]),
        ("B", []),
    ]
    split = {"A": {"foo": [0, 2]}, "B": {"foo": [1, 3]}}
    assert install(d, "A", 3, split, metadata={"A": (1, b"a"), "B": (1, b"b")}).response.error_code == 0
    assert (d.target("A"), d.target("B")) == ({"foo": [0, 2]}, {"foo": [1, 3]})

    # 7. B heartbeats first: it moves to epoch 3 but cannot have 1 and 3 yet.
    b = d.heartbeat("B", 2, owned={})
    assert b.member_epoch == 3 and d.assigned("B") == {}
    assert d.member("B").state == MemberAssignmentState.UNRELEASED_PARTITIONS

    # 8. A is told to revoke 1 and 3 (epoch stays 2), then acknowledges: epoch 3, with its
    #    assignment metadata for epoch 3 (its partitions did not change again).
    a = d.heartbeat("A", 2, owned={"foo": [0, 1, 2, 3]})
    assert (a.member_epoch, d.response_assignment(a)) == (2, {"foo": [0, 2]})
    assert a.assignment_metadata is None
    assert d.pending("A") == {"foo": [1, 3]}
    a = d.heartbeat("A", 2, owned={"foo": [0, 2]})
    assert (a.member_epoch, d.response_assignment(a)) == (3, {"foo": [0, 2]})
    assert a.assignment_metadata.metadata_bytes == b"a"

    # 9. B gets 1 and 3 with its metadata. The group is stable with exactly the installed assignment.
    b = d.heartbeat("B", 3, owned={})
    assert (b.member_epoch, d.response_assignment(b)) == (3, {"foo": [1, 3]})
    assert b.assignment_metadata.metadata_bytes == b"b"
    assert (d.assigned("A"), d.assigned("B")) == ({"foo": [0, 2]}, {"foo": [1, 3]})
    assert g("g").state() == GroupState.STABLE and chosen(d) is None
