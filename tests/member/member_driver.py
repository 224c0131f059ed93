"""A driver for member-core tests: a fake clock, topics by name, and helpers that answer effects."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from kconsumer.client.member import MemberConfig, MemberCore, MemberState, PartitionOffset, TopicIdPartition
from kconsumer.client.member.effects import (
    CommitOffsets,
    Effect,
    FetchCommittedOffsets,
    InvokeCallback,
    SendHeartbeat,
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
    Subscribe,
    Tick,
)
from kconsumer.client.member.model import LISTENER_CALLBACKS, AssignmentMetadata, CallbackKind
from kconsumer.errors import ErrorCode
from kconsumer.protocol.messages.consumer_group import (
    Assignment,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from kconsumer.protocol.messages.consumer_group import (
    AssignmentMetadata as WireAssignmentMetadata,
)
from kconsumer.protocol.uuid import Uuid

E = TypeVar("E", bound=Effect)

TOPIC_IDS: dict[str, Uuid] = {
    "foo": Uuid.from_int(0xF00),
    "bar": Uuid.from_int(0xBA4),
    "baz": Uuid.from_int(0xBA5),
}
NAMES: dict[Uuid, str] = {tid: name for name, tid in TOPIC_IDS.items()}
MEMBER_ID = "AAAAAAAAAAAAAAAAAAAAAA"
#: The position every stopped partition reports unless a test says otherwise.
STOP_POSITION = 42
ALL_CALLBACKS = LISTENER_CALLBACKS
S = MemberState


def tp(topic: str, partition: int) -> TopicIdPartition:
    """A TopicIdPartition of one of the test topics."""
    return TopicIdPartition(TOPIC_IDS[topic], topic, partition)


def tps(spec: Mapping[str, Iterable[int]]) -> tuple[TopicIdPartition, ...]:
    """Sorted partitions from {"foo": [0, 1]}."""
    return tuple(
        sorted((tp(t, p) for t, ps in spec.items() for p in ps), key=lambda x: (x.topic, x.partition))
    )


def response(
    epoch: int,
    assignment: Mapping[str, Iterable[int]] | None = None,
    *,
    interval: int = 5_000,
    error: ErrorCode = ErrorCode.NONE,
    message: str | None = None,
    should_compute: bool = False,
    metadata: AssignmentMetadata | None = None,
    member_id: str | None = MEMBER_ID,
) -> ConsumerGroupHeartbeatResponse:
    """A heartbeat response; `assignment` by topic name (None = no Assignment field)."""
    wire = None
    if assignment is not None:
        wire = Assignment(
            topic_partitions=[
                TopicPartitions(topic_id=TOPIC_IDS[t], partitions=sorted(ps)) for t, ps in assignment.items()
            ]
        )
    meta = None
    if metadata is not None:
        meta = WireAssignmentMetadata(
            error=metadata.error,
            metadata_version=metadata.metadata_version,
            metadata_bytes=metadata.metadata_bytes,
        )
    return ConsumerGroupHeartbeatResponse(
        error_code=int(error),
        error_message=message,
        member_id=member_id,
        member_epoch=epoch,
        heartbeat_interval_ms=interval,
        assignment=wire,
        should_compute_assignment=should_compute,
        assignment_metadata=meta,
    )


class Driver:
    """A MemberCore, a manual clock, and a record of every effect and what is still unanswered."""

    def __init__(
        self,
        *,
        now: int = 1_000,
        member_id: str = MEMBER_ID,
        rand: Callable[[], float] | None = None,
        **config: Any,
    ) -> None:
        config.setdefault("group_id", "g")
        self.config = MemberConfig(**config)
        self.core = MemberCore(self.config, member_id, now, rand)
        self.now = now
        self.all: list[Effect] = []
        self.last: list[Effect] = []
        self.answered: set[int] = set()

    # -- sending ---------------------------------------------------------------------------------

    def send(self, event: Event, at: int | None = None) -> list[Effect]:
        """Handle `event` at `at` (default: now); returns (and records) its effects."""
        if at is not None:
            assert at >= self.now, "time goes forward"
            self.now = at
        self.last = self.core.handle(event, self.now)
        self.all.extend(self.last)
        return self.last

    def advance(self, ms: int) -> list[Effect]:
        """Move the clock `ms` forward and tick."""
        return self.send(Tick(), self.now + ms)

    def run_until_idle(self, limit: int = 1_000_000) -> list[Effect]:
        """Tick at each deadline until `limit` ms have passed; returns everything emitted."""
        emitted: list[Effect] = []
        end = self.now + limit
        while True:
            deadline = self.core.next_deadline(self.now)
            if deadline is None or deadline > end:
                return emitted
            emitted += self.send(Tick(), max(deadline, self.now))

    @property
    def state(self) -> MemberState:
        return self.core.state

    # -- looking at effects ----------------------------------------------------------------------

    @staticmethod
    def of(cls: type[E], effects: Iterable[Effect]) -> list[E]:
        return [e for e in effects if isinstance(e, cls)]

    def one(self, cls: type[E], effects: Iterable[Effect] | None = None) -> E:
        found = self.of(cls, self.last if effects is None else effects)
        assert len(found) == 1, f"expected one {cls.__name__}, got {found}"
        return found[0]

    def kinds(self, effects: Iterable[Effect] | None = None) -> list[str]:
        """Effect class names in order (callbacks as InvokeCallback:KIND)."""
        names = []
        for e in self.last if effects is None else effects:
            if isinstance(e, InvokeCallback):
                names.append(f"InvokeCallback:{e.kind.name}")
            else:
                names.append(type(e).__name__)
        return names

    def pending(self, cls: type[E]) -> list[E]:
        """Effects of `cls` with an id not answered yet."""
        return [e for e in self.of(cls, self.all) if _id(e) not in self.answered]

    def in_flight(self) -> SendHeartbeat:
        hbs = self.pending(SendHeartbeat)
        assert len(hbs) == 1, f"expected one heartbeat in flight, got {hbs}"
        return hbs[0]

    # -- answering -------------------------------------------------------------------------------

    def respond(
        self, epoch: int, assignment: Mapping[str, Iterable[int]] | None = None, **kw: Any
    ) -> list[Effect]:
        """Answer the heartbeat in flight."""
        hb = self.in_flight()
        self.answered.add(hb.request_id)
        return self.send(HeartbeatResponseReceived(hb.request_id, response(epoch, assignment, **kw)))

    def fail_heartbeat(self, error: ErrorCode = ErrorCode.NETWORK_EXCEPTION) -> list[Effect]:
        hb = self.in_flight()
        self.answered.add(hb.request_id)
        return self.send(HeartbeatFailed(hb.request_id, error))

    def metadata(self, *names: str) -> list[Effect]:
        names = names or tuple(TOPIC_IDS)
        return self.send(MetadataUpdated({TOPIC_IDS[n]: n for n in names}))

    def complete_callbacks(
        self, kind: CallbackKind | None = None, error: BaseException | None = None
    ) -> list[Effect]:
        """Complete every pending callback (of `kind`), in order; returns all effects."""
        out: list[Effect] = []
        for cb in self.pending(InvokeCallback):
            if kind is None or cb.kind is kind:
                self.answered.add(cb.callback_id)
                out += self.send(CallbackCompleted(cb.callback_id, error))
        return out

    def complete_stops(self, positions: Mapping[TopicIdPartition, int] | None = None) -> list[Effect]:
        """The application thread stops fetching, for every pending StopFetching, in order. Each
        partition reports position `positions[tp]` (default: STOP_POSITION)."""
        out: list[Effect] = []
        for stop in self.pending(StopFetching):
            self.answered.add(stop.stop_id)
            reported = tuple(
                PartitionOffset(p, (positions or {}).get(p, STOP_POSITION)) for p in stop.partitions
            )
            out += self.send(FetchingStopped(stop.stop_id, reported))
        return out

    def complete_commits(self, error: ErrorCode = ErrorCode.NONE) -> list[Effect]:
        out: list[Effect] = []
        for c in self.pending(CommitOffsets):
            self.answered.add(c.request_id)
            out += self.send(CommitResult(c.request_id, error))
        return out

    def complete_fetches(
        self, committed: Mapping[TopicIdPartition, int] | None = None, error: ErrorCode = ErrorCode.NONE
    ) -> list[Effect]:
        committed = committed or {}
        out: list[Effect] = []
        for f in self.pending(FetchCommittedOffsets):
            self.answered.add(f.request_id)
            offsets = tuple(PartitionOffset(p, committed.get(p, -1)) for p in f.partitions)
            out += self.send(
                OffsetFetchResult(f.request_id, error, offsets if error is ErrorCode.NONE else ())
            )
        return out

    def settle(self) -> None:
        """Answer callbacks, commits and fetches until none is pending."""
        while True:
            before = len(self.answered)
            self.complete_stops()
            self.complete_callbacks()
            self.complete_commits()
            self.complete_fetches()
            if len(self.answered) == before:
                return

    # -- recipes ---------------------------------------------------------------------------------

    def join(
        self,
        assignment: Mapping[str, Iterable[int]],
        epoch: int = 2,
        *,
        topics: tuple[str, ...] = ("foo",),
        callbacks: frozenset[CallbackKind] = ALL_CALLBACKS,
        interval: int = 5_000,
    ) -> None:
        """Subscribe, get `assignment` at `epoch`, reconcile and acknowledge: STABLE, nothing in flight."""
        self.send(Subscribe(topics=topics, callbacks=callbacks))
        self.metadata()
        self.respond(epoch, assignment, interval=interval)
        self.settle()
        if self.pending(SendHeartbeat):
            self.respond(epoch, interval=interval)
        assert self.state is S.STABLE, self.state
        assert not self.pending(SendHeartbeat)


def _id(effect: Effect) -> int:
    for name in ("request_id", "callback_id", "stop_id"):
        value = getattr(effect, name, None)
        if value is not None:
            return int(value)
    return -1
