"""How long a partition added to a librdkafka handle that is already fetching takes to yield its
first record, on each broker (raw confluent-kafka, manual ``incremental_assign``).

kconsumer's fetch path is such a handle: a member that takes over a partition while it keeps
fetching others pays this on every move. A producer thread writes 80 records/s over the topic's 4
partitions; the consumer fetches partition 0 from its end, then partition 1 is added at an offset
(with and without a leader epoch, which makes librdkafka validate the offset first).

Run from the repository root::

    python -m benchmarks.assign_latency
"""

from __future__ import annotations

import statistics
import threading
import time

import confluent_kafka as ck

from .common import BROKERS, broker, produce

TOPIC = "assign-latency"


def _write(bootstrap: str, stop: threading.Event) -> None:
    producer = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 1})
    i = 0
    while not stop.is_set():
        producer.produce(TOPIC, b"x", partition=i % 4)
        i += 1
        producer.poll(0)
        time.sleep(0.0125)
    producer.flush(5)


def added_partition_latency(bootstrap: str, leader_epoch: int | None) -> float:
    """Seconds from incremental_assign() of a second partition to its first record."""
    consumer = ck.Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "assign-latency", "enable.auto.commit": False}
    )
    try:
        consumer.list_topics(TOPIC, timeout=5)
        consumer.assign([ck.TopicPartition(TOPIC, 0, ck.OFFSET_END)])
        time.sleep(0.5)
        while not consumer.consume(100, 0.1):
            pass
        start = time.monotonic()
        if leader_epoch is None:
            consumer.incremental_assign([ck.TopicPartition(TOPIC, 1, 50)])
        else:
            consumer.incremental_assign([ck.TopicPartition(TOPIC, 1, 50, leader_epoch=leader_epoch)])
        while not any(m.partition() == 1 for m in consumer.consume(100, 0.01)):
            pass
        return time.monotonic() - start
    finally:
        consumer.close()


def main() -> int:
    print(f"{'broker':10} {'leader epoch':>12} {'added partition -> first record (median of 3, s)':>50}")
    for kind in BROKERS:
        with broker(kind, [(TOPIC, 4)]) as bootstrap:
            produce(bootstrap, TOPIC, 4, 100, 100)
            stop = threading.Event()
            writer = threading.Thread(target=_write, args=(bootstrap, stop))
            writer.start()
            try:
                for epoch in (None, 0):
                    runs = [added_partition_latency(bootstrap, epoch) for _ in range(3)]
                    print(f"{kind:10} {epoch!s:>12} {statistics.median(runs):50.3f}")
            finally:
                stop.set()
                writer.join()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
