"""Fetch-bound reading through one librdkafka handle or two: what a second fetch connection adds,
and what waiting on two handles costs.

librdkafka keeps one fetch request in flight per broker connection and parses each response on
that connection's thread, so a consumer of many partitions led by one broker reads at most as fast
as that one thread turns fetches around. This benchmark measures how much a second connection to
the same broker would add: raw confluent-kafka handles with kconsumer's fetch-handle settings read
every partition of a topic (written once), either all through one handle (``consume(n, 1.0)``, as
an application does) or split over two handles (partition ``p`` on handle ``p % 2``). Two handles
cannot be waited on together (confluent-kafka offers no readiness descriptor for librdkafka's
queues), so the two-handle layouts take what each handle has queued (``consume(n, 0)``) and, when
neither has anything, either spin ("two handles, spinning") or wait up to W ms on one handle,
the other one next time ("two handles, waiting W ms": a record on the other handle waits up to W
ms longer than it would with one handle).

Each pass seeks every partition back to its first offset and reads the whole topic (fetch-bound:
nothing is prefetched); the layouts alternate, and the median pass of each is printed with the
CPU seconds per million records of the client process (all threads) and of the broker process,
over whole passes, and the cores the application thread and librdkafka's connection threads used
while records flowed. With ``--idle-seconds``, each layout then waits that long with nothing to
read and the client process's CPU is printed in % of a core (one handle waiting in 50 ms slices,
as kconsumer's ``poll()`` does while idle).

Run from the repository root::

    python -m benchmarks.fetch_connections --broker reference --partitions 8 --per-partition 40000
    python -m benchmarks.fetch_connections --broker mock --partitions 256 --per-partition 3900 \\
        --wait-ms 1,20 --idle-seconds 10

(The two-handle layouts are not something kconsumer does: `docs/benchmarks.md` says why.)
"""

from __future__ import annotations

import argparse
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import confluent_kafka as ck
import psutil

from kconsumer.client.config import FETCH_HANDLE_DEFAULTS

from .common import add_data_set_arguments, broker, median, produce
from .readers import cpu_seconds, raw_config

BATCH = 10_000
#: How `_thread_cpu` groups threads.
THREAD_KINDS = ("application thread", "librdkafka connection threads", "other threads")
#: How long one handle waits at a time while idle (kconsumer's ``poll()`` slice).
IDLE_SLICE_S = 0.05


@dataclass
class Layout:
    """Handles and how the application thread waits on them when nothing is queued."""

    name: str
    handles: list[Any]
    #: Seconds to wait on one handle when none has records; 0 spins.
    wait_s: float

    def drain(self, wanted: int, turn: int) -> list[Any]:
        """Records from the handles: what one handle waits for up to 1 s, or what each has
        queued, waiting `wait_s` on one of them (`turn` picks which) when all are empty."""
        if len(self.handles) == 1:
            return self.handles[0].consume(wanted, 1.0)  # type: ignore[no-any-return]
        for handle in self.handles:
            batch: list[Any] = handle.consume(wanted, 0)
            if batch:
                return batch
        if not self.wait_s:
            return []
        first = self.handles[turn % len(self.handles)].poll(self.wait_s)
        return [] if first is None else [first]

    def idle_wait(self, turn: int) -> None:
        """One wait of an idle application (nothing to read; not for the spinning layout)."""
        if len(self.handles) == 1:
            self.handles[0].poll(IDLE_SLICE_S)
        else:
            self.drain(BATCH, turn)


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
    layout: Layout, topic: str, partitions: int, expected: int
) -> tuple[float, float, dict[str, float]]:
    """Seek back, read `expected` records; (seconds from the first record to the last, records
    timed, cores each kind of thread used meanwhile)."""
    handles = layout.handles
    for index, handle in enumerate(handles):
        mine = [ck.TopicPartition(topic, p, 0) for p in range(partitions) if p % len(handles) == index]
        for tp in mine:
            handle.seek(tp)
        handle.resume(mine)
    seen, first, start, threads0 = 0, 0, 0.0, dict.fromkeys(THREAD_KINDS, 0.0)
    turn = 0
    while seen < expected:
        batch = layout.drain(min(BATCH, expected - seen), turn)
        turn += 1
        if batch and not seen:
            start, first, threads0 = time.perf_counter(), len(batch), _thread_cpu()
        seen += len(batch)
    elapsed = time.perf_counter() - start
    threads1 = _thread_cpu()
    for handle in handles:
        handle.pause(handle.assignment())
    return elapsed, expected - first, {k: (threads1[k] - threads0[k]) / elapsed for k in THREAD_KINDS}


def _idle_percent(layout: Layout, seconds: float) -> float:
    """% of a core the client process uses while `layout` waits `seconds` with nothing to read."""
    me = psutil.Process()
    cpu0, start, turn = cpu_seconds(me), time.monotonic(), 0
    while time.monotonic() - start < seconds:
        layout.idle_wait(turn)
        turn += 1
    return 100 * (cpu_seconds(me) - cpu0) / (time.monotonic() - start)


def _layouts(make: Callable[[int], list[Any]], waits_ms: list[float]) -> list[Layout]:
    layouts = [Layout("one handle", make(1), 1.0), Layout("two handles, spinning", make(2), 0.0)]
    layouts += [Layout(f"two handles, waiting {w:g} ms", make(2), w / 1000) for w in waits_ms]
    return layouts


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--broker", choices=("reference", "mock"), default="reference")
    add_data_set_arguments(parser, per_partition=40_000)
    parser.add_argument("--passes", type=int, default=15, help="timed passes per layout")
    parser.add_argument(
        "--wait-ms", default="1", help="waits of the waiting two-handle layouts (ms, comma-separated)"
    )
    parser.add_argument(
        "--idle-seconds", type=float, default=0.0, help="idle CPU measurement per layout (0: none)"
    )
    parser.add_argument(
        "--debug", help="librdkafka debug contexts for the handles (say, fetch), logged to stderr"
    )
    args = parser.parse_args(argv)
    waits_ms = [float(w) for w in args.wait_ms.split(",") if w.strip()]
    topic = f"connections-{args.partitions}p"
    expected = args.partitions * args.per_partition
    with broker(args.broker, [(topic, args.partitions)]) as bootstrap:
        produce(bootstrap, topic, args.partitions, args.per_partition, args.size)
        me = psutil.Process()
        broker_process = next(iter(me.children(recursive=True)), None)
        layouts = _layouts(
            lambda count: _handles(bootstrap, topic, args.partitions, count, args.debug), waits_ms
        )
        samples: dict[str, list[tuple[float, float, float, dict[str, float]]]] = {
            layout.name: [] for layout in layouts
        }
        for round_ in range(args.passes + 1):
            for layout in layouts:
                cpu0 = cpu_seconds(me)
                other0 = cpu_seconds(broker_process) if broker_process else 0.0
                seconds, records, threads = _pass(layout, topic, args.partitions, expected)
                cpu = (cpu_seconds(me) - cpu0) / expected * 1e6
                other = (cpu_seconds(broker_process) - other0) / expected * 1e6 if broker_process else 0.0
                if round_:  # the first round warms up connections and metadata
                    rate = records / seconds if seconds > 0 else float("nan")  # nan: one batch was all
                    samples[layout.name].append((rate, cpu, other, threads))
        idle = {
            layout.name: _idle_percent(layout, args.idle_seconds)
            for layout in layouts
            if args.idle_seconds and layout.wait_s
        }
        for layout in layouts:
            for handle in layout.handles:
                handle.close()
    rates = {name: median(s[0] for s in rows) for name, rows in samples.items()}
    print(f"{args.broker}, {args.partitions} partitions x {args.per_partition} records of {args.size} B")
    for name, rows in samples.items():
        print(
            f"  {name}: {rates[name] / 1e6:.2f} M records/s (median of {len(rows)}; "
            f"{rates[name] / rates['one handle']:.2f} x one handle), CPU s per million records: "
            f"client {median(s[1] for s in rows):.2f}, broker {median(s[2] for s in rows):.2f}"
            + (f"; idle {idle[name]:.2f} % of a core" if name in idle else "")
        )
        busy = ", ".join(f"{kind} {median(s[3][kind] for s in rows):.2f}" for kind in THREAD_KINDS)
        print(f"    cores while records flow: {busy}")


if __name__ == "__main__":
    main()
