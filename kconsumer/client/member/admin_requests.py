"""The group administration requests (`kconsumer groups`), built beside every other request the
client sends: the session and the admin client share one place that knows the wire forms.

Each function returns the request for a negotiated `version` (or one that every version takes).
Metadata, FindCoordinator and ListOffsets come from `cluster.ClusterView`, ApiVersions from
`api_versions_request`, as for the member session.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ...protocol.messages.api_versions import ApiVersionsRequest
from ...protocol.messages.classic_group import DescribeGroupsRequest
from ...protocol.messages.consumer_group import ConsumerGroupDescribeRequest
from ...protocol.messages.list_groups import ListGroupsRequest
from ...protocol.messages.offsets import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
    OffsetFetchRequest,
    OffsetFetchRequestTopic,
)
from .cluster import Key


def api_versions_request(software_version: str) -> ApiVersionsRequest:
    """ApiVersions, naming the client (KIP-511) as `kconsumer` `software_version`."""
    return ApiVersionsRequest(client_software_name="kconsumer", client_software_version=software_version)


def list_groups_request(version: int, states: Iterable[str], types: Iterable[str]) -> ListGroupsRequest:
    """ListGroups, filtered by state (v4+) and type (v5+) where the version has the filter."""
    return ListGroupsRequest(
        states_filter=sorted(states) if version >= 4 else [],
        types_filter=sorted(types) if version >= 5 else [],
    )


def consumer_group_describe_request(group_id: str) -> ConsumerGroupDescribeRequest:
    """ConsumerGroupDescribe of one group."""
    return ConsumerGroupDescribeRequest(group_ids=[group_id], include_authorized_operations=False)


def describe_groups_request(group_id: str) -> DescribeGroupsRequest:
    """DescribeGroups (classic groups) of one group."""
    return DescribeGroupsRequest(groups=[group_id])


def all_offsets_request(group_id: str, partition_counts: Mapping[str, int] | None) -> OffsetFetchRequest:
    """OffsetFetch by topic name of every offset of the group (null topics, KIP-88), or of
    every partition of the topics of `partition_counts` when given (a coordinator that
    answers only named topics); internal topics (``__...``) left out."""
    topics = None
    if partition_counts is not None:
        topics = [
            OffsetFetchRequestTopic(name=name, partition_indexes=list(range(count)))
            for name, count in sorted(partition_counts.items())
            if not name.startswith("__")
        ]
    return OffsetFetchRequest(group_id=group_id, topics=topics)


def admin_commit_request(group_id: str, offsets: Mapping[Key, int]) -> OffsetCommitRequest:
    """OffsetCommit by topic name from outside the group (no member id, generation -1), which
    Kafka accepts only while the group has no members."""
    topics: dict[str, list[OffsetCommitRequestPartition]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        topics.setdefault(topic, []).append(
            OffsetCommitRequestPartition(partition_index=partition, committed_offset=offset)
        )
    return OffsetCommitRequest(
        group_id=group_id,
        generation_id_or_member_epoch=-1,
        member_id="",
        topics=[OffsetCommitRequestTopic(name=name, partitions=parts) for name, parts in topics.items()],
    )


def offset_delete_request(group_id: str, keys: Iterable[Key]) -> OffsetDeleteRequest:
    """OffsetDelete of the group's committed offsets of `keys`."""
    topics: dict[str, list[int]] = {}
    for topic, partition in sorted(set(keys)):
        topics.setdefault(topic, []).append(partition)
    return OffsetDeleteRequest(
        group_id=group_id,
        topics=[
            OffsetDeleteRequestTopic(
                name=name, partitions=[OffsetDeleteRequestPartition(partition_index=p) for p in parts]
            )
            for name, parts in topics.items()
        ],
    )
