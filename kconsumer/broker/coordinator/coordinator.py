"""`GroupCoordinator`: the reference group coordinator as a deterministic, sans-IO object.

Every handler takes the request, its version and `now_ms`, and returns a `Result`: the records
describing the state change (already replayed into the state; the only mutation path) and the
response. Timers (session, rebalance, client-side assignment deadlines) are driven by `poll`
and `next_deadline`; topic changes arrive through `update_metadata`. `replaying` builds a fresh
coordinator from another one's record log: that is failover.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ...assignment.interface import ServerAssignor
from ...errors import KafkaApiError
from ...patterns import matching_topics
from ...protocol.api import ApiKey
from ...protocol.messages.consumer_group import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from ...protocol.messages.extensions import (
    ConsumerGroupInstallAssignmentRequest,
    ConsumerGroupInstallAssignmentResponse,
    ConsumerGroupPrepareAssignmentRequest,
    ConsumerGroupPrepareAssignmentResponse,
)
from ...protocol.messages.list_groups import (
    DeletableGroupResult,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    ListGroupsRequest,
    ListGroupsResponse,
)
from ...protocol.messages.offsets import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
)
from ...protocol.messages.transactions import TxnOffsetCommitRequest, TxnOffsetCommitResponse
from ...protocol.schema import Message
from ...protocol.uuid import Uuid
from . import client_assignment, describe, group_delete, heartbeat, offset_delete, offsets, txn_offsets
from .assignors import resolve_assignors
from .classic import api as classic_api
from .classic.replies import Deferred, PendingReplies
from .config import CoordinatorConfig
from .context import ClientAssignmentRun, Context, rebalance_timer, regex_timer, session_timer
from .membership import bump_group_epoch, fence_member
from .metadata import EMPTY_IMAGE, MetadataImage
from .model import ConsumerGroup, MemberAssignmentState, ResolvedRegex
from .progress import maybe_update_target
from .record_log import RecordLog
from .records import OffsetTombstone, Record, RegexRecord
from .state import CoordinatorState, RecordWriter
from .timers import Timers
from .workers import api as workers_api
from .workers.runs import WorkerRun

R = TypeVar("R")


@dataclass
class Result(Generic[R]):
    """What a handler produced: the records it wrote (in order) and its response."""

    records: list[Record]
    response: R


def _counter_ids() -> Callable[[], str]:
    counter = iter(range(1, 2**62))
    return lambda: str(Uuid.from_int(next(counter)))


class GroupCoordinator:
    """The server side of KIP-848 plus kconsumer's client-side assignor extension.

    `new_member_id` generates member ids for heartbeat v0 joins with an empty id (a server
    passes a random UUID generator; the default counts, for determinism). `keep_log` keeps
    the record log (`log`, compacted by key: its size follows the state) for failover.
    """

    def __init__(
        self,
        config: CoordinatorConfig | None = None,
        *,
        assignors: Mapping[str, ServerAssignor] | None = None,
        new_member_id: Callable[[], str] | None = None,
        keep_log: bool = True,
    ) -> None:
        self.config = config or CoordinatorConfig()
        if assignors is None:
            # Entries may be names or "module:Class" paths: members ask for an assignor by name.
            resolved = resolve_assignors(self.config.assignors)
            assignors = {assignor.name: assignor for assignor in resolved}
            self.default_assignor = resolved[0].name
        else:
            missing = [name for name in self.config.assignors if name not in assignors]
            if missing:
                raise ValueError(f"no implementation for configured assignors {missing}")
            self.default_assignor = self.config.default_assignor
        self.assignors = dict(assignors)
        self.state = CoordinatorState()
        self.image = EMPTY_IMAGE
        self.timers = Timers()
        self.client_runs: dict[str, ClientAssignmentRun] = {}
        self.new_member_id = new_member_id or _counter_ids()
        self.log: RecordLog | None = RecordLog() if keep_log else None
        self.replies = PendingReplies()
        self.worker_runs: dict[str, WorkerRun] = {}

    # -- plumbing ----------------------------------------------------------------------------

    def _context(self, now_ms: int) -> Context:
        return Context(
            state=self.state,
            image=self.image,
            config=self.config,
            assignors=self.assignors,
            default_assignor=self.default_assignor,
            timers=self.timers,
            writer=RecordWriter(self.state),
            client_runs=self.client_runs,
            new_member_id=self.new_member_id,
            now_ms=now_ms,
            replies=self.replies,
            worker_runs=self.worker_runs,
        )

    def _done(self, ctx: Context, response: R) -> Result[R]:
        if self.log is not None:
            self.log.extend(ctx.writer.records)
        return Result(ctx.writer.records, response)

    def group(self, group_id: str) -> ConsumerGroup | None:
        return self.state.group(group_id)

    # -- APIs ------------------------------------------------------------------------------------

    def heartbeat(
        self,
        request: ConsumerGroupHeartbeatRequest,
        version: int,
        now_ms: int,
        client_id: str = "",
        client_host: str = "",
    ) -> Result[ConsumerGroupHeartbeatResponse]:
        ctx = self._context(now_ms)
        try:
            response = heartbeat.handle(ctx, request, version, client_id, client_host)
        except KafkaApiError as exc:
            ctx.writer.rollback()  # a failed heartbeat writes nothing, as a failed Kafka write operation
            response = ConsumerGroupHeartbeatResponse(error_code=int(exc.code), error_message=exc.message)
        return self._done(ctx, response)

    def offset_commit(
        self, request: OffsetCommitRequest, version: int, now_ms: int
    ) -> Result[OffsetCommitResponse]:
        ctx = self._context(now_ms)
        return self._done(ctx, offsets.commit(ctx, request, version))

    def txn_offset_commit(
        self, request: TxnOffsetCommitRequest, version: int, now_ms: int
    ) -> Result[TxnOffsetCommitResponse]:
        """Offsets committed inside a transaction: pending until `complete_transaction`."""
        ctx = self._context(now_ms)
        return self._done(ctx, txn_offsets.commit(ctx, request, version))

    def complete_transaction(
        self, group_id: str, producer_id: int, committed: bool, now_ms: int
    ) -> list[Record]:
        """The transaction marker reached the group: the producer's pending offsets are
        committed (`committed`) or dropped."""
        ctx = self._context(now_ms)
        txn_offsets.complete(ctx, group_id, producer_id, committed)
        return self._done(ctx, None).records

    def offset_fetch(
        self, request: OffsetFetchRequest, version: int, now_ms: int
    ) -> Result[OffsetFetchResponse]:
        ctx = self._context(now_ms)
        return self._done(ctx, offsets.fetch(ctx, request, version))

    def offset_delete(
        self, request: OffsetDeleteRequest, version: int, now_ms: int
    ) -> Result[OffsetDeleteResponse]:
        ctx = self._context(now_ms)
        return self._done(ctx, offset_delete.delete(ctx, request))

    def delete_groups(
        self, request: DeleteGroupsRequest, version: int, now_ms: int
    ) -> Result[DeleteGroupsResponse]:
        ctx = self._context(now_ms)
        results = [
            DeletableGroupResult(group_id=group_id, error_code=int(group_delete.delete(ctx, group_id)))
            for group_id in request.groups_names
        ]
        return self._done(ctx, DeleteGroupsResponse(results=results))

    def describe(
        self, request: ConsumerGroupDescribeRequest, version: int, now_ms: int
    ) -> Result[ConsumerGroupDescribeResponse]:
        ctx = self._context(now_ms)
        return self._done(ctx, describe.describe(ctx, request))

    def list_groups(
        self, request: ListGroupsRequest, version: int, now_ms: int
    ) -> Result[ListGroupsResponse]:
        ctx = self._context(now_ms)
        return self._done(ctx, describe.list_groups(ctx, request))

    def prepare_assignment(
        self, request: ConsumerGroupPrepareAssignmentRequest, version: int, now_ms: int
    ) -> Result[ConsumerGroupPrepareAssignmentResponse]:
        ctx = self._context(now_ms)
        try:
            response = client_assignment.prepare(ctx, request)
        except KafkaApiError as exc:
            response = ConsumerGroupPrepareAssignmentResponse(
                error_code=int(exc.code), error_message=exc.message
            )
        return self._done(ctx, response)

    def install_assignment(
        self, request: ConsumerGroupInstallAssignmentRequest, version: int, now_ms: int
    ) -> Result[ConsumerGroupInstallAssignmentResponse]:
        ctx = self._context(now_ms)
        try:
            client_assignment.install(ctx, request)
            response = ConsumerGroupInstallAssignmentResponse()
        except KafkaApiError as exc:
            response = ConsumerGroupInstallAssignmentResponse(
                error_code=int(exc.code), error_message=exc.message
            )
        return self._done(ctx, response)

    def classic(
        self, request: Message, version: int, now_ms: int, client_id: str = "", client_host: str = ""
    ) -> Result[Message | Deferred]:
        """JoinGroup, SyncGroup, Heartbeat, LeaveGroup or DescribeGroups. JoinGroup and SyncGroup
        may answer later: their result is then a `Deferred` ticket (see `take_replies`)."""
        ctx = self._context(now_ms)
        return self._done(ctx, classic_api.handle(ctx, request, version, client_id, client_host))

    def worker_group(
        self, request: Message, now_ms: int, client_id: str = "", client_host: str = ""
    ) -> Result[Message]:
        """ConnectGroupHeartbeat, ConnectGroupPrepareAssignment or ConnectGroupInstallAssignment
        (worker groups, docs/worker-protocol.md); a failed request writes nothing."""
        ctx = self._context(now_ms)
        response, failed = workers_api.handle(ctx, request, client_id, client_host)
        if failed:
            ctx.writer.rollback()
        return self._done(ctx, response)

    def take_replies(self) -> list[tuple[int, Message]]:
        """(ticket, response) of deferred JoinGroup / SyncGroup answers ready since the last call."""
        return self.replies.take()

    def abandon_replies(self) -> list[tuple[int, Message]]:
        """Every waiting JoinGroup / SyncGroup answered NOT_COORDINATOR (this coordinator is
        being replaced by one replaying its log)."""
        return self.replies.abandon()

    def handle(
        self, request: Message, version: int, now_ms: int, client_id: str = "", client_host: str = ""
    ) -> Result[Message | Deferred]:
        """Dispatch any group or offset API request by its key (for the server)."""
        key = request.API_KEY
        if key == ApiKey.CONSUMER_GROUP_HEARTBEAT:
            assert isinstance(request, ConsumerGroupHeartbeatRequest)
            return self.heartbeat(request, version, now_ms, client_id, client_host)  # type: ignore[return-value]
        if key in classic_api.CLASSIC_APIS:
            return self.classic(request, version, now_ms, client_id, client_host)
        if key in workers_api.WORKER_APIS:
            return self.worker_group(request, now_ms, client_id, client_host)  # type: ignore[return-value]
        handlers: dict[int, Callable[[Message, int, int], Result[Message]]] = {
            ApiKey.OFFSET_COMMIT: self.offset_commit,  # type: ignore[dict-item]
            ApiKey.OFFSET_FETCH: self.offset_fetch,  # type: ignore[dict-item]
            ApiKey.TXN_OFFSET_COMMIT: self.txn_offset_commit,  # type: ignore[dict-item]
            ApiKey.OFFSET_DELETE: self.offset_delete,  # type: ignore[dict-item]
            ApiKey.DELETE_GROUPS: self.delete_groups,  # type: ignore[dict-item]
            ApiKey.CONSUMER_GROUP_DESCRIBE: self.describe,  # type: ignore[dict-item]
            ApiKey.LIST_GROUPS: self.list_groups,  # type: ignore[dict-item]
            ApiKey.CONSUMER_GROUP_PREPARE_ASSIGNMENT: self.prepare_assignment,  # type: ignore[dict-item]
            ApiKey.CONSUMER_GROUP_INSTALL_ASSIGNMENT: self.install_assignment,  # type: ignore[dict-item]
        }
        handler = handlers.get(key)
        if handler is None:
            raise ValueError(f"the coordinator does not handle API key {key}")
        return handler(request, version, now_ms)  # type: ignore[return-value]

    # -- metadata ----------------------------------------------------------------------------

    def update_metadata(self, image: MetadataImage, now_ms: int) -> list[Record]:
        """Apply a new topic image: offsets of deleted topics are removed, regexes
        re-resolved, and groups whose subscribed topics changed get a new epoch."""
        previous, self.image = self.image, image
        ctx = self._context(now_ms)
        deleted = [t for tid, t in previous.topics_by_id.items() if tid not in image.topics_by_id]
        for topic in deleted:
            doomed = list(offsets.offsets_of_deleted_topic(ctx, topic.name, topic.topic_id))
            for group_id, partition in doomed:
                ctx.writer.write(OffsetTombstone(group_id, topic.name, partition))
        names_changed = set(previous.topics_by_name) != set(image.topics_by_name)
        for group in list(self.state.groups.values()):
            if names_changed:
                for regex, resolved in list(group.resolved_regexes.items()):
                    topics = matching_topics(regex, image.topics_by_name)
                    if topics != resolved.topics:
                        ctx.writer.write(
                            RegexRecord(group.group_id, regex, ResolvedRegex(topics, image.version, now_ms))
                        )
            if group.members and image.topics_hash(group.subscribed_topic_names()) != group.metadata_hash:
                bump_group_epoch(ctx, group)
        return self._done(ctx, None).records

    # -- timers --------------------------------------------------------------------------------

    def next_deadline(self) -> int | None:
        """When `poll` next has work (None: no timer)."""
        return self.timers.next_deadline()

    def poll(self, now_ms: int) -> list[Record]:
        """Fire every timer due at `now_ms`: session and rebalance timeouts (and a classic
        member's missed rejoin or sync) fence members; an expired client-side assignment
        deadline chooses another member."""
        ctx = self._context(now_ms)
        for key, payload in self.timers.expired(now_ms):
            kind, group_id = key[0], key[1]
            if kind.startswith("classic-"):
                self._poll_classic(ctx, key, payload)
                continue
            if kind in workers_api.TIMER_KINDS:
                workers_api.on_timer(ctx, key, payload)
                continue
            group = self.state.group(group_id)
            if group is None:
                continue
            if kind in ("session", "consumer-join", "consumer-sync"):
                if key[2] in group.members:
                    fence_member(ctx, group, key[2])
            elif kind == "rebalance":
                member = group.members.get(key[2])
                if member is not None and member.member_epoch == payload:
                    fence_member(ctx, group, key[2])
            elif kind == "client-assignment":
                client_assignment.on_deadline(ctx, group)
            elif kind == "regex":
                self._resolve_regex(ctx, group, key[2])
        return self._done(ctx, None).records

    def _resolve_regex(self, ctx: Context, group: ConsumerGroup, regex: str) -> None:
        """Resolve a regex a member subscribed with (if some member still uses it and nobody
        resolved it meanwhile), as Kafka does when its background resolution completes: when it
        matches a topic, bump the group epoch and compute the new target. A regex matching
        nothing changes no epoch, as on Kafka 4.4, unless a member subscribed with it still has
        a target: Kafka 4.4 leaves such a member's partitions (of the topics its old subscription
        had) assigned to it and owned by nobody; the reference coordinator assigns them anew."""
        if regex not in group.subscribed_regexes or regex in group.resolved_regexes:
            return
        topics = matching_topics(regex, ctx.image.topics_by_name)
        resolved = ResolvedRegex(topics, ctx.image.version, ctx.now_ms)
        ctx.writer.write(RegexRecord(group.group_id, regex, resolved))
        if topics or strands_a_target(group, regex):
            bump_group_epoch(ctx, group)
            maybe_update_target(ctx, group)

    def _poll_classic(self, ctx: Context, key: tuple[Any, ...], payload: Any) -> None:
        group = self.state.classic_groups.get(key[1])
        if group is not None:
            classic_api.on_timer(ctx, group, key, payload)

    # -- failover --------------------------------------------------------------------------------

    @classmethod
    def replaying(
        cls,
        records: Iterable[Record],
        now_ms: int,
        config: CoordinatorConfig | None = None,
        image: MetadataImage | None = None,
        **kwargs: object,
    ) -> GroupCoordinator:
        """A new coordinator loaded from another's record log (failover). Session timers restart
        from `now_ms`, rebalance timers for members still revoking; client-side assignments are
        asked again by the next heartbeat."""
        coordinator = cls(config, **kwargs)  # type: ignore[arg-type]
        if image is not None:
            coordinator.image = image
        for record in records:
            coordinator.state.replay(record)
            if coordinator.log is not None:
                coordinator.log.append(record)
        classic_api.on_loaded(coordinator._context(now_ms))
        workers_api.on_loaded(coordinator._context(now_ms))
        timeout = coordinator.config.session_timeout_ms
        for group in coordinator.state.groups.values():
            for member in group.members.values():
                coordinator.timers.schedule(
                    session_timer(group.group_id, member.member_id),
                    now_ms + member.metadata.session_timeout_ms(timeout),
                )
                if member.current.state == MemberAssignmentState.UNREVOKED_PARTITIONS:
                    coordinator.timers.schedule(
                        rebalance_timer(group.group_id, member.member_id),
                        now_ms + max(member.metadata.rebalance_timeout_ms, 0),
                        member.member_epoch,
                    )
            for regex in group.subscribed_regexes:  # resolutions the old coordinator had not done
                if regex not in group.resolved_regexes:
                    coordinator.timers.schedule(regex_timer(group.group_id, regex), now_ms)
        return coordinator


def strands_a_target(group: ConsumerGroup, regex: str) -> bool:
    """Whether a member subscribed with `regex` (which matches nothing) still has a target."""
    return any(
        member.metadata.subscribed_topic_regex == regex and group.target_of(member_id).partitions
        for member_id, member in group.members.items()
    )
