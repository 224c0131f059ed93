"""The basic consume loop: subscribe, poll, process, close.

It shows the confluent-kafka style API of ``kconsumer.Consumer`` on the KIP-848 consumer group
protocol: the configuration (no ``session.timeout.ms`` / ``heartbeat.interval.ms``: with
``group.protocol=consumer`` the broker owns them), ``subscribe`` with an ``on_assign`` callback
(a notification: the consumer assigns partitions by itself, incrementally), ``poll`` returning
confluent-kafka ``Message`` objects, automatic offset commits, and ``close`` (which commits,
revokes and leaves the group).

Run it by itself: it starts an in-process reference cluster, creates a topic, produces a few
records, reads them all and exits 0::

    python examples/basic_consumer.py

or point it at a Kafka 4.x cluster (the topic is created if it does not exist)::

    python examples/basic_consumer.py --bootstrap-servers localhost:9092
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Iterator

from kconsumer import Consumer, TopicPartition

TOPIC = "basic-example"
GROUP = "basic-example-group"
RECORDS = 30


@contextlib.contextmanager
def kafka(bootstrap: str | None) -> Iterator[str]:
    """The bootstrap servers to use: the given ones, or an in-process reference cluster's."""
    if bootstrap is not None:
        yield bootstrap
        return
    from kconsumer.testing import ReferenceCluster

    # Short group timers so the demo is quick (Kafka's defaults: heartbeat 5 s, session 45 s).
    with ReferenceCluster(
        heartbeat_interval_ms=200, session_timeout_ms=3000, assignment_interval_ms=0
    ) as cluster:
        yield cluster.bootstrap_servers


def produce(bootstrap: str, topic: str, count: int, partitions: int = 3) -> None:
    """Create `topic` if needed and write `count` records to it (with confluent-kafka)."""
    from confluent_kafka import KafkaException, Producer
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.cimpl import NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        with contextlib.suppress(KafkaException):  # it already exists
            future.result(30)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(count):
        producer.produce(topic, key=f"key-{i}".encode(), value=f"record {i}".encode())
    producer.flush(30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--bootstrap-servers", help="a Kafka 4.x cluster (default: an in-process reference cluster)"
    )
    args = parser.parse_args()

    with kafka(args.bootstrap_servers) as bootstrap:
        produce(bootstrap, TOPIC, RECORDS)

        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": GROUP,
                "auto.offset.reset": "earliest",  # no committed offset yet: start at the beginning
                "enable.auto.commit": True,  # the default: positions committed every 5 s and on close
            }
        )

        def on_assign(_consumer: Consumer, partitions: list[TopicPartition]) -> None:
            print(f"assigned: {sorted(tp.partition for tp in partitions)}")

        consumer.subscribe([TOPIC], on_assign=on_assign)
        received = 0
        deadline = time.monotonic() + 30
        try:
            while received < RECORDS and time.monotonic() < deadline:
                message = consumer.poll(1.0)
                if message is None:
                    continue
                if message.error() is not None:
                    print(f"error: {message.error()}")
                    continue
                received += 1
                key = (message.key() or b"").decode()
                print(
                    f"{message.topic()}[{message.partition()}]@{message.offset()} {key}: {message.value()!r}"
                )
        finally:
            consumer.close()  # commits the positions, revokes, leaves the group
        print(f"read {received} records")
        return 0 if received >= RECORDS else 1


if __name__ == "__main__":
    sys.exit(main())
