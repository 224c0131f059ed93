"""``kconsumer demo``: consumers joining, leaving and crashing in one group, on the embedded
reference cluster, with each member's assignment, epoch and throughput printed as they change.

Every member is its own process (so a crash is a real ``SIGKILL``: no leave, the coordinator
removes it after the session timeout). Members report to the demo through a queue; the demo
prints the group as the coordinator sees it and as each member sees it, then checks at the end
that every produced record was consumed (at least once) and how many were consumed twice.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import multiprocessing
import os
import queue
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

TOPIC = "orders"
GROUP = "demo"


@dataclass
class Step:
    """A scripted event: at `at` seconds, `action` ("join", "leave", "crash") on `member`."""

    at: float
    action: str
    member: str
    static: bool = False


def script(duration: float, brokers: int = 1) -> list[Step]:
    """Scale out, scale in, a crash, a static member's quick restart (no rebalance); with several
    brokers, the group coordinator's broker also goes down and comes back."""
    f = duration / 30
    steps = [
        Step(0 * f, "join", "A"),
        Step(3 * f, "join", "B"),
        Step(6 * f, "join", "C", static=True),
        Step(10 * f, "join", "D"),
        Step(13 * f, "leave", "B"),
        Step(16 * f, "crash", "D"),
        Step(22 * f, "leave", "C"),
        Step(22.5 * f, "join", "C", static=True),
        Step(26 * f, "join", "E"),
    ]
    if brokers > 1:
        steps += [Step(8 * f, "stop-broker", ""), Step(11.5 * f, "start-broker", "")]
    return sorted(steps, key=lambda step: step.at)


def _member(name: str, connection: dict[str, str], instance: str | None, reports: Any, stop: Any) -> None:
    """One consumer process (static with `instance`): consume, report its view every 250 ms, leave
    cleanly on `stop`."""
    import logging

    logging.basicConfig(level=logging.WARNING)
    from confluent_kafka import KafkaException

    from kconsumer import Consumer

    config: dict[str, Any] = {
        **connection,
        "group.id": GROUP,
        "client.id": f"demo-{name}",
        "auto.offset.reset": "earliest",
        "auto.commit.interval.ms": 500,
        # At least once: an offset is stored (and so auto-committed) only once its record was
        # reported as processed; a killed member's unreported records are read again by the next owner.
        "enable.auto.offset.store": False,
    }
    if instance is not None:
        config["group.instance.id"] = f"demo-{instance}"
    consumer = Consumer(config)

    consumed = 0
    batch: list[tuple[int, int]] = []  # processed, not yet reported and stored

    def report(leaving: bool = False) -> None:
        nonlocal batch
        owned = [] if leaving else sorted(tp.partition for tp in consumer.assignment())
        reports.put(("view", name, time.time(), (consumer.member_epoch(), owned, consumed, batch)))
        _store_processed(consumer, batch)
        batch = []

    def on_assign(_consumer: Any, partitions: list[Any]) -> None:
        reports.put(("assigned", name, time.time(), sorted(p.partition for p in partitions)))

    def on_revoke(_consumer: Any, partitions: list[Any]) -> None:
        # The revocation's auto-commit came before this callback: what was processed since is stored
        # and committed here, so the partitions' next owners start after it (at least once, no rework).
        report()
        with contextlib.suppress(KafkaException):
            consumer.commit(asynchronous=False)
        reports.put(("revoked", name, time.time(), sorted(p.partition for p in partitions)))

    def on_lost(_consumer: Any, partitions: list[Any]) -> None:
        reports.put(("lost", name, time.time(), sorted(p.partition for p in partitions)))

    consumer.subscribe([TOPIC], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
    last_report = 0.0
    while not stop.is_set():
        for message in consumer.consume(500, 0.1):
            if message.error() is None:
                consumed += 1
                partition, offset = message.partition(), message.offset()
                if partition is not None and offset is not None:
                    batch.append((partition, offset))
        now = time.time()
        if now - last_report >= 0.25:
            last_report = now
            report()
    report(leaving=True)
    consumer.close()
    reports.put(("closed", name, time.time(), None))


def _store_processed(consumer: Any, batch: list[tuple[int, int]]) -> None:
    """Store the offsets after the records of `batch` (reported as processed) for auto-commit."""
    from confluent_kafka import KafkaException, TopicPartition

    last: dict[int, int] = {}
    for partition, offset in batch:
        last[partition] = max(offset, last.get(partition, -1))
    if not last:
        return
    # A partition no longer owned raises: its next owner reads those records again.
    with contextlib.suppress(KafkaException):
        consumer.store_offsets(offsets=[TopicPartition(TOPIC, p, o + 1) for p, o in last.items()])


@dataclass
class MemberState:
    process: Any
    stop: Any
    epoch: int = 0
    owned: list[int] = field(default_factory=list)
    consumed: int = 0
    rate: float = 0.0
    last: tuple[float, int] = (0.0, 0)
    alive: bool = True


class Demo:
    """Runs the script, prints what happens, checks the result."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.context = multiprocessing.get_context("spawn")
        self.reports: Any = self.context.Queue()
        # By label: a name started again (a static member's restart) gets a new label ("C2"), so the
        # two processes' reports never mix (under load the first may still be closing as the second
        # starts), and the first's process and stop event stay referenced until joined (a spawned child
        # still starting rebuilds the event from semaphores that are freed with the object).
        self.members: dict[str, MemberState] = {}
        self.starts: collections.Counter[str] = collections.Counter()  # processes started per name
        self.seen: collections.Counter[tuple[int, int]] = collections.Counter()
        self.started = time.time()
        self.produced = 0
        self.stopped = 0

    def say(self, text: str) -> None:
        print(f"[{time.time() - self.started:6.1f}s] {text}", flush=True)

    def run(self) -> int:
        from kconsumer.testing import ReferenceCluster

        with ReferenceCluster(
            heartbeat_interval_ms=200,
            session_timeout_ms=self.args.session_timeout_ms,
            assignment_interval_ms=0,
            security_protocol=self.args.security.upper(),
            sasl_mechanisms=("SCRAM-SHA-512",),
            users={"demo": "demo-secret"},
            max_reauth_ms=5000,
            brokers=self.args.brokers,
        ) as cluster:
            cluster.create_topic(TOPIC, self.args.partitions)
            self.say(
                f"reference cluster on {cluster.bootstrap_servers} ({self.args.security.upper()}): "
                f"topic {TOPIC!r} with "
                f"{self.args.partitions} partitions, group {GROUP!r}, session timeout "
                f"{self.args.session_timeout_ms} ms"
            )
            producing = threading.Event()
            producer = threading.Thread(target=self._produce, args=(cluster, producing), daemon=True)
            producer.start()
            steps = script(self.args.duration, self.args.brokers)
            end = self.started + self.args.duration
            next_print = 0.0
            watcher = None
            watching = threading.Event()
            if self.args.watch:  # the live view of `kconsumer groups watch` instead of printed views
                watcher = threading.Thread(target=self._watch, args=(cluster, watching), daemon=True)
                watcher.start()
            while time.time() < end:
                while steps and time.time() - self.started >= steps[0].at:
                    self._do(steps.pop(0), cluster)
                self._drain()
                if time.time() >= next_print and watcher is None:
                    next_print = time.time() + self.args.print_interval
                    self._print(cluster)
            producing.set()
            producer.join()
            self.say(f"stopping; produced {self.produced} records, waiting for the members to catch up")
            self._catch_up(cluster)
            if watcher is not None:  # its last view (all that a non-terminal shows) is the caught-up group
                watching.set()
                watcher.join(30)
                print(flush=True)
            for member in self.members.values():
                if member.alive:
                    member.stop.set()
            for member in self.members.values():
                member.process.join(30)
            self._drain()
            return self._summary(cluster)

    def _produce(self, cluster: Any, done: threading.Event) -> None:
        rate = self.args.rate
        tick = 0.05
        per_tick = max(1, int(rate * tick))
        while not done.is_set():
            values = [f'{{"order": {self.produced + i}}}'.encode() for i in range(per_tick)]
            cluster.produce(TOPIC, values)
            self.produced += per_tick
            time.sleep(tick)

    def _do(self, step: Step, cluster: Any) -> None:
        connection = cluster.client_config()
        if step.action == "stop-broker":
            self.stopped = cluster.coordinator_node(GROUP)
            cluster.stop_broker(self.stopped)
            self.say(
                f"broker {self.stopped}, the group's coordinator, goes down: its groups move to broker "
                f"{cluster.coordinator_node(GROUP)} (loaded from their records), its partitions get new "
                "leaders; the members find the new coordinator and keep their partitions"
            )
        elif step.action == "start-broker":
            cluster.start_broker(self.stopped)
            self.say(f"broker {self.stopped} is back (leadership stays where it moved)")
        elif step.action == "join":
            self.starts[step.member] += 1
            label = self._label(step.member)
            stop = self.context.Event()
            instance = step.member if step.static else None
            process = self.context.Process(
                target=_member, args=(label, connection, instance, self.reports, stop), daemon=True
            )
            process.start()
            self.members[label] = MemberState(process, stop)
            kind = f"static, instance demo-{instance}" if step.static else "dynamic"
            self.say(f"member {label} starts ({kind}, pid {process.pid})")
        elif step.action == "leave":
            label = self._label(step.member)
            self.members[label].stop.set()
            self.say(f"member {label} closes (commits, revokes, leaves)")
        elif step.action == "crash":
            label = self._label(step.member)
            member = self.members[label]
            os.kill(member.process.pid, signal.SIGKILL)
            member.alive = False
            member.owned = []
            self.say(
                f"member {label} is killed (SIGKILL): no leave, the coordinator fences it after "
                "the session timeout"
            )

    def _label(self, name: str) -> str:
        """The label of `name`'s latest process: the name, then "C2", "C3" for later starts."""
        starts = self.starts[name]
        return name if starts == 1 else f"{name}{starts}"

    def _drain(self) -> None:
        while True:
            try:
                kind, name, _at, payload = self.reports.get_nowait()
            except queue.Empty:
                return
            member = self.members.get(name)
            if member is None:
                continue
            if kind == "view":
                epoch, owned, consumed, batch = payload
                # What a member reported it processed counts even if it was killed since.
                self.seen.update(batch)
                if not member.alive:
                    continue
                now = time.time()
                since, before = member.last
                if since:
                    member.rate = (consumed - before) / max(now - since, 1e-6)
                member.last = (now, consumed)
                member.epoch, member.owned, member.consumed = epoch, owned, consumed
            elif not member.alive:
                continue
            elif kind in ("assigned", "revoked", "lost") and (payload or kind != "assigned"):
                self.say(f"member {name}: {kind} partitions {payload}")
            elif kind == "closed":
                member.alive = False
                member.owned = []
                self.say(f"member {name} has left")

    def _watch(self, cluster: Any, done: threading.Event) -> None:
        """Redraw the group with `kconsumer groups watch`'s view (its admin requests go to the
        cluster like any client's) until `done`, then once more (a non-terminal shows only the last
        view); the demo's event lines print above it."""
        import asyncio

        from rich.live import Live

        from .groups.admin import GroupAdmin, GroupAdminError
        from .groups.views import GroupView, PartitionLag
        from .groups.watch import render, snapshot

        settings = {k: v for k, v in cluster.client_config("demo").items() if k != "bootstrap.servers"}

        async def redraw() -> None:
            view: GroupView | None = None
            rows: list[PartitionLag] = []
            async with GroupAdmin(cluster.bootstrap_servers, settings, timeout_s=5.0) as admin:
                with Live(render(GROUP, None, []), auto_refresh=False, redirect_stdout=True) as live:
                    finished = False
                    while not finished:
                        finished = done.is_set()
                        error = None
                        try:
                            view, rows = await snapshot(admin, GROUP)
                        except GroupAdminError as exc:  # the coordinator's broker may be down
                            error = str(exc)
                        live.update(render(GROUP, view, rows, error), refresh=True)
                        await asyncio.to_thread(done.wait, self.args.print_interval)

        try:
            asyncio.run(redraw())
        except Exception as exc:  # the demo goes on without its view; say why it stopped
            self.say(f"the group view stopped: {exc!r}")

    def _print(self, cluster: Any) -> None:
        group = cluster.describe_group(GROUP)
        if group is None:
            return
        print(
            f"  group epoch {group.epoch}, assignment epoch {group.assignment_epoch}, state {group.state}",
            flush=True,
        )
        for name in sorted(self.members):
            member = self.members[name]
            if not member.alive:
                continue
            print(
                f"    {name}: epoch {member.epoch:>3}  partitions {member.owned!s:<40} "
                f"{member.rate:8.0f} records/s  {member.consumed:>8} total",
                flush=True,
            )

    def _catch_up(self, cluster: Any) -> None:
        deadline = time.time() + 30
        while time.time() < deadline:
            self._drain()
            high = {p: hw for p, (_low, hw) in enumerate(cluster.watermarks(TOPIC))}
            if all(sum(1 for (p, _o) in self.seen if p == part) >= hw for part, hw in high.items()):
                return
            time.sleep(0.2)

    def _summary(self, cluster: Any) -> int:
        watermarks = cluster.watermarks(TOPIC)
        expected = {(p, o) for p, (low, high) in enumerate(watermarks) for o in range(low, high)}
        consumed = set(self.seen)
        missing = expected - consumed
        duplicates = sum(count - 1 for count in self.seen.values() if count > 1)
        self.say(
            f"produced {len(expected)} records; consumed {len(consumed & expected)} distinct, "
            f"{duplicates} delivered twice (the uncommitted window of the crashed member), "
            f"{len(missing)} missing"
        )
        committed = {p: o for (_t, p), o in cluster.committed(GROUP).items()}
        behind = {p: high for p, (_low, high) in enumerate(watermarks) if committed.get(p, 0) < high}
        where = "every partition's log end" if not behind else f"behind the log end {behind}"
        self.say(f"committed offsets: {dict(sorted(committed.items()))} ({where})")
        return 0 if not missing else 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The demo's options."""
    parser.add_argument("--duration", type=float, default=30.0, help="seconds of scripted events (30)")
    parser.add_argument("--partitions", type=int, default=12, help="partitions of the topic (12)")
    parser.add_argument("--rate", type=int, default=2000, help="records produced per second (2000)")
    parser.add_argument(
        "--session-timeout-ms", type=int, default=3000, help="coordinator session timeout (3000)"
    )
    parser.add_argument("--print-interval", type=float, default=1.0, help="seconds between group views (1)")
    parser.add_argument(
        "--watch", action="store_true", help="show the group as `kconsumer groups watch` does (a live view)"
    )
    parser.add_argument(
        "--brokers",
        type=int,
        default=3,
        help="brokers in the reference cluster; with 2 or more the coordinator's broker fails mid-run (3)",
    )
    parser.add_argument(
        "--security",
        choices=("plaintext", "ssl", "sasl_plaintext", "sasl_ssl"),
        default="plaintext",
        help="the listener's security: ssl runs every connection over TLS; sasl_* authenticate "
        "user 'demo' with SCRAM-SHA-512, re-authenticating every 5 s (plaintext)",
    )


def run(args: argparse.Namespace) -> int:
    """Run the demo; 0 when every produced record was consumed."""
    if args.duration <= 0 or args.partitions <= 0 or args.rate <= 0:
        raise SystemExit("kconsumer demo: --duration, --partitions and --rate must be positive")
    if args.watch:
        try:
            import rich  # noqa: F401
        except ImportError:
            raise SystemExit("kconsumer demo --watch needs rich: pip install 'kconsumer[cli]'") from None
    return Demo(args).run()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kconsumer demo", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
