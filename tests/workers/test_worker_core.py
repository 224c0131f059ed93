"""`WorkerCore` alone (events in, effects out): the rules the worker simulation found broken, each
pinned by a test that fails with its fix undone."""

from __future__ import annotations

from kconsumer.assignment.work_units import WorkUnits
from kconsumer.errors import ErrorCode
from kconsumer.protocol.messages.worker_group import (
    ConnectGroupHeartbeatResponse,
    WorkerAssignment,
    WorkerAssignor,
)
from kconsumer.workers.computation import Note, work_changed
from kconsumer.workers.core import (
    AssignmentNote,
    CallbackKind,
    Effect,
    RunCallback,
    SendHeartbeat,
    WorkerCore,
    WorkerSettings,
)

SETTINGS = WorkerSettings("g", "m", None, rebalance_timeout_ms=10_000, lease_ms=3_000)
ASSIGNOR = WorkerAssignor(
    name="rr", minimum_version=0, maximum_version=0, reason=0, metadata_version=0, metadata_bytes=b""
)


def answer(
    epoch: int, units: WorkUnits | None = None, metadata: bytes = b""
) -> ConnectGroupHeartbeatResponse:
    assignment = None
    if units is not None:
        assignment = WorkerAssignment(
            error=0, units=units.to_wire(), metadata_version=0, metadata_bytes=metadata
        )
    return ConnectGroupHeartbeatResponse(
        member_epoch=epoch, heartbeat_interval_ms=1_000, assignment=assignment
    )


def sent(effects: list[Effect]) -> SendHeartbeat:
    (heartbeat,) = [e for e in effects if isinstance(e, SendHeartbeat)]
    return heartbeat


def joined(units: WorkUnits) -> WorkerCore:
    """A core that joined and runs `units`."""
    core = WorkerCore(SETTINGS, [ASSIGNOR])
    core.start(0)
    core.answered(answer(1, units), 0, 10)
    core.callback_done(20)
    assert core.owned == units
    return core


def test_a_revocation_given_and_taken_between_two_heartbeats_is_still_confirmed() -> None:
    """The worker reported {a}; it was given b and had b taken again before its next heartbeat.
    Its owned units are {a} again, as last reported, but the coordinator waits for a report that
    no longer has b: the heartbeat after a callback always carries Owned."""
    core = joined(WorkUnits.of(["a"]))
    core.tick(1_000)
    started = core.answered(answer(2, WorkUnits.of(["a", "b"])), 1_000, 1_010)
    assert started == [RunCallback(CallbackKind.ASSIGNED, WorkUnits.of(["b"]))]
    core.answered(answer(2, WorkUnits.of(["a"])), 1_000, 1_020)  # (an answer to a heartbeat in flight)
    revoking = core.callback_done(1_030)
    assert revoking == [RunCallback(CallbackKind.REVOKED, WorkUnits.of(["b"]))]
    confirm = sent(core.callback_done(1_040))
    assert confirm.request.owned is not None
    assert WorkUnits.from_wire(confirm.request.owned) == WorkUnits.of(["a"])


def test_units_being_started_are_reported_as_run() -> None:
    """A heartbeat sent while on_assigned runs must not let the coordinator think those units
    stopped (it would take a revocation of them for confirmed)."""
    core = joined(WorkUnits.of(["a"]))
    core.answered(answer(2, WorkUnits.of(["a", "b"])), 0, 30)  # on_assigned(b) starts
    heartbeat = sent(core.tick(2_000))
    assert heartbeat.request.owned is not None
    assert WorkUnits.from_wire(heartbeat.request.owned) == WorkUnits.of(["a", "b"])


def test_a_rebalance_reason_survives_a_heartbeat_that_got_no_answer() -> None:
    core = joined(WorkUnits.of(["a"]))
    asked = sent(core.request_rebalance(1, 500))
    assert [a.reason for a in asked.request.client_assignors or []] == [1]
    core.failed(600)
    again = sent(core.tick(2_000))
    assert [a.reason for a in again.request.client_assignors or []] == [1]
    core.answered(answer(2), 2_000, 2_010)
    after = sent(core.tick(4_000))
    assert [a.reason for a in after.request.client_assignors or []] == [0]


def test_a_leaving_worker_with_a_callback_running_has_no_deadline_in_the_past() -> None:
    """It used to ask to be ticked at a heartbeat time already past while it could send nothing:
    a driver looping at one instant forever."""
    core = joined(WorkUnits.of(["a"]))
    effects = core.close(5_000)
    assert effects == [RunCallback(CallbackKind.REVOKED, WorkUnits.of(["a"]))]
    deadline = core.next_deadline()
    assert deadline is None or deadline > 5_000


def test_the_lease_stops_everything_when_no_heartbeat_is_answered() -> None:
    core = joined(WorkUnits.of(["a"]))
    assert core.next_deadline() == 1_010  # the next heartbeat
    core.tick(1_010)
    core.failed(2_000)
    effects = core.tick(3_000)  # 3 s after the last answered heartbeat was sent (at 0)
    assert RunCallback(CallbackKind.LOST, WorkUnits.of(["a"])) in effects
    rejoin = sent(core.callback_done(3_100))
    assert rejoin.request.member_epoch == 0


def test_fenced_worker_abandons_its_units_then_rejoins() -> None:
    core = joined(WorkUnits.of(["a"]))
    fenced = ConnectGroupHeartbeatResponse(error_code=int(ErrorCode.FENCED_MEMBER_EPOCH))
    assert core.answered(fenced, 1_000, 1_010) == [RunCallback(CallbackKind.LOST, WorkUnits.of(["a"]))]
    assert sent(core.callback_done(1_020)).request.member_epoch == 0


def test_new_assignment_metadata_is_handed_to_the_driver_once() -> None:
    core = WorkerCore(SETTINGS, [ASSIGNOR])
    core.start(0)
    note = Note(b"f" * 16, 7_000).encode()
    effects = core.answered(answer(1, WorkUnits.of(["a"]), note), 0, 10)
    assert AssignmentNote(note) in effects
    core.callback_done(20)
    core.tick(1_010)
    assert not [
        e
        for e in core.answered(answer(1, WorkUnits.of(["a"]), note), 1_010, 1_020)
        if isinstance(e, AssignmentNote)
    ]


def test_a_note_names_its_work_and_the_time_to_ask() -> None:
    work = WorkUnits.of(["c"], [("c", 0)])
    from kconsumer.workers.computation import work_fingerprint

    note = Note.decode(Note(work_fingerprint(work), 1234).encode())
    assert note == Note(work_fingerprint(work), 1234)
    assert not work_changed(note, lambda: work)
    assert work_changed(note, lambda: WorkUnits.of(["c"]))
    assert Note.decode(b"assignor's own") is None


def test_every_worker_asks_when_the_delay_ends_unless_a_newer_assignment_came() -> None:
    """Mixed seed 23220: the time was told to one worker, and lost when a classic process took
    its place. Every worker is told now; each asks a little after the time (its own fixed delay,
    so the first to ask usually answers it for all), and only if its assignment is unchanged."""
    from kconsumer.workers.computation import ask_delay_ms, note_rebalances, still_due, work_fingerprint

    work = WorkUnits.of(["c"])
    note = Note(work_fingerprint(work), 50_000).encode()
    asks = {m: note_rebalances(note, lambda: work, m) for m in ("a", "b", "c")}
    assert {m: at for m, ((_, at),) in asks.items()} == {m: 50_000 + ask_delay_ms(m) for m in asks}
    assert len({ask_delay_ms(m) for m in asks}) == 3 and all(0 <= ask_delay_ms(m) < 1_000 for m in asks)
    at = 50_000 + ask_delay_ms("a")
    assert still_due(note, at, "a")
    assert not still_due(Note(work_fingerprint(work)).encode(), at, "a")  # answered meanwhile
    assert not still_due(Note(work_fingerprint(work), 90_000).encode(), at, "a")  # a new time


def test_a_worker_that_fails_stops_what_it_runs_first() -> None:
    """An error the worker cannot recover from (here GROUP_AUTHORIZATION_FAILED): on_lost for
    everything it runs, then the failure; the coordinator gives the units away after its
    session timeout, so they must be stopped."""
    core = joined(WorkUnits.of(["c"], [("c", 0)]))
    refused = ConnectGroupHeartbeatResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    effects = core.answered(refused, 30, 40)
    assert [type(e).__name__ for e in effects] == ["RunCallback", "Failed"]
    (lost,) = [e for e in effects if isinstance(e, RunCallback)]
    assert lost.kind is CallbackKind.LOST and lost.units == WorkUnits.of(["c"], [("c", 0)])
    assert core.callback_done(50) == [] and core.owned == WorkUnits()
