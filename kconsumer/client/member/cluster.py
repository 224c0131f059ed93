"""The member's view of the cluster: the brokers, topic ids and names, partition leaders, and the
requests that learn them (Metadata, FindCoordinator, ListOffsets). Pure: the session sends the
requests this module builds and hands their answers back.

Versions: Metadata looks topics up by id from v12 (an older broker is asked for every
topic instead); FindCoordinator batches keys from v4 (KIP-699).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from ...errors import ErrorCode
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
from ...protocol.uuid import ZERO_UUID, Uuid
from .effects import Node
from .events import MetadataUpdated
from .model import PartitionOffset, TopicIdPartition

#: The first Metadata version whose topics can be looked up by id.
METADATA_BY_ID_VERSION = 12
#: FindCoordinator v4 batches keys (KIP-699).
FIND_COORDINATOR_BATCHED_VERSION = 4

Key = tuple[str, int]


def parse_bootstrap(servers: str) -> tuple[Node, ...]:
    """``"host:port,host2:port2"`` -> bootstrap nodes (a missing port means 9092), numbered -1, -2..."""
    nodes: list[Node] = []
    for entry in servers.split(","):
        entry = entry.strip()
        if not entry:
            continue
        for prefix in ("PLAINTEXT://", "plaintext://"):
            entry = entry.removeprefix(prefix)
        host, _, port = entry.rpartition(":")
        if not host:
            host, port = entry, "9092"
        nodes.append(Node(host.strip("[]"), int(port), -1 - len(nodes)))
    if not nodes:
        raise ValueError("bootstrap.servers is empty")
    return tuple(nodes)


class ClusterView:
    """Brokers, topics and leaders as the latest Metadata responses described them."""

    def __init__(self, bootstrap: tuple[Node, ...]) -> None:
        if not bootstrap:
            raise ValueError("at least one bootstrap address is needed")
        self.bootstrap = bootstrap
        self.brokers: dict[int, Node] = {}
        self.topic_names: dict[Uuid, str] = {}
        self.topic_ids: dict[str, Uuid] = {}
        self.partition_counts: dict[str, int] = {}
        #: The leader (node id) of each partition.
        self.leaders: dict[Key, int] = {}

    def identified(
        self, offset: PartitionOffset, owned: Mapping[tuple[str, int], TopicIdPartition]
    ) -> PartitionOffset:
        """`offset` with its topic id: as given, else of the partition as the member owns it
        (`owned` by topic name and partition), else the one this view knows for the name."""
        tp = offset.partition
        if tp.topic_id != ZERO_UUID:
            return offset
        known = owned.get((tp.topic, tp.partition))
        if known is None:
            known = replace(tp, topic_id=self.topic_ids.get(tp.topic, ZERO_UUID))
        return replace(offset, partition=known)

    def candidates(self) -> list[Node]:
        """Nodes to send a request for "any broker" to: the known brokers, then the bootstrap
        addresses, without duplicates."""
        return list(dict.fromkeys([*self.brokers.values(), *self.bootstrap]))

    def leader_of(self, key: Key) -> Node | None:
        """The node leading (topic, partition), if known."""
        leader = self.leaders.get(key)
        return None if leader is None else self.brokers.get(leader)

    # -- Metadata -------------------------------------------------------------------------------

    @staticmethod
    def metadata_request(
        version: int, topics: Iterable[str] | None, topic_ids: Iterable[Uuid] | None
    ) -> MetadataRequest:
        """Metadata for `topics` by name and/or `topic_ids` (None for both: every topic). A broker
        that cannot look ids up (before v12) is asked for every topic."""
        wanted: list[MetadataRequestTopic] | None
        if topics is None and topic_ids is None:
            wanted = None
        else:
            wanted = [MetadataRequestTopic(name=name) for name in topics or ()]
            ids = list(topic_ids or ())
            if ids and version >= METADATA_BY_ID_VERSION:
                wanted += [MetadataRequestTopic(topic_id=topic_id, name=None) for topic_id in ids]
            elif ids:
                wanted = None
        return MetadataRequest(topics=wanted, allow_auto_topic_creation=False)

    def topics_known(self) -> MetadataUpdated:
        """The topics' ids, names and partition counts as the core learns them (a copy)."""
        return MetadataUpdated(dict(self.topic_names), dict(self.partition_counts))

    def absorb(self, response: MetadataResponse, every_topic: bool = False) -> None:
        """Learn brokers, topic ids and names, partition counts and leaders (a topic recreated
        under a new id replaces the old id). The answer for `every_topic` also tells which
        topics are gone."""
        if response.brokers:
            self.brokers = {b.node_id: Node(b.host, b.port, b.node_id) for b in response.brokers}
        if every_topic:
            listed = {topic.name for topic in response.topics}
            for name in [n for n in self.partition_counts if n not in listed]:
                self._forget(name)
        for topic in response.topics:
            if topic.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and topic.name is not None:
                self._forget(topic.name)  # deleted
                continue
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

    def _forget(self, name: str) -> None:
        topic_id = self.topic_ids.pop(name, None)
        if topic_id is not None and self.topic_names.get(topic_id) == name:
            del self.topic_names[topic_id]
        self.partition_counts.pop(name, None)

    # -- FindCoordinator ------------------------------------------------------------------------

    @staticmethod
    def find_coordinator_request(version: int, group_id: str) -> FindCoordinatorRequest:
        """FindCoordinator for a consumer group."""
        if version >= FIND_COORDINATOR_BATCHED_VERSION:
            return FindCoordinatorRequest(key_type=COORDINATOR_KEY_TYPE_GROUP, coordinator_keys=[group_id])
        return FindCoordinatorRequest(key=group_id, key_type=COORDINATOR_KEY_TYPE_GROUP)

    @staticmethod
    def coordinator_of(
        response: FindCoordinatorResponse, version: int
    ) -> tuple[Node | None, ErrorCode, str | None]:
        """(the coordinator, NONE) or (None, the error and its message) from a FindCoordinator answer."""
        if version >= FIND_COORDINATOR_BATCHED_VERSION:
            if not response.coordinators:
                return None, ErrorCode.COORDINATOR_NOT_AVAILABLE, "empty FindCoordinator response"
            entry = response.coordinators[0]
            code, message = entry.error_code, entry.error_message
            node = Node(entry.host, entry.port, entry.node_id)
        else:
            code, message = response.error_code, response.error_message
            node = Node(response.host, response.port, response.node_id)
        if code:
            return None, ErrorCode.of(code), message
        return node, ErrorCode.NONE, None

    # -- ListOffsets ----------------------------------------------------------------------------

    @staticmethod
    def list_offsets_request(timestamps: Mapping[Key, int], isolation_level: int) -> ListOffsetsRequest:
        """ListOffsets for (topic, partition) -> timestamp (-2 earliest, -1 latest)."""
        topics: dict[str, list[ListOffsetsPartition]] = {}
        for (topic, partition), timestamp in sorted(timestamps.items()):
            topics.setdefault(topic, []).append(
                ListOffsetsPartition(partition_index=partition, timestamp=timestamp)
            )
        return ListOffsetsRequest(
            isolation_level=isolation_level,
            topics=[ListOffsetsTopic(name=name, partitions=parts) for name, parts in topics.items()],
        )

    @staticmethod
    def offsets_of(response: ListOffsetsResponse) -> dict[Key, int]:
        """The offsets a ListOffsets answer found (partitions with an error are left out)."""
        return {
            (topic.name, entry.partition_index): entry.offset
            for topic in response.topics
            for entry in topic.partitions
            if entry.error_code == 0 and entry.offset >= 0
        }
