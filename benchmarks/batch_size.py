"""Which call and which batch size read fastest: ``consume(n)`` for several n, and ``poll()``,
through kconsumer and through a raw confluent-kafka handle with kconsumer's fetch settings.

One topic is written once; each reader (in manual-assign mode, one process) seeks every partition
back to its first offset and reads the whole topic, either as it is fetched (the default) or after
``--prefetch-seconds`` of prefetching, when librdkafka already holds it. Readers alternate pass by
pass; the median records/s of each is printed, with the CPU seconds per million records of the
process. Only the number of records asked for per call changes between the ``consume`` rows: what
it costs to hold n fresh `Message` objects at a time is what they show.

Run from the repository root::

    python -m benchmarks.batch_size --broker reference --partitions 8 --per-partition 40000
    python -m benchmarks.batch_size --broker mock --partitions 8 --per-partition 40000 \\
        --prefetch-seconds 2
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import confluent_kafka as ck
import psutil

from kconsumer import Consumer
from kconsumer.client.config import FETCH_HANDLE_DEFAULTS

from .common import add_data_set_arguments, broker, median, produce
from .readers import FETCH_WAIT_MS, cpu_seconds, raw_config

Read = Callable[[Any, int], int]


def _consume(n: int) -> Read:
    def read(client: Any, expected: int) -> int:
        """Read `expected` records with consume(n); returns the records of the first result."""
        seen = first = 0
        while seen < expected:
            batch = client.consume(min(n, expected - seen), 1.0)
            if batch and not seen:
                first = len(batch)
                _mark()
            seen += len(batch)
        return first

    return read


def _poll(client: Any, expected: int) -> int:
    seen = 0
    while seen < expected:
        if client.poll(1.0) is not None:
            if not seen:
                _mark()
            seen += 1
    return 1


_started = [0.0, 0.0]


def _mark() -> None:
    """The clock and CPU at the first record of a pass (what the rate is timed from)."""
    _started[:] = [time.perf_counter(), cpu_seconds(psutil.Process())]


def _clients(bootstrap: str, topic: str, partitions: int) -> dict[str, Any]:
    start = [ck.TopicPartition(topic, p, 0) for p in range(partitions)]
    raw = ck.Consumer({**raw_config(bootstrap), **FETCH_HANDLE_DEFAULTS})
    ours = Consumer(
        {"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest", "fetch.wait.max.ms": FETCH_WAIT_MS}
    )
    for client in (raw, ours):
        client.assign(start)
        client.pause(start)
    return {"kconsumer": ours, "confluent tuned": raw}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--broker", choices=("reference", "mock"), default="reference")
    add_data_set_arguments(parser, per_partition=40_000)
    parser.add_argument("--batches", default="256,1000,10000", help="the n of consume(n), comma-separated")
    parser.add_argument("--passes", type=int, default=7, help="timed passes per reader")
    parser.add_argument("--prefetch-seconds", type=float, default=0.0, help="prefetch first (0: no)")
    args = parser.parse_args(argv)
    reads: dict[str, Read] = {f"consume({n})": _consume(int(n)) for n in args.batches.split(",")}
    reads["poll()"] = _poll
    topic = f"batch-size-{args.partitions}p"
    expected = args.partitions * args.per_partition
    partitions = [ck.TopicPartition(topic, p, 0) for p in range(args.partitions)]
    rows: dict[tuple[str, str], list[tuple[float, float]]] = {}
    with broker(args.broker, [(topic, args.partitions)]) as bootstrap:
        produce(bootstrap, topic, args.partitions, args.per_partition, args.size)
        clients = _clients(bootstrap, topic, args.partitions)
        for round_ in range(args.passes + 1):
            for call, read in reads.items():
                for name, client in clients.items():
                    for tp in partitions:
                        client.seek(tp)
                    client.resume(partitions)
                    time.sleep(args.prefetch_seconds)
                    first = read(client, expected)
                    seconds = time.perf_counter() - _started[0]
                    cpu = cpu_seconds(psutil.Process()) - _started[1]
                    client.pause(partitions)
                    if round_:  # the first round warms up connections and metadata
                        timed = expected - first
                        rows.setdefault((call, name), []).append((timed / seconds, cpu / timed * 1e6))
        for client in clients.values():
            client.close()
    mode = f"prefetched {args.prefetch_seconds:g} s" if args.prefetch_seconds else "fetch-bound"
    print(
        f"{args.broker}, {args.partitions} partitions x {args.per_partition} records of {args.size} B, {mode}"
    )
    for (call, name), samples in rows.items():
        rate, cpu = median(s[0] for s in samples), median(s[1] for s in samples)
        print(f"  {name} {call}: {rate / 1e6:.2f} M records/s, CPU s per million records {cpu:.2f}")


if __name__ == "__main__":
    main()
