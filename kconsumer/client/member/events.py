"""Events: everything that happens to the member, as small frozen dataclasses.

The driver calls ``MemberSession.handle(event, now_ms)`` for each of them and executes the effects
it gets back; the session hands the core's events to `MemberCore` and handles its own. Request
ids, callback ids and commit ids in events are the ones put in the effects that started them; an
event whose id is no longer awaited is ignored (a late or duplicated answer).

Who sends what:

* the application (through the consumer facade): `Subscribe`, `Unsubscribe`, `Poll`, `Close`,
  `CommitRequested`, `AssignorMetadataUpdated`, `RequestAssignment`, `CallbackCompleted`,
  `FetchingStopped`, `PositionsCollected`, and the queries `CommittedOffsetsQuery`, `OffsetsQuery`;
* the driver's network side: `ResponseReceived`, `RequestFailed`; its assignor worker:
  `AssignorFinished`;
* the session, to the core: `HeartbeatResponseReceived`, `HeartbeatFailed`,
  `ClassicResponseReceived`, `CommitResult`, `OffsetFetchResult`, `MetadataUpdated`,
  `CoordinatorCapabilities`, `ClientAssignmentResult`;
* the driver's clock: `Tick` (when ``next_deadline`` is reached), `ClockOffset` (the wall clock).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ...errors import ErrorCode
from ...protocol.messages.consumer_group import ConsumerGroupHeartbeatResponse
from ...protocol.schema import Message
from ...protocol.uuid import Uuid
from .model import CallbackKind, ClassicMember, PartitionOffset, TopicIdPartition


class Event:
    """Base class of every event."""

    __slots__ = ()


@dataclass(frozen=True)
class Subscribe(Event):
    """Subscribe to topic names or to one pattern (RE2, validated by the caller); replaces any
    previous subscription. No topics and no pattern means `Unsubscribe`.

    `callbacks` lists the rebalance-listener callbacks the application registered: the core only
    emits `InvokeCallback` for those, so a consumer without a listener never waits for a poll.
    """

    topics: tuple[str, ...] = ()
    pattern: str | None = None
    callbacks: frozenset[CallbackKind] = frozenset()


@dataclass(frozen=True)
class Unsubscribe(Event):
    """Leave the group (epoch -1, after committing and revoking the owned partitions)."""


@dataclass(frozen=True)
class Close(Event):
    """Close the consumer: commit (if auto-commit), revoke, leave (epoch -2 for a static member).

    `deadline_ms` bounds the commit retries; the core answers with exactly one `LeaveDone`.
    """

    deadline_ms: int | None = None


@dataclass(frozen=True)
class Poll(Event):
    """The application called poll()/consume(): resets the max.poll.interval.ms timer and makes a
    STALE member rejoin. Deliver it at the start of the poll, before the callbacks it runs."""


@dataclass(frozen=True)
class Tick(Event):
    """Time passed (``next_deadline`` was reached). Every event also runs the timers."""


@dataclass(frozen=True)
class ClockOffset(Event):
    """The wall clock minus the member's clock (the ``now_ms`` of every event), in ms: sent by the
    driver before the member heartbeats and again when it moves (a clock step). The regular
    heartbeats then fall on the group's ticks (`grid`)."""

    wall_offset_ms: int


@dataclass(frozen=True)
class HeartbeatResponseReceived(Event):
    """The coordinator answered the heartbeat `request_id` (with or without an error code)."""

    request_id: int
    response: ConsumerGroupHeartbeatResponse


@dataclass(frozen=True)
class HeartbeatFailed(Event):
    """The heartbeat `request_id` got no response: disconnected, timed out (the runtime enforces
    ``request.timeout.ms``), or could not be sent.

    `error` says why: NETWORK_EXCEPTION or REQUEST_TIMED_OUT (retried), or a non-retriable code
    when the runtime knows the request can never succeed (for example UNSUPPORTED_VERSION when
    the broker does not offer ConsumerGroupHeartbeat at all).
    """

    request_id: int
    error: ErrorCode = ErrorCode.NETWORK_EXCEPTION
    message: str | None = None


@dataclass(frozen=True)
class ClassicResponseReceived(Event):
    """The coordinator answered the classic group request `request_id` (JoinGroup, SyncGroup,
    Heartbeat or LeaveGroup; a failure without answer is `HeartbeatFailed`). JoinGroup fills
    `member_id`, `generation`, `protocol_name`, `leader_id` and, for the leader, `members`;
    SyncGroup fills `assignment`, by topic id (the session resolved the names), and `user_data`,
    what the leader's strategy wrote for this member."""

    request_id: int
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None
    member_id: str = ""
    generation: int = -1
    protocol_name: str | None = None
    leader_id: str = ""
    members: tuple[ClassicMember, ...] = ()
    assignment: Mapping[Uuid, tuple[int, ...]] | None = None
    user_data: bytes = b""
    #: JoinGroup v9: a static leader rejoined without a rebalance and keeps the assignment.
    skip_assignment: bool = False
    #: SyncGroup of the leader: its assignment held back partitions a member reports owning
    #: (cooperative), for the rebalance their owner starts once it revoked them.
    held_back: bool = False


@dataclass(frozen=True)
class MetadataUpdated(Event):
    """Topic names the runtime learnt from Metadata (by topic id); merged into the core's cache."""

    topic_names: Mapping[Uuid, str] = field(default_factory=dict)
    #: Partition counts by topic name, as far as known (a classic member rejoins when those of
    #: its subscription change).
    partition_counts: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class CallbackCompleted(Event):
    """The callback `callback_id` ran on the application thread. `error` is what it raised, if
    anything (the facade raises it from poll itself; the core only goes on, see `reconciler`)."""

    callback_id: int
    error: BaseException | None = None


@dataclass(frozen=True)
class FetchingStopped(Event):
    """The application thread stopped fetching the partitions of `StopFetching(stop_id)`;
    `positions` are their positions at that moment (partitions with no position are left out)."""

    stop_id: int
    positions: tuple[PartitionOffset, ...] = ()


@dataclass(frozen=True)
class CommitRequested(Event):
    """The application commits: explicit `offsets`, or the current positions of every owned
    partition when `offsets` is None. `token` is the runtime's handle, returned in `CommitFinished`.

    `sync` commits retry retriable errors and (a few times) stale epochs until `deadline_ms`
    (default ``now + default_api_timeout_ms``); async commits are sent once.
    """

    token: int
    offsets: tuple[PartitionOffset, ...] | None = None
    sync: bool = True
    deadline_ms: int | None = None


@dataclass(frozen=True)
class CommitResult(Event):
    """The outcome of the OffsetCommit `request_id`: its first partition or top-level error (NONE on
    success), or NETWORK_EXCEPTION / REQUEST_TIMED_OUT when no response came."""

    request_id: int
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None


@dataclass(frozen=True)
class OffsetFetchResult(Event):
    """The outcome of the OffsetFetch `request_id`: committed offsets (offset -1 or a missing
    partition = none committed) or an error, as for `CommitResult`. `gone`: partitions the
    coordinator answered UNKNOWN_TOPIC_ID or UNKNOWN_TOPIC_OR_PARTITION (their topic was deleted;
    `error` is then one of those codes unless another partition failed otherwise)."""

    request_id: int
    error: ErrorCode = ErrorCode.NONE
    offsets: tuple[PartitionOffset, ...] = ()
    message: str | None = None
    gone: tuple[TopicIdPartition, ...] = ()


@dataclass(frozen=True)
class ClientAssignmentResult(Event):
    """How the client-side assignment asked by `ComputeClientAssignment(member_epoch)` ended
    (Prepare/assign/Install run by the runtime): NONE, STALE_MEMBER_EPOCH, UNKNOWN_MEMBER_ID,
    INVALID_REQUEST (with the coordinator's message), or another code."""

    member_epoch: int
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None


@dataclass(frozen=True)
class AssignorMetadataUpdated(Event):
    """A local assignor's member metadata changed; sent in the next heartbeat (docs/assignor-protocol.md:
    new metadata asks for a new assignment)."""

    name: str
    metadata_version: int
    metadata_bytes: bytes
    reason: int = 0


@dataclass(frozen=True)
class RequestAssignment(Event):
    """The application asks for a new assignment: sets a non-zero Reason on the local assignors
    (sent in the next heartbeat, then reset to 0 once the coordinator has seen it)."""

    reason: int = 1


@dataclass(frozen=True)
class CoordinatorCapabilities(Event):
    """What the coordinator supports, from its ApiVersions: the highest ConsumerGroupHeartbeat
    version both sides speak (0 or 1), and whether it offers the client-side-assignor APIs (key
    32000). Until this event the core assumes version 1 and support."""

    heartbeat_version: int = 1
    client_assignors: bool = True


# -- session events ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ResponseReceived(Event):
    """The broker answered `SendRequest(request_id)`."""

    request_id: int
    response: Message


@dataclass(frozen=True)
class RequestFailed(Event):
    """`SendRequest(request_id)` got no answer: NETWORK_EXCEPTION (could not connect, or the
    connection closed), REQUEST_TIMED_OUT, or a code for a request that cannot be sent."""

    request_id: int
    error: ErrorCode = ErrorCode.NETWORK_EXCEPTION
    message: str | None = None


@dataclass(frozen=True)
class AssignorFinished(Event):
    """`RunAssignor(run_id)` ended: what ``assign()`` returned, or what it raised."""

    run_id: int
    result: object = None
    error: BaseException | None = None


@dataclass(frozen=True)
class PositionsCollected(Event):
    """The application thread read the positions `CollectPositions(request_id)` asked for."""

    request_id: int
    offsets: tuple[PartitionOffset, ...] = ()


@dataclass(frozen=True)
class CommittedOffsetsQuery(Event):
    """The application asks for the group's committed offsets of (topic, partition) pairs, from
    any state (no member id or epoch). Retriable failures are retried until `deadline_ms`; the
    answer (`AnswerQuery(token)`) is `(ErrorCode, offsets)`."""

    token: int
    partitions: tuple[tuple[str, int], ...]
    deadline_ms: int


@dataclass(frozen=True)
class CommitOffsetsQuery(Event):
    """The application commits `offsets` outside the group (manual assignment): an OffsetCommit
    with no member id and epoch -1, as Kafka accepts for a group with no member. Topics named
    only (the zero id) get their id from Metadata. Retriable failures are retried until
    `deadline_ms`; the answer (`AnswerQuery(token)`) is the ErrorCode."""

    token: int
    offsets: tuple[PartitionOffset, ...]
    deadline_ms: int


@dataclass(frozen=True)
class OffsetsQuery(Event):
    """The application asks for the offsets at timestamps (-2 earliest, -1 latest) of (topic,
    partition) pairs, from their leaders (ListOffsets). The answer is a dict of the partitions
    that succeeded by `deadline_ms`."""

    token: int
    timestamps: Mapping[tuple[str, int], int]
    isolation_level: int
    deadline_ms: int
