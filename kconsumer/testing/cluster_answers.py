"""The answers any broker of a scripted or simulated cluster gives (Metadata, FindCoordinator), for
harnesses that drive a `MemberSession` without sockets: the simulation's brokers
(`sim/brokers.py`) and the scripted session of the unit tests (`scripted_session.py`).

A cluster here is a list of broker `Node`s and a catalogue of topics; a topic is described with
every partition led by one broker. Names and ids that are not in the catalogue are answered with
Kafka's errors (UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID), as a broker does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..client.member.effects import Node
from ..errors import ErrorCode
from ..protocol.messages.metadata import (
    Coordinator,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from ..protocol.uuid import ZERO_UUID, Uuid

#: FindCoordinator v4 (KIP-699) answers a batch of keys.
_BATCHED_FIND_COORDINATOR = 4


@dataclass(frozen=True)
class TopicEntry:
    """One topic of the catalogue: its id, partition count and the node id leading every partition."""

    topic_id: Uuid
    partitions: int
    leader_id: int


def metadata_answer(
    request: MetadataRequest, brokers: Iterable[Node], topics: Mapping[str, TopicEntry], cluster_id: str
) -> MetadataResponse:
    """The brokers, and the topics asked for (all of them for a null list), sorted by name."""
    by_id = {entry.topic_id: name for name, entry in topics.items()}
    described: list[MetadataResponseTopic] = []
    if request.topics is None:
        described = [_describe(name, topics[name]) for name in sorted(topics)]
    else:
        for wanted in request.topics:
            name = by_id.get(wanted.topic_id) if wanted.name is None else wanted.name
            if name is not None and name in topics:
                described.append(_describe(name, topics[name]))
            elif wanted.name is None:
                described.append(
                    MetadataResponseTopic(
                        error_code=ErrorCode.UNKNOWN_TOPIC_ID, name=None, topic_id=wanted.topic_id
                    )
                )
            else:
                described.append(
                    MetadataResponseTopic(
                        error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name=wanted.name, topic_id=ZERO_UUID
                    )
                )
    nodes = list(brokers)
    return MetadataResponse(
        brokers=[MetadataResponseBroker(node_id=n.node_id, host=n.host, port=n.port) for n in nodes],
        cluster_id=cluster_id,
        controller_id=nodes[0].node_id if nodes else -1,
        topics=described,
    )


def find_coordinator_answer(
    request: FindCoordinatorRequest, version: int, node: Node
) -> FindCoordinatorResponse:
    """`node` coordinates every key asked for (one key before v4, a batch from v4)."""
    if version >= _BATCHED_FIND_COORDINATOR:
        return FindCoordinatorResponse(
            coordinators=[
                Coordinator(key=key, node_id=node.node_id, host=node.host, port=node.port, error_code=0)
                for key in request.coordinator_keys
            ]
        )
    return FindCoordinatorResponse(error_code=0, node_id=node.node_id, host=node.host, port=node.port)


def _describe(name: str, entry: TopicEntry) -> MetadataResponseTopic:
    return MetadataResponseTopic(
        error_code=0,
        name=name,
        topic_id=entry.topic_id,
        partitions=[
            MetadataResponsePartition(
                error_code=0,
                partition_index=index,
                leader_id=entry.leader_id,
                leader_epoch=0,
                replica_nodes=[entry.leader_id],
                isr_nodes=[entry.leader_id],
            )
            for index in range(entry.partitions)
        ],
    )
