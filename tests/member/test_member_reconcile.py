"""Reconciliation: revoke before assign, acknowledgements, metadata resolution, callbacks, offsets."""

from __future__ import annotations

from member_driver import MEMBER_ID, TOPIC_IDS, Driver, S, tp, tps

from kconsumer.client.member import ClientAssignor, FetchPosition, OffsetReset, PartitionOffset
from kconsumer.client.member.effects import (
    CommitOffsets,
    Effect,
    FetchCommittedOffsets,
    InvokeCallback,
    RefreshMetadata,
    SendHeartbeat,
    StartFetching,
    StopFetching,
)
from kconsumer.client.member.events import (
    CallbackCompleted,
    MetadataUpdated,
    OffsetFetchResult,
    Subscribe,
    Unsubscribe,
)
from kconsumer.client.member.model import AssignmentMetadata, CallbackKind, CommitReason
from kconsumer.errors import ErrorCode
from kconsumer.protocol.messages.consumer_group import TopicPartitions


def _owned(request_partitions: list[TopicPartitions] | None) -> dict[str, list[int]] | None:
    if request_partitions is None:
        return None
    names = {v: k for k, v in TOPIC_IDS.items()}
    return {names[t.topic_id]: t.partitions for t in request_partitions}


def test_revocation_order_stop_commit_callback_then_ack() -> None:
    d = Driver(auto_commit_interval_ms=60_000)
    d.join({"foo": [0, 1, 2]})
    d.advance(5_000)
    effects = d.respond(2, {"foo": [0, 1]})
    assert d.state is S.RECONCILING
    stop = d.one(StopFetching, effects)
    assert effects == [StopFetching(stop.stop_id, (tp("foo", 2),))]  # nothing else until it stopped
    effects = d.complete_stops({tp("foo", 2): 17})
    commit = d.one(CommitOffsets, effects)
    assert commit.partitions == (tp("foo", 2),)
    assert commit.offsets == (PartitionOffset(tp("foo", 2), 17),)  # the position when it stopped
    assert (commit.reason, commit.member_id, commit.member_epoch) == (CommitReason.REVOCATION, MEMBER_ID, 2)

    effects = d.complete_commits()
    assert d.kinds(effects) == ["CommitFinished", "InvokeCallback:REVOKED"]
    assert d.one(InvokeCallback, effects).partitions == (tp("foo", 2),)
    assert d.core.assignment == tps({"foo": [0, 1, 2]})  # still owned until the callback returns

    # The acknowledgement waits for the callback, even past the heartbeat interval.
    regular = d.one(SendHeartbeat, d.advance(5_000)).request
    assert regular.topic_partitions is None
    d.respond(2)
    effects = d.complete_callbacks()
    ack = d.one(SendHeartbeat, effects).request
    assert _owned(ack.topic_partitions) == {"foo": [0, 1]}
    # Then on_partitions_assigned with nothing new, as Kafka's consumers after a reconciliation.
    assigned = d.one(InvokeCallback, effects)
    assert (assigned.kind, assigned.partitions) == (CallbackKind.ASSIGNED, ())
    d.complete_callbacks()
    assert d.state is S.STABLE and d.core.assignment == tps({"foo": [0, 1]})


def test_revoke_is_acknowledged_before_anything_is_assigned() -> None:
    d = Driver(auto_offset_reset=OffsetReset.EARLIEST)
    d.join({"foo": [0, 1]})
    d.advance(5_000)
    d.respond(2, {"foo": [1], "bar": [0]})
    log: list[Effect] = []
    while (
        d.pending(StopFetching)
        or d.pending(CommitOffsets)
        or d.pending(InvokeCallback)
        or d.pending(FetchCommittedOffsets)
    ):
        log += d.complete_stops() + d.complete_commits() + d.complete_callbacks() + d.complete_fetches()
        if d.pending(SendHeartbeat):
            log += d.respond(3)
    kinds = [k for k in d.kinds(log) if k != "CommitFinished"]
    assert kinds == [
        "CommitOffsets",  # of foo-0, at the position reported when fetching stopped
        "InvokeCallback:REVOKED",
        "SendHeartbeat",  # ack of the revocation: foo-0 no longer reported
        "InvokeCallback:ASSIGNED",
        "FetchCommittedOffsets",
        "StartFetching",
        "SendHeartbeat",  # ack of the assignment
    ]
    acks = d.of(SendHeartbeat, log)
    # The granted bar-0 is reported from the start (the member may start fetching it any time):
    # the coordinator must not hand it to another member meanwhile. The second ack changes nothing.
    assert _owned(acks[0].request.topic_partitions) == {"foo": [1], "bar": [0]}
    assert acks[1].request.topic_partitions is None
    assert d.one(StartFetching, log).positions == (FetchPosition(tp("bar", 0), OffsetReset.EARLIEST),)
    assert d.state is S.STABLE


def test_assignment_order_and_start_positions() -> None:
    assignor = ClientAssignor("sticky", 0, 1, 1)
    d = Driver(client_assignors=(assignor,))
    d.send(Subscribe(topics=("foo",), callbacks=frozenset(CallbackKind)))
    d.metadata()
    meta = AssignmentMetadata(0, 1, b"for-me")
    effects = d.respond(2, {"foo": [0, 1]}, metadata=meta)
    on_assignment = d.one(InvokeCallback, effects)
    assert (on_assignment.kind, on_assignment.assignment_metadata) == (CallbackKind.ASSIGNMENT, meta)
    assert on_assignment.partitions == tps({"foo": [0, 1]})
    effects = d.complete_callbacks()
    assigned = d.one(InvokeCallback, effects)
    assert (assigned.kind, assigned.partitions) == (CallbackKind.ASSIGNED, tps({"foo": [0, 1]}))
    assert not d.of(FetchCommittedOffsets, effects)  # not before on_partitions_assigned returned
    effects = d.complete_callbacks()
    fetch = d.one(FetchCommittedOffsets, effects)
    assert (fetch.member_id, fetch.member_epoch, fetch.partitions) == (MEMBER_ID, 2, tps({"foo": [0, 1]}))
    assert d.core.assignment == ()
    committed = (PartitionOffset(tp("foo", 0), 42, leader_epoch=7), PartitionOffset(tp("foo", 1), -1))
    effects = d.send(OffsetFetchResult(fetch.request_id, offsets=committed))
    assert d.kinds(effects) == ["StartFetching", "SendHeartbeat"]
    assert d.one(StartFetching, effects).positions == (
        FetchPosition(tp("foo", 0), 42, 7),
        FetchPosition(tp("foo", 1), OffsetReset.LATEST),
    )
    assert d.core.assignment == tps({"foo": [0, 1]})


def test_on_assignment_is_called_once_per_epoch() -> None:
    d = Driver(client_assignors=(ClientAssignor("sticky", 0, 1, 1),))
    meta = AssignmentMetadata(0, 1, b"x")
    d.send(Subscribe(topics=("foo",)))
    d.metadata()
    d.respond(2, {"foo": [0]}, metadata=meta)
    d.settle()
    d.respond(2, {"foo": [0]}, metadata=meta)  # the same epoch again
    d.advance(5_000)
    d.respond(2, {"foo": [0]}, metadata=meta)
    d.advance(5_000)
    d.respond(3, {"foo": [0]}, metadata=AssignmentMetadata(0, 1, b"y"))
    d.settle()
    calls = [cb for cb in d.of(InvokeCallback, d.all) if cb.kind is CallbackKind.ASSIGNMENT]
    assert [cb.assignment_metadata for cb in calls] == [meta, AssignmentMetadata(0, 1, b"y")]


def test_unknown_topic_ids_are_resolved_through_metadata_partially_first() -> None:
    d = Driver()
    d.send(Subscribe(topics=("foo", "bar"), callbacks=frozenset(CallbackKind)))
    d.send(MetadataUpdated({TOPIC_IDS["foo"]: "foo"}))
    effects = d.respond(2, {"foo": [0], "bar": [0]})
    assert d.one(RefreshMetadata, effects).topic_ids == (TOPIC_IDS["bar"],)
    assert d.one(InvokeCallback, effects).partitions == (tp("foo", 0),)  # the resolvable part goes on
    d.settle()
    assert d.core.assignment == (tp("foo", 0),)
    d.respond(2)
    assert d.state is S.RECONCILING  # bar still unresolved

    # A metadata update without it: asked again after the backoff, not at once.
    assert not d.of(RefreshMetadata, d.send(MetadataUpdated({})))
    assert d.one(RefreshMetadata, d.advance(100)).topic_ids == (TOPIC_IDS["bar"],)
    effects = d.metadata("bar")
    assert d.one(InvokeCallback, effects).partitions == (tp("bar", 0),)
    d.settle()
    assert d.core.assignment == tps({"foo": [0], "bar": [0]}) and d.state is S.STABLE


def test_a_new_target_during_a_step_is_handled_after_it() -> None:
    d = Driver(auto_commit=False)
    d.join({"foo": [0, 1]})
    d.advance(5_000)
    d.respond(2, {"foo": [0]})  # revoke foo-1
    revoke = d.one(InvokeCallback, d.complete_stops())
    d.advance(5_000)
    d.respond(3, {"foo": [0, 1]})  # foo-1 back while its revocation runs
    assert d.state is S.RECONCILING
    effects = d.send(CallbackCompleted(revoke.callback_id))
    d.answered.add(revoke.callback_id)
    # foo-1 is in the target again: still reported (the member assigns it right away), so the
    # heartbeat after the revocation step carries no change.
    assert d.one(SendHeartbeat, effects).request.topic_partitions is None
    assigned = d.one(InvokeCallback, effects)
    assert (assigned.kind, assigned.partitions) == (CallbackKind.ASSIGNED, (tp("foo", 1),))
    d.respond(3)
    d.settle()
    assert d.core.assignment == tps({"foo": [0, 1]})


def test_a_partition_removed_after_its_assigned_callback_gets_revoked() -> None:
    d = Driver(auto_commit=False)
    d.send(Subscribe(topics=("foo",), callbacks=frozenset(CallbackKind)))
    d.metadata()
    d.respond(2, {"foo": [0, 1]})
    d.advance(5_000)
    d.respond(3, {"foo": [0]})  # while on_partitions_assigned([foo-0, foo-1]) runs
    d.settle()
    if d.pending(SendHeartbeat):
        d.respond(3)
    d.settle()
    callbacks = [(cb.kind, cb.partitions) for cb in d.of(InvokeCallback, d.all)]
    assert callbacks == [
        (CallbackKind.ASSIGNED, tps({"foo": [0, 1]})),
        (CallbackKind.REVOKED, (tp("foo", 1),)),
        (CallbackKind.ASSIGNED, ()),  # after every reconciliation, as Kafka's consumers
    ]
    assert d.core.assignment == (tp("foo", 0),)


def test_a_raising_callback_does_not_stall_the_reconciliation() -> None:
    d = Driver()
    d.send(Subscribe(topics=("foo",), callbacks=frozenset(CallbackKind)))
    d.metadata()
    d.respond(2, {"foo": [0]})
    d.complete_callbacks(error=RuntimeError("boom in on_partitions_assigned"))
    effects = d.complete_fetches()
    assert d.kinds(effects) == ["StartFetching", "SendHeartbeat"]
    assert d.state is S.STABLE and d.core.assignment == (tp("foo", 0),)


def test_without_a_listener_nothing_waits_for_the_application() -> None:
    d = Driver()
    d.join({"foo": [0, 1]}, callbacks=frozenset())
    d.advance(5_000)
    effects = d.respond(2, {"foo": [0]})
    assert d.kinds(effects) == ["StopFetching"]  # only the fetch path is waited for
    effects += d.complete_stops()
    effects += d.complete_commits()
    assert not d.of(InvokeCallback, d.all)
    assert _owned(d.one(SendHeartbeat, effects).request.topic_partitions) == {"foo": [0]}


def test_first_assignment_calls_assigned_even_when_empty() -> None:
    d = Driver()
    d.send(Subscribe(topics=("foo",), callbacks=frozenset(CallbackKind)))
    effects = d.respond(2, {})
    assigned = d.one(InvokeCallback, effects)
    assert (assigned.kind, assigned.partitions) == (CallbackKind.ASSIGNED, ())
    effects = d.complete_callbacks()
    assert d.state is S.STABLE and not d.of(SendHeartbeat, effects)  # nothing to acknowledge
    d.advance(5_000)
    d.respond(2, {})
    assert len(d.of(InvokeCallback, d.all)) == 1


def test_no_revocation_commit_without_auto_commit() -> None:
    d = Driver(auto_commit=False)
    d.join({"foo": [0, 1]})
    d.advance(5_000)
    effects = d.respond(2, {"foo": [0]})
    assert d.kinds(effects) == ["StopFetching"]
    assert d.kinds(d.complete_stops()) == ["InvokeCallback:REVOKED"]


def test_a_failed_revocation_commit_does_not_block_the_revocation() -> None:
    d = Driver(auto_commit_interval_ms=60_000)
    d.join({"foo": [0, 1]})
    d.advance(5_000)
    d.respond(2, {"foo": [0]})
    d.complete_stops()
    effects = d.complete_commits(ErrorCode.OFFSET_METADATA_TOO_LARGE)
    assert d.kinds(effects) == ["CommitFinished", "InvokeCallback:REVOKED"]


def test_offset_fetch_with_a_stale_epoch_is_retried_with_the_next_epoch() -> None:
    d = Driver()
    d.send(Subscribe(topics=("foo",)))
    d.metadata()
    d.respond(2, {"foo": [0]})
    fetch = d.pending(FetchCommittedOffsets)[0]
    effects = d.complete_fetches(error=ErrorCode.STALE_MEMBER_EPOCH)
    assert not effects  # waits for the next heartbeat
    d.advance(5_000)
    effects = d.respond(3)
    retry = d.one(FetchCommittedOffsets, effects)
    assert retry.member_epoch == 3 and retry.partitions == fetch.partitions
    d.complete_fetches()
    assert d.core.assignment == (tp("foo", 0),)


def test_offset_fetch_retries_other_errors_with_backoff() -> None:
    d = Driver()
    d.send(Subscribe(topics=("foo",)))
    d.metadata()
    d.respond(2, {"foo": [0]})
    effects = d.complete_fetches(error=ErrorCode.COORDINATOR_NOT_AVAILABLE)
    assert d.kinds(effects) == ["FindCoordinator"]
    d.one(FetchCommittedOffsets, d.advance(100))
    effects = d.complete_fetches(error=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    assert d.kinds(effects) == ["ReportError"]
    d.one(FetchCommittedOffsets, d.advance(200))


def test_lost_partitions_include_those_being_assigned() -> None:
    d = Driver()
    d.join({"foo": [0]})
    d.advance(5_000)
    d.respond(2, {"foo": [0, 1]})
    d.complete_callbacks()  # on_partitions_assigned([foo-1]) ran; its offsets are being fetched
    d.advance(5_000)
    effects = d.respond(0, error=ErrorCode.FENCED_MEMBER_EPOCH)
    lost = d.one(InvokeCallback, effects)
    assert lost.kind is CallbackKind.LOST and lost.partitions == tps({"foo": [0, 1]})
    assert d.one(StopFetching, effects).partitions == (tp("foo", 0),)  # foo-1 was never fetched
    assert not d.of(StartFetching, d.complete_fetches())  # the late offsets are ignored


def test_no_acknowledgement_before_the_application_stopped_fetching() -> None:
    """Without auto-commit and without a listener, the revocation still waits for the fetch path:
    the coordinator must not give the partition to another member while this one may still hand
    its records to the application."""
    d = Driver(auto_commit=False)
    d.join({"foo": [0, 1]}, callbacks=frozenset())
    d.advance(5_000)
    effects = d.respond(2, {"foo": [0]})
    assert d.kinds(effects) == ["StopFetching"]
    for _ in range(5):  # heartbeats go on, but none acknowledges the revocation
        d.advance(5_000)
        assert _owned(d.in_flight().request.topic_partitions or []) in ({}, {"foo": [0, 1]})
        d.respond(2)
    assert d.core.assignment == tps({"foo": [0, 1]})
    ack = d.one(SendHeartbeat, d.complete_stops()).request
    assert _owned(ack.topic_partitions) == {"foo": [0]}


def test_leave_during_an_unconfirmed_revocation_stops_again_and_commits_its_positions() -> None:
    d = Driver()
    d.join({"foo": [0, 1]})
    d.advance(5_000)
    d.respond(2, {"foo": [0]})  # foo-1's stop is not confirmed yet
    stop = d.one(StopFetching, d.send(Unsubscribe()))
    assert stop.partitions == tps({"foo": [0, 1]})  # foo-1 stopped again: its position comes back
    effects = d.complete_stops({tp("foo", 0): 5, tp("foo", 1): 8})
    effects += d.complete_stops()
    commit = d.one(CommitOffsets, effects)
    assert {(o.partition.partition, o.offset) for o in commit.offsets or ()} == {(0, 5), (1, 8)}


def test_a_fetch_answered_topic_gone_finishes_without_fetching_that_topic() -> None:
    """A topic deleted while its committed offsets were being fetched: the coordinator answers
    UNKNOWN_TOPIC_ID for it, retrying cannot help, so the assignment finishes without fetching
    it (the next target takes it away) instead of retrying for good (sim seed 6218)."""
    d = Driver()
    d.send(Subscribe(topics=("foo", "bar"), callbacks=frozenset(CallbackKind)))
    d.metadata()
    d.respond(2, {"foo": [0], "bar": [0]})
    fetch = d.one(FetchCommittedOffsets, d.complete_callbacks())
    effects = d.send(
        OffsetFetchResult(
            fetch.request_id,
            ErrorCode.UNKNOWN_TOPIC_ID,
            offsets=(PartitionOffset(tp("foo", 0), 42),),
            gone=(tp("bar", 0),),
        )
    )
    assert d.kinds(effects) == ["StartFetching", "SendHeartbeat"]
    assert d.one(StartFetching, effects).positions == (FetchPosition(tp("foo", 0), 42),)
    assert not d.of(FetchCommittedOffsets, d.advance(5_000))  # not retried
    assert d.core.assignment == tps({"foo": [0], "bar": [0]})  # owned, not fetched
    effects = d.respond(3, {"foo": [0]})  # the coordinator drops the deleted topic
    assert d.one(StopFetching, effects).partitions == tps({"bar": [0]})
    d.settle()
    assert d.core.assignment == tps({"foo": [0]})
