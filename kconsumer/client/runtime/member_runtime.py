"""Drives the member core on the background loop with the real clock and executes its effects.

Network effects (heartbeats, commits, offset fetches, metadata, coordinator discovery) run here as
asyncio tasks whose outcomes come back to the core as events. Effects that belong to the
application thread (stopping and starting fetches, reading positions for a commit, user callbacks,
commit results, errors, the end of a leave) go, in order, into `app_queue`; the consumer facade
executes them inside poll/consume/close and reports back with `post`.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import random
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ...errors import ErrorCode, KafkaApiError
from ...protocol.api import ApiKey
from ...protocol.messages.consumer_group import ConsumerGroupHeartbeatResponse
from ...protocol.messages.extensions import PREPARE_ASSIGNMENT_API_KEY
from ...protocol.messages.offsets import OffsetCommitResponse, OffsetFetchResponse
from ...protocol.negotiation import NoCommonVersionError
from ...protocol.uuid import ZERO_UUID
from ..config import ConsumerConfig
from ..member import MemberCore, MemberState
from ..member.effects import (
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
from ..member.events import (
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
from ..member.model import PartitionOffset, TopicIdPartition
from .background import BackgroundLoop
from .connection import Address, BrokerConnection, RequestTimeoutError, TransportError
from .network import NetworkClient
from .offset_requests import (
    BY_ID_VERSION,
    COMMIT_MIN_VERSION,
    commit_error,
    commit_request,
    fetch_request,
    fetch_result,
)

log = logging.getLogger("kconsumer")

T = TypeVar("T")

#: The member core speaks ConsumerGroupHeartbeat v1 at most.
HEARTBEAT_MAX_VERSION = 1
#: States in which a rebalance is under way: the application thread polls in short slices.
BUSY_STATES = frozenset(
    {
        MemberState.JOINING,
        MemberState.RECONCILING,
        MemberState.ACKNOWLEDGING,
        MemberState.FENCED,
        MemberState.PREPARE_LEAVING,
        MemberState.LEAVING,
    }
)
_COORDINATOR_MOVED = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE})


@dataclass(frozen=True)
class CollectPositions:
    """Application-thread work: read the current positions of `commit.partitions` and send the
    commit (`CommitOffsets` without explicit offsets)."""

    commit: CommitOffsets


#: What the application thread executes, in order.
AppWork = (
    StopFetching
    | StartFetching
    | InvokeCallback
    | CommitFinished
    | ReportError
    | LeaveDone
    | CollectPositions
)

_APP_EFFECTS = (StopFetching, StartFetching, InvokeCallback, CommitFinished, ReportError, LeaveDone)

#: Runs a client-side assignment (EXTENSIONS.md flow) for an epoch; returns its outcome.
ClientAssignmentRunner = Callable[["MemberRuntime", int], Coroutine[Any, Any, ClientAssignmentResult]]


def _now_ms(loop: asyncio.AbstractEventLoop) -> int:
    return int(loop.time() * 1000)


class MemberRuntime:
    """One consumer's background side: the member core, its timer and its network tasks."""

    def __init__(
        self,
        config: ConsumerConfig,
        member_id: str,
        background: BackgroundLoop,
        client_assignment: ClientAssignmentRunner | None = None,
    ) -> None:
        self.config = config
        self.group_id = config.require_group()
        self.member_id = member_id
        self.app_queue: queue.SimpleQueue[AppWork] = queue.SimpleQueue()
        self.network = NetworkClient(
            config.bootstrap_servers,
            config.client_id,
            config.socket_connection_setup_timeout_ms / 1000,
            config.request_timeout_ms / 1000,
        )
        self._bg = background
        self._client_assignment = client_assignment
        self._core: MemberCore | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._coordinator_address: Address | None = None
        self._announced_to: BrokerConnection | None = None
        self._closed = False
        #: Mirrors of the core, readable from the application thread.
        self.state = MemberState.UNSUBSCRIBED
        self.member_epoch = 0
        self.assignment: tuple[TopicIdPartition, ...] = ()
        background.call(self._start)

    # -- application-thread API ---------------------------------------------------------------

    @property
    def busy(self) -> bool:
        """A rebalance or leave is under way (the application should poll in short slices)."""
        return self.state in BUSY_STATES

    def post(self, event: Event) -> None:
        """Hand an event to the core (thread-safe; handled on the background loop)."""
        self._bg.call(self._handle, event)

    def commit_positions(self, work: CollectPositions, offsets: Sequence[PartitionOffset]) -> None:
        """Send the commit of `work` with the positions the application thread read."""
        self._bg.call(self._spawn, self._commit(work.commit, tuple(offsets)))

    def call(self, coroutine: Coroutine[Any, Any, T], timeout_s: float) -> T:
        """Run `coroutine` on the background loop and wait for its result (application thread)."""
        return self._bg.submit(coroutine).result(timeout_s)

    def shutdown(self) -> None:
        """Stop the timer, cancel the network tasks and close the connections (thread-safe)."""
        self._bg.call(self._shutdown)

    # -- loop side ----------------------------------------------------------------------------

    def _start(self) -> None:
        loop = asyncio.get_running_loop()
        self._core = MemberCore(
            self.config.member_config(), self.member_id, _now_ms(loop), rand=random.random
        )

    def _handle(self, event: Event) -> None:
        core = self._core
        if core is None or self._closed:
            return
        loop = asyncio.get_running_loop()
        now = _now_ms(loop)
        before = core.state
        effects = core.handle(event, now)
        if core.state is not before:
            log.info(
                "member %s of group %s: %s -> %s (epoch %d)",
                self.member_id,
                self.group_id,
                before.name,
                core.state.name,
                core.member_epoch,
            )
        self.state, self.member_epoch, self.assignment = core.state, core.member_epoch, core.assignment
        for effect in effects:
            self._execute(effect)
        self._arm_timer(loop, core.next_deadline(now))

    def _arm_timer(self, loop: asyncio.AbstractEventLoop, deadline_ms: int | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if deadline_ms is not None and not self._closed:
            self._timer = loop.call_at(deadline_ms / 1000, self._handle, Tick())

    def _execute(self, effect: Effect) -> None:
        if isinstance(effect, _APP_EFFECTS):
            self.app_queue.put(effect)
        elif isinstance(effect, SendHeartbeat):
            self._spawn(self._heartbeat(effect))
        elif isinstance(effect, CommitOffsets):
            if effect.offsets is None:
                self.app_queue.put(CollectPositions(effect))
            else:
                self._spawn(self._commit(effect, effect.offsets))
        elif isinstance(effect, FetchCommittedOffsets):
            self._spawn(self._fetch_offsets(effect))
        elif isinstance(effect, RefreshMetadata):
            self._spawn(self._metadata(effect))
        elif isinstance(effect, FindCoordinator):
            log.info("group %s: looking for the coordinator again (%s)", self.group_id, effect.reason)
            self._forget_coordinator()
        elif isinstance(effect, ComputeClientAssignment):
            self._spawn(self._compute_assignment(effect.member_epoch))
        else:  # pragma: no cover - every effect type is listed above
            raise TypeError(f"unknown effect {effect!r}")

    def _spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        if self._closed:
            coroutine.close()
            return
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("kconsumer runtime task failed", exc_info=task.exception())

    def _shutdown(self) -> None:
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
        for task in list(self._tasks):
            task.cancel()
        self.network.close()

    # -- the coordinator ------------------------------------------------------------------------

    def _forget_coordinator(self) -> None:
        self._coordinator_address = None
        self._announced_to = None

    async def coordinator(self) -> BrokerConnection:
        """The connection to the group coordinator (discovered and negotiated when needed). The
        first time a coordinator connection is used, its capabilities go to the core."""
        if self._coordinator_address is None:
            self._coordinator_address = await self.network.find_coordinator(self.group_id)
            log.info("group %s: coordinator is %s", self.group_id, self._coordinator_address)
        connection = await self.network.connection(self._coordinator_address)
        if connection is not self._announced_to:
            self._announced_to = connection
            if not connection.supports(ApiKey.CONSUMER_GROUP_HEARTBEAT):
                raise NoCommonVersionError(
                    ApiKey.CONSUMER_GROUP_HEARTBEAT,
                    f"the coordinator {connection.address} does not offer ConsumerGroupHeartbeat: the "
                    "consumer group protocol (KIP-848) needs Kafka 4.0+ with group.version >= 1",
                )
            version = connection.version_for(ApiKey.CONSUMER_GROUP_HEARTBEAT, HEARTBEAT_MAX_VERSION)
            supports_assignors = connection.supports(PREPARE_ASSIGNMENT_API_KEY)
            self._handle(CoordinatorCapabilities(version, supports_assignors))
        return connection

    def _failure(self, exc: Exception) -> tuple[ErrorCode, str]:
        """The error code a core event reports for a failed request."""
        if isinstance(exc, RequestTimeoutError):
            self._forget_coordinator()
            return ErrorCode.REQUEST_TIMED_OUT, str(exc)
        if isinstance(exc, TransportError):
            self._forget_coordinator()
            return ErrorCode.NETWORK_EXCEPTION, str(exc)
        if isinstance(exc, KafkaApiError):
            if exc.code in _COORDINATOR_MOVED:
                self._forget_coordinator()
            return exc.code, exc.message or str(exc)
        if isinstance(exc, NoCommonVersionError):
            return ErrorCode.UNSUPPORTED_VERSION, str(exc)
        raise exc

    # -- tasks ----------------------------------------------------------------------------------

    async def _heartbeat(self, effect: SendHeartbeat) -> None:
        event: Event
        try:
            connection = await self.coordinator()
            response = await connection.request(effect.request, effect.version)
            assert isinstance(response, ConsumerGroupHeartbeatResponse)
        except (TransportError, KafkaApiError, NoCommonVersionError) as exc:
            code, message = self._failure(exc)
            event = HeartbeatFailed(effect.request_id, code, message)
        else:
            if response.error_code in _COORDINATOR_MOVED:
                self._forget_coordinator()
            if response.error_code:
                log.warning(
                    "group %s: heartbeat failed with %s: %s",
                    self.group_id,
                    ErrorCode.of(response.error_code).name,
                    response.error_message,
                )
            event = HeartbeatResponseReceived(effect.request_id, response)
        self._handle(event)

    async def _commit(self, effect: CommitOffsets, offsets: tuple[PartitionOffset, ...]) -> None:
        if not offsets:
            self._handle(CommitResult(effect.request_id))
            return
        event: CommitResult
        try:
            connection = await self.coordinator()
            version = connection.version_for(ApiKey.OFFSET_COMMIT, BY_ID_VERSION)
            if version < COMMIT_MIN_VERSION:
                raise NoCommonVersionError(
                    ApiKey.OFFSET_COMMIT,
                    f"the coordinator offers OffsetCommit up to v{version} only (v9+ needed)",
                )
            request = commit_request(
                version,
                self.group_id,
                effect.member_id,
                effect.member_epoch,
                self.config.group_instance_id,
                offsets,
            )
            response = await connection.request(request, version)
            assert isinstance(response, OffsetCommitResponse)
        except (TransportError, KafkaApiError, NoCommonVersionError) as exc:
            code, message = self._failure(exc)
            event = CommitResult(effect.request_id, code, message)
        else:
            code = commit_error(response)
            if code in _COORDINATOR_MOVED:
                self._forget_coordinator()
            event = CommitResult(effect.request_id, code)
        self._handle(event)

    async def fetch_committed(
        self, partitions: Sequence[TopicIdPartition] | None, member_id: str | None, member_epoch: int
    ) -> tuple[ErrorCode, tuple[PartitionOffset, ...]]:
        """OffsetFetch of `partitions` (every committed offset when None) for this group."""
        connection = await self.coordinator()
        version = connection.version_for(ApiKey.OFFSET_FETCH, BY_ID_VERSION)
        request = fetch_request(version, self.group_id, member_id, member_epoch, partitions)
        response = await connection.request(request, version)
        assert isinstance(response, OffsetFetchResponse)
        error, offsets = fetch_result(response, version, partitions or ())
        if error in _COORDINATOR_MOVED:
            self._forget_coordinator()
        return error, offsets

    async def committed_offsets(
        self, wanted: Sequence[tuple[str, int]]
    ) -> tuple[ErrorCode, tuple[PartitionOffset, ...]]:
        """The group's committed offsets of (topic, partition) pairs, looking topic ids up first
        (an admin-style OffsetFetch: no member id or epoch, so it works from any state)."""
        missing = sorted({topic for topic, _p in wanted if topic not in self.network.topic_ids})
        if missing:
            await self.network.metadata(missing)
        partitions = [
            TopicIdPartition(self.network.topic_ids.get(topic, ZERO_UUID), topic, partition)
            for topic, partition in wanted
        ]
        return await self.fetch_committed(partitions, None, -1)

    async def _fetch_offsets(self, effect: FetchCommittedOffsets) -> None:
        event: OffsetFetchResult
        try:
            error, offsets = await self.fetch_committed(
                effect.partitions, effect.member_id, effect.member_epoch
            )
        except (TransportError, KafkaApiError, NoCommonVersionError) as exc:
            code, message = self._failure(exc)
            event = OffsetFetchResult(effect.request_id, code, message=message)
        else:
            event = OffsetFetchResult(effect.request_id, error, offsets)
        self._handle(event)

    async def _metadata(self, effect: RefreshMetadata) -> None:
        try:
            await self.network.metadata(
                topics=list(effect.topic_names) if effect.topic_names else None,
                topic_ids=list(effect.topic_ids)
                if effect.topic_ids
                else ([] if effect.topic_names else None),
            )
        except (TransportError, KafkaApiError, NoCommonVersionError) as exc:
            log.warning("group %s: metadata refresh failed: %s", self.group_id, exc)
        self._handle(MetadataUpdated(dict(self.network.topic_names)))

    async def _compute_assignment(self, member_epoch: int) -> None:
        runner = self._client_assignment
        if runner is None:
            result = ClientAssignmentResult(member_epoch, ErrorCode.UNSUPPORTED_VERSION, "no local assignor")
        else:
            try:
                result = await runner(self, member_epoch)
            except (TransportError, KafkaApiError, NoCommonVersionError) as exc:
                code, message = self._failure(exc)
                result = ClientAssignmentResult(member_epoch, code, message)
        self._handle(result)
