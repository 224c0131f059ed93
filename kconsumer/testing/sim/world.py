"""One seeded world: topics and a producer, the coordinator host, the network, N member processes
(each the real member core, a runtime and an application), the fault schedule, and the phases of a
run: faults, then quiet until the group converges (liveness), then a drain that checks every record
was processed at least once.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from ...assignment.classic_strategies import CLASSIC_STRATEGIES, is_cooperative
from ...client.member.events import ClockOffset, RequestAssignment
from ...client.member.model import ClassicSettings
from .clocks import ClockPlan
from .exactly_once import ExactlyOnce
from .host import CoordinatorHost, coordinator_config
from .invariants import Checker, Violation
from .liveness import Convergence, converged, pending_records
from .network import Network
from .params import PATTERNS, TOPIC_NAMES, FaultMix, SimParams
from .runtime import SimMember
from .scheduler import Scheduler
from .topics import TopicStore, random_uuid
from .trace import Trace

#: Probe period of the quiet phase (convergence) and of the drain.
PROBE_MS = 50
#: The drain fails when nothing was processed for this long although records are pending.
DRAIN_STALL_MS = 10_000


@dataclass
class SimResult:
    """The outcome of one seed."""

    seed: int
    faults: FaultMix
    params: SimParams
    violations: list[Violation]
    trace_hash: str
    tail: list[str]
    stats: dict[str, int] = field(default_factory=dict)
    #: The members' protocols the seed ran with (see `World`): its replay needs them.
    protocols: str = "consumer"
    #: The members' wall clocks (`clocks`).
    clocks: ClockPlan | None = None

    @property
    def ok(self) -> bool:
        """No invariant broke."""
        return not self.violations

    def report(self, tail_lines: int = 60) -> str:
        """What a failure prints: the seed, its fault mix and world, the violations, the trace tail."""
        lines = [
            f"seed {self.seed}: {'ok' if self.ok else 'VIOLATION'}",
            f"  faults: {self.faults.describe()}",
            f"  world:  {self.params.describe()}",
            f"  clocks: {self.clocks.describe() if self.clocks is not None else '-'}",
        ]
        lines += [f"  {v}" for v in self.violations[:5]]
        if not self.ok:
            lines.append(f"  last {min(tail_lines, len(self.tail))} trace events:")
            lines += [f"    {line}" for line in self.tail[-tail_lines:]]
            protocols = "" if self.protocols == "consumer" else f" --protocols {self.protocols}"
            lines.append(f"  replay: python -m kconsumer.testing.sim --seed {self.seed}{protocols}")
        return "\n".join(lines)


#: What `World`'s members speak: "consumer" (KIP-848 only) or "mixed" (classic members too).
PROTOCOLS = ("consumer", "mixed", "transactional")
CLASSIC_STRATEGY_NAMES = tuple(sorted(CLASSIC_STRATEGIES))


class World:
    """Everything one seed simulates; `run()` plays it and returns the `SimResult`."""

    def __init__(
        self,
        seed: int,
        *,
        verbose: bool = False,
        sink: Callable[[str], None] | None = None,
        only_faults: frozenset[str] | None = None,
        protocols: str = "consumer",
    ) -> None:
        """`protocols` is "consumer" (every member speaks KIP-848) or "mixed" (some speak the
        classic protocol, all with one strategy the seed picks; the group converts between the
        two as members come and go)."""
        if protocols not in PROTOCOLS:
            raise ValueError(f"protocols must be one of {PROTOCOLS}, got {protocols!r}")
        self.seed = seed
        self.protocols = protocols
        self.rng = rng = random.Random(seed)
        self.faults = FaultMix.draw(rng, only_faults)
        self.params = params = SimParams.draw(rng, self.faults)
        if protocols == "transactional":  # offsets are committed in transactions only
            self.params = params = replace(params, auto_commit=False, manual_commit_every=0)
        interval, faulty_ms = params.heartbeat_interval_ms, params.fault_phase_ms
        self.clocks = ClockPlan.draw(seed, params.members, interval, faulty_ms)
        self.sched = Scheduler()
        self.trace = Trace(verbose, sink)
        self.topics = TopicStore(rng)
        for name, partitions in params.topics.items():
            self.topics.create(name, partitions)
        config = coordinator_config(
            params.session_timeout_ms, params.heartbeat_interval_ms, params.assignment_interval_ms
        )
        self.host = CoordinatorHost(self.sched, self.trace, rng, config, self.topics)
        self.net = Network(self.sched, self.trace, rng, params, self.faults, self.host)
        self.checker = Checker(self)
        self.exactly_once = ExactlyOnce(self) if protocols == "transactional" else None
        self.host.checker = self.checker
        self.slots: list[SimMember | None] = [None] * params.members
        self.incarnations = [0] * params.members
        self.injected: Counter[str] = Counter()
        self.quiet = False
        self.producing = True
        self.restarts_pending: set[int] = set()
        homogeneous = rng.random() < 0.5
        shared = self._draw_subscription()
        self.subscriptions = [
            shared if homogeneous else self._draw_subscription() for _ in range(params.members)
        ]
        uses_client = "client_assignor" in self.faults.on
        everyone = rng.random() < 0.8
        self.client_slots = frozenset(
            slot for slot in range(params.members) if uses_client and (everyone or rng.random() < 0.5)
        )
        #: Classic members by slot, with their strategy. Drawn from a generator of their own, so
        #: that the course of a seed with consumer-protocol members only stays what it was.
        self.classic_slots: dict[int, ClassicSettings] = {}
        if protocols == "mixed":
            self.client_slots = frozenset()  # the classic protocol has no client-side assignors
            mix = random.Random(f"{seed}:classic")
            strategy = mix.choice(CLASSIC_STRATEGY_NAMES)
            settings = ClassicSettings(
                (strategy,),
                is_cooperative(strategy),
                session_timeout_ms=params.session_timeout_ms,
                heartbeat_interval_ms=params.heartbeat_interval_ms,
                metadata_refresh_ms=mix.randint(1_000, 4_000),
            )
            self.classic_slots = {slot: settings for slot in range(params.members) if mix.random() < 0.6}

    # -- setup --------------------------------------------------------------------------------------

    def _draw_subscription(self) -> tuple[tuple[str, ...], str | None]:
        rng = self.rng
        if "regex" in self.faults.on and rng.random() < 0.5:
            return (), PATTERNS[rng.randrange(len(PATTERNS))]
        names = [name for name in TOPIC_NAMES if rng.random() < 0.5] or [TOPIC_NAMES[0]]
        return tuple(names), None

    def processes(self) -> list[SimMember]:
        """The live member processes, by slot."""
        return [proc for proc in self.slots if proc is not None and proc.alive]

    def _start_member(self, slot: int) -> None:
        self.restarts_pending.discard(slot)
        self.incarnations[slot] += 1
        if self.exactly_once is not None:
            self.exactly_once.init_producer(slot)
        instance = f"instance-{slot}" if slot in self.params.static_slots else None
        proc = SimMember(
            self,
            slot,
            self.incarnations[slot],
            str(random_uuid(self.rng)),
            instance,
            slot in self.client_slots,
            self.classic_slots.get(slot),
        )
        self.slots[slot] = proc
        topics, pattern = self.subscriptions[slot]
        classic = self.classic_slots.get(slot)
        protocol = "" if classic is None else f" classic={classic.strategies[0]}"
        self.trace.log(
            self.sched.now, proc.label, f"process starts as {proc.member_id} instance={instance}{protocol}"
        )
        self._tell_clock(slot)
        proc.app.begin(topics, pattern)

    def _tell_clock(self, slot: int) -> None:
        """Slot `slot`'s live process hears its wall clock (`clocks`): as it starts, and after its
        clock stepped (held back while it is paused, as the runtime notices at its next event)."""
        proc, offset = self.slots[slot], self.clocks.offset_ms(slot, self.sched.now)
        if proc is not None and proc.alive and offset is not None:
            proc.deliver(proc.handle, ClockOffset(offset))

    def _schedule_restart(self, slot: int) -> None:
        if slot in self.restarts_pending:
            return
        self.restarts_pending.add(slot)
        low, high = self.params.restart_delay_ms
        self.sched.after(self.rng.randint(low, high), self._start_member, slot)

    def member_exited(self, proc: SimMember) -> None:
        """A process ended after closing: a supervisor starts it again later."""
        if self.slots[proc.slot] is proc:
            self._schedule_restart(proc.slot)

    def member_failed(self, proc: SimMember) -> None:
        """A fatal error reached the application: the process exits and is restarted."""
        self.injected["fatal_restart"] += 1
        core_error = proc.core.fatal_error
        code = getattr(core_error, "code", None)
        # Expected: a static member's place still held (UNRELEASED_INSTANCE_ID); and a classic
        # static member whose replacement of its earlier incarnation was not stored yet when the
        # coordinator failed over (the new coordinator knows the old member id: Kafka answers
        # FENCED_INSTANCE_ID there too).
        expected = {"UNRELEASED_INSTANCE_ID"} | ({"FENCED_INSTANCE_ID"} if proc.classic else set())
        if code is None or code.name not in expected:
            self.checker.violation("fatal-error", f"{proc.label} failed: {core_error!r}")

        def exit_now() -> None:
            proc.die("fatal error")
            self.member_exited(proc)

        proc.deliver_after(0, exit_now)

    # -- faults ---------------------------------------------------------------------------------------

    def _schedule_faults(self) -> None:
        end = self.params.fault_phase_ms
        handlers: dict[str, Callable[[], None]] = {
            "drop": self.net.drop_random,
            "partition": self._partition,
            "failover": lambda: self.host.failover(crash=self.rng.random() < 0.5),
            "crash": self._crash,
            "restart": self._restart,
            "pause": self._pause,
            "overrun": self._overrun,
            "slow_callback": self._slow_callback,
            "add_partitions": self._add_partitions,
            "recreate_topic": self._recreate_topic,
            "subscription": self._change_subscription,
            "unsubscribe": self._unsubscribe,
            "assignor_request": self._assignor_request,
        }
        for name in sorted(self.faults.counts):
            for _ in range(self.faults.counts[name]):
                self.sched.at(self.rng.randint(500, end), self._inject, name, handlers[name])

    def _inject(self, name: str, handler: Callable[[], None]) -> None:
        if not self.quiet:
            self.injected[name] += 1
            handler()

    def _victim(self) -> SimMember | None:
        live = [proc for proc in self.processes() if not proc.paused]
        return live[self.rng.randrange(len(live))] if live else None

    def _partition(self) -> None:
        session = self.params.session_timeout_ms
        self.net.isolate(self.rng.randrange(self.params.members), self.rng.randint(session // 2, session * 2))

    def _crash(self) -> None:
        proc = self._victim()
        if proc is not None:
            proc.die("crashed")
            self._schedule_restart(proc.slot)

    def _restart(self) -> None:
        proc = self._victim()
        if proc is not None:
            self.trace.log(self.sched.now, "fault", f"{proc.label} closes (restart)")
            proc.app.call(proc.app.close)

    def _pause(self) -> None:
        proc = self._victim()
        if proc is not None:
            session = self.params.session_timeout_ms
            duration = self.rng.randint(session // 3, session * 2)
            proc.paused_until = self.sched.now + duration
            self.trace.log(self.sched.now, "fault", f"{proc.label} paused for {duration} ms")

    def _overrun(self) -> None:
        proc = self._victim()
        if proc is not None:
            max_poll = self.params.max_poll_interval_ms
            duration = self.rng.randint(max_poll + 200, max_poll * 2)
            proc.app.stall_until = max(proc.app.stall_until, self.sched.now + duration)
            self.trace.log(self.sched.now, "fault", f"{proc.label} stops polling for {duration} ms")

    def _slow_callback(self) -> None:
        proc = self._victim()
        if proc is not None:
            proc.app.slow_callbacks += 1

    def _add_partitions(self) -> None:
        missing = [name for name in TOPIC_NAMES if name not in self.topics.live]
        if missing and self.rng.random() < 0.3:
            name = missing[self.rng.randrange(len(missing))]
            topic = self.topics.create(name, self.rng.randint(1, 4))
            self.trace.log(self.sched.now, "fault", f"create {name} with {topic.num_partitions} partitions")
        else:
            names = sorted(name for name, t in self.topics.live.items() if t.num_partitions < 8)
            if not names:
                return
            name = names[self.rng.randrange(len(names))]
            topic = self.topics.add_partitions(name, self.rng.randint(1, 2))
            self.trace.log(self.sched.now, "fault", f"{name} grows to {topic.num_partitions} partitions")
        self.host.publish_metadata()

    def _recreate_topic(self) -> None:
        names = sorted(self.topics.live)
        if not names:
            return
        name = names[self.rng.randrange(len(names))]
        self.topics.delete(name)
        self.trace.log(self.sched.now, "fault", f"delete {name}")
        self.host.publish_metadata()
        self.sched.after(self.rng.randint(0, 3_000), self._create_again, name)

    def _create_again(self, name: str) -> None:
        if name not in self.topics.live:
            topic = self.topics.create(name, self.rng.randint(1, 4))
            self.trace.log(self.sched.now, "fault", f"recreate {name} with {topic.num_partitions} partitions")
            self.host.publish_metadata()

    def _change_subscription(self) -> None:
        proc = self._victim()
        if proc is None or proc.app.leaving is not None:
            return
        subscription = self._draw_subscription()
        self.subscriptions[proc.slot] = subscription
        self.trace.log(
            self.sched.now, "fault", f"{proc.label} subscribes to {subscription[1] or subscription[0]}"
        )
        proc.app.call(lambda: proc.app.subscribe(*subscription))

    def _unsubscribe(self) -> None:
        proc = self._victim()
        if proc is None or proc.app.leaving is not None:
            return
        self.trace.log(self.sched.now, "fault", f"{proc.label} unsubscribes")
        delay = self.rng.randint(200, 3_000)

        def unsubscribe() -> None:
            proc.app.unsubscribe()
            proc.deliver_after(delay, self._resubscribe, proc)

        proc.app.call(unsubscribe)

    def _resubscribe(self, proc: SimMember) -> None:
        """Subscribe `proc` again (its slot's subscription) once its unsubscribe is done."""
        if proc.app.leaving is not None:
            proc.deliver_after(100, self._resubscribe, proc)
        elif not proc.app.subscribed:
            subscription = self.subscriptions[proc.slot]
            proc.app.call(lambda: proc.app.subscribe(*subscription))

    def _assignor_request(self) -> None:
        candidates = [proc for proc in self.processes() if proc.client_assignors and not proc.paused]
        if candidates:
            proc = candidates[self.rng.randrange(len(candidates))]
            self.trace.log(self.sched.now, "fault", f"{proc.label} asks for a new assignment")
            proc.app.call(lambda: proc.post(RequestAssignment(1)))

    # -- producer -------------------------------------------------------------------------------------

    def _produce(self) -> None:
        if not self.producing:
            return
        produced = self.topics.produce()
        if produced is not None:
            key, count = produced
            self.trace.log(
                self.sched.now, "prod", f"{self.topics.short(key)} +{count} -> {self.topics.hw[key]}"
            )
        every = self.params.produce_every_ms
        self.sched.after(self.rng.randint(every // 2, every * 3 // 2), self._produce)

    # -- the run ----------------------------------------------------------------------------------------

    def liveness_bound_ms(self) -> int:
        """How long after the faults stop the group must have converged (see docs/simulation.md)."""
        p = self.params
        return 2 * p.max_poll_interval_ms + 3 * p.session_timeout_ms + 20 * p.heartbeat_interval_ms + 10_000

    def _stop(self) -> bool:
        return bool(self.checker.violations)

    def run(self) -> SimResult:
        """Play the seed: faults, quiet phase (liveness), drain (at-least-once)."""
        self.trace.log(0, "seed", f"{self.seed} faults: {self.faults.describe()}")
        self.trace.log(0, "seed", f"world: {self.params.describe()} {self.clocks.describe()}")
        for slot in range(self.params.members):
            self.sched.at(self.rng.randint(0, 1_500), self._start_member, slot)
        for step in self.clocks.steps:
            self.sched.at(step.at_ms, self._tell_clock, step.slot)
        self.sched.after(0, self._produce)
        self._schedule_faults()
        sched = self.sched
        stats: dict[str, int] = {}
        try:
            sched.run_until(self.params.fault_phase_ms, self._stop)
            if not self._stop():
                self._quiet_phase(stats)
            if not self._stop():
                self._drain(stats)
            if not self._stop() and self.exactly_once is not None:
                self._settle_transactions(stats)
        except Exception as exc:  # a core raised: that is a finding too
            import traceback

            detail = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)[-6:])
            self.checker.violation("exception", f"{type(exc).__name__}: {exc}\n{detail}")
        zombies = self.checker.zombies
        stats.update(
            sim_ms=sched.now,
            steps=sched.steps,
            zombie_episodes=zombies.episodes,
            zombie_fetch_ms=zombies.fetch_ms,
            zombie_longest_ms=zombies.longest_ms,
            zombie_records=zombies.records,
            group_epoch=self.checker.max_group_epoch,
            failovers=self.host.failovers,
            records=sum(self.topics.hw.values()),
            classic_members=len(self.classic_slots),
        )
        stats.update({f"injected_{name}": n for name, n in sorted(self.injected.items())})
        return SimResult(
            self.seed,
            self.faults,
            self.params,
            list(self.checker.violations),
            self.trace.digest,
            list(self.trace.tail),
            stats,
            self.protocols,
            self.clocks,
        )

    def _quiet_phase(self, stats: dict[str, int]) -> None:
        sched = self.sched
        start = sched.now
        self.quiet = True
        self.net.end_faults()
        self.host.end_faults()
        self.trace.log(start, "phase", "faults stop")
        for proc in self.processes():
            proc.app.slow_callbacks = 0
            if not proc.app.subscribed:
                self._resubscribe(proc)
        for slot, process in enumerate(self.slots):
            if (process is None or not process.alive) and slot not in self.restarts_pending:
                self._schedule_restart(slot)
        deadline = start + self.liveness_bound_ms()
        state = Convergence()
        while sched.now < deadline and not self._stop():
            sched.run_until(sched.now + PROBE_MS, self._stop)
            if converged(self, state):
                stats["converge_ms"] = sched.now - start
                self.trace.log(sched.now, "phase", f"converged at group epoch {state.epoch}")
                return
        if not self._stop():
            self.checker.violation(
                "liveness",
                f"no convergence within {deadline - start} ms after the faults stopped: {state.reason}",
            )

    def _settle_transactions(self, stats: dict[str, int]) -> None:
        """Exactly once: wait for the transactions in flight and the reprocessing of aborted
        ones, then check that the committed output holds every record (`exactly_once`)."""
        eos = self.exactly_once
        assert eos is not None
        sched = self.sched
        deadline = sched.now + self.drain_bound_ms()
        while sched.now < deadline and not self._stop():
            if not eos.in_flight() and not eos.missing():
                break
            sched.run_until(sched.now + PROBE_MS, self._stop)
        eos.check_complete()
        stats.update({f"txn_{name}": n for name, n in eos.stats.items()})

    def drain_bound_ms(self) -> int:
        """How long the drain may take: every member reprocessing all of its partitions from the
        start (nothing committed) at its slowest rate, plus `DRAIN_STALL_MS`."""
        p = self.params
        work = 0
        for keys in self.host.assignments().values():
            work = max(work, sum(self.topics.hw.get(key, 0) for key in keys))
        per_poll_ms = p.poll_gap_ms[1] + p.max_records_per_poll * p.record_cost_ms
        return DRAIN_STALL_MS + -(-work // p.max_records_per_poll) * per_poll_ms

    def _drain(self, stats: dict[str, int]) -> None:
        sched = self.sched
        self.producing = False
        start = last_progress = sched.now
        deadline = start + self.drain_bound_ms()
        self.trace.log(start, "phase", "producer stops; draining")
        processed = self.checker.records_processed
        left = pending_records(self)
        while left and not self._stop():
            sched.run_until(sched.now + PROBE_MS, self._stop)
            left = pending_records(self)
            if self.checker.records_processed > processed:  # reprocessing is progress too
                processed, last_progress = self.checker.records_processed, sched.now
            if left and (sched.now - last_progress > DRAIN_STALL_MS or sched.now > deadline):
                why = "drain bound passed" if sched.now > deadline else f"no progress for {DRAIN_STALL_MS} ms"
                self.checker.violation(
                    "at-least-once", f"{left} records of subscribed partitions were never processed ({why})"
                )
                return
        stats["drain_ms"] = sched.now - start


def run_seed(
    seed: int,
    *,
    verbose: bool = False,
    sink: Callable[[str], None] | None = None,
    only_faults: frozenset[str] | None = None,
    protocols: str = "consumer",
) -> SimResult:
    """Simulate one seed and return its result (`protocols`: see `World`)."""
    return World(seed, verbose=verbose, sink=sink, only_faults=only_faults, protocols=protocols).run()
