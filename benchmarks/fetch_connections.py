"""Fetch-bound reading through one librdkafka handle or two: what a second fetch connection adds.

librdkafka keeps one fetch request in flight per broker connection and parses each response on
that connection's thread, so a consumer of many partitions led by one broker reads at most as fast
as that one thread turns fetches around. This benchmark measures how much a second connection to
the same broker would add: raw confluent-kafka handles with kconsumer's fetch-handle settings read
every partition of a topic (written once), either all through one handle or split over two handles
(partition ``p`` on handle ``p % 2``) drained in turn with ``consume(n, 0)``. Each pass seeks every
partition back to its first offset and reads the whole topic (fetch-bound: nothing is prefetched);
the two layouts alternate, and the median pass of each is printed with the CPU seconds per
million records of the client process (all threads) and of the broker process, over whole passes
(the two-handle layout spins while it waits for the first records: its client CPU counts that),
and the cores the application thread and librdkafka's connection threads used while records
flowed.

Run from the repository root::

    python -m benchmarks.fetch_connections --broker reference --partitions 8 --per-partition 40000
    python -m benchmarks.fetch_connections --broker mock --partitions 256 --per-partition 3900

(The second layout is not something kconsumer does: `docs/benchmarks.md` says why.)
"""

from __future__ import annotations

import argparse
import threading
import time
from typing import Any

import confluent_kafka as ck
import psutil

from kconsumer.client.config import FETCH_HANDLE_DEFAULTS

from .common import add_data_set_arguments, broker, median, produce
from .readers import cpu_seconds, raw_config

BATCH = 10_000
#: How `_thread_cpu` groups threads.
THREAD_KINDS = ("application thread", "librdkafka connection threads", "other threads")


def _handles(bootstrap: str, topic: str, partitions: int, count: int, debug: str | None) -> list[Any]:
    config = {**raw_config(bootstrap), **FETCH_HANDLE_DEFAULTS, **({"debug": debug} if debug else {})}
    handles = [ck.Consumer(config) for _ in range(count)]
    for index, handle in enumerate(handles):
        handle.assign([ck.TopicPartition(topic, p, 0) for p in range(partitions) if p % count == index])
        handle.pause(handle.assignment())
    return handles


def _thread_cpu() -> dict[str, float]:
    """CPU seconds so far of this process's threads by kind: the calling thread, librdkafka's
    broker connection threads (named ``rdk:broker...``; Linux names threads in /proc), the rest."""
    caller = threading.get_native_id()
    totals = dict.fromkeys(THREAD_KINDS, 0.0)
    for thread in psutil.Process().threads():
        try:
            with open(f"/proc/self/task/{thread.id}/comm") as f:
                name = f.read().strip()
        except OSError:
            name = ""
        kind = (
            THREAD_KINDS[0]
            if thread.id == caller
            else THREAD_KINDS[1 if name.startswith("rdk:broker") else 2]
        )
        totals[kind] += thread.user_time + thread.system_time
    return totals


def _pass(
    handles: list[Any], topic: str, partitions: int, expected: int
) -> tuple[float, float, dict[str, float]]:
    """Seek back, read `expected` records; (seconds from the first record to the last, records
    timed, cores each kind of thread used meanwhile)."""
    for index, handle in enumerate(handles):
        mine = [ck.TopicPartition(topic, p, 0) for p in range(partitions) if p % len(handles) == index]
        for tp in mine:
            handle.seek(tp)
        handle.resume(mine)
    seen, first, start, threads0 = 0, 0, 0.0, dict.fromkeys(THREAD_KINDS, 0.0)
    wait = 1.0 if len(handles) == 1 else 0.0
    while seen < expected:
        for handle in handles:
            batch = handle.consume(min(BATCH, expected - seen), wait)
            if batch and not seen:
                start, first, threads0 = time.perf_counter(), len(batch), _thread_cpu()
            seen += len(batch)
    elapsed = time.perf_counter() - start
    threads1 = _thread_cpu()
    for handle in handles:
        handle.pause(handle.assignment())
    return elapsed, expected - first, {k: (threads1[k] - threads0[k]) / elapsed for k in THREAD_KINDS}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--broker", choices=("reference", "mock"), default="reference")
    add_data_set_arguments(parser, per_partition=40_000)
    parser.add_argument("--passes", type=int, default=15, help="timed passes per layout")
    parser.add_argument(
        "--debug", help="librdkafka debug contexts for the handles (say, fetch), logged to stderr"
    )
    args = parser.parse_args(argv)
    topic = f"connections-{args.partitions}p"
    expected = args.partitions * args.per_partition
    with broker(args.broker, [(topic, args.partitions)]) as bootstrap:
        produce(bootstrap, topic, args.partitions, args.per_partition, args.size)
        me = psutil.Process()
        broker_process = next(iter(me.children(recursive=True)), None)
        layouts = {count: _handles(bootstrap, topic, args.partitions, count, args.debug) for count in (1, 2)}
        samples: dict[int, list[tuple[float, float, float, dict[str, float]]]] = {1: [], 2: []}
        for round_ in range(args.passes + 1):
            for count, handles in layouts.items():
                cpu0 = cpu_seconds(me)
                other0 = cpu_seconds(broker_process) if broker_process else 0.0
                seconds, records, threads = _pass(handles, topic, args.partitions, expected)
                cpu = (cpu_seconds(me) - cpu0) / expected * 1e6
                other = (cpu_seconds(broker_process) - other0) / expected * 1e6 if broker_process else 0.0
                if round_:  # the first round warms up connections and metadata
                    samples[count].append((records / seconds, cpu, other, threads))
        for handles in layouts.values():
            for handle in handles:
                handle.close()
    rates = {count: median(s[0] for s in rows) for count, rows in samples.items()}
    print(f"{args.broker}, {args.partitions} partitions x {args.per_partition} records of {args.size} B")
    for count, rows in samples.items():
        print(
            f"  {count} handle(s): {rates[count] / 1e6:.2f} M records/s (median of {len(rows)}), "
            f"CPU s per million records: client {median(s[1] for s in rows):.2f}, "
            f"broker {median(s[2] for s in rows):.2f}"
        )
        busy = ", ".join(f"{kind} {median(s[3][kind] for s in rows):.2f}" for kind in THREAD_KINDS)
        print(f"    cores while records flow: {busy}")
    print(f"  two handles / one: {rates[2] / rates[1]:.2f}")


if __name__ == "__main__":
    main()
