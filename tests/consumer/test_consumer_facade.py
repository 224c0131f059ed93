"""The `Consumer` facade: configuration errors, subscribe validation, commit semantics, callback
errors, close, the context manager and the membership-only consumer (``fetch=False``).

Tests that need a broker share one cluster per backend (each uses its own topic and group).
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from backends import Cluster, open_cluster
from confluent_kafka import KafkaError, KafkaException, Message, TopicPartition
from consumer_harness import config, poll_until, position, read, wait_until

from kconsumer import (
    ConfigError,
    Consumer,
    ConsumerRebalanceListener,
    InvalidPatternError,
    SubscriptionPattern,
)
from kconsumer.client.member.errors import CommitFailedError
from kconsumer.errors import ErrorCode
from kconsumer.protocol.api import ApiKey

pytestmark = pytest.mark.timeout(60)

_names = itertools.count()


@pytest.fixture(scope="module")
def shared(backend: str) -> Iterator[Cluster]:
    """One cluster of `backend` for the module (each test uses its own topic and group)."""
    with open_cluster(backend) as running:
        yield running


@pytest.fixture
def topic(shared: Cluster) -> str:
    """A new topic with 2 partitions holding records v0..v9 (offsets 0-4 on each)."""
    name = f"topic-{next(_names)}"
    shared.create_topic(name, 2)
    for partition in range(2):
        shared.produce(name, [f"v{partition}-{i}" for i in range(5)], partition=partition)
    return name


@pytest.fixture
def group() -> str:
    return f"group-{next(_names)}"


@pytest.fixture
def consumers() -> Iterator[Callable[..., Consumer]]:
    made: list[Consumer] = []

    def make(settings: dict[str, Any], **kwargs: Any) -> Consumer:
        consumer = Consumer(settings, **kwargs)
        made.append(consumer)
        return consumer

    yield make
    for consumer in made:
        consumer.close(timeout=10)


# -- configuration ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "key", "words"),
    [
        ({"group.id": "g"}, "bootstrap.servers", "required"),
        ({"bootstrap.servers": "x:1", "max.poll.interval.ms": "soon"}, "max.poll.interval.ms", "integer"),
        ({"bootstrap.servers": "x:1", "max.poll.interval.ms": 0}, "max.poll.interval.ms", "between"),
        ({"bootstrap.servers": "x:1", "auto.offset.reset": "sometimes"}, "auto.offset.reset", "earliest"),
        ({"bootstrap.servers": "x:1", "enable.auto.commit": "maybe"}, "enable.auto.commit", "true or false"),
        ({"bootstrap.servers": "x:1", "session.timeout.ms": 10000}, "session.timeout.ms", "broker"),
        ({"bootstrap.servers": "x:1", "heartbeat.interval.ms": 100}, "heartbeat.interval.ms", "coordinator"),
        (
            {"bootstrap.servers": "x:1", "partition.assignment.strategy": "range"},
            "partition.assignment.strategy",
            "group.remote.assignor",
        ),
        ({"bootstrap.servers": "x:1", "group.protocol": "eager"}, "group.protocol", "classic"),
        (
            {"bootstrap.servers": "x:1", "group.protocol": "classic", "group.remote.assignor": "uniform"},
            "group.remote.assignor",
            "partition.assignment.strategy",
        ),
        (
            {
                "bootstrap.servers": "x:1",
                "group.protocol": "classic",
                "partition.assignment.strategy": "range,cooperative-sticky",
            },
            "partition.assignment.strategy",
            "one kind",
        ),
        (
            {
                "bootstrap.servers": "x:1",
                "group.protocol": "classic",
                "partition.assignment.strategy": "sticky",
            },
            "partition.assignment.strategy",
            "unknown strategy 'sticky'",
        ),
        (
            {"bootstrap.servers": "x:1", "group.protocol": "classic", "heartbeat.interval.ms": 50_000},
            "heartbeat.interval.ms",
            "below session.timeout.ms",
        ),
        (
            {"bootstrap.servers": "x:1", "group.protocol": "classic", "max.poll.interval.ms": 10_000},
            "max.poll.interval.ms",
            ">= session.timeout.ms",
        ),
        ({"bootstrap.servers": "x:1", "enable.auto.comit": True}, "enable.auto.comit", "did you mean"),
        ({"bootstrap.servers": "x:1", "rebalance_cb": print}, "rebalance_cb", "unknown"),
        ({"bootstrap.servers": "x:1", "on_commit": 42}, "on_commit", "callable"),
        (
            {"bootstrap.servers": "x:1", "group.remote.assignor": "range", "group.local.assignors": "x:y"},
            "group.local.assignors",
            "",
        ),
        (
            {"bootstrap.servers": "x:1", "retry.backoff.ms": 500, "retry.backoff.max.ms": 100},
            "retry.backoff.max.ms",
            ">=",
        ),
    ],
)
def test_configuration_errors_at_construction_name_the_key(
    settings: dict[str, Any], key: str, words: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        Consumer(settings)
    assert raised.value.key == key
    assert repr(key) in str(raised.value) and words in str(raised.value)


def test_a_bad_librdkafka_value_fails_at_construction_naming_the_key() -> None:
    with pytest.raises(KafkaException, match=r"fetch\.wait\.max\.ms"):
        Consumer({"bootstrap.servers": "x:1", "group.id": "g", "fetch.wait.max.ms": "soon"})


def test_subscribe_and_commit_need_a_group_id() -> None:
    with Consumer({"bootstrap.servers": "127.0.0.1:1"}) as consumer:
        with pytest.raises(ConfigError) as raised:
            consumer.subscribe(["t"])
        assert raised.value.key == "group.id"
        with pytest.raises(ConfigError):
            consumer.commit(offsets=[TopicPartition("t", 0, 1)])


# -- subscribe -------------------------------------------------------------------------------------


@pytest.fixture
def idle() -> Iterator[Consumer]:
    """A consumer that never reaches a broker (nothing here needs one)."""
    consumer = Consumer({"bootstrap.servers": "127.0.0.1:1", "group.id": "g", "log_level": 0})
    yield consumer
    consumer.close(timeout=1)


def test_subscribe_refuses_names_mixed_with_regexes(idle: Consumer) -> None:
    with pytest.raises(ValueError, match="cannot mix topic names and regular expressions"):
        idle.subscribe(["orders", "^payments-.*"])


@pytest.mark.parametrize("topics", [["^orders-(.*"], ["^ok", "^bad["]])
def test_subscribe_refuses_a_bad_regex_at_once(idle: Consumer, topics: list[str]) -> None:
    with pytest.raises(InvalidPatternError) as raised:
        idle.subscribe(topics)
    assert raised.value.reason
    assert isinstance(raised.value, ValueError)


@pytest.mark.parametrize("pattern", ["(", "a[", "*x", "(?P<n>x", ""])
def test_subscription_pattern_syntax_errors(pattern: str) -> None:
    with pytest.raises(InvalidPatternError, match="invalid RE2 regular expression"):
        SubscriptionPattern(pattern)


def test_subscription_pattern_accepts_re2_and_compares_by_pattern() -> None:
    assert SubscriptionPattern("orders-.*") == SubscriptionPattern("orders-.*")
    assert SubscriptionPattern("orders-.*") != SubscriptionPattern("orders-.+")
    assert SubscriptionPattern(r"[a-z]+\d{2}").pattern == r"[a-z]+\d{2}"
    with pytest.raises(InvalidPatternError):
        SubscriptionPattern("(?=lookahead)")  # not RE2


@pytest.mark.parametrize(
    ("topics", "error", "words"),
    [
        ("orders", TypeError, "not a string"),
        ([], ValueError, "non-empty"),
        (["orders", ""], ValueError, "non-empty"),
    ],
)
def test_subscribe_argument_checks(idle: Consumer, topics: Any, error: type[Exception], words: str) -> None:
    with pytest.raises(error, match=words):
        idle.subscribe(topics)


def test_subscribe_takes_a_listener_or_callbacks_not_both(idle: Consumer) -> None:
    with pytest.raises(ValueError, match="either a listener"):
        idle.subscribe(["t"], on_assign=lambda c, p: None, listener=ConsumerRebalanceListener())


def test_enforce_rebalance_only_warns(idle: Consumer, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="kconsumer"):
        idle.enforce_rebalance()
    assert "no effect" in caplog.text


def test_close_is_idempotent_and_the_consumer_unusable_after(idle: Consumer) -> None:
    idle.subscribe(["t"])
    idle.close(timeout=2)
    idle.close(timeout=2)
    with pytest.raises(RuntimeError, match="closed"):
        idle.poll(0)
    with pytest.raises(RuntimeError, match="closed"):
        idle.subscribe(["t"])


# -- against the cluster --------------------------------------------------------------------------


def test_subscribe_with_regexes_joins_them_for_the_coordinator(
    shared: Cluster, consumers: Callable[..., Consumer], group: str
) -> None:
    consumer = consumers(config(shared.bootstrap_servers, group))
    consumer.subscribe(["^alpha-.*", "^beta"])
    wait_until(lambda: consumer.poll(0.05) is None and shared.describe_group(group), what="the group")
    (member,) = shared.describe_group(group).members.values()  # type: ignore[union-attr]
    assert member.subscribed_regex == "(?:^alpha-.*)|(?:^beta)"
    assert member.subscribed_topics == ()


def test_context_manager_leaves_the_group(shared: Cluster, topic: str, group: str) -> None:
    with Consumer(config(shared.bootstrap_servers, group)) as consumer:
        consumer.subscribe([topic])
        poll_until(consumer, lambda: len(consumer.assignment()) == 2)
        assert set(shared.describe_group(group).members) == {consumer.memberid()}  # type: ignore[union-attr]
    assert shared.describe_group(group).members == {}  # type: ignore[union-attr]
    with pytest.raises(RuntimeError):
        consumer.poll(0)


def test_commit_semantics(
    shared: Cluster, topic: str, group: str, consumers: Callable[..., Consumer]
) -> None:
    results: list[tuple[KafkaError | None, list[TopicPartition]]] = []
    consumer = consumers(
        config(
            shared.bootstrap_servers, group, {"on_commit": lambda err, parts: results.append((err, parts))}
        )
    )
    consumer.subscribe([topic])
    messages = read(consumer, 10)
    last = {m.partition(): m for m in messages}
    assert {p: m.offset() for p, m in last.items()} == {0: 4, 1: 4}

    # A message commits its offset + 1 (the next one to read).
    done = consumer.commit(message=messages[0], asynchronous=False)
    assert done is not None
    key, offset = position(messages[0])
    assert [(tp.topic, tp.partition, tp.offset) for tp in done] == [(*key, offset + 1)]
    assert shared.committed(group)[key] == offset + 1

    # Explicit offsets are committed as given.
    done = consumer.commit(
        offsets=[TopicPartition(topic, 0, 2), TopicPartition(topic, 1, 3)], asynchronous=False
    )
    assert sorted((tp.partition, tp.offset) for tp in done or []) == [(0, 2), (1, 3)]
    assert shared.committed(group) == {(topic, 0): 2, (topic, 1): 3}
    assert [tp.offset for tp in consumer.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)])] == [
        2,
        3,
    ]

    # No argument: the current positions of every owned partition.
    done = consumer.commit(asynchronous=False)
    assert sorted((tp.partition, tp.offset) for tp in done or []) == [(0, 5), (1, 5)]
    assert shared.committed(group) == {(topic, 0): 5, (topic, 1): 5}

    # A partition this member does not own: a clear error, nothing committed.
    with pytest.raises(KafkaException) as raised:
        consumer.commit(offsets=[TopicPartition(topic, 7, 1)], asynchronous=False)
    assert isinstance(raised.value.__cause__, CommitFailedError)
    assert "not assigned to this member" in str(raised.value) and f"{topic}-7" in str(raised.value)
    assert shared.committed(group) == {(topic, 0): 5, (topic, 1): 5}

    # Asynchronous commits return None at once and reach on_commit (inside a later poll).
    results.clear()
    assert consumer.commit(offsets=[TopicPartition(topic, 0, 4)], asynchronous=True) is None
    assert consumer.commit(offsets=[TopicPartition(topic, 5, 4)], asynchronous=True) is None
    poll_until(consumer, lambda: len(results) >= 2)
    by_partition = {parts[0].partition if parts else None: err for err, parts in results}
    assert by_partition[0] is None
    failed = [err for err, parts in results if err is not None]
    assert len(failed) == 1 and "not assigned" in failed[0].str()
    assert shared.committed(group)[(topic, 0)] == 4
    failed_parts = next(parts for err, parts in results if err is not None)
    assert [(tp.partition, tp.offset) for tp in failed_parts] == [(5, 4)]
    # Synchronous commits answer their caller only (as confluent-kafka: no on_commit for them).
    results.clear()
    consumer.commit(offsets=[TopicPartition(topic, 1, 1)], asynchronous=False)
    for _ in range(5):
        consumer.poll(0.05)
    assert results == []


def test_commit_with_nothing_to_commit(
    shared: Cluster, group: str, consumers: Callable[..., Consumer]
) -> None:
    consumer = consumers(config(shared.bootstrap_servers, group))
    assert consumer.commit(asynchronous=True) is None
    with pytest.raises(KafkaException) as raised:
        consumer.commit(asynchronous=False)
    assert raised.value.args[0].code() == KafkaError._NO_OFFSET
    with pytest.raises(ValueError, match="message and offsets are mutually exclusive"):
        consumer.commit(message=object(), offsets=[])  # type: ignore[arg-type]


class Boom(Exception):
    pass


def test_callback_exceptions_reach_poll_unchanged_and_the_rebalance_completes(
    shared: Cluster, topic: str, group: str, consumers: Callable[..., Consumer]
) -> None:
    calls: list[str] = []

    class Faulty(ConsumerRebalanceListener):
        def on_partitions_assigned(self, partitions: list[TopicPartition]) -> None:
            calls.append("assigned")
            raise Boom("assigned went wrong")

        def on_partitions_revoked(self, partitions: list[TopicPartition]) -> None:
            calls.append("revoked")
            raise Boom("revoked went wrong")

    consumer = consumers(config(shared.bootstrap_servers, group))
    consumer.subscribe([topic], listener=Faulty())
    errors: list[Boom] = []
    received: list[Message] = []

    def step() -> bool:
        try:
            message = consumer.poll(0.05)
        except Boom as exc:  # re-raised unchanged, as confluent-kafka does
            errors.append(exc)
            return False
        if message is not None and message.error() is None:
            received.append(message)
        return len(received) >= 10

    wait_until(step, interval=0, what="the records despite the failing callback")
    (error,) = errors
    assert "assigned went wrong" in str(error)
    assert calls == ["assigned"]

    # A second member: the failing on_partitions_revoked still lets the partition move.
    other = consumers(config(shared.bootstrap_servers, group))
    other.subscribe([topic])

    def moved() -> bool:
        other.poll(0.02)
        try:
            consumer.poll(0.02)
        except Boom as exc:
            errors.append(exc)
        return len(other.assignment()) == 1 and len(consumer.assignment()) == 1

    wait_until(moved, interval=0, what="the partition moved to the second member")
    # on_partitions_assigned follows the revocation with nothing new (as Kafka's consumers): it
    # fails too, and the member carries on.
    wait_until(lambda: moved() and len(calls) == 3, interval=0, what="on_partitions_assigned([])")
    assert calls == ["assigned", "revoked", "assigned"]
    assert [str(e) for e in errors[1:]] == ["revoked went wrong", "assigned went wrong"]
    group_state = shared.describe_group(group)
    assert group_state is not None and group_state.state == "Stable"


def test_confluent_style_callbacks_get_the_consumer_and_the_partitions(
    shared: Cluster, topic: str, group: str, consumers: Callable[..., Consumer]
) -> None:
    seen: list[tuple[str, Consumer, list[tuple[str, int]]]] = []

    def record(kind: str) -> Callable[[Consumer, list[TopicPartition]], None]:
        return lambda c, parts: seen.append((kind, c, [(tp.topic, tp.partition) for tp in parts]))

    consumer = consumers(config(shared.bootstrap_servers, group))
    consumer.subscribe([topic], on_assign=record("assign"), on_revoke=record("revoke"))
    read(consumer, 10)
    consumer.close()
    assert [(kind, c is consumer, parts) for kind, c, parts in seen] == [
        ("assign", True, [(topic, 0), (topic, 1)]),
        ("revoke", True, [(topic, 0), (topic, 1)]),
    ]


def test_membership_only_consumer_joins_and_reconciles_but_returns_no_records(
    shared: Cluster, topic: str, group: str, consumers: Callable[..., Consumer]
) -> None:
    assigned: list[TopicPartition] = []
    seeded = consumers(config(shared.bootstrap_servers, group))
    seeded.subscribe([topic])
    read(seeded, 10)
    seeded.commit(offsets=[TopicPartition(topic, 0, 3)], asynchronous=False)
    seeded.close()

    member = consumers(config(shared.bootstrap_servers, group), fetch=False)
    member.subscribe([topic], on_assign=lambda c, parts: assigned.extend(parts))
    received = poll_until(member, lambda: len(member.assignment()) == 2)
    assert sorted(tp.partition for tp in assigned) == [0, 1]
    group_state = shared.describe_group(group)
    assert group_state is not None and set(group_state.members) == {member.memberid()}
    assert member.member_epoch() == group_state.assignment_epoch
    assert member.poll(0.2) is None and member.consume(10, 0.2) == [] and received == []
    positions = {
        tp.partition: tp.offset
        for tp in member.position([TopicPartition(topic, 0), TopicPartition(topic, 1)])
    }
    # Where fetching would start: the committed offset, else auto.offset.reset resolved (earliest).
    assert positions == {0: 3, 1: 0}
    member.seek(TopicPartition(topic, 1, 2))
    assert member.position([TopicPartition(topic, 1)])[0].offset == 2
    done = member.commit(asynchronous=False)
    # Partition 0 is at its committed offset: nothing new to commit there (as librdkafka).
    assert sorted((tp.partition, tp.offset) for tp in done or []) == [(1, 2)]
    with pytest.raises(RuntimeError, match="fetch=False"):
        member.list_topics()


@pytest.mark.reference_only("injects errors and drops connections in the reference broker")
@pytest.mark.parametrize(
    "fault",
    [
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        "dropped connections",
    ],
)
def test_committed_rides_out_coordinator_errors(
    shared: Cluster, topic: str, group: str, consumers: Callable[..., Consumer], fault: Any
) -> None:
    """As Kafka's committed(timeout): retriable and coordinator errors are retried until the timeout.
    (Before: the first NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS or dropped connection was
    raised to the application.)"""
    consumer = consumers(config(shared.bootstrap_servers, group))
    consumer.subscribe([topic])
    read(consumer, 10)
    consumer.commit(offsets=[TopicPartition(topic, 0, 3), TopicPartition(topic, 1, 4)], asynchronous=False)
    if fault == "dropped connections":
        shared.drop_connections()
    else:
        shared.inject_error(ApiKey.OFFSET_FETCH, fault, 2)
    found = consumer.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)], timeout=10)
    assert [tp.offset for tp in found] == [3, 4]
    assert not shared._call(lambda broker: bool(broker.faults))


@pytest.mark.parametrize("style", ["on_lost", "on_revoke fallback"])
def test_poll_interval_exceeded_calls_on_lost_then_rejoins(
    shared: Cluster, topic: str, group: str, consumers: Callable[..., Consumer], style: str
) -> None:
    """confluent-kafka style callbacks: lost partitions go to on_lost, or to on_revoke when no
    on_lost is given (as in confluent-kafka); the poll after the pause returns the
    _MAX_POLL_EXCEEDED error event, the member rejoins by itself."""
    calls: list[tuple[str, list[int]]] = []

    def record(kind: str) -> Callable[[Consumer, list[TopicPartition]], None]:
        return lambda _c, parts: calls.append((kind, sorted(tp.partition for tp in parts)))

    consumer = consumers(config(shared.bootstrap_servers, group, max_poll_interval_ms=1000))
    on_lost = record("lost") if style == "on_lost" else None
    consumer.subscribe([topic], on_assign=record("assign"), on_revoke=record("revoke"), on_lost=on_lost)
    read(consumer, 10)
    member_id = consumer.memberid()
    wait_until(
        lambda: member_id not in (shared.describe_group(group) or {}).members,  # type: ignore[union-attr]
        what="the member leaving while the application does not poll",
    )
    event = consumer.poll(0.1)  # an error event, as confluent-kafka returns it
    assert event is not None and event.error() is not None
    assert event.error().code() == KafkaError._MAX_POLL_EXCEEDED
    assert "max.poll.interval.ms" in event.error().str()
    assert calls == [("assign", [0, 1]), ("lost" if style == "on_lost" else "revoke", [0, 1])]
    poll_until(consumer, lambda: len(consumer.assignment()) == 2)
    assert calls[-1] == ("assign", [0, 1])
    assert member_id in shared.describe_group(group).members  # type: ignore[union-attr]


def test_assignment_calls_outside_rebalance_callbacks_are_refused(
    shared: Cluster, topic: str, group: str, consumers: Callable[..., Consumer]
) -> None:
    """assign/incremental_assign choose start offsets inside on_assign and unassign inside
    on_revoke/on_lost; elsewhere the group assigns, so they raise _STATE and change nothing."""
    consumer = consumers(config(shared.bootstrap_servers, group))
    consumer.subscribe([topic])
    read(consumer, 2)
    owned = consumer.assignment()
    for call in (
        lambda: consumer.assign([TopicPartition(topic, 0, 1)]),
        lambda: consumer.incremental_assign([TopicPartition(topic, 0, 1)]),
        lambda: consumer.incremental_unassign([TopicPartition(topic, 0)]),
        consumer.unassign,
    ):
        with pytest.raises(KafkaException) as raised:
            call()
        assert raised.value.args[0].code() == KafkaError._STATE
    assert consumer.assignment() == owned


def test_a_consumer_without_group_reads_what_it_assigns(shared: Cluster, topic: str) -> None:
    """No group.id: assign() fetches the partitions named (OFFSET_INVALID starts at
    auto.offset.reset, there being no committed offset), and group operations say group.id is
    needed."""
    consumer = Consumer({"bootstrap.servers": shared.bootstrap_servers, "auto.offset.reset": "earliest"})
    try:
        consumer.assign([TopicPartition(topic, 0), TopicPartition(topic, 1, 3)])
        assert [(tp.topic, tp.partition) for tp in consumer.assignment()] == [(topic, 0), (topic, 1)]
        first: dict[int, int] = {}
        for message in read(consumer, 5 + 2):
            first.setdefault(message.partition(), message.offset())
        assert first == {0: 0, 1: 3}
        with pytest.raises(ConfigError) as raised:
            consumer.commit(asynchronous=False)
        assert raised.value.key == "group.id"
        consumer.unassign()
        assert consumer.assignment() == []
    finally:
        consumer.close()
