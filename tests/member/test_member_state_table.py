"""The transition table, and every (state, event) pair against it."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from member_driver import ALL_CALLBACKS, Driver, S

from kconsumer.client.member import ClientAssignor, MemberState
from kconsumer.client.member import core as core_module
from kconsumer.client.member.classic_exchange import PHASE_TRANSITIONS, ClassicPhase
from kconsumer.client.member.effects import (
    CommitOffsets,
    FetchCommittedOffsets,
    InvokeCallback,
    SendHeartbeat,
    StopFetching,
)
from kconsumer.client.member.events import (
    AssignorMetadataUpdated,
    CallbackCompleted,
    ClientAssignmentResult,
    Close,
    CommitRequested,
    CommitResult,
    CoordinatorCapabilities,
    Event,
    HeartbeatFailed,
    HeartbeatResponseReceived,
    MetadataUpdated,
    OffsetFetchResult,
    Poll,
    RequestAssignment,
    Subscribe,
    Tick,
    Unsubscribe,
)
from kconsumer.client.member.model import CallbackKind
from kconsumer.client.member.state import (
    ALLOWED_PREDECESSORS,
    MEMBER_TRANSITIONS,
    check_transition,
    is_allowed,
)
from kconsumer.client.member.transitions import IllegalTransitionError
from kconsumer.errors import ErrorCode

DOC = Path(__file__).resolve().parents[2] / "docs" / "member-states.md"

# -- the table itself ------------------------------------------------------------------------------


@pytest.mark.parametrize("current", list(MemberState))
@pytest.mark.parametrize("target", list(MemberState))
def test_check_transition_follows_the_table(current: MemberState, target: MemberState) -> None:
    if current is target or current in ALLOWED_PREDECESSORS[target]:
        assert check_transition(current, target) is target
        assert is_allowed(current, target)
    else:
        with pytest.raises(IllegalTransitionError) as info:
            check_transition(current, target)
        assert current.value in str(info.value) and target.value in str(info.value)
        assert not is_allowed(current, target)


@pytest.mark.parametrize("table", [MEMBER_TRANSITIONS, PHASE_TRANSITIONS], ids=lambda t: t.machine)
def test_every_state_machine_changes_through_its_table(table: Any) -> None:
    """One chokepoint for both machines: every state has a row, and a change outside the table
    raises the same error, naming the machine."""
    states = list(type(next(iter(table.predecessors))))
    assert set(table.predecessors) == set(states)
    for current in states:
        for target in states:
            if table.allows(current, target):
                assert table.check(current, target) is target
            else:
                with pytest.raises(IllegalTransitionError, match=table.machine):
                    table.check(current, target)


def test_the_classic_conversation_cannot_skip_a_phase() -> None:
    assert not PHASE_TRANSITIONS.allows(ClassicPhase.JOIN, ClassicPhase.STABLE)
    assert PHASE_TRANSITIONS.allows(ClassicPhase.STABLE, ClassicPhase.JOIN)


def test_every_state_has_a_row_and_fatal_is_terminal() -> None:
    assert set(ALLOWED_PREDECESSORS) == set(MemberState)
    assert all(S.FATAL not in preds for preds in ALLOWED_PREDECESSORS.values())


def test_the_documented_table_is_the_code_table() -> None:
    text = DOC.read_text()
    section = text.split("## Allowed transitions", 1)[1].split("##", 1)[0]
    rows = re.findall(r"^\| ([A-Z_]+) \| ([A-Z_, ]+) \|$", section, re.M)
    documented = {
        MemberState[to]: frozenset(MemberState[s.strip()] for s in frm.split(",")) for to, frm in rows
    }
    assert documented == dict(ALLOWED_PREDECESSORS)


# -- reaching each state ---------------------------------------------------------------------------

ASSIGNOR = ClientAssignor("sticky", 0, 1, 1, b"m")


def _driver() -> Driver:
    return Driver(client_assignors=(ASSIGNOR,))


def _unsubscribed() -> Driver:
    return _driver()


def _joining() -> Driver:
    d = _driver()
    d.send(Subscribe(topics=("foo",), callbacks=ALL_CALLBACKS))
    return d


def _reconciling() -> Driver:
    d = _joining()
    d.metadata()
    d.respond(2, {"foo": [0, 1]})
    assert [cb.kind for cb in d.pending(InvokeCallback)] == [CallbackKind.ASSIGNED]
    return d


def _acknowledging() -> Driver:
    d = _reconciling()
    d.advance(5_000)  # a regular heartbeat goes out while the callback runs
    d.in_flight()
    d.complete_callbacks()
    d.complete_fetches()
    return d


def _stable() -> Driver:
    d = _driver()
    d.join({"foo": [0, 1]})
    return d


def _fenced() -> Driver:
    d = _stable()
    d.advance(5_000)
    d.respond(0, error=ErrorCode.FENCED_MEMBER_EPOCH)
    return d


def _prepare_leaving() -> Driver:
    d = _stable()
    d.send(Unsubscribe())
    assert d.pending(StopFetching)
    return d


def _leaving() -> Driver:
    d = _prepare_leaving()
    d.settle()
    return d


def _stale() -> Driver:
    d = _stable()
    while d.state is not S.LEAVING:  # heartbeats answered, but the application never polls
        deadline = d.core.next_deadline(d.now)
        assert deadline is not None
        d.send(Tick(), deadline)
        if d.state is S.STABLE and d.pending(SendHeartbeat):
            d.respond(2)
    d.respond(-1)
    return d


def _fatal() -> Driver:
    d = _joining()
    d.respond(0, error=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    return d


REACH: dict[MemberState, Callable[[], Driver]] = {
    S.UNSUBSCRIBED: _unsubscribed,
    S.JOINING: _joining,
    S.RECONCILING: _reconciling,
    S.ACKNOWLEDGING: _acknowledging,
    S.STABLE: _stable,
    S.FENCED: _fenced,
    S.PREPARE_LEAVING: _prepare_leaving,
    S.LEAVING: _leaving,
    S.STALE: _stale,
    S.FATAL: _fatal,
}


@pytest.mark.parametrize("state", list(MemberState))
def test_each_state_is_reachable(state: MemberState) -> None:
    assert REACH[state]().state is state


# -- one event of each kind, built for the driver's situation ----------------------------------------

BOGUS = 999_999


def _first_id(d: Driver, cls: type, attr: str) -> int:
    pending = d.pending(cls)
    return getattr(pending[0], attr) if pending else BOGUS


EVENTS: dict[str, Callable[[Driver], Event]] = {
    "Subscribe": lambda d: Subscribe(topics=("bar",), callbacks=ALL_CALLBACKS),
    "Unsubscribe": lambda d: Unsubscribe(),
    "Close": lambda d: Close(),
    "Poll": lambda d: Poll(),
    "Tick": lambda d: Tick(),
    "HeartbeatResponseReceived": lambda d: HeartbeatResponseReceived(
        _first_id(d, SendHeartbeat, "request_id"),
        __import__("member_driver").response(max(d.core.member_epoch, 2)),
    ),
    "HeartbeatFailed": lambda d: HeartbeatFailed(_first_id(d, SendHeartbeat, "request_id")),
    "MetadataUpdated": lambda d: MetadataUpdated({}),
    "CallbackCompleted": lambda d: CallbackCompleted(_first_id(d, InvokeCallback, "callback_id")),
    "CommitRequested": lambda d: CommitRequested(token=7),
    "CommitResult": lambda d: CommitResult(_first_id(d, CommitOffsets, "request_id")),
    "OffsetFetchResult": lambda d: OffsetFetchResult(_first_id(d, FetchCommittedOffsets, "request_id")),
    "ClientAssignmentResult": lambda d: ClientAssignmentResult(2),
    "AssignorMetadataUpdated": lambda d: AssignorMetadataUpdated("sticky", 1, b"new"),
    "RequestAssignment": lambda d: RequestAssignment(),
    "CoordinatorCapabilities": lambda d: CoordinatorCapabilities(1, True),
}

U, J, R, A, ST, F, PL, L, SA, FA = (
    S.UNSUBSCRIBED,
    S.JOINING,
    S.RECONCILING,
    S.ACKNOWLEDGING,
    S.STABLE,
    S.FENCED,
    S.PREPARE_LEAVING,
    S.LEAVING,
    S.STALE,
    S.FATAL,
)

# Expected state after each event, per starting state (columns in EVENTS order).
EXPECTED: dict[MemberState, tuple[MemberState, ...]] = {
    #        Sub Uns Clo Pol Tic HBR HBF Met Cbk CoR CoRes OfR CAR AMU RqA Cap
    U: (J, U, U, U, U, U, U, U, U, U, U, U, U, U, U, U),
    J: (J, L, L, J, J, R, J, J, J, J, J, J, J, J, J, J),
    R: (R, PL, PL, R, R, R, R, R, R, R, R, R, R, R, R, R),
    A: (A, PL, PL, A, A, ST, A, A, A, A, A, A, A, A, A, A),
    ST: (ST, PL, PL, ST, ST, ST, ST, ST, ST, ST, ST, ST, ST, ST, ST, ST),
    F: (F, U, U, F, F, F, F, F, J, F, F, F, F, F, F, F),
    PL: (PL, PL, PL, PL, PL, PL, PL, PL, PL, PL, PL, PL, PL, PL, PL, PL),
    L: (L, L, L, L, L, U, U, L, L, L, L, L, L, L, L, L),
    SA: (SA, U, U, SA, SA, SA, SA, SA, SA, SA, SA, SA, SA, SA, SA, SA),
    FA: (FA, FA, FA, FA, FA, FA, FA, FA, FA, FA, FA, FA, FA, FA, FA, FA),
}

CASES = [(state, name, EXPECTED[state][i]) for state in MemberState for i, name in enumerate(EVENTS)]


@pytest.mark.parametrize(
    ("state", "event_name", "expected"), CASES, ids=[f"{s.name}-{e}" for s, e, _ in CASES]
)
def test_every_state_event_pair(
    state: MemberState, event_name: str, expected: MemberState, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = REACH[state]()
    assert d.state is state
    path: list[tuple[MemberState, MemberState]] = []

    def recording(current: MemberState, target: MemberState) -> MemberState:
        path.append((current, target))
        return check_transition(current, target)

    monkeypatch.setattr(core_module, "check_transition", recording)
    d.send(EVENTS[event_name](d))
    assert d.state is expected
    assert all(is_allowed(a, b) for a, b in path), path
    assert (path[0][0] if path else state) is state and (path[-1][1] if path else state) is expected
