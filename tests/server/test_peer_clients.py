"""Clients nobody here wrote read and write the reference cluster: confluent-kafka (librdkafka)
produces 100,000 records; confluent-kafka and aiokafka consumers in manual-assign mode read every
one of them back, in order."""

from __future__ import annotations

import asyncio
import time

import aiokafka
import confluent_kafka as ck

from kconsumer.testing import ReferenceCluster

TOPIC = "peers"
PARTITIONS = 4
RECORDS = 100_000


def _produce_all(bootstrap: str) -> None:
    producer = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
    failures: list[object] = []

    def delivered(error: object, message: object) -> None:
        if error is not None:
            failures.append(error)

    for i in range(RECORDS):
        while True:
            try:
                producer.produce(
                    TOPIC,
                    key=b"%d" % i,
                    value=b"value-%08d" % i,
                    partition=i % PARTITIONS,
                    on_delivery=delivered,
                )
                break
            except BufferError:
                producer.poll(0.01)
        if i % 5000 == 0:
            producer.poll(0)
    assert producer.flush(30) == 0
    assert not failures, failures[:5]


def _check(received: dict[int, list[tuple[int, bytes]]]) -> None:
    """Every record once, each partition in offset order with the values in production order."""
    total = 0
    for partition in range(PARTITIONS):
        records = received[partition]
        offsets = [offset for offset, _value in records]
        assert offsets == list(range(len(records))), f"partition {partition} offsets out of order"
        expected = [b"value-%08d" % i for i in range(partition, RECORDS, PARTITIONS)]
        assert [value for _offset, value in records] == expected
        total += len(records)
    assert total == RECORDS


def _read_with_confluent(bootstrap: str) -> dict[int, list[tuple[int, bytes]]]:
    consumer = ck.Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "peer-reader", "enable.auto.commit": False}
    )
    received: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(PARTITIONS)}
    try:
        consumer.assign([ck.TopicPartition(TOPIC, p, ck.OFFSET_BEGINNING) for p in range(PARTITIONS)])
        count = 0
        deadline = time.monotonic() + 60
        while count < RECORDS and time.monotonic() < deadline:
            for message in consumer.consume(10_000, 0.5):
                assert message.error() is None, message.error()
                received[message.partition() or 0].append((message.offset() or 0, message.value() or b""))
                count += 1
    finally:
        consumer.close()
    return received


async def _read_with_aiokafka(bootstrap: str) -> dict[int, list[tuple[int, bytes]]]:
    consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    received: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(PARTITIONS)}
    try:
        partitions = [aiokafka.TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        count = 0
        deadline = time.monotonic() + 60
        while count < RECORDS and time.monotonic() < deadline:
            batches = await consumer.getmany(timeout_ms=500, max_records=10_000)
            for tp, messages in batches.items():
                for message in messages:
                    received[tp.partition].append((message.offset, message.value))
                    count += 1
    finally:
        await consumer.stop()
    return received


def test_librdkafka_and_aiokafka_read_back_what_librdkafka_wrote() -> None:
    with ReferenceCluster() as cluster:
        cluster.create_topic(TOPIC, PARTITIONS)
        _produce_all(cluster.bootstrap_servers)
        assert sum(end for _start, end in cluster.watermarks(TOPIC)) == RECORDS
        _check(_read_with_confluent(cluster.bootstrap_servers))
        _check(asyncio.run(_read_with_aiokafka(cluster.bootstrap_servers)))
