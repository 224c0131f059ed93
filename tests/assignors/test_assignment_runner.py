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
from prepared_messages import OLD, T, prepare_response, prepared_member

from kconsumer import AssignmentSpec, AssignorFailedError, AssignorMetadata, GroupAssignment, MemberAssignment
from kconsumer.assignment.announcements import AssignorOutput
from kconsumer.client.member.effects import InvokeCallback, ReportError
from kconsumer.client.member.events import AssignorMetadataUpdated, RequestAssignment
from kconsumer.client.member.model import CallbackKind, TopicIdPartition
from kconsumer.client.runtime.client_assignment import LocalAssignors
from kconsumer.errors import ErrorCode
from kconsumer.protocol.messages.extensions import (
    ConsumerGroupInstallAssignmentRequest,
    ConsumerGroupInstallAssignmentResponse,
    ConsumerGroupPrepareAssignmentRequest,
    ConsumerGroupPrepareAssignmentResponse,
)
from kconsumer.protocol.uuid import Uuid

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
        AssignorOutput(2, 1, b"for-me"),
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
