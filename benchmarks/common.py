"""Shared pieces of the benchmarks: brokers in their own processes, data, statistics, machine facts.

Every broker runs in a process of its own, so that its work (the reference cluster is Python on
one asyncio loop; the mock cluster is C threads) never shares an interpreter, a GIL or a process
CPU counter with the client being measured:

* ``reference``: ``python -m kconsumer serve`` (the reference cluster as a standalone process);
* ``mock``: librdkafka's mock cluster (`benchmarks.mock_broker`, the same code that
  ``Producer({'test.mock.num.brokers': 1})`` starts, with exact partition counts);
* ``kafka``: Apache Kafka 4.4 (`kconsumer.testing.ApacheKafka`: one KRaft node in its own JVM;
  the benchmark's process only holds its admin connection).
"""

from __future__ import annotations

import argparse
import compileall
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

BROKERS = ("reference", "mock", "kafka")


@dataclass(frozen=True)
class GroupTimers:
    """Group timing settings, applied alike to every broker and client that has them."""

    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 5_000
    #: The reference coordinator's ``group.consumer.assignment.interval.ms``.
    assignment_interval_ms: int = 0


@contextmanager
def broker(kind: str, topics: Sequence[tuple[str, int]], timers: GroupTimers | None = None) -> Iterator[str]:
    """Start a broker process with `topics` (name, partitions); yields its bootstrap address."""
    timers = timers or GroupTimers()
    if kind == "kafka":
        with _apache_kafka(topics, timers) as bootstrap:
            yield bootstrap
        return
    if kind == "reference":
        command = [
            sys.executable,
            "-m",
            "kconsumer",
            "serve",
            "--port",
            "0",
            "--log-level",
            "WARNING",
            "--session-timeout-ms",
            str(timers.session_timeout_ms),
            "--heartbeat-interval-ms",
            str(timers.heartbeat_interval_ms),
            "--assignment-interval-ms",
            str(timers.assignment_interval_ms),
        ]
    elif kind == "mock":
        command = [
            sys.executable,
            "-m",
            "benchmarks.mock_broker",
            "--session-timeout-ms",
            str(timers.session_timeout_ms),
            "--heartbeat-interval-ms",
            str(timers.heartbeat_interval_ms),
            "--initial-rebalance-delay-ms",
            "0",
        ]
    else:
        raise ValueError(f"unknown broker {kind!r} (expected one of {BROKERS})")
    for name, partitions in topics:
        command += ["--topic", f"{name}:{partitions}"]
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        if not line.startswith("listening on "):
            raise RuntimeError(f"{kind} broker did not start: {line!r}")
        yield line.removeprefix("listening on ")
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def _apache_kafka(topics: Sequence[tuple[str, int]], timers: GroupTimers) -> Iterator[str]:
    from kconsumer.testing import ApacheKafka

    with ApacheKafka(
        heartbeat_interval_ms=timers.heartbeat_interval_ms,
        session_timeout_ms=timers.session_timeout_ms,
        assignment_interval_ms=timers.assignment_interval_ms,
    ) as kafka:
        log(f"Apache Kafka {kafka.version} ready in {kafka.startup_seconds:.1f} s")
        for name, partitions in topics:
            kafka.create_topic(name, partitions)
        yield kafka.bootstrap_servers


def payload(size: int) -> bytes:
    """A value of `size` bytes (random hex, so nothing compresses it away)."""
    return os.urandom(size // 2 + 1).hex().encode()[:size]


def produce(bootstrap: str, topic: str, partitions: int, per_partition: int, size: int) -> float:
    """Write `per_partition` records of `size` bytes to every partition; returns the seconds taken."""
    import confluent_kafka as ck

    producer = ck.Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 5,
            "batch.num.messages": 10_000,
            "acks": 1,
            "batch.size": 900_000,
        }
    )
    value = payload(size)
    start = time.perf_counter()
    for i in range(per_partition):
        for p in range(partitions):
            while True:
                try:
                    producer.produce(topic, value=value, partition=p)
                    break
                except BufferError:
                    producer.poll(0.01)
        if i % 1000 == 0:
            producer.poll(0)
    left = producer.flush(120)
    if left:
        raise RuntimeError(f"{left} records not delivered to {bootstrap}")
    return time.perf_counter() - start


def watermarks(bootstrap: str, topic: str, partitions: int) -> list[tuple[int, int]]:
    """(low, high) watermark of every partition."""
    import confluent_kafka as ck

    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-watermarks"})
    try:
        return [consumer.get_watermark_offsets(ck.TopicPartition(topic, p), 10) for p in range(partitions)]
    finally:
        consumer.close()


#: The hand-over phases of a rebalance event (`rebalance_measure.handover_phases`).
HANDOVER_PHASES = ("release_s", "assign_s", "first_record_s")


def _median_known(values: Iterable[float | None]) -> float:
    """The median of the values that are known (neither None nor NaN); NaN if none is."""
    return median(v for v in values if v is not None and not math.isnan(v))


def median(values: Iterable[float]) -> float:
    data = list(values)
    return statistics.median(data) if data else math.nan


def geomean(values: Iterable[float]) -> float:
    data = [v for v in values if v > 0 and math.isfinite(v)]
    return math.exp(sum(math.log(v) for v in data) / len(data)) if data else math.nan


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> dict[str, str]:
    """The facts a reader needs to weigh the numbers: cores, CPU, Python, library versions."""
    import aiokafka
    import confluent_kafka as ck

    import kconsumer
    from kconsumer.aio import handout

    try:
        import psutil

        memory = f"{psutil.virtual_memory().total / 2**30:.0f} GiB"
    except ImportError:
        memory = "?"
    return {
        "cores": str(os.cpu_count()),
        "cpu": cpu_model(),
        "memory": memory,
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "kconsumer": kconsumer.__version__,
        # which form of `async for`'s record runs the clients use (the C one unless not built)
        "record runs": handout.IMPLEMENTATION,
        "confluent-kafka": str(ck.version()[0] if isinstance(ck.version(), tuple) else ck.version()),
        "librdkafka": str(ck.libversion()[0]),
        "aiokafka": aiokafka.__version__,
    }


def git_revision() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
            cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "kconsumer"],
            capture_output=True,
            text=True,
            cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
        )
        return out.stdout.strip() + (" (kconsumer/ modified)" if dirty.stdout.strip() else "")
    except (OSError, subprocess.CalledProcessError):
        return "?"


def compile_sources() -> float:
    """Byte-compile kconsumer's and the benchmarks' sources; returns the seconds it took.

    Every benchmark starts client processes, and each imports its client. confluent-kafka and
    aiokafka come from wheels, whose modules pip compiled at install time; kconsumer here is an
    editable install, whose modules a process compiles afresh on every import when no ``.pyc``
    is on disk (always, under ``PYTHONDONTWRITEBYTECODE``). That took 0.55-0.60 s per import
    against 0.33 s compiled (``python -c "from kconsumer import Consumer"``): a cost an
    installed kconsumer does not have, charged to every member process a rebalance starts (each
    imports both kconsumer and confluent-kafka). Compiling first, as pip does for a wheel, makes
    every member's start that of an install.
    """
    started = time.monotonic()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for package in ("kconsumer", "benchmarks"):
        compileall.compile_dir(os.path.join(root, package), quiet=1, workers=1)
    return time.monotonic() - started


def log(message: str) -> None:
    """Progress on stderr (the report goes to files and stdout)."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def aggregate_rebalance(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (shape, event, client, coordinator): medians over the event's runs (the
    converged ones; all of them when none converged), with the spread of the time to full ownership."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in rows:
        key = (r["members"], r["partitions"], r["event"], r["client"], r["broker"])
        groups.setdefault(key, []).append(r)
    out = []
    for (members, partitions, event, client, broker), runs in groups.items():
        good = [r for r in runs if r["converged"]] or runs
        times = [r["time_to_full_s"] for r in good]
        out.append(
            {
                "members": members,
                "partitions": partitions,
                "event": event,
                "client": client,
                "broker": broker,
                "runs": len(runs),
                "converged": all(r["converged"] for r in runs),
                "note": "; ".join(dict.fromkeys(r["note"] for r in runs if r["note"])),
                "time_to_full_s": median(times),
                "time_min_s": min(times),
                "time_max_s": max(times),
                "unowned_partition_s": median(r["unowned_partition_s"] for r in good),
                "longest_gap_s": median(r["longest_gap_s"] for r in good),
                "duplicates": median(r["duplicates"] for r in good),
                "moved": median(r["moved"] for r in good),
                **{phase: _median_known(r.get(phase) for r in good) for phase in HANDOVER_PHASES},
            }
        )
    return out


def add_data_set_arguments(parser: argparse.ArgumentParser, per_partition: int) -> None:
    """The options of a benchmark that writes one topic: ``--partitions``, ``--per-partition``
    (records, `per_partition` by default) and ``--size`` (value bytes)."""
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--per-partition", type=int, default=per_partition)
    parser.add_argument("--size", type=int, default=100)
