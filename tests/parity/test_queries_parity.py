"""Cluster queries and constructor arguments as confluent-kafka answers them (see parity_harness)."""

from __future__ import annotations

import logging
import sys
import time
from typing import Any

import confluent_kafka
from confluent_kafka import KafkaException, TopicPartition
from parity_harness import Run, compare, read

from kconsumer.broker.server.config import DEFAULT_CLUSTER_ID
from kconsumer.testing import ReferenceCluster


def test_watermarks_and_offsets_for_times(cluster: ReferenceCluster) -> None:
    def scenario(run: Run) -> dict[str, Any]:
        topic, group = run.topic("watermarks", 2, records=5), run.group("watermarks")
        consumer = run.consumer(group)
        consumer.subscribe([topic])
        read(consumer, 10)
        seen: dict[str, Any] = {
            f"watermarks {p}": consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            for p in (0, 1)
        }
        future = int(time.time() * 1000) + 3_600_000
        found = consumer.offsets_for_times(
            [TopicPartition(topic, 0, 0), TopicPartition(topic, 1, future)], timeout=10
        )
        seen["offsets_for_times"] = [(tp.partition, tp.offset) for tp in found]
        try:
            consumer.get_watermark_offsets(TopicPartition(topic, 9), timeout=2)
            seen["unknown partition"] = "answered"
        except KafkaException as exc:
            seen["unknown partition"] = exc.args[0].code()
        return seen

    compare("watermarks and offsets_for_times", scenario, cluster)


def test_logger_keyword(cluster: ReferenceCluster) -> None:
    def scenario(run: Run) -> dict[str, Any]:
        logger = logging.getLogger(f"parity-{run.implementation}")
        group = run.group("logger")
        if run.implementation == "confluent":
            import confluent_kafka

            consumer: Any = confluent_kafka.Consumer(
                {
                    "bootstrap.servers": run.cluster.bootstrap_servers,
                    "group.id": group,
                    "group.protocol": "consumer",
                },
                logger=logger,
            )
        else:
            from kconsumer import Consumer

            consumer = Consumer(
                {"bootstrap.servers": run.cluster.bootstrap_servers, "group.id": group}, logger=logger
            )
        run.made.append(consumer)
        return {"constructed": True}

    compare("logger keyword", scenario, cluster)


def test_poll_interval_overrun_is_an_error_event(cluster: ReferenceCluster) -> None:
    """The poll after a max.poll.interval.ms overrun returns a _MAX_POLL_EXCEEDED error message
    (a loop written ``if msg.error(): continue`` keeps going); the partitions are lost and come
    back by themselves."""

    def scenario(run: Run) -> dict[str, Any]:
        topic, group = run.topic("overrun", 1, records=3), run.group("overrun")
        calls: list[Any] = []

        def record(kind: str) -> Any:
            return lambda _c, parts: calls.append((kind, [tp.partition for tp in parts]))

        # classic: max.poll.interval.ms may not be below session.timeout.ms (6 s, the broker's minimum)
        interval_ms = 6000 if run.protocol == "classic" else 1000
        consumer = run.consumer(group, max_poll_interval_ms=interval_ms)
        commit_in_lost: list[Any] = []

        def lost(c: Any, parts: list[Any]) -> None:
            calls.append(("lost", [tp.partition for tp in parts]))
            try:
                c.commit(asynchronous=False)
                commit_in_lost.append("committed")
            except KafkaException as exc:
                commit_in_lost.append(exc.args[0].name())

        consumer.subscribe([topic], on_assign=record("assign"), on_revoke=record("revoke"), on_lost=lost)
        read(consumer, 3)
        time.sleep(interval_ms / 1000 + 1.5)
        events: list[Any] = []
        deadline = time.monotonic() + 10
        while len(calls) < 3 and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is not None:
                events.append(message.error().code())
        return {"error events": events, "callbacks": calls, "commit() in on_lost": commit_in_lost}

    compare("poll interval overrun", scenario, cluster)


def _parse_group_metadata(data: bytes) -> dict[str, Any]:
    """librdkafka's serialised group metadata, field by field (see kconsumer/client/group_metadata.py)."""
    assert data.startswith(b"CGMDv2:")
    generation = int.from_bytes(data[7:11], sys.byteorder, signed=True)
    group, member, rest = data[11:].split(b"\x00", 2)
    instance = None if rest == b"\x01" else rest[1:-1].decode()
    return {
        "generation": generation,
        "group": group.decode(),
        "member": member.decode(),
        "instance": instance,
    }


def test_consumer_group_metadata_for_transactions(cluster: ReferenceCluster) -> None:
    """The same fields (this member's id, its epoch once in the group, the instance id), and
    librdkafka's transactional producer reads them (it answers _NOT_CONFIGURED for a producer
    without transactional.id, not _BAD_MSG)."""

    def scenario(run: Run) -> dict[str, Any]:
        topic, group = run.topic("cgmd", 1, records=1), run.group("cgmd")
        consumer = run.consumer(group, group_instance_id=f"instance-{run.implementation}")
        before = _parse_group_metadata(consumer.consumer_group_metadata())
        consumer.subscribe([topic])
        read(consumer, 1)
        data = consumer.consumer_group_metadata()
        after = _parse_group_metadata(data)
        producer = confluent_kafka.Producer({"bootstrap.servers": run.cluster.bootstrap_servers})
        try:
            producer.send_offsets_to_transaction([TopicPartition(topic, 0, 1)], data, 1)
            read_back: Any = "accepted"
        except KafkaException as exc:
            read_back = exc.args[0].code()
        return {
            "generation before joining": before["generation"],
            "group": after["group"] == group,
            "member is memberid()": after["member"] == consumer.memberid(),
            "in the group": after["generation"] > 0,
            "instance": after["instance"] == f"instance-{run.implementation}",
            "librdkafka reads it": read_back,
            "cluster id": consumer.cluster_id(10) == DEFAULT_CLUSTER_ID,
        }

    compare("consumer_group_metadata", scenario, cluster)
