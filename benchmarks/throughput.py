"""Consume throughput: kconsumer against raw confluent-kafka and aiokafka, same broker, same data.

For each broker (the reference cluster as ``kconsumer serve``, librdkafka's mock cluster), value
size and partition count, one topic is filled once with confluent-kafka's producer, then the
clients read it, each in a process of its own:

* ``kconsumer poll`` / ``kconsumer consume``: `kconsumer.Consumer` through a consumer group
  (``subscribe``; the broker's KIP-848 coordinator assigns every partition to it);
* ``confluent poll`` / ``confluent consume``: a raw confluent-kafka ``Consumer`` in manual-assign
  mode (no group, as kconsumer's own fetch handle);
* ``aiokafka getmany``: aiokafka's ``AIOKafkaConsumer`` in manual-assign mode;
* ``kconsumer aio consume`` / ``kconsumer aio async-for``: `kconsumer.aio.AIOConsumer` through a
  consumer group, ``await consume(n)`` or ``async for``;
* ``AIOConsumer consume`` / ``AIOConsumer poll``: confluent-kafka's ``confluent_kafka.aio``
  consumer in manual-assign mode (each call goes through its thread pool).

Each worker first reads the whole data set once (warm-up: connections, the group join, the first
fetches, code paths), then, on the parent's command, runs timed repetitions: seek every partition
back to its first offset and read the whole data set, ``passes`` times (enough passes for a few
hundred thousand records: the mock keeps only 5 MB per partition). Each pass is timed from its
first non-empty result to its last record (the records of that first result are not counted):
the steady rate, without the seek and the first fetch's round trip, which are the same for every
client. After each pass a client pauses its partitions, and resumes them at the next seek: an idle
client then sends no fetches, and the broker serves the measured client alone. By default each
pass starts after a pause long enough for the clients to prefetch it
(librdkafka queues up to 64 MB and 100,000 records per partition, which holds a whole pass;
aiokafka keeps one fetch per partition ahead), so the rate measures what the clients themselves
cost per record; ``--no-prefetch`` measures the fetch-bound rate instead. The parent interleaves
the clients repetition by repetition (so drift on the machine hits all alike) and reports the
median repetition: records/s, MB/s (values only) and CPU seconds per
million records (the worker process's user+system CPU over the same spans, every thread:
application, librdkafka, kconsumer's background loop), plus the application thread's own CPU.
"""

from __future__ import annotations

import math
import multiprocessing
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

import psutil

from .common import GroupTimers, broker, geomean, log, median, produce, watermarks
from .readers import Reader, cpu_seconds

CLIENTS = (
    "kconsumer poll",
    "kconsumer consume",
    "kconsumer aio consume",
    "kconsumer aio async-for",
    "confluent poll",
    "confluent consume",
    "confluent tuned poll",
    "confluent tuned consume",
    "AIOConsumer consume",
    "AIOConsumer poll",
    "aiokafka getmany",
)
#: Records per partition by value size: librdkafka's mock keeps at most 5 MB (and 100,000
#: records) per partition, so the data set has to fit in that for the two brokers to serve the same.
PER_PARTITION = {100: 40_000, 1024: 4_000}
#: A data set's size at most (values and record overhead): many partitions share it, so that 256
#: partitions of 1 KB values do not mean a gigabyte in the broker and in every client's queues.
MAX_DATA_SET_BYTES = 40_000_000
#: Pairs (kconsumer client, peer) whose ratio the report prints; the first two carry targets.
RATIOS = (
    ("kconsumer consume", "confluent tuned consume", 0.95),
    ("kconsumer poll", "confluent tuned poll", 1.0),
    ("kconsumer consume", "aiokafka getmany", 1.0),
    ("kconsumer poll", "aiokafka getmany", 1.0),
    ("kconsumer consume", "confluent consume", None),
    ("kconsumer poll", "confluent poll", None),
    ("kconsumer consume", "AIOConsumer consume", None),
    # kconsumer.aio (the asyncio issue's targets)
    ("kconsumer aio consume", "kconsumer consume", 0.9),
    # issue 33: `async for` at least as fast as the sync poll() loop
    ("kconsumer aio async-for", "kconsumer poll", 1.0),
    ("kconsumer aio async-for", "AIOConsumer poll", 2.0),
    ("kconsumer aio consume", "AIOConsumer consume", 1.0),
    ("kconsumer aio consume", "aiokafka getmany", 1.0),
)


@dataclass(frozen=True)
class Cell:
    """One data set on one broker."""

    broker: str
    size: int
    partitions: int
    #: The data set's size at most (``--data-set-mb``).
    data_set_bytes: int = MAX_DATA_SET_BYTES

    @property
    def topic(self) -> str:
        return f"bench-{self.size}b-{self.partitions}p"

    @property
    def per_partition(self) -> int:
        most = PER_PARTITION.get(self.size, max(1, 4_000_000 // (self.size + 60)))
        return max(100, min(most, self.data_set_bytes // (self.size + 60) // self.partitions))

    @property
    def label(self) -> str:
        return (
            f"{self.broker}, {self.size} B, {self.partitions} partition{'s' if self.partitions > 1 else ''}"
        )


@dataclass
class Sample:
    """One timed repetition."""

    records: int
    seconds: float
    cpu_seconds: float
    app_cpu_seconds: float


@dataclass
class ClientResult:
    cell: Cell
    client: str
    warmup_seconds: float = 0.0
    samples: list[Sample] = field(default_factory=list)
    error: str | None = None

    @property
    def rate(self) -> float:
        """Median records/s."""
        return median(s.records / s.seconds for s in self.samples) if self.samples else math.nan

    @property
    def mb_per_s(self) -> float:
        return self.rate * self.cell.size / 1e6

    @property
    def cpu_per_million(self) -> float:
        return median(s.cpu_seconds / s.records * 1e6 for s in self.samples) if self.samples else math.nan

    @property
    def app_cpu_per_million(self) -> float:
        return median(s.app_cpu_seconds / s.records * 1e6 for s in self.samples) if self.samples else math.nan

    def as_dict(self) -> dict[str, Any]:
        return {
            "broker": self.cell.broker,
            "size": self.cell.size,
            "partitions": self.cell.partitions,
            "client": self.client,
            "records_per_s": self.rate,
            "mb_per_s": self.mb_per_s,
            "cpu_s_per_million": self.cpu_per_million,
            "app_cpu_s_per_million": self.app_cpu_per_million,
            "samples": [s.__dict__ for s in self.samples],
            "warmup_s": self.warmup_seconds,
            "error": self.error,
        }


# -- the worker process ---------------------------------------------------------------------------


def _worker(conn: Connection, client: str, bootstrap: str, cell: Cell, lows: list[int], batch: int) -> None:
    """The worker process: warm up, then run repetitions on command."""

    process = psutil.Process()
    per_pass = cell.partitions * cell.per_partition
    try:
        start = time.perf_counter()
        reader = Reader(client, bootstrap, cell.topic, cell.partitions, lows, batch)
        reader.read(per_pass)
        reader.quiesce()
        conn.send(("ready", time.perf_counter() - start))
        while True:
            command = conn.recv()
            if command[0] == "stop":
                break
            total = Sample(0, 0.0, 0.0, 0.0)
            passes, prefetch_s = command[1], command[2]
            for _ in range(passes):
                reader.rewind()
                if prefetch_s:
                    time.sleep(prefetch_s)  # let the client's fetcher queue the data up
                before = (time.perf_counter(), cpu_seconds(process), time.thread_time())
                first_batch = reader.read(per_pass)
                t1, cpu1, app1 = time.perf_counter(), cpu_seconds(process), time.thread_time()
                reader.quiesce()
                t0, cpu0, app0 = reader.first
                if first_batch == per_pass:  # one result held the whole pass: time it from the read
                    (t0, cpu0, app0), first_batch = before, 0
                total.records += per_pass - first_batch
                total.seconds += t1 - t0
                total.cpu_seconds += cpu1 - cpu0
                total.app_cpu_seconds += app1 - app0
            conn.send(("sample", total))
        reader.close()
        conn.send(("closed",))
    except Exception as exc:  # reported to the parent, which records it with the cell
        conn.send(("error", f"{type(exc).__name__}: {exc}"))


# -- the parent -------------------------------------------------------------------------------------


@dataclass
class Settings:
    brokers: Sequence[str] = ("reference", "mock")
    sizes: Sequence[int] = (100, 1024)
    partitions: Sequence[int] = (1, 8)
    clients: Sequence[str] = CLIENTS
    repetitions: int = 5
    #: Records a repetition reads at least (whole passes over the data set).
    min_records: int = 320_000
    #: Pause after each seek so that the clients prefetch before the clock starts: the rate then
    #: measures handing records to the application, not the broker's or the fetch path's speed.
    #: False: no pause (the rate is then mostly the fetch path's, alike for every librdkafka client).
    prefetch: bool = True
    batch: int = 10_000
    #: A data set's size at most: 40 MB by default; larger ones make every partition of a
    #: many-partition topic need several fetches per pass (a consumer catching up on a backlog).
    data_set_bytes: int = MAX_DATA_SET_BYTES


def prefetch_seconds(cell: Cell) -> float:
    """The pause before a pass: a pass's bytes at 40 MB/s, at most 1 s. (Longer pauses are worse:
    on 8 partitions librdkafka then hands out a fully queued pass several times slower, for raw
    confluent-kafka and kconsumer alike.)"""
    return min(1.0, 0.25 + cell.partitions * cell.per_partition * (cell.size + 60) / 40e6)


def _passes(cell: Cell, settings: Settings) -> int:
    """Passes per repetition: at least `min_records` records, whatever the value size (a
    repetition of 1 KB values measured by the same bytes as 100 B ones took 40 ms: noise)."""
    return max(1, math.ceil(settings.min_records / (cell.partitions * cell.per_partition)))


def _receive(conn: Connection, process: Any, timeout_s: float) -> tuple[Any, ...]:
    """The worker's next message, or an ("error", why) if it died or said nothing in time."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if conn.poll(0.2):
            try:
                return tuple(conn.recv())
            except EOFError:
                break
        if not process.is_alive():
            return ("error", f"worker exited with code {process.exitcode}")
    process.kill()
    return ("error", f"no answer within {timeout_s:.0f} s")


def _run_cell(cell: Cell, bootstrap: str, lows: list[int], settings: Settings) -> list[ClientResult]:
    ctx = multiprocessing.get_context("spawn")
    results = {client: ClientResult(cell, client) for client in settings.clients}
    workers: dict[str, tuple[Any, Connection]] = {}
    try:
        for client in settings.clients:  # warm up one at a time: joins and first fetches don't overlap
            parent, child = ctx.Pipe()
            process = ctx.Process(
                target=_worker, args=(child, client, bootstrap, cell, lows, settings.batch), daemon=True
            )
            process.start()
            message = _receive(parent, process, 180)
            if message[0] != "ready":
                results[client].error = message[1]
                process.join(5)
                continue
            results[client].warmup_seconds = message[1]
            workers[client] = (process, parent)
        passes = _passes(cell, settings)
        order = list(workers)
        for rep in range(settings.repetitions):
            for client in order[rep % len(order) :] + order[: rep % len(order)] if order else []:
                process, conn = workers[client]
                if results[client].error:
                    continue
                conn.send(("run", passes, prefetch_seconds(cell) if settings.prefetch else 0.0))
                message = _receive(conn, process, 300)
                if message[0] == "sample":
                    results[client].samples.append(message[1])
                else:
                    results[client].error = message[1]
    finally:
        for _client, (process, conn) in workers.items():
            try:
                conn.send(("stop",))
                conn.poll(30)
            except (OSError, EOFError):
                pass
            process.join(10)
            if process.is_alive():
                process.kill()
    return list(results.values())


def run(settings: Settings) -> list[ClientResult]:
    """Every cell of the settings' matrix; one broker process per broker kind."""
    results: list[ClientResult] = []
    for kind in settings.brokers:
        cells = [
            Cell(kind, size, partitions, settings.data_set_bytes)
            for size in settings.sizes
            for partitions in settings.partitions
        ]
        with broker(kind, [(c.topic, c.partitions) for c in cells], GroupTimers()) as bootstrap:
            for cell in cells:
                seconds = produce(bootstrap, cell.topic, cell.partitions, cell.per_partition, cell.size)
                marks = watermarks(bootstrap, cell.topic, cell.partitions)
                short = [(lo, hi) for lo, hi in marks if hi - lo != cell.per_partition]
                if short:
                    raise RuntimeError(
                        f"{cell.label}: the broker kept {short} instead of {cell.per_partition}"
                    )
                log(
                    f"throughput: {cell.label}: {cell.partitions * cell.per_partition} records written in "
                    f"{seconds:.1f} s; {_passes(cell, settings)} pass(es) per repetition"
                )
                cell_results = _run_cell(cell, bootstrap, [lo for lo, _ in marks], settings)
                for r in cell_results:
                    log(
                        f"  {r.client:18} {r.rate:12,.0f} rec/s {r.mb_per_s:7.1f} MB/s "
                        f"{r.cpu_per_million:6.2f} CPU s/M" + (f"  ERROR {r.error}" if r.error else "")
                    )
                results += cell_results
    return results


def ratios(results: Sequence[ClientResult]) -> list[dict[str, Any]]:
    """kconsumer's rate over each peer's, per cell, with the target where there is one."""
    by_key = {(r.cell, r.client): r for r in results}
    out = []
    for ours, peer, target in RATIOS:
        for cell in dict.fromkeys(r.cell for r in results):
            a, b = by_key.get((cell, ours)), by_key.get((cell, peer))
            if a is None or b is None or not a.samples or not b.samples:
                continue
            out.append(
                {
                    "cell": cell,
                    "ours": ours,
                    "peer": peer,
                    "ratio": a.rate / b.rate,
                    "target": target,
                    "cpu_ratio": a.cpu_per_million / b.cpu_per_million,
                }
            )
    return out


def target_verdicts(results: Sequence[ClientResult]) -> list[dict[str, Any]]:
    """The two throughput targets over every measured cell: geometric mean and worst cell."""
    rows = ratios(results)
    verdicts = []
    for ours, peer, target in RATIOS:
        if target is None:
            continue
        values = [r for r in rows if r["ours"] == ours and r["peer"] == peer]
        if not values:
            continue
        mean = geomean(r["ratio"] for r in values)
        worst = min(values, key=lambda r: r["ratio"])
        verdicts.append(
            {
                "ours": ours,
                "peer": peer,
                "target": target,
                "geomean": mean,
                "worst": worst["ratio"],
                "worst_cell": worst["cell"].label,
                "met": mean >= target,
                "cells_met": sum(r["ratio"] >= target for r in values),
                "cells": len(values),
                "cpu_geomean": geomean(r["cpu_ratio"] for r in values),
            }
        )
    return verdicts
