"""kconsumer against a real Apache Kafka 4.x broker (KRaft, one node) in a Docker container.

Runs where a Docker engine answers; skipped, saying why, where none does (a docker CLI alone is not
enough: the engine is pinged through the Docker SDK). The image is ``apache/kafka:4.1.0`` unless
``KCONSUMER_KAFKA_IMAGE`` names another 4.x image.

testcontainers' ``KafkaContainer`` drives Confluent's images (its start script runs
``/etc/confluent/docker/configure``), so the apache/kafka image is started as a generic container:
its configuration comes from ``KAFKA_*`` environment variables, and the host port is chosen before
the start so the advertised listener can name it. The broker's group timers are lowered (heartbeat
500 ms, session 6 s; the minimums are lowered with them) to keep rebalances quick.

What runs against it: a group of kconsumers and a confluent-kafka ``group.protocol=consumer``
consumer sharing partitions (no partition consumed by two members at once, every record consumed,
revocations committed), a static member restarting without a rebalance, a regex subscription
picking up a topic created later, and offsets handed over between kconsumer and confluent-kafka.
"""

from __future__ import annotations

import itertools
import os
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "consumer"))

from consumer_harness import (
    CommittedReader,
    ConfluentMember,
    Ledger,
    Member,
    ProducerFeeder,
    config,
    wait_until,
)

from kconsumer import Consumer, SubscriptionPattern, TopicPartition

pytestmark = [pytest.mark.docker, pytest.mark.timeout(600)]

IMAGE = os.environ.get("KCONSUMER_KAFKA_IMAGE", "apache/kafka:4.1.0")
PARTITIONS = 4
_names = itertools.count()


def docker_unavailable() -> str | None:
    """Why no Docker engine can be used here, or None when one answers."""
    try:
        import docker  # type: ignore[import-untyped]
    except ImportError:
        return "the docker package is not installed (pip install testcontainers)"
    try:
        client = docker.from_env(timeout=5)
        try:
            client.ping()
        finally:
            client.close()
    except Exception as exc:
        return f"no Docker engine answers ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})"
    return None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def kafka() -> Iterator[str]:
    """The bootstrap address of a one-node Kafka 4.x (KRaft) in a container."""
    reason = docker_unavailable()
    if reason is not None:
        pytest.skip(f"real Kafka test needs a Docker engine: {reason}")
    testcontainers_core = pytest.importorskip("testcontainers.core.container")
    from testcontainers.core.docker_client import DockerClient
    from testcontainers.core.wait_strategies import LogMessageWaitStrategy

    host, port = DockerClient().host(), _free_port()
    settings = {
        "KAFKA_NODE_ID": "1",
        "KAFKA_PROCESS_ROLES": "broker,controller",
        "KAFKA_LISTENERS": "PLAINTEXT://0.0.0.0:9092,CONTROLLER://0.0.0.0:9093",
        "KAFKA_ADVERTISED_LISTENERS": f"PLAINTEXT://{host}:{port}",
        "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "KAFKA_CONTROLLER_QUORUM_VOTERS": "1@localhost:9093",
        "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
        "KAFKA_OFFSETS_TOPIC_NUM_PARTITIONS": "1",
        "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
        "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
        "KAFKA_NUM_PARTITIONS": str(PARTITIONS),
        "KAFKA_GROUP_CONSUMER_MIN_HEARTBEAT_INTERVAL_MS": "500",
        "KAFKA_GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS": "500",
        "KAFKA_GROUP_CONSUMER_MIN_SESSION_TIMEOUT_MS": "6000",
        "KAFKA_GROUP_CONSUMER_SESSION_TIMEOUT_MS": "6000",
    }
    container = testcontainers_core.DockerContainer(IMAGE).with_bind_ports(9092, port)
    for key, value in settings.items():
        container = container.with_env(key, value)
    container = container.waiting_for(
        LogMessageWaitStrategy("Kafka Server started").with_startup_timeout(180)
    )
    with container:
        yield f"{host}:{port}"


@pytest.fixture
def names() -> tuple[str, str]:
    n = next(_names)
    return f"real-topic-{n}", f"real-group-{n}"


@pytest.fixture
def stoppable() -> Iterator[list[Any]]:
    things: list[Any] = []
    yield things
    for thing in reversed(things):
        (getattr(thing, "close", None) or thing.stop)()


def create_topic(bootstrap: str, name: str, partitions: int = PARTITIONS) -> None:
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.cimpl import NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, partitions, 1)]).values():
        future.result(30)
    wait_until(lambda: name in admin.list_topics(timeout=10).topics, 30, what=f"topic {name}")


def shares(members: list[Any]) -> bool:
    owned = [m.owned() for m in members]
    sizes = sorted(len(o) for o in owned)
    return sum(sizes) == PARTITIONS and sizes[-1] - sizes[0] <= 1 and len(set().union(*owned)) == PARTITIONS


def test_kconsumers_and_a_confluent_consumer_share_partitions(
    kafka: str, names: tuple[str, str], stoppable: list[Any]
) -> None:
    topic, group = names
    create_topic(kafka, topic)
    feeder = ProducerFeeder(kafka, topic)
    reader = CommittedReader(kafka, group)
    stoppable.extend([feeder, reader])
    ledger = Ledger(reader)
    a = Member(ledger, "a", config(kafka, group), [topic])
    stoppable.append(a)
    wait_until(lambda: shares([a]) and ledger.consuming("a"), 60, what="a alone")
    b = Member(ledger, "b", config(kafka, group), [topic])
    c = ConfluentMember(ledger, "c", kafka, group, [topic])
    stoppable.extend([b, c])
    wait_until(lambda: shares([a, b, c]) and ledger.consuming("a", "b", "c"), 90, what="three members")
    b.close()
    wait_until(lambda: shares([a, c]) and ledger.consuming("a", "c"), 90, what="b gone")
    c.close()
    wait_until(lambda: shares([a]), 90, what="a alone again")
    produced = feeder.stop()
    wait_until(lambda: ledger.has_all(produced), 60, what="every record")
    a.close()
    ledger.check(produced)
    for member in (a, b):
        assert member.errors == [] and member.commit_failures == [] and member.lost_calls == 0


def test_static_member_restart_keeps_its_partitions(
    kafka: str, names: tuple[str, str], stoppable: list[Any]
) -> None:
    topic, group = names
    create_topic(kafka, topic)
    reader = CommittedReader(kafka, group)
    stoppable.append(reader)
    ledger = Ledger(reader)
    static = config(kafka, group, group_instance_id="static-1")
    a = Member(ledger, "a", static, [topic])
    b = Member(ledger, "b", config(kafka, group), [topic])
    stoppable.extend([a, b])
    wait_until(lambda: shares([a, b]), 90, what="two members")
    kept, b_calls = a.owned(), (b.assigned_calls, b.revoked_calls)
    a.close()  # leaves with epoch -2: the partitions wait for it through the session timeout
    again = Member(ledger, "a2", static, [topic])
    stoppable.append(again)
    wait_until(lambda: again.owned() == kept, 30, what="the restarted static member's partitions")
    assert (b.assigned_calls, b.revoked_calls) == b_calls, "b saw a rebalance"
    again.close()
    b.close()
    ledger.check()


def test_regex_subscription_picks_up_a_new_topic(
    kafka: str, names: tuple[str, str], stoppable: list[Any]
) -> None:
    topic, group = names
    create_topic(kafka, f"{topic}-one")
    reader = CommittedReader(kafka, group)
    stoppable.append(reader)
    ledger = Ledger(reader)
    member = Member(ledger, "a", config(kafka, group), SubscriptionPattern(f"{topic}-.*"))
    stoppable.append(member)
    wait_until(lambda: len(member.owned()) == PARTITIONS, 60, what="the first topic")
    create_topic(kafka, f"{topic}-two")
    feeder = ProducerFeeder(kafka, f"{topic}-two", every=None)
    stoppable.append(feeder)
    # Kafka refreshes a group's regexes at most every 10 s (facts §5.9).
    wait_until(lambda: len(member.owned()) == 2 * PARTITIONS, 90, what="the new topic")
    produced = feeder.stop()
    wait_until(lambda: ledger.has_all(produced), 60, what="the new topic's records")
    member.close()
    ledger.check(produced)


def test_offsets_hand_over_between_kconsumer_and_confluent(kafka: str, names: tuple[str, str]) -> None:
    import confluent_kafka

    topic, group = names
    create_topic(kafka, topic)
    feeder = ProducerFeeder(kafka, topic, per_round=5, every=None)

    def drain(consumer: Any, count: int) -> list[tuple[int, int]]:
        got: list[tuple[int, int]] = []

        def step() -> bool:
            message = consumer.poll(0.1)
            if message is not None and message.error() is None:
                got.append((message.partition(), message.offset()))
            return len(got) >= count

        wait_until(step, 60, interval=0, what=f"{count} records")
        return sorted(got)

    ours = Consumer(config(kafka, group, enable_auto_commit=True))
    ours.subscribe([topic])
    assert drain(ours, 20) == [(p, o) for p in range(PARTITIONS) for o in range(5)]
    ours.close()
    feeder.produce_round()
    theirs = confluent_kafka.Consumer(
        {
            "bootstrap.servers": kafka,
            "group.id": group,
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    theirs.subscribe([topic])
    assert drain(theirs, 20) == [(p, o) for p in range(PARTITIONS) for o in range(5, 10)]
    theirs.commit(asynchronous=False)
    theirs.close()
    feeder.produce_round()
    again = Consumer(config(kafka, group))
    again.subscribe([topic])
    assert drain(again, 20) == [(p, o) for p in range(PARTITIONS) for o in range(10, 15)]
    committed = again.committed([TopicPartition(topic, p) for p in range(PARTITIONS)])
    assert [tp.offset for tp in committed] == [10] * PARTITIONS
    again.close()
    feeder.stop()
