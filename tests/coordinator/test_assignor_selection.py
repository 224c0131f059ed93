"""Which server-side assignor computes the target, what `range` and `uniform` produce, and a failing
assignor (facts §5.7.3-§5.7.5, §6)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from kconsumer.assignment.algorithms import RangeServerAssignor, UniformServerAssignor
from kconsumer.assignment.interface import (
    GroupSpec,
    PartitionAssignorError,
    PartitionsByTopicId,
    SubscriptionType,
)
from kconsumer.broker.coordinator import GroupCoordinator
from kconsumer.broker.coordinator.context import session_timer
from kconsumer.broker.coordinator.model import GroupState
from kconsumer.errors import ErrorCode
from kconsumer.protocol.messages.consumer_group import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
)


class Recording:
    """Wraps an assignor and records every call (name and the spec it got)."""

    def __init__(self, inner: Any, calls: list[tuple[str, GroupSpec]], name: str | None = None) -> None:
        self.inner = inner
        self.calls = calls
        self.name = name or inner.name

    def assign(self, spec: GroupSpec) -> dict[str, PartitionsByTopicId]:
        self.calls.append((self.name, spec))
        result: dict[str, PartitionsByTopicId] = self.inner.assign(spec)
        return result


class Flaky:
    """An assignor that fails while `failing` is set."""

    name = "flaky"

    def __init__(self) -> None:
        self.failing = True

    def assign(self, spec: GroupSpec) -> dict[str, PartitionsByTopicId]:
        if self.failing:
            raise PartitionAssignorError("the flaky assignor is broken today")
        return UniformServerAssignor().assign(spec)


def recording_driver(
    make_driver: Any, assignors: tuple[str, ...] = ("uniform", "range")
) -> tuple[Any, list[Any]]:
    d = make_driver(assignors=assignors)
    calls: list[tuple[str, GroupSpec]] = []
    built = {"uniform": UniformServerAssignor(), "range": RangeServerAssignor()}
    d.coordinator = GroupCoordinator(d.config, assignors={n: Recording(built[n], calls) for n in assignors})
    return d, calls


def described_assignor(d: Any) -> str:
    response = d.coordinator.describe(ConsumerGroupDescribeRequest(group_ids=["g"]), 1, d.now).response
    name: str = response.groups[0].assignor_name
    return name


# -- selection (§5.7.3) --------------------------------------------------------------------------


def test_default_assignor_is_the_first_configured(make_driver: Any) -> None:
    d, calls = recording_driver(make_driver)
    d.create_topic("foo", 2)
    d.join("A")
    assert [name for name, _ in calls] == ["uniform"]
    assert described_assignor(d) == "uniform"


def test_default_assignor_follows_the_configuration_order(make_driver: Any) -> None:
    d, calls = recording_driver(make_driver, ("range", "uniform"))
    d.create_topic("foo", 2)
    d.join("A")
    assert [name for name, _ in calls] == ["range"]
    assert described_assignor(d) == "range"


def test_most_common_server_assignor_wins(make_driver: Any) -> None:
    d, calls = recording_driver(make_driver)
    d.create_topic("foo", 6)
    d.join("A", server_assignor="range")
    d.join("B", server_assignor="uniform")
    d.join("C", server_assignor="range")
    assert calls[-1][0] == "range"
    assert described_assignor(d) == "range"
    d.join("D", server_assignor="uniform")
    d.join("E", server_assignor="uniform")
    assert calls[-1][0] == "uniform"


def test_members_without_an_assignor_do_not_vote(make_driver: Any) -> None:
    d, calls = recording_driver(make_driver)
    d.create_topic("foo", 6)
    d.join("A")
    d.join("B")
    d.join("C", server_assignor="range")
    assert calls[-1][0] == "range"  # one vote beats the default


def test_tie_is_broken_by_name(make_driver: Any) -> None:
    """Kafka picks a maximum count from a hash map, so a tie has no defined winner; kconsumer picks
    the smallest name (a deterministic choice where the facts leave it open)."""
    d, calls = recording_driver(make_driver)
    d.create_topic("foo", 6)
    d.join("A", server_assignor="uniform")
    d.join("B", server_assignor="range")
    assert calls[-1][0] == "range"
    assert described_assignor(d) == "range"


def test_the_updated_member_counts(make_driver: Any) -> None:
    # A changes its assignor and its subscription in one heartbeat: the computation that
    # heartbeat triggers already uses A's new choice.
    d, calls = recording_driver(make_driver)
    d.create_topic("foo", 4)
    d.create_topic("bar", 4)
    d.join("A", server_assignor="uniform")
    assert calls[-1][0] == "uniform"
    d.heartbeat("A", 2, server_assignor="range", subscribed_topic_names=["foo", "bar"])
    assert calls[-1][0] == "range"


def test_changing_the_assignor_alone_does_not_recompute(make_driver: Any) -> None:
    d, calls = recording_driver(make_driver)
    d.create_topic("foo", 4)
    d.join("A")
    count = len(calls)
    d.heartbeat("A", 2, server_assignor="range")
    assert len(calls) == count and d.coordinator.group("g").group_epoch == 2
    assert described_assignor(d) == "range"
    d.join("B")  # the next computation uses it
    assert calls[-1][0] == "range"


def test_a_member_leaving_changes_the_vote(make_driver: Any) -> None:
    d, calls = recording_driver(make_driver)
    d.create_topic("foo", 4)
    d.join("A", server_assignor="range")
    d.join("B")
    d.heartbeat("A", -1)
    d.heartbeat("B", 3)
    assert calls[-1][0] == "uniform"


def test_the_assignor_gets_members_subscriptions_and_previous_targets(make_driver: Any) -> None:
    d, calls = recording_driver(make_driver)
    d.create_topic("foo", 2)
    d.create_topic("bar", 2)
    d.join("A", topics=["foo"], instance_id="iA", rack_id="r1")
    d.join("B", topics=["foo", "bar", "missing"])
    _name, spec = calls[-1]
    assert spec.subscription_type == SubscriptionType.HETEROGENEOUS
    assert set(spec.members) == {"A", "B"}
    a, b = spec.members["A"], spec.members["B"]
    assert (a.instance_id, a.rack_id, b.instance_id, b.rack_id) == ("iA", "r1", None, None)
    assert a.subscribed_topic_ids == {d.topic_id("foo")}
    assert b.subscribed_topic_ids == {d.topic_id("foo"), d.topic_id("bar")}  # missing topics are left out
    assert a.assignment == {d.topic_id("foo"): frozenset({0, 1})}  # A's previous target
    assert b.assignment == {}
    assert set(spec.topics) == {d.topic_id("foo"), d.topic_id("bar")}
    assert spec.topics[d.topic_id("bar")].num_partitions == 2


def test_homogeneous_subscription_type(make_driver: Any) -> None:
    d, calls = recording_driver(make_driver)
    d.create_topic("foo", 2)
    d.create_topic("bar", 2)
    d.join("A", topics=["foo", "bar"])
    d.join("B", topics=["bar", "foo"])
    assert calls[-1][1].subscription_type == SubscriptionType.HOMOGENEOUS


# -- range vs uniform (§6) -----------------------------------------------------------------------


def test_range_co_partitions_topics(make_driver: Any) -> None:
    d = make_driver(assignors=("range",))
    d.create_topic("foo", 3)
    d.create_topic("bar", 3)
    d.join("A", topics=["foo", "bar"])
    d.join("B", topics=["foo", "bar"])
    assert d.target("A") == {"bar": [0, 1], "foo": [0, 1]}
    assert d.target("B") == {"bar": [2], "foo": [2]}


def test_range_puts_static_members_first_by_instance_id(make_driver: Any) -> None:
    d = make_driver(assignors=("range",))
    d.create_topic("foo", 3)
    d.join("A", topics=["foo"])
    d.join("Z", topics=["foo"], instance_id="i-1")
    d.join("M", topics=["foo"], instance_id="i-0")
    assert (d.target("M"), d.target("Z"), d.target("A")) == ({"foo": [0]}, {"foo": [1]}, {"foo": [2]})


def test_uniform_balances_across_topics(make_driver: Any) -> None:
    d = make_driver(assignors=("uniform",))
    d.create_topic("foo", 3)
    d.create_topic("bar", 3)
    d.join("A", topics=["foo", "bar"])
    d.join("B", topics=["foo", "bar"])
    counts = sorted(sum(len(p) for p in d.target(m).values()) for m in "AB")
    assert counts == [3, 3]
    everything = sorted((t, p) for m in "AB" for t, parts in d.target(m).items() for p in parts)
    assert everything == [("bar", p) for p in range(3)] + [("foo", p) for p in range(3)]


def test_range_and_uniform_in_the_same_coordinator(driver: Any) -> None:
    d = driver
    d.create_topic("foo", 3)
    d.create_topic("bar", 3)
    d.join("A", topics=["foo", "bar"], group="ranged", server_assignor="range")
    d.join("B", topics=["foo", "bar"], group="ranged", server_assignor="range")
    assert d.target("A", group="ranged") == {"bar": [0, 1], "foo": [0, 1]}
    d.join("A", topics=["foo", "bar"], group="uniform")
    d.join("B", topics=["foo", "bar"], group="uniform")
    counts = sorted(sum(len(p) for p in d.target(m, group="uniform").values()) for m in "AB")
    assert counts == [3, 3]


# -- a failing assignor: UNKNOWN_SERVER_ERROR, nothing written (§5.7.5) --------------------------


@pytest.fixture
def flaky(make_driver: Any) -> tuple[Any, Flaky]:
    d = make_driver()
    d.config = dataclasses.replace(d.config, assignors=("uniform", "range", "flaky"))
    assignor = Flaky()
    d.coordinator = GroupCoordinator(
        d.config,
        assignors={"uniform": UniformServerAssignor(), "range": RangeServerAssignor(), "flaky": assignor},
    )
    d.create_topic("foo", 4)
    return d, assignor


def raw(d: Any, member_id: str, epoch: int, **fields: Any) -> Any:
    request = ConsumerGroupHeartbeatRequest(group_id="g", member_id=member_id, member_epoch=epoch, **fields)
    return d.coordinator.heartbeat(request, 1, d.now, "client", "/127.0.0.1")


JOIN = {"rebalance_timeout_ms": 60_000, "subscribed_topic_names": ["foo"], "topic_partitions": []}


def assert_failed(d: Any, result: Any, before: Any, log_length: int) -> None:
    response = result.response
    assert response.error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    assert response.error_message == (
        "Failed to compute a new target assignment: the flaky assignor is broken today"
    )
    assert response.assignment is None
    assert result.records == []
    assert d.coordinator.state.snapshot() == before
    assert d.coordinator.log.appended == log_length


def test_failing_assignor_on_the_first_join(flaky: Any) -> None:
    d, assignor = flaky
    before, log_length = d.coordinator.state.snapshot(), d.coordinator.log.appended
    result = raw(d, "A", 0, server_assignor="flaky", **JOIN)
    assert_failed(d, result, before, log_length)
    assert d.coordinator.group("g") is None  # not even created
    assert d.coordinator.next_deadline() is None  # no session timer
    assignor.failing = False
    response = raw(d, "A", 0, server_assignor="flaky", **JOIN).response
    assert (response.error_code, response.member_epoch) == (0, 2)
    assert d.response_assignment(response) == {"foo": [0, 1, 2, 3]}


def test_failing_assignor_on_a_later_join(flaky: Any) -> None:
    d, _assignor = flaky
    d.join("A", server_assignor="range")
    before, log_length = d.coordinator.state.snapshot(), d.coordinator.log.appended
    deadline = d.coordinator.timers.get(session_timer("g", "A"))
    d.advance(1_000)
    # B's vote ties with A's: "flaky" < "range" by name, so the failing assignor is chosen.
    result = raw(d, "B", 0, server_assignor="flaky", **JOIN)
    assert_failed(d, result, before, log_length)
    g = d.coordinator.group("g")
    assert set(g.members) == {"A"} and g.group_epoch == 2 and g.state() == GroupState.STABLE
    assert d.coordinator.timers.get(session_timer("g", "B")) is None
    assert d.coordinator.timers.get(session_timer("g", "A")) == deadline
    # A is not affected at all.
    assert d.heartbeat("A", 2).error_code == 0


def test_failing_assignor_after_a_topic_change(flaky: Any) -> None:
    d, assignor = flaky
    assignor.failing = False
    d.join("A", server_assignor="flaky")
    assignor.failing = True
    d.set_partitions("foo", 6)  # bumps the epoch; the next heartbeat computes the target
    g = d.coordinator.group("g")
    assert (g.group_epoch, g.assignment_epoch) == (3, 2)
    deadline = d.coordinator.timers.get(session_timer("g", "A"))
    before, log_length = d.coordinator.state.snapshot(), d.coordinator.log.appended
    d.advance(1_000)
    result = raw(d, "A", 2, topic_partitions=d.tps({"foo": range(4)}))
    assert_failed(d, result, before, log_length)
    # The failed heartbeat did not extend the session either.
    assert d.coordinator.timers.get(session_timer("g", "A")) == deadline
    assignor.failing = False
    response = d.heartbeat("A", 2, owned={"foo": range(4)})
    assert (response.member_epoch, d.response_assignment(response)) == (3, {"foo": list(range(6))})


def test_failing_assignor_during_a_static_replacement(flaky: Any) -> None:
    d, assignor = flaky
    assignor.failing = False
    d.join("A", server_assignor="flaky", instance_id="i")
    d.heartbeat("A", -2, instance_id="i")
    assignor.failing = True
    before, log_length = d.coordinator.state.snapshot(), d.coordinator.log.appended
    # A new subscription forces a computation, which fails: the old member is back as it was.
    result = raw(d, "A2", 0, instance_id="i", **{**JOIN, "subscribed_topic_names": ["foo", "bar"]})
    assert_failed(d, result, before, log_length)
    g = d.coordinator.group("g")
    assert set(g.members) == {"A"} and g.static_members == {"i": "A"}
    assert d.member("A").member_epoch == -2 and d.assigned("A") == {"foo": [0, 1, 2, 3]}
    assert g.owner_of(d.topic_id("foo"), 0) == "A"
    # Its session timer still runs: it is removed when it expires.
    d.advance(d.config.session_timeout_ms)
    assert g.members == {}
