"""OffsetCommit (8), OffsetFetch (9) and OffsetDelete (47).

v9 is the first version usable with the consumer protocol (member id and epoch); v10 replaces
topic names by topic ids. OffsetFetch v8+ batches several groups.
"""

from __future__ import annotations

from ..schema import Message, Struct, field
from ..types import BOOL, INT16, INT32, INT64, STRING, UUID, Array
from ..uuid import ZERO_UUID, Uuid

# -- OffsetCommit ------------------------------------------------------------------------------


class OffsetCommitRequestPartition(Struct):
    partition_index: int = field(INT32, "0+")
    committed_offset: int = field(INT64, "0+")
    committed_leader_epoch: int = field(INT32, "6+", default=-1, ignorable=True)
    committed_metadata: str | None = field(STRING, "0+", nullable="0+", default="")


class OffsetCommitRequestTopic(Struct):
    name: str = field(STRING, "0-9", ignorable=True)
    topic_id: Uuid = field(UUID, "10+", default=ZERO_UUID, ignorable=True)
    partitions: list[OffsetCommitRequestPartition] = field(Array(OffsetCommitRequestPartition), "0+")


class OffsetCommitRequest(Message, api_key=8, valid="2-10", flexible="8+"):
    group_id: str = field(STRING, "0+")
    generation_id_or_member_epoch: int = field(INT32, "1+", default=-1, ignorable=True)
    member_id: str = field(STRING, "1+", ignorable=True)
    group_instance_id: str | None = field(STRING, "7+", nullable="7+", default=None)
    retention_time_ms: int = field(INT64, "2-4", default=-1, ignorable=True)
    topics: list[OffsetCommitRequestTopic] = field(Array(OffsetCommitRequestTopic), "0+")


class OffsetCommitResponsePartition(Struct):
    partition_index: int = field(INT32, "0+")
    error_code: int = field(INT16, "0+")


class OffsetCommitResponseTopic(Struct):
    name: str = field(STRING, "0-9", ignorable=True)
    topic_id: Uuid = field(UUID, "10+", default=ZERO_UUID, ignorable=True)
    partitions: list[OffsetCommitResponsePartition] = field(Array(OffsetCommitResponsePartition), "0+")


class OffsetCommitResponse(Message, api_key=8, valid="2-10", flexible="8+"):
    throttle_time_ms: int = field(INT32, "3+", ignorable=True)
    topics: list[OffsetCommitResponseTopic] = field(Array(OffsetCommitResponseTopic), "0+")


# -- OffsetFetch -------------------------------------------------------------------------------


class OffsetFetchRequestTopic(Struct):
    """v0-7: one topic of the single group."""

    name: str = field(STRING, "0-7")
    partition_indexes: list[int] = field(Array(INT32), "0-7")


class OffsetFetchRequestTopics(Struct):
    """v8+: one topic of one of the groups."""

    name: str = field(STRING, "8-9", ignorable=True)
    topic_id: Uuid = field(UUID, "10+", default=ZERO_UUID, ignorable=True)
    partition_indexes: list[int] = field(Array(INT32), "8+")


class OffsetFetchRequestGroup(Struct):
    group_id: str = field(STRING, "8+")
    member_id: str | None = field(STRING, "9+", nullable="9+", default=None, ignorable=True)
    member_epoch: int = field(INT32, "9+", default=-1, ignorable=True)
    topics: list[OffsetFetchRequestTopics] | None = field(
        Array(OffsetFetchRequestTopics), "8+", nullable="8+"
    )


class OffsetFetchRequest(Message, api_key=9, valid="1-10", flexible="6+"):
    group_id: str = field(STRING, "0-7")
    topics: list[OffsetFetchRequestTopic] | None = field(
        Array(OffsetFetchRequestTopic), "0-7", nullable="2-7"
    )
    groups: list[OffsetFetchRequestGroup] = field(Array(OffsetFetchRequestGroup), "8+")
    require_stable: bool = field(BOOL, "7+", default=False)


class OffsetFetchResponsePartition(Struct):
    """v0-7."""

    partition_index: int = field(INT32, "0-7")
    committed_offset: int = field(INT64, "0-7")
    committed_leader_epoch: int = field(INT32, "5-7", default=-1, ignorable=True)
    metadata: str | None = field(STRING, "0-7", nullable="0-7", default="")
    error_code: int = field(INT16, "0-7")


class OffsetFetchResponseTopic(Struct):
    """v0-7."""

    name: str = field(STRING, "0-7")
    partitions: list[OffsetFetchResponsePartition] = field(Array(OffsetFetchResponsePartition), "0-7")


class OffsetFetchResponsePartitions(Struct):
    """v8+."""

    partition_index: int = field(INT32, "8+")
    committed_offset: int = field(INT64, "8+")
    committed_leader_epoch: int = field(INT32, "8+", default=-1, ignorable=True)
    metadata: str | None = field(STRING, "8+", nullable="8+", default="")
    error_code: int = field(INT16, "8+")


class OffsetFetchResponseTopics(Struct):
    """v8+."""

    name: str = field(STRING, "8-9", ignorable=True)
    topic_id: Uuid = field(UUID, "10+", default=ZERO_UUID, ignorable=True)
    partitions: list[OffsetFetchResponsePartitions] = field(Array(OffsetFetchResponsePartitions), "8+")


class OffsetFetchResponseGroup(Struct):
    group_id: str = field(STRING, "8+")
    topics: list[OffsetFetchResponseTopics] = field(Array(OffsetFetchResponseTopics), "8+")
    error_code: int = field(INT16, "8+", default=0)


class OffsetFetchResponse(Message, api_key=9, valid="1-10", flexible="6+"):
    throttle_time_ms: int = field(INT32, "3+", ignorable=True)
    topics: list[OffsetFetchResponseTopic] = field(Array(OffsetFetchResponseTopic), "0-7")
    error_code: int = field(INT16, "2-7", default=0, ignorable=True)
    groups: list[OffsetFetchResponseGroup] = field(Array(OffsetFetchResponseGroup), "8+")


# -- OffsetDelete (KIP-496) --------------------------------------------------------------------


class OffsetDeleteRequestPartition(Struct):
    partition_index: int = field(INT32, "0+")


class OffsetDeleteRequestTopic(Struct):
    name: str = field(STRING, "0+")
    partitions: list[OffsetDeleteRequestPartition] = field(Array(OffsetDeleteRequestPartition), "0+")


class OffsetDeleteRequest(Message, api_key=47, valid="0", flexible="none"):
    """Deletes a group's committed offsets of partitions it does not subscribe to."""

    group_id: str = field(STRING, "0+")
    topics: list[OffsetDeleteRequestTopic] = field(Array(OffsetDeleteRequestTopic), "0+")


class OffsetDeleteResponsePartition(Struct):
    partition_index: int = field(INT32, "0+")
    error_code: int = field(INT16, "0+")


class OffsetDeleteResponseTopic(Struct):
    name: str = field(STRING, "0+")
    partitions: list[OffsetDeleteResponsePartition] = field(Array(OffsetDeleteResponsePartition), "0+")


class OffsetDeleteResponse(Message, api_key=47, valid="0", flexible="none"):
    error_code: int = field(INT16, "0+")
    throttle_time_ms: int = field(INT32, "0+")
    topics: list[OffsetDeleteResponseTopic] = field(Array(OffsetDeleteResponseTopic), "0+")
