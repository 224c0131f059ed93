"""Every row of the heartbeat error table: the resulting state and effects, exactly."""

from __future__ import annotations

import pytest
from member_driver import MEMBER_ID, Driver, S, response, tps

from kconsumer.client.member.effects import (
    CommitFinished,
    CommitOffsets,
    FindCoordinator,
    InvokeCallback,
    ReportError,
    SendHeartbeat,
    StopFetching,
)
from kconsumer.client.member.events import CommitRequested, HeartbeatResponseReceived, Subscribe
from kconsumer.client.member.model import CallbackKind
from kconsumer.errors import (
    AuthorizationError,
    ErrorCode,
    FencedInstanceIdError,
    GroupIdNotFoundError,
    GroupMaxSizeReachedError,
    InvalidRegularExpressionError,
    InvalidRequestError,
    KafkaApiError,
    UnreleasedInstanceIdError,
    UnsupportedAssignorError,
    UnsupportedVersionError,
)

OWNED = {"foo": [0, 1]}


def _stable(**config: object) -> Driver:
    d = Driver(**config)  # type: ignore[arg-type]
    d.join(OWNED)
    d.advance(5_000)
    d.in_flight()
    return d


# -- fencing -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("code", [ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID])
def test_fenced_loses_everything_then_rejoins_with_the_same_id(code: ErrorCode) -> None:
    d = _stable()
    effects = d.respond(0, error=code)
    assert d.state is S.FENCED
    assert effects == [
        StopFetching(d.one(StopFetching, effects).stop_id, tps(OWNED)),
        InvokeCallback(d.pending(InvokeCallback)[0].callback_id, CallbackKind.LOST, tps(OWNED)),
    ]
    assert d.core.member_epoch == 0 and d.core.assignment == ()
    effects = d.complete_callbacks()
    assert d.state is S.JOINING
    join = d.one(SendHeartbeat, effects).request
    assert (join.member_id, join.member_epoch) == (MEMBER_ID, 0)
    assert join.topic_partitions == [] and join.subscribed_topic_names == ["foo"]
    assert join.rebalance_timeout_ms == 300_000
    assert not d.of(CommitOffsets, d.all[-4:])  # lost partitions are never committed


def test_fenced_without_a_lost_callback_rejoins_once_fetching_stopped() -> None:
    d = Driver()
    d.join(OWNED, callbacks=frozenset())
    d.advance(5_000)
    effects = d.respond(0, error=ErrorCode.FENCED_MEMBER_EPOCH)
    assert d.kinds(effects) == ["StopFetching"] and d.state is S.FENCED
    effects = d.complete_stops()
    assert d.state is S.JOINING and d.one(SendHeartbeat, effects).request.member_epoch == 0
    assert not d.of(CommitOffsets, effects)  # lost partitions are never committed


def test_fenced_again_while_joining_backs_off() -> None:
    d = Driver()
    d.send(Subscribe(topics=("foo",)))
    effects = d.respond(0, error=ErrorCode.FENCED_MEMBER_EPOCH)  # Kafka 4.0/4.1 may fence a 0 rejoin
    assert d.state is S.JOINING and not d.of(SendHeartbeat, effects)
    assert d.core.next_deadline(d.now) == d.now + 100


def test_group_id_not_found_in_the_group_is_a_fence() -> None:
    d = _stable()
    d.respond(0, error=ErrorCode.GROUP_ID_NOT_FOUND)
    assert d.state is S.FENCED


def test_group_id_not_found_on_join_is_fatal_not_a_consumer_group() -> None:
    d = Driver()
    d.send(Subscribe(topics=("foo",)))
    why = "Cannot upgrade classic group g to consumer group because an unsupported custom assignor is in use."
    d.respond(0, error=ErrorCode.GROUP_ID_NOT_FOUND, message=why)
    assert d.state is S.FATAL
    error = d.one(ReportError).error
    assert isinstance(error, GroupIdNotFoundError) and "not a consumer-protocol group" in str(error)
    assert why in str(error)  # the coordinator's reason, which says what to change


# -- fatal -------------------------------------------------------------------------------------------

FATAL = [
    (ErrorCode.UNRELEASED_INSTANCE_ID, UnreleasedInstanceIdError, ["inst-1", "session"]),
    (ErrorCode.FENCED_INSTANCE_ID, FencedInstanceIdError, ["inst-1", "its own group.instance.id"]),
    (ErrorCode.GROUP_MAX_SIZE_REACHED, GroupMaxSizeReachedError, ["group.consumer.max.size"]),
    (ErrorCode.UNSUPPORTED_ASSIGNOR, UnsupportedAssignorError, ["group.remote.assignor"]),
    (ErrorCode.INVALID_REQUEST, InvalidRequestError, ["the coordinator says", "bug"]),
    (ErrorCode.INVALID_REGULAR_EXPRESSION, InvalidRegularExpressionError, ["RE2J", "the coordinator says"]),
    (ErrorCode.GROUP_AUTHORIZATION_FAILED, AuthorizationError, ["READ on the group", "'g'"]),
    (ErrorCode.UNSUPPORTED_VERSION, UnsupportedVersionError, ["Kafka 4.0", "group.version"]),
    (ErrorCode.UNKNOWN_SERVER_ERROR, KafkaApiError, ["the coordinator says"]),
]


@pytest.mark.parametrize(("code", "cls", "words"), FATAL, ids=[c.name for c, _, _ in FATAL])
def test_fatal_errors(code: ErrorCode, cls: type[KafkaApiError], words: list[str]) -> None:
    d = _stable(instance_id="inst-1")
    effects = d.respond(0, error=code, message="the coordinator says no")
    assert d.state is S.FATAL
    callback = d.pending(InvokeCallback)[0]
    assert effects == [
        StopFetching(d.one(StopFetching, effects).stop_id, tps(OWNED)),
        InvokeCallback(callback.callback_id, CallbackKind.LOST, tps(OWNED)),
        ReportError(d.core.fatal_error, fatal=True),  # type: ignore[arg-type]
    ]
    error = d.core.fatal_error
    assert isinstance(error, cls) and error.code is code
    for word in words:
        assert word.replace("the coordinator says", "the coordinator says no") in str(error)
    assert d.core.next_deadline(d.now) is None
    assert not d.advance(1_000_000)  # no more requests
    finished = d.one(CommitFinished, d.send(CommitRequested(token=3)))
    assert finished.error is error and finished.token == 3


def test_fatal_while_joining_has_nothing_to_lose() -> None:
    d = Driver(instance_id="inst-1")
    d.send(Subscribe(topics=("foo",), callbacks=frozenset(CallbackKind)))
    effects = d.respond(0, error=ErrorCode.UNRELEASED_INSTANCE_ID)
    assert d.kinds(effects) == ["ReportError"]


# -- retried -----------------------------------------------------------------------------------------


def test_topic_authorization_failed_is_reported_and_retried() -> None:
    d = _stable()
    effects = d.respond(0, error=ErrorCode.TOPIC_AUTHORIZATION_FAILED, message="foo")
    assert d.state is S.STABLE and d.core.assignment == tps(OWNED)
    report = d.one(ReportError, effects)
    assert not report.fatal and isinstance(report.error, AuthorizationError)
    assert "DESCRIBE" in str(report.error)
    assert d.kinds(effects) == ["ReportError"]
    assert d.core.next_deadline(d.now) == d.now + 100


@pytest.mark.parametrize(
    ("code", "find"),
    [
        (ErrorCode.NOT_COORDINATOR, True),
        (ErrorCode.COORDINATOR_NOT_AVAILABLE, True),
        (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, False),
        (ErrorCode.REQUEST_TIMED_OUT, True),
        (ErrorCode.NOT_ENOUGH_REPLICAS, False),  # any other retriable code
    ],
)
def test_retriable_errors_back_off_and_retry(code: ErrorCode, find: bool) -> None:
    d = _stable()
    effects = d.respond(0, error=code)
    assert d.state is S.STABLE and d.core.member_epoch == 2 and d.core.assignment == tps(OWNED)
    assert d.kinds(effects) == (["FindCoordinator"] if find else [])
    assert d.core.next_deadline(d.now) == d.now + 100
    retry = d.one(SendHeartbeat, d.advance(100))
    assert retry.request.member_epoch == 2 and retry.request.topic_partitions is not None


@pytest.mark.parametrize("code", [ErrorCode.NETWORK_EXCEPTION, ErrorCode.REQUEST_TIMED_OUT])
def test_no_response_asks_for_the_coordinator_and_retries(code: ErrorCode) -> None:
    d = _stable()
    effects = d.fail_heartbeat(code)
    assert effects == [FindCoordinator(f"ConsumerGroupHeartbeat failed with {code.name}")]
    assert d.state is S.STABLE
    d.one(SendHeartbeat, d.advance(100))


def test_lost_response_is_retried_with_the_old_epoch_and_owned_partitions() -> None:
    """The acknowledgement's response is lost: the next (full) heartbeat repeats the owned partitions with the
    old epoch, which the coordinator accepts (facts §5.5) and answers with the assignment."""
    d = Driver()
    d.join({"foo": [0, 1, 2]})
    d.advance(5_000)
    d.respond(2, {"foo": [0, 1]})  # revoke foo-2
    d.settle()
    ack = d.in_flight().request
    assert ack.topic_partitions is not None and ack.topic_partitions[0].partitions == [0, 1]
    d.fail_heartbeat(ErrorCode.REQUEST_TIMED_OUT)
    retry = d.one(SendHeartbeat, d.advance(100)).request
    assert retry.member_epoch == 2
    assert retry.topic_partitions is not None and retry.topic_partitions[0].partitions == [0, 1]
    assert retry.rebalance_timeout_ms == 300_000 and retry.subscribed_topic_names == ["foo"]
    d.respond(3, {"foo": [0, 1]})
    assert d.state is S.STABLE and d.core.member_epoch == 3


def test_answers_to_abandoned_requests_are_ignored() -> None:
    d = _stable()
    hb = d.in_flight()
    d.respond(2)
    assert not d.send(HeartbeatResponseReceived(hb.request_id, response(9, {"foo": [5]})))
    assert d.core.member_epoch == 2 and d.state is S.STABLE
