"""`Broker`: the reference cluster's request handling, independent of sockets.

It owns the topics (the in-memory log), the group coordinator and its timers, and the fault
injection table, and answers one decoded request at a time (`handle`). Group and offset APIs go to
the sans-IO `GroupCoordinator`, whose timers run on the event loop's clock (`loop.call_at` on its
`next_deadline()`, re-armed after every request, timer and metadata change); the records each
call returns are turned into log lines by `GroupEventLog`.

Everything runs on the event loop thread. `fail_over_coordinator` replaces the coordinator with a
fresh one replaying the old one's record log; each connection's next group request after that is
answered NOT_COORDINATOR once, as a client talking to a coordinator that just moved would see.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ...errors import ErrorCode
from ...protocol.api import ApiKey
from ...protocol.headers import RequestHeader
from ...protocol.messages.admin import CreatePartitionsRequest, CreateTopicsRequest, DeleteTopicsRequest
from ...protocol.messages.api_versions import ApiVersionsRequest
from ...protocol.messages.fetch import FetchRequest
from ...protocol.messages.list_offsets import ListOffsetsRequest
from ...protocol.messages.metadata import FindCoordinatorRequest, MetadataRequest
from ...protocol.messages.produce import ACKS_NONE, ProduceRequest
from ...protocol.schema import Message
from ...protocol.uuid import Uuid
from ..coordinator import GroupCoordinator, MetadataImage
from ..coordinator.records import Record
from .admin import handle_create_partitions, handle_create_topics, handle_delete_topics
from .authorization import RequestAuthorization
from .config import ServerConfig
from .error_responses import error_response
from .events import CAUSE_METADATA, CAUSE_REQUEST, CAUSE_TIMER, GroupEventLog
from .faults import Faults
from .fetch import handle_fetch, handle_list_offsets
from .log import Topics
from .metadata import Endpoint, handle_api_versions, handle_find_coordinator, handle_metadata
from .produce import handle_produce

logger = logging.getLogger("kconsumer.broker.server")

#: APIs answered by the group coordinator.
COORDINATOR_APIS = frozenset(
    {
        ApiKey.CONSUMER_GROUP_HEARTBEAT,
        ApiKey.CONSUMER_GROUP_DESCRIBE,
        ApiKey.OFFSET_COMMIT,
        ApiKey.OFFSET_FETCH,
        ApiKey.LIST_GROUPS,
        ApiKey.CONSUMER_GROUP_PREPARE_ASSIGNMENT,
        ApiKey.CONSUMER_GROUP_INSTALL_ASSIGNMENT,
    }
)
#: Coordinator APIs that name a group, so a moved coordinator answers them NOT_COORDINATOR.
_GROUP_KEYED_APIS = COORDINATOR_APIS - {ApiKey.LIST_GROUPS}


class DropConnection:
    """Returned by `Broker.handle` when the response must be lost: close without answering."""


DROP = DropConnection()


def is_fire_and_forget(request: Message) -> bool:
    """Whether the request gets no response at all (Produce with acks=0)."""
    return isinstance(request, ProduceRequest) and request.acks == ACKS_NONE


def random_uuid() -> Uuid:
    """A random (version-agnostic) Kafka UUID; never the zero UUID."""
    while True:
        value = Uuid(os.urandom(16))
        if value:
            return value


def random_member_id() -> str:
    """What Kafka's coordinator gives a heartbeat v0 member that joins with an empty id."""
    return str(random_uuid())


@dataclass
class ClientSession:
    """What the broker knows about one connection."""

    client_host: str
    #: The coordinator incarnation this connection last sent a group request to (None: never).
    coordinator_generation: int | None = None
    #: Whether the client has gone (closed its side): a long-polling fetch then stops waiting.
    gone: Callable[[], bool] = lambda: False
    #: Who the connection authenticated as (``User:alice``; ``User:ANONYMOUS`` when nobody).
    principal: Callable[[], str] = lambda: "User:ANONYMOUS"


class Broker:
    """Answers requests for topics, records, metadata and groups. See the module docstring."""

    def __init__(
        self,
        config: ServerConfig,
        endpoint: Endpoint,
        loop: asyncio.AbstractEventLoop,
        *,
        new_topic_id: Callable[[], Uuid] = random_uuid,
        new_member_id: Callable[[], str] = random_member_id,
    ) -> None:
        self.config = config
        self.endpoint = endpoint
        self.faults = Faults()
        self.events = GroupEventLog()
        self._loop = loop
        self._new_member_id = new_member_id
        self.coordinator = GroupCoordinator(
            config.coordinator, new_member_id=new_member_id, keep_log=config.keep_coordinator_log
        )
        self.coordinator_generation = 0
        self._timer: asyncio.TimerHandle | None = None
        self._timer_deadline: int | None = None
        self.topics = Topics(new_topic_id, config.retention_bytes, on_change=self._metadata_changed)
        self._sync: dict[int, Callable[[Message, int], Message | None]] = {
            ApiKey.PRODUCE: self._produce,
            ApiKey.LIST_OFFSETS: self._list_offsets,
            ApiKey.METADATA: self._metadata,
            ApiKey.FIND_COORDINATOR: self._find_coordinator,
            ApiKey.API_VERSIONS: self._api_versions,
            ApiKey.CREATE_TOPICS: self._create_topics,
            ApiKey.DELETE_TOPICS: self._delete_topics,
            ApiKey.CREATE_PARTITIONS: self._create_partitions,
        }
        self._async: dict[int, Callable[[ClientSession, Message, int], Awaitable[Message]]] = {
            ApiKey.FETCH: self._fetch
        }

    def now_ms(self) -> int:
        """The coordinator's clock: the event loop's monotonic time, in milliseconds."""
        return int(self._loop.time() * 1000)

    # -- requests ----------------------------------------------------------------------------

    async def handle(
        self, session: ClientSession, header: RequestHeader, request: Message
    ) -> Message | DropConnection | None:
        """The response to one request (None: none is sent, as for acks=0 Produce; `DROP`: close
        the connection without answering). Exceptions propagate to the caller."""
        key, version = header.api_key, header.api_version
        response: Message | None
        checks = self._authorization(session)
        if checks is not None:
            denied = checks.denial(request, version)
            if denied is not None:
                return denied
            request, add_refusals = checks.split_writes(request, version)
        injected = self.faults.take_error(key) if self.faults else None
        if injected is not None:
            code, message = injected
            logger.info(
                "injected fault: answering %s v%d with %s",
                type(request).__name__,
                version,
                ErrorCode.of(code).name,
            )
            if is_fire_and_forget(request):
                return DROP  # Kafka closes an acks=0 producer's connection when its request fails
            response = error_response(request, version, code, message)
        elif key in COORDINATOR_APIS:
            response = self._group(session, header, request)
        else:
            sync = self._sync.get(key)
            if sync is not None:
                response = sync(request, version)
            else:
                response = await self._async[key](session, request, version)
        if self.faults:
            delay_ms = self.faults.take_delay_ms(key)
            if delay_ms:
                await asyncio.sleep(delay_ms / 1000)
            if self.faults.take_drop(key):
                logger.info(
                    "injected fault: dropping the response to %s v%d", type(request).__name__, version
                )
                return DROP
        if checks is not None and isinstance(response, Message):
            add_refusals(response)
            response = checks.mark_reads(request, response)
        return response

    def _authorization(self, session: ClientSession) -> RequestAuthorization | None:
        """The ACL checks for this connection's requests (None: no authorizer configured)."""
        authorizer = self.config.authorizer
        if authorizer is None:
            return None
        return RequestAuthorization(authorizer, session.principal(), self._topic_name)

    def _topic_name(self, topic_id: Uuid) -> str | None:
        topic = self.topics.get_by_id(topic_id)
        return None if topic is None else topic.name

    def call(self, request: Message, version: int) -> Message | None:
        """Answer a request made in-process (no faults, no session): the admin helpers of
        `ReferenceCluster` use the same validation as the wire."""
        sync = self._sync.get(request.API_KEY)
        if sync is None:
            raise ValueError(f"{type(request).__name__} cannot be called in-process")
        return sync(request, version)

    def _group(self, session: ClientSession, header: RequestHeader, request: Message) -> Message:
        version = header.api_version
        if header.api_key in _GROUP_KEYED_APIS:
            previous = session.coordinator_generation
            session.coordinator_generation = self.coordinator_generation
            if previous is not None and previous != self.coordinator_generation:
                return error_response(
                    request, version, ErrorCode.NOT_COORDINATOR, "The coordinator has moved (failover)."
                )
        coordinator = self.coordinator
        result = coordinator.handle(
            request, version, self.now_ms(), header.client_id or "", session.client_host
        )
        self._observe_quietly(result.records, CAUSE_REQUEST, request, result.response)
        self._arm_timer()
        return result.response

    def _produce(self, request: Message, version: int) -> Message | None:
        assert isinstance(request, ProduceRequest)
        return handle_produce(self.topics, request, version, verify_crc=self.config.verify_crc)

    async def _fetch(self, session: ClientSession, request: Message, version: int) -> Message:
        assert isinstance(request, FetchRequest)
        return await handle_fetch(self.topics, request, version, session.gone)

    def _list_offsets(self, request: Message, version: int) -> Message:
        assert isinstance(request, ListOffsetsRequest)
        return handle_list_offsets(self.topics, request, version)

    def _metadata(self, request: Message, version: int) -> Message:
        assert isinstance(request, MetadataRequest)
        return handle_metadata(
            self.topics,
            self.endpoint,
            request,
            version,
            auto_create=self.config.auto_create_topics,
            default_partitions=self.config.default_partitions,
        )

    def _find_coordinator(self, request: Message, version: int) -> Message:
        assert isinstance(request, FindCoordinatorRequest)
        return handle_find_coordinator(self.endpoint, request, version)

    def _api_versions(self, request: Message, version: int) -> Message:
        assert isinstance(request, ApiVersionsRequest)
        return handle_api_versions(request, version)

    def _create_topics(self, request: Message, version: int) -> Message:
        assert isinstance(request, CreateTopicsRequest)
        return handle_create_topics(
            self.topics, request, version, default_partitions=self.config.default_partitions
        )

    def _delete_topics(self, request: Message, version: int) -> Message:
        assert isinstance(request, DeleteTopicsRequest)
        return handle_delete_topics(self.topics, request, version)

    def _create_partitions(self, request: Message, version: int) -> Message:
        assert isinstance(request, CreatePartitionsRequest)
        return handle_create_partitions(self.topics, request, version)

    # -- coordinator -------------------------------------------------------------------------

    def fail_over_coordinator(self) -> None:
        """Replace the coordinator by a new incarnation that replays the old one's records."""
        old = self.coordinator
        if old.log is None:
            raise RuntimeError(
                "failover needs the coordinator's record log (ServerConfig.keep_coordinator_log)"
            )
        self.coordinator = GroupCoordinator.replaying(
            list(old.log),
            self.now_ms(),
            self.config.coordinator,
            image=self.topics.image,
            new_member_id=self._new_member_id,
        )
        self.coordinator_generation += 1
        logger.info(
            "coordinator failed over: incarnation %d replayed %d records",
            self.coordinator_generation,
            len(old.log),
        )
        self._arm_timer()

    def _metadata_changed(self, image: MetadataImage) -> None:
        records = self.coordinator.update_metadata(image, self.now_ms())
        self._observe_quietly(records, CAUSE_METADATA)
        self._arm_timer()

    def _observe_quietly(
        self,
        records: list[Record],
        cause: str,
        request: Message | None = None,
        response: Message | None = None,
    ) -> None:
        try:
            self.events.observe(self.coordinator, records, cause, request, response)
        except Exception:  # logging must never break the broker
            logger.exception("could not log group events")

    def _arm_timer(self) -> None:
        deadline = self.coordinator.next_deadline()
        if deadline == self._timer_deadline:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer_deadline = deadline
        self._timer = None if deadline is None else self._loop.call_at(deadline / 1000, self._on_timer)

    def _on_timer(self) -> None:
        deadline = self._timer_deadline or 0
        self._timer = None
        self._timer_deadline = None
        try:
            # asyncio may run a timer up to its clock resolution early: never poll before the deadline.
            records = self.coordinator.poll(max(self.now_ms(), deadline))
            self._observe_quietly(records, CAUSE_TIMER)
        except Exception:
            logger.exception("the group coordinator's timers failed")
        self._arm_timer()

    def close(self) -> None:
        """Stop the coordinator's timers."""
        if self._timer is not None:
            self._timer.cancel()
        self._timer = None
        self._timer_deadline = None
