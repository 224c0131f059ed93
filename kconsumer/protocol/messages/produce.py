"""Produce (0).

Kafka 4.x implements v3-13 (v0-2 were removed in 4.0; the broker still *advertises* a minimum of 0
because of KAFKA-18659, yet rejects those versions). v9 is the first flexible version, v10 adds the
tagged CurrentLeader/NodeEndpoints hints for NOT_LEADER_OR_FOLLOWER, v11-12 add no field, and v13
names topics by id instead of by name. The record data is kept as raw bytes (`RECORDS`); see
`kconsumer.protocol.records` for the batches inside.
"""

from __future__ import annotations

from typing import Any

from ..schema import Message, Struct, field
from ..types import INT16, INT32, INT64, RECORDS, STRING, UUID, Array
from ..uuid import Uuid

#: Produce Acks values.
ACKS_NONE = 0
ACKS_LEADER = 1
ACKS_ALL = -1


class PartitionProduceData(Struct):
    """The records for one partition."""

    index: int = field(INT32, "0+")
    records: Any = field(RECORDS, "0+", nullable="0+")


class TopicProduceData(Struct):
    """The partitions of one topic, by name (v3-12) or by id (v13+)."""

    name: str = field(STRING, "0-12", ignorable=True)
    topic_id: Uuid = field(UUID, "13+", ignorable=True)
    partition_data: list[PartitionProduceData] = field(Array(PartitionProduceData), "0+")


class ProduceRequest(Message, api_key=0, valid="3-13", flexible="9+"):
    """Appends record batches to partitions."""

    transactional_id: str | None = field(STRING, "3+", nullable="3+", default=None)
    acks: int = field(INT16, "0+")
    timeout_ms: int = field(INT32, "0+")
    topic_data: list[TopicProduceData] = field(Array(TopicProduceData), "0+")


class LeaderIdAndEpoch(Struct):
    """The current leader of a partition, as a tagged hint (Produce v10+, Fetch v12+)."""

    leader_id: int = field(INT32, "0+", default=-1)
    leader_epoch: int = field(INT32, "0+", default=-1)


class NodeEndpoint(Struct):
    """How to reach a broker named in a leader hint (Produce v10+, Fetch v16+)."""

    node_id: int = field(INT32, "0+")
    host: str = field(STRING, "0+")
    port: int = field(INT32, "0+")
    rack: str | None = field(STRING, "0+", nullable="0+", default=None)


class BatchIndexAndErrorMessage(Struct):
    """v8+: a record that made the broker drop its batch."""

    batch_index: int = field(INT32, "8+")
    batch_index_error_message: str | None = field(STRING, "8+", nullable="8+", default=None)


class PartitionProduceResponse(Struct):
    """The outcome for one partition: error, base offset and timestamps."""

    index: int = field(INT32, "0+")
    error_code: int = field(INT16, "0+")
    base_offset: int = field(INT64, "0+")
    log_append_time_ms: int = field(INT64, "2+", default=-1, ignorable=True)
    log_start_offset: int = field(INT64, "5+", default=-1, ignorable=True)
    record_errors: list[BatchIndexAndErrorMessage] = field(
        Array(BatchIndexAndErrorMessage), "8+", ignorable=True
    )
    error_message: str | None = field(STRING, "8+", nullable="8+", default=None, ignorable=True)
    current_leader: LeaderIdAndEpoch = field(LeaderIdAndEpoch, "10+", tag=0)


class TopicProduceResponse(Struct):
    """The outcome for one topic, by name (v3-12) or by id (v13+)."""

    name: str = field(STRING, "0-12", ignorable=True)
    topic_id: Uuid = field(UUID, "13+", ignorable=True)
    partition_responses: list[PartitionProduceResponse] = field(Array(PartitionProduceResponse), "0+")


class ProduceResponse(Message, api_key=0, valid="3-13", flexible="9+"):
    """Per-partition outcomes of a Produce request (none is sent for acks=0)."""

    responses: list[TopicProduceResponse] = field(Array(TopicProduceResponse), "0+")
    throttle_time_ms: int = field(INT32, "1+", default=0, ignorable=True)
    node_endpoints: list[NodeEndpoint] = field(Array(NodeEndpoint), "10+", tag=0)
