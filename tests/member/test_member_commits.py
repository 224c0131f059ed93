"""Commit rules: auto-commit, user commits, epochs, retries, and never committing what is not owned."""

from __future__ import annotations

import pytest
from member_driver import MEMBER_ID, Driver, tp, tps

from kconsumer.client.member import PartitionOffset
from kconsumer.client.member.effects import CommitFinished, CommitOffsets, SendHeartbeat
from kconsumer.client.member.errors import CommitFailedError
from kconsumer.client.member.events import CommitRequested, CommitResult, Poll
from kconsumer.client.member.model import CommitReason
from kconsumer.errors import ErrorCode, StaleMemberEpochError, UnknownMemberIdError

OWNED = {"foo": [0, 1]}


def _stable(**config: object) -> Driver:
    d = Driver(**config)  # type: ignore[arg-type]
    d.join(OWNED)
    return d


def _commit(d: Driver) -> CommitOffsets:
    return d.one(CommitOffsets)


# -- auto-commit ---------------------------------------------------------------------------------


def test_auto_commit_every_interval_of_the_owned_current_positions() -> None:
    d = _stable(auto_commit_interval_ms=3_000)
    joined = d.now
    assert d.core.next_deadline(d.now) == joined + 3_000
    commit = _commit(d) if d.advance(3_000) else None
    assert commit is not None
    assert (commit.reason, commit.partitions, commit.offsets) == (CommitReason.AUTO, tps(OWNED), None)
    assert (commit.member_id, commit.member_epoch) == (MEMBER_ID, 2)
    d.advance(3_000)
    assert not d.of(CommitOffsets, d.last)  # one auto-commit at a time
    d.send(Poll())
    finished = d.one(CommitFinished, d.complete_commits())
    assert finished.error is None and finished.token is None and finished.partitions == tps(OWNED)
    d.advance(3_000)
    assert _commit(d).reason is CommitReason.AUTO


def test_no_auto_commit_without_partitions_or_when_disabled() -> None:
    d = Driver(auto_commit_interval_ms=1_000)
    d.join({})
    for _ in range(5):
        d.advance(1_000)
        d.send(Poll())
        if d.pending(SendHeartbeat):
            d.respond(2)
    assert not d.of(CommitOffsets, d.all)
    d = _stable(auto_commit=False)
    d.advance(10_000)
    assert not d.of(CommitOffsets, d.all)


def test_auto_commit_stale_epoch_is_retried_after_the_next_heartbeat_once() -> None:
    d = _stable(auto_commit_interval_ms=2_000)
    d.advance(2_000)
    assert not d.complete_commits(ErrorCode.STALE_MEMBER_EPOCH)
    d.advance(3_000)
    retry = d.one(CommitOffsets, d.respond(3))
    assert retry.member_epoch == 3 and retry.reason is CommitReason.AUTO
    finished = d.one(CommitFinished, d.complete_commits(ErrorCode.STALE_MEMBER_EPOCH))
    assert isinstance(finished.error, StaleMemberEpochError)


def test_auto_commit_retriable_error_brings_the_next_one_forward() -> None:
    d = _stable(auto_commit_interval_ms=5_000)
    d.advance(5_000)
    d.respond(2)
    effects = d.complete_commits(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    assert d.kinds(effects) == ["CommitFinished"]
    assert d.core.next_deadline(d.now) == d.now + 100
    assert _commit(d).reason is CommitReason.AUTO if d.advance(100) else False


# -- user commits --------------------------------------------------------------------------------


def test_user_commit_of_current_positions() -> None:
    d = _stable()
    d.send(CommitRequested(token=1))
    commit = _commit(d)
    assert (commit.reason, commit.partitions, commit.offsets) == (CommitReason.USER_SYNC, tps(OWNED), None)
    finished = d.one(CommitFinished, d.send(CommitResult(commit.request_id)))
    assert (finished.token, finished.request_id, finished.error, finished.skipped) == (
        1,
        commit.request_id,
        None,
        (),
    )


def test_explicit_offsets_of_partitions_not_owned_are_never_committed() -> None:
    d = _stable()
    offsets = (PartitionOffset(tp("foo", 0), 10), PartitionOffset(tp("foo", 7), 70))
    d.send(CommitRequested(token=2, offsets=offsets))
    commit = _commit(d)
    assert commit.partitions == (tp("foo", 0),) and commit.offsets == (offsets[0],)
    finished = d.one(CommitFinished, d.send(CommitResult(commit.request_id)))
    assert finished.skipped == (tp("foo", 7),) and isinstance(finished.error, CommitFailedError)
    assert "foo-7" in str(finished.error)
    effects = d.send(CommitRequested(token=3, offsets=(PartitionOffset(tp("bar", 0), 1),)))
    assert not d.of(CommitOffsets, effects)
    assert d.one(CommitFinished, effects).request_id is None


def test_user_commit_with_nothing_owned_succeeds_with_nothing() -> None:
    d = Driver()
    finished = d.one(CommitFinished, d.send(CommitRequested(token=4)))
    assert (finished.error, finished.partitions, finished.request_id) == (None, (), None)


def test_sync_commit_stale_epoch_is_retried_three_times_then_fails() -> None:
    d = _stable(auto_commit=False)
    d.send(CommitRequested(token=5))
    epochs = []
    for epoch in (3, 4, 5):
        epochs.append(d.pending(CommitOffsets)[0].member_epoch)
        assert not d.complete_commits(ErrorCode.STALE_MEMBER_EPOCH)
        d.advance(5_000)
        d.respond(epoch)
    epochs.append(d.pending(CommitOffsets)[0].member_epoch)
    assert epochs == [2, 3, 4, 5]
    finished = d.one(CommitFinished, d.complete_commits(ErrorCode.STALE_MEMBER_EPOCH))
    assert isinstance(finished.error, CommitFailedError)
    assert isinstance(finished.error.cause, StaleMemberEpochError)


def test_stale_commit_resends_at_once_when_the_epoch_already_moved() -> None:
    d = _stable(auto_commit=False)
    d.send(CommitRequested(token=6))
    d.advance(5_000)
    d.respond(3)  # the epoch moves while the commit is in flight
    retry = d.one(CommitOffsets, d.complete_commits(ErrorCode.STALE_MEMBER_EPOCH))
    assert retry.member_epoch == 3


def test_sync_commit_retries_retriable_errors_until_its_deadline() -> None:
    d = _stable()
    d.send(CommitRequested(token=7, deadline_ms=d.now + 1_000))
    effects = d.complete_commits(ErrorCode.NOT_COORDINATOR)
    assert d.kinds(effects) == ["FindCoordinator"]
    d.one(CommitOffsets, d.advance(100))
    d.complete_commits(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    d.one(CommitOffsets, d.advance(200))
    d.complete_commits(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    d.one(CommitOffsets, d.advance(400))
    d.complete_commits(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)  # retry would be at +800: past the deadline
    finished = d.one(CommitFinished, d.advance(300))
    assert isinstance(finished.error, CommitFailedError) and "deadline" in str(finished.error)


def test_async_commit_is_sent_once() -> None:
    d = _stable()
    d.send(CommitRequested(token=8, sync=False))
    assert _commit(d).reason is CommitReason.USER_ASYNC
    finished = d.one(CommitFinished, d.complete_commits(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS))
    assert finished.error is not None and finished.error.code is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS  # type: ignore[attr-defined]
    d.send(CommitRequested(token=9, sync=False))
    finished = d.one(CommitFinished, d.complete_commits(ErrorCode.STALE_MEMBER_EPOCH))
    assert isinstance(finished.error, StaleMemberEpochError)


@pytest.mark.parametrize("code", [ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_MEMBER_EPOCH])
def test_commit_fencing_errors_fail_and_leave_fencing_to_the_heartbeat(code: ErrorCode) -> None:
    d = _stable()
    d.send(CommitRequested(token=10))
    finished = d.one(CommitFinished, d.complete_commits(code))
    assert finished.error is not None and finished.error.code is code  # type: ignore[attr-defined]
    assert isinstance(d.core.fatal_error, type(None))
    assert d.core.assignment == tps(OWNED)
    if code is ErrorCode.UNKNOWN_MEMBER_ID:
        assert isinstance(finished.error, UnknownMemberIdError)


def test_a_commit_in_flight_when_the_partitions_are_lost_is_not_retried_after_the_rejoin() -> None:
    """A sync commit was on the wire when the member was fenced; it rejoined and got the same
    partitions back before the answer (a retriable error) came. Retrying would commit positions
    from before the loss over whatever the partitions' owner committed meanwhile: the commit
    fails instead. (Found by the simulation: regression `in_flight_commit_retried_after_loss`.)"""
    d = _stable(auto_commit=False)
    d.send(CommitRequested(token=12, deadline_ms=d.now + 60_000))
    old = d.one(CommitOffsets)
    d.advance(5_000)
    d.respond(0, error=ErrorCode.FENCED_MEMBER_EPOCH)
    d.complete_stops()
    d.complete_callbacks()
    d.respond(4, OWNED)
    for _ in range(3):
        d.complete_stops()
        d.complete_callbacks()
        d.complete_fetches()
    effects = d.send(CommitResult(old.request_id, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS))
    finished = d.one(CommitFinished, effects)
    assert finished.token == 12 and isinstance(finished.error, CommitFailedError)
    later = effects + d.advance(2_000)
    assert not [c for c in d.of(CommitOffsets, later) if c.reason is not CommitReason.AUTO]


def test_partitions_revoked_before_a_retry_are_filtered_out_of_it() -> None:
    d = _stable(auto_commit=False)
    d.send(CommitRequested(token=11))
    d.complete_commits(ErrorCode.STALE_MEMBER_EPOCH)  # waits for the next heartbeat
    d.advance(5_000)
    effects = d.respond(3, {"foo": [0]})  # foo-1 is revoked by the same response
    retry = d.one(CommitOffsets, effects)
    assert retry.partitions == tps(OWNED)  # still owned: its revocation has just started
    d.complete_commits(ErrorCode.STALE_MEMBER_EPOCH)
    d.complete_stops()
    d.complete_callbacks()  # foo-1 revoked and acknowledged
    d.respond(4)
    retry = d.one(CommitOffsets, d.last)
    assert retry.partitions == (tp("foo", 0),) and retry.member_epoch == 4
    finished = d.one(CommitFinished, d.complete_commits())
    assert finished.skipped == (tp("foo", 1),)


def test_pending_user_commit_fails_when_partitions_are_lost() -> None:
    d = _stable()
    d.send(CommitRequested(token=12))
    d.complete_commits(ErrorCode.STALE_MEMBER_EPOCH)
    d.advance(5_000)
    effects = d.respond(0, error=ErrorCode.FENCED_MEMBER_EPOCH)
    finished = d.one(CommitFinished, effects)
    assert finished.token == 12 and isinstance(finished.error, CommitFailedError)
