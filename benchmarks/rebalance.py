"""Rebalance: how long partitions go unowned and unconsumed when a group changes, and what repeats.

A group of N members (each a process of its own) reads a topic of P partitions while a producer
process writes to every partition at a steady rate. The parent process drives events and every
member reports to it, through a pipe, what it saw with the machine's monotonic clock: partitions
assigned, revoked or lost (its rebalance callbacks) and (partition, offset) of every record.

Events, in one run per group (dynamic members): a member **joins**, then an original member
**leaves** cleanly (``close()``), both repeated `Settings.repeats` times (their cost depends on
where each member is in its heartbeat interval, which varies; without joins a member starts after
each leave, unmeasured, so every leave is from a group of N, and the only member's leave starts a
replacement at once); a member **crashes** (SIGKILL: no
leave, its partitions wait for the session timeout; when it was the only member a replacement
starts at once); a **rolling restart**
of every member (each closes once its replacement's process is ready, that is has imported its
client, as a deployment's readiness check has it; the new one starts; the next restart waits
until the newcomer owns a partition). A member process is started only once it is ready
(`rebalance_members`). A second run with static members (``group.instance.id``) does a static rolling
restart (the newcomer reuses the instance id). Every event starts at a random point of the
heartbeat interval after the group went quiet (`rebalance_phases`: a cell's joins over all its
runs take one point of every equal slice of the interval, in random order, and so do its leaves,
its crashes and its rolling restarts).

Per event, from its start to convergence (every partition owned by a live member, the group
balanced, every partition that changed hands consumed again by its new owner, no change for a quiet
period):

* **time to full ownership**: until the last partition that changed hands is consumed again;
* **unowned partition-seconds**: summed over partitions, the time no live member held it (between
  a revoke and the next assign, or from a crash until the reassignment);
* **longest gap**: the longest time any partition went without a record being consumed (its
  records arrive every ``1/rate_per_partition`` seconds, which bounds the resolution);
* **duplicates**: records consumed again after the event (offsets not yet committed when the
  partition moved).

Clients: kconsumer and confluent-kafka with ``group.protocol=consumer`` (KIP-848) on the
reference coordinator (``kconsumer serve``), on librdkafka's mock cluster and on Apache Kafka 4.4;
the Apache Kafka Java client's KIP-848 consumer (`peers/java`, relayed by a member process) on
Apache Kafka and the reference coordinator; confluent-kafka's classic protocol with
``cooperative-sticky`` and with eager ``range`` on the mock (the baseline the new protocol
replaces); and, asked for by name, "kconsumer unaligned": kconsumer with
``heartbeat.alignment=none`` (each member heartbeating at its own phase, as before the heartbeat
grid of docs/heartbeat-alignment.md), for a before-and-after in one run. Every client keeps its
defaults (auto-commit every 5 s) except the group timers, the same everywhere: see `TIMERS`.
"""

from __future__ import annotations

import multiprocessing
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any

from .common import broker, log
from .rebalance_measure import (
    QUIET_S,
    Events,
    converged_since,
    handover_phases,
    last_change,
    measure,
    medians,
    timeline,
)
from .rebalance_members import MAX_RATE, RATE_PER_PARTITION, TIMERS, TOPIC, member_process, producer
from .rebalance_phases import PhasePlan

#: (name, broker, client kind) in report order.
COMBOS = (
    ("kconsumer", "reference", "kconsumer"),
    ("confluent KIP-848", "reference", "confluent-consumer"),
    ("kconsumer", "mock", "kconsumer"),
    ("confluent KIP-848", "mock", "confluent-consumer"),
    ("confluent cooperative-sticky", "mock", "confluent-cooperative"),
    ("confluent eager range", "mock", "confluent-range"),
    ("kconsumer", "kafka", "kconsumer"),
    ("confluent KIP-848", "kafka", "confluent-consumer"),
    ("Java KIP-848", "kafka", "java-consumer"),
    ("Java KIP-848", "reference", "java-consumer"),
    ("kconsumer unaligned", "reference", "kconsumer-unaligned"),
    ("kconsumer unaligned", "mock", "kconsumer-unaligned"),
    ("kconsumer unaligned", "kafka", "kconsumer-unaligned"),
)
#: What a run without ``--clients`` or ``--coordinators`` measures (Apache Kafka, the Java client
#: and kconsumer without its heartbeat grid are asked for by name: ``--coordinators kafka``).
DEFAULT_COMBOS = tuple(
    c for c in COMBOS if c[1] != "kafka" and c[2] not in ("java-consumer", "kconsumer-unaligned")
)
EVENTS = ("join", "leave", "crash", "rolling-dynamic", "rolling-static")


# -- the parent's view of the group -------------------------------------------------------------------


@dataclass
class Member:
    name: str
    process: Any
    conn: Connection
    instance_id: str | None = None
    started: bool = False
    alive: bool = True


@dataclass
class EventResult:
    """What one event cost."""

    client: str
    broker: str
    members: int
    partitions: int
    event: str
    converged: bool
    time_to_full_s: float
    unowned_partition_s: float
    longest_gap_s: float
    duplicates: int
    moved: int
    note: str = ""
    #: Medians of the hand-over phases (`rebalance_measure.handover_phases`), seconds.
    release_s: float = float("nan")
    assign_s: float = float("nan")
    first_record_s: float = float("nan")

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Log:
    """Every report from the members, in arrival order, plus the parent's own (kills, exits)."""

    events: Events = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: Members whose process reported ``ready`` (imported its client, waiting to start).
    ready: set[str] = field(default_factory=set)

    def add(self, event: tuple[str, float, str, Any]) -> None:
        if event[0] == "ready":
            self.ready.add(event[2])
        with self.lock:
            self.events.append(event)

    def snapshot(self) -> Events:
        with self.lock:
            return sorted(self.events, key=lambda e: e[1])


class Group:
    """A running group: member processes, the producer, the reader thread and the event log."""

    def __init__(self, kind: str, bootstrap: str, partitions: int, static: bool) -> None:
        self.kind, self.bootstrap, self.partitions, self.static = kind, bootstrap, partitions, static
        self.ctx = multiprocessing.get_context("spawn")
        self.group = f"rebalance-{uuid.uuid4().hex[:8]}"
        self.log = Log()
        self.members: dict[str, Member] = {}
        self._spawned = 0
        self._stop = threading.Event()
        self._producer_stop = self.ctx.Event()
        rate = min(MAX_RATE, RATE_PER_PARTITION * partitions)
        self._producer = self.ctx.Process(
            target=producer, args=(bootstrap, partitions, rate, self._producer_stop), daemon=True
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        #: When the group last went quiet (its last ownership change plus the quiet period), as
        #: the latest `wait_converged` found it: the next event's wait counts from there.
        self.quiet = time.monotonic()

    def spawn(self, instance_id: str | None = None) -> Member:
        """A new member process, imported and waiting for `start`."""
        self._spawned += 1
        name = f"m{self._spawned}"
        parent, child = self.ctx.Pipe()
        if self.static and instance_id is None:
            instance_id = f"instance-{name}"
        process = self.ctx.Process(
            target=member_process,
            args=(child, self.kind, self.bootstrap, self.group, name, instance_id),
            daemon=True,
        )
        process.start()
        child.close()
        member = Member(name, process, parent, instance_id)
        self.members[name] = member
        return member

    def start(self, member: Member) -> float:
        """Start `member` (once its process is ready); returns when it was told to."""
        self.wait_ready(member)
        now = time.monotonic()
        member.conn.send(("start",))
        member.started = True
        return now

    def _read(self) -> None:
        while not self._stop.is_set():
            conns = {m.conn: m for m in list(self.members.values()) if m.alive}
            if not conns:
                time.sleep(0.05)
                continue
            for conn in wait(list(conns), timeout=0.1):
                member = conns[conn]  # type: ignore[index]
                try:
                    self.log.add(conn.recv())  # type: ignore[union-attr]
                except (EOFError, OSError):
                    if member.alive:
                        member.alive = False
                        self.log.add(("dead", time.monotonic(), member.name, []))

    def wait_ready(self, member: Member, timeout_s: float = 60.0) -> None:
        """Wait until `member`'s process has imported its client (its ``ready`` report)."""
        deadline = time.monotonic() + timeout_s
        while member.name not in self.log.ready:
            if time.monotonic() > deadline or not member.process.is_alive():
                raise RuntimeError(f"member {member.name} did not get ready")
            time.sleep(0.005)

    def form(self, members: list[Member]) -> None:
        """Start the producer, the reader and `members`; wait until they form a converged group."""
        self._producer.start()
        self._reader.start()
        time.sleep(0.5)
        since = min(self.start(m) for m in members)
        ok, _ = self.wait_converged(since, _settle_timeout(len(members)) + 30)
        if not ok:
            raise RuntimeError("the group did not form")

    def live(self) -> list[Member]:
        return [m for m in self.members.values() if m.alive and m.started]

    def leave(self, member: Member, timeout_s: float = 60.0) -> None:
        """Close `member` cleanly and wait for its process to end."""
        member.conn.send(("leave",))
        member.process.join(timeout_s)
        if member.process.is_alive():
            member.process.kill()
            member.process.join(5)

    def kill(self, member: Member) -> float:
        now = time.monotonic()
        member.process.kill()
        member.process.join(5)
        return now

    def wait_converged(self, since: float, timeout_s: float) -> tuple[bool, float]:
        """Wait until converged (see `converged_since`); returns (converged, when that was seen): the
        window the event's costs are measured over."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            time.sleep(0.2)
            now = time.monotonic()
            tl = timeline(self.log.snapshot(), self.partitions)
            if converged_since(tl, self.partitions, since, now):
                self.quiet = last_change(tl, since) + QUIET_S
                return True, now
        self.quiet = time.monotonic()
        return False, self.quiet

    def owns(self, member: Member) -> bool:
        return bool(timeline(self.log.snapshot(), self.partitions)["held"].get(member.name))

    def wait_owns(self, member: Member, timeout_s: float) -> None:
        """Wait until `member` holds a partition, if the group has one for each member.

        Convergence is a quiet period with every partition owned: a newcomer that has not joined
        yet (a JVM still starting, on a loaded machine) would leave the group quiet and the event
        "over" before anything moved."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and self.partitions >= len(self.live()) and not self.owns(member):
            time.sleep(0.05)

    def close(self) -> None:
        self._producer_stop.set()
        for member in self.members.values():
            if member.process.is_alive():
                member.process.kill()
        for member in self.members.values():
            member.process.join(5)
        self._stop.set()
        self._producer.join(10)
        if self._producer.is_alive():
            self._producer.kill()


@dataclass
class Settings:
    combos: Sequence[tuple[str, str, str]] = COMBOS
    sizes: Sequence[int] = (1, 4, 16)
    partitions: Sequence[int] = (16, 64, 256)
    events: Sequence[str] = EVENTS
    #: Times each join and leave is repeated in a run (the report gives the median).
    repeats: int = 3
    #: Whole runs of every cell; the report gives each measure's median over them.
    runs: int = 1


def _result(
    name: str,
    broker_kind: str,
    n: int,
    p: int,
    event: str,
    group: Group,
    since: float,
    converged: bool,
    until: float,
    note: str = "",
) -> EventResult:
    events = group.log.snapshot()
    full, unowned, longest, duplicates, moved = measure(events, p, since, until)
    release, assign, first = handover_phases(events, since, until)
    result = EventResult(
        name,
        broker_kind,
        n,
        p,
        event,
        converged,
        full,
        unowned,
        longest,
        duplicates,
        moved,
        note,
        release,
        assign,
        first,
    )
    log(
        f"  {event:16} {'' if converged else 'NOT CONVERGED '}full {full:6.2f} s  unowned {unowned:7.2f} "
        f"partition-s  gap {longest:5.2f} s  dup {duplicates}  moved {moved}  "
        f"hand-over {release:.2f} / {assign:.2f} / {first:.2f} s"
    )
    return result


def _settle_timeout(n: int) -> float:
    return 60.0 + TIMERS.session_timeout_ms / 1000 + 2.0 * n


def _dynamic_run(
    name: str,
    broker_kind: str,
    kind: str,
    bootstrap: str,
    n: int,
    p: int,
    events: Sequence[str],
    plan: PhasePlan,
) -> list[EventResult]:
    results: list[EventResult] = []
    group = Group(kind, bootstrap, p, static=False)
    try:
        originals = [group.spawn() for _ in range(n)]
        spare = group.spawn()
        group.form(originals)
        joins = plan.phases(name, broker_kind, n, p, "join")
        leaves = plan.phases(name, broker_kind, n, p, "leave")
        for _ in range(plan.repeats):  # join and leave are cheap: repeat them (heartbeat phases vary)
            if "join" in events:
                joins.wait_after(group.quiet)
                since = group.start(spare)
                group.wait_owns(spare, _settle_timeout(n))
                ok, until = group.wait_converged(since, _settle_timeout(n))
                results.append(_result(name, broker_kind, n, p, "join", group, since, ok, until))
                spare = group.spawn()
            if "leave" in events:
                victim = group.live()[0]
                alone = len(group.live()) == 1
                leaves.wait_after(group.quiet)
                since = time.monotonic()
                group.leave(victim)
                spare, note = _replace_if_alone(group, spare, alone)
                ok, until = group.wait_converged(since, _settle_timeout(n))
                results.append(_result(name, broker_kind, n, p, "leave", group, since, ok, until, note))
                if "join" not in events and not alone:  # the next leave from a group of the same size
                    group.wait_converged(group.start(spare), _settle_timeout(n))
                    spare = group.spawn()
        if "crash" in events:
            victim = group.live()[0]
            alone = len(group.live()) == 1
            plan.phases(name, broker_kind, n, p, "crash").wait_after(group.quiet)
            since = group.kill(victim)
            spare, note = _replace_if_alone(group, spare, alone)
            ok, until = group.wait_converged(since, _settle_timeout(n))
            results.append(_result(name, broker_kind, n, p, "crash", group, since, ok, until, note))
        if "rolling-dynamic" in events:
            results.append(_rolling(name, broker_kind, group, n, p, "rolling-dynamic", spare, plan))
    finally:
        group.close()
    return results


def _replace_if_alone(group: Group, spare: Member, alone: bool) -> tuple[Member, str]:
    """After the group's only member left or crashed, nobody would take its partitions over:
    start `spare` at once. The next spare, and the result's note."""
    if not alone:
        return spare, ""
    group.start(spare)
    return group.spawn(), "only member: a replacement started at once"


def _rolling(
    name: str,
    broker_kind: str,
    group: Group,
    n: int,
    p: int,
    event: str,
    spare: Member | None,
    plan: PhasePlan,
) -> EventResult:
    """Restart every live member, one after the other."""
    plan.phases(name, broker_kind, n, p, event).wait_after(group.quiet)
    since = time.monotonic()
    for old in list(group.live()):
        new = spare if spare is not None and not group.static else group.spawn(old.instance_id)
        spare = None
        group.wait_ready(new)  # the new process is up before the old one goes
        leaving = time.monotonic()
        group.leave(old)
        started = group.start(new)
        group.wait_owns(new, _settle_timeout(n))
        log(
            f"{event} {name} {old.name} -> {new.name}: closed and exited in {started - leaving:.2f} s, "
            f"the newcomer owned a partition {time.monotonic() - started:.2f} s after its start"
        )
    ok, until = group.wait_converged(since, _settle_timeout(n))
    return _result(name, broker_kind, n, p, event, group, since, ok, until)


def _static_run(
    name: str, broker_kind: str, kind: str, bootstrap: str, n: int, p: int, plan: PhasePlan
) -> list[EventResult]:
    group = Group(kind, bootstrap, p, static=True)
    try:
        originals = [group.spawn() for _ in range(n)]
        group.form(originals)
        return [_rolling(name, broker_kind, group, n, p, "rolling-static", None, plan)]
    finally:
        group.close()


def run(settings: Settings) -> list[EventResult]:
    """Every (client, broker, group size, partitions) of the settings, each with its events;
    with `Settings.runs` > 1, the whole set again that many times, each measure the median."""
    plan = PhasePlan(settings.repeats, settings.runs)
    runs = [_one_run(settings, number, plan) for number in range(1, settings.runs + 1)]
    return runs[0] if len(runs) == 1 else medians(runs)


def _one_run(settings: Settings, number: int, plan: PhasePlan) -> list[EventResult]:
    if settings.runs > 1:
        log(f"rebalance: run {number} of {settings.runs}")
    results: list[EventResult] = []
    for p in settings.partitions:
        for broker_kind in dict.fromkeys(c[1] for c in settings.combos):
            with broker(broker_kind, [(TOPIC, p)], TIMERS) as bootstrap:
                for name, kind_broker, kind in settings.combos:
                    if kind_broker != broker_kind:
                        continue
                    for n in settings.sizes:
                        log(f"rebalance: {name} on {broker_kind}, {n} member(s), {p} partitions")
                        dynamic = [e for e in settings.events if e != "rolling-static"]
                        try:
                            if dynamic:
                                results += _dynamic_run(
                                    name, broker_kind, kind, bootstrap, n, p, dynamic, plan
                                )
                            if "rolling-static" in settings.events:
                                results += _static_run(name, broker_kind, kind, bootstrap, n, p, plan)
                        except Exception as exc:  # one broken combination must not sink the rest
                            log(f"  FAILED: {type(exc).__name__}: {exc}")
                            results.append(
                                EventResult(
                                    name,
                                    broker_kind,
                                    n,
                                    p,
                                    "setup",
                                    False,
                                    float("nan"),
                                    float("nan"),
                                    float("nan"),
                                    0,
                                    0,
                                    f"failed: {exc}",
                                )
                            )
    return results
