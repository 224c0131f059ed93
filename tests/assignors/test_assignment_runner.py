"""The member's client-side assignment runner (`kconsumer.client.runtime.client_assignment`), with a fake
coordinator connection: Prepare -> spec by name -> assign on the assignor thread -> Install by id
-> result; failures; the application-thread side (metadata events, reasons, on_assignment)."""

from __future__ import annotations

import asyncio
import queue
import threading
from dataclasses import dataclass, field
from typing import Any

import pytest
from assignor_harness import Scripted, round_robin

from kconsumer import AssignmentSpec, AssignorFailedError, AssignorMetadata, GroupAssignment, MemberAssignment
from kconsumer.client.member.effects import InvokeCallback, ReportError
from kconsumer.client.member.events import AssignorMetadataUpdated, RequestAssignment
from kconsumer.client.member.model import AssignmentMetadata, CallbackKind, TopicIdPartition
from kconsumer.client.runtime.client_assignment import (
    LocalAssignors,
    build_spec,
    install_members,
    name_topic_ids,
    previous_target,
    unknown_topic_ids,
)
from kconsumer.errors import ErrorCode
from kconsumer.protocol.messages.consumer_group import TopicPartitions
from kconsumer.protocol.messages.extensions import (
    ConsumerGroupInstallAssignmentRequest,
    ConsumerGroupInstallAssignmentResponse,
    ConsumerGroupPrepareAssignmentRequest,
    ConsumerGroupPrepareAssignmentResponse,
    MemberAssignorState,
    PreparedMember,
    PreparedTopic,
)
from kconsumer.protocol.uuid import Uuid

T = Uuid.from_int(0x7)
OLD = Uuid.from_int(0x8)
GONE = Uuid.from_int(0x9)


def prepared_member(
    member_id: str,
    target: dict[Uuid, list[int]] | None = None,
    version: int = 0,
    data: bytes = b"",
    reason: int = 0,
) -> PreparedMember:
    return PreparedMember(
        member_id=member_id,
        member_epoch=4,
        instance_id=None,
        rack_id="r1",
        subscribed_topic_ids=[T],
        assignor=MemberAssignorState(reason=reason, metadata_version=version, metadata_bytes=data),
        topic_partitions=[TopicPartitions(topic_id=t, partitions=p) for t, p in (target or {}).items()],
    )


def prepare_response(*members: PreparedMember, partitions: int = 4, name: str = "scripted") -> Any:
    return ConsumerGroupPrepareAssignmentResponse(
        group_epoch=7,
        assignor_name=name,
        members=list(members),
        topics=[PreparedTopic(topic_id=T, topic_name="t", num_partitions=partitions)],
    )


# -- conversions ---------------------------------------------------------------------------------------


def test_build_spec_names_topics_and_keeps_member_state() -> None:
    response = prepare_response(
        prepared_member("a", {T: [3, 1], OLD: [0]}, version=1, data=b"A", reason=2),
        prepared_member("b", {GONE: [5]}),
    )
    assert unknown_topic_ids(response, {OLD: "old"}) == [GONE]
    spec = build_spec("g", response, {OLD: "old"}).spec
    assert (spec.group_id, spec.group_epoch, spec.assignor_name) == ("g", 7, "scripted")
    assert spec.topics == {"t": spec.topics["t"]} and spec.topics["t"].num_partitions == 4
    a, b = spec.members["a"], spec.members["b"]
    assert (a.subscribed_topics, a.rack_id, a.reason, a.member_epoch) == (frozenset({"t"}), "r1", 2, 4)
    assert (a.metadata.version, a.metadata.data) == (1, b"A")
    assert a.target_partitions == {"old": (0,), "t": (1, 3)}
    assert b.target_partitions == {}  # a topic no one can name any more is left out


def test_install_members_converts_back_to_ids() -> None:
    prepared = build_spec("g", prepare_response(prepared_member("a", version=2), prepared_member("b")), {})
    result = GroupAssignment(
        error=3,
        members={
            "b": MemberAssignment({"t": [1, 0]}, b"B", version=1),
            "a": MemberAssignment({"t": [2, 3]}, b"A"),
            "stranger": MemberAssignment(),
        },
    )
    error, members = install_members(prepared, result)
    assert error == 3
    assert [(m.member_id, m.metadata_version, m.metadata_bytes) for m in members] == [
        ("a", 2, b"A"),  # its own metadata version by default
        ("b", 1, b"B"),
        ("stranger", 0, b""),  # the coordinator rejects it, naming the rule
    ]
    assert [[(tp.topic_id, tp.partitions) for tp in m.topic_partitions] for m in members] == [
        [(T, [2, 3])],
        [(T, [0, 1])],
        [],
    ]


def test_install_members_rejects_what_cannot_be_sent() -> None:
    prepared = build_spec("g", prepare_response(prepared_member("a")), {})
    with pytest.raises(AssignorFailedError, match=r"only subscribed topics.*'elsewhere'"):
        install_members(prepared, GroupAssignment(members={"a": MemberAssignment({"elsewhere": [0]})}))
    with pytest.raises(AssignorFailedError, match="must return a GroupAssignment, got dict"):
        install_members(prepared, {"a": {"t": [0]}})


def test_previous_target_only_when_still_valid() -> None:
    valid = prepare_response(
        prepared_member("a", {T: [0, 1]}), prepared_member("b", {T: [2, 3]}), prepared_member("c")
    )
    members = previous_target(build_spec("g", valid, {}))
    assert members is not None and [(m.member_id, m.topic_partitions) for m in members] == [
        ("a", [TopicPartitions(topic_id=T, partitions=[0, 1])]),
        ("b", [TopicPartitions(topic_id=T, partitions=[2, 3])]),
        ("c", []),
    ]
    member_left = prepare_response(prepared_member("a", {T: [0, 1]}))
    assert previous_target(build_spec("g", member_left, {})) is None
    grown = prepare_response(prepared_member("a", {T: [0, 1, 2, 3]}), partitions=6)
    assert previous_target(build_spec("g", grown, {})) is None


def test_name_topic_ids() -> None:
    assert name_topic_ids(f"{T}-0 is assigned twice", {T: "t"}) == f"{T} ('t')-0 is assigned twice"
    assert name_topic_ids(None, {T: "t"}) is None


# -- the runner with a fake coordinator --------------------------------------------------------------------


@dataclass
class FakeConnection:
    prepare: Any
    install: Any = field(default_factory=ConsumerGroupInstallAssignmentResponse)
    requests: list[Any] = field(default_factory=list)

    async def request(self, message: Any, version: int | None = None) -> Any:
        self.requests.append(message)
        if isinstance(message, ConsumerGroupPrepareAssignmentRequest):
            return self.prepare
        assert isinstance(message, ConsumerGroupInstallAssignmentRequest)
        return self.install


@dataclass
class FakeNetwork:
    topic_names: dict[Uuid, str] = field(default_factory=dict)
    asked: list[list[Uuid]] = field(default_factory=list)

    async def metadata(self, topics: Any = None, topic_ids: Any = None) -> None:
        self.asked.append(list(topic_ids))
        self.topic_names.update({tid: f"name-of-{tid}" for tid in topic_ids if tid == OLD})


@dataclass
class FakeRuntime:
    connection: FakeConnection
    network: FakeNetwork = field(default_factory=FakeNetwork)
    app_queue: queue.SimpleQueue[Any] = field(default_factory=queue.SimpleQueue)

    async def coordinator(self) -> FakeConnection:
        return self.connection


def run(assignors: LocalAssignors, runtime: FakeRuntime, epoch: int = 4) -> Any:
    try:
        return asyncio.run(assignors.run(runtime, epoch))  # type: ignore[arg-type]
    finally:
        assignors.close()


def reports(runtime: FakeRuntime) -> list[ReportError]:
    out = []
    while not runtime.app_queue.empty():
        out.append(runtime.app_queue.get())
    return out


def test_prepare_assign_install() -> None:
    assignor = Scripted()
    runtime = FakeRuntime(
        FakeConnection(prepare_response(prepared_member("a", {OLD: [0]}), prepared_member("me")))
    )
    result = run(LocalAssignors([assignor], "g", "me"), runtime)
    assert (result.member_epoch, result.error) == (4, ErrorCode.NONE)
    prepare, install = runtime.connection.requests
    assert (prepare.group_id, prepare.member_id, prepare.member_epoch) == ("g", "me", 4)
    assert (install.member_id, install.member_epoch, install.group_epoch, install.error) == ("me", 4, 7, 0)
    assert {m.member_id: [tp.partitions for tp in m.topic_partitions] for m in install.members} == {
        "a": [[0, 2]],
        "me": [[1, 3]],
    }
    assert runtime.network.asked == [[OLD]]  # an id of a current target, named through metadata
    (call,) = assignor.calls
    assert call.spec.members["a"].target_partitions == {f"name-of-{OLD}": (0,)}
    assert call.thread.startswith("kconsumer-assignor") and not reports(runtime)


def test_prepare_errors_end_the_computation() -> None:
    response = ConsumerGroupPrepareAssignmentResponse(
        error_code=int(ErrorCode.STALE_MEMBER_EPOCH), error_message="stale", assignor_name=""
    )
    runtime = FakeRuntime(FakeConnection(response))
    result = run(LocalAssignors([Scripted()], "g", "me"), runtime)
    assert (result.error, result.message) == (ErrorCode.STALE_MEMBER_EPOCH, "stale")
    assert len(runtime.connection.requests) == 1


def test_an_assignor_this_member_lacks() -> None:
    runtime = FakeRuntime(FakeConnection(prepare_response(prepared_member("me"), name="other")))
    result = run(LocalAssignors([Scripted()], "g", "me"), runtime)
    assert result.error is ErrorCode.INVALID_REQUEST and "'other'" in (result.message or "")
    assert len(runtime.connection.requests) == 1


def test_the_coordinators_rejection_names_topics() -> None:
    rejection = ConsumerGroupInstallAssignmentResponse(
        error_code=int(ErrorCode.INVALID_REQUEST), error_message=f"rule: x: topic {T} partitions [3]"
    )
    runtime = FakeRuntime(FakeConnection(prepare_response(prepared_member("me")), rejection))
    result = run(LocalAssignors([Scripted()], "g", "me"), runtime)
    assert (
        result.error is ErrorCode.INVALID_REQUEST
        and result.message == f"rule: x: topic {T} ('t') partitions [3]"
    )


def broken(spec: AssignmentSpec) -> GroupAssignment:
    raise KeyError("no such task")


def test_a_failing_assignor_reinstalls_a_valid_target_with_an_error() -> None:
    response = prepare_response(prepared_member("me", {T: [0, 1, 2, 3]}, version=0), prepared_member("new"))
    runtime = FakeRuntime(FakeConnection(response))
    result = run(LocalAssignors([Scripted(compute=broken)], "g", "me"), runtime)
    assert result.error is ErrorCode.NONE
    install = runtime.connection.requests[-1]
    assert install.error == 2 and [(m.member_id, len(m.topic_partitions)) for m in install.members] == [
        ("me", 1),
        ("new", 0),
    ]
    (report,) = reports(runtime)
    assert isinstance(report, ReportError) and not report.fatal
    assert isinstance(report.error, AssignorFailedError) and isinstance(report.error.__cause__, KeyError)
    assert "assignor 'scripted' raised KeyError" in str(report.error)


def test_a_failing_assignor_installs_nothing_when_the_target_is_no_longer_valid() -> None:
    response = prepare_response(prepared_member("me", {T: [0, 1]}))  # partitions 2, 3 lost their member
    runtime = FakeRuntime(FakeConnection(response))
    result = run(LocalAssignors([Scripted(compute=broken)], "g", "me"), runtime)
    assert result.error is ErrorCode.NONE and len(runtime.connection.requests) == 1
    assert len(reports(runtime)) == 1


def test_an_unusable_result_is_an_assignor_failure() -> None:
    runtime = FakeRuntime(FakeConnection(prepare_response(prepared_member("me", {T: [0, 1, 2, 3]}))))
    bad = Scripted(compute=lambda spec: GroupAssignment(members={"me": MemberAssignment({"nope": [0]})}))
    run(LocalAssignors([bad], "g", "me"), runtime)
    (report,) = reports(runtime)
    assert "invalid assignment (rule: only subscribed topics)" in str(report.error)
    assert runtime.connection.requests[-1].error == 2


def test_a_slow_assignor_does_not_block_the_event_loop() -> None:
    release = threading.Event()

    def slow(spec: AssignmentSpec) -> GroupAssignment:
        assert release.wait(10)
        return round_robin(spec)

    assignors = LocalAssignors([Scripted(compute=slow)], "g", "me")
    runtime = FakeRuntime(FakeConnection(prepare_response(prepared_member("me"))))
    ticks = 0

    async def main() -> Any:
        nonlocal ticks
        task = asyncio.create_task(assignors.run(runtime, 4))  # type: ignore[arg-type]
        while ticks < 5:  # the loop runs other work while assign() computes
            await asyncio.sleep(0.01)
            ticks += 1
        assert not task.done()
        release.set()
        return await task

    try:
        result = asyncio.run(main())
    finally:
        assignors.close()
    assert result.error is ErrorCode.NONE and ticks == 5


# -- the application thread's side ------------------------------------------------------------------------


def test_metadata_events_and_reasons() -> None:
    first = Scripted("first", high=2, meta=AssignorMetadata(reason=1, version=2, data=b"x"))
    second = Scripted("second")
    assignors = LocalAssignors([first, second], "g", "me")
    try:
        assert assignors.metadata_events("first") == [AssignorMetadataUpdated("first", 2, b"x", 1)]
        assert [e.name for e in assignors.metadata_events()] == ["first", "second"]
        with pytest.raises(ValueError, match="no local assignor named 'third'"):
            assignors.metadata_events("third")
        first.meta = AssignorMetadata(version=3)
        with pytest.raises(ValueError, match="outside the assignor's range"):
            assignors.metadata_events("first")
        assert LocalAssignors.request_event(-3) == RequestAssignment(-3)
        for bad in (0, 128, True, "1"):
            with pytest.raises(ValueError):
                LocalAssignors.request_event(bad)  # type: ignore[arg-type]
    finally:
        assignors.close()


def test_on_assignment_goes_to_the_groups_assignor() -> None:
    first, second = Scripted("first"), Scripted("second")
    assignors = LocalAssignors([first, second], "g", "me", "instance-1")
    work = InvokeCallback(
        1,
        CallbackKind.ASSIGNMENT,
        (TopicIdPartition(T, "t", 1), TopicIdPartition(T, "t", 0)),
        AssignmentMetadata(2, 1, b"for-me"),
    )
    assignors.on_assignment(work, 9)  # not computed here: the first (preferred) assignor
    (event,) = first.events
    assert event[1:3] == (2, MemberAssignment({"t": [0, 1]}, b"for-me", 1))
    group = event[3]
    assert (group.group_id, group.member_id, group.member_epoch, group.group_instance_id) == (
        "g",
        "me",
        9,
        "instance-1",
    )
    # This member prepared for "second": that one gets on_assignment from now on.
    runtime = FakeRuntime(FakeConnection(prepare_response(prepared_member("me"), name="second")))
    run(assignors, runtime)
    assignors.on_assignment(work, 10)
    assert len(first.events) == 1 and len(second.events) == 1
    assignors.on_assignment(InvokeCallback(2, CallbackKind.ASSIGNMENT, ()), 11)  # no metadata: nothing
    assert len(second.events) == 1


def test_an_unexpected_failure_still_ends_the_computation() -> None:
    runtime = FakeRuntime(FakeConnection(prepare=None))  # not a PrepareAssignment response
    result = run(LocalAssignors([Scripted()], "g", "me"), runtime)
    assert result.error is ErrorCode.UNKNOWN_SERVER_ERROR and "AssertionError" in (result.message or "")
