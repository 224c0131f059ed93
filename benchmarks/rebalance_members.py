"""The rebalance benchmark's processes other than the parent (`benchmarks.rebalance`): a group
member of each client kind, reporting to the parent through a pipe, and the producer.

A member reports, with the machine's monotonic clock: ``ready`` once it has imported its client
(the parent starts it only then: a rolling restart's new process is up before the old one goes,
as a deployment's readiness check has it), ``subscribed``, its rebalance callbacks (``assign``,
``revoke``, ``lost`` with their partitions), ``records`` ((partition, offset) pairs) and
``closed``.
"""

from __future__ import annotations

import os
import threading
import time
from multiprocessing.connection import Connection
from typing import Any

from .common import GroupTimers
from .member_trace import TRACE_VARIABLE, java_trace, librdkafka_trace, trace_callbacks

#: Session timeout and heartbeat interval for every broker (KIP-848) and classic client alike.
TIMERS = GroupTimers(session_timeout_ms=6_000, heartbeat_interval_ms=1_000, assignment_interval_ms=0)
#: Records per second written to each partition (capped in total by `MAX_RATE`).
RATE_PER_PARTITION = 20
MAX_RATE = 4_000
TOPIC = "rebalance"

#: Member kinds that are kconsumer's Consumer (the unaligned one with ``heartbeat.alignment=none``,
#: every member heartbeating at its own phase, as before the heartbeat grid).
KCONSUMER_KINDS = ("kconsumer", "kconsumer-unaligned")


def _client_config(kind: str, bootstrap: str, group: str, instance_id: str | None) -> dict[str, Any]:
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
    }
    if instance_id is not None:
        config["group.instance.id"] = instance_id
    if kind in (*KCONSUMER_KINDS, "confluent-consumer"):
        config["group.protocol"] = "consumer"
        if kind == "kconsumer-unaligned":
            config["heartbeat.alignment"] = "none"
    else:
        config.update(
            {
                "group.protocol": "classic",
                "session.timeout.ms": TIMERS.session_timeout_ms,
                "heartbeat.interval.ms": TIMERS.heartbeat_interval_ms,
                "partition.assignment.strategy": "cooperative-sticky"
                if kind == "confluent-cooperative"
                else "range",
            }
        )
    return config


def member_process(
    conn: Connection, kind: str, bootstrap: str, group: str, name: str, instance_id: str | None
) -> None:
    """A group member: reports ``ready``, waits for "start", subscribes, reports callbacks and
    records until "leave"."""
    import confluent_kafka as ck

    from kconsumer import Consumer

    send_lock = threading.Lock()

    def send(message: tuple[Any, ...]) -> None:
        with send_lock:
            conn.send(message)

    def callback(what: str) -> Any:
        def report(_consumer: Any, partitions: list[Any]) -> None:
            send((what, time.monotonic(), name, [tp.partition for tp in partitions]))

        return report

    trace_dir = os.environ.get(TRACE_VARIABLE)
    if kind == "java-consumer":
        _java_member(send, conn, bootstrap, group, name, instance_id, trace_dir)
        return
    send(("ready", time.monotonic(), name, []))
    if conn.recv() != ("start",):
        return
    traced: dict[str, Any] = {}
    if trace_dir:
        callback = trace_callbacks(callback, trace_dir, name)
        if kind not in KCONSUMER_KINDS:
            traced = librdkafka_trace(trace_dir, name)
    factory = Consumer if kind in KCONSUMER_KINDS else ck.Consumer
    consumer = factory({**_client_config(kind, bootstrap, group, instance_id), **traced})
    consumer.subscribe(
        [TOPIC], on_assign=callback("assign"), on_revoke=callback("revoke"), on_lost=callback("lost")
    )
    send(("subscribed", time.monotonic(), name, []))
    while True:
        if conn.poll(0):
            command = conn.recv()
            if command == ("leave",):
                consumer.close()
                send(("closed", time.monotonic(), name, []))
                return
        messages = consumer.consume(500, 0.05)
        if messages:
            now = time.monotonic()
            send(("records", now, name, [(m.partition(), m.offset()) for m in messages if m.error() is None]))


def _java_member(
    send: Any,
    conn: Connection,
    bootstrap: str,
    group: str,
    name: str,
    instance_id: str | None,
    trace_dir: str | None,
) -> None:
    """The Java client's consumer (auto-commit on, as its defaults) in a process of its own,
    its reports relayed to the parent with this process's clock (with `trace_dir`, its
    hand-over's debug lines go to a file there: `member_trace.java_trace`).

    Its JVM starts at once and the member is ``ready`` when the peer has made its consumer and
    waits (``--wait-start``), as a Python member is once it has imported its client: "start"
    then only subscribes, so a join or a rolling restart's step is not charged a JVM's start."""
    import json
    import subprocess

    from peers.build import java_peer

    java, *program = java_peer()
    options: list[str] = []
    trace_file = None  # (not `log`: that is the benchmark's logging function)
    if trace_dir:
        options, trace_file = java_trace(trace_dir, name)
    command = [java, *options, *program, "consume", "--bootstrap", bootstrap, "--group", group]
    command += ["--name", name, "--topics", TOPIC, "--commit-every-ms", "5000"]
    command += ["--prop", "enable.auto.commit=true", "--wait-start", "yes"]
    if instance_id is not None:
        command += ["--instance-id", instance_id]
    peer = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=trace_file, text=True, bufsize=1
    )
    if trace_file is not None:
        trace_file.close()  # the JVM writes to its own copy of the descriptor
    assert peer.stdin is not None and peer.stdout is not None
    stdin = peer.stdin

    def relay() -> None:
        assert peer.stdout is not None
        renamed = {"assigned": "assign", "revoked": "revoke", "lost": "lost"}
        for line in peer.stdout:
            report = json.loads(line)
            event, now = report["event"], time.monotonic()
            if event == "record":
                send(("records", now, name, [(report["partition"], report["offset"])]))
            elif event in renamed:
                send((renamed[event], now, name, [p for _t, p in report["partitions"]]))
                stdin.write("ack\n")
                stdin.flush()
            elif event == "waiting":
                send(("ready", now, name, []))
            elif event == "ready":
                send(("subscribed", now, name, []))

    reader = threading.Thread(target=relay, daemon=True)
    reader.start()
    if conn.recv() != ("start",):
        stdin.write("close\n")  # told to stop before it started
        stdin.flush()
        peer.wait(60)
        return
    stdin.write("start\n")
    stdin.flush()
    if conn.recv() == ("leave",):
        stdin.write("close\n")
        stdin.flush()
        peer.wait(60)
        reader.join(10)
        send(("closed", time.monotonic(), name, []))


def producer(bootstrap: str, partitions: int, rate: float, stop: Any) -> None:
    """Write `rate` records/s spread evenly over the partitions until `stop` is set."""
    import confluent_kafka as ck

    producer = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    tick = 0.02
    per_tick = rate * tick
    owed = 0.0
    partition = 0
    next_tick = time.monotonic()
    while not stop.is_set():
        owed += per_tick
        while owed >= 1:
            owed -= 1
            try:
                producer.produce(TOPIC, b"r" * 16, partition=partition)
            except BufferError:
                producer.poll(0.05)
            partition = (partition + 1) % partitions
        producer.poll(0)
        next_tick += tick
        time.sleep(max(0.0, next_tick - time.monotonic()))
    producer.flush(5)
