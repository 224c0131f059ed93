"""One seed of the worker-group simulation: the world, its faults, the checks, the result."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ...errors import ErrorCode
from ..sim.trace import Trace
from .checks import Violation
from .classic import SimClassicWorker
from .world import REASON_REQUESTED, SimWorker, World, WorldParams

#: After the faults stop, the world must settle within this much time beyond its timeouts.
SETTLE_MARGIN_MS = 20_000
#: Steps at one simulated instant that mean something reschedules itself forever.
LIVELOCK_STEPS = 20_000


@dataclass
class WorkerSimResult:
    seed: int
    violations: list[Violation]
    trace_hash: str
    tail: list[str]
    faults: dict[str, int] = field(default_factory=dict)
    restarts: int = 0
    protocols: str = "connect"

    @property
    def ok(self) -> bool:
        return not self.violations

    def report(self) -> str:
        lines = [f"seed {self.seed}: {'ok' if self.ok else 'VIOLATION'}  faults: {self.faults}"]
        lines += [f"  {v}" for v in self.violations]
        if not self.ok:
            lines += self.tail
            mixed = " --protocols mixed" if self.protocols == "mixed" else ""
            lines.append(f"  replay: python -m kconsumer.testing.worker_sim --seed {self.seed}{mixed}")
        return "\n".join(lines)


class _Faults:
    """Draws and applies the seed's faults until the fault phase ends."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.counts: dict[str, int] = {}
        self.restarts = 0
        self._instances = 0

    def start(self) -> None:
        world = self.world
        for _ in range(world.params.workers):
            world.sched.after(world.rng.randrange(0, 2_000), self._join)
        time = world.rng.randrange(1_000, 4_000)
        while time < world.params.fault_end_ms:
            world.sched.at(time, self._fault)
            time += world.rng.randrange(1_000, 6_000)

    def _join(self, instance_id: str | None = None) -> None:
        if instance_id is None and self.world.params.static:
            self._instances += 1
            instance_id = f"i{self._instances}"
        self.world.add_worker(instance_id)

    def _count(self, kind: str) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + 1

    def _fault(self) -> None:
        world, rng = self.world, self.world.rng
        live = [w for w in world.live() if w.core.state.value not in ("closed", "failed")]
        kinds: list[tuple[str, Callable[[], None]]] = [
            ("join", self._join_later),
            ("work", self._change_work),
        ]
        if live:
            victim = rng.choice(live)
            kinds += [
                ("crash", lambda: self._crash(victim)),
                ("partition", lambda: self._partition(victim)),
                ("close", lambda: self._close(victim)),
                ("failover", world.fail_over),
            ]
        kind, action = rng.choice(kinds)
        self._count(kind)
        world.trace.log(world.sched.now, "fault", kind)
        action()

    def _join_later(self) -> None:
        self._join()

    def _crash(self, victim: SimWorker) -> None:
        self.world.trace.log(self.world.sched.now, victim.label, "crashes")
        victim.crash()
        self._restart(victim)

    def _close(self, victim: SimWorker) -> None:
        victim.feed(victim.core.close(self.world.sched.now))
        self._restart(victim)

    def _restart(self, victim: SimWorker) -> None:
        """Sometimes the process comes back (a static one with its instance id)."""
        rng = self.world.rng
        if victim.restarted:
            return  # closed again while it was leaving: one process comes back, not two
        victim.restarted = True
        if rng.random() < 0.6:
            instance = victim.core.settings.instance_id
            self.world.sched.after(rng.randrange(100, 6_000), self._join_after, victim, instance)

    def _join_after(self, previous: SimWorker, instance_id: str | None) -> None:
        """The new process starts once the previous one has exited (as an orchestrator
        restarts a process): a closing one may still be stopping its units."""
        if previous.alive and previous.core.state.value not in ("closed", "failed"):
            self.world.sched.after(100, self._join_after, previous, instance_id)
            return
        self._join(instance_id)

    def _partition(self, victim: SimWorker) -> None:
        world = self.world
        length = world.rng.randrange(200, 2 * world.params.session_ms)
        victim.cut_off_until = min(world.sched.now + length, world.params.fault_end_ms)
        world.trace.log(world.sched.now, victim.label, f"cut off until {victim.cut_off_until}")

    def _change_work(self) -> None:
        world, rng = self.world, self.world.rng
        names = sorted(world.work)
        choice = rng.random()
        if choice < 0.4 or not names:
            world.work[f"c{len(names) + rng.randrange(10, 99)}"] = rng.randrange(0, 4)
        elif choice < 0.7:
            world.work[rng.choice(names)] = rng.randrange(0, 5)
        else:
            del world.work[rng.choice(names)]
        world.trace.log(world.sched.now, "work", str(sorted(world.work.items())))
        live = [w for w in world.live() if w.core.state.value in ("stable", "reconciling", "joining")]
        if live:
            asker = rng.choice(live)
            asker.feed(asker.core.request_rebalance(REASON_REQUESTED, world.sched.now))

    def retry_unreleased(self) -> None:
        """A static worker refused UNRELEASED_INSTANCE_ID (its previous process is still in the
        group) is a process that exits; it is started again a little later. So is a classic
        static worker fenced (FENCED_INSTANCE_ID) because its replacement of its previous
        process was not stored yet when the coordinator failed over (Kafka's classic groups
        answer the same)."""
        world = self.world
        for worker in world.live():
            failure = worker.core.error
            if failure is not None and failure.error in _expected_failures(worker):
                worker.crash()
                self.restarts += 1
                world.sched.after(1_000, self._join, worker.core.settings.instance_id)


def _expected_failures(worker: SimWorker) -> set[ErrorCode]:
    if worker.kind_classic:
        return {ErrorCode.UNRELEASED_INSTANCE_ID, ErrorCode.FENCED_INSTANCE_ID}
    return {ErrorCode.UNRELEASED_INSTANCE_ID}


#: ``connect``: every worker on the new protocol; ``mixed``: half of them classic.
PROTOCOLS = ("connect", "mixed")


def run_seed(seed: int, verbose: bool = False, protocols: str = "connect") -> WorkerSimResult:
    """Run one seed to its end (the first violation stops it)."""
    if protocols not in PROTOCOLS:
        raise ValueError(f"protocols must be one of {PROTOCOLS}, got {protocols!r}")
    trace = Trace(verbose=verbose, sink=print)
    params = WorldParams.draw(__import__("random").Random(seed * 7919 + 1))
    world = World(seed, params, trace, SimClassicWorker if protocols == "mixed" else None)
    trace.log(0, "seed", f"{seed} {params}")
    faults = _Faults(world)
    faults.start()

    same_time = {"at": -1, "steps": 0}

    def after_step() -> None:
        if same_time["at"] == world.sched.now:
            same_time["steps"] += 1
            if same_time["steps"] == LIVELOCK_STEPS:
                world.checks.violation("livelock", f"{LIVELOCK_STEPS} steps without the clock moving")
        else:
            same_time["at"], same_time["steps"] = world.sched.now, 0
        world.checks.after_step()
        if world.failures:
            faults.retry_unreleased()
            unexpected = [m for w, code, m in world.failures if code not in _expected_failures(w)]
            world.failures.clear()
            for failure in unexpected:
                world.checks.violation("failed", failure)

    world.sched.after_step = after_step
    stop = lambda: bool(world.checks.violations)  # noqa: E731
    world.sched.run_until(params.fault_end_ms, stop)
    if not world.checks.violations:
        staying = ("joining", "stable", "reconciling", "losing")
        if not [w for w in world.live() if w.core.state.value in staying]:
            faults._join()  # a group whose last worker left: a new one starts
        bound = (
            params.fault_end_ms
            + 2 * params.session_ms
            + params.rebalance_ms
            + params.delay_ms
            + SETTLE_MARGIN_MS
        )
        if world.classic_kind is not None:
            # A classic JoinGroup or SyncGroup whose answer is lost is given up only after its
            # long timeout (a rebalance timeout and 5 s): allow two of them.
            bound += 2 * (params.rebalance_ms + 5_000)
        while not world.checks.violations and world.sched.now < bound:
            world.sched.run_until(world.sched.now + 250, stop)
            if world.checks.converged():
                break
        else:
            if not world.checks.violations:
                world.checks.violation("converges", f"not settled: {world.checks.convergence_reason}")
    return WorkerSimResult(
        seed,
        world.checks.violations,
        trace.digest,
        list(trace.tail),
        faults.counts,
        faults.restarts,
        protocols,
    )
