"""Metadata (3) and FindCoordinator (10).

Metadata: topic ids appear in v10, but looking a topic up *by id* works from v12 (where the
response's topic name becomes nullable); v13 adds a top-level ErrorCode at the end of the
response. FindCoordinator: v0-3 ask for one key and answer with single-key fields; v4+ batch
several keys (KIP-699) and answer with a Coordinators array.
"""

from __future__ import annotations

from ..schema import Message, Struct, field
from ..types import BOOL, INT8, INT16, INT32, STRING, UUID, Array
from ..uuid import Uuid

#: Default of the AuthorizedOperations fields: "not requested".
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)

# -- Metadata ----------------------------------------------------------------------------------


class MetadataRequestTopic(Struct):
    """One topic to describe, by name (any version) or by id (v12+; v10-11 carry it unused)."""

    topic_id: Uuid = field(UUID, "10+", ignorable=True)
    name: str | None = field(STRING, "0+", nullable="10+")


class MetadataRequest(Message, api_key=3, valid="0-13", flexible="9+"):
    """Asks for brokers and topic partitions; null `topics` (v1+) means every topic."""

    topics: list[MetadataRequestTopic] | None = field(Array(MetadataRequestTopic), "0+", nullable="1+")
    allow_auto_topic_creation: bool = field(BOOL, "4+", default=True)
    include_cluster_authorized_operations: bool = field(BOOL, "8-10")
    include_topic_authorized_operations: bool = field(BOOL, "8+")


class MetadataResponseBroker(Struct):
    """One broker of the cluster."""

    node_id: int = field(INT32, "0+")
    host: str = field(STRING, "0+")
    port: int = field(INT32, "0+")
    rack: str | None = field(STRING, "1+", nullable="1+", default=None, ignorable=True)


class MetadataResponsePartition(Struct):
    """Leader and replicas of one partition."""

    error_code: int = field(INT16, "0+")
    partition_index: int = field(INT32, "0+")
    leader_id: int = field(INT32, "0+")
    leader_epoch: int = field(INT32, "7+", default=-1, ignorable=True)
    replica_nodes: list[int] = field(Array(INT32), "0+")
    isr_nodes: list[int] = field(Array(INT32), "0+")
    offline_replicas: list[int] = field(Array(INT32), "5+", ignorable=True)


class MetadataResponseTopic(Struct):
    """One topic: its error, name, id and partitions."""

    error_code: int = field(INT16, "0+")
    name: str | None = field(STRING, "0+", nullable="12+")
    topic_id: Uuid = field(UUID, "10+", ignorable=True)
    is_internal: bool = field(BOOL, "1+", default=False, ignorable=True)
    partitions: list[MetadataResponsePartition] = field(Array(MetadataResponsePartition), "0+")
    topic_authorized_operations: int = field(INT32, "8+", default=AUTHORIZED_OPERATIONS_OMITTED)


class MetadataResponse(Message, api_key=3, valid="0-13", flexible="9+"):
    """Brokers, cluster id, controller and the requested topics."""

    throttle_time_ms: int = field(INT32, "3+", ignorable=True)
    brokers: list[MetadataResponseBroker] = field(Array(MetadataResponseBroker), "0+")
    cluster_id: str | None = field(STRING, "2+", nullable="2+", default=None, ignorable=True)
    controller_id: int = field(INT32, "1+", default=-1, ignorable=True)
    topics: list[MetadataResponseTopic] = field(Array(MetadataResponseTopic), "0+")
    cluster_authorized_operations: int = field(INT32, "8-10", default=AUTHORIZED_OPERATIONS_OMITTED)
    error_code: int = field(INT16, "13+", ignorable=True)


# -- FindCoordinator ---------------------------------------------------------------------------

#: FindCoordinator KeyType values.
COORDINATOR_KEY_TYPE_GROUP = 0
COORDINATOR_KEY_TYPE_TRANSACTION = 1
COORDINATOR_KEY_TYPE_SHARE = 2


class FindCoordinatorRequest(Message, api_key=10, valid="0-6", flexible="3+"):
    """Asks which broker coordinates a group (or transaction); v4+ ask for several keys."""

    key: str = field(STRING, "0-3")
    key_type: int = field(INT8, "1+", default=COORDINATOR_KEY_TYPE_GROUP)
    coordinator_keys: list[str] = field(Array(STRING), "4+")


class Coordinator(Struct):
    """v4+: the coordinator of one requested key, or the error finding it."""

    key: str = field(STRING, "4+")
    node_id: int = field(INT32, "4+")
    host: str = field(STRING, "4+")
    port: int = field(INT32, "4+")
    error_code: int = field(INT16, "4+")
    error_message: str | None = field(STRING, "4+", nullable="4+", default=None, ignorable=True)


class FindCoordinatorResponse(Message, api_key=10, valid="0-6", flexible="3+"):
    """v0-3: the one coordinator in top-level fields; v4+: the `coordinators` array."""

    throttle_time_ms: int = field(INT32, "1+", ignorable=True)
    error_code: int = field(INT16, "0-3")
    error_message: str | None = field(STRING, "1-3", nullable="1-3", default=None, ignorable=True)
    node_id: int = field(INT32, "0-3")
    host: str = field(STRING, "0-3")
    port: int = field(INT32, "0-3")
    coordinators: list[Coordinator] = field(Array(Coordinator), "4+")
