"""The worker-group simulation's world: the reference coordinator (sans-IO), workers that run the
shipped `WorkerCore` and the shipped assignors, an application per worker whose callbacks take
simulated time, and a network with latency, lost answers and partitions. Faults are drawn from
the seed; `checks` watches the invariants.

Everything runs on the simulated clock (`testing.sim.scheduler`), so a seed replays exactly.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...assignment.work_units import WorkUnits
from ...broker.coordinator import GroupCoordinator
from ...broker.coordinator.classic.replies import Deferred
from ...broker.coordinator.config import CoordinatorConfig
from ...errors import ErrorCode
from ...protocol.api import ApiKey
from ...protocol.messages.worker_group import (
    ConnectGroupHeartbeatResponse,
    ConnectGroupPrepareAssignmentRequest,
    ConnectGroupPrepareAssignmentResponse,
)
from ...protocol.schema import Message
from ...workers.assignors import IncrementalCooperativeAssignor, RoundRobinAssignor, WorkerAssignor
from ...workers.computation import (
    REASON_REQUESTED,
    REASON_WORK_CHANGED,
    compute,
    install_request,
    note_rebalances,
    still_due,
)
from ...workers.core import (
    AssignmentNote,
    ComputeAssignment,
    Failed,
    RunCallback,
    SendHeartbeat,
    WorkerCore,
    WorkerSettings,
)
from ...workers.runner import announce
from ..sim.scheduler import Scheduler
from ..sim.trace import Trace

GROUP = "workers"
#: How often each worker compares the declared work with its assignment's (the runner's
#: ``work.check.interval.ms``).
WORK_CHECK_MS = 5_000
#: The versions the simulation's classic workers speak (the worker APIs have version 0 only).
CLASSIC_VERSIONS = {ApiKey.JOIN_GROUP: 5, ApiKey.SYNC_GROUP: 5, ApiKey.HEARTBEAT: 4, ApiKey.LEAVE_GROUP: 5}


@dataclass(frozen=True)
class WorldParams:
    """What a seed draws: timeouts, the network's faults, the workers and their work."""

    session_ms: int
    rebalance_ms: int
    lease_ms: int
    heartbeat_ms: int
    callback_max_ms: int
    latency_max_ms: int
    lost_answer_p: float
    request_timeout_ms: int
    delay_ms: int
    assignor: str
    workers: int
    static: bool
    fault_end_ms: int

    @staticmethod
    def draw(rng: random.Random) -> WorldParams:
        session = rng.randrange(3_000, 10_001, 500)
        rebalance = rng.randrange(3_000, 10_001, 500)
        lease = int(min(session, rebalance) * rng.uniform(0.4, 0.7))
        gap = min(session, rebalance) - lease
        # A heartbeat and its answer fit well within the lease (docs/workers.md, the lease):
        # else the lease runs out between two answered heartbeats, over and over.
        heartbeat = rng.randrange(200, max(lease // 4, 201), 100)
        latency = rng.choice([5, 50, 300])
        return WorldParams(
            session_ms=session,
            rebalance_ms=rebalance,
            lease_ms=lease,
            heartbeat_ms=heartbeat,
            callback_max_ms=rng.randrange(0, max(gap // 3, 1)),
            latency_max_ms=latency,
            lost_answer_p=rng.choice([0.0, 0.02, 0.1]),
            request_timeout_ms=rng.randrange(max(2 * latency, 250), max(lease // 4, 2 * latency + 1), 50),
            delay_ms=rng.choice([0, 0, 2_000, 8_000]),
            assignor=rng.choice(["incremental", "incremental", "round-robin"]),
            workers=rng.randrange(1, 5),
            static=rng.random() < 0.3,
            fault_end_ms=rng.randrange(10_000, 40_001, 1_000),
        )


@dataclass
class App:
    """What a worker's application runs, and its callback in progress."""

    running: set[str] = field(default_factory=set)
    busy: RunCallback | None = None


class SimWorker:
    """One worker process: the shipped core, its assignors, its application."""

    def __init__(self, world: World, label: str, member_id: str, instance_id: str | None) -> None:
        self.world = world
        self.label = label
        params = world.params
        settings = WorkerSettings(GROUP, member_id, instance_id, params.rebalance_ms, params.lease_ms)
        self.assignors: dict[str, WorkerAssignor] = {
            "incremental": IncrementalCooperativeAssignor(params.delay_ms),
            "round-robin": RoundRobinAssignor(),
        }
        order = [self.assignors[params.assignor]] + [
            a for n, a in self.assignors.items() if n != params.assignor
        ]
        self.order = order
        self.core: Any = self.make_core(settings)
        self.app = App()
        self.alive = True
        self.cut_off_until = 0
        #: Its restart (a new process, same instance id) was decided: it happens once.
        self.restarted = False
        self._tick_at: int | None = None

    #: Whether it speaks Connect's classic protocol.
    kind_classic = False

    def make_core(self, settings: WorkerSettings) -> Any:
        return WorkerCore(settings, [announce(a) for a in self.order])

    @property
    def member_id(self) -> str:
        return str(self.core.member_id)

    def cut_off(self) -> bool:
        return self.world.sched.now < self.cut_off_until

    def feed(self, effects: Sequence[object]) -> None:
        """Carry out the core's effects, then make sure it is ticked when due."""
        if not self.alive:
            return
        for effect in effects:
            self.world.trace.log(self.world.sched.now, self.label, type(effect).__name__ + _describe(effect))
            if isinstance(effect, RunCallback):
                self._run_callback(effect)
            elif isinstance(effect, Failed):
                message = f"{self.label} failed: {effect.error.name} {effect.message}"
                self.world.failures.append((self, effect.error, message))
            else:
                self._carry_out(effect)
        self._schedule_tick()

    def _carry_out(self, effect: object) -> None:
        if isinstance(effect, SendHeartbeat):
            self.world.send(self, effect.request, self._answered)
        elif isinstance(effect, ComputeAssignment):
            self._compute(effect.member_epoch)
        elif isinstance(effect, AssignmentNote):
            self._read_note(effect.metadata)

    def _schedule_tick(self) -> None:
        deadline = self.core.next_deadline()
        if deadline is not None and (self._tick_at is None or deadline < self._tick_at):
            self._tick_at = deadline
            self.world.sched.at(deadline, self._tick)

    def _tick(self) -> None:
        self._tick_at = None
        if self.alive:
            self.feed(self.core.tick(self.world.sched.now))

    def _answered(self, response: Message | None, sent_ms: int) -> None:
        now = self.world.sched.now
        if response is None:
            self.feed(self.core.failed(now))
        else:
            assert isinstance(response, ConnectGroupHeartbeatResponse)
            self.feed(self.core.answered(response, sent_ms, now))

    def _run_callback(self, work: RunCallback) -> None:
        self.app.busy = work
        labels = set(work.units)
        if work.kind.value == "on_assigned":
            self.world.checks.starting(self, labels)
            self.app.running |= labels
        duration = self.world.rng.randrange(0, self.world.params.callback_max_ms + 1)
        self.world.sched.after(duration, self._callback_done, work)

    def _callback_done(self, work: RunCallback) -> None:
        if not self.alive:
            return
        if work.kind.value != "on_assigned":
            self.app.running -= set(work.units)
        self.app.busy = None
        self.feed(self.core.callback_done(self.world.sched.now))

    def _compute(self, member_epoch: int) -> None:
        request = ConnectGroupPrepareAssignmentRequest(
            group_id=GROUP, member_id=self.member_id, member_epoch=member_epoch
        )
        self.world.send(self, request, lambda response, _sent: self._prepared(response, member_epoch))

    def _prepared(self, response: Message | None, member_epoch: int) -> None:
        if not isinstance(response, ConnectGroupPrepareAssignmentResponse) or response.error_code:
            return
        computed = compute(self.assignors, response, self.world.declared, self.world.sched.now)
        if computed is None:
            return
        install = install_request(GROUP, self.member_id, member_epoch, response, computed)
        self.world.send(self, install, lambda answer, _sent: self._installed(answer))

    def _installed(self, response: Message | None) -> None:
        if response is None or getattr(response, "error_code", True):
            return
        now = self.world.sched.now
        self.world.trace.log(now, self.label, "installed")
        self.feed(self.core.heartbeat_now(now))

    def _read_note(self, metadata: bytes) -> None:
        """As the runner: ask for the rebalances the note calls for, each at its time."""
        for reason, at_ms in note_rebalances(metadata, self.world.declared, self.member_id):
            if at_ms is None:
                self._ask_rebalance(reason)
            else:
                self.world.sched.at(at_ms, self._ask_if_due, reason, at_ms)

    def _ask_if_due(self, reason: int, at_ms: int) -> None:
        if still_due(self.core.assignment_metadata, at_ms, self.member_id):
            self._ask_rebalance(reason)

    def check_work(self) -> None:
        """As the runner: ask for a rebalance when the assignment was made for other work."""
        if self.alive and self.core.state.value == "stable" and self.core.outdated(self.world.declared()):
            self._ask_rebalance(REASON_WORK_CHANGED)

    def _watch_work(self) -> None:
        """As the runner's periodic check (`WORK_CHECK_MS`)."""
        if not self.alive or self.core.state.value in ("closed", "failed"):
            return
        self.check_work()
        self.world.sched.after(WORK_CHECK_MS, self._watch_work)

    def _ask_rebalance(self, reason: int) -> None:
        self.world.trace.log(self.world.sched.now, self.label, f"asks for a rebalance ({reason})")
        if self.alive and self.core.state.value not in ("closed", "failed"):
            self.feed(self.core.request_rebalance(reason, self.world.sched.now))

    def crash(self) -> None:
        """The process dies: it runs nothing from now on, sends nothing, hears nothing."""
        self.alive = False
        self.app.running.clear()


class World:
    """The coordinator, the workers, the network and the declared work."""

    def __init__(
        self, seed: int, params: WorldParams, trace: Trace, classic_kind: type[SimWorker] | None = None
    ) -> None:
        from .checks import Checks

        self.seed = seed
        self.params = params
        self.rng = random.Random(seed)
        self.sched = Scheduler()
        self.trace = trace
        config = CoordinatorConfig(
            session_timeout_ms=params.session_ms,
            heartbeat_interval_ms=params.heartbeat_ms,
            classic_min_session_timeout_ms=1_000,  # classic workers use the seed's session timeout
        )
        # Member ids the coordinator hands out (classic joins) count on across failovers, as a
        # server's random ones never repeat.
        handed_out = iter(range(1, 2**62))
        self._new_member_id = lambda: f"m{next(handed_out)}"
        self.coordinator = GroupCoordinator(config, new_member_id=self._new_member_id)
        self.coordinator_generation = 0
        self.workers: list[SimWorker] = []
        self.work: dict[str, int] = {
            f"c{i}": self.rng.randrange(0, 4) for i in range(self.rng.randrange(1, 5))
        }
        #: (worker, error, message) of each worker that failed (error None: no protocol error).
        self.failures: list[tuple[SimWorker, ErrorCode | None, str]] = []
        #: None: every worker on the new protocol. Else each new worker is, by a coin toss, one of
        #: this kind (Connect's JoinGroup protocol), so the group is converted back and forth.
        self.classic_kind = classic_kind
        #: Classic JoinGroup / SyncGroup answers the coordinator gives later, by ticket.
        self.waiting: dict[int, Callable[[Message], None]] = {}
        self._ids = 0
        self.checks = Checks(self)
        self._poll_at: int | None = None

    def declared(self) -> WorkUnits:
        tasks = [(name, task) for name, count in self.work.items() for task in range(count)]
        return WorkUnits.of(self.work, tasks)

    # -- workers --------------------------------------------------------------------------------

    def add_worker(self, instance_id: str | None = None) -> SimWorker:
        self._ids += 1
        member_id = f"{self.rng.getrandbits(64):016x}"
        kind = self.classic_kind if self.classic_kind and self.rng.random() < 0.5 else SimWorker
        label = f"w{self._ids}" + ("c" if kind is not SimWorker else "")
        worker = kind(self, label, member_id, instance_id)
        self.workers.append(worker)
        self.trace.log(self.sched.now, worker.label, f"starts as {member_id} instance={instance_id}")
        worker.feed(worker.core.start(self.sched.now))
        self.sched.after(WORK_CHECK_MS, worker._watch_work)
        return worker

    def live(self) -> list[SimWorker]:
        return [w for w in self.workers if w.alive]

    # -- the network ----------------------------------------------------------------------------

    def send(self, worker: SimWorker, request: Any, answer: Any, timeout_ms: int | None = None) -> None:
        """Deliver `request` after a latency and `answer(response, sent_ms)` after another; a
        cut-off worker's request, or an answer lost on the way, reaches `answer(None, sent)`
        after the request timeout (the request may have been processed all the same)."""
        sent, params, generation = self.sched.now, self.params, self.coordinator_generation
        timeout_at = sent + (params.request_timeout_ms if timeout_ms is None else timeout_ms)
        done = {"answered": False}

        def fail() -> None:
            if not done["answered"] and worker.alive:
                done["answered"] = True
                answer(None, sent)

        self.sched.at(timeout_at, fail)
        if worker.cut_off():
            return

        def arrive() -> None:
            if generation != self.coordinator_generation:
                return  # the coordinator it was sent to is gone
            version = CLASSIC_VERSIONS.get(request.API_KEY, 0)
            response = self.coordinator.handle(request, version, self.sched.now, worker.label, "sim").response
            if isinstance(response, Deferred):
                self.waiting[response.ticket] = deliver
            else:
                deliver(response)
            self._answer_waiting()
            self._schedule_poll()

        def deliver(response: Message) -> None:
            lost = self.rng.random() < params.lost_answer_p and self.sched.now < params.fault_end_ms
            if lost or worker.cut_off():
                return

            def back() -> None:
                if not done["answered"] and worker.alive:
                    done["answered"] = True
                    answer(response, sent)

            self.sched.after(self.rng.randrange(0, params.latency_max_ms + 1), back)

        self.sched.after(self.rng.randrange(0, params.latency_max_ms + 1), arrive)

    # -- the coordinator's timers and failover --------------------------------------------------

    def _schedule_poll(self) -> None:
        deadline = self.coordinator.next_deadline()
        if deadline is not None and (self._poll_at is None or deadline < self._poll_at):
            self._poll_at = deadline
            self.sched.at(deadline, self._poll)

    def _answer_waiting(self) -> None:
        for ticket, response in self.coordinator.take_replies():
            deliver = self.waiting.pop(ticket, None)
            if deliver is not None:
                deliver(response)

    def _poll(self) -> None:
        self._poll_at = None
        records = self.coordinator.poll(self.sched.now)
        self._answer_waiting()
        if records:
            self.trace.log(self.sched.now, "coord", f"timers: {len(records)} records")
        self._schedule_poll()

    def fail_over(self) -> None:
        """A new coordinator replays the old one's log; requests in flight are lost."""
        old = self.coordinator
        self.waiting.clear()  # waiting JoinGroup / SyncGroup requests are lost with it
        self.coordinator = GroupCoordinator.replaying(
            list(old.log or ()), self.sched.now, old.config, new_member_id=self._new_member_id
        )
        self.coordinator_generation += 1
        self._poll_at = None
        self._schedule_poll()
        self.trace.log(self.sched.now, "coord", "failed over")


def _describe(effect: object) -> str:
    if isinstance(effect, SendHeartbeat):
        r = effect.request
        owned = "-" if r.owned is None else str(WorkUnits.from_wire(r.owned))
        return f"(e{r.member_epoch}, owned={owned})"
    if isinstance(effect, RunCallback):
        return f"({effect.kind.value} {effect.units})"
    return ""


__all__ = ["REASON_REQUESTED", "SimWorker", "World", "WorldParams"]
