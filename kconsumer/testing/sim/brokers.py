"""The simulated cluster's brokers as clients see them: addresses, and the answers any broker gives
(ApiVersions, Metadata, FindCoordinator). Group requests go to the coordinator (`host`).

Three brokers, ``broker0:9092`` .. ``broker2:9092`` (node ids 0-2), all in the bootstrap list. Each
implements exactly what the reference broker does (`api_versions_response`). FindCoordinator names
the broker the coordinator runs on, or answers COORDINATOR_NOT_AVAILABLE during an election;
Metadata describes the live topics (leader: broker 0, which the simulation never fetches from).
"""

from __future__ import annotations

from typing import Any

from ...broker.server.error_responses import error_response
from ...broker.server.metadata import api_versions_response
from ...client.member.effects import Node
from ...errors import ErrorCode
from ...protocol.messages.api_versions import ApiVersionsRequest
from ...protocol.messages.metadata import FindCoordinatorRequest, MetadataRequest, MetadataResponse
from ..cluster_answers import TopicEntry, find_coordinator_answer, metadata_answer
from .topics import TopicStore

BROKERS = 3
PORT = 9092
NODES = tuple(Node(f"broker{i}", PORT, i) for i in range(BROKERS))
BOOTSTRAP = tuple(Node(node.host, node.port, -1 - i) for i, node in enumerate(NODES))
_API_VERSIONS = api_versions_response()


def broker_of(node: Node) -> int:
    """The broker a node's address belongs to."""
    return int(node.host.removeprefix("broker"))


def is_cluster_request(request: Any) -> bool:
    """Whether any broker answers `request` (rather than the group coordinator)."""
    return isinstance(request, (ApiVersionsRequest, MetadataRequest, FindCoordinatorRequest))


def answer(request: Any, version: int, topics: TopicStore, coordinator: int | ErrorCode) -> Any:
    """A broker's answer to a cluster request; `coordinator` is the coordinator's broker or the
    error FindCoordinator answers."""
    if isinstance(request, ApiVersionsRequest):
        return _API_VERSIONS
    if isinstance(request, MetadataRequest):
        return _metadata(request, version, topics)
    assert isinstance(request, FindCoordinatorRequest)
    if isinstance(coordinator, ErrorCode):
        return error_response(request, version, int(coordinator), "election under way")
    return find_coordinator_answer(request, version, NODES[coordinator])


def _metadata(request: MetadataRequest, version: int, topics: TopicStore) -> MetadataResponse:
    catalogue = {
        t.name: TopicEntry(t.topic_id, t.num_partitions, NODES[0].node_id) for t in topics.live.values()
    }
    return metadata_answer(request, version, NODES, catalogue, "sim")
