"""Fetch throughput: raw confluent-kafka against the reference cluster and against librdkafka's mock.

The same client (confluent-kafka's ``Consumer`` in manual-assign mode, ``consume(n)`` in a loop)
reads the same data (``--partitions`` partitions of ``--records`` records of ``--size`` bytes,
written by confluent-kafka's ``Producer``) from

* librdkafka's built-in mock cluster (``Producer({'test.mock.num.brokers': 1})``; its address
  comes from ``list_topics().brokers``; it keeps only ~45,000 records of 100 bytes per partition,
  hence the default size),
* the reference cluster in this process (`kconsumer.testing.ReferenceCluster`, a background
  thread sharing the interpreter with the consumer), and
* the reference cluster as its own process (``python -m kconsumer serve``),

in the same run, on the same machine. Each read is timed from ``assign()`` to the last record,
``--rounds`` times per target; the best and the median round are printed, plus the produce rate
(``flush()`` included), each target's ratio to the mock, and the median rate from the first
record to the last (which leaves out the offset lookup and first fetch).

Run from the repository root::

    python -m benchmarks.fetch_reference_vs_mock
    python -m benchmarks.fetch_reference_vs_mock --rounds 5 --batch 10000 --no-subprocess
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import confluent_kafka as ck

from kconsumer.testing import ReferenceCluster

from .common import broker, produce

TOPIC = "fetch-bench"


@dataclass
class Result:
    target: str
    produce_s: float
    #: Seconds from assign() to the last record, per round.
    rounds: list[float]
    #: Seconds from the first record to the last, per round.
    steady: list[float]
    records: int
    size: int

    @property
    def best(self) -> float:
        return self.records / min(self.rounds)

    @property
    def median(self) -> float:
        return self.records / statistics.median(self.rounds)

    @property
    def steady_median(self) -> float:
        return self.records / statistics.median(self.steady)


def consume_once(bootstrap: str, partitions: int, expected: int, batch: int) -> tuple[float, float]:
    """Seconds to read `expected` records from offset 0 of every partition with consume(batch):
    from assign() to the last record, and from the first record to the last."""
    consumer = ck.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{uuid.uuid4()}",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": False,
        }
    )
    try:
        # Connect and learn metadata before the clock starts (both targets alike).
        consumer.list_topics(TOPIC, timeout=10)
        start = time.perf_counter()
        consumer.assign([ck.TopicPartition(TOPIC, p, ck.OFFSET_BEGINNING) for p in range(partitions)])
        seen = 0
        first = 0.0
        deadline = start + 120
        while seen < expected:
            messages = consumer.consume(batch, 1.0)
            if messages and not seen:
                first = time.perf_counter()
            for message in messages:
                if message.error() is not None:
                    raise RuntimeError(f"consume error from {bootstrap}: {message.error()}")
            seen += len(messages)
            if time.perf_counter() > deadline:
                raise RuntimeError(f"only {seen} of {expected} records from {bootstrap} in 120 s")
        end = time.perf_counter()
        return end - start, end - first
    finally:
        consumer.close()


def measure(target: str, bootstrap: str, args: argparse.Namespace) -> Result:
    expected = args.partitions * args.records
    produce_s = produce(bootstrap, TOPIC, args.partitions, args.records, args.size)
    timings = [consume_once(bootstrap, args.partitions, expected, args.batch) for _ in range(args.rounds)]
    return Result(target, produce_s, [t[0] for t in timings], [t[1] for t in timings], expected, args.size)


@contextmanager
def mock_cluster(partitions: int) -> Iterator[str]:
    handle = ck.Producer({"test.mock.num.brokers": 1})
    try:
        brokers = handle.list_topics(timeout=10).brokers
        broker = next(iter(brokers.values()))
        bootstrap = f"{broker.host}:{broker.port}"
        if partitions != 4:
            raise SystemExit("the mock cluster auto-creates topics with 4 partitions: use --partitions 4")
        yield bootstrap
    finally:
        handle.flush(1)


@contextmanager
def in_process(partitions: int) -> Iterator[str]:
    with ReferenceCluster() as cluster:
        cluster.create_topic(TOPIC, partitions)
        yield cluster.bootstrap_servers


@contextmanager
def subprocess_server(partitions: int) -> Iterator[str]:
    with broker("reference", [(TOPIC, partitions)]) as bootstrap:
        yield bootstrap


def _version() -> str:
    version = ck.version()
    return str(version[0] if isinstance(version, tuple) else version)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--records", type=int, default=40_000, help="records per partition")
    parser.add_argument("--size", type=int, default=100, help="value size in bytes")
    parser.add_argument("--batch", type=int, default=10_000, help="consume(n) batch size")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-subprocess", action="store_true", help="skip the kconsumer serve process")
    args = parser.parse_args(argv)

    targets = [("librdkafka mock", mock_cluster), ("reference (in-process)", in_process)]
    if not args.no_subprocess:
        targets.append(("reference (kconsumer serve)", subprocess_server))
    print(
        f"confluent-kafka {_version()} / librdkafka {ck.libversion()[0]}; {os.cpu_count()} CPUs; "
        f"{args.partitions} partitions x {args.records} records x {args.size} B; consume({args.batch}); "
        f"{args.rounds} rounds",
        flush=True,
    )
    results = []
    for name, factory in targets:
        with factory(args.partitions) as bootstrap:
            results.append(measure(name, bootstrap, args))
        result = results[-1]
        print(
            f"  measured {name}: rounds {', '.join(f'{r * 1000:.0f} ms' for r in result.rounds)}", flush=True
        )
    baseline = results[0].best
    print()
    print(
        f"{'target':28} {'produce rec/s':>13} {'fetch best rec/s':>16} {'median rec/s':>12} "
        f"{'MB/s':>6} {'vs mock':>7} {'steady median rec/s':>19}"
    )
    for result in results:
        produce_rate = result.records / result.produce_s
        mb = result.best * result.size / 1e6
        print(
            f"{result.target:28} {produce_rate:13,.0f} {result.best:16,.0f} {result.median:12,.0f} "
            f"{mb:6.1f} {result.best / baseline:7.2f} {result.steady_median:19,.0f}"
        )
    print()
    print(
        "fetch: assign() to the last record (best and median round); steady: first record to the last; "
        "vs mock: best over the mock's best"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
