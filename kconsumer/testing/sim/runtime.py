"""One simulated member process: the real `MemberCore`, the runtime side that executes its effects
(what `kconsumer/client/runtime/member_runtime.py` does with asyncio, here on the simulated network and
clock), and its application (`app.SimApp`).

As in the real runtime: requests go to the coordinator found through FindCoordinator, over one
connection per broker; a failed or timed-out request makes the runtime forget the coordinator and
reports NETWORK_EXCEPTION / REQUEST_TIMED_OUT to the core; NOT_COORDINATOR and
COORDINATOR_NOT_AVAILABLE answers also make it look the coordinator up again; the capabilities of
each new coordinator connection go to the core (`CoordinatorCapabilities`) before its first request;
`CommitOffsets` without offsets asks the application thread for the positions first; a client-side
assignment runs Prepare, the assignor and Install.

Everything addressed to the process goes through `deliver`: dropped once the process is dead,
held back while it is paused (stop-the-world) and delivered in order when it resumes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...assignment.interface import (
    GroupSpec,
    MemberSpec,
    PartitionAssignorError,
    SubscriptionType,
    TopicMetadata,
)
from ...broker.coordinator.assignors import assignor_by_name
from ...client.member import MemberConfig, MemberCore, OffsetReset, PartitionOffset
from ...client.member.effects import (
    CommitFinished,
    CommitOffsets,
    ComputeClientAssignment,
    Effect,
    FetchCommittedOffsets,
    FindCoordinator,
    InvokeCallback,
    LeaveDone,
    RefreshMetadata,
    ReportError,
    SendHeartbeat,
    StartFetching,
    StopFetching,
)
from ...client.member.events import (
    ClientAssignmentResult,
    CommitResult,
    CoordinatorCapabilities,
    Event,
    HeartbeatFailed,
    HeartbeatResponseReceived,
    MetadataUpdated,
    OffsetFetchResult,
    Tick,
)
from ...client.member.model import ClientAssignor
from ...client.runtime.offset_requests import commit_error, commit_request, fetch_request, fetch_result
from ...errors import ErrorCode
from ...protocol.messages.consumer_group import ConsumerGroupHeartbeatResponse, TopicPartitions
from ...protocol.messages.extensions import (
    ConsumerGroupInstallAssignmentRequest,
    ConsumerGroupInstallAssignmentResponse,
    ConsumerGroupPrepareAssignmentRequest,
    ConsumerGroupPrepareAssignmentResponse,
    InstalledMember,
)
from ...protocol.messages.offsets import OffsetCommitResponse, OffsetFetchResponse
from ...protocol.uuid import Uuid
from .app import SimApp
from .host import GROUP, HEARTBEAT_VERSION, OFFSETS_VERSION
from .network import Link, Pending
from .texts import effect_text, event_text

if TYPE_CHECKING:
    from .world import World

_COORDINATOR_MOVED = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE})
#: A client-side assignor every simulated member announces when the seed uses one.
CLIENT_ASSIGNOR = ClientAssignor("sim", minimum_version=0, maximum_version=1, metadata_version=0)
#: Ticks at one simulated millisecond after which the core is in a busy loop (a bug).
_BUSY_TICKS = 100


@dataclass
class _Request:
    kind: str
    request: Any
    on_ok: Callable[[Any, Pending], None]
    on_fail: Callable[[ErrorCode, str], None]


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
    ) -> None:
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
        server_assignor = None if client_assignors else params.server_assignors[slot]
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
        )
        self.client_assignors = client_assignors
        self.core = MemberCore(config, member_id, self.sched.now, rand=world.rng.random)
        self.app = SimApp(self)
        self.coordinator: int | None = None
        self.links: dict[int, Link] = {}
        self._announced: Link | None = None
        self._waiting: list[_Request] = []
        self._looking_up = False
        self._connecting = False
        self._pump_scheduled = False
        self._timer_gen = 0
        self._last_post_ms = 0
        self._armed_at: int | None = None
        self._tick_ms = -1
        self._ticks_at_ms = 0
        self.names: dict[Uuid, str] = {}

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
        """The application thread hands an event to the core: handled on the "background thread"
        right after the application's current step (0-1 ms), in the order posted."""
        at = max(self.sched.now + (1 if self.world.rng.random() < 0.3 else 0), self._last_post_ms)
        self._last_post_ms = at
        self.sched.at(at, self._run, self.handle, (event,))

    # -- the core -----------------------------------------------------------------------------------

    def handle(self, event: Event) -> None:
        """Feed one event to the core and execute its effects."""
        if not self.alive:
            return
        core = self.core
        before = core.state
        owned_before = frozenset(tp.key for tp in core.reconciler.owned)
        now = self.sched.now
        effects = core.handle(event, now)
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
        deadline = self.core.next_deadline(now)
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
        if isinstance(effect, SendHeartbeat):
            self._heartbeat(effect)
        elif isinstance(effect, CommitOffsets):
            if effect.offsets is None:
                self.app.enqueue(effect)  # the application thread reads the positions first
            else:
                self.commit(effect, effect.offsets)
        elif isinstance(effect, FetchCommittedOffsets):
            self._fetch_offsets(effect)
        elif isinstance(effect, RefreshMetadata):
            self.net.metadata(self, self._metadata_answer)
        elif isinstance(effect, FindCoordinator):
            self._forget()
        elif isinstance(effect, ComputeClientAssignment):
            self._prepare(effect.member_epoch)
        elif isinstance(
            effect, (StopFetching, StartFetching, InvokeCallback, CommitFinished, ReportError, LeaveDone)
        ):
            self.app.enqueue(effect)
        else:  # pragma: no cover - every effect type is listed above
            raise TypeError(f"unknown effect {effect!r}")

    # -- requests -------------------------------------------------------------------------------

    def _heartbeat(self, effect: SendHeartbeat) -> None:
        rid = effect.request_id

        def ok(response: Any, pending: Pending) -> None:
            if isinstance(response, ErrorCode):
                response = ConsumerGroupHeartbeatResponse(error_code=int(response))
            assert isinstance(response, ConsumerGroupHeartbeatResponse)
            if response.error_code in _COORDINATOR_MOVED:
                self._forget()
            self.handle(HeartbeatResponseReceived(rid, response))
            if pending.to_zombie:
                self.world.checker.after_zombie_heartbeat(self)

        def fail(code: ErrorCode, text: str) -> None:
            self._forget()
            self.handle(HeartbeatFailed(rid, code, text))

        self._request("hb", effect.request, ok, fail)

    def commit(self, effect: CommitOffsets, offsets: tuple[PartitionOffset, ...]) -> None:
        """Send the commit of `effect` with `offsets` (explicit, or read by the application)."""
        rid = effect.request_id
        if not offsets:
            self.deliver_after(0, self.handle, CommitResult(rid))
            return
        request = commit_request(
            OFFSETS_VERSION, GROUP, effect.member_id, effect.member_epoch, self.instance_id, offsets
        )

        def ok(response: Any, pending: Pending) -> None:
            if isinstance(response, ErrorCode):
                code = response
            else:
                assert isinstance(response, OffsetCommitResponse)
                code = commit_error(response)
            if code in _COORDINATOR_MOVED:
                self._forget()
            self.handle(CommitResult(rid, code))

        def fail(code: ErrorCode, text: str) -> None:
            self._forget()
            self.handle(CommitResult(rid, code, text))

        self._request("commit", request, ok, fail)

    def _fetch_offsets(self, effect: FetchCommittedOffsets) -> None:
        rid = effect.request_id
        partitions = effect.partitions
        request = fetch_request(OFFSETS_VERSION, GROUP, effect.member_id, effect.member_epoch, partitions)

        def ok(response: Any, pending: Pending) -> None:
            offsets: tuple[PartitionOffset, ...] = ()
            if isinstance(response, ErrorCode):
                code = response
            else:
                assert isinstance(response, OffsetFetchResponse)
                code, offsets = fetch_result(response, OFFSETS_VERSION, partitions)
            if code in _COORDINATOR_MOVED:
                self._forget()
            self.handle(OffsetFetchResult(rid, code, offsets))

        def fail(code: ErrorCode, text: str) -> None:
            self._forget()
            self.handle(OffsetFetchResult(rid, code, message=text))

        self._request("fetch", request, ok, fail)

    def _metadata_answer(self, names: dict[Uuid, str] | None) -> None:
        if names is not None:
            by_name = {name: topic_id for topic_id, name in self.names.items()}
            for topic_id, name in names.items():
                old = by_name.get(name)
                if old is not None and old != topic_id:
                    self.names.pop(old, None)
                self.names[topic_id] = name
        self.handle(MetadataUpdated(dict(self.names)))

    # -- client-side assignment (EXTENSIONS.md flow) ------------------------------------------------

    def _prepare(self, epoch: int) -> None:
        request = ConsumerGroupPrepareAssignmentRequest(
            group_id=GROUP, member_id=self.member_id, member_epoch=epoch
        )

        def ok(response: Any, pending: Pending) -> None:
            if isinstance(response, ErrorCode):
                self._assignment_result(epoch, response, None)
                return
            assert isinstance(response, ConsumerGroupPrepareAssignmentResponse)
            if response.error_code:
                self._assignment_result(epoch, ErrorCode.of(response.error_code), response.error_message)
                return
            self.deliver_after(self.world.rng.randint(0, 30), self._install, epoch, response)

        self._request("prepare", request, ok, lambda code, text: self._assignment_result(epoch, code, text))

    def _install(self, epoch: int, prepared: ConsumerGroupPrepareAssignmentResponse) -> None:
        members = {
            m.member_id: MemberSpec(
                member_id=m.member_id,
                instance_id=m.instance_id,
                rack_id=m.rack_id,
                subscribed_topic_ids=frozenset(m.subscribed_topic_ids),
                assignment={tp.topic_id: frozenset(tp.partitions) for tp in m.topic_partitions},
            )
            for m in prepared.members
        }
        topics = {
            t.topic_id: TopicMetadata(t.topic_id, t.topic_name, t.num_partitions) for t in prepared.topics
        }
        kind = SubscriptionType.of(spec.subscribed_topic_ids for spec in members.values())
        try:
            result = assignor_by_name(self.world.params.client_assignor).assign(
                GroupSpec(members, topics, kind)
            )
        except PartitionAssignorError as exc:
            self._assignment_result(epoch, ErrorCode.UNKNOWN_SERVER_ERROR, str(exc))
            return
        installed = [
            InstalledMember(
                member_id=member_id,
                topic_partitions=[
                    TopicPartitions(topic_id=topic_id, partitions=sorted(parts))
                    for topic_id, parts in sorted(result.get(member_id, {}).items())
                    if parts
                ],
                metadata_version=0,
                metadata_bytes=b"",
            )
            for member_id in sorted(members)
        ]
        request = ConsumerGroupInstallAssignmentRequest(
            group_id=GROUP,
            member_id=self.member_id,
            member_epoch=epoch,
            group_epoch=prepared.group_epoch,
            error=0,
            members=installed,
        )

        def ok(response: Any, pending: Pending) -> None:
            if isinstance(response, ErrorCode):
                self._assignment_result(epoch, response, None)
                return
            assert isinstance(response, ConsumerGroupInstallAssignmentResponse)
            self._assignment_result(epoch, ErrorCode.of(response.error_code), response.error_message)

        self._request("install", request, ok, lambda code, text: self._assignment_result(epoch, code, text))

    def _assignment_result(self, epoch: int, code: ErrorCode, text: str | None) -> None:
        if code in _COORDINATOR_MOVED or code in (ErrorCode.NETWORK_EXCEPTION, ErrorCode.REQUEST_TIMED_OUT):
            self._forget()
        self.handle(ClientAssignmentResult(epoch, code, text))

    # -- connection to the coordinator ----------------------------------------------------------------

    def _request(
        self,
        kind: str,
        request: Any,
        on_ok: Callable[[Any, Pending], None],
        on_fail: Callable[[ErrorCode, str], None],
    ) -> None:
        self._waiting.append(_Request(kind, request, on_ok, on_fail))
        if not self._pump_scheduled:
            self._pump_scheduled = True
            self.deliver_after(0, self._pump)

    def _pump(self) -> None:
        self._pump_scheduled = False
        if not self._waiting:
            return
        broker = self.coordinator
        if broker is None:
            if not self._looking_up:
                self._looking_up = True
                self.net.lookup(self, self._found)
            return
        link = self.links.get(broker)
        if link is None or not link.alive:
            if not self._connecting:
                self._connecting = True
                self.net.connect(self, broker, self._connected)
            return
        if link is not self._announced:
            self._announced = link
            self.handle(CoordinatorCapabilities(HEARTBEAT_VERSION, client_assignors=True))
        waiting, self._waiting = self._waiting, []
        for item in waiting:
            pending_box: list[Pending] = []

            def on_ok(response: Any, item: _Request = item, box: list[Pending] = pending_box) -> None:
                item.on_ok(response, box[0])

            pending_box.append(self.net.send(link, item.kind, item.request, on_ok, item.on_fail))

    def _found(self, result: int | ErrorCode) -> None:
        self._looking_up = False
        if isinstance(result, ErrorCode):
            self._fail_waiting(result, "FindCoordinator failed")
            return
        self.coordinator = result
        self._pump()

    def _connected(self, link: Link | None) -> None:
        self._connecting = False
        if link is None:
            self._fail_waiting(ErrorCode.NETWORK_EXCEPTION, "connection failed")
            return
        self.links[link.broker] = link
        self._pump()

    def _fail_waiting(self, code: ErrorCode, text: str) -> None:
        self._forget()
        waiting, self._waiting = self._waiting, []
        for item in waiting:
            item.on_fail(code, text)

    def _forget(self) -> None:
        self.coordinator = None
        self._announced = None

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
