"""Peers nobody here wrote on the 3-broker reference cluster: librdkafka's KIP-848 consumers
follow a coordinator move, leader moves and a broker restart with no record lost (and no partition
owned twice by the coordinator); aiokafka in manual-assign mode follows the leader moves and the
restart too."""

from __future__ import annotations

import asyncio
import threading
import time

import aiokafka
import confluent_kafka
from consumer_harness import Feeder, wait_until

from kconsumer.testing import ReferenceCluster

TOPIC = "peers"
PARTITIONS = 6


def _faults(cluster: ReferenceCluster, group: str) -> None:
    """A coordinator move, every leader moved, the busiest broker restarted."""
    cluster.move_coordinator(group, cluster.coordinator_node(group) % 3 + 1)
    time.sleep(0.5)
    for partition in range(PARTITIONS):
        cluster.move_leader(TOPIC, partition, cluster.leader(TOPIC, partition) % 3 + 1)
    time.sleep(0.5)
    victim = cluster.coordinator_node(group)
    cluster.stop_broker(victim)
    time.sleep(1.0)
    cluster.start_broker(victim)


def test_librdkafka_kip848_consumers_follow_coordinator_and_leader_moves_and_a_restart() -> None:
    with ReferenceCluster(brokers=3, heartbeat_interval_ms=200, session_timeout_ms=6000) as cluster:
        cluster.create_topic(TOPIC, PARTITIONS)
        feeder = Feeder(cluster, TOPIC)
        group = "librdkafka-peers"
        seen: set[tuple[int, int]] = set()
        lock = threading.Lock()
        stop = threading.Event()
        double_owned: list[str] = []

        def consume(name: str) -> None:
            consumer = confluent_kafka.Consumer(
                {
                    "bootstrap.servers": cluster.bootstrap_servers,
                    "group.id": group,
                    "group.protocol": "consumer",
                    "auto.offset.reset": "earliest",
                    "client.id": name,
                    "log_level": 3,
                }
            )
            consumer.subscribe([TOPIC])
            try:
                while not stop.is_set():
                    message = consumer.poll(0.1)
                    if message is not None and message.error() is None:
                        with lock:
                            seen.add((message.partition(), message.offset()))
            finally:
                consumer.close()

        threads = [threading.Thread(target=consume, args=(f"c{i}",), daemon=True) for i in range(2)]
        for thread in threads:
            thread.start()

        def sample() -> None:
            while not stop.wait(0.05):
                description = cluster.describe_group(group)
                if description is not None:
                    double_owned.extend(str(k) for k, owners in description.owners.items() if len(owners) > 1)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            wait_until(lambda: len(seen) > 100, timeout=30, what="the peers consuming")
            _faults(cluster, group)
            produced = feeder.stop()
            wanted = {(p, o) for (_t, p), offsets in produced.items() for o in offsets}
            wait_until(lambda: wanted <= seen, timeout=60, what="every record read by the peers")
        finally:
            stop.set()
            for thread in threads:
                thread.join(30)
        assert not double_owned, double_owned


def test_aiokafka_manual_assign_follows_leader_moves_and_a_restart() -> None:
    with ReferenceCluster(brokers=3) as cluster:
        cluster.create_topic(TOPIC, PARTITIONS)
        feeder = Feeder(cluster, TOPIC)

        got: set[tuple[int, int]] = set()

        async def read_all(until: threading.Event) -> None:
            consumer = aiokafka.AIOKafkaConsumer(
                bootstrap_servers=cluster.bootstrap_servers,
                enable_auto_commit=False,
                metadata_max_age_ms=1000,
            )
            await consumer.start()
            try:
                partitions = [aiokafka.TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
                consumer.assign(partitions)
                await consumer.seek_to_beginning(*partitions)
                while not until.is_set():
                    batches = await consumer.getmany(timeout_ms=100)
                    for records in batches.values():
                        got.update((r.partition, r.offset) for r in records)
            finally:
                await consumer.stop()

        done = threading.Event()
        reader = threading.Thread(target=lambda: asyncio.run(read_all(done)), daemon=True)
        reader.start()
        time.sleep(1.0)
        for partition in range(PARTITIONS):
            cluster.move_leader(TOPIC, partition, cluster.leader(TOPIC, partition) % 3 + 1)
        time.sleep(1.0)
        cluster.stop_broker(2)
        time.sleep(1.0)
        cluster.start_broker(2)
        produced = feeder.stop()
        wanted = {(p, o) for (_t, p), offsets in produced.items() for o in offsets}
        try:
            wait_until(lambda: wanted <= set(got), timeout=60, what="every record read by aiokafka")
        finally:
            done.set()
            reader.join(30)
