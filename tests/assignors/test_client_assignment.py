"""The member's client-side assignment as the member session runs it, on a scripted cluster:
Prepare -> spec by name -> `RunAssignor` -> Install by id -> the outcome to the core; failures;
the runtime running ``assign()`` off its loop; and the application-thread side (metadata events,
reasons, on_assignment)."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from typing import Any

import pytest
from assignor_harness import Scripted, round_robin
from prepared_messages import OLD, T, prepare_response, prepared_member

from kconsumer import AssignmentSpec, AssignorFailedError, AssignorMetadata, GroupAssignment, MemberAssignment
from kconsumer.assignment.announcements import AssignorOutput
from kconsumer.client.config import ConsumerConfig
from kconsumer.client.local_assignors import LocalAssignors
from kconsumer.client.member import ClientAssignor, MemberConfig
from kconsumer.client.member.effects import InvokeCallback, ReportError, RunAssignor
from kconsumer.client.member.events import (
    AssignorFinished,
    AssignorMetadataUpdated,
    RequestAssignment,
    Subscribe,
)
from kconsumer.client.member.model import CallbackKind, TopicIdPartition
from kconsumer.client.runtime.background import BackgroundLoop
from kconsumer.client.runtime.member_runtime import MemberRuntime
from kconsumer.errors import ErrorCode
from kconsumer.protocol.messages.consumer_group import (
    Assignment,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from kconsumer.protocol.messages.consumer_group import AssignmentMetadata as WireMetadata
from kconsumer.protocol.messages.extensions import (
    ConsumerGroupInstallAssignmentRequest,
    ConsumerGroupInstallAssignmentResponse,
    ConsumerGroupPrepareAssignmentRequest,
    ConsumerGroupPrepareAssignmentResponse,
)
from kconsumer.protocol.messages.metadata import (
    MetadataRequest,
    MetadataResponse,
    MetadataResponseTopic,
)
from kconsumer.testing.scripted_session import SessionDriver

# -- the computation, on a scripted cluster -----------------------------------------------------------


def chosen(
    prepare: Any,
    install: Any = None,
    names: tuple[str, ...] = ("scripted",),
    epoch: int = 4,
) -> SessionDriver:
    """A member with local assignors `names` that the coordinator chooses to compute at `epoch`;
    Prepare answers `prepare`, Install `install`, Metadata names OLD "name-of-OLD"."""
    assignors = tuple(ClientAssignor(name, 0, 0, 0) for name in names)
    d = SessionDriver(
        MemberConfig(group_id="g", client_assignors=assignors), held={ConsumerGroupHeartbeatRequest}
    )
    d.answers[ConsumerGroupPrepareAssignmentRequest] = lambda request, version: prepare
    d.answers[ConsumerGroupInstallAssignmentRequest] = lambda request, version: (
        install or ConsumerGroupInstallAssignmentResponse()
    )
    d.answers[MetadataRequest] = lambda request, version: MetadataResponse(
        topics=[
            MetadataResponseTopic(error_code=0, name=f"name-of-{OLD}", topic_id=OLD)
            for entry in request.topics or ()
            if entry.topic_id == OLD
        ]
    )
    d.send(Subscribe(topics=("t",)))
    (join,) = d.held_of(ConsumerGroupHeartbeatRequest)
    d.reply(
        join,
        ConsumerGroupHeartbeatResponse(
            member_epoch=epoch, heartbeat_interval_ms=5_000, should_compute_assignment=True
        ),
    )
    return d


def assign(d: SessionDriver, assignor: Scripted) -> None:
    """Run the assignor the session asked for, as the runtime's assignor thread would."""
    (run,) = d.runs
    assert run.assignor_name == assignor.name
    try:
        result = assignor.assign(run.spec)
    except Exception as exc:
        d.send(AssignorFinished(run.run_id, error=exc))
    else:
        d.send(AssignorFinished(run.run_id, result))


def reports(d: SessionDriver) -> list[ReportError]:
    return [w for w in d.app if isinstance(w, ReportError)]


def test_prepare_assign_install() -> None:
    assignor = Scripted()
    d = chosen(prepare_response(prepared_member("a", {OLD: [0]}), prepared_member("me")))
    (prepare,) = d.requests(ConsumerGroupPrepareAssignmentRequest)
    assert (prepare.group_id, prepare.member_epoch) == ("g", 4) and prepare.member_id
    assert [e.topic_id for e in d.requests(MetadataRequest)[-1].topics] == [OLD]  # named through metadata
    assign(d, assignor)
    (install,) = d.requests(ConsumerGroupInstallAssignmentRequest)
    assert (install.member_id, install.member_epoch, install.group_epoch, install.error) == (
        prepare.member_id,
        4,
        7,
        0,
    )
    assert {m.member_id: [tp.partitions for tp in m.topic_partitions] for m in install.members} == {
        "a": [[0, 2]],
        "me": [[1, 3]],
    }
    (call,) = assignor.calls
    assert call.spec.members["a"].target_partitions == {f"name-of-{OLD}": (0,)}
    assert not reports(d) and d.session.core._assignors.computing_epoch is None


def test_prepare_errors_end_the_computation_and_stale_retries_after_a_heartbeat() -> None:
    stale = ConsumerGroupPrepareAssignmentResponse(
        error_code=int(ErrorCode.STALE_MEMBER_EPOCH), error_message="stale", assignor_name=""
    )
    d = chosen(stale)
    assert len(d.requests(ConsumerGroupPrepareAssignmentRequest)) == 1 and not d.runs and not reports(d)
    d.advance(5_000)
    (hb,) = d.held_of(ConsumerGroupHeartbeatRequest)
    d.reply(hb, ConsumerGroupHeartbeatResponse(member_epoch=5, heartbeat_interval_ms=5_000))
    prepares = d.requests(ConsumerGroupPrepareAssignmentRequest)
    assert [p.member_epoch for p in prepares] == [4, 5], "retried with the new epoch"


def test_an_assignor_this_member_lacks() -> None:
    d = chosen(prepare_response(prepared_member("me"), name="other"))
    (report,) = reports(d)
    assert "'other'" in str(report.error) and not d.runs


def test_the_coordinators_rejection_names_topics() -> None:
    rejection = ConsumerGroupInstallAssignmentResponse(
        error_code=int(ErrorCode.INVALID_REQUEST), error_message=f"rule: x: topic {T} partitions [3]"
    )
    d = chosen(prepare_response(prepared_member("me")), rejection)
    assign(d, Scripted())
    (report,) = reports(d)
    assert f"rule: x: topic {T} ('t') partitions [3]" in str(report.error)


def broken(spec: AssignmentSpec) -> GroupAssignment:
    raise KeyError("no such task")


def test_a_failing_assignor_reinstalls_a_valid_target_with_an_error() -> None:
    d = chosen(prepare_response(prepared_member("me", {T: [0, 1, 2, 3]}, version=0), prepared_member("new")))
    assign(d, Scripted(compute=broken))
    (install,) = d.requests(ConsumerGroupInstallAssignmentRequest)
    assert install.error == 2 and [(m.member_id, len(m.topic_partitions)) for m in install.members] == [
        ("me", 1),
        ("new", 0),
    ]
    (report,) = reports(d)
    assert isinstance(report, ReportError) and not report.fatal
    assert isinstance(report.error, AssignorFailedError) and isinstance(report.error.__cause__, KeyError)
    assert "assignor 'scripted' raised KeyError" in str(report.error)


def test_a_failing_assignor_installs_nothing_when_the_target_is_no_longer_valid() -> None:
    d = chosen(prepare_response(prepared_member("me", {T: [0, 1]})))  # partitions 2, 3 lost their member
    assign(d, Scripted(compute=broken))
    assert not d.requests(ConsumerGroupInstallAssignmentRequest) and len(reports(d)) == 1


def test_an_unusable_result_is_an_assignor_failure() -> None:
    d = chosen(prepare_response(prepared_member("me", {T: [0, 1, 2, 3]})))
    assign(d, Scripted(compute=lambda spec: GroupAssignment(members={"me": MemberAssignment({"nope": [0]})})))
    (report,) = reports(d)
    assert "invalid assignment (rule: only subscribed topics)" in str(report.error)
    assert d.requests(ConsumerGroupInstallAssignmentRequest)[-1].error == 2


def test_a_spec_that_cannot_be_built_still_ends_the_computation(monkeypatch: pytest.MonkeyPatch) -> None:
    from kconsumer.client.member import client_assignment

    def fail(*args: Any) -> Any:
        raise RuntimeError("corrupt response")

    monkeypatch.setattr(client_assignment, "build_spec", fail)
    d = chosen(prepare_response(prepared_member("me")))
    (report,) = reports(d)
    assert "RuntimeError: corrupt response" in str(report.error) and not d.runs
    assert d.session.core._assignors.computing_epoch is None


def test_on_assignment_names_the_assignor_this_member_prepared_for() -> None:
    d = chosen(prepare_response(prepared_member("me"), name="second"), names=("first", "second"))
    assign(d, Scripted("second"))
    d.advance(5_000)
    (hb,) = d.held_of(ConsumerGroupHeartbeatRequest)
    d.reply(
        hb,
        ConsumerGroupHeartbeatResponse(
            member_epoch=5,
            heartbeat_interval_ms=5_000,
            assignment=Assignment(topic_partitions=[]),
            assignment_metadata=WireMetadata(error=0, metadata_version=0, metadata_bytes=b"x"),
        ),
    )
    (work,) = [w for w in d.app if isinstance(w, InvokeCallback) and w.kind is CallbackKind.ASSIGNMENT]
    assert work.assignor_name == "second"


# -- the runtime runs assign() off its loop -------------------------------------------------------


def test_a_slow_assignor_runs_on_the_assignor_thread_without_blocking_the_loop() -> None:
    release = threading.Event()

    def slow(spec: AssignmentSpec) -> GroupAssignment:
        assert release.wait(10)
        return round_robin(spec)

    assignor = Scripted(compute=slow)
    config = ConsumerConfig.from_dict({"bootstrap.servers": "localhost:1", "group.id": "g"})
    background = BackgroundLoop("test-runtime")
    runtime = MemberRuntime(config, "me", background, LocalAssignors([assignor], "g", "me"))
    spec = AssignmentSpec(members={}, topics={}, group_id="g", assignor_name="scripted")
    ticks = 0

    async def main() -> None:
        nonlocal ticks
        runtime._run_assignor(RunAssignor(1, "scripted", spec))
        while ticks < 5:  # the loop runs other work while assign() computes
            await asyncio.sleep(0.01)
            ticks += 1
        assert not assignor.calls[0].result
        release.set()
        while assignor.calls[0].result is None:
            await asyncio.sleep(0.01)

    try:
        background.submit(main()).result(10)
    finally:
        runtime.shutdown()
        background.stop()
    (call,) = assignor.calls
    assert ticks == 5 and call.thread.startswith("kconsumer-assignor")


# -- the application thread's side ------------------------------------------------------------------------


def test_metadata_events_and_reasons() -> None:
    first = Scripted("first", high=2, meta=AssignorMetadata(reason=1, version=2, data=b"x"))
    second = Scripted("second")
    assignors = LocalAssignors([first, second], "g", "me")
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
    # The session prepared for "second" (test_on_assignment_names_the_assignor_this_member_prepared_for):
    # that one gets on_assignment.
    assignors.on_assignment(dataclasses.replace(work, assignor_name="second"), 10)
    assert len(first.events) == 1 and len(second.events) == 1
    assignors.on_assignment(InvokeCallback(2, CallbackKind.ASSIGNMENT, ()), 11)  # no metadata: nothing
    assert len(second.events) == 1
