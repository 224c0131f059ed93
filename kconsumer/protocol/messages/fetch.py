"""Fetch (1).

Kafka 4.x implements v4-17 (4.0) and v4-18 (4.1+); v12 is the first flexible version. Along the
way: v5 LogStartOffset, v7 fetch sessions (SessionId/SessionEpoch, ForgottenTopicsData), v9
CurrentLeaderEpoch, v11 RackId and PreferredReadReplica, v12 LastFetchedEpoch and the tagged
leader/divergence hints, v13 topic ids instead of names, v15 ReplicaState replaces ReplicaId,
v16 NodeEndpoints, v17 ReplicaDirectoryId, v18 the follower's HighWatermark (KIP-1166). Records
are raw bytes (`RECORDS`), served as the broker stored them.
"""

from __future__ import annotations

from typing import Any

from ..schema import Message, Struct, field
from ..types import INT8, INT16, INT32, INT64, RECORDS, STRING, UUID, Array
from ..uuid import Uuid
from .produce import LeaderIdAndEpoch, NodeEndpoint

#: IsolationLevel values (Fetch and ListOffsets).
READ_UNCOMMITTED = 0
READ_COMMITTED = 1

#: Default of FetchPartition.HighWatermark: "the fetcher does not support the field".
HIGH_WATERMARK_UNSUPPORTED = 2**63 - 1

# -- request -----------------------------------------------------------------------------------


class ReplicaState(Struct):
    """v15+: who is fetching (a follower's id and epoch; -1/-1 for a consumer)."""

    replica_id: int = field(INT32, "0+", default=-1)
    replica_epoch: int = field(INT64, "0+", default=-1)


class FetchPartition(Struct):
    """Where to read one partition from, and how much."""

    partition: int = field(INT32, "0+")
    current_leader_epoch: int = field(INT32, "9+", default=-1, ignorable=True)
    fetch_offset: int = field(INT64, "0+")
    last_fetched_epoch: int = field(INT32, "12+", default=-1)
    log_start_offset: int = field(INT64, "5+", default=-1, ignorable=True)
    partition_max_bytes: int = field(INT32, "0+")
    replica_directory_id: Uuid = field(UUID, "17+", tag=0, ignorable=True)
    high_watermark: int = field(INT64, "18+", default=HIGH_WATERMARK_UNSUPPORTED, tag=1, ignorable=True)


class FetchTopic(Struct):
    """The partitions to read of one topic, by name (v4-12) or by id (v13+)."""

    topic: str = field(STRING, "0-12", ignorable=True)
    topic_id: Uuid = field(UUID, "13+", ignorable=True)
    partitions: list[FetchPartition] = field(Array(FetchPartition), "0+")


class ForgottenTopic(Struct):
    """v7+: partitions an incremental fetch session stops reading."""

    topic: str = field(STRING, "7-12", ignorable=True)
    topic_id: Uuid = field(UUID, "13+", ignorable=True)
    partitions: list[int] = field(Array(INT32), "7+")


class FetchRequest(Message, api_key=1, valid="4-18", flexible="12+"):
    """Reads record batches from partitions, optionally inside a fetch session."""

    cluster_id: str | None = field(STRING, "12+", nullable="12+", default=None, tag=0, ignorable=True)
    replica_id: int = field(INT32, "0-14", default=-1)
    replica_state: ReplicaState = field(ReplicaState, "15+", tag=1)
    max_wait_ms: int = field(INT32, "0+")
    min_bytes: int = field(INT32, "0+")
    max_bytes: int = field(INT32, "3+", default=0x7FFFFFFF, ignorable=True)
    isolation_level: int = field(INT8, "4+", default=READ_UNCOMMITTED, ignorable=True)
    session_id: int = field(INT32, "7+", default=0, ignorable=True)
    session_epoch: int = field(INT32, "7+", default=-1, ignorable=True)
    topics: list[FetchTopic] = field(Array(FetchTopic), "0+")
    forgotten_topics_data: list[ForgottenTopic] = field(Array(ForgottenTopic), "7+")
    rack_id: str = field(STRING, "11+", default="", ignorable=True)


# -- response ----------------------------------------------------------------------------------


class EpochEndOffset(Struct):
    """v12+ tagged: where the fetcher's log diverges from the leader's."""

    epoch: int = field(INT32, "0+", default=-1)
    end_offset: int = field(INT64, "0+", default=-1)


class SnapshotId(Struct):
    """v12+ tagged: the snapshot to read when the offset precedes the log start (KRaft)."""

    end_offset: int = field(INT64, "0+", default=-1)
    epoch: int = field(INT32, "0+", default=-1)


class AbortedTransaction(Struct):
    """v4+: an aborted transaction inside the returned records (read_committed)."""

    producer_id: int = field(INT64, "4+")
    first_offset: int = field(INT64, "4+")


class PartitionData(Struct):
    """One partition's answer: error, watermarks and the record batches."""

    partition_index: int = field(INT32, "0+")
    error_code: int = field(INT16, "0+")
    high_watermark: int = field(INT64, "0+")
    last_stable_offset: int = field(INT64, "4+", default=-1, ignorable=True)
    log_start_offset: int = field(INT64, "5+", default=-1, ignorable=True)
    diverging_epoch: EpochEndOffset = field(EpochEndOffset, "12+", tag=0)
    current_leader: LeaderIdAndEpoch = field(LeaderIdAndEpoch, "12+", tag=1)
    snapshot_id: SnapshotId = field(SnapshotId, "12+", tag=2)
    aborted_transactions: list[AbortedTransaction] | None = field(
        Array(AbortedTransaction), "4+", nullable="4+", ignorable=True
    )
    preferred_read_replica: int = field(INT32, "11+", default=-1)
    records: Any = field(RECORDS, "0+", nullable="0+")


class FetchableTopicResponse(Struct):
    """One topic's partitions, by name (v4-12) or by id (v13+)."""

    topic: str = field(STRING, "0-12", ignorable=True)
    topic_id: Uuid = field(UUID, "13+", ignorable=True)
    partitions: list[PartitionData] = field(Array(PartitionData), "0+")


class FetchResponse(Message, api_key=1, valid="4-18", flexible="12+"):
    """Record batches and watermarks per partition, plus the fetch session id."""

    throttle_time_ms: int = field(INT32, "1+", ignorable=True)
    error_code: int = field(INT16, "7+", ignorable=True)
    session_id: int = field(INT32, "7+", default=0)
    responses: list[FetchableTopicResponse] = field(Array(FetchableTopicResponse), "0+")
    node_endpoints: list[NodeEndpoint] = field(Array(NodeEndpoint), "16+", tag=0)
