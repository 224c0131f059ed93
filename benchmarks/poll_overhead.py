"""Where kconsumer's ``poll()`` spends its time: per-call cost next to raw confluent-kafka, and a
cProfile of a poll loop over prefetched records.

Both consumers read from librdkafka's mock cluster (its own process, `benchmarks.mock_broker`):

* **per-call cost with nothing to return**: ``poll(0)`` and ``consume(10000, 0)`` on a consumer
  that has read everything (so librdkafka answers at once), best of three timings of 20,000 calls:
  what each call costs above librdkafka itself;
* **cProfile**: 320,000 records (8 partitions, prefetched for 2 s) read with ``poll(1.0)`` under
  cProfile: where the Python time goes.

Run from the repository root::

    python -m benchmarks.poll_overhead
"""

from __future__ import annotations

import cProfile
import io
import pstats
import time
import uuid
from collections.abc import Callable

import confluent_kafka as ck

from kconsumer import Consumer

from .common import broker, produce

TOPIC = "poll-overhead"
PARTITIONS = 8
PER_PARTITION = 40_000


def per_call_us(call: Callable[[], object], calls: int = 20_000) -> float:
    """Best of three: microseconds per call."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(calls):
            call()
        best = min(best, (time.perf_counter() - start) / calls * 1e6)
    return best


def main() -> int:
    total = PARTITIONS * PER_PARTITION
    with broker("mock", [(TOPIC, PARTITIONS)]) as bootstrap:
        produce(bootstrap, TOPIC, PARTITIONS, PER_PARTITION, 100)
        ours = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"poll-overhead-{uuid.uuid4().hex[:8]}",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
        )
        ours.subscribe([TOPIC])
        seen = 0
        while seen < total:
            seen += len(ours.consume(10_000, 1.0))
        raw = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "poll-overhead-raw"})
        raw.assign([ck.TopicPartition(TOPIC, p, PER_PARTITION) for p in range(PARTITIONS)])
        time.sleep(1)
        print("µs per call with nothing to return (best of 3 x 20,000 calls):")
        for name, consumer in (("kconsumer", ours), ("confluent-kafka", raw)):
            poll_us = per_call_us(lambda c=consumer: c.poll(0))
            consume_us = per_call_us(lambda c=consumer: c.consume(10_000, 0))
            print(f"  {name:16} poll(0) {poll_us:6.3f}   consume(10000, 0) {consume_us:6.3f}")
        for p in range(PARTITIONS):
            ours.seek(ck.TopicPartition(TOPIC, p, 0))
        time.sleep(2)
        profile = cProfile.Profile()
        profile.enable()
        seen = 0
        while seen < total:
            if ours.poll(1.0) is not None:
                seen += 1
        profile.disable()
        out = io.StringIO()
        pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(10)
        print(f"\ncProfile of {total:,} kconsumer poll(1.0) calls returning a record:")
        print(out.getvalue().split("\n\n", 1)[-1].rstrip())
        ours.close()
        raw.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
