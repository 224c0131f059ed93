"""Committing processed offsets when partitions are revoked, with a ConsumerRebalanceListener.

With ``enable.auto.commit=false`` the application decides what is committed: here, the offset
after the last record it *processed*, per partition. The place that makes this safe across
rebalances is ``on_partitions_revoked``: it runs (on the polling thread, inside ``poll``) after
the consumer stopped fetching the partitions and before the coordinator is told they are free, so
a synchronous commit there is exactly where the next owner starts. Nothing is read twice, nothing
is skipped. ``on_partitions_lost`` is different: the partitions already belong to someone else
(this member was fenced or stopped polling), so it must not commit.

The demo: consumer A reads a topic alone; consumer B joins; the coordinator moves some partitions
from A to B incrementally (A keeps the others and keeps reading them); A commits what it processed
of the moved ones in ``on_partitions_revoked``; B starts exactly there. It checks that every record
was processed exactly once and exits 0.

Run it by itself (it starts an in-process reference cluster)::

    python examples/commit_on_revoke.py

or against a Kafka 4.x cluster::

    python examples/commit_on_revoke.py --bootstrap-servers localhost:9092
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator

from kconsumer import Consumer, ConsumerRebalanceListener, KafkaException, Message, TopicPartition

PARTITIONS = 4


class CommitOnRevoke(ConsumerRebalanceListener):
    """Commits the processed offsets of revoked partitions; forgets lost ones without committing."""

    def __init__(self, name: str, consumer: Consumer) -> None:
        self.name = name
        self.consumer = consumer
        #: (topic, partition) -> the offset after the last processed record: what to commit.
        self.processed: dict[tuple[str, int], int] = {}

    def record_processed(self, message: Message) -> None:
        topic, partition, offset = message.topic(), message.partition(), message.offset()
        assert topic is not None and partition is not None and offset is not None
        self.processed[(topic, partition)] = offset + 1

    def on_partitions_assigned(self, partitions: list[TopicPartition]) -> None:
        print(f"{self.name}: assigned {sorted(tp.partition for tp in partitions)}")

    def on_partitions_revoked(self, partitions: list[TopicPartition]) -> None:
        offsets = [
            TopicPartition(tp.topic, tp.partition, self.processed.pop((tp.topic, tp.partition)))
            for tp in partitions
            if (tp.topic, tp.partition) in self.processed
        ]
        if offsets:
            self.consumer.commit(offsets=offsets, asynchronous=False)
        committed = {tp.partition: tp.offset for tp in offsets}
        print(f"{self.name}: revoked {sorted(tp.partition for tp in partitions)}, committed {committed}")

    def on_partitions_lost(self, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            self.processed.pop((tp.topic, tp.partition), None)
        print(f"{self.name}: lost {sorted(tp.partition for tp in partitions)} (nothing committed)")


@contextlib.contextmanager
def kafka(bootstrap: str | None) -> Iterator[str]:
    """The bootstrap servers to use: the given ones, or an in-process reference cluster's."""
    if bootstrap is not None:
        yield bootstrap
        return
    from kconsumer.testing import ReferenceCluster

    with ReferenceCluster(
        heartbeat_interval_ms=200, session_timeout_ms=3000, assignment_interval_ms=0
    ) as cluster:
        yield cluster.bootstrap_servers


def produce(bootstrap: str, topic: str, per_partition: int, create: bool = True) -> None:
    """Write `per_partition` records to each partition of `topic` (creating it first)."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.cimpl import NewTopic

    if create:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for future in admin.create_topics([NewTopic(topic, PARTITIONS, 1)]).values():
            future.result(30)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(per_partition):
        for partition in range(PARTITIONS):
            producer.produce(topic, value=f"{partition}:{i}".encode(), partition=partition)
    producer.flush(30)


def member(bootstrap: str, group: str, topic: str, name: str) -> tuple[Consumer, CommitOnRevoke]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "client.id": name,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,  # commits are ours: on revocation (and after each batch)
        }
    )
    listener = CommitOnRevoke(name, consumer)
    consumer.subscribe([topic], listener=listener)
    return consumer, listener


def poll_once(consumer: Consumer, listener: CommitOnRevoke, seen: Counter[tuple[int, int]]) -> None:
    message = consumer.poll(0.05)
    if message is not None and message.error() is None:
        seen[(message.partition() or 0, message.offset() or 0)] += 1  # "process" it
        listener.record_processed(message)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--bootstrap-servers", help="a Kafka 4.x cluster (default: an in-process reference cluster)"
    )
    args = parser.parse_args()
    run = uuid.uuid4().hex[:8]
    topic, group = f"commit-on-revoke-{run}", f"commit-on-revoke-{run}"

    with kafka(args.bootstrap_servers) as bootstrap:
        produce(bootstrap, topic, per_partition=50)
        seen: Counter[tuple[int, int]] = Counter()
        a, a_listener = member(bootstrap, group, topic, "A")
        # A reads alone for a while (both consumers are polled from this one thread: each
        # Consumer is used by one thread at a time, as confluent-kafka requires).
        deadline = time.monotonic() + 30
        while len(seen) < 60 and time.monotonic() < deadline:
            poll_once(a, a_listener, seen)
        b, b_listener = member(bootstrap, group, topic, "B")
        produced_more = False
        try:
            while len(seen) < PARTITIONS * 60 and time.monotonic() < deadline:
                poll_once(a, a_listener, seen)
                poll_once(b, b_listener, seen)
                if not produced_more and b.assignment():
                    produce(bootstrap, topic, per_partition=10, create=False)  # while both read
                    produced_more = True
        finally:
            for consumer in (b, a):
                with contextlib.suppress(KafkaException):
                    consumer.close()  # on_partitions_revoked commits one last time
        twice = sorted(key for key, count in seen.items() if count > 1)
        print(f"processed {len(seen)} distinct records, {len(twice)} twice")
        return 0 if len(seen) == PARTITIONS * 60 and not twice else 1


if __name__ == "__main__":
    sys.exit(main())
