"""Short, seed-stable trace texts for the member core's events and effects."""

from __future__ import annotations

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
    CallbackCompleted,
    ClientAssignmentResult,
    CommitRequested,
    CommitResult,
    Event,
    FetchingStopped,
    HeartbeatFailed,
    HeartbeatResponseReceived,
    OffsetFetchResult,
    Subscribe,
)
from ...client.member.model import TopicIdPartition
from ...errors import ErrorCode


def _parts(partitions: tuple[TopicIdPartition, ...]) -> str:
    return ",".join(f"{tp.topic}-{tp.partition}" for tp in partitions)


def event_text(event: Event) -> str:
    """The trace text of an event."""
    name = type(event).__name__
    if isinstance(event, HeartbeatResponseReceived):
        r = event.response
        if r.error_code:
            return f"HbResp#{event.request_id} {ErrorCode.of(r.error_code).name}"
        assigned = (
            "-" if r.assignment is None else sum(len(t.partitions) for t in r.assignment.topic_partitions)
        )
        compute = " compute" if r.should_compute_assignment else ""
        return f"HbResp#{event.request_id} e{r.member_epoch} a={assigned}{compute}"
    if isinstance(event, HeartbeatFailed):
        return f"HbFail#{event.request_id} {event.error.name}"
    if isinstance(event, (CommitResult, OffsetFetchResult)):
        return f"{name}#{event.request_id} {event.error.name}"
    if isinstance(event, ClientAssignmentResult):
        return f"AssignResult e{event.member_epoch} {event.error.name}"
    if isinstance(event, (CallbackCompleted, FetchingStopped)):
        ident = event.callback_id if isinstance(event, CallbackCompleted) else event.stop_id
        return f"{name}#{ident}"
    if isinstance(event, Subscribe):
        return f"Subscribe {event.pattern or ','.join(event.topics)}"
    if isinstance(event, CommitRequested):
        n = "pos" if event.offsets is None else len(event.offsets)
        return f"CommitRequested {n} {'sync' if event.sync else 'async'}"
    return name


def effect_text(effect: Effect) -> str:
    """The trace text of an effect."""
    if isinstance(effect, SendHeartbeat):
        owned = effect.request.topic_partitions
        n = "-" if owned is None else sum(len(t.partitions) for t in owned)
        return f"HB#{effect.request_id}(e{effect.request.member_epoch},own={n})"
    if isinstance(effect, StopFetching):
        return f"Stop#{effect.stop_id}[{_parts(effect.partitions)}]"
    if isinstance(effect, StartFetching):
        return f"Start[{_parts(tuple(p.partition for p in effect.positions))}]"
    if isinstance(effect, InvokeCallback):
        return f"CB#{effect.callback_id}:{effect.kind.value}[{_parts(effect.partitions)}]"
    if isinstance(effect, CommitOffsets):
        what = f"({effect.reason.value},e{effect.member_epoch})[{_parts(effect.partitions)}]"
        return f"Commit#{effect.request_id}{what}"
    if isinstance(effect, CommitFinished):
        return f"CommitDone({effect.reason.value}{',err' if effect.error else ''})"
    if isinstance(effect, FetchCommittedOffsets):
        return f"OffsetFetch#{effect.request_id}[{_parts(effect.partitions)}]"
    if isinstance(effect, ComputeClientAssignment):
        return f"Compute(e{effect.member_epoch})"
    if isinstance(effect, ReportError):
        return f"Error({'fatal:' if effect.fatal else ''}{type(effect.error).__name__})"
    if isinstance(effect, LeaveDone):
        return f"LeaveDone({effect.reason.value})"
    if isinstance(effect, RefreshMetadata):
        return "Metadata"
    if isinstance(effect, FindCoordinator):
        return "FindCoordinator"
    return type(effect).__name__
