"""`ClassicWorkerCore` alone (events in, effects out): a classic worker's conversation (JoinGroup,
SyncGroup, Heartbeat, LeaveGroup) and the rules the mixed worker simulation found broken, each
pinned by a test that fails with its fix undone."""

from __future__ import annotations

from kconsumer.assignment.connect_protocol import (
    ConnectAssignment,
    decode_worker_state,
    encode_assignment,
    work_offset,
)
from kconsumer.assignment.work_units import WorkUnits
from kconsumer.errors import ErrorCode
from kconsumer.protocol.messages.classic_group import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    JoinGroupResponseMember,
    LeaveGroupRequest,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kconsumer.workers.classic_core import (
    CheckWork,
    ClassicEffect,
    ClassicWorkerCore,
    ClassicWorkerSettings,
    Lead,
    SendClassic,
)
from kconsumer.workers.core import CallbackKind, RunCallback, WorkerState

A, B = WorkUnits.of(["a"]), WorkUnits.of(["b"])


def settings(instance: str | None = None) -> ClassicWorkerSettings:
    return ClassicWorkerSettings(
        group_id="g",
        instance_id=instance,
        session_timeout_ms=10_000,
        rebalance_timeout_ms=8_000,
        heartbeat_interval_ms=1_000,
        lease_ms=5_000,
        config_offset=lambda: 7,
    )


def request(effects: list[ClassicEffect]) -> object:
    (send,) = [e for e in effects if isinstance(e, SendClassic)]
    return send.request


def callback(effects: list[ClassicEffect]) -> RunCallback:
    (run,) = [e for e in effects if isinstance(e, RunCallback)]
    return run


NOTHING = WorkUnits()


def synced(assigned: WorkUnits, revoked: WorkUnits = NOTHING, offset: int = -1) -> SyncGroupResponse:
    assignment = ConnectAssignment(assigned=assigned, revoked=revoked, config_offset=offset)
    data = encode_assignment(assignment, 2)
    return SyncGroupResponse(protocol_type="connect", protocol_name="sessioned", assignment=data)


def joined_answer(leader: str = "", generation: int = 3) -> JoinGroupResponse:
    return JoinGroupResponse(
        generation_id=generation,
        protocol_type="connect",
        protocol_name="sessioned",
        leader=leader,
        member_id="m1",
    )


def confirmed(core: ClassicWorkerCore, after_sync: list[ClassicEffect], now: int) -> list[ClassicEffect]:
    """A generation's units start only once a Heartbeat sent after its SyncGroup is answered:
    the SyncGroup's answer asks for one at once."""
    assert not [e for e in after_sync if isinstance(e, RunCallback) and e.kind is CallbackKind.ASSIGNED]
    beat = request(core.tick(now))
    assert isinstance(beat, HeartbeatRequest)
    return core.answered(HeartbeatResponse(), now, now + 2)


def running(units: WorkUnits) -> ClassicWorkerCore:
    """A follower that joined and runs `units`."""
    core = ClassicWorkerCore(settings())
    join = request(core.start(0))
    assert isinstance(join, JoinGroupRequest) and join.member_id == ""
    assert isinstance(request(core.answered(joined_answer(), 0, 5)), SyncGroupRequest)
    started = callback(confirmed(core, core.answered(synced(units), 5, 10), 10))
    assert started.kind is CallbackKind.ASSIGNED and started.units == units
    core.callback_done(20)
    assert core.owned == units and core.state is WorkerState.STABLE
    return core


def test_a_join_announces_what_it_runs_and_its_config_offset() -> None:
    core = running(A)
    join = request(core.request_rebalance(1, 30))
    assert isinstance(join, JoinGroupRequest)
    assert [p.name for p in join.protocols] == ["sessioned", "compatible"]
    state = decode_worker_state(join.protocols[0].metadata)
    assert state.runs == A and state.config_offset == 7


def test_member_id_required_then_the_leader_assigns() -> None:
    core = ClassicWorkerCore(settings())
    core.start(0)
    again = request(
        core.answered(JoinGroupResponse(error_code=ErrorCode.MEMBER_ID_REQUIRED, member_id="m1"), 0, 1)
    )
    assert isinstance(again, JoinGroupRequest) and again.member_id == "m1"
    members = [JoinGroupResponseMember(member_id="m1", metadata=b"")]
    (lead,) = core.answered(joined_answer(leader="m1").replace(members=members), 1, 2)
    assert isinstance(lead, Lead) and lead.generation == 3
    assert core.tick(5_000) == []  # it waits for `led`, sending nothing
    sync = request(core.led({"m1": b"x"}, 10))
    assert isinstance(sync, SyncGroupRequest) and [a.member_id for a in sync.assignments] == ["m1"]


def test_revoked_units_are_stopped_then_it_rejoins() -> None:
    core = running(A | B)
    core.answered(HeartbeatResponse(), 30, 40)
    assert isinstance(
        request(core.answered(HeartbeatResponse(error_code=ErrorCode.REBALANCE_IN_PROGRESS), 50, 60)),
        JoinGroupRequest,
    )
    core.answered(joined_answer(generation=4), 60, 70)
    effects = core.answered(synced(A, revoked=B), 70, 80)
    assert callback(effects).kind is CallbackKind.REVOKED and callback(effects).units == B
    join = request(core.callback_done(90))
    assert isinstance(join, JoinGroupRequest)
    assert decode_worker_state(join.protocols[0].metadata).runs == A


def test_units_revoked_that_it_no_longer_runs_still_make_it_rejoin() -> None:
    """Seed 436: revoked units it had already stopped (lost) gave no on_revoked, so it never
    rejoined, and the leader never handed them over."""
    core = running(A)
    core.request_rebalance(1, 30)  # its JoinGroup goes
    core.answered(joined_answer(generation=4), 30, 40)
    effects = core.answered(synced(A, revoked=B), 40, 50)
    assert not [e for e in effects if isinstance(e, RunCallback)]
    assert isinstance(request(core.tick(1_050)), JoinGroupRequest)


def test_a_rebalance_asked_while_its_join_waited_follows_that_generation() -> None:
    """Seeds 5632 and 6137: the generation that answered the JoinGroup cleared the request."""
    core = running(A)
    core.request_rebalance(1, 30)  # its JoinGroup goes
    core.request_rebalance(3, 35)  # the work changed meanwhile
    core.answered(joined_answer(generation=4), 30, 40)
    core.answered(synced(A), 40, 50)
    assert isinstance(request(core.tick(1_050)), JoinGroupRequest)


def test_a_failed_join_is_sent_again() -> None:
    core = running(A)
    core.request_rebalance(1, 30)  # its JoinGroup goes
    assert core.failed(1_000) == []
    assert isinstance(request(core.tick(1_200)), JoinGroupRequest)


def test_unknown_member_loses_everything_and_joins_afresh() -> None:
    core = running(A)
    lost = callback(core.answered(HeartbeatResponse(error_code=ErrorCode.UNKNOWN_MEMBER_ID), 30, 40))
    assert lost.kind is CallbackKind.LOST and lost.units == A
    join = request(core.callback_done(50))
    assert isinstance(join, JoinGroupRequest) and join.member_id == ""


def test_the_lease_stops_everything_without_answered_requests() -> None:
    core = running(A)  # its last answered Heartbeat was sent at 10: the lease ends at 5 010
    assert isinstance(request(core.tick(1_012)), HeartbeatRequest)  # no answer comes
    assert core.tick(5_009) == []
    lost = callback(core.tick(5_010))
    assert lost.kind is CallbackKind.LOST
    assert core.answered(HeartbeatResponse(), 1_012, 5_020) == []  # ignored while losing


def test_an_assignment_is_checked_against_the_declared_work() -> None:
    core = running(A)
    core.request_rebalance(1, 30)  # its JoinGroup goes
    core.answered(joined_answer(generation=4), 30, 40)
    assert any(isinstance(e, CheckWork) for e in core.answered(synced(A, offset=work_offset(A)), 40, 50))
    assert not core.outdated(A) and core.outdated(A | B)


def test_close_stops_everything_then_leaves_a_static_one_naming_its_instance() -> None:
    core = ClassicWorkerCore(settings(instance="i1"))
    core.start(0)
    core.answered(joined_answer(), 0, 5)
    confirmed(core, core.answered(synced(A), 5, 10), 10)
    core.callback_done(20)
    revoked = callback(core.close(30))
    assert revoked.kind is CallbackKind.REVOKED and revoked.units == A
    leave = request(core.callback_done(40))
    assert isinstance(leave, LeaveGroupRequest)
    assert leave.members[0].group_instance_id == "i1"
    core.answered(HeartbeatResponse(), 40, 50)
    assert core.state is WorkerState.CLOSED


def test_a_new_generation_s_units_start_only_after_a_heartbeat_is_answered() -> None:
    """Mixed seed 52893: a classic coordinator does not restart a member's session for a
    JoinGroup or SyncGroup answered at once while Stable; a member that had been silent synced,
    started its units, and was removed a moment later, its units given to another. Units start
    only once a Heartbeat sent after the SyncGroup is answered; the lease counts from it."""
    core = ClassicWorkerCore(settings())
    core.start(0)
    core.answered(joined_answer(), 0, 5)
    after_sync = core.answered(synced(A), 5, 10)
    assert not [e for e in after_sync if isinstance(e, RunCallback)]
    beat = request(core.tick(10))
    assert isinstance(beat, HeartbeatRequest)
    gone = core.answered(HeartbeatResponse(error_code=ErrorCode.UNKNOWN_MEMBER_ID), 10, 20)
    assert not [e for e in gone if isinstance(e, RunCallback)]  # nothing was started
    assert core.owned == WorkUnits()


def test_heartbeats_carry_the_generation() -> None:
    core = running(A)
    beat = request(core.tick(1_012))
    assert isinstance(beat, HeartbeatRequest) and beat.generation_id == 3 and beat.member_id == "m1"


def test_fenced_by_another_process_it_stops_everything_then_fails() -> None:
    """FENCED_INSTANCE_ID (another process took its instance id): on_lost comes before the
    failure, and `WorkerGroup.poll` runs a queued callback before raising the failure."""
    core = ClassicWorkerCore(settings(instance="i1"))
    core.start(0)
    core.answered(joined_answer(), 0, 5)
    confirmed(core, core.answered(synced(A), 5, 10), 10)
    core.callback_done(20)
    core.tick(1_100)  # a heartbeat out
    effects = core.answered(HeartbeatResponse(error_code=ErrorCode.FENCED_INSTANCE_ID), 1_100, 1_110)
    kinds = [type(e).__name__ for e in effects]
    assert kinds == ["RunCallback", "Failed"] and callback(effects).kind is CallbackKind.LOST
    assert core.state is WorkerState.FAILED
