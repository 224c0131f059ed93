"""Heartbeat requests (what each carries) and their scheduling (interval, in flight, backoff)."""

from __future__ import annotations

import pytest
from member_driver import MEMBER_ID, TOPIC_IDS, Driver, S

from kconsumer.client.member import ClientAssignor
from kconsumer.client.member.backoff import ExponentialBackoff
from kconsumer.client.member.effects import ReportError, SendHeartbeat
from kconsumer.client.member.errors import UnsupportedFeatureError
from kconsumer.client.member.events import CoordinatorCapabilities, Poll, Subscribe, Tick
from kconsumer.errors import ErrorCode
from kconsumer.protocol.messages.consumer_group import (
    ConsumerGroupHeartbeatRequest,
    TopicPartitions,
)

DELTA_FIELDS = (
    "rack_id",
    "subscribed_topic_names",
    "subscribed_topic_regex",
    "server_assignor",
    "topic_partitions",
    "client_assignors",
)


def _only_basics(request: ConsumerGroupHeartbeatRequest) -> None:
    assert request.rebalance_timeout_ms == -1
    for name in DELTA_FIELDS:
        assert getattr(request, name) is None, name


def _sent(d: Driver) -> ConsumerGroupHeartbeatRequest:
    return d.one(SendHeartbeat).request


# -- what the requests carry ---------------------------------------------------------------------


def test_join_request_carries_everything_and_encodes() -> None:
    assignor = ClientAssignor("sticky", 0, 2, 1, b"meta", 0)
    d = Driver(rack_id="rack-1", rebalance_timeout_ms=123_000, client_assignors=(assignor,))
    d.send(Subscribe(topics=("foo", "bar", "foo")))
    hb = d.one(SendHeartbeat)
    request = hb.request
    assert (request.group_id, request.member_id, request.member_epoch) == ("g", MEMBER_ID, 0)
    assert request.instance_id is None
    assert request.rack_id == "rack-1"
    assert request.rebalance_timeout_ms == 123_000
    assert request.subscribed_topic_names == ["bar", "foo"]
    assert request.subscribed_topic_regex == ""  # names always go with a regex (librdkafka's mock)
    assert request.topic_partitions == []  # must be empty, not null, when joining
    assert request.server_assignor is None
    assert request.client_assignors is not None and request.client_assignors[0].name == "sticky"
    assert request.client_assignors[0].metadata_bytes == b"meta"
    assert hb.version == 1 and not hb.leave
    request.encode(hb.version)


def test_pattern_subscription_sends_empty_names_with_the_regex() -> None:
    d = Driver(server_assignor="range")
    d.send(Subscribe(pattern="foo.*"))
    request = _sent(d)
    assert request.subscribed_topic_names == []
    assert request.subscribed_topic_regex == "foo.*"
    assert request.server_assignor == "range"


@pytest.mark.parametrize(
    "config",
    [{"rack_id": "r", "server_assignor": "uniform"}, {"client_assignors": (ClientAssignor("a", 0, 0, 0),)}],
    ids=["server-assignor", "client-assignors"],
)
def test_later_heartbeats_carry_only_what_changed(config: dict[str, object]) -> None:
    d = Driver(**config)
    d.join({"foo": [0, 1]})
    ack = d.of(SendHeartbeat, d.all)[-1].request  # the acknowledgement: owned partitions only
    assert ack.topic_partitions == [TopicPartitions(topic_id=TOPIC_IDS["foo"], partitions=[0, 1])]
    assert ack.subscribed_topic_names is None and ack.rebalance_timeout_ms == -1
    d.advance(5_000)
    regular = _sent(d)
    assert (regular.member_id, regular.member_epoch) == (MEMBER_ID, 2)
    _only_basics(regular)


def test_subscription_change_goes_at_once_with_the_regex_field() -> None:
    d = Driver()
    d.join({"foo": [0]})
    d.send(Subscribe(topics=("foo", "bar")))
    request = _sent(d)  # not waiting for the interval
    assert request.subscribed_topic_names == ["bar", "foo"] and request.subscribed_topic_regex == ""
    assert request.rebalance_timeout_ms == -1 and request.topic_partitions is None
    d.respond(2)
    d.send(Subscribe(pattern="ba.*"))
    request = _sent(d)
    assert request.subscribed_topic_names == [] and request.subscribed_topic_regex == "ba.*"


@pytest.mark.parametrize(
    "fail",
    [
        lambda d: d.fail_heartbeat(ErrorCode.REQUEST_TIMED_OUT),
        lambda d: d.respond(0, error=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS),
        lambda d: d.respond(0, error=ErrorCode.TOPIC_AUTHORIZATION_FAILED),
    ],
    ids=["no-response", "retriable-error", "reported-error"],
)
def test_everything_is_sent_again_after_a_failure(fail) -> None:  # type: ignore[no-untyped-def]
    d = Driver(rack_id="r", client_assignors=(ClientAssignor("a", 0, 0, 0),))
    d.join({"foo": [0, 1]})
    d.advance(5_000)
    fail(d)
    d.run_until_idle(2_000)
    request = d.in_flight().request
    assert request.member_epoch == 2  # the member keeps its epoch: only the fields are reset
    assert request.rack_id == "r" and request.rebalance_timeout_ms == 300_000
    assert request.subscribed_topic_names == ["foo"] and request.subscribed_topic_regex == ""
    assert request.topic_partitions == [TopicPartitions(topic_id=TOPIC_IDS["foo"], partitions=[0, 1])]
    assert request.client_assignors is not None


def test_static_member_sends_its_instance_id_in_every_request() -> None:
    d = Driver(instance_id="inst-1")
    d.join({"foo": [0]})
    d.advance(5_000)
    d.respond(2)
    d.send(Poll())
    requests = [hb.request for hb in d.of(SendHeartbeat, d.all)]
    assert len(requests) == 3 and all(r.instance_id == "inst-1" for r in requests)


# -- heartbeat v0 -----------------------------------------------------------------------------------


def test_v0_has_no_regex_field_and_encodes() -> None:
    d = Driver()
    d.send(CoordinatorCapabilities(heartbeat_version=0))
    d.send(Subscribe(topics=("foo",)))
    hb = d.one(SendHeartbeat)
    assert hb.version == 0 and hb.request.subscribed_topic_regex is None
    assert hb.request.subscribed_topic_names == ["foo"]
    hb.request.encode(0)


def test_v0_adopts_the_member_id_the_coordinator_gives() -> None:
    d = Driver()
    d.send(CoordinatorCapabilities(heartbeat_version=0))
    d.send(Subscribe(topics=("foo",)))
    d.metadata()
    d.respond(1, {}, member_id="server-given-id")
    assert d.core.member_id == "server-given-id"


def test_v1_keeps_its_own_member_id() -> None:
    d = Driver()
    d.send(Subscribe(topics=("foo",)))
    d.respond(1, {}, member_id="something-else")
    assert d.core.member_id == MEMBER_ID


def test_pattern_on_a_v0_broker_is_fatal_broker_too_old() -> None:
    d = Driver()
    d.send(CoordinatorCapabilities(heartbeat_version=0))
    d.send(Subscribe(pattern="foo.*"))
    assert d.state is S.FATAL
    report = d.one(ReportError)
    assert report.fatal and isinstance(report.error, UnsupportedFeatureError)
    assert "Kafka 4.0" in str(report.error)
    assert not d.of(SendHeartbeat, d.all)


def test_learning_v0_while_subscribed_to_a_pattern_is_fatal() -> None:
    d = Driver()
    d.send(Subscribe(pattern="foo.*"))
    d.respond(1, {})
    d.send(CoordinatorCapabilities(heartbeat_version=0))
    assert d.state is S.FATAL


# -- scheduling -------------------------------------------------------------------------------------


def test_interval_from_the_response_and_one_in_flight() -> None:
    d = Driver(auto_commit=False)
    d.join({"foo": [0]})
    start = d.of(SendHeartbeat, d.all)[-1]
    sent_at = d.now
    assert d.core.next_deadline(d.now) == sent_at + 5_000
    assert not d.advance(4_999)
    d.advance(1)
    hb = d.in_flight()
    assert hb.request_id != start.request_id
    assert d.core.next_deadline(d.now) == 1_000 + 300_000  # only the poll timer: one in flight
    d.advance(60_000)
    assert not d.of(SendHeartbeat, d.last)  # still one in flight
    d.send(Poll())
    d.respond(2, interval=7_000)
    d.one(SendHeartbeat)  # the interval passed while waiting: the next one goes at once
    sent_at = d.now
    d.advance(100)
    d.respond(2, interval=7_000)
    assert d.core.next_deadline(d.now) == sent_at + 7_000  # the interval counts from the send


def test_backoff_grows_to_the_maximum_and_resets_on_success() -> None:
    d = Driver(retry_backoff_ms=100, retry_backoff_max_ms=1_000)
    d.send(Subscribe(topics=("foo",)))
    delays = []
    for _ in range(6):
        d.fail_heartbeat()
        failed_at = d.now
        deadline = d.core.next_deadline(d.now)
        assert deadline is not None
        assert not d.send(Tick(), deadline - 1) or not d.of(SendHeartbeat, d.last)
        d.send(Tick(), deadline)
        d.in_flight()
        delays.append(deadline - failed_at)
    assert delays == [100, 200, 400, 800, 1_000, 1_000]
    d.respond(1, {})
    d.advance(5_000)
    d.fail_heartbeat()
    assert d.core.next_deadline(d.now) == d.now + 100


@pytest.mark.parametrize(("rand", "expected"), [(0.0, [80, 160, 320]), (0.999_999, [119, 239, 479])])
def test_backoff_jitter_comes_from_the_injected_source(rand: float, expected: list[int]) -> None:
    backoff = ExponentialBackoff(100, 10_000, lambda: rand)
    assert [backoff.backoff(n) for n in range(3)] == expected
    assert ExponentialBackoff(100, 150, lambda: 0.999_999).backoff(5) == 150  # jitter never exceeds the max


def test_jittered_heartbeat_retry() -> None:
    d = Driver(rand=lambda: 0.0)
    d.send(Subscribe(topics=("foo",)))
    d.fail_heartbeat()
    assert d.core.next_deadline(d.now) == d.now + 80


def test_acknowledgement_does_not_wait_for_the_interval() -> None:
    d = Driver()
    d.send(Subscribe(topics=("foo",)))
    d.metadata()
    d.respond(2, {"foo": [0]})
    d.complete_fetches()
    ack = d.one(SendHeartbeat)
    assert ack.request.topic_partitions == [TopicPartitions(topic_id=TOPIC_IDS["foo"], partitions=[0])]
    assert d.state is S.STABLE


def test_no_heartbeats_while_unsubscribed() -> None:
    d = Driver()
    assert d.core.next_deadline(d.now) is None
    assert not d.advance(1_000_000)
