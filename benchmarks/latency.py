"""End-to-end latency: produce → poll at a fixed rate, kconsumer against raw confluent-kafka.

``python -m benchmarks.latency [--rates 10000,100000] [--seconds 10] [--partitions 8]``

One reference broker (``kconsumer serve``) in a process of its own. For each rate and each client,
in turn: the client (in its own process) starts consuming a fresh topic and reports when it owns
every partition; then a producer process writes `rate` records/s for `seconds` s (each value
carries its send time; confluent-kafka's producer with ``linger.ms=1``, the same for every client),
and the consumer notes, for every record, the time from send to `poll()` returning it. The report
gives p50, p99 and the maximum over all records but the first second's, and kconsumer's p99 minus
each peer's. The clients: kconsumer (a group member, `subscribe`), raw confluent-kafka with its
defaults and with kconsumer's fetch-handle settings (manual `assign`, as kconsumer's own fetch
handle), all calling ``poll(0.1)`` in a loop.
"""

from __future__ import annotations

import argparse
import multiprocessing
import struct
import time
import uuid
from multiprocessing.connection import Connection
from typing import Any

from kconsumer.client.config import FETCH_HANDLE_DEFAULTS

from .common import GroupTimers, broker, log

CLIENTS = ("kconsumer", "confluent", "confluent tuned")
#: Records of the first second are not counted (connections, first fetches).
WARMUP_S = 1.0
_STAMP = struct.Struct(">d")


def _consumer(client: str, bootstrap: str, topic: str, partitions: int) -> Any:
    import confluent_kafka as ck

    base = {
        "bootstrap.servers": bootstrap,
        "group.id": f"latency-{uuid.uuid4()}",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    }
    if client == "kconsumer":
        from kconsumer import Consumer

        consumer: Any = Consumer(base)
        consumer.subscribe([topic])
        return consumer
    tuned = FETCH_HANDLE_DEFAULTS if client == "confluent tuned" else {}
    consumer = ck.Consumer({**base, **tuned})
    consumer.assign([ck.TopicPartition(topic, p, 0) for p in range(partitions)])
    return consumer


def _consume(
    conn: Connection, client: str, bootstrap: str, topic: str, partitions: int, expected: int
) -> None:
    consumer = _consumer(client, bootstrap, topic, partitions)
    deadline = time.monotonic() + 30
    while client == "kconsumer" and len(consumer.assignment()) < partitions:
        consumer.poll(0.05)
        if time.monotonic() > deadline:
            conn.send(("error", "no assignment in 30 s"))
            return
    for _ in range(10):  # connections up, first (empty) fetches done
        consumer.poll(0.05)
    conn.send(("ready",))
    latencies: list[tuple[float, float]] = []
    deadline = time.monotonic() + 120
    while len(latencies) < expected and time.monotonic() < deadline:
        message = consumer.poll(0.1)
        if message is None or message.error() is not None:
            continue
        now = time.time()
        sent = _STAMP.unpack_from(message.value())[0]
        latencies.append((sent, now - sent))
    consumer.close()
    conn.send(("latencies", latencies))


def _produce(bootstrap: str, topic: str, partitions: int, rate: int, seconds: float) -> None:
    import confluent_kafka as ck

    producer = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 1, "acks": 1})
    padding = b"x" * 92
    tick = 0.001
    sent = 0
    start = time.perf_counter()
    total = int(rate * seconds)
    while sent < total:
        due = min(total, int((time.perf_counter() - start) * rate) + 1)
        while sent < due:
            try:
                producer.produce(topic, _STAMP.pack(time.time()) + padding, partition=sent % partitions)
                sent += 1
            except BufferError:
                producer.poll(0.001)
        producer.poll(0)
        time.sleep(tick)
    producer.flush(30)


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def measure(bootstrap: str, client: str, rate: int, seconds: float, partitions: int) -> dict[str, Any]:
    """One client at one rate: p50/p99/max latency in ms of the records after the first second."""
    ctx = multiprocessing.get_context("spawn")
    topic = f"latency-{client.replace(' ', '-')}-{rate}"
    expected = int(rate * seconds)
    parent, child = ctx.Pipe()
    reader = ctx.Process(
        target=_consume, args=(child, client, bootstrap, topic, partitions, expected), daemon=True
    )
    reader.start()
    if not parent.poll(60) or parent.recv()[0] != "ready":
        reader.kill()
        return {"client": client, "rate": rate, "error": "consumer not ready"}
    writer = ctx.Process(target=_produce, args=(bootstrap, topic, partitions, rate, seconds), daemon=True)
    writer.start()
    writer.join(seconds + 60)
    message = parent.recv() if parent.poll(150) else ("error", "no result")
    reader.join(10)
    if message[0] != "latencies":
        return {"client": client, "rate": rate, "error": message[1]}
    samples = message[1]
    first = min(sent for sent, _ in samples)
    counted = [latency * 1000 for sent, latency in samples if sent >= first + WARMUP_S]
    return {
        "client": client,
        "rate": rate,
        "records": len(samples),
        "p50_ms": _percentile(counted, 0.50),
        "p99_ms": _percentile(counted, 0.99),
        "max_ms": max(counted),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="10000,100000")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--partitions", type=int, default=8)
    args = parser.parse_args(argv)
    rates = [int(r) for r in args.rates.split(",")]
    topics = [(f"latency-{c.replace(' ', '-')}-{r}", args.partitions) for r in rates for c in CLIENTS]
    rows = []
    with broker("reference", topics, GroupTimers()) as bootstrap:
        for rate in rates:
            for client in CLIENTS:
                row = measure(bootstrap, client, rate, args.seconds, args.partitions)
                log(f"latency: {row}")
                rows.append(row)
    print("| rate/s | client | records | p50 ms | p99 ms | max ms | p99 minus the peer's p99 |")
    print("|---|---|---|---|---|---|---|")
    for rate in rates:
        ours = next(
            (r for r in rows if r["rate"] == rate and r["client"] == "kconsumer" and "p99_ms" in r), None
        )
        for row in (r for r in rows if r["rate"] == rate):
            if "error" in row:
                print(f"| {rate:,} | {row['client']} | error: {row['error']} | | | | |")
                continue
            delta = "" if ours is None or row is ours else f"{ours['p99_ms'] - row['p99_ms']:+.1f} ms"
            print(
                f"| {rate:,} | {row['client']} | {row['records']:,} | {row['p50_ms']:.1f} | "
                f"{row['p99_ms']:.1f} | {row['max_ms']:.1f} | {delta} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
