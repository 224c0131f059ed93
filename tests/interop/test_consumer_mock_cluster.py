"""kconsumer against a group coordinator nobody here wrote: librdkafka's mock cluster, started inside a
confluent-kafka Producer handle (``test.mock.num.brokers``; it lives as long as that handle).

* a group of kconsumers shares a topic's partitions as members come and go;
* a mixed group of kconsumers and confluent-kafka consumers (``group.protocol=consumer``) does too;
* offsets committed by one kind of consumer are where the other resumes, both ways;
* a regex subscription (``^...`` and `SubscriptionPattern`) is resolved by the mock.

The members commit their processed offsets on revocation; the `Ledger` (tests/consumer) checks on
every callback and record that no partition is consumed by two members at once, and at the end that
every record was consumed, a partition revoked with a commit being resumed exactly there.

Facts about the mock (librdkafka 2.16) that shape these tests: it advertises ConsumerGroupHeartbeat
v1, OffsetCommit up to v9 and OffsetFetch up to v6 (offsets by topic name, no member epoch on
fetches), topics auto-create with 4 partitions, and its group timers cannot be configured from
Python: a 3 s heartbeat interval makes every rebalance step take seconds. It assigns only topics that
exist when a member subscribes (librdkafka's own consumer gets nothing either for a topic created
later), so every test creates its topic first.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "consumer"))

from consumer_harness import (  # noqa: E402
    CommittedReader,
    ConfluentMember,
    Ledger,
    Member,
    ProducerFeeder,
    config,
    wait_until,
)

from kconsumer import Consumer, SubscriptionPattern, TopicPartition  # noqa: E402

pytestmark = pytest.mark.timeout(180)

PARTITIONS = 4  # the mock's auto-created topics
_names = itertools.count()


@pytest.fixture(scope="module")
def mock() -> Iterator[str]:
    """The bootstrap address of a librdkafka mock cluster with one broker."""
    handle = confluent_kafka.Producer({"test.mock.num.brokers": 1, "log_level": 3})
    brokers = handle.list_topics(timeout=5).brokers
    (broker,) = brokers.values()
    yield f"{broker.host}:{broker.port}"
    del handle


@pytest.fixture
def names() -> tuple[str, str]:
    n = next(_names)
    return f"interop-topic-{n}", f"interop-group-{n}"


@pytest.fixture
def stoppable() -> Iterator[list[Any]]:
    """Things with close()/stop() to end at teardown, whatever happened."""
    things: list[Any] = []
    yield things
    for thing in reversed(things):
        (getattr(thing, "close", None) or thing.stop)()


def shares(members: Sequence[Member | ConfluentMember]) -> bool:
    owned = [m.owned() for m in members]
    sizes = sorted(len(o) for o in owned)
    return sum(sizes) == PARTITIONS and sizes[-1] - sizes[0] <= 1 and len(set().union(*owned)) == PARTITIONS


def test_a_group_of_kconsumers(mock: str, names: tuple[str, str], stoppable: list[Any]) -> None:
    topic, group = names
    feeder = ProducerFeeder(mock, topic)
    stoppable.append(feeder)
    reader = CommittedReader(mock, group)
    stoppable.append(reader)
    ledger = Ledger(reader)
    settings = config(mock, group)
    a = Member(ledger, "a", settings, [topic])
    stoppable.append(a)
    wait_until(lambda: shares([a]) and ledger.consuming("a"), timeout=30, what="a alone")
    b = Member(ledger, "b", settings, [topic])
    c = Member(ledger, "c", settings, [topic])
    stoppable.extend([b, c])
    wait_until(
        lambda: shares([a, b, c]) and ledger.consuming("a", "b", "c"), timeout=60, what="three kconsumers"
    )
    c.close()
    wait_until(lambda: shares([a, b]) and ledger.consuming("a", "b"), timeout=60, what="two after c left")
    b.close()
    wait_until(lambda: shares([a]), timeout=60, what="a alone again")
    produced = feeder.stop()
    wait_until(lambda: ledger.has_all(produced), timeout=30, what="every record")
    a.close()
    ledger.check(produced)
    for member in (a, b, c):
        assert member.errors == [] and member.commit_failures == [] and member.lost_calls == 0


def test_a_mixed_group_of_kconsumers_and_confluent_consumers(
    mock: str, names: tuple[str, str], stoppable: list[Any]
) -> None:
    topic, group = names
    feeder = ProducerFeeder(mock, topic)
    stoppable.append(feeder)
    reader = CommittedReader(mock, group)
    stoppable.append(reader)
    ledger = Ledger(reader)
    k1 = Member(ledger, "k1", config(mock, group), [topic])
    stoppable.append(k1)
    wait_until(lambda: shares([k1]) and ledger.consuming("k1"), timeout=30, what="k1 alone")
    c1 = ConfluentMember(ledger, "c1", mock, group, [topic])
    stoppable.append(c1)
    wait_until(lambda: shares([k1, c1]) and ledger.consuming("k1", "c1"), timeout=60, what="k1 and c1")
    k2 = Member(ledger, "k2", config(mock, group), [topic])
    stoppable.append(k2)
    wait_until(lambda: shares([k1, c1, k2]) and ledger.consuming("k1", "c1", "k2"), timeout=60, what="three")
    c1.close()
    wait_until(lambda: shares([k1, k2]) and ledger.consuming("k1", "k2"), timeout=60, what="c1 gone")
    produced = feeder.stop()
    wait_until(lambda: ledger.has_all(produced), timeout=30, what="every record")
    k1.close()
    k2.close()
    ledger.check(produced)
    assert c1.errors == []
    for member in (k1, k2):
        assert member.errors == [] and member.commit_failures == [] and member.lost_calls == 0
    assert {i.member for i in ledger.intervals if i.offsets} == {"k1", "c1", "k2"}


def _drain(consumer: Any, count: int, timeout: float = 30.0) -> list[tuple[int, int]]:
    """Poll until `count` records; their (partition, offset)s."""
    return [(p, o) for _t, p, o in _drain_topics(consumer, count, timeout)]


def _drain_topics(consumer: Any, count: int, timeout: float = 30.0) -> list[tuple[str, int, int]]:
    """Poll until `count` records; their (topic, partition, offset)s."""
    got: list[tuple[str, int, int]] = []

    def step() -> bool:
        message = consumer.poll(0.1)
        if message is not None and message.error() is None:
            got.append((message.topic(), message.partition(), message.offset()))
        return len(got) >= count

    wait_until(step, timeout, interval=0, what=f"{count} records")
    return got


def test_offsets_committed_by_one_kind_are_resumed_by_the_other(mock: str, names: tuple[str, str]) -> None:
    topic, group = names
    feeder = ProducerFeeder(mock, topic, per_round=5, every=None)

    # kconsumer reads everything there is, commits on close (auto-commit), leaves.
    ours = Consumer(config(mock, group, enable_auto_commit=True))
    ours.subscribe([topic])
    first = _drain(ours, 5 * PARTITIONS)
    ours.close()
    assert sorted(first) == [(p, o) for p in range(PARTITIONS) for o in range(5)]

    # A confluent-kafka KIP-848 consumer in the same group resumes exactly there.
    feeder.produce_round()
    theirs = confluent_kafka.Consumer(
        {
            "bootstrap.servers": mock,
            "group.id": group,
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "log_level": 3,
        }
    )
    theirs.subscribe([topic])
    second = _drain(theirs, 5 * PARTITIONS)
    assert sorted(second) == [(p, o) for p in range(PARTITIONS) for o in range(5, 10)]
    theirs.commit(asynchronous=False)
    theirs.close()

    # And kconsumer resumes where the confluent consumer committed.
    feeder.produce_round()
    again = Consumer(config(mock, group))
    again.subscribe([topic])
    third = _drain(again, 5 * PARTITIONS)
    assert sorted(third) == [(p, o) for p in range(PARTITIONS) for o in range(10, 15)]
    assert [tp.offset for tp in again.committed([TopicPartition(topic, p) for p in range(PARTITIONS)])] == [
        10
    ] * 4
    again.commit(asynchronous=False)
    again.close()
    assert feeder.stop() == {(topic, p): list(range(15)) for p in range(PARTITIONS)}


@pytest.mark.parametrize("subscription", [["^{prefix}-.*"], "pattern"], ids=["caret", "SubscriptionPattern"])
def test_a_regex_subscription_resolved_by_the_mock(
    mock: str, names: tuple[str, str], subscription: Any
) -> None:
    prefix, group = names
    feeders = [ProducerFeeder(mock, f"{prefix}-{n}", every=None) for n in ("a", "b")]
    ProducerFeeder(mock, f"{prefix}x-other", every=None).stop()  # does not match
    topics = (
        SubscriptionPattern(f"{prefix}-.*")
        if subscription == "pattern"
        else [subscription[0].format(prefix=prefix)]
    )
    consumer = Consumer(config(mock, group))
    consumer.subscribe(topics)
    got = _drain_topics(consumer, 2 * 2 * PARTITIONS)
    consumer.close()
    produced = {key: offsets for feeder in feeders for key, offsets in feeder.stop().items()}
    assert sorted(got) == sorted((t, p, o) for (t, p), offsets in produced.items() for o in offsets)
