"""Transactions through faults: the transaction coordinator's broker stopping mid-transaction and
an in-place coordinator failover (reference cluster, three brokers: the coordinator's state is a
log replayed by the broker taking over), and a transaction left open past its timeout (both
backends: the coordinator aborts it and fences the producer)."""

from __future__ import annotations

import time
import uuid

import confluent_kafka as ck
import pytest
from backends import Cluster, open_cluster

from kconsumer.testing import ReferenceCluster

pytestmark = pytest.mark.timeout(180)


def _read_committed(bootstrap: str, topic: str, partitions: int, seconds: float = 3.0) -> list[bytes]:
    reader = ck.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"r-{uuid.uuid4().hex[:6]}",
            "isolation.level": "read_committed",
        }
    )
    try:
        reader.assign([ck.TopicPartition(topic, p, 0) for p in range(partitions)])
        values: list[bytes] = []
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            message = reader.poll(0.2)
            if message is not None and message.error() is None:
                values.append(message.value())
        return sorted(values)
    finally:
        reader.close()


def _produce(producer: ck.Producer, topic: str, prefix: str, count: int, partitions: int) -> list[bytes]:
    values = [f"{prefix}{i}".encode() for i in range(count)]
    for i, value in enumerate(values):
        producer.produce(topic, value=value, partition=i % partitions)
    assert producer.flush(30) == 0
    return values


def test_a_transaction_survives_its_coordinator_moving() -> None:
    with ReferenceCluster(brokers=3, heartbeat_interval_ms=200, session_timeout_ms=3000) as cluster:
        cluster.create_topic("moved", 3)
        tid = "mover"
        producer = ck.Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": tid})
        producer.init_transactions(30)
        producer.begin_transaction()
        first = _produce(producer, "moved", "a", 9, 3)
        cluster.stop_broker(cluster.coordinator_node(tid))  # the transaction coordinator's broker
        second = _produce(producer, "moved", "b", 9, 3)
        producer.commit_transaction(60)
        producer.begin_transaction()
        aborted = _produce(producer, "moved", "x", 6, 3)
        cluster.fail_over_coordinator()  # mid-transaction: the new incarnation replays the log
        producer.abort_transaction(60)
        producer.begin_transaction()
        third = _produce(producer, "moved", "c", 3, 3)
        producer.commit_transaction(60)
        seen = _read_committed(cluster.bootstrap_servers, "moved", 3)
        assert seen == sorted(first + second + third)
        assert not set(aborted) & set(seen)


def test_a_transaction_left_open_past_its_timeout_is_aborted(backend: str) -> None:
    # Kafka looks for timed-out transactions every 10 s by default; a second here.
    options = {"broker_config": {"transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000"}}
    with open_cluster(backend, **(options if backend == "kafka" else {})) as cluster:
        _timeout_scenario(cluster)


def _timeout_scenario(cluster: Cluster) -> None:
    topic = f"timeout-{uuid.uuid4().hex[:6]}"
    cluster.create_topic(topic, 1)
    bootstrap = cluster.bootstrap_servers
    producer = ck.Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": f"slow-{uuid.uuid4().hex[:6]}",
            "transaction.timeout.ms": 2000,
        }
    )
    producer.init_transactions(30)
    producer.begin_transaction()
    doomed = _produce(producer, topic, "d", 4, 1)
    plain = ck.Producer({"bootstrap.servers": bootstrap})
    behind = _produce(plain, topic, "p", 1, 1)  # held back by the open transaction
    deadline = time.monotonic() + 60
    while _read_committed(bootstrap, topic, 1, 1.0) != behind:  # the abort moves the stable offset
        assert time.monotonic() < deadline, "the timed-out transaction was never aborted"
    with pytest.raises(ck.KafkaException):
        producer.commit_transaction(30)
    assert _read_committed(bootstrap, topic, 1) == behind
    assert not set(doomed) & set(_read_committed(bootstrap, topic, 1))
