"""ListOffsets (2).

Kafka 4.x implements v1-10 (4.0/4.1) and v1-11 (4.2+); v0 (the offsets array) was removed in 4.0.
v2 adds IsolationLevel, v4 leader epochs, v6 is the first flexible version, v10 adds TimeoutMs.
v7-9 and v11 add no field: they let the client ask for new special timestamps (below). Topics
are named, never identified by id, in every version.
"""

from __future__ import annotations

from ..schema import Message, Struct, field
from ..types import INT8, INT16, INT32, INT64, STRING, Array

#: Special values of ListOffsetsPartition.Timestamp (and the first version that accepts each).
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3  # v7+
EARLIEST_LOCAL_TIMESTAMP = -4  # v8+
LATEST_TIERED_TIMESTAMP = -5  # v9+
EARLIEST_PENDING_UPLOAD_TIMESTAMP = -6  # v11+

#: ReplicaId of a consumer (not a follower broker).
CONSUMER_REPLICA_ID = -1


class ListOffsetsPartition(Struct):
    """The timestamp to look an offset up for, in one partition."""

    partition_index: int = field(INT32, "0+")
    current_leader_epoch: int = field(INT32, "4+", default=-1, ignorable=True)
    timestamp: int = field(INT64, "0+")


class ListOffsetsTopic(Struct):
    """The partitions to look up in one topic."""

    name: str = field(STRING, "0+")
    partitions: list[ListOffsetsPartition] = field(Array(ListOffsetsPartition), "0+")


class ListOffsetsRequest(Message, api_key=2, valid="1-11", flexible="6+"):
    """Looks up the offset for a timestamp (or earliest/latest) per partition."""

    # Kafka gives no default (0); -1 is what every consumer sends, so it is ours.
    replica_id: int = field(INT32, "0+", default=CONSUMER_REPLICA_ID)
    isolation_level: int = field(INT8, "2+")
    topics: list[ListOffsetsTopic] = field(Array(ListOffsetsTopic), "0+")
    timeout_ms: int = field(INT32, "10+", ignorable=True)


class ListOffsetsPartitionResponse(Struct):
    """The offset found for one partition, with its timestamp and leader epoch."""

    partition_index: int = field(INT32, "0+")
    error_code: int = field(INT16, "0+")
    timestamp: int = field(INT64, "1+", default=-1)
    offset: int = field(INT64, "1+", default=-1)
    leader_epoch: int = field(INT32, "4+", default=-1)


class ListOffsetsTopicResponse(Struct):
    """The partitions of one topic."""

    name: str = field(STRING, "0+")
    partitions: list[ListOffsetsPartitionResponse] = field(Array(ListOffsetsPartitionResponse), "0+")


class ListOffsetsResponse(Message, api_key=2, valid="1-11", flexible="6+"):
    """Offsets per partition."""

    throttle_time_ms: int = field(INT32, "2+", ignorable=True)
    topics: list[ListOffsetsTopicResponse] = field(Array(ListOffsetsTopicResponse), "0+")
