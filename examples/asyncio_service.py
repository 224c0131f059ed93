"""An asyncio service consuming with KIP-848: process each record asynchronously, commit what was
processed, and hand partitions over cleanly when the group rebalances.

`kconsumer.aio.AIOConsumer` runs on the service's own event loop: ``async for`` yields records,
the rebalance callbacks are coroutines (``on_revoke`` awaits the commit of what was processed, so
the next owner starts exactly there), and nothing blocks the loop, so the service's other tasks
(here a small "health" ticker) keep running.

The demo: worker A starts alone; worker B joins while A is busy; partitions move from A to B; the
two together process every record exactly once (checked at the end), then both close.

Run it by itself (it starts an in-process reference cluster)::

    python examples/asyncio_service.py

or against a Kafka 4.x cluster::

    python examples/asyncio_service.py --bootstrap-servers localhost:9092
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import uuid
from collections import Counter

from kconsumer import Message, TopicPartition
from kconsumer.aio import AIOConsumer

PARTITIONS = 4
PER_PARTITION = 100


class Worker:
    """One service instance: consumes, processes asynchronously, commits what it processed."""

    def __init__(self, name: str, bootstrap: str, group: str, topic: str, processed: Counter[str]) -> None:
        self.name = name
        self.topic = topic
        self.processed = processed
        #: (topic, partition) -> the offset after the last processed record.
        self.done: dict[tuple[str, int], int] = {}
        self.consumer = AIOConsumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "client.id": name,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
        )

    async def on_assign(self, consumer: AIOConsumer, partitions: list[TopicPartition]) -> None:
        if partitions:
            print(f"{self.name}: assigned {sorted(tp.partition for tp in partitions)}")

    async def on_revoke(self, consumer: AIOConsumer, partitions: list[TopicPartition]) -> None:
        """Commit what was processed of the partitions leaving: the next owner starts there."""
        offsets = [
            TopicPartition(tp.topic, tp.partition, self.done[(tp.topic, tp.partition)])
            for tp in partitions
            if (tp.topic, tp.partition) in self.done
        ]
        if offsets:
            await consumer.commit(offsets=offsets)
        for tp in partitions:
            self.done.pop((tp.topic, tp.partition), None)
        if partitions:
            print(
                f"{self.name}: revoked {sorted(tp.partition for tp in partitions)}, committed {len(offsets)}"
            )

    async def handle(self, message: Message) -> None:
        await asyncio.sleep(0.001)  # the service's asynchronous work (a database write, an HTTP call...)
        self.processed[message.value().decode()] += 1
        self.done[(message.topic(), message.partition())] = message.offset() + 1

    async def run(self, stop: asyncio.Event) -> None:
        await self.consumer.subscribe([self.topic], on_assign=self.on_assign, on_revoke=self.on_revoke)
        try:
            while not stop.is_set():
                for message in await self.consumer.consume(50, timeout=0.1):
                    if message.error() is None:
                        await self.handle(message)
                if self.done:
                    await self.consumer.commit(asynchronous=True)
        finally:
            await self.consumer.close()  # revokes (committing in on_revoke) and leaves the group


def produce(bootstrap: str, topic: str) -> set[str]:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.cimpl import NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the topic exists
    for future in admin.create_topics([NewTopic(topic, PARTITIONS, 1)]).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": bootstrap})
    values = set()
    for i in range(PER_PARTITION):
        for partition in range(PARTITIONS):
            value = f"{partition}:{i}"
            values.add(value)
            producer.produce(topic, value=value.encode(), partition=partition)
    producer.flush(30)
    return values


async def service(bootstrap: str) -> int:
    topic, group = f"orders-{uuid.uuid4().hex[:8]}", f"service-{uuid.uuid4().hex[:8]}"
    expected = produce(bootstrap, topic)
    processed: Counter[str] = Counter()
    stop = asyncio.Event()
    ticks = 0

    async def health() -> None:  # another task of the service: it keeps its pace throughout
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            await asyncio.sleep(0.01)

    a = Worker("A", bootstrap, group, topic, processed)
    b = Worker("B", bootstrap, group, topic, processed)
    tasks = [asyncio.ensure_future(health()), asyncio.ensure_future(a.run(stop))]
    while sum(processed.values()) < len(expected) // 4:
        await asyncio.sleep(0.01)
    tasks.append(asyncio.ensure_future(b.run(stop)))  # B joins: partitions move from A to B
    for _ in range(3000):
        if set(processed) >= expected:
            break
        await asyncio.sleep(0.01)
    stop.set()
    await asyncio.gather(*tasks)
    missing = expected - set(processed)
    twice = [value for value, count in processed.items() if count > 1]
    print(f"processed {len(processed)} of {len(expected)} records, {len(twice)} twice")
    print(f"the service's other task ticked {ticks} times meanwhile")
    return 0 if not missing and not twice else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--bootstrap-servers", help="a Kafka 4.x cluster (default: an in-process reference cluster)"
    )
    args = parser.parse_args()
    if args.bootstrap_servers:
        return asyncio.run(service(args.bootstrap_servers))
    from kconsumer.testing import ReferenceCluster  # an in-process cluster for the demo

    with ReferenceCluster(
        heartbeat_interval_ms=200, session_timeout_ms=3000, assignment_interval_ms=0
    ) as cluster:
        return asyncio.run(service(cluster.bootstrap_servers))


if __name__ == "__main__":
    sys.exit(main())
