"""The answers any broker of a scripted or simulated cluster gives (Metadata, FindCoordinator), for
harnesses that drive a `MemberSession` without sockets: the simulation's brokers
(`sim/brokers.py`) and the scripted session of the unit tests (`scripted_session.py`).

A cluster here is a list of broker `Node`s and a catalogue of topics; a topic is described with
every partition led by one broker. The answers come from the reference broker's own handlers
(`kconsumer.broker.server.metadata`), so a harness answers exactly as the broker does, errors
included (UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID, INVALID_TOPIC_EXCEPTION).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from ..broker.server.metadata import (
    BrokerAddress,
    ClusterView,
    handle_find_coordinator,
    handle_metadata,
)
from ..client.member.effects import Node
from ..protocol.messages.metadata import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
)
from ..protocol.uuid import Uuid


@dataclass(frozen=True)
class TopicEntry:
    """One topic of the catalogue: its id, partition count and the node id leading every partition."""

    topic_id: Uuid
    partitions: int
    leader_id: int


@dataclass(frozen=True)
class _Lead:
    leader: int
    leader_epoch: int = 0


@dataclass(frozen=True)
class _Topic:
    name: str
    topic_id: Uuid
    partitions: Sequence[_Lead]


class _Catalogue:
    """`TopicEntry`s as the broker's Metadata handler reads topics (by name order); never creates one."""

    def __init__(self, topics: Mapping[str, TopicEntry]) -> None:
        self._by_name = {
            name: _Topic(name, entry.topic_id, [_Lead(entry.leader_id)] * entry.partitions)
            for name, entry in sorted(topics.items())
        }
        self._by_id = {topic.topic_id: topic for topic in self._by_name.values()}

    def __iter__(self) -> Iterator[_Topic]:
        return iter(self._by_name.values())

    def get(self, name: str | None) -> _Topic | None:
        return None if name is None else self._by_name.get(name)

    def get_by_id(self, topic_id: Uuid) -> _Topic | None:
        return self._by_id.get(topic_id)

    def create(self, name: str, partitions: int) -> _Topic:
        raise AssertionError(f"a harness cluster creates no topic ({name!r}): auto-creation is off")


def _view(brokers: Iterable[Node], cluster_id: str, coordinator: Node | None = None) -> ClusterView:
    addresses = [_address(node) for node in brokers]
    found = None if coordinator is None else _address(coordinator)
    return ClusterView(
        brokers=addresses,
        cluster_id=cluster_id,
        controller_id=addresses[0].node_id if addresses else -1,
        coordinator_of=lambda _key: found,
    )


def _address(node: Node) -> BrokerAddress:
    return BrokerAddress(node.node_id, node.host, node.port)


def metadata_answer(
    request: MetadataRequest,
    version: int,
    brokers: Iterable[Node],
    topics: Mapping[str, TopicEntry],
    cluster_id: str,
) -> MetadataResponse:
    """The brokers, and the topics asked for (all of them for a null list), sorted by name."""
    catalogue, view = _Catalogue(topics), _view(brokers, cluster_id)
    return handle_metadata(catalogue, view, request, version, auto_create=False, default_partitions=1)


def find_coordinator_answer(
    request: FindCoordinatorRequest, version: int, node: Node
) -> FindCoordinatorResponse:
    """`node` coordinates every key asked for (one key before v4, a batch from v4)."""
    return handle_find_coordinator(_view([node], "harness", coordinator=node), request, version)
