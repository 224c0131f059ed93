"""Subscribing to a regular expression that the broker resolves (KIP-848).

With the consumer group protocol a pattern subscription is sent to the group coordinator as is
(``SubscribedTopicRegex``, RE2 syntax, matched against whole topic names) and the coordinator
resolves it. When a matching topic is created later, the coordinator assigns its partitions to the
group without the consumer doing anything. Two spellings work: ``SubscriptionPattern("orders-.*")``
(Kafka's Java API) and a topic name starting with ``^`` (confluent-kafka's convention). A pattern is
validated when it is created: an invalid one raises at once, before anything is sent.

The demo subscribes to ``orders-.*``, reads ``orders-eu``, creates ``orders-us`` while consuming,
reads it too (and never ``payments``), then exits 0.

Run it by itself (it starts an in-process reference cluster)::

    python examples/regex_subscription.py

or against a Kafka 4.x cluster (Kafka refreshes a group's regexes at most every 10 s, so the new
topic shows up after a few seconds there)::

    python examples/regex_subscription.py --bootstrap-servers localhost:9092
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator

from kconsumer import Consumer, InvalidPatternError, SubscriptionPattern, TopicPartition


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


def create_and_fill(bootstrap: str, topic: str, records: int) -> None:
    """Create `topic` (2 partitions) and write `records` records to it."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.cimpl import NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, 2, 1)]).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(records):
        producer.produce(topic, value=f"{topic} {i}".encode())
    producer.flush(30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--bootstrap-servers", help="a Kafka 4.x cluster (default: an in-process reference cluster)"
    )
    args = parser.parse_args()
    run = uuid.uuid4().hex[:6]
    prefix = f"orders{run}"

    try:
        SubscriptionPattern(f"{prefix}-(eu")  # a syntax error is caught before anything is sent
    except InvalidPatternError as exc:
        print(f"rejected at once: {exc}")

    with kafka(args.bootstrap_servers) as bootstrap:
        create_and_fill(bootstrap, f"{prefix}-eu", 10)
        create_and_fill(bootstrap, f"payments{run}", 10)  # does not match: never read
        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"regex-example-{run}",
                "auto.offset.reset": "earliest",
            }
        )

        def on_assign(_consumer: Consumer, partitions: list[TopicPartition]) -> None:
            print(f"assigned {sorted((tp.topic, tp.partition) for tp in partitions)}")

        # The same as consumer.subscribe([f"^{prefix}-.*"], on_assign=on_assign)
        consumer.subscribe(SubscriptionPattern(f"{prefix}-.*"), on_assign=on_assign)
        per_topic: Counter[str] = Counter()
        created = False
        deadline = time.monotonic() + 60
        try:
            while per_topic[f"{prefix}-us"] < 10 and time.monotonic() < deadline:
                message = consumer.poll(0.2)
                if message is not None and message.error() is None:
                    per_topic[message.topic() or ""] += 1
                if per_topic[f"{prefix}-eu"] == 10 and not created:
                    print(f"read {prefix}-eu; creating {prefix}-us")
                    create_and_fill(bootstrap, f"{prefix}-us", 10)
                    created = True
        finally:
            consumer.close()
        print(f"records per topic: {dict(per_topic)}")
        expected = {f"{prefix}-eu": 10, f"{prefix}-us": 10}
        return 0 if dict(per_topic) == expected else 1


if __name__ == "__main__":
    sys.exit(main())
