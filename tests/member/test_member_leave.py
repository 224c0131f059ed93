"""Leaving: unsubscribe, close (static -2), the expired poll timer (STALE), and leaves interrupted."""

from __future__ import annotations

from member_driver import MEMBER_ID, Driver, S, tp, tps

from kconsumer.client.member import LeaveReason
from kconsumer.client.member.effects import (
    CommitOffsets,
    Effect,
    InvokeCallback,
    LeaveDone,
    ReportError,
    SendHeartbeat,
    StopFetching,
)
from kconsumer.client.member.errors import PollIntervalExceededError
from kconsumer.client.member.events import Close, CommitRequested, Poll, Subscribe, Tick, Unsubscribe
from kconsumer.client.member.model import CallbackKind, CommitReason
from kconsumer.errors import ErrorCode

OWNED = {"foo": [0, 1]}


def _stable(**config: object) -> Driver:
    d = Driver(**config)  # type: ignore[arg-type]
    d.join(OWNED)
    return d


def test_unsubscribe_stops_commits_revokes_then_leaves_with_minus_one() -> None:
    d = _stable(instance_id="inst-1")
    effects = d.send(Unsubscribe())
    assert d.state is S.PREPARE_LEAVING
    stop = d.one(StopFetching, effects)
    assert effects == [StopFetching(stop.stop_id, tps(OWNED))]  # the commit waits for the stop
    effects = d.complete_stops({tp("foo", 0): 7, tp("foo", 1): 9})
    commit = d.one(CommitOffsets, effects)
    assert (commit.reason, commit.partitions, commit.member_epoch) == (CommitReason.REVOCATION, tps(OWNED), 2)
    assert [o.offset for o in commit.offsets or ()] == [7, 9]  # the positions taken when fetching stopped
    effects = d.complete_commits()
    assert d.kinds(effects) == ["CommitFinished", "InvokeCallback:REVOKED"]
    effects = d.complete_callbacks()
    assert d.state is S.LEAVING
    leave = d.one(SendHeartbeat, effects)
    assert leave.leave and leave.request.member_epoch == -1  # unsubscribe: a full leave, even when static
    assert (leave.request.member_id, leave.request.instance_id) == (MEMBER_ID, "inst-1")
    assert leave.request.subscribed_topic_names is None and leave.request.topic_partitions is None
    effects = d.respond(-1)
    assert d.state is S.UNSUBSCRIBED and effects == [LeaveDone(LeaveReason.UNSUBSCRIBE)]
    assert d.core.assignment == () and d.core.member_epoch == 0
    assert d.core.next_deadline(d.now) is None


def test_static_member_close_leaves_with_minus_two_and_then_ignores_everything() -> None:
    d = _stable(instance_id="inst-1")
    d.send(Close())
    assert d.one(CommitOffsets, d.complete_stops()).reason is CommitReason.CLOSE
    d.settle()
    leave = d.in_flight()
    assert leave.request.member_epoch == -2 and leave.request.instance_id == "inst-1"
    assert d.respond(-2) == [LeaveDone(LeaveReason.CLOSE)]
    assert d.core.closed and d.state is S.UNSUBSCRIBED
    assert d.send(Subscribe(topics=("foo",))) == [] and d.send(CommitRequested(token=1)) == []


def test_dynamic_member_close_leaves_with_minus_one() -> None:
    d = _stable()
    d.send(Close())
    d.settle()
    assert d.in_flight().request.member_epoch == -1


def test_close_during_unsubscribe_upgrades_it() -> None:
    d = _stable(instance_id="inst-1")
    d.send(Unsubscribe())
    assert not d.send(Close())
    d.settle()
    assert d.in_flight().request.member_epoch == -2
    assert d.respond(-2) == [LeaveDone(LeaveReason.CLOSE)]


def test_any_answer_ends_the_leave_which_is_never_retried() -> None:
    for answer in ("group-not-found", "unknown-member", "failure"):
        d = _stable()
        d.send(Unsubscribe())
        d.settle()
        if answer == "group-not-found":
            effects = d.respond(-1, error=ErrorCode.GROUP_ID_NOT_FOUND)
        elif answer == "unknown-member":
            effects = d.respond(-1, error=ErrorCode.UNKNOWN_MEMBER_ID)
        else:
            effects = d.fail_heartbeat(ErrorCode.REQUEST_TIMED_OUT)
        assert effects == [LeaveDone(LeaveReason.UNSUBSCRIBE)], answer
        assert d.state is S.UNSUBSCRIBED
        assert not d.advance(100_000)


def test_close_when_not_in_a_group_is_done_at_once() -> None:
    d = Driver()
    assert d.send(Close()) == [LeaveDone(LeaveReason.CLOSE)]
    assert d.core.closed


def test_close_while_joining_waits_for_the_join_response_then_leaves() -> None:
    d = Driver()
    d.send(Subscribe(topics=("foo",)))
    effects = d.send(Close())
    assert d.state is S.LEAVING and not d.of(SendHeartbeat, effects)  # one heartbeat in flight at most
    effects = d.respond(2, {"foo": [0]})
    leave = d.one(SendHeartbeat, effects)
    assert leave.leave and leave.request.member_epoch == -1
    assert not d.of(InvokeCallback, d.all)  # the late assignment is ignored


def test_resubscribing_during_an_unsubscribe_rejoins_after_the_leave() -> None:
    d = _stable()
    d.send(Unsubscribe())
    d.send(Subscribe(topics=("bar",)))
    d.settle()
    effects = d.respond(-1)
    assert d.kinds(effects) == ["LeaveDone", "SendHeartbeat"]
    join = d.one(SendHeartbeat, effects).request
    assert join.member_epoch == 0 and join.subscribed_topic_names == ["bar"]
    assert d.state is S.JOINING


def test_fenced_while_preparing_to_leave_skips_the_leave_heartbeat() -> None:
    d = _stable()
    d.advance(5_000)
    d.in_flight()
    d.send(Unsubscribe())
    d.complete_stops()  # the commit of the leave waits
    d.respond(0, error=ErrorCode.FENCED_MEMBER_EPOCH)
    assert d.state is S.PREPARE_LEAVING
    effects = d.complete_commits(ErrorCode.UNKNOWN_MEMBER_ID)
    lost = d.one(InvokeCallback, effects)
    assert lost.kind is CallbackKind.LOST and lost.partitions == tps(OWNED)
    effects = d.complete_callbacks()
    assert effects == [LeaveDone(LeaveReason.UNSUBSCRIBE)] and d.state is S.UNSUBSCRIBED
    assert not [hb for hb in d.of(SendHeartbeat, d.all) if hb.leave]


def test_unsubscribe_while_fenced_is_done_at_once() -> None:
    d = _stable()
    d.advance(5_000)
    d.respond(0, error=ErrorCode.UNKNOWN_MEMBER_ID)
    assert d.state is S.FENCED
    assert d.send(Unsubscribe()) == [LeaveDone(LeaveReason.UNSUBSCRIBE)]
    assert d.state is S.UNSUBSCRIBED
    assert not d.complete_callbacks()  # the lost callback finishing later changes nothing


def test_close_commit_gives_up_at_the_close_deadline() -> None:
    d = _stable()
    d.send(Close(deadline_ms=d.now + 250))
    d.complete_stops()
    d.complete_commits(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    d.advance(100)
    d.complete_commits(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)  # next retry at +200: past the deadline
    effects = d.advance(150)
    assert d.kinds(effects) == ["CommitFinished", "InvokeCallback:REVOKED"]


# -- max.poll.interval.ms --------------------------------------------------------------------------


def _expire(d: Driver) -> list[Effect]:
    """Answer heartbeats without polling until the poll timer expires; returns the expiry's effects."""
    while True:
        deadline = d.core.next_deadline(d.now)
        assert deadline is not None
        effects = d.send(Tick(), deadline)
        if d.state is not S.STABLE:
            return effects
        if d.pending(SendHeartbeat):
            d.respond(2)
        d.complete_commits()


def test_expired_poll_timer_loses_the_partitions_and_leaves() -> None:
    d = _stable(auto_commit=False)
    polled_at = d.now
    effects = _expire(d)
    assert d.now == polled_at + 300_000
    assert d.state is S.LEAVING
    report = d.one(ReportError, effects)
    assert not report.fatal and isinstance(report.error, PollIntervalExceededError)
    lost = d.one(InvokeCallback, effects)
    assert (lost.kind, lost.partitions) == (CallbackKind.LOST, tps(OWNED))
    leave = d.one(SendHeartbeat, effects)
    assert leave.leave and leave.request.member_epoch == -1
    assert d.kinds(effects) == ["ReportError", "StopFetching", "InvokeCallback:LOST", "SendHeartbeat"]
    assert not d.of(CommitOffsets, effects)
    d.respond(-1)
    assert d.state is S.STALE and d.core.assignment == ()
    assert d.core.next_deadline(d.now) is None
    assert not d.advance(1_000_000)  # stays stale, silent, until the application polls


def test_stale_member_rejoins_at_the_next_poll_once_the_lost_callback_ran() -> None:
    d = _stable()
    _expire(d)
    d.respond(-1)
    assert not d.send(Poll()) and d.state is S.STALE  # the lost callback has not run yet
    effects = d.complete_callbacks()
    assert d.state is S.JOINING
    join = d.one(SendHeartbeat, effects).request
    assert (join.member_id, join.member_epoch) == (MEMBER_ID, 0)


def test_stale_member_whose_callback_ran_first_rejoins_at_the_poll() -> None:
    d = _stable()
    _expire(d)
    d.complete_callbacks()
    d.respond(-1)
    assert d.state is S.STALE
    d.one(SendHeartbeat, d.send(Poll()))
    assert d.state is S.JOINING


def test_static_member_expired_poll_leaves_with_minus_two() -> None:
    d = _stable(instance_id="inst-1")
    effects = _expire(d)
    assert d.one(SendHeartbeat, effects).request.member_epoch == -2


def test_polling_keeps_the_member_in_the_group() -> None:
    d = _stable()
    for _ in range(200):
        d.advance(5_000)
        d.send(Poll())
        if d.pending(SendHeartbeat):
            d.respond(2)
        d.complete_commits()
    assert d.state is S.STABLE


def test_expiry_with_a_heartbeat_in_flight_waits_for_it() -> None:
    d = _stable(auto_commit=False, rebalance_timeout_ms=10_000)
    d.advance(5_000)
    d.in_flight()
    effects = d.advance(5_000)
    assert d.state is S.LEAVING and not d.of(SendHeartbeat, effects)
    leave = d.one(SendHeartbeat, d.respond(2, {"foo": [0, 1, 2]}))
    assert leave.leave


def test_unsubscribe_during_a_revocation_does_not_revoke_twice() -> None:
    d = _stable(auto_commit=False)
    d.advance(5_000)
    d.respond(2, {"foo": [0]})
    effects = d.complete_stops()  # on_partitions_revoked([foo-1]) is pending
    assert d.one(InvokeCallback, effects).partitions == tps({"foo": [1]})
    effects = d.send(Unsubscribe())
    assert d.state is S.PREPARE_LEAVING
    assert d.one(StopFetching, effects).partitions == tps({"foo": [0]})  # foo-1 is already stopped
    revoke = d.of(InvokeCallback, d.complete_stops())
    assert [(cb.kind, cb.partitions) for cb in revoke] == [(CallbackKind.REVOKED, tps({"foo": [0]}))]


def test_heartbeats_continue_while_preparing_to_leave() -> None:
    d = _stable()
    d.send(Unsubscribe())  # waits for its commit
    hb = d.one(SendHeartbeat, d.advance(5_000))
    assert not hb.leave and hb.request.member_epoch == 2
    d.respond(2, {"foo": [0, 1, 2]})  # a new assignment is ignored while leaving
    assert d.state is S.PREPARE_LEAVING and not d.of(InvokeCallback, d.last)
