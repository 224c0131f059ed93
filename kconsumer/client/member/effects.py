"""Effects: what the member asks to be done, as small frozen dataclasses.

``MemberCore.handle`` returns a list of effects, which `MemberSession` executes or passes on **in
list order**; outcomes come back as events (see `kconsumer.client.member.events`). The order
carries meaning: a `StopFetching` always precedes the commit and the callback of the same
partitions, so no record of a revoked or lost partition reaches the application after its callback.

Three kinds:

* **Group work** of the core (`SendHeartbeat`, `CommitOffsets`, `FetchCommittedOffsets`,
  `RefreshMetadata`, `FindCoordinator`, `ComputeClientAssignment`): the session turns them into
  requests and their answers into events; they never leave it.
* **Application work** (`ApplicationWork`: stop/start fetching, callbacks, commit results, errors,
  the end of a leave, reading positions for a commit): the driver runs them on the application
  thread, in order.
* **Session outputs** (`SendRequest`, `RunAssignor`, `AnswerQuery`): the driver sends a request to
  a broker, runs an assignor, or answers the application's query.

Request ids (heartbeats, commits, offset fetches) and callback ids come from one counter per core
and are never reused; the session numbers its requests with its own counter.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from ...assignment.assignor import AssignmentSpec
from ...errors import KConsumerError
from ...protocol.messages.consumer_group import ConsumerGroupHeartbeatRequest
from ...protocol.schema import Message
from ...protocol.uuid import Uuid
from .model import (
    AssignmentMetadata,
    CallbackKind,
    ClassicMember,
    CommitReason,
    FetchPosition,
    LeaveReason,
    PartitionOffset,
    TopicIdPartition,
)


class Effect:
    """Base class of every effect."""

    __slots__ = ()


class ApplicationWork(Effect):
    """Base class of the effects the driver runs on the application thread, in order."""

    __slots__ = ()


@dataclass(frozen=True)
class SendHeartbeat(Effect):
    """Send `request` to the group coordinator at ConsumerGroupHeartbeat `version`.

    Answer with `HeartbeatResponseReceived(request_id, ...)` or `HeartbeatFailed(request_id, ...)`
    (never both); the core keeps at most one heartbeat in flight. `leave` marks the leave
    heartbeat (epoch -1/-2): its answer only ends the leave.
    """

    request_id: int
    request: ConsumerGroupHeartbeatRequest
    version: int
    leave: bool = False


class ClassicApi(enum.Enum):
    """The classic group requests a member sends."""

    JOIN = "JoinGroup"
    SYNC = "SyncGroup"
    HEARTBEAT = "Heartbeat"
    LEAVE = "LeaveGroup"
    #: The session's own check of the group's assignment after a skipped one (never the core's).
    DESCRIBE = "DescribeGroups"


@dataclass(frozen=True)
class SendClassicRequest(Effect):
    """Send a classic group request to the coordinator; answer with
    `ClassicResponseReceived(request_id, ...)` or `HeartbeatFailed(request_id, ...)` (at most one
    is in flight, as for heartbeats).

    A SyncGroup of the group's leader lists the joined `members`: the session computes their
    assignments with the `strategy` the group chose (it needs the topics' partition counts) and
    puts them in the request. A LeaveGroup with no `request` is one a static member does not send
    (it keeps its place until its session times out): the session answers it at once."""

    request_id: int
    api: ClassicApi
    request: Message | None
    members: tuple[ClassicMember, ...] = ()
    strategy: str = ""
    timeout_ms: int | None = None
    """How long the answer may take (JoinGroup and SyncGroup: the rebalance timeout and more)."""
    unknown_topics: tuple[str, ...] = ()
    """A JoinGroup's subscribed topics whose ids the member does not know: the session looks them
    up before it sends the request, so that the assignment's names can be checked against the
    topics they meant when the member joined (`MetadataUpdated` first, then the JoinGroup)."""


@dataclass(frozen=True)
class FindCoordinator(Effect):
    """Forget the current group coordinator and look it up again (FindCoordinator) before sending
    the next group request; requests already emitted wait for the new coordinator."""

    reason: str


@dataclass(frozen=True)
class RefreshMetadata(Effect):
    """Fetch Metadata for these topics and report `MetadataUpdated` with the id -> name pairs
    learnt. `topic_ids` are assigned topics whose names are unknown; `topic_names` are newly
    subscribed topics (warming the cache so their assignment resolves at once)."""

    topic_ids: tuple[Uuid, ...] = ()
    topic_names: tuple[str, ...] = ()


@dataclass(frozen=True)
class InvokeCallback(ApplicationWork):
    """Run an application callback on the application thread, inside its next poll()/consume()
    (or close()), then report `CallbackCompleted(callback_id, error)`.

    For ASSIGNMENT (``PartitionAssignor.on_assignment``) `partitions` is the member's resolved
    target and `assignment_metadata` what the assignor computed for it; for the listener kinds
    `partitions` is the set being assigned, revoked or lost (ASSIGNED may be empty once, for an
    empty first assignment after joining). Only kinds registered with `Subscribe.callbacks` (and
    ASSIGNMENT when local assignors are configured) are ever asked for. If the callback raises,
    the facade raises the error from that poll and still reports `CallbackCompleted`.
    """

    callback_id: int
    kind: CallbackKind
    partitions: tuple[TopicIdPartition, ...]
    assignment_metadata: AssignmentMetadata | None = None
    #: ASSIGNMENT: the local assignor whose ``on_assignment`` runs (the one the group uses, as far
    #: as this member knows).
    assignor_name: str | None = None


@dataclass(frozen=True)
class StopFetching(ApplicationWork):
    """Stop fetching these partitions (incremental unassign) and drop their buffered records: from
    now on, no record of them may be handed to the application.

    The runtime does it on the application thread (inside poll/consume/close, in effect order),
    reads each partition's position just before (the offset of the next record the application
    would get) and reports `FetchingStopped(stop_id, positions)`. Until then the core does not
    commit, call back or acknowledge the revocation: the coordinator must not hand a partition to
    another member while this one may still return its records.
    """

    stop_id: int
    partitions: tuple[TopicIdPartition, ...]


@dataclass(frozen=True)
class StartFetching(ApplicationWork):
    """Start fetching these partitions (incremental assign) at the given positions: a committed
    offset, or a logical reset position (EARLIEST/LATEST, or NONE = raise an error from poll)."""

    positions: tuple[FetchPosition, ...]


@dataclass(frozen=True)
class CommitOffsets(Effect):
    """Send an OffsetCommit with `member_id` and `member_epoch` (and the configured group id and
    instance id), then report `CommitResult(request_id, ...)`.

    `offsets` are explicit offsets; when it is None, commit the **current positions** of
    `partitions` (skipping any without a position yet; if none has one, report success without
    sending anything). Only partitions the member owns at the time of this effect are listed.
    """

    request_id: int
    reason: CommitReason
    member_id: str
    member_epoch: int
    partitions: tuple[TopicIdPartition, ...]
    offsets: tuple[PartitionOffset, ...] | None = None


@dataclass(frozen=True)
class CommitFinished(ApplicationWork):
    """A commit is over (after any retries): tell the application (``commit()`` result,
    ``on_commit``). `request_id` is its last attempt (None if none was sent: nothing was left to
    commit); `skipped` are requested partitions not committed because the member does not own
    them. Automatic commits (AUTO, REVOCATION, CLOSE) are reported too, with `token` None."""

    commit_id: int
    reason: CommitReason
    token: int | None
    request_id: int | None
    partitions: tuple[TopicIdPartition, ...]
    skipped: tuple[TopicIdPartition, ...] = ()
    error: KConsumerError | None = None
    #: The offsets its last attempt carried (with their metadata), as the session sent them.
    offsets: tuple[PartitionOffset, ...] = ()


@dataclass(frozen=True)
class FetchCommittedOffsets(Effect):
    """Send an OffsetFetch for `partitions` with `member_id` and `member_epoch`, then report
    `OffsetFetchResult(request_id, ...)`."""

    request_id: int
    member_id: str
    member_epoch: int
    partitions: tuple[TopicIdPartition, ...]


@dataclass(frozen=True)
class ComputeClientAssignment(Effect):
    """This member was chosen to compute the group's assignment with its local assignor at
    `member_epoch`: run ConsumerGroupPrepareAssignment, ``assign()``, ConsumerGroupInstallAssignment
    (on the background thread) and report `ClientAssignmentResult(member_epoch, ...)`."""

    member_epoch: int


@dataclass(frozen=True)
class ReportError(ApplicationWork):
    """Raise `error` to the application from its next poll(). `fatal` errors end the member (FATAL):
    every later poll raises it again."""

    error: KConsumerError
    fatal: bool


@dataclass(frozen=True)
class LeaveDone(ApplicationWork):
    """The `Unsubscribe` or `Close` asked for is complete (the leave heartbeat was answered or
    failed, or there was nothing to leave). Exactly one follows each request; several requests
    made while one leave is running are all answered by the same `LeaveDone`."""

    reason: LeaveReason


@dataclass(frozen=True)
class CollectPositions(ApplicationWork):
    """Read the current positions of `partitions` on the application thread and report them with
    `PositionsCollected(request_id, ...)`: the commit of `CommitOffsets(request_id)` (without
    explicit offsets) goes out with them."""

    request_id: int
    partitions: tuple[TopicIdPartition, ...]


# -- session outputs ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Node:
    """A broker the session sends to: its address, and its node id (negative for a bootstrap
    address). Two nodes are the same when their addresses are."""

    host: str
    port: int
    node_id: int = field(default=-1, compare=False)

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class SendRequest(Effect):
    """Send `request` at `version` to `node` (connecting first if needed) and report
    `ResponseReceived(request_id, response)` or `RequestFailed(request_id, ...)`: exactly one of
    them. A request that times out (``request.timeout.ms``), or any transport failure, closes the
    connection: every request in flight on it fails."""

    request_id: int
    node: Node
    request: Message
    version: int
    timeout_ms: int | None = None
    """Longer than ``request.timeout.ms`` for a request the coordinator holds on purpose (a
    classic JoinGroup or SyncGroup waits up to the rebalance timeout); None: the usual one."""


@dataclass(frozen=True)
class RunAssignor(Effect):
    """Run the local assignor `assignor_name` on `spec` (off the driver's loop: ``assign()`` may be
    slow) and report `AssignorFinished(run_id, result, error)`."""

    run_id: int
    assignor_name: str
    spec: AssignmentSpec


@dataclass(frozen=True)
class AnswerQuery(Effect):
    """The answer to the application's query `token` (a `CommittedOffsetsQuery` or an
    `OffsetsQuery`): `result`, or `error` when it failed."""

    token: int
    result: object = None
    error: KConsumerError | None = None
