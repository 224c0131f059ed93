"""Failover: a coordinator rebuilt from another's record log (`GroupCoordinator.replaying`) has the
same state, re-arms its timers, and carries on exactly as the original would."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kconsumer.broker.coordinator import GroupCoordinator
from kconsumer.broker.coordinator.context import rebalance_timer, session_timer
from kconsumer.broker.coordinator.model import GroupState, MemberAssignmentState
from kconsumer.errors import ErrorCode
from kconsumer.protocol.messages.consumer_group import Assignor
from kconsumer.protocol.messages.extensions import (
    ConsumerGroupInstallAssignmentRequest,
    ConsumerGroupPrepareAssignmentRequest,
    InstalledMember,
)
from kconsumer.protocol.messages.offsets import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)

SESSION_MS = 45_000


def replayed(d: Any, make_driver: Any, now: int | None = None) -> Any:
    """A second driver whose coordinator was loaded from `d`'s log (same config, image, topics, clock)."""
    twin = make_driver()
    twin.now = d.now if now is None else now
    twin.topics = dict(d.topics)
    twin._version = d._version
    twin._next_id = d._next_id
    twin.coordinator = GroupCoordinator.replaying(d.coordinator.log, twin.now, d.config, d.coordinator.image)
    return twin


def assert_same_state(left: Any, right: Any) -> None:
    a, b = left.coordinator.state, right.coordinator.state
    assert a.snapshot() == b.snapshot()
    for group_id, group in a.groups.items():
        other = b.groups[group_id]
        assert group.subscribed_names == other.subscribed_names
        assert group.subscribed_regexes == other.subscribed_regexes
        assert group.static_members == other.static_members
        assert group.state() == other.state()


def commit(d: Any, group: str, member: str, epoch: int, partitions: list[int], offset: int) -> int:
    topic = OffsetCommitRequestTopic(
        name="foo",
        partitions=[
            OffsetCommitRequestPartition(partition_index=p, committed_offset=offset) for p in partitions
        ],
    )
    request = OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=epoch, member_id=member, topics=[topic]
    )
    code: int = d.coordinator.offset_commit(request, 9, d.now).response.topics[0].partitions[0].error_code
    return code


def busy_group(d: Any) -> None:
    """Members in every state, offsets, a regex, a static member away and a simple group."""
    d.create_topic("foo", 6)
    d.create_topic("bar", 2)
    d.join("A")
    d.join("B")
    d.heartbeat("A", 2, owned={"foo": range(6)})
    d.heartbeat("A", 2, owned={"foo": [0, 1, 2]})
    d.heartbeat("B", 3, owned={})
    d.join("S", instance_id="static-1", rack_id="r1")
    d.join("R", subscribed_topic_names=None, subscribed_topic_regex="ba.")
    d.heartbeat("A", 3, owned={"foo": [0, 1, 2]})  # A is told to revoke
    d.heartbeat("S", -2, instance_id="static-1")  # S is away
    assert commit(d, "g", "B", 3, [3], 33) == 0
    assert commit(d, "admin", "", -1, [0, 1], 7) == 0
    states = {m: d.member(m).state for m in "ABR"}
    assert states == {
        "A": MemberAssignmentState.UNREVOKED_PARTITIONS,
        "B": MemberAssignmentState.STABLE,
        "R": MemberAssignmentState.STABLE,
    }
    assert d.member("S").member_epoch == -2
    g = d.coordinator.group("g")
    assert d.member("B").member_epoch < g.assignment_epoch  # B has not heard of the new epoch
    assert g.resolved_regexes and "admin" in d.coordinator.state.simple_groups


def test_empty_log(make_driver: Any) -> None:
    coordinator = GroupCoordinator.replaying([], 0)
    assert coordinator.state.snapshot() == GroupCoordinator().state.snapshot()
    assert coordinator.next_deadline() is None


def test_state_is_identical_in_the_middle_of_a_rebalance(driver: Any, make_driver: Any) -> None:
    d = driver
    busy_group(d)
    twin = replayed(d, make_driver)
    assert_same_state(d, twin)
    assert twin.coordinator.log == d.coordinator.log


def test_state_is_identical_after_every_step(driver: Any, make_driver: Any) -> None:
    d = driver
    steps: list[Callable[[], Any]] = [
        lambda: d.create_topic("foo", 4),
        lambda: d.join("A"),
        lambda: d.join("B", instance_id="iB"),
        lambda: d.heartbeat("A", 2, owned={"foo": range(4)}),
        lambda: d.heartbeat("A", 2, owned={"foo": [0, 1]}),
        lambda: d.heartbeat("B", 3, owned={}),
        lambda: commit(d, "g", "A", 3, [0], 10),
        lambda: d.heartbeat("B", -2, instance_id="iB"),
        lambda: d.join("B2", instance_id="iB"),
        lambda: d.heartbeat("A", 3, subscribed_topic_regex="fo."),
        lambda: d.set_partitions("foo", 6),
        lambda: d.heartbeat("A", 3, owned={"foo": [0, 1]}),
        lambda: d.heartbeat("A", -1),
        lambda: d.advance(SESSION_MS),
        lambda: d.delete_topic("foo"),
    ]
    for step in steps:
        step()
        assert_same_state(d, replayed(d, make_driver))
    assert d.coordinator.group("g").state() == GroupState.EMPTY


def test_failed_operations_leave_nothing_to_replay(driver: Any, make_driver: Any) -> None:
    d = driver
    d.create_topic("foo", 2)
    d.join("A")
    length = len(d.coordinator.log)
    assert d.heartbeat("A", 9).error_code == ErrorCode.FENCED_MEMBER_EPOCH
    assert d.heartbeat("Z", 2).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert commit(d, "g", "Z", 2, [0], 1) == ErrorCode.UNKNOWN_MEMBER_ID
    assert len(d.coordinator.log) == length
    assert_same_state(d, replayed(d, make_driver))


def test_session_timers_are_rearmed_from_the_failover_time(driver: Any, make_driver: Any) -> None:
    d = driver
    busy_group(d)
    d.advance(10_000)
    twin = replayed(d, make_driver, now=d.now + 5_000)
    timers = twin.coordinator.timers
    for member in "ABRS":
        assert timers.get(session_timer("g", member))[0] == twin.now + SESSION_MS, member
    # A member that never heartbeats again is removed a session timeout after the failover.
    g = twin.coordinator.group("g")
    for member in "ABR":
        twin.heartbeat(member, twin.member(member).member_epoch)
    twin.advance(SESSION_MS - 1)
    assert "S" in g.members
    twin.advance(1)
    assert "S" not in g.members and "static-1" not in g.static_members  # the away static member


def test_rebalance_timers_are_rearmed_for_revoking_members(driver: Any, make_driver: Any) -> None:
    d = driver
    busy_group(d)
    twin = replayed(d, make_driver)
    timers = twin.coordinator.timers
    assert timers.get(rebalance_timer("g", "A")) == (twin.now + 60_000, 3)
    for member in "BRS":
        assert timers.get(rebalance_timer("g", member)) is None
    assert twin.coordinator.next_deadline() == twin.now + SESSION_MS
    # A keeps heartbeating but never revokes: fenced at its rebalance timeout.
    g = twin.coordinator.group("g")
    for _ in range(5):
        twin.advance(10_000)
        for member in "ABR":
            if member in g.members:
                twin.heartbeat(member, twin.member(member).member_epoch)
    assert "A" in g.members
    twin.advance(10_000)
    assert "A" not in g.members


def test_the_replayed_coordinator_continues_like_the_original(driver: Any, make_driver: Any) -> None:
    d = driver
    busy_group(d)
    twin = replayed(d, make_driver)
    script: list[Callable[[Any], Any]] = [
        lambda x: x.heartbeat("A", 3, owned={"foo": [0, 1, 2]}),
        lambda x: x.heartbeat("A", 3, owned={"foo": [0, 1]}),
        lambda x: x.heartbeat("B", 3, owned={"foo": [3, 4, 5]}),
        lambda x: x.heartbeat("B", 3, owned=x.assigned("B")),
        lambda x: x.heartbeat("R", x.member("R").member_epoch, owned=x.assigned("R")),
        lambda x: x.join("S2", instance_id="static-1", rack_id="r1"),
        lambda x: x.join("C"),
        lambda x: commit(x, "g", "A", x.member("A").member_epoch, [0], 99),
        lambda x: x.heartbeat("R", x.member("R").member_epoch, subscribed_topic_regex="fo."),
        lambda x: x.create_topic("foo2", 3),
        lambda x: x.heartbeat("A", x.member("A").member_epoch, owned=x.assigned("A")),
        lambda x: x.heartbeat("C", x.member("C").member_epoch, owned={}),
        lambda x: x.heartbeat("B", -1),
        lambda x: x.advance(SESSION_MS),
    ]
    for step in script:
        assert step(d) == step(twin)
        assert_same_state(d, twin)
    assert d.coordinator.log == twin.coordinator.log


def test_a_group_emptied_by_leaves_replays_as_empty(driver: Any, make_driver: Any) -> None:
    d = driver
    d.create_topic("foo", 2)
    d.join("A", subscribed_topic_names=None, subscribed_topic_regex="fo+")
    d.join("B")
    d.heartbeat("A", -1)
    d.heartbeat("B", -1)
    twin = replayed(d, make_driver)
    assert_same_state(d, twin)
    g = twin.coordinator.group("g")
    assert g.state() == GroupState.EMPTY and g.resolved_regexes == {} and g.owners == {}
    assert twin.coordinator.next_deadline() is None
    assert twin.join("C").member_epoch == d.coordinator.group("g").group_epoch + 1


def test_client_side_assignment_is_asked_again_after_failover(driver: Any, make_driver: Any) -> None:
    d = driver
    d.create_topic("foo", 2)
    assignor = Assignor(name="sticky", minimum_version=0, maximum_version=1, metadata_version=0)
    d.join("A", client_assignors=[assignor])
    assert d.coordinator.client_runs["g"].chosen_member == "A"
    twin = replayed(d, make_driver)
    assert twin.coordinator.client_runs == {}  # soft state: not in the log
    response = twin.heartbeat("A", 1)
    assert response.should_compute_assignment is True
    prepare = ConsumerGroupPrepareAssignmentRequest(group_id="g", member_id="A", member_epoch=1)
    state = twin.coordinator.prepare_assignment(prepare, 0, twin.now).response
    assert (state.error_code, state.group_epoch) == (0, 2)
    foo = twin.topic_id("foo")
    from kconsumer.protocol.messages.consumer_group import TopicPartitions

    install = ConsumerGroupInstallAssignmentRequest(
        group_id="g",
        member_id="A",
        member_epoch=1,
        group_epoch=2,
        members=[
            InstalledMember(
                member_id="A", topic_partitions=[TopicPartitions(topic_id=foo, partitions=[0, 1])]
            )
        ],
    )
    assert twin.coordinator.install_assignment(install, 0, twin.now).response.error_code == 0
    response = twin.heartbeat("A", 1, owned={})
    assert (response.member_epoch, twin.response_assignment(response)) == (2, {"foo": [0, 1]})
    # And the twin's log replays in turn.
    assert_same_state(twin, replayed(twin, make_driver))


def test_rollback_undoes_every_kind_of_record(driver: Any, make_driver: Any) -> None:
    """A failed operation's records are undone (`RecordWriter.rollback`): whatever they were, the
    state and its indexes are back as they were."""
    from kconsumer.broker.coordinator.model import (
        CurrentAssignment,
        MemberRegistration,
        ResolvedRegex,
        TargetMember,
    )
    from kconsumer.broker.coordinator.records import (
        CurrentAssignmentRecord,
        CurrentAssignmentTombstone,
        GroupEpochRecord,
        MemberMetadataRecord,
        MemberMetadataTombstone,
        OffsetCommitRecord,
        OffsetTombstone,
        OffsetValue,
        Record,
        RegexRecord,
        RegexTombstone,
        SimpleGroupRecord,
        SimpleGroupTombstone,
        TargetMemberRecord,
        TargetMemberTombstone,
        TargetMetadataRecord,
    )
    from kconsumer.broker.coordinator.state import RecordWriter

    d = driver
    busy_group(d)
    reference = replayed(d, make_driver)  # an untouched copy to compare with
    state = d.coordinator.state
    foo = d.topic_id("foo")
    writer = RecordWriter(state)
    records: list[Record] = [
        GroupEpochRecord("g", 99, 1),
        GroupEpochRecord("new-group", 1, 0),
        MemberMetadataRecord(
            "new-group", MemberRegistration("N", instance_id="n", subscribed_topic_names=("foo",))
        ),
        CurrentAssignmentRecord("new-group", "N", CurrentAssignment(1, 0, assigned={foo: {0: 1}})),
        CurrentAssignmentTombstone("g", "A"),  # releases A's partitions ...
        CurrentAssignmentRecord(
            "g", "B", CurrentAssignment(9, 3, assigned={foo: {0: 9, 1: 9, 2: 9}})
        ),  # ... B takes them
        MemberMetadataRecord(
            "g", MemberRegistration("B", instance_id="moved", subscribed_topic_names=("bar",))
        ),
        MemberMetadataTombstone("g", "S"),
        MemberMetadataRecord("g", MemberRegistration("T", instance_id="static-1")),
        TargetMemberRecord("g", "B", TargetMember({foo: frozenset({5})})),
        TargetMemberTombstone("g", "A"),
        TargetMetadataRecord("g", 42, 7),
        RegexRecord("g", "ba.", ResolvedRegex(frozenset({"x"}), 9, 9)),
        RegexRecord("g", "new", ResolvedRegex(frozenset(), 9, 9)),
        RegexTombstone("g", "ba."),
        OffsetCommitRecord("g", "foo", 3, OffsetValue(1, -1, "", 0, foo)),
        OffsetCommitRecord("g", "foo", 5, OffsetValue(1, -1, "", 0, foo)),
        OffsetTombstone("admin", "foo", 0),
        OffsetCommitRecord("fresh", "foo", 0, OffsetValue(1, -1, "", 0, foo)),
        SimpleGroupRecord("fresh"),
        SimpleGroupTombstone("admin"),
    ]
    for record in records:
        writer.write(record)
    assert state.snapshot() != reference.coordinator.state.snapshot()
    writer.rollback()
    assert writer.records == []
    assert_same_state(d, reference)
    assert set(state.groups) == {"g"} and "fresh" not in state.offsets
