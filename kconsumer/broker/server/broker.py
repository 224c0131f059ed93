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
from ...protocol.messages.list_groups import ListGroupsResponse
from ...protocol.messages.list_offsets import ListOffsetsRequest
from ...protocol.messages.metadata import FindCoordinatorRequest, MetadataRequest
from ...protocol.messages.produce import ACKS_NONE, ProduceRequest
from ...protocol.messages.producer_ids import InitProducerIdRequest, InitProducerIdResponse
from ...protocol.messages.transactions import DescribeTransactionsRequest, ListTransactionsRequest
from ...protocol.schema import Message
from ...protocol.uuid import Uuid
from ..coordinator import MetadataImage
from .admin import handle_create_partitions, handle_create_topics, handle_delete_topics
from .authorization import RequestAuthorization
from .config import ServerConfig
from .error_responses import error_response
from .events import GroupEventLog
from .faults import Faults
from .fetch import handle_fetch, handle_list_offsets
from .group_routing import for_group, group_ids, merged
from .log import Topics
from .metadata import (
    CONSUMER_PROTOCOL_APIS,
    BrokerAddress,
    ClusterView,
    handle_api_versions,
    handle_find_coordinator,
    handle_metadata,
)
from .nodes import ANY_NODE, ClusterNodes
from .produce import handle_produce
from .producers import ProducerIds
from .shards import CoordinatorShards
from .transaction_service import TRANSACTION_APIS, TransactionService

logger = logging.getLogger("kconsumer.broker.server")

#: APIs answered by the group coordinator.
COORDINATOR_APIS = frozenset(
    {
        ApiKey.CONSUMER_GROUP_HEARTBEAT,
        ApiKey.CONSUMER_GROUP_DESCRIBE,
        ApiKey.OFFSET_COMMIT,
        ApiKey.OFFSET_FETCH,
        ApiKey.OFFSET_DELETE,
        ApiKey.DELETE_GROUPS,
        ApiKey.LIST_GROUPS,
        ApiKey.CONSUMER_GROUP_PREPARE_ASSIGNMENT,
        ApiKey.CONSUMER_GROUP_INSTALL_ASSIGNMENT,
        ApiKey.JOIN_GROUP,
        ApiKey.SYNC_GROUP,
        ApiKey.HEARTBEAT,
        ApiKey.LEAVE_GROUP,
        ApiKey.DESCRIBE_GROUPS,
        ApiKey.TXN_OFFSET_COMMIT,
        ApiKey.CONNECT_GROUP_HEARTBEAT,
        ApiKey.CONNECT_GROUP_PREPARE_ASSIGNMENT,
        ApiKey.CONNECT_GROUP_INSTALL_ASSIGNMENT,
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
    #: The broker the connection reached, and the listener (its addresses are advertised).
    node_id: int = 1
    listener: str = ""


#: The cluster's own helpers act as the leader of every partition.
_IN_PROCESS = ClientSession(client_host="/in-process", node_id=ANY_NODE)


class Broker:
    """Answers requests for topics, records, metadata and groups. See the module docstring."""

    def __init__(
        self,
        config: ServerConfig,
        loop: asyncio.AbstractEventLoop,
        *,
        new_topic_id: Callable[[], Uuid] = random_uuid,
        new_member_id: Callable[[], str] = random_member_id,
    ) -> None:
        self.config = config
        self.faults = Faults()
        self.events = GroupEventLog()
        self._loop = loop
        self.nodes = ClusterNodes(range(1, config.brokers + 1), config.advertised, config.offsets_partitions)
        self.topics = Topics(new_topic_id, config.retention_bytes, on_change=self._metadata_changed)
        self.topics.place = self.nodes.topic_leaders
        self.coordinators = CoordinatorShards(
            config, loop, lambda: self.topics.image, new_member_id, self.events, config.offsets_partitions
        )
        #: Bumped whenever a coordinator moves or fails over (see `_group`).
        self.coordinator_generation = 0
        #: Producer ids of idempotent and transactional producers (InitProducerId).
        self.producer_ids = ProducerIds()
        #: The transaction coordinator.
        self.transactions = TransactionService(
            loop, self.topics, self.nodes, self.coordinators, lambda: self.producer_ids.new()[0]
        )
        self._sync: dict[int, Callable[[Message, int], Message | None]] = {
            ApiKey.API_VERSIONS: self._api_versions,
            ApiKey.CREATE_TOPICS: self._create_topics,
            ApiKey.DELETE_TOPICS: self._delete_topics,
            ApiKey.CREATE_PARTITIONS: self._create_partitions,
        }
        #: Handlers that depend on the broker and listener a request came to.
        self._by_session: dict[int, Callable[[ClientSession, Message, int], Message | None]] = {
            ApiKey.INIT_PRODUCER_ID: self._init_producer_id,
            **dict.fromkeys(TRANSACTION_APIS, self._transaction),
            ApiKey.DESCRIBE_TRANSACTIONS: self._describe_transactions,
            ApiKey.LIST_TRANSACTIONS: self._list_transactions,
            ApiKey.PRODUCE: self._produce,
            ApiKey.LIST_OFFSETS: self._list_offsets,
            ApiKey.METADATA: self._metadata,
            ApiKey.FIND_COORDINATOR: self._find_coordinator,
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
        elif key in CONSUMER_PROTOCOL_APIS and not self.config.consumer_protocol_enabled:
            response = error_response(
                request,
                version,
                ErrorCode.UNSUPPORTED_VERSION,
                "The consumer group protocol is not enabled (group.coordinator.rebalance.protocols).",
            )
        elif key in COORDINATOR_APIS:
            answer = self._group(session, header, request)
            # A classic JoinGroup / SyncGroup may wait (its connection reads nothing meanwhile).
            response = await answer if isinstance(answer, asyncio.Future) else answer
        else:
            sync = self._sync.get(key)
            by_session = self._by_session.get(key)
            if sync is not None:
                response = sync(request, version)
            elif by_session is not None:
                response = by_session(session, request, version)
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
        if sync is not None:
            return sync(request, version)
        by_session = self._by_session.get(request.API_KEY)
        if by_session is None:
            raise ValueError(f"{type(request).__name__} cannot be called in-process")
        return by_session(_IN_PROCESS, request, version)

    def _group(
        self, session: ClientSession, header: RequestHeader, request: Message
    ) -> Message | asyncio.Future[Message]:
        """A coordinator API: each group it names goes to the shard of its offsets partition, if
        this broker leads that partition (NOT_COORDINATOR otherwise, as Kafka answers)."""
        version = header.api_version
        if header.api_key in _GROUP_KEYED_APIS:
            previous = session.coordinator_generation
            session.coordinator_generation = self.coordinator_generation
            if previous is not None and previous != self.coordinator_generation:
                return error_response(
                    request, version, ErrorCode.NOT_COORDINATOR, "The coordinator has moved (failover)."
                )
        client_id, host = header.client_id or "", session.client_host
        groups = group_ids(request)
        if groups is None:  # ListGroups: the groups of every shard this broker leads
            led = [
                p for p, _ in self.coordinators.items() if self.nodes.offsets_leaders[p] == session.node_id
            ]
            listed = [self.coordinators.handle(p, request, version, client_id, host) for p in led]
            shards = [a for a in listed if not isinstance(a, asyncio.Future)]
            return merged(shards) if shards else ListGroupsResponse(error_code=0, groups=[])
        answers: list[Message] = []
        for group in groups or [""]:
            narrowed = for_group(request, group)
            partition = self.coordinators.partition_of(group)
            if self.nodes.offsets_leaders[partition] != session.node_id:
                answers.append(
                    error_response(
                        narrowed,
                        version,
                        ErrorCode.NOT_COORDINATOR,
                        f"broker {session.node_id} is not the coordinator of group {group!r}",
                    )
                )
            else:
                answer = self.coordinators.handle(partition, narrowed, version, client_id, host)
                if isinstance(answer, asyncio.Future):
                    return answer  # JoinGroup and SyncGroup name exactly one group
                answers.append(answer)
        return merged(answers)

    def _produce(self, session: ClientSession, request: Message, version: int) -> Message | None:
        assert isinstance(request, ProduceRequest)
        return handle_produce(
            self.topics,
            request,
            version,
            verify_crc=self.config.verify_crc,
            node_id=session.node_id,
            transactions=self.transactions.produce_check,
        )

    async def _fetch(self, session: ClientSession, request: Message, version: int) -> Message:
        assert isinstance(request, FetchRequest)
        return await handle_fetch(self.topics, request, version, session.gone, session.node_id)

    def _list_offsets(self, session: ClientSession, request: Message, version: int) -> Message:
        assert isinstance(request, ListOffsetsRequest)
        return handle_list_offsets(self.topics, request, version, session.node_id)

    def _metadata(self, session: ClientSession, request: Message, version: int) -> Message:
        assert isinstance(request, MetadataRequest)
        return handle_metadata(
            self.topics,
            self.view(session.listener),
            request,
            version,
            auto_create=self.config.auto_create_topics,
            default_partitions=self.config.default_partitions,
        )

    def _find_coordinator(self, session: ClientSession, request: Message, version: int) -> Message:
        assert isinstance(request, FindCoordinatorRequest)
        return handle_find_coordinator(self.view(session.listener), request, version)

    def view(self, listener: str) -> ClusterView:
        """The cluster as a connection on `listener` is told about it."""
        nodes = self.nodes

        def address(node_id: int) -> BrokerAddress | None:
            port = nodes.port(node_id, listener) if nodes.is_up(node_id) else None
            return None if port is None else BrokerAddress(node_id, nodes.host, port)

        brokers = [found for node_id in nodes.up() if (found := address(node_id)) is not None]
        return ClusterView(
            brokers=brokers,
            cluster_id=self.config.cluster_id,
            controller_id=brokers[0].node_id if brokers else -1,
            coordinator_of=lambda group: address(nodes.coordinator_of(group)),
        )

    def _api_versions(self, request: Message, version: int) -> Message:
        assert isinstance(request, ApiVersionsRequest)
        return handle_api_versions(request, version, self.config.consumer_protocol_enabled)

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

    def _init_producer_id(self, session: ClientSession, request: Message, version: int) -> Message:
        assert isinstance(request, InitProducerIdRequest)
        if request.transactional_id is not None:
            return self.transactions.handle(request, version, session.node_id)
        if request.producer_id >= 0:
            code, producer_id, epoch = self.producer_ids.bump(request.producer_id, request.producer_epoch)
        else:
            code, (producer_id, epoch) = ErrorCode.NONE, self.producer_ids.new()
        return InitProducerIdResponse(error_code=code, producer_id=producer_id, producer_epoch=epoch)

    def _transaction(self, session: ClientSession, request: Message, version: int) -> Message:
        return self.transactions.handle(request, version, session.node_id)

    def _describe_transactions(self, session: ClientSession, request: Message, version: int) -> Message:
        assert isinstance(request, DescribeTransactionsRequest)
        return self.transactions.describe_transactions(request, session.node_id)

    def _list_transactions(self, session: ClientSession, request: Message, version: int) -> Message:
        assert isinstance(request, ListTransactionsRequest)
        return self.transactions.list_transactions(request, session.node_id)

    def fail_over_coordinator(self) -> None:
        """Every coordinator shard is reloaded by a new incarnation replaying its records (a
        coordinator failover in place); each connection's next group request is answered
        NOT_COORDINATOR once."""
        for partition, _shard in self.coordinators.items():
            self.coordinators.reload(partition)
        self.transactions.reload()
        self.coordinator_generation += 1
        logger.info("coordinator failed over (incarnation %d)", self.coordinator_generation)

    # -- brokers going down and leadership moving ----------------------------------------------

    def node_stopped(self, node_id: int) -> None:
        """Broker `node_id` went down: the partitions it led (of topics, and of
        `__consumer_offsets`, so its groups) move to the brokers still up."""
        self.nodes.nodes[node_id].up = False
        moved = [p for p, leader in sorted(self.nodes.offsets_leaders.items()) if leader == node_id]
        for index, partition in enumerate(moved):
            successor = self.nodes.successor(node_id, index)
            if successor is not None:
                self._move_offsets_partition(partition, successor)
        index = 0
        for topic in self.topics:
            for number, log in enumerate(topic.partitions):
                if log.leader == node_id:
                    successor = self.nodes.successor(node_id, index)
                    index += 1
                    if successor is not None:
                        self.move_leader(topic.name, number, successor)
        logger.info("broker %d stopped; leadership moved to %s", node_id, self.nodes.up())

    def node_started(self, node_id: int) -> None:
        """Broker `node_id` is back (it leads nothing until leadership is moved to it), and
        partitions left without a leader (no broker was up) get it."""
        self.nodes.nodes[node_id].up = True
        for partition, leader in list(self.nodes.offsets_leaders.items()):
            if not self.nodes.is_up(leader):
                self._move_offsets_partition(partition, node_id)
        for topic in self.topics:
            for number, log in enumerate(topic.partitions):
                if not self.nodes.is_up(log.leader):
                    self.move_leader(topic.name, number, node_id)

    def move_coordinator(self, group_id: str, node_id: int) -> None:
        """Move the group's `__consumer_offsets` partition (every group on it, as in Kafka) to
        broker `node_id`, which loads it by replaying its records."""
        self._require_up(node_id)
        self._move_offsets_partition(self.coordinators.partition_of(group_id), node_id)

    def move_leader(self, topic: str, partition: int, node_id: int) -> None:
        """Broker `node_id` leads the partition from now on, with the next leader epoch."""
        self._require_up(node_id)
        found = self.topics.get(topic)
        if found is None or not 0 <= partition < len(found.partitions):
            raise ValueError(f"no partition {topic}-{partition}")
        log = found.partitions[partition]
        if log.leader != node_id:
            log.leader = node_id
            log.leader_epoch += 1
            for waiter in list(log.waiters):  # a long poll on the old leader answers at once
                waiter()
            logger.info("%s-%d: leader is broker %d (epoch %d)", topic, partition, node_id, log.leader_epoch)

    def _move_offsets_partition(self, partition: int, node_id: int) -> None:
        if self.nodes.offsets_leaders[partition] == node_id:
            return
        self.nodes.offsets_leaders[partition] = node_id
        self.coordinators.reload(partition)
        self.transactions.reload()
        self.coordinator_generation += 1

    def _require_up(self, node_id: int) -> None:
        if not self.nodes.is_up(node_id):
            raise ValueError(f"broker {node_id} is not up (brokers up: {self.nodes.up()})")

    def _metadata_changed(self, image: MetadataImage) -> None:
        self.coordinators.update_metadata(image)

    def close(self) -> None:
        """Stop the coordinators' timers."""
        self.coordinators.close()
        self.transactions.close()
