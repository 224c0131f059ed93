"""ApiVersions (18), Metadata (3) and FindCoordinator (10): how clients discover the cluster.

What they advertise comes from a `ClusterView` of one connection: the brokers that are up, at their
address on the listener the connection came in on (as Kafka answers with the endpoints of the
request's listener), each partition's leader and leader epoch (its only replica), and the broker
coordinating a group (COORDINATOR_NOT_AVAILABLE while that broker is down).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from ...errors import ErrorCode
from ...protocol.api import API_SPECS, ApiKey
from ...protocol.messages.api_versions import ApiVersion, ApiVersionsRequest, ApiVersionsResponse
from ...protocol.messages.metadata import (
    AUTHORIZED_OPERATIONS_OMITTED,
    COORDINATOR_KEY_TYPE_GROUP,
    COORDINATOR_KEY_TYPE_TRANSACTION,
    Coordinator,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from ...protocol.uuid import ZERO_UUID, Uuid
from .log import topic_name_error

#: Every topic operation (READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS,
#: ALTER_CONFIGS as Kafka's AclOperation bit numbers): nothing is access-controlled here.
ALL_TOPIC_OPERATIONS = sum(1 << bit for bit in (3, 4, 5, 6, 7, 8, 10, 11))


class PartitionLead(Protocol):
    """Who leads a partition, as Metadata tells it."""

    @property
    def leader(self) -> int: ...

    @property
    def leader_epoch(self) -> int: ...


class CataloguedTopic(Protocol):
    """A topic as Metadata describes it."""

    @property
    def name(self) -> str: ...

    @property
    def topic_id(self) -> Uuid: ...

    @property
    def partitions(self) -> Sequence[PartitionLead]: ...


class TopicCatalogue(Protocol):
    """The topics a Metadata request is answered from: the broker's logs (`log.Topics`), or the
    catalogue of a cluster without sockets (`kconsumer.testing.cluster_answers`)."""

    def __iter__(self) -> Iterator[CataloguedTopic]: ...

    def get(self, name: str | None) -> CataloguedTopic | None: ...

    def get_by_id(self, topic_id: Uuid) -> CataloguedTopic | None: ...

    def create(self, name: str, partitions: int) -> CataloguedTopic: ...


@dataclass(frozen=True)
class BrokerAddress:
    """A broker as Metadata and FindCoordinator advertise it."""

    node_id: int
    host: str
    port: int


@dataclass(frozen=True)
class ClusterView:
    """The cluster as one connection is told about it (see the module docstring)."""

    brokers: list[BrokerAddress]
    cluster_id: str
    controller_id: int
    #: The group's coordinator, or None while its broker is down.
    coordinator_of: Callable[[str], BrokerAddress | None]


#: The APIs of the KIP-848 consumer group protocol (with kconsumer's client-side assignor extension).
CONSUMER_PROTOCOL_APIS = frozenset(
    {
        ApiKey.CONSUMER_GROUP_HEARTBEAT,
        ApiKey.CONSUMER_GROUP_DESCRIBE,
        ApiKey.CONSUMER_GROUP_PREPARE_ASSIGNMENT,
        ApiKey.CONSUMER_GROUP_INSTALL_ASSIGNMENT,
    }
)


def api_versions_response(consumer_protocol: bool = True) -> ApiVersionsResponse:
    """Exactly the APIs and versions we implement (`API_SPECS`), the extension APIs included;
    without the consumer group protocol's when `consumer_protocol` is off."""
    keys = []
    for key, spec in sorted(API_SPECS.items()):
        if not consumer_protocol and key in CONSUMER_PROTOCOL_APIS:
            continue
        versions = spec.versions
        assert versions.hi is not None, spec
        keys.append(ApiVersion(api_key=key, min_version=versions.lo, max_version=versions.hi))
    return ApiVersionsResponse(error_code=0, api_keys=keys)


_API_VERSIONS = {enabled: api_versions_response(enabled) for enabled in (False, True)}


def handle_api_versions(
    request: ApiVersionsRequest, version: int, consumer_protocol: bool = True
) -> ApiVersionsResponse:
    return _API_VERSIONS[consumer_protocol]


def handle_metadata(
    topics: TopicCatalogue,
    view: ClusterView,
    request: MetadataRequest,
    version: int,
    *,
    auto_create: bool,
    default_partitions: int,
) -> MetadataResponse:
    """Brokers and topics; a null topic list (or an empty one in v0) asks for every topic."""
    include_ops = request.include_topic_authorized_operations
    described: list[MetadataResponseTopic] = []
    if request.topics is None or (version == 0 and not request.topics):
        described = [_describe(topic, include_ops) for topic in topics]
    else:
        seen: set[object] = set()
        allow_create = auto_create and (version < 4 or request.allow_auto_topic_creation)
        # As Kafka: one non-zero topic id makes the whole request a lookup by id (v12+), whatever
        # the entries' names say (the Java client sends an empty name with each id).
        by_id = version >= 12 and any(w.topic_id != ZERO_UUID for w in request.topics)
        for wanted in request.topics:
            if by_id and wanted.topic_id == ZERO_UUID:
                continue
            key = wanted.topic_id if by_id else wanted.name
            if key in seen:
                continue
            seen.add(key)
            if by_id or wanted.name is None:
                topic = topics.get_by_id(wanted.topic_id)
                if topic is None:
                    described.append(
                        MetadataResponseTopic(
                            error_code=ErrorCode.UNKNOWN_TOPIC_ID,
                            name=None if version >= 12 else "",
                            topic_id=wanted.topic_id,
                        )
                    )
                else:
                    described.append(_describe(topic, include_ops))
                continue
            topic = topics.get(wanted.name)
            if topic is None and topic_name_error(wanted.name) is not None:
                described.append(
                    MetadataResponseTopic(error_code=ErrorCode.INVALID_TOPIC_EXCEPTION, name=wanted.name)
                )
                continue
            if topic is None and allow_create:
                topic = topics.create(wanted.name, default_partitions)
            if topic is None:
                described.append(
                    MetadataResponseTopic(
                        error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name=wanted.name, topic_id=ZERO_UUID
                    )
                )
            else:
                described.append(_describe(topic, include_ops))
    up = {broker.node_id for broker in view.brokers}
    for answer in described:
        for partition in answer.partitions:
            if partition.leader_id not in up:  # its broker is down and nobody took over yet
                partition.error_code = ErrorCode.LEADER_NOT_AVAILABLE
                partition.leader_id = -1
    return MetadataResponse(
        brokers=[MetadataResponseBroker(node_id=b.node_id, host=b.host, port=b.port) for b in view.brokers],
        cluster_id=view.cluster_id,
        controller_id=view.controller_id,
        topics=described,
    )


def _describe(topic: CataloguedTopic, include_ops: bool) -> MetadataResponseTopic:
    return MetadataResponseTopic(
        error_code=0,
        name=topic.name,
        topic_id=topic.topic_id,
        partitions=[
            MetadataResponsePartition(
                error_code=0,
                partition_index=index,
                leader_id=log.leader,
                leader_epoch=log.leader_epoch,
                replica_nodes=[log.leader],
                isr_nodes=[log.leader],
            )
            for index, log in enumerate(topic.partitions)
        ],
        topic_authorized_operations=ALL_TOPIC_OPERATIONS if include_ops else AUTHORIZED_OPERATIONS_OMITTED,
    )


def handle_find_coordinator(
    view: ClusterView, request: FindCoordinatorRequest, version: int
) -> FindCoordinatorResponse:
    """The broker coordinating each group or transactional id (placed alike, by the id's hash);
    share coordinators do not exist here."""
    if version >= 4:
        return FindCoordinatorResponse(
            coordinators=[_coordinator(view, key, request.key_type) for key in request.coordinator_keys]
        )
    found = _coordinator(view, request.key, request.key_type)
    return FindCoordinatorResponse(
        error_code=found.error_code,
        error_message=found.error_message,
        node_id=found.node_id,
        host=found.host,
        port=found.port,
    )


def _coordinator(view: ClusterView, key: str, key_type: int) -> Coordinator:
    if key_type not in (COORDINATOR_KEY_TYPE_GROUP, COORDINATOR_KEY_TYPE_TRANSACTION):
        return _not_available(key, "the reference cluster has no share coordinator")
    found = view.coordinator_of(key)
    if found is None:
        return _not_available(key, "the coordinator is not available")
    return Coordinator(key=key, node_id=found.node_id, host=found.host, port=found.port, error_code=0)


def _not_available(key: str, why: str) -> Coordinator:
    return Coordinator(
        key=key,
        node_id=-1,
        host="",
        port=-1,
        error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE,
        error_message=why,
    )
