"""A response carrying one error code for any request we serve, placed where that API puts errors.

Kafka builds these with each request's ``getErrorResponse``: Produce, ListOffsets and OffsetCommit
fail every partition; Fetch sets its top-level code (v7+) and, before v13, every partition too;
Metadata fails every requested topic (and sets the v13 top-level code); the admin APIs fail every
topic; FindCoordinator fails its key (v0-3) or every key (v4+); ConsumerGroupDescribe,
DescribeGroups and DeleteGroups fail every group; OffsetFetch fails every group (v8+), the whole
response (v2-7) or every partition (v1); the rest have a single top-level code. Used for injected faults, for
NOT_COORDINATOR after a coordinator failover and for UNKNOWN_SERVER_ERROR when a handler fails.
"""

from __future__ import annotations

from collections.abc import Callable

from ...protocol.api import API_SPECS, ApiKey
from ...protocol.messages import (
    admin,
    classic_group,
    consumer_group,
    fetch,
    list_groups,
    list_offsets,
    metadata,
    offsets,
    produce,
    transactions,
)
from ...protocol.messages.api_versions import ApiVersion, ApiVersionsResponse
from ...protocol.schema import Message


def error_response(request: Message, version: int, code: int, message: str | None = None) -> Message:
    """The response to `request` (at `version`) failing with `code`."""
    builder = _BUILDERS.get(request.API_KEY)
    if builder is not None:
        return builder(request, version, code, message)
    # Single top-level error code (ListGroups, heartbeat, the extension APIs).
    response = API_SPECS[request.API_KEY].response()
    values = response.__dict__
    values["error_code"] = code
    if "error_message" in values:
        values["error_message"] = message
    return response


def api_versions_error(code: int) -> ApiVersionsResponse:
    """ApiVersions failing with `code`; UNSUPPORTED_VERSION lists our ApiVersions range (KIP-511)."""
    versions = API_SPECS[ApiKey.API_VERSIONS].versions
    assert versions.hi is not None
    return ApiVersionsResponse(
        error_code=code,
        api_keys=[ApiVersion(api_key=ApiKey.API_VERSIONS, min_version=versions.lo, max_version=versions.hi)],
    )


def _produce(request: Message, version: int, code: int, message: str | None) -> Message:
    assert isinstance(request, produce.ProduceRequest)
    return produce.ProduceResponse(
        responses=[
            produce.TopicProduceResponse(
                name=topic.name,
                topic_id=topic.topic_id,
                partition_responses=[
                    produce.PartitionProduceResponse(
                        index=p.index, error_code=code, base_offset=-1, error_message=message
                    )
                    for p in topic.partition_data
                ],
            )
            for topic in request.topic_data
        ]
    )


def _fetch(request: Message, version: int, code: int, message: str | None) -> Message:
    assert isinstance(request, fetch.FetchRequest)
    if version >= 13:
        return fetch.FetchResponse(error_code=code)
    return fetch.FetchResponse(
        error_code=code,
        responses=[
            fetch.FetchableTopicResponse(
                topic=topic.topic,
                topic_id=topic.topic_id,
                partitions=[
                    fetch.PartitionData(
                        partition_index=p.partition, error_code=code, high_watermark=-1, records=b""
                    )
                    for p in topic.partitions
                ],
            )
            for topic in request.topics
        ],
    )


def _list_offsets(request: Message, version: int, code: int, message: str | None) -> Message:
    assert isinstance(request, list_offsets.ListOffsetsRequest)
    return list_offsets.ListOffsetsResponse(
        topics=[
            list_offsets.ListOffsetsTopicResponse(
                name=topic.name,
                partitions=[
                    list_offsets.ListOffsetsPartitionResponse(
                        partition_index=p.partition_index, error_code=code
                    )
                    for p in topic.partitions
                ],
            )
            for topic in request.topics
        ]
    )


def _metadata(request: Message, version: int, code: int, message: str | None) -> Message:
    assert isinstance(request, metadata.MetadataRequest)
    return metadata.MetadataResponse(
        topics=[
            metadata.MetadataResponseTopic(
                error_code=code,
                name=topic.name if topic.name is not None or version >= 12 else "",
                topic_id=topic.topic_id,
            )
            for topic in request.topics or ()
        ],
        error_code=code,
    )


def _offset_commit(request: Message, version: int, code: int, message: str | None) -> Message:
    assert isinstance(request, offsets.OffsetCommitRequest)
    return offsets.OffsetCommitResponse(
        topics=[
            offsets.OffsetCommitResponseTopic(
                name=topic.name,
                topic_id=topic.topic_id,
                partitions=[
                    offsets.OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=code)
                    for p in topic.partitions
                ],
            )
            for topic in request.topics
        ]
    )


def _offset_fetch(request: Message, version: int, code: int, message: str | None) -> Message:
    assert isinstance(request, offsets.OffsetFetchRequest)
    if version >= 8:
        return offsets.OffsetFetchResponse(
            groups=[
                offsets.OffsetFetchResponseGroup(group_id=group.group_id, error_code=code)
                for group in request.groups
            ]
        )
    if version >= 2:
        return offsets.OffsetFetchResponse(error_code=code)
    return offsets.OffsetFetchResponse(
        topics=[
            offsets.OffsetFetchResponseTopic(
                name=topic.name,
                partitions=[
                    offsets.OffsetFetchResponsePartition(
                        partition_index=p, committed_offset=-1, metadata="", error_code=code
                    )
                    for p in topic.partition_indexes
                ],
            )
            for topic in request.topics or ()
        ]
    )


def _find_coordinator(request: Message, version: int, code: int, message: str | None) -> Message:
    assert isinstance(request, metadata.FindCoordinatorRequest)
    if version >= 4:
        return metadata.FindCoordinatorResponse(
            coordinators=[
                metadata.Coordinator(
                    key=key, node_id=-1, host="", port=-1, error_code=code, error_message=message
                )
                for key in request.coordinator_keys
            ]
        )
    return metadata.FindCoordinatorResponse(
        error_code=code, error_message=message, node_id=-1, host="", port=-1
    )


def _api_versions(request: Message, version: int, code: int, message: str | None) -> Message:
    return api_versions_error(code)


def _create_topics(request: Message, version: int, code: int, message: str | None) -> Message:
    assert isinstance(request, admin.CreateTopicsRequest)
    return admin.CreateTopicsResponse(
        topics=[
            admin.CreatableTopicResult(name=topic.name, error_code=code, error_message=message)
            for topic in request.topics
        ]
    )


def _delete_topics(request: Message, version: int, code: int, message: str | None) -> Message:
    assert isinstance(request, admin.DeleteTopicsRequest)
    if version >= 6:
        results = [
            admin.DeletableTopicResult(
                name=topic.name, topic_id=topic.topic_id, error_code=code, error_message=message
            )
            for topic in request.topics
        ]
    else:
        results = [
            admin.DeletableTopicResult(name=name, error_code=code, error_message=message)
            for name in request.topic_names
        ]
    return admin.DeleteTopicsResponse(responses=results)


def _create_partitions(request: Message, version: int, code: int, message: str | None) -> Message:
    assert isinstance(request, admin.CreatePartitionsRequest)
    return admin.CreatePartitionsResponse(
        results=[
            admin.CreatePartitionsTopicResult(name=topic.name, error_code=code, error_message=message)
            for topic in request.topics
        ]
    )


def _describe(request: Message, version: int, code: int, message: str | None) -> Message:
    assert isinstance(request, consumer_group.ConsumerGroupDescribeRequest)
    return consumer_group.ConsumerGroupDescribeResponse(
        groups=[
            consumer_group.DescribedGroup(group_id=group_id, error_code=code, error_message=message)
            for group_id in request.group_ids
        ]
    )


_Builder = Callable[[Message, int, int, "str | None"], Message]


def _describe_groups(request: Message, version: int, code: int, message: str | None) -> Message:
    assert isinstance(request, classic_group.DescribeGroupsRequest)
    return classic_group.DescribeGroupsResponse(
        groups=[
            classic_group.DescribedGroup(group_id=group, error_code=code, error_message=message)
            for group in request.groups
        ]
    )


def _delete_groups(request: Message, version: int, code: int, message: str | None) -> Message:
    assert isinstance(request, list_groups.DeleteGroupsRequest)
    return list_groups.DeleteGroupsResponse(
        results=[list_groups.DeletableGroupResult(group_id=g, error_code=code) for g in request.groups_names]
    )


def _add_partitions_to_txn(request: Message, version: int, code: int, message: str | None) -> Message:
    assert isinstance(request, transactions.AddPartitionsToTxnRequest)
    return transactions.AddPartitionsToTxnResponse(
        results_by_topic=[
            transactions.AddPartitionsToTxnTopicResult(
                name=topic.name,
                results_by_partition=[
                    transactions.AddPartitionsToTxnPartitionResult(
                        partition_index=p, partition_error_code=code
                    )
                    for p in topic.partitions
                ],
            )
            for topic in request.topics
        ]
    )


def _txn_offset_commit(request: Message, version: int, code: int, message: str | None) -> Message:
    assert isinstance(request, transactions.TxnOffsetCommitRequest)
    return transactions.TxnOffsetCommitResponse(
        topics=[
            transactions.TxnOffsetCommitResponseTopic(
                name=topic.name,
                partitions=[
                    transactions.TxnOffsetCommitResponsePartition(
                        partition_index=p.partition_index, error_code=code
                    )
                    for p in topic.partitions
                ],
            )
            for topic in request.topics
        ]
    )


_BUILDERS: dict[int, _Builder] = {
    ApiKey.PRODUCE: _produce,
    ApiKey.FETCH: _fetch,
    ApiKey.LIST_OFFSETS: _list_offsets,
    ApiKey.METADATA: _metadata,
    ApiKey.OFFSET_COMMIT: _offset_commit,
    ApiKey.OFFSET_FETCH: _offset_fetch,
    ApiKey.FIND_COORDINATOR: _find_coordinator,
    ApiKey.API_VERSIONS: _api_versions,
    ApiKey.CREATE_TOPICS: _create_topics,
    ApiKey.DELETE_TOPICS: _delete_topics,
    ApiKey.CREATE_PARTITIONS: _create_partitions,
    ApiKey.CONSUMER_GROUP_DESCRIBE: _describe,
    ApiKey.DESCRIBE_GROUPS: _describe_groups,
    ApiKey.DELETE_GROUPS: _delete_groups,
    ApiKey.ADD_PARTITIONS_TO_TXN: _add_partitions_to_txn,
    ApiKey.TXN_OFFSET_COMMIT: _txn_offset_commit,
}
