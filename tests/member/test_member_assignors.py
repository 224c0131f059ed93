"""Client-side assignor hooks: ClientAssignors deltas, Reason, ShouldComputeAssignment and outcomes."""

from __future__ import annotations

import pytest
from member_driver import Driver, S

from kconsumer.client.member import ClientAssignor
from kconsumer.client.member.effects import ComputeClientAssignment, ReportError, SendHeartbeat
from kconsumer.client.member.errors import UnsupportedFeatureError
from kconsumer.client.member.events import (
    AssignorMetadataUpdated,
    ClientAssignmentResult,
    CoordinatorCapabilities,
    RequestAssignment,
    Subscribe,
    Unsubscribe,
)
from kconsumer.errors import ErrorCode, InvalidRequestError

STICKY = ClientAssignor("sticky", 0, 2, 1, b"v1")
RANGE = ClientAssignor("local-range", -1, 0, 0)


def _stable() -> Driver:
    d = Driver(client_assignors=(STICKY, RANGE), auto_commit=False)
    d.join({"foo": [0]})
    return d


def _assignors(d: Driver) -> list[tuple[str, int, int, bytes]] | None:
    sent = d.one(SendHeartbeat).request.client_assignors
    if sent is None:
        return None
    return [(a.name, a.reason, a.metadata_version, a.metadata_bytes) for a in sent]


def test_assignors_are_announced_on_join_then_only_when_changed() -> None:
    d = Driver(client_assignors=(STICKY, RANGE))
    d.send(Subscribe(topics=("foo",)))
    sent = d.one(SendHeartbeat).request.client_assignors
    assert sent is not None
    assert [(a.name, a.minimum_version, a.maximum_version) for a in sent] == [
        ("sticky", 0, 2),
        ("local-range", -1, 0),
    ]
    d.respond(2, {})
    d.advance(5_000)
    assert _assignors(d) is None


def test_new_metadata_is_sent_at_once() -> None:
    d = _stable()
    d.send(AssignorMetadataUpdated("sticky", 2, b"v2"))
    assert _assignors(d) == [("sticky", 0, 2, b"v2"), ("local-range", 0, 0, b"")]
    d.respond(3)
    assert not d.send(AssignorMetadataUpdated("sticky", 2, b"v2"))  # no change: nothing to send


def test_requesting_an_assignment_sends_a_reason_then_resets_it() -> None:
    d = _stable()
    d.send(RequestAssignment(reason=3))
    assert [reason for _, reason, _, _ in _assignors(d) or []] == [3, 3]
    d.respond(2)
    d.advance(5_000)  # not urgent: the reset goes with the next regular heartbeat
    assert [reason for _, reason, _, _ in _assignors(d) or []] == [0, 0]
    d.respond(2)
    d.send(RequestAssignment(reason=3))  # the same reason again is a change again
    assert [reason for _, reason, _, _ in _assignors(d) or []] == [3, 3]


def test_a_failed_heartbeat_keeps_the_reason_for_the_full_retry() -> None:
    d = _stable()
    d.send(RequestAssignment())
    d.fail_heartbeat()
    retry = d.one(SendHeartbeat, d.advance(100)).request.client_assignors
    assert retry is not None and [a.reason for a in retry] == [1, 1]


def test_should_compute_starts_one_computation_at_a_time() -> None:
    d = _stable()
    d.advance(5_000)
    effects = d.respond(4, should_compute=True)
    assert d.one(ComputeClientAssignment, effects) == ComputeClientAssignment(4)
    d.advance(5_000)
    assert not d.of(ComputeClientAssignment, d.respond(4, should_compute=True))
    d.send(ClientAssignmentResult(4))
    d.advance(5_000)
    assert d.one(ComputeClientAssignment, d.respond(5, should_compute=True)).member_epoch == 5


def test_stale_epoch_retries_after_the_next_heartbeat() -> None:
    d = _stable()
    d.advance(5_000)
    d.respond(4, should_compute=True)
    assert not d.send(ClientAssignmentResult(4, ErrorCode.STALE_MEMBER_EPOCH))
    d.advance(5_000)
    assert d.one(ComputeClientAssignment, d.respond(5)).member_epoch == 5


def test_unknown_member_abandons_the_computation() -> None:
    d = _stable()
    d.advance(5_000)
    d.respond(4, should_compute=True)
    assert not d.send(ClientAssignmentResult(4, ErrorCode.UNKNOWN_MEMBER_ID))
    d.advance(5_000)
    assert not d.of(ComputeClientAssignment, d.respond(5))


def test_invalid_request_reports_the_coordinators_message() -> None:
    d = _stable()
    d.advance(5_000)
    d.respond(4, should_compute=True)
    effects = d.send(ClientAssignmentResult(4, ErrorCode.INVALID_REQUEST, "foo-3 assigned twice"))
    report = d.one(ReportError, effects)
    assert not report.fatal and isinstance(report.error, InvalidRequestError)
    assert "foo-3 assigned twice" in str(report.error)
    assert d.state is S.STABLE


def test_results_for_another_epoch_are_ignored() -> None:
    d = _stable()
    d.advance(5_000)
    d.respond(4, should_compute=True)
    assert not d.send(ClientAssignmentResult(3, ErrorCode.INVALID_REQUEST))


def test_no_computation_while_leaving() -> None:
    d = _stable()
    d.advance(5_000)
    d.send(Unsubscribe())
    assert not d.of(ComputeClientAssignment, d.respond(4, should_compute=True))


def test_broker_without_the_extension_is_fatal_with_advice() -> None:
    d = Driver(client_assignors=(STICKY,))
    d.send(CoordinatorCapabilities(heartbeat_version=1, client_assignors=False))
    d.send(Subscribe(topics=("foo",)))
    assert d.state is S.FATAL
    error = d.one(ReportError).error
    assert isinstance(error, UnsupportedFeatureError) and "group.remote.assignor" in str(error)


def test_invalid_metadata_updates_are_refused() -> None:
    d = _stable()
    with pytest.raises(ValueError, match="no local assignor"):
        d.send(AssignorMetadataUpdated("nope", 0, b""))
    with pytest.raises(ValueError, match="outside"):
        d.send(AssignorMetadataUpdated("sticky", 7, b""))
    with pytest.raises(ValueError, match="non-zero"):
        d.send(RequestAssignment(reason=0))
