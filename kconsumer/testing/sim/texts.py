"""Short, seed-stable trace texts for the member session's events and effects."""

from __future__ import annotations

from ...client.member.effects import (
    CollectPositions,
    CommitFinished,
    Effect,
    InvokeCallback,
    LeaveDone,
    ReportError,
    RunAssignor,
    SendRequest,
    StartFetching,
    StopFetching,
)
from ...client.member.events import (
    AssignorFinished,
    CallbackCompleted,
    CommitRequested,
    Event,
    FetchingStopped,
    PositionsCollected,
    RequestFailed,
    ResponseReceived,
    Subscribe,
)
from ...client.member.model import TopicIdPartition
from ...errors import ErrorCode
from ...protocol.messages.consumer_group import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse
from ...protocol.messages.offsets import OffsetCommitRequest
from .host import request_kind


def _parts(partitions: tuple[TopicIdPartition, ...]) -> str:
    return ",".join(f"{tp.topic}-{tp.partition}" for tp in partitions)


def event_text(event: Event) -> str:
    """The trace text of an event."""
    name = type(event).__name__
    if isinstance(event, ResponseReceived):
        r = event.response
        if isinstance(r, ConsumerGroupHeartbeatResponse):
            if r.error_code:
                return f"HbResp#{event.request_id} {ErrorCode.of(r.error_code).name}"
            assigned = (
                "-" if r.assignment is None else sum(len(t.partitions) for t in r.assignment.topic_partitions)
            )
            compute = " compute" if r.should_compute_assignment else ""
            return f"HbResp#{event.request_id} e{r.member_epoch} a={assigned}{compute}"
        code = getattr(r, "error_code", 0)
        error = f" {ErrorCode.of(code).name}" if code else ""
        return f"{type(r).__name__.removesuffix('Response')}Resp#{event.request_id}{error}"
    if isinstance(event, RequestFailed):
        return f"Failed#{event.request_id} {event.error.name}"
    if isinstance(event, AssignorFinished):
        return f"Assigned#{event.run_id}{' error' if event.error is not None else ''}"
    if isinstance(event, (CallbackCompleted, FetchingStopped)):
        ident = event.callback_id if isinstance(event, CallbackCompleted) else event.stop_id
        return f"{name}#{ident}"
    if isinstance(event, PositionsCollected):
        return f"Positions#{event.request_id} {len(event.offsets)}"
    if isinstance(event, Subscribe):
        return f"Subscribe {event.pattern or ','.join(event.topics)}"
    if isinstance(event, CommitRequested):
        n = "pos" if event.offsets is None else len(event.offsets)
        return f"CommitRequested {n} {'sync' if event.sync else 'async'}"
    return name


def effect_text(effect: Effect) -> str:
    """The trace text of an effect."""
    if isinstance(effect, SendRequest):
        return _request_text(effect)
    if isinstance(effect, StopFetching):
        return f"Stop#{effect.stop_id}[{_parts(effect.partitions)}]"
    if isinstance(effect, StartFetching):
        return f"Start[{_parts(tuple(p.partition for p in effect.positions))}]"
    if isinstance(effect, InvokeCallback):
        return f"CB#{effect.callback_id}:{effect.kind.value}[{_parts(effect.partitions)}]"
    if isinstance(effect, CollectPositions):
        return f"ReadPositions#{effect.request_id}[{_parts(effect.partitions)}]"
    if isinstance(effect, CommitFinished):
        return f"CommitDone({effect.reason.value}{',err' if effect.error else ''})"
    if isinstance(effect, RunAssignor):
        return f"Assign#{effect.run_id}(e{effect.spec.group_epoch})"
    if isinstance(effect, ReportError):
        return f"Error({'fatal:' if effect.fatal else ''}{type(effect.error).__name__})"
    if isinstance(effect, LeaveDone):
        return f"LeaveDone({effect.reason.value})"
    return type(effect).__name__


def _request_text(effect: SendRequest) -> str:
    request, target = effect.request, f"->{effect.node.host.removeprefix('broker')}"
    if isinstance(request, ConsumerGroupHeartbeatRequest):
        owned = request.topic_partitions
        n = "-" if owned is None else sum(len(t.partitions) for t in owned)
        return f"HB#{effect.request_id}(e{request.member_epoch},own={n}){target}"
    if isinstance(request, OffsetCommitRequest):
        parts = sum(len(t.partitions) for t in request.topics)
        return f"Commit#{effect.request_id}(e{request.generation_id_or_member_epoch},n={parts}){target}"
    return f"{request_kind(request)}#{effect.request_id}{target}"
