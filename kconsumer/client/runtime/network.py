"""The consumer's view of the cluster: bootstrap, broker connections, metadata, the coordinator.

Thin I/O: it opens and reuses one `BrokerConnection` per broker address, keeps the brokers and the
topic id ↔ name maps from the latest Metadata response, and finds a group's coordinator. It makes
no protocol decisions beyond choosing request versions; errors go back to the caller.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable

from ...errors import ErrorCode, KafkaApiError, error_for
from ...protocol.api import ApiKey
from ...protocol.messages.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopic,
)
from ...protocol.messages.metadata import (
    COORDINATOR_KEY_TYPE_GROUP,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
)
from ...protocol.uuid import Uuid
from .connection import Address, BrokerConnection, TransportError

log = logging.getLogger("kconsumer.client.runtime")

#: The first Metadata version whose topics can be looked up by id (facts §3.2).
METADATA_BY_ID_VERSION = 12
#: FindCoordinator v4 batches keys (KIP-699).
FIND_COORDINATOR_BATCHED_VERSION = 4


def parse_bootstrap(servers: str) -> list[Address]:
    """``"host:port,host2:port2"`` → addresses (a missing port means 9092)."""
    addresses = []
    for entry in servers.split(","):
        entry = entry.strip()
        if not entry:
            continue
        for prefix in ("PLAINTEXT://", "plaintext://"):
            entry = entry.removeprefix(prefix)
        host, _, port = entry.rpartition(":")
        if not host:
            host, port = entry, "9092"
        addresses.append(Address(host.strip("[]"), int(port)))
    if not addresses:
        raise ValueError("bootstrap.servers is empty")
    return addresses


class NetworkClient:
    """Connections to the brokers of one cluster."""

    def __init__(
        self,
        bootstrap_servers: str,
        client_id: str,
        connect_timeout_s: float,
        request_timeout_s: float,
    ) -> None:
        self._bootstrap = parse_bootstrap(bootstrap_servers)
        self.client_id = client_id
        self.connect_timeout_s = connect_timeout_s
        self.request_timeout_s = request_timeout_s
        self.brokers: dict[int, Address] = {}
        self.topic_names: dict[Uuid, str] = {}
        self.topic_ids: dict[str, Uuid] = {}
        self.partition_counts: dict[str, int] = {}
        #: The leader (node id) of each partition, from the latest Metadata.
        self.leaders: dict[tuple[str, int], int] = {}
        self._connections: dict[Address, BrokerConnection] = {}
        self._opening: dict[Address, asyncio.Future[BrokerConnection]] = {}

    # -- connections ------------------------------------------------------------------------------

    async def connection(self, address: Address) -> BrokerConnection:
        """A live, negotiated connection to `address` (opened if needed)."""
        existing = self._connections.get(address)
        if existing is not None and not existing.closed:
            return existing
        opening = self._opening.get(address)
        if opening is None:
            opening = asyncio.ensure_future(
                BrokerConnection.open(address, self.client_id, self.connect_timeout_s, self.request_timeout_s)
            )
            self._opening[address] = opening
            try:
                connection = await opening
            finally:
                self._opening.pop(address, None)
            self._connections[address] = connection
            return connection
        return await asyncio.shield(opening)

    async def any_connection(self) -> BrokerConnection:
        """A connection to some broker: known brokers first, then the bootstrap list."""
        candidates = list(dict.fromkeys([*self.brokers.values(), *self._bootstrap]))
        for address in candidates:
            existing = self._connections.get(address)
            if existing is not None and not existing.closed:
                return existing
        errors = []
        for address in candidates:
            try:
                return await self.connection(address)
            except TransportError as exc:
                errors.append(str(exc))
        raise TransportError("no broker reachable: " + "; ".join(errors))

    def close(self) -> None:
        for connection in self._connections.values():
            connection.close()
        self._connections.clear()

    # -- metadata ---------------------------------------------------------------------------------

    async def metadata(
        self, topics: Iterable[str] | None = None, topic_ids: Iterable[Uuid] | None = None
    ) -> MetadataResponse:
        """Metadata for `topics` by name and/or `topic_ids` (None for both: every topic). Updates
        the broker list and the topic maps."""
        connection = await self.any_connection()
        version = connection.version_for(ApiKey.METADATA)
        wanted: list[MetadataRequestTopic] | None
        if topics is None and topic_ids is None:
            wanted = None
        else:
            wanted = [MetadataRequestTopic(name=name) for name in topics or ()]
            ids = list(topic_ids or ())
            if ids and version >= METADATA_BY_ID_VERSION:
                wanted += [MetadataRequestTopic(topic_id=topic_id, name=None) for topic_id in ids]
            elif ids:
                wanted = None  # the broker cannot look ids up: ask for everything
        request = MetadataRequest(topics=wanted, allow_auto_topic_creation=False)
        response = await connection.request(request, version)
        assert isinstance(response, MetadataResponse)
        self._absorb(response)
        return response

    def _absorb(self, response: MetadataResponse) -> None:
        if response.brokers:
            self.brokers = {b.node_id: Address(b.host, b.port) for b in response.brokers}
        for topic in response.topics:
            if topic.error_code or topic.name is None:
                continue
            if topic.topic_id:
                old_id = self.topic_ids.get(topic.name)
                if old_id is not None and old_id != topic.topic_id:
                    self.topic_names.pop(old_id, None)
                self.topic_names[topic.topic_id] = topic.name
                self.topic_ids[topic.name] = topic.topic_id
            self.partition_counts[topic.name] = len(topic.partitions)
            for partition in topic.partitions:
                self.leaders[(topic.name, partition.partition_index)] = partition.leader_id

    # -- coordinator ------------------------------------------------------------------------------

    async def find_coordinator(self, group_id: str) -> Address:
        """The address of `group_id`'s coordinator; KafkaApiError when the broker says so."""
        connection = await self.any_connection()
        version = connection.version_for(ApiKey.FIND_COORDINATOR)
        if version >= FIND_COORDINATOR_BATCHED_VERSION:
            request = FindCoordinatorRequest(key_type=COORDINATOR_KEY_TYPE_GROUP, coordinator_keys=[group_id])
        else:
            request = FindCoordinatorRequest(key=group_id, key_type=COORDINATOR_KEY_TYPE_GROUP)
        response = await connection.request(request, version)
        assert isinstance(response, FindCoordinatorResponse)
        if version >= FIND_COORDINATOR_BATCHED_VERSION:
            if not response.coordinators:
                raise KafkaApiError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "empty FindCoordinator response")
            entry = response.coordinators[0]
            code, message, host, port = entry.error_code, entry.error_message, entry.host, entry.port
        else:
            code, message, host, port = (
                response.error_code,
                response.error_message,
                response.host,
                response.port,
            )
        if code:
            raise error_for(code, message)
        return Address(host, port)

    # -- offsets ----------------------------------------------------------------------------------

    async def list_offsets(
        self, wanted: dict[tuple[str, int], int], isolation_level: int = 0
    ) -> dict[tuple[str, int], int]:
        """The offsets of (topic, partition) at a timestamp (-2 earliest, -1 latest), asked of
        each partition's leader. Partitions that failed are left out."""
        missing = sorted({t for (t, p) in wanted if (t, p) not in self.leaders})
        if missing:
            await self.metadata(missing)
        by_leader: dict[int, dict[tuple[str, int], int]] = {}
        for key, timestamp in wanted.items():
            leader = self.leaders.get(key)
            if leader is not None and leader in self.brokers:
                by_leader.setdefault(leader, {})[key] = timestamp
        result: dict[tuple[str, int], int] = {}
        for leader, keys in by_leader.items():
            connection = await self.connection(self.brokers[leader])
            topics: dict[str, list[ListOffsetsPartition]] = {}
            for (topic, partition), timestamp in sorted(keys.items()):
                topics.setdefault(topic, []).append(
                    ListOffsetsPartition(partition_index=partition, timestamp=timestamp)
                )
            request = ListOffsetsRequest(
                isolation_level=isolation_level,
                topics=[ListOffsetsTopic(name=name, partitions=parts) for name, parts in topics.items()],
            )
            response = await connection.request(request)
            assert isinstance(response, ListOffsetsResponse)
            for topic_response in response.topics:
                for entry in topic_response.partitions:
                    if entry.error_code == 0 and entry.offset >= 0:
                        result[(topic_response.name, entry.partition_index)] = entry.offset
        return result
