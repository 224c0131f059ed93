"""A small scripted group coordinator for member-core tests (KAFKA_PROTOCOL_FACTS.md §5.4-§5.8, 4.3 rules).

It is deliberately minimal and independent of `kconsumer.broker.coordinator` (written separately): one
group, one topic set, targets computed by a given function of the members (in join order), and the
4.3 reconciliation of each member's current assignment (revoke first; partitions move only once
released; a new group starts at epoch 1 so the first computed assignment is epoch 2). It also runs
several member cores with a fake runtime that answers their effects, and checks the invariant the
whole protocol exists for: no partition is ever fetched by two members at once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from member_driver import NAMES, TOPIC_IDS

from kconsumer.client.member import MemberConfig, MemberCore, PartitionOffset
from kconsumer.client.member.effects import (
    CommitOffsets,
    Effect,
    FetchCommittedOffsets,
    InvokeCallback,
    RefreshMetadata,
    SendHeartbeat,
    StartFetching,
    StopFetching,
)
from kconsumer.client.member.events import (
    CallbackCompleted,
    CommitResult,
    Event,
    FetchingStopped,
    HeartbeatFailed,
    HeartbeatResponseReceived,
    MetadataUpdated,
    OffsetFetchResult,
    Poll,
    Tick,
)
from kconsumer.errors import ErrorCode
from kconsumer.protocol.messages.consumer_group import (
    Assignment,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from kconsumer.protocol.uuid import Uuid

Key = tuple[Uuid, int]
#: member ids in join order -> target per member id
TargetFn = Callable[[list[str]], dict[str, set[Key]]]


def foo(*partitions: int) -> set[Key]:
    return {(TOPIC_IDS["foo"], p) for p in partitions}


@dataclass
class _Member:
    epoch: int = 0
    previous_epoch: int = 0
    assigned: set[Key] = field(default_factory=set)
    revoking: set[Key] = field(default_factory=set)
    reported: set[Key] | None = None


class ScriptedCoordinator:
    """One consumer group at Kafka 4.3 semantics, with targets from `target_fn`."""

    def __init__(self, target_fn: TargetFn, interval_ms: int = 5_000) -> None:
        self.target_fn = target_fn
        self.interval_ms = interval_ms
        self.group_epoch = 1  # 4.3: a new group starts at epoch 1 (facts §5.4)
        self.target_epoch = 1
        self.target: dict[str, set[Key]] = {}
        self.members: dict[str, _Member] = {}

    def _bump(self) -> None:
        self.group_epoch += 1
        self.target = self.target_fn(list(self.members))
        self.target_epoch = self.group_epoch

    def _owned_elsewhere(self, member_id: str) -> set[Key]:
        return {k for mid, m in self.members.items() if mid != member_id for k in m.assigned | m.revoking}

    def heartbeat(self, request: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse:
        mid = request.member_id
        epoch = request.member_epoch
        if epoch < 0:
            self.members.pop(mid, None)
            self._bump()
            return ConsumerGroupHeartbeatResponse(member_id=mid, member_epoch=epoch)
        member = self.members.get(mid)
        if epoch == 0:
            if member is None:
                self.members[mid] = member = _Member()
                self._bump()
        elif member is None:
            return ConsumerGroupHeartbeatResponse(error_code=int(ErrorCode.UNKNOWN_MEMBER_ID))
        elif epoch != member.epoch:
            owned = {(t.topic_id, p) for t in request.topic_partitions or [] for p in t.partitions}
            lost_response = (
                epoch == member.previous_epoch
                and request.topic_partitions is not None
                and owned <= member.assigned | member.revoking
            )
            if not lost_response:
                return ConsumerGroupHeartbeatResponse(error_code=int(ErrorCode.FENCED_MEMBER_EPOCH))
        if request.topic_partitions is not None:
            member.reported = {(t.topic_id, p) for t in request.topic_partitions for p in t.partitions}
        before = set(member.assigned)
        self._reconcile(mid, member)
        full = (
            request.rebalance_timeout_ms != -1
            and (request.subscribed_topic_names is not None or request.subscribed_topic_regex is not None)
            and request.topic_partitions is not None
        )
        assignment = None
        if epoch == 0 or full or member.assigned != before:
            by_topic: dict[Uuid, list[int]] = {}
            for tid, p in sorted(member.assigned, key=lambda k: (k[0].bytes, k[1])):
                by_topic.setdefault(tid, []).append(p)
            assignment = Assignment(
                topic_partitions=[TopicPartitions(topic_id=t, partitions=ps) for t, ps in by_topic.items()]
            )
        return ConsumerGroupHeartbeatResponse(
            member_id=mid,
            member_epoch=member.epoch,
            heartbeat_interval_ms=self.interval_ms,
            assignment=assignment,
        )

    def _reconcile(self, mid: str, member: _Member) -> None:
        if member.revoking:
            still_owned = member.reported is None or member.reported & member.revoking
            if still_owned:
                return
            member.revoking = set()
        target = self.target.get(mid, set())
        keep = member.assigned & target
        revoke = member.assigned - keep
        if revoke:
            member.assigned, member.revoking = keep, revoke
            return
        grant = target - keep - self._owned_elsewhere(mid)
        member.assigned = keep | grant
        if member.epoch != self.target_epoch:
            member.previous_epoch, member.epoch = member.epoch, self.target_epoch


class Runtime:
    """A fake runtime for one member: answers every effect except heartbeats, which `Simulation` routes."""

    def __init__(self, name: str, core: MemberCore, fetching: dict[Key, str], now: int) -> None:
        self.name = name
        self.core = core
        self.fetching = fetching
        self.now = now
        self.outbox: list[SendHeartbeat] = []
        self.log: list[Effect] = []
        self._queue: list[Event] = []

    def handle(self, event: Event) -> None:
        self._queue.append(event)
        while self._queue:
            effects = self.core.handle(self._queue.pop(0), self.now)
            self.log += effects
            for effect in effects:
                self._execute(effect)

    def _execute(self, effect: Effect) -> None:
        if isinstance(effect, SendHeartbeat):
            self.outbox.append(effect)
        elif isinstance(effect, InvokeCallback):
            self._queue += [Poll(), CallbackCompleted(effect.callback_id)]
        elif isinstance(effect, StopFetching):
            for tp in effect.partitions:
                assert self.fetching.pop(tp.key) == self.name, f"{self.name} stops {tp} it does not fetch"
            positions = tuple(PartitionOffset(tp, 0) for tp in effect.partitions)
            self._queue += [Poll(), FetchingStopped(effect.stop_id, positions)]
        elif isinstance(effect, StartFetching):
            for pos in effect.positions:
                other = self.fetching.get(pos.partition.key)
                assert other is None, f"{self.name} starts {pos.partition} while {other} fetches it"
                self.fetching[pos.partition.key] = self.name
        elif isinstance(effect, CommitOffsets):
            self._queue.append(CommitResult(effect.request_id))
        elif isinstance(effect, FetchCommittedOffsets):
            offsets = tuple(PartitionOffset(tp, -1) for tp in effect.partitions)
            self._queue.append(OffsetFetchResult(effect.request_id, offsets=offsets))
        elif isinstance(effect, RefreshMetadata):
            self._queue.append(MetadataUpdated(dict(NAMES)))


class Simulation:
    """Members (by name) driven against one ScriptedCoordinator, heartbeat by heartbeat."""

    def __init__(self, coordinator: ScriptedCoordinator) -> None:
        self.coordinator = coordinator
        self.fetching: dict[Key, str] = {}
        self.runtimes: dict[str, Runtime] = {}
        self.now = 1_000

    def add(self, name: str, **config: object) -> Runtime:
        core = MemberCore(MemberConfig(group_id="g", **config), f"member-{name}", self.now)  # type: ignore[arg-type]
        runtime = Runtime(name, core, self.fetching, self.now)
        self.runtimes[name] = runtime
        runtime.handle(MetadataUpdated(dict(NAMES)))
        return runtime

    def exchange(self, name: str, lose_response: bool = False) -> ConsumerGroupHeartbeatResponse:
        """Let `name` send its next heartbeat (ticking its clock if none is due) and get the answer
        (or, with `lose_response`, have the coordinator process it but the answer never arrive)."""
        runtime = self.runtimes[name]
        while not runtime.outbox:
            deadline = runtime.core.next_deadline(runtime.now)
            assert deadline is not None, f"{name} will never heartbeat"
            self.now = max(self.now, deadline)
            runtime.now = self.now
            runtime.handle(Poll())
            runtime.handle(Tick())
        hb = runtime.outbox.pop(0)
        response = self.coordinator.heartbeat(hb.request)
        if lose_response:
            runtime.handle(HeartbeatFailed(hb.request_id, ErrorCode.REQUEST_TIMED_OUT))
        else:
            runtime.handle(HeartbeatResponseReceived(hb.request_id, response))
        return response

    def owned(self, name: str) -> set[int]:
        return {tp.partition for tp in self.runtimes[name].core.assignment}

    def fetched_by(self, name: str) -> set[int]:
        return {p for (_, p), who in self.fetching.items() if who == name}


def by_join_order(plan: Mapping[int, list[set[Key]]]) -> TargetFn:
    """Targets by group size: plan[n][i] is the target of the i-th member to join when there are n."""

    def target(members: list[str]) -> dict[str, set[Key]]:
        return {m: set(plan[len(members)][i]) for i, m in enumerate(members)} if members else {}

    return target
