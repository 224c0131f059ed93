"""`MemberSession`: everything one consumer-group member decides, sans-IO, in the spirit of h11's
``Connection``. Both the asyncio runtime and the deterministic simulation drive this class; all
they add is I/O.

Events in (``handle(event, now_ms)``), effects out, ``next_deadline(now_ms)`` for the driver's
sleep. The outputs are only: `SendRequest` (send this request to that node),
`ApplicationWork` (run this on the application thread, in order), `RunAssignor` (run this assignor
computation) and `AnswerQuery` (answer the application's question).

What it owns:

* the `MemberCore` (membership, reconciliation, commits), whose group work it turns into requests
  and whose answers it turns back into events;
* coordinator discovery: FindCoordinator through any broker, again after NOT_COORDINATOR,
  COORDINATOR_NOT_AVAILABLE or a lost connection; the coordinator's capabilities
  (ConsumerGroupHeartbeat version, the client-side-assignor APIs) go to the core before the first
  request on each new connection to it;
* API versions per broker (`dispatch`), the cluster view (`cluster`), every request the member
  builds (`calls`), the client-side assignment (`client_assignment`) and the application's
  queries (`queries`).

Events the session produces for the core are queued and handled after the current one, in order,
so the core never sees an event while its previous effects are still being executed.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ...errors import ErrorCode
from ...protocol.api import ApiKey
from ...protocol.messages.consumer_group import ConsumerGroupHeartbeatResponse
from ...protocol.messages.extensions import PREPARE_ASSIGNMENT_API_KEY
from ...protocol.messages.list_offsets import ListOffsetsResponse
from ...protocol.messages.metadata import FindCoordinatorResponse, MetadataResponse
from ...protocol.messages.offsets import OffsetCommitResponse, OffsetFetchResponse
from ...protocol.negotiation import common_version
from ...protocol.schema import Message
from ...protocol.uuid import ZERO_UUID
from . import classic_routes
from . import events as ev
from .calls import (
    AnyBrokerCall,
    ApiVersionsCall,
    Call,
    ClassicCall,
    CommitCall,
    FindCoordinatorCall,
    ForAssignment,
    ForClassic,
    ForCore,
    HeartbeatCall,
    InstallCall,
    ListOffsetsCall,
    MetadataCall,
    OffsetFetchCall,
    PrepareCall,
    Purpose,
)
from .client_assignment import ClientAssignment
from .cluster import ClusterView
from .core import MemberCore
from .dispatch import Dispatched, Dispatcher
from .effects import (
    AnswerQuery,
    ApplicationWork,
    CollectPositions,
    CommitFinished,
    CommitOffsets,
    ComputeClientAssignment,
    Effect,
    FetchCommittedOffsets,
    FindCoordinator,
    InvokeCallback,
    Node,
    RefreshMetadata,
    SendClassicRequest,
    SendHeartbeat,
)
from .errors import COORDINATOR_MOVED
from .model import CallbackKind, Ids, MemberConfig, PartitionOffset, TopicIdPartition
from .offset_requests import commit_error, fetch_result
from .queries import Queries
from .state import MemberState, log_transition
from .steps import SessionStep
from .trace import trace, trace_step

log = logging.getLogger("kconsumer")

#: The member core speaks ConsumerGroupHeartbeat v1 at most.
HEARTBEAT_MAX_VERSION = 1
#: The core's own events, queued by the session.
_FLUSH_COORDINATOR = "flush-coordinator"
#: Commit attempts whose offsets are remembered for their `CommitFinished`.
_SENT_OFFSETS_KEPT = 256


class MemberSession:
    """One consumer's membership in one group, with everything it sends (module docstring)."""

    def __init__(
        self,
        config: MemberConfig,
        bootstrap: tuple[Node, ...],
        member_id: str,
        now_ms: int,
        rand: Callable[[], float] | None = None,
        on_state_change: Callable[[MemberState, MemberState], None] | None = None,
    ) -> None:
        """`bootstrap`: the addresses to start from; `on_state_change(before, after)` observes
        each state transition (metrics); the other arguments are `MemberCore`'s."""
        self.config = config
        self._on_state_change = on_state_change
        self.core = MemberCore(config, member_id, now_ms, rand)
        self.cluster = ClusterView(bootstrap)
        self._dispatch = Dispatcher(Ids())
        self._assignment = ClientAssignment(
            config.group_id, member_id, tuple(a.name for a in config.client_assignors)
        )
        self._queries = Queries(config.group_id, config.retry_backoff_ms)
        self._strategies = classic_routes.StrategyRuns(config.classic)
        #: The coordinator; calls wait in `_for_coordinator` until it is found and announced.
        self._coordinator: Node | None = None
        self._looking_up = False
        self._announced: Node | None = None
        self._for_coordinator: list[Call] = []
        #: Commits whose positions the application thread is reading.
        self._collecting: dict[int, CommitOffsets] = {}
        #: What each OffsetCommit attempt carried, until it finishes (at most `_SENT_OFFSETS_KEPT`).
        self._sent_offsets: dict[int, tuple[PartitionOffset, ...]] = {}
        self._inbox: deque[ev.Event | str] = deque()
        self._now = now_ms
        self._out: list[Effect] = []

    # -- inspection -----------------------------------------------------------------------------

    @property
    def state(self) -> MemberState:
        """The member's state."""
        return self.core.state

    @property
    def member_epoch(self) -> int:
        """The member epoch."""
        return self.core.member_epoch

    @property
    def assignment(self) -> tuple[TopicIdPartition, ...]:
        """The partitions the member owns, sorted."""
        return self.core.assignment

    @property
    def coordinator(self) -> Node | None:
        """The group coordinator, while known."""
        return self._coordinator

    # -- entry points ---------------------------------------------------------------------------

    def handle(self, event: ev.Event, now_ms: int) -> list[Effect]:
        """Process one event at `now_ms` (and whatever it leads to); return the effects."""
        self._now = now_ms
        self._out = []
        if self.core.closed:
            return []
        self._inbox.append(event)
        while self._inbox:
            item = self._inbox.popleft()
            if item == _FLUSH_COORDINATOR:
                self._flush_coordinator()
                continue
            assert isinstance(item, ev.Event)
            handler = _HANDLERS.get(type(item))
            if handler is None:
                self._to_core(item)
            else:
                handler(self, item)
        self._carry_out(self._queries.timers(now_ms, self.cluster))
        out, self._out = self._out, []
        return out

    def next_deadline(self, now_ms: int) -> int | None:
        """When the driver must call ``handle(Tick(), ...)`` at the latest (None: only an event
        can change anything)."""
        times = [t for t in (self.core.next_deadline(now_ms), self._queries.next_deadline()) if t is not None]
        return max(min(times), now_ms) if times else None

    # -- the core -------------------------------------------------------------------------------

    def _feed(self, event: ev.Event) -> None:
        """An event for the core, handled after the current one."""
        self._inbox.append(event)

    def _to_core(self, event: ev.Event) -> None:
        core = self.core
        before = core.state
        effects = core.handle(event, self._now)
        if trace.isEnabledFor(logging.DEBUG):
            trace_step(self._now, event, effects)
        if core.state is not before:
            log_transition(self.config.group_id, core.member_id, before, core.state, core.member_epoch)
            if self._on_state_change is not None:
                self._on_state_change(before, core.state)
        for effect in effects:
            _EXECUTE[type(effect)](self, effect)

    def _app(self, effect: Effect) -> None:
        if isinstance(effect, InvokeCallback) and effect.kind is CallbackKind.ASSIGNMENT:
            selected = self._strategies.protocol if self.config.classic else self._assignment.selected
            effect = replace(effect, assignor_name=selected)
        elif isinstance(effect, CommitFinished) and effect.request_id is not None:
            effect = replace(effect, offsets=self._sent_offsets.pop(effect.request_id, ()))
        self._out.append(effect)

    def _heartbeat(self, effect: SendHeartbeat) -> None:
        call = HeartbeatCall(effect.request_id, effect.request, effect.version, effect.leave)
        self._to_coordinator(call)

    def _commit(self, effect: CommitOffsets) -> None:
        if effect.offsets is None:  # the application thread reads the positions first
            self._collecting[effect.request_id] = effect
            self._out.append(CollectPositions(effect.request_id, effect.partitions))
        else:
            self._send_commit(effect, effect.offsets)

    def _send_commit(self, effect: CommitOffsets, offsets: tuple[PartitionOffset, ...]) -> None:
        if not offsets:
            self._feed(ev.CommitResult(effect.request_id))  # nothing to commit: done
            return
        self._sent_offsets[effect.request_id] = offsets
        if len(self._sent_offsets) > _SENT_OFFSETS_KEPT:
            del self._sent_offsets[next(iter(self._sent_offsets))]
        group, instance = self.config.group_id, self.config.instance_id
        call = CommitCall(effect.request_id, group, effect.member_id, effect.member_epoch, instance, offsets)
        self._to_coordinator(call)

    def _fetch_offsets(self, effect: FetchCommittedOffsets) -> None:
        classic = self.config.classic is not None  # classic members fetch as Kafka's do: no member id
        member_id, epoch = (None, -1) if classic else (effect.member_id, effect.member_epoch)
        call = OffsetFetchCall(
            self.config.group_id, member_id, epoch, effect.partitions, core_id=effect.request_id
        )
        call.require_stable = self.config.require_stable
        self._to_coordinator(call)

    def _refresh(self, effect: RefreshMetadata) -> None:
        names = effect.topic_names or None
        ids = effect.topic_ids or (() if names else None)
        self._to_any(MetadataCall(names, ids, ForCore()))

    def _find_coordinator(self, effect: FindCoordinator) -> None:
        log.info("group %s: looking for the coordinator again (%s)", self.config.group_id, effect.reason)
        self._forget_coordinator()
        if self._for_coordinator:  # calls waiting for it must not wait on a lookup nobody starts
            self._look_up_coordinator()

    def _classic(self, effect: SendClassicRequest) -> None:
        self._carry_out(classic_routes.start(effect))

    def _compute(self, effect: ComputeClientAssignment) -> None:
        self._carry_out(self._assignment.start(effect.member_epoch))

    # -- application events ---------------------------------------------------------------------

    def _on_commit_requested(self, event: ev.CommitRequested) -> None:
        """Offsets the application named by topic name only (the zero topic id) get their id: the
        one of the partition as the member owns it, else the cluster view's."""
        if event.offsets is not None and any(o.partition.topic_id == ZERO_UUID for o in event.offsets):
            owned = {(tp.topic, tp.partition): tp for tp in self.core.reconciler.owned}
            event = replace(event, offsets=tuple(self.cluster.identified(o, owned) for o in event.offsets))
        self._to_core(event)

    def _on_positions(self, event: ev.PositionsCollected) -> None:
        effect = self._collecting.pop(event.request_id, None)
        if effect is not None:
            self._send_commit(effect, event.offsets)

    def _on_assignor_finished(self, event: ev.AssignorFinished) -> None:
        if self.config.classic is not None:  # a classic group leader's strategy
            self._carry_out(self._strategies.assigned(event))
        else:
            self._carry_out(self._assignment.on_assigned(event.run_id, event.result, event.error))

    def _on_committed_query(self, event: ev.CommittedOffsetsQuery) -> None:
        self._carry_out(self._queries.ask_group_offsets(event, self.cluster))

    def _on_commit_query(self, event: ev.CommitOffsetsQuery) -> None:
        self._carry_out(self._queries.ask_group_offsets(event, self.cluster))

    def _on_offsets_query(self, event: ev.OffsetsQuery) -> None:
        self._carry_out(self._queries.ask_offsets(event, self.cluster))

    # -- routing calls --------------------------------------------------------------------------

    def _submit(self, node: Node, call: Call) -> None:
        self._apply(self._dispatch.submit(node, call))

    def _apply(self, dispatched: Dispatched) -> None:
        self._out.extend(dispatched.sends)
        for call, code, message in dispatched.failed:
            self._failed(None, call, code, message)
        if dispatched.ready is not None:
            self._apply(self._dispatch.release(dispatched.ready))
            if dispatched.ready == self._coordinator:
                self._flush_coordinator()

    def _to_any(self, call: AnyBrokerCall) -> None:
        """Send to some broker (see `_try_another`); fails when none is left to try."""
        if not self._try_another(call):
            self._failed(None, call, ErrorCode.NETWORK_EXCEPTION, "no broker reachable")

    def _try_another(self, call: AnyBrokerCall) -> bool:
        """Send to a broker `call` has not tried: one with a negotiated connection if any, else
        the next known broker or bootstrap address. False when every one was tried."""
        candidates = [node for node in self.cluster.candidates() if node not in call.tried]
        if not candidates:
            return False
        ready = [node for node in candidates if node in self._dispatch.versions]
        node = (ready or candidates)[0]
        call.tried.add(node)
        self._submit(node, call)
        return True

    def _to_coordinator(self, call: Call) -> None:
        self._for_coordinator.append(call)
        node = self._coordinator
        if node is None:
            self._look_up_coordinator()
        elif node in self._dispatch.versions:
            self._flush_coordinator()
        else:
            self._apply(self._dispatch.ensure_versions(node))

    def _look_up_coordinator(self) -> None:
        if not self._looking_up:
            self._looking_up = True
            self._to_any(FindCoordinatorCall(self.config.group_id))

    def _flush_coordinator(self) -> None:
        """Send the calls waiting for the coordinator, once the core heard of its capabilities."""
        node = self._coordinator
        versions = None if node is None else self._dispatch.versions.get(node)
        if node is None or versions is None:
            return
        if self._announced != node:
            self._announced = node
            if ApiKey.CONSUMER_GROUP_HEARTBEAT in versions:
                version = common_version(ApiKey.CONSUMER_GROUP_HEARTBEAT, versions, HEARTBEAT_MAX_VERSION)
                assignors = PREPARE_ASSIGNMENT_API_KEY in versions
                self._feed(ev.CoordinatorCapabilities(version, assignors))
                self._inbox.append(_FLUSH_COORDINATOR)
                return
        waiting, self._for_coordinator = self._for_coordinator, []
        for call in waiting:
            if isinstance(call, CommitCall):
                owned = frozenset(tp.key for tp in self.core.reconciler.owned)
                call.follow(self.core.member_id, self.core.member_epoch, owned)
            self._submit(node, call)

    def _forget_coordinator(self) -> None:
        self._coordinator = None
        self._announced = None

    def _fail_for_coordinator(self, code: ErrorCode, message: str | None) -> None:
        waiting, self._for_coordinator = self._for_coordinator, []
        for call in waiting:
            self._failed(None, call, code, message)

    def _carry_out(self, step: SessionStep) -> None:
        """Carry out what a part of the session decided: route its calls, feed its events to the
        core, hand its effects to the driver."""
        for call in step.to_coordinator:
            self._to_coordinator(call)
        for node, call in step.to_nodes:
            self._submit(node, call)
        for any_call in step.to_any:
            self._to_any(any_call)
        for event in step.events:
            self._feed(event)
        self._out.extend(step.effects)

    # -- answers --------------------------------------------------------------------------------

    def _on_response(self, event: ev.ResponseReceived) -> None:
        answered = self._dispatch.answered(event.request_id)
        if answered is not None:
            node, call = answered
            _ANSWERS[type(call)](self, node, call, event.response)

    def _on_request_failed(self, event: ev.RequestFailed) -> None:
        answered = self._dispatch.answered(event.request_id)
        if answered is None:
            return
        node, call = answered
        self._dispatch.connection_lost(node)
        if call.to_coordinator and node == self._coordinator:
            self._forget_coordinator()
        self._failed(node, call, event.error, event.message)
        if self._coordinator is None and self._for_coordinator:  # say, a leave queued meanwhile
            self._look_up_coordinator()

    def _coordinator_answered(self, node: Node, code: ErrorCode) -> None:
        """Forget a coordinator that says it moved, if `node` is ours (not a replaced one's late answer)."""
        if code in COORDINATOR_MOVED and node == self._coordinator:
            self._forget_coordinator()

    def _versions_answered(self, node: Node, call: Any, response: Message) -> None:
        dispatched = self._dispatch.on_versions(node, call, response)
        failed = dispatched.ready is None and not dispatched.sends  # neither learnt nor retried
        self._apply(dispatched)
        if failed and node == self._coordinator:
            self._forget_coordinator()
            self._fail_for_coordinator(ErrorCode.NETWORK_EXCEPTION, f"{node}: ApiVersions failed")

    def _coordinator_found(self, node: Node, call: Any, response: Message) -> None:
        assert isinstance(response, FindCoordinatorResponse)
        self._looking_up = False
        found, code, message = ClusterView.coordinator_of(response, call.version)
        if found is None:
            self._fail_for_coordinator(code, message)
            return
        log.info("group %s: coordinator is %s (node %d)", self.config.group_id, found, found.node_id)
        self._coordinator = found
        if found in self._dispatch.versions:
            self._flush_coordinator()
        else:
            self._apply(self._dispatch.ensure_versions(found))

    def _metadata_answered(self, node: Node, call: Any, response: Message) -> None:
        assert isinstance(response, MetadataResponse)
        self.cluster.absorb(response, every_topic=call.topics is None and call.topic_ids is None)
        self._metadata_done(call.purpose)

    def _metadata_done(self, purpose: Purpose, failed: bool = False) -> None:
        if isinstance(purpose, ForCore):
            self._feed(self.cluster.topics_known())
        elif isinstance(purpose, ForAssignment):
            self._carry_out(self._assignment.on_names(purpose.run_id, self.cluster.topic_names))
        elif isinstance(purpose, ForClassic):
            self._carry_out(classic_routes.metadata_learnt(purpose, self.cluster, self._strategies, failed))
        else:
            self._carry_out(self._queries.metadata_learnt(purpose.token, self.cluster))

    def _offsets_listed(self, node: Node, call: Any, response: Message) -> None:
        assert isinstance(response, ListOffsetsResponse)
        self._carry_out(self._queries.offsets_result(call.token, ClusterView.offsets_of(response)))

    def _heartbeat_answered(self, node: Node, call: Any, response: Message) -> None:
        assert isinstance(response, ConsumerGroupHeartbeatResponse)
        code = ErrorCode.of(response.error_code)
        self._coordinator_answered(node, code)
        if code is not ErrorCode.NONE:
            log.warning(
                "group %s: heartbeat failed with %s: %s",
                self.config.group_id,
                code.name,
                response.error_message,
            )
        self._feed(ev.HeartbeatResponseReceived(call.core_id, response))

    def _classic_answered(self, node: Node, call: Any, response: Message) -> None:
        code = ErrorCode.of(getattr(response, "error_code", 0))
        self._coordinator_answered(node, code)
        if code not in (ErrorCode.NONE, ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.MEMBER_ID_REQUIRED):
            log.warning("group %s: %s failed with %s", self.config.group_id, call.api.value, code.name)
        self._carry_out(classic_routes.answered(call, response, self.cluster, self._strategies))

    def _commit_answered(self, node: Node, call: Any, response: Message) -> None:
        assert isinstance(response, OffsetCommitResponse)
        code = commit_error(response)
        self._coordinator_answered(node, code)
        if call.core_id is not None:
            self._feed(ev.CommitResult(call.core_id, code))
        else:
            self._carry_out(self._queries.commit_result(call.token, code, self._now))

    def _offsets_fetched(self, node: Node, call: Any, response: Message) -> None:
        assert isinstance(response, OffsetFetchResponse)
        code, offsets, gone = fetch_result(response, call.version, call.partitions)
        self._coordinator_answered(node, code)
        if call.core_id is not None:
            self._feed(ev.OffsetFetchResult(call.core_id, code, offsets, gone=gone))
        else:
            self._carry_out(self._queries.committed_result(call.token, code, offsets, self._now))

    def _prepared(self, node: Node, call: Any, response: Message) -> None:
        self._coordinator_answered(node, ErrorCode.of(getattr(response, "error_code", 0)))
        self._carry_out(self._assignment.on_prepared(call.run_id, response, self.cluster.topic_names))

    def _installed(self, node: Node, call: Any, response: Message) -> None:
        self._coordinator_answered(node, ErrorCode.of(getattr(response, "error_code", 0)))
        self._carry_out(self._assignment.on_installed(call.run_id, response))

    # -- failures -------------------------------------------------------------------------------

    def _failed(self, node: Node | None, call: Call, code: ErrorCode, message: str | None) -> None:
        """`call` got no answer (`node`: where it went; None if it never left)."""
        if isinstance(call, ApiVersionsCall):
            dispatched = Dispatched()
            self._dispatch.fail_waiting(call.node, code, message or code.name, dispatched)
            self._apply(dispatched)
            if call.node == self._coordinator:
                self._forget_coordinator()
                self._fail_for_coordinator(code, message)
        elif (
            isinstance(call, AnyBrokerCall)
            and code is ErrorCode.NETWORK_EXCEPTION
            and self._try_another(call)
        ):
            log.debug("%s failed (%s): trying another broker", type(call).__name__, message)
        elif isinstance(call, FindCoordinatorCall):
            self._looking_up = False
            self._fail_for_coordinator(code, message)
        elif isinstance(call, MetadataCall):
            log.warning("group %s: metadata refresh failed: %s", self.config.group_id, message or code.name)
            self._metadata_done(call.purpose, failed=True)
        elif isinstance(call, ListOffsetsCall):
            self._carry_out(self._queries.offsets_result(call.token, {}))
        elif isinstance(call, (HeartbeatCall, ClassicCall)):
            self._feed(ev.HeartbeatFailed(call.core_id, code, message))
        elif isinstance(call, CommitCall) and call.core_id is not None:
            self._feed(ev.CommitResult(call.core_id, code, message))
        elif isinstance(call, CommitCall):
            assert call.token is not None
            self._carry_out(self._queries.commit_result(call.token, code, self._now))
        elif isinstance(call, OffsetFetchCall) and call.core_id is not None:
            self._feed(ev.OffsetFetchResult(call.core_id, code, message=message))
        elif isinstance(call, OffsetFetchCall):
            assert call.token is not None
            self._carry_out(self._queries.committed_result(call.token, code, (), self._now))
        elif isinstance(call, (PrepareCall, InstallCall)):
            self._carry_out(self._assignment.on_failed(call.run_id, code, message))


_HANDLERS: dict[type[ev.Event], Callable[[MemberSession, Any], None]] = {
    ev.CommitRequested: MemberSession._on_commit_requested,
    ev.ResponseReceived: MemberSession._on_response,
    ev.RequestFailed: MemberSession._on_request_failed,
    ev.PositionsCollected: MemberSession._on_positions,
    ev.AssignorFinished: MemberSession._on_assignor_finished,
    ev.CommittedOffsetsQuery: MemberSession._on_committed_query,
    ev.CommitOffsetsQuery: MemberSession._on_commit_query,
    ev.OffsetsQuery: MemberSession._on_offsets_query,
}

#: How each of the core's effects is carried out.
_EXECUTE: dict[type[Effect], Callable[[MemberSession, Any], None]] = {
    SendHeartbeat: MemberSession._heartbeat,
    SendClassicRequest: MemberSession._classic,
    CommitOffsets: MemberSession._commit,
    FetchCommittedOffsets: MemberSession._fetch_offsets,
    RefreshMetadata: MemberSession._refresh,
    FindCoordinator: MemberSession._find_coordinator,
    ComputeClientAssignment: MemberSession._compute,
    **{kind: MemberSession._app for kind in ApplicationWork.__subclasses__()},
}

#: What each kind of call's answer means.
_ANSWERS: dict[type[Call], Callable[[MemberSession, Node, Any, Message], None]] = {
    ApiVersionsCall: MemberSession._versions_answered,
    FindCoordinatorCall: MemberSession._coordinator_found,
    MetadataCall: MemberSession._metadata_answered,
    ListOffsetsCall: MemberSession._offsets_listed,
    HeartbeatCall: MemberSession._heartbeat_answered,
    ClassicCall: MemberSession._classic_answered,
    CommitCall: MemberSession._commit_answered,
    OffsetFetchCall: MemberSession._offsets_fetched,
    PrepareCall: MemberSession._prepared,
    InstallCall: MemberSession._installed,
}

__all__ = ["HEARTBEAT_MAX_VERSION", "AnswerQuery", "MemberSession"]
