"""Idle cost: CPU used by a consumer that is in a stable group and has nothing to read.

kconsumer and confluent-kafka's KIP-848 consumer (``group.protocol=consumer``) each join a group
of their own (one member, a topic of 8 partitions with no records) on the same broker, with
Kafka's default heartbeat interval (5 s), and call ``poll(1.0)`` in a loop, each in a process of
its own. Once assigned and settled, each process's CPU time (user+system, every thread) is
measured over the same window (60 s by default) and reported as a share of one core. All clients
run at the same time, on both brokers, so the window is shared.
"""

from __future__ import annotations

import multiprocessing
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from .common import GroupTimers, broker, log

TOPIC = "idle"
CLIENTS = ("kconsumer", "confluent KIP-848")


@dataclass
class IdleResult:
    client: str
    broker: str
    seconds: float
    cpu_seconds: float
    error: str | None = None

    @property
    def core_percent(self) -> float:
        return 100.0 * self.cpu_seconds / self.seconds if self.seconds else float("nan")

    def as_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "core_percent": self.core_percent}


def _idle_member(conn: Connection, client: str, bootstrap: str, seconds: float, settle: float) -> None:
    import confluent_kafka as ck
    import psutil

    from kconsumer import Consumer

    try:
        config = {
            "bootstrap.servers": bootstrap,
            "group.id": f"idle-{uuid.uuid4().hex[:8]}",
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
        }
        consumer = Consumer(config) if client == "kconsumer" else ck.Consumer(config)
        consumer.subscribe([TOPIC])
        deadline = time.monotonic() + 60
        while not consumer.assignment():
            consumer.poll(1.0)
            if time.monotonic() > deadline:
                raise TimeoutError("no assignment within 60 s")
        end_settle = time.monotonic() + settle
        while time.monotonic() < end_settle:
            consumer.poll(1.0)
        conn.send(("ready",))
        conn.recv()  # the common start
        process = psutil.Process()
        before = process.cpu_times()
        start = time.monotonic()
        while time.monotonic() - start < seconds:
            consumer.poll(1.0)
        after = process.cpu_times()
        elapsed = time.monotonic() - start
        cpu = (after.user - before.user) + (after.system - before.system)
        conn.send(("done", elapsed, cpu))
        consumer.close()
    except Exception as exc:
        conn.send(("error", f"{type(exc).__name__}: {exc}"))


#: The brokers the idle benchmark starts (Apache Kafka's idle cost is its own JVM's, not a client's).
IDLE_BROKERS = ("reference", "mock")


def run(
    brokers: Sequence[str] = IDLE_BROKERS, seconds: float = 60.0, settle: float = 5.0
) -> list[IdleResult]:
    """All clients on the reference and mock brokers, idle over one common window."""
    ctx = multiprocessing.get_context("spawn")
    results: list[IdleResult] = []
    timers = GroupTimers()  # Kafka's defaults: 45 s session, 5 s heartbeat interval
    with broker("reference", [(TOPIC, 8)], timers) as reference, broker("mock", [(TOPIC, 8)], timers) as mock:
        addresses = {"reference": reference, "mock": mock}
        workers = []
        for kind in brokers:
            for client in CLIENTS:
                parent, child = ctx.Pipe()
                process = ctx.Process(
                    target=_idle_member, args=(child, client, addresses[kind], seconds, settle), daemon=True
                )
                process.start()
                workers.append((client, kind, process, parent))
        ready = []
        for client, kind, process, conn in workers:
            message = conn.recv() if conn.poll(120) else ("error", "not ready in 120 s")
            if message[0] == "ready":
                ready.append((client, kind, process, conn))
            else:
                results.append(IdleResult(client, kind, 0.0, 0.0, message[1]))
        log(f"idle: {len(ready)} consumers settled; measuring {seconds:.0f} s")
        for _client, _kind, _process, conn in ready:
            conn.send(("go",))
        for client, kind, process, conn in ready:
            message = conn.recv() if conn.poll(seconds + 120) else ("error", "no result")
            if message[0] == "done":
                results.append(IdleResult(client, kind, message[1], message[2]))
                log(
                    f"  {client} on {kind}: {message[2]:.3f} CPU s in {message[1]:.0f} s "
                    f"({results[-1].core_percent:.2f} % of a core)"
                )
            else:
                results.append(IdleResult(client, kind, 0.0, 0.0, message[1]))
            process.join(30)
            if process.is_alive():
                process.kill()
    return results
