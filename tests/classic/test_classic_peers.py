"""Peers nobody here wrote, in classic groups on the reference cluster: confluent-kafka's classic
consumers with each of librdkafka's strategies (members join, leave and crash while records flow;
the ledger checks nobody reads a partition another holds and nothing is lost), aiokafka's
classic consumers in one group, and kafka-python's."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any

import pytest
from backends import Cluster, open_cluster
from consumer_harness import ConfluentMember, Feeder, Ledger, cluster_committed, wait_until
from process_member import ProcessMember

TOPIC = "classic"
PARTITIONS = 6


def classic_cluster(backend: str) -> contextlib.AbstractContextManager[Cluster]:
    return open_cluster(backend, initial_rebalance_delay_ms=200)


def _classic(strategy: str) -> dict[str, Any]:
    return {
        "group.protocol": "classic",
        "partition.assignment.strategy": strategy,
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 200,
    }


@pytest.mark.parametrize("strategy", ["range", "roundrobin", "cooperative-sticky"])
def test_confluent_classic_members_join_leave_and_crash(strategy: str, backend: str) -> None:
    with classic_cluster(backend) as cluster:
        cluster.create_topic(TOPIC, PARTITIONS)
        group = f"classic-{strategy}"
        ledger = Ledger(cluster_committed(cluster, group))
        feeder = Feeder(cluster, TOPIC)
        bootstrap = cluster.bootstrap_servers

        def member(name: str) -> ConfluentMember:
            return ConfluentMember(
                ledger, name, bootstrap, group, [TOPIC], settings=_classic(strategy), debug_tail=300
            )

        first, second = member("a"), member("b")
        doomed = ProcessMember(ledger, "c", bootstrap, group, TOPIC, strategy)
        wait_until(lambda: ledger.consuming("a", "b", "c"), timeout=40, what="three members consuming")
        second.close()  # leaves: its partitions move to the others
        wait_until(lambda: len(ledger.owned_by("a") | ledger.owned_by("c")) == PARTITIONS, timeout=30)
        doomed.kill()  # crashes: the session timeout gives its partitions away
        wait_until(lambda: len(ledger.owned_by("a")) == PARTITIONS, timeout=30, what="a owning all")
        last = member("d")
        wait_until(lambda: ledger.consuming("a", "d"), timeout=30, what="a and d consuming")
        produced = feeder.stop()
        wait_until(lambda: ledger.has_all(produced), timeout=60, what="every record")
        for survivor in (first, last):
            survivor.close()
        ledger.check(produced)
        assert first.errors == [] and last.errors == [], (
            f"{first.errors} {last.errors}\n-- a's log:\n{first.log_tail()}\n-- d's log:\n{last.log_tail()}"
        )
        description = cluster.describe_classic_group(group)
        assert description is not None and description.state == "Empty", description


def test_aiokafka_classic_consumers_share_a_group(backend: str) -> None:
    aiokafka = pytest.importorskip("aiokafka")
    with classic_cluster(backend) as cluster:
        cluster.create_topic(TOPIC, PARTITIONS)
        produced = {
            p: cluster.produce(TOPIC, [f"{p}-{i}".encode() for i in range(20)], partition=p)
            for p in range(PARTITIONS)
        }
        group = "aiokafka-classic"

        async def run() -> tuple[dict[str, set[tuple[int, int]]], dict[str, set[int]]]:
            consumers = {
                name: aiokafka.AIOKafkaConsumer(
                    TOPIC,
                    bootstrap_servers=cluster.bootstrap_servers,
                    group_id=group,
                    client_id=name,
                    auto_offset_reset="earliest",
                    enable_auto_commit=False,
                    session_timeout_ms=6000,
                    heartbeat_interval_ms=200,
                )
                for name in ("x", "y")
            }
            for consumer in consumers.values():
                await consumer.start()
            seen: dict[str, set[tuple[int, int]]] = {name: set() for name in consumers}
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 30
            while sum(len(s) for s in seen.values()) < 20 * PARTITIONS and loop.time() < deadline:
                for name, consumer in consumers.items():
                    batches = await consumer.getmany(timeout_ms=100)
                    for tp, messages in batches.items():
                        seen[name].update((tp.partition, m.offset) for m in messages)
                    if batches:
                        await consumer.commit()
            owned = {name: {tp.partition for tp in c.assignment()} for name, c in consumers.items()}
            for consumer in consumers.values():
                await consumer.stop()
            return seen, owned

        seen, owned = asyncio.run(run())
        assert owned["x"] and owned["y"] and not owned["x"] & owned["y"], owned
        assert owned["x"] | owned["y"] == set(range(PARTITIONS)), owned
        everything = {(p, o) for p, offsets in produced.items() for o in offsets}
        assert seen["x"] | seen["y"] == everything
        committed = cluster.committed(group)
        assert all(committed[(TOPIC, p)] == 20 for p in range(PARTITIONS)), committed


def test_kafka_python_classic_consumers_share_a_group(backend: str) -> None:
    kafka = pytest.importorskip("kafka")
    with classic_cluster(backend) as cluster:
        cluster.create_topic(TOPIC, PARTITIONS)
        for p in range(PARTITIONS):
            cluster.produce(TOPIC, [f"{p}-{i}".encode() for i in range(10)], partition=p)
        group = "kafka-python-classic"
        seen: dict[str, set[tuple[int, int]]] = {"x": set(), "y": set()}
        stop = threading.Event()
        owned: dict[str, set[int]] = {}

        def consume(name: str) -> None:
            consumer = kafka.KafkaConsumer(
                TOPIC,
                bootstrap_servers=cluster.bootstrap_servers,
                group_id=group,
                client_id=name,
                auto_offset_reset="earliest",
                enable_auto_commit=False,
                session_timeout_ms=6000,
                heartbeat_interval_ms=200,
            )
            while not stop.is_set():
                for tp, messages in consumer.poll(timeout_ms=100).items():
                    seen[name].update((tp.partition, m.offset) for m in messages)
                    consumer.commit()
                # Only what it owned while both were members: once the test stops, the first to
                # close leaves, and the other's last poll may already hold every partition.
                if not stop.is_set():
                    owned[name] = {tp.partition for tp in consumer.assignment()}
            consumer.close()

        threads = [threading.Thread(target=consume, args=(name,), daemon=True) for name in seen]
        for thread in threads:
            thread.start()
        try:
            wait_until(
                lambda: len(seen["x"] | seen["y"]) == 10 * PARTITIONS and owned.get("x") and owned.get("y"),
                timeout=40,
                what="both kafka-python members consuming everything",
            )
        finally:
            stop.set()
            for thread in threads:
                thread.join(20)
        assert not owned["x"] & owned["y"], owned
        assert owned["x"] | owned["y"] == set(range(PARTITIONS)), owned
