"""`kconsumer.testing.ApacheKafka` itself, and what is particular to Apache Kafka: the harness's
surface (the same answers as the reference cluster's helpers), its errors when Java, Maven or a
broker setting is wrong, and what a user of client-side assignors sees on a broker without
kconsumer's extension APIs (Apache Kafka does not offer them: KAFKA-18327)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from backends import Cluster, open_cluster, stable_classic_group
from consumer_harness import wait_until

from kconsumer import Consumer, KafkaError, KafkaException
from kconsumer.testing import ApacheKafka, ApacheKafkaUnavailable
from kconsumer.testing.apache_kafka import distribution

pytestmark = [
    pytest.mark.timeout(180),
    pytest.mark.kafka,
    pytest.mark.kafka_only("tests the Apache Kafka harness and broker"),
]


def test_the_harness_answers_like_the_reference_cluster(cluster: Cluster) -> None:
    topic_id = cluster.create_topic("harness", 3)
    assert cluster.topics()["harness"] == 3 and cluster.topic_id("harness") == topic_id
    assert cluster.produce("harness", [b"a", b"b", b"c", b"d"]) == [0, 0, 0, 1]  # round robin
    assert cluster.produce("harness", ["x"], key="k", partition=2) == [1]
    assert cluster.watermarks("harness") == [(0, 2), (0, 1), (0, 2)]
    assert [(r.offset, r.key, r.value) for r in cluster.records("harness", 2)] == [
        (0, None, b"c"),
        (1, b"k", b"x"),
    ]
    cluster.create_partitions("harness", 4)
    assert cluster.topics()["harness"] == 4
    with Consumer(
        {**cluster.client_config(), "group.id": "harness-group", "auto.offset.reset": "earliest"}
    ) as c:
        c.subscribe(["harness"])
        wait_until(lambda: c.poll(0.1) is not None and c.assignment(), what="an assignment")
        description = wait_until(lambda: cluster.describe_group("harness-group"), what="the group")
        (member,) = description.members.values()
        assert member.member_id == c.memberid() and member.subscribed_topics == ("harness",)
        assert description.coordinator == cluster.coordinator_node("harness-group")
        c.commit(offsets=[_tp("harness", 0, 2)], asynchronous=False)
        assert cluster.committed("harness-group") == {("harness", 0): 2}
        assert cluster.list_groups() == ["harness-group"]
    assert cluster.describe_classic_group("harness-group") is None
    cluster.delete_topic("harness")
    assert "harness" not in cluster.topics()


def _tp(topic: str, partition: int, offset: int) -> object:
    from confluent_kafka import TopicPartition

    return TopicPartition(topic, partition, offset)


def test_client_side_assignors_fail_clearly_at_the_first_heartbeat(cluster: Cluster) -> None:
    """Kafka has no ConsumerGroupPrepareAssignment/InstallAssignment: the member stops with one
    fatal error naming group.local.assignors and what to set instead; nothing hangs."""
    cluster.create_topic("local-assignors", 2)
    consumer = Consumer(
        {
            **cluster.client_config(),
            "group.id": "local-assignors",
            "group.local.assignors": "kconsumer.assignors:UniformAssignor",
        }
    )
    started = time.monotonic()
    raised: list[KafkaException] = []
    try:
        consumer.subscribe(["local-assignors"])
        while not raised and time.monotonic() - started < 30:
            try:
                message = consumer.poll(0.2)
            except KafkaException as exc:
                raised.append(exc)
                continue
            if message is not None and message.error() is not None:
                raised.append(KafkaException(message.error()))
    finally:
        consumer.close(timeout=10)
    assert raised, "the unsupported assignors were never reported"
    error = raised[0].args[0]
    assert error.code() == KafkaError._FATAL, error  # as librdkafka reports a fatal error
    assert "group.local.assignors" in error.str() and "group.remote.assignor" in error.str()
    assert time.monotonic() - started < 30


def test_a_user_without_java_gets_one_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    with pytest.raises(ApacheKafkaUnavailable, match=r"JAVA_HOME .* has no bin/java"):
        ApacheKafka().start()
    monkeypatch.delenv("JAVA_HOME")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ApacheKafkaUnavailable, match="needs Java 17 or newer: no `java` on the PATH"):
        ApacheKafka().start()


def test_without_maven_or_a_cache_the_error_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("KCONSUMER_CACHE_DIR", str(tmp_path / "empty-cache"))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "java").symlink_to(distribution.find_java()[0])
    monkeypatch.setenv("PATH", str(bin_dir))  # java, but no mvn
    with pytest.raises(ApacheKafkaUnavailable, match=r"not cached .* Maven \(`mvn`\) is not on the PATH"):
        ApacheKafka(version="4.4.0").start()


def test_an_unsupported_version_or_installation_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"an Apache Kafka 4\.x release"):
        ApacheKafka(version="3.9.0").start()
    with pytest.raises(ApacheKafkaUnavailable, match="is not an Apache Kafka installation"):
        ApacheKafka(home=tmp_path).start()


def test_a_broker_that_cannot_start_reports_the_end_of_its_log() -> None:
    broken = ApacheKafka(broker_config={"num.network.threads": "not-a-number"})
    with pytest.raises(ApacheKafkaUnavailable) as failure:
        broken.start()
    assert "num.network.threads" in str(failure.value)
    assert broken.brokers_up() == []


def test_an_installations_libs_can_stand_in_for_maven(tmp_path: Path) -> None:
    """``home=`` (or KCONSUMER_KAFKA_HOME): a directory whose libs/ holds Kafka's jars."""
    cached = distribution.locate().libs
    (tmp_path / "libs").symlink_to(cached, target_is_directory=True)
    with ApacheKafka(home=tmp_path) as kafka:
        assert kafka.distribution is not None and kafka.distribution.version == "4.4.0"
        kafka.create_topic("from-home", 1)
        assert kafka.topics() == {"from-home": 1}
        assert kafka.startup_seconds is not None and kafka.startup_seconds < 60


@pytest.fixture
def cluster(backend: str) -> Iterator[Cluster]:
    """The shared Apache Kafka of the fast tests (reset afterwards)."""
    with open_cluster(backend) as running:
        yield running


def test_a_shared_cluster_left_with_a_broker_stopped_comes_back_whole() -> None:
    """A test that stops a broker and ends before starting it again (an assertion failed in
    between) must not hand the next test of the same options a cluster with a broker down: the
    pool starts it again when the cluster is made fresh."""
    from backends import KAFKA

    with open_cluster(KAFKA, brokers=3, session_timeout_ms=3000) as cluster:
        assert isinstance(cluster, ApacheKafka)
        cluster.stop_broker(3)
        assert cluster.brokers_up() == [1, 2]
    with open_cluster(KAFKA, brokers=3, session_timeout_ms=3000) as again:
        assert again is cluster and again.brokers_up() == [1, 2, 3]


def test_a_restarted_broker_is_back_in_sync_when_start_broker_returns() -> None:
    """A rolling restart stops the next broker as soon as the last one is back: if the restarted
    broker were not in sync yet, stopping the next could take the last in-sync replica of a
    partition away (under load, one of the group's offsets: its coordinator unavailable)."""
    from backends import KAFKA

    with open_cluster(KAFKA, brokers=3, session_timeout_ms=3000) as cluster:
        assert isinstance(cluster, ApacheKafka)
        cluster.create_topic("behind", 6)
        cluster.stop_broker(1)
        cluster.produce("behind", [b"written while node 1 was down"] * 60)
        cluster.start_broker(1)
        assert cluster.in_sync_replicas("behind") == [[1, 2, 3]] * 6


def test_a_failed_test_reports_every_nodes_state_and_log() -> None:
    """The pool resets a cluster for the next test, so a failure's broker side (a node that
    stopped answering, an election) is only seen if the failure carries it: each node's state and
    the end of its log are added to the exception as a note."""
    from backends import KAFKA

    with (
        pytest.raises(AssertionError) as failed,
        open_cluster(KAFKA, brokers=3, session_timeout_ms=3000) as cluster,
    ):
        assert isinstance(cluster, ApacheKafka)
        cluster.stop_broker(2)
        raise AssertionError("the test's own failure")
    notes = "\n".join(failed.value.__notes__)
    assert "=== Apache Kafka node 1 (running) ===" in notes
    assert "=== Apache Kafka node 2 (stopped) ===" in notes
    assert "=== Apache Kafka node 3 (running) ===" in notes
    assert "server.log" in notes or "console" in notes, notes[:2000]


def test_a_worker_group_on_apache_kafka_fails_at_once_saying_why(cluster: Cluster) -> None:
    """Worker groups are kconsumer's extension (docs/worker-protocol.md): Kafka lists none of
    their APIs, and a worker says so instead of retrying forever."""
    from kconsumer.workers import WorkerGroup, WorkerGroupError

    worker = WorkerGroup({**cluster.client_config(), "group.id": "workers-on-kafka"}, work=lambda: {"c": 1})
    try:
        with pytest.raises(WorkerGroupError, match="does not implement worker groups"):
            wait_until(lambda: worker.poll(0.1) or False, timeout=30, what="the worker's failure")
    finally:
        worker.close(5)


def test_classic_workers_share_and_hand_over_units_on_apache_kafka(cluster: Cluster) -> None:
    """`group.protocol=classic` workers are Kafka Connect's protocol on Kafka's own classic
    groups: two share the units, and when one leaves the other runs them all; no unit ever runs
    on both (the exclusivity ledger, inline)."""
    import threading

    from kconsumer.workers import WorkerGroup

    lock = threading.Lock()
    running: dict[str, str] = {}
    violations: list[str] = []

    def callbacks(name: str) -> dict[str, object]:
        def started(units: object) -> None:
            with lock:
                for unit in units:  # type: ignore[attr-defined]
                    if running.get(unit, name) != name:
                        violations.append(f"{name} started {unit} while {running[unit]} runs it")
                    running[unit] = name

        def stopped(units: object) -> None:
            with lock:
                for unit in units:  # type: ignore[attr-defined]
                    if running.get(unit) == name:
                        del running[unit]

        return {"on_assigned": started, "on_revoked": stopped, "on_lost": stopped}

    config = {
        **cluster.client_config(),
        "group.id": "classic-workers",
        "group.protocol": "classic",
        "session.timeout.ms": 10_000,
        "heartbeat.interval.ms": 500,
        "rebalance.timeout.ms": 15_000,
        "lease.timeout.ms": 8_000,
        "scheduled.rebalance.max.delay.ms": 0,
    }
    work = {"c": 3}  # 4 units
    a = WorkerGroup(config, work=lambda: work, **callbacks("a"))  # type: ignore[arg-type]
    b = WorkerGroup(config, work=lambda: work, **callbacks("b"))  # type: ignore[arg-type]

    def spread(names: set[str]) -> bool:
        for worker in (a, b):
            if not worker.closed:
                worker.poll(0.05)
        with lock:
            return len(running) == 4 and set(running.values()) == names

    try:
        wait_until(lambda: spread({"a", "b"}), timeout=60, what="both workers running units")
        description = stable_classic_group(cluster, "classic-workers")
        assert description.protocol_type == "connect"
        assert description.protocol_name == "sessioned"
        a.close(20)
        wait_until(lambda: spread({"b"}), timeout=60, what="b running every unit")
    finally:
        a.close(20)
        b.close(20)
    assert not violations, violations
    assert running == {}
