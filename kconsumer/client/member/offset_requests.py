"""Building OffsetCommit / OffsetFetch requests for the negotiated version, and reading their answers.

v10 of both APIs identifies topics by id; older versions by name. OffsetCommit v9 is the first a
consumer-protocol member may use (member id and epoch); OffsetFetch v8+ batches groups (v9 adds
member id and epoch), v1-v7 name a single group. Pure functions: the runtime sends the requests.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ...errors import ErrorCode
from ...protocol.messages.offsets import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
    OffsetFetchResponse,
)
from ...protocol.uuid import ZERO_UUID, Uuid
from .model import PartitionOffset, TopicIdPartition

#: The first OffsetCommit version a consumer-protocol member may use.
COMMIT_MIN_VERSION = 9
#: Topic ids instead of names (KIP-848).
BY_ID_VERSION = 10
#: OffsetFetch v8 batches groups.
FETCH_GROUPS_VERSION = 8
#: OffsetFetch v7 adds RequireStable (KIP-447).
REQUIRE_STABLE_VERSION = 7


def _by_topic(partitions: Iterable[TopicIdPartition]) -> dict[tuple[Uuid, str], list[int]]:
    grouped: dict[tuple[Uuid, str], list[int]] = {}
    for tp in partitions:
        grouped.setdefault((tp.topic_id, tp.topic), []).append(tp.partition)
    return grouped


def commit_request(
    version: int,
    group_id: str,
    member_id: str,
    member_epoch: int,
    instance_id: str | None,
    offsets: Sequence[PartitionOffset],
) -> OffsetCommitRequest:
    """An OffsetCommit at `version` (topic ids from v10, names before)."""
    topics: dict[tuple[Uuid, str], list[OffsetCommitRequestPartition]] = {}
    for entry in offsets:
        tp = entry.partition
        topics.setdefault((tp.topic_id, tp.topic), []).append(
            OffsetCommitRequestPartition(
                partition_index=tp.partition,
                committed_offset=entry.offset,
                committed_leader_epoch=-1 if entry.leader_epoch is None else entry.leader_epoch,
                committed_metadata=entry.metadata,
            )
        )
    by_id = version >= BY_ID_VERSION
    return OffsetCommitRequest(
        group_id=group_id,
        generation_id_or_member_epoch=member_epoch,
        member_id=member_id,
        group_instance_id=instance_id if version >= 7 else None,
        topics=[
            OffsetCommitRequestTopic(
                name="" if by_id else name, topic_id=topic_id if by_id else ZERO_UUID, partitions=parts
            )
            for (topic_id, name), parts in sorted(topics.items(), key=lambda item: item[0][1])
        ],
    )


def commit_error(response: OffsetCommitResponse) -> ErrorCode:
    """The first partition error of a commit response (NONE when every partition succeeded)."""
    for topic in response.topics:
        for partition in topic.partitions:
            if partition.error_code:
                return ErrorCode.of(partition.error_code)
    return ErrorCode.NONE


def fetch_request(
    version: int,
    group_id: str,
    member_id: str | None,
    member_epoch: int,
    partitions: Sequence[TopicIdPartition] | None,
) -> OffsetFetchRequest:
    """An OffsetFetch at `version`; `partitions` None asks for every committed offset."""
    grouped = None if partitions is None else _by_topic(partitions)
    if version < FETCH_GROUPS_VERSION:
        topics = None
        if grouped is not None:
            topics = [
                OffsetFetchRequestTopic(name=name, partition_indexes=sorted(parts))
                for (_tid, name), parts in sorted(grouped.items(), key=lambda item: item[0][1])
            ]
        return OffsetFetchRequest(group_id=group_id, topics=topics)
    by_id = version >= BY_ID_VERSION
    group_topics = None
    if grouped is not None:
        group_topics = [
            OffsetFetchRequestTopics(
                name="" if by_id else name,
                topic_id=topic_id if by_id else ZERO_UUID,
                partition_indexes=sorted(parts),
            )
            for (topic_id, name), parts in sorted(grouped.items(), key=lambda item: item[0][1])
        ]
    return OffsetFetchRequest(
        groups=[
            OffsetFetchRequestGroup(
                group_id=group_id,
                member_id=member_id if version >= 9 else None,
                member_epoch=member_epoch if version >= 9 else -1,
                topics=group_topics,
            )
        ]
    )


#: Partition errors of OffsetCommit and OffsetFetch that say the coordinator does not know the
#: topic (it was deleted; a topic id never comes back) or the partition: retriable codes that
#: retrying cannot fix. A revocation commit retried until its deadline would hold the rebalance up
#: for max.poll.interval.ms after a topic deletion; an offset fetch retried, the member's
#: reconciliation (and every later assignment) forever.
TOPIC_GONE = frozenset({ErrorCode.UNKNOWN_TOPIC_ID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION})


def fetch_result(
    response: OffsetFetchResponse,
    version: int,
    partitions: Sequence[TopicIdPartition],
) -> tuple[ErrorCode, tuple[PartitionOffset, ...], tuple[TopicIdPartition, ...]]:
    """(error, committed offsets of `partitions`; -1 = none, the partitions whose topic is gone)
    from an OffsetFetch response.

    A group-level error wins; otherwise the first partition error, one of a topic that exists
    before a `TOPIC_GONE` one (the committed offsets of the other partitions are still
    returned)."""
    by_id: dict[tuple[Uuid, int], TopicIdPartition] = {(tp.topic_id, tp.partition): tp for tp in partitions}
    by_name: dict[tuple[str, int], TopicIdPartition] = {(tp.topic, tp.partition): tp for tp in partitions}
    offsets: list[PartitionOffset] = []
    error = ErrorCode.NONE
    if version >= FETCH_GROUPS_VERSION:
        if not response.groups:
            return ErrorCode.UNKNOWN_SERVER_ERROR, (), ()
        group = response.groups[0]
        if group.error_code:
            return ErrorCode.of(group.error_code), (), ()
        entries = _entries(group.topics)
    else:
        if response.error_code:
            return ErrorCode.of(response.error_code), (), ()
        entries = _entries(response.topics)
    gone: list[TopicIdPartition] = []
    for topic_id, name, index, offset, leader_epoch, metadata, code in entries:
        tp = by_id.get((topic_id, index)) if version >= BY_ID_VERSION else by_name.get((name, index))
        if tp is None:
            continue
        if code:
            partition_error = ErrorCode.of(code)
            if partition_error in TOPIC_GONE:
                gone.append(tp)
            if error is ErrorCode.NONE or (error in TOPIC_GONE and partition_error not in TOPIC_GONE):
                error = partition_error
            continue
        offsets.append(
            PartitionOffset(tp, offset, None if leader_epoch < 0 else leader_epoch, metadata or "")
        )
    return error, tuple(offsets), tuple(gone)


_Entry = tuple[Uuid, str, int, int, int, "str | None", int]


def _entries(topics: Iterable[Any]) -> list[_Entry]:
    """(topic id, name, partition, offset, leader epoch, metadata, error) of every partition of an
    OffsetFetch response's topics (v0-7 topics have no id: the zero UUID)."""
    return [
        (
            getattr(topic, "topic_id", ZERO_UUID),
            topic.name,
            p.partition_index,
            p.committed_offset,
            p.committed_leader_epoch,
            p.metadata,
            p.error_code,
        )
        for topic in topics
        for p in topic.partitions
    ]
