"""One simulated member process: the real `MemberSession` (the one the asyncio runtime drives, with
the real member core inside), the I/O that executes its effects on the simulated network and
clock, and its application (`app.SimApp`).

Like `kconsumer/client/runtime/member_runtime.py`, this module decides nothing: the session finds
the coordinator, negotiates versions, builds every request and interprets every answer. What is
simulated is only the I/O: `SendRequest` goes out on one connection per broker (opened on demand,
with the network's latency and faults), `RunAssignor` runs the assignor after a short delay,
`ApplicationWork` goes to the application's queue, and the session's ``next_deadline`` arms one
timer.

Everything addressed to the process goes through `deliver`: dropped once the process is dead,
held back while it is paused (stop-the-world) and delivered in order when it resumes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...assignment.builtin import RangeAssignor, UniformAssignor
from ...client.member import MemberConfig, MemberCore, MemberSession, OffsetReset
from ...client.member.effects import AnswerQuery, ApplicationWork, Effect, RunAssignor, SendRequest
from ...client.member.events import AssignorFinished, Event, RequestFailed, ResponseReceived, Tick
from ...client.member.model import ClassicSettings, ClientAssignor
from ...errors import ErrorCode
from .app import SimApp
from .brokers import BOOTSTRAP, broker_of
from .host import GROUP
from .network import Link, Pending
from .texts import effect_text, event_text

if TYPE_CHECKING:
    from .world import World

#: A client-side assignor every simulated member announces when the seed uses one.
CLIENT_ASSIGNOR = ClientAssignor("sim", minimum_version=0, maximum_version=1, metadata_version=0)
#: Ticks at one simulated millisecond after which the session is in a busy loop (a bug).
_BUSY_TICKS = 100
#: The algorithms behind the "sim" client-side assignor, by the seed's choice.
_CLIENT_ALGORITHMS = {"uniform": UniformAssignor, "range": RangeAssignor}


class SimMember:
    """One member process (an incarnation of member slot `slot`)."""

    def __init__(
        self,
        world: World,
        slot: int,
        incarnation: int,
        member_id: str,
        instance_id: str | None,
        client_assignors: bool,
        classic: ClassicSettings | None = None,
    ) -> None:
        """`classic`: the member speaks the classic protocol with these settings."""
        self.world = world
        self.sched = world.sched
        self.trace = world.trace
        self.net = world.net
        self.slot = slot
        self.incarnation = incarnation
        self.label = f"m{slot}.{incarnation}"
        self.member_id = member_id
        self.instance_id = instance_id
        self.alive = True
        self.paused_until = 0
        params = world.params
        server_assignor = None if client_assignors or classic else params.server_assignors[slot]
        self.classic = classic
        #: The generation of the last JoinGroup answer the coordinator produced for it (classic).
        self.joined_generation = -1
        config = MemberConfig(
            group_id=GROUP,
            instance_id=instance_id,
            rebalance_timeout_ms=params.max_poll_interval_ms,
            server_assignor=server_assignor,
            client_assignors=(CLIENT_ASSIGNOR,) if client_assignors else (),
            auto_commit=params.auto_commit,
            auto_commit_interval_ms=params.auto_commit_interval_ms,
            auto_offset_reset=OffsetReset.EARLIEST,
            retry_backoff_ms=100,
            retry_backoff_max_ms=1_000,
            default_api_timeout_ms=10_000,
            require_stable=world.exactly_once is not None,
            classic=classic,
        )
        self.client_assignors = client_assignors
        self.session = MemberSession(config, BOOTSTRAP, member_id, self.sched.now, rand=world.rng.random)
        self.app = SimApp(self)
        self.links: dict[int, Link] = {}
        #: Requests waiting for a connection to be opened, by broker.
        self._connecting: dict[int, list[SendRequest]] = {}
        self._timer_gen = 0
        self._last_post_ms = 0
        self._armed_at: int | None = None
        self._tick_ms = -1
        self._ticks_at_ms = 0

    @property
    def group_member_id(self) -> str:
        """The member id the coordinator knows it by: the one it generated (consumer protocol),
        or the one the coordinator gave it (classic)."""
        return self.session.core.member_id

    @property
    def core(self) -> MemberCore:
        """The member core inside the session (what the checker inspects)."""
        return self.session.core

    # -- process plumbing ---------------------------------------------------------------------------

    @property
    def paused(self) -> bool:
        """Stopped by a stop-the-world pause."""
        return self.sched.now < self.paused_until

    def deliver(self, action: Callable[..., None], *args: Any) -> None:
        """Run `action` in this process now (dropped if dead; held back while paused)."""
        if not self.alive:
            return
        if self.sched.now < self.paused_until:
            self.sched.at(self.paused_until, self._run, action, args)
            return
        action(*args)

    def deliver_after(self, delay_ms: int, action: Callable[..., None], *args: Any) -> None:
        """Run `action` in this process after `delay_ms`."""
        self.sched.after(delay_ms, self._run, action, args)

    def _run(self, action: Callable[..., None], args: tuple[Any, ...]) -> None:
        self.deliver(action, *args)

    def post(self, event: Event) -> None:
        """The application thread hands an event to the session: handled on the "background
        thread" right after the application's current step (0-1 ms), in the order posted."""
        at = max(self.sched.now + (1 if self.world.rng.random() < 0.3 else 0), self._last_post_ms)
        self._last_post_ms = at
        self.sched.at(at, self._run, self.handle, (event,))

    # -- the session --------------------------------------------------------------------------------

    def handle(self, event: Event) -> None:
        """Feed one event to the session and execute its effects."""
        if not self.alive:
            return
        core = self.core
        before = core.state
        owned_before = frozenset(tp.key for tp in core.reconciler.owned)
        now = self.sched.now
        effects = self.session.handle(event, now)
        self.trace.log(
            now,
            self.label,
            f"{event_text(event)} -> {core.state.name} e{core.member_epoch}"
            + ("".join(" " + effect_text(e) for e in effects)),
        )
        self.world.checker.after_member_step(self, before, owned_before, effects)
        for effect in effects:
            self._execute(effect)
        self._arm()

    def _arm(self) -> None:
        if not self.alive:
            return
        now = self.sched.now
        deadline = self.session.next_deadline(now)
        if deadline is not None and deadline == self._armed_at and deadline > now:
            return  # that timer is still pending
        self._timer_gen += 1
        self._armed_at = deadline
        if deadline is None:
            return
        if deadline <= now:
            if self._tick_ms == now:
                self._ticks_at_ms += 1
                if self._ticks_at_ms > _BUSY_TICKS:
                    self.world.checker.violation("busy-loop", f"{self.label}: next_deadline stays at {now}")
                    deadline = now + 1
            else:
                self._tick_ms, self._ticks_at_ms = now, 0
        self.sched.at(deadline, self._run, self._tick, (self._timer_gen,))

    def _tick(self, generation: int) -> None:
        if generation == self._timer_gen:
            self._armed_at = None
            self.handle(Tick())

    def _execute(self, effect: Effect) -> None:
        if isinstance(effect, SendRequest):
            self._send(effect)
        elif isinstance(effect, ApplicationWork):
            self.app.enqueue(effect)
        elif isinstance(effect, RunAssignor):
            self.deliver_after(self.world.rng.randint(0, 30), self._assign, effect)
        elif not isinstance(effect, AnswerQuery):  # pragma: no cover - the simulated app asks nothing
            raise TypeError(f"unknown effect {effect!r}")

    def _assign(self, effect: RunAssignor) -> None:
        """The assignor thread: ``assign()`` of the algorithm the seed picked."""
        assignor = _CLIENT_ALGORITHMS[self.world.params.client_assignor]()
        try:
            result = assignor.assign(effect.spec)
        except Exception as exc:
            self.handle(AssignorFinished(effect.run_id, error=exc))
            return
        self.handle(AssignorFinished(effect.run_id, result))

    # -- connections ----------------------------------------------------------------------------------

    def _send(self, effect: SendRequest) -> None:
        """Send on this process's connection to the node's broker, opening it first if needed."""
        broker = broker_of(effect.node)
        link = self.links.get(broker)
        if link is not None and link.alive:
            self._send_on(link, effect)
            return
        waiting = self._connecting.setdefault(broker, [])
        waiting.append(effect)
        if len(waiting) == 1:
            self.net.connect(self, broker, lambda link: self._connected(broker, link))

    def _connected(self, broker: int, link: Link | None) -> None:
        waiting = self._connecting.pop(broker, [])
        if link is None:
            for effect in waiting:
                self.handle(
                    RequestFailed(effect.request_id, ErrorCode.NETWORK_EXCEPTION, "connection failed")
                )
            return
        self.links[broker] = link
        for effect in waiting:
            self._send_on(link, effect)

    def _send_on(self, link: Link, effect: SendRequest) -> None:
        request_id = effect.request_id

        def answered(response: Any, pending: Pending) -> None:
            self.handle(ResponseReceived(request_id, response))
            if pending.to_zombie:
                self.world.checker.after_zombie_heartbeat(self)

        def failed(code: ErrorCode, text: str) -> None:
            self.handle(RequestFailed(request_id, code, text))

        self.net.send(link, effect.request, effect.version, answered, failed, effect.timeout_ms)

    def link_closed(self, link: Link) -> None:
        """The network closed one of this process's connections."""
        if self.links.get(link.broker) is link:
            del self.links[link.broker]

    # -- lifecycle ------------------------------------------------------------------------------------

    def die(self, reason: str) -> None:
        """The process ends (crash, or exit after close): nothing more runs in it."""
        if not self.alive:
            return
        self.alive = False
        self.trace.log(self.sched.now, self.label, f"process ends: {reason}")
        for link in list(self.links.values()):
            self.net.close(link, "process ended")
        self.app.gone()
        self.world.checker.process_gone(self)
