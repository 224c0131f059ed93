"""The transaction APIs a transactional producer uses (transactions v1, before KIP-890 part 2).

* AddPartitionsToTxn (24): the partitions a transaction is about to write. v0-3 are the client
  versions (v3 flexible); v4+ batch several transactions and are sent by brokers only.
* AddOffsetsToTxn (25): the group whose offsets the transaction will commit. v3 flexible.
* EndTxn (26): commit or abort. v3 flexible; v4 allows TRANSACTION_ABORTABLE.
* TxnOffsetCommit (28): offsets committed inside the transaction, sent to the group coordinator.
  v2 adds the leader epoch, v3 (flexible) the member id, instance id and generation (KIP-447), so
  the coordinator can refuse a zombie member's commit.
"""

from __future__ import annotations

from ..schema import Message, Struct, field
from ..types import BOOL, INT16, INT32, INT64, STRING, Array

# -- AddPartitionsToTxn ------------------------------------------------------------------------


class AddPartitionsToTxnTopic(Struct):
    name: str = field(STRING, "0+")
    partitions: list[int] = field(Array(INT32), "0+")


class AddPartitionsToTxnRequest(Message, api_key=24, valid="0-3", flexible="3+"):
    """Add partitions to the producer's ongoing transaction (starting it if needed)."""

    transactional_id: str = field(STRING, "0+")
    producer_id: int = field(INT64, "0+")
    producer_epoch: int = field(INT16, "0+")
    topics: list[AddPartitionsToTxnTopic] = field(Array(AddPartitionsToTxnTopic), "0+")


class AddPartitionsToTxnPartitionResult(Struct):
    partition_index: int = field(INT32, "0+")
    partition_error_code: int = field(INT16, "0+")


class AddPartitionsToTxnTopicResult(Struct):
    name: str = field(STRING, "0+")
    results_by_partition: list[AddPartitionsToTxnPartitionResult] = field(
        Array(AddPartitionsToTxnPartitionResult), "0+"
    )


class AddPartitionsToTxnResponse(Message, api_key=24, valid="0-3", flexible="3+"):
    throttle_time_ms: int = field(INT32, "0+", default=0)
    results_by_topic: list[AddPartitionsToTxnTopicResult] = field(Array(AddPartitionsToTxnTopicResult), "0+")


# -- AddOffsetsToTxn ---------------------------------------------------------------------------


class AddOffsetsToTxnRequest(Message, api_key=25, valid="0-4", flexible="3+"):
    """The transaction will commit offsets of `group_id` (TxnOffsetCommit follows)."""

    transactional_id: str = field(STRING, "0+")
    producer_id: int = field(INT64, "0+")
    producer_epoch: int = field(INT16, "0+")
    group_id: str = field(STRING, "0+")


class AddOffsetsToTxnResponse(Message, api_key=25, valid="0-4", flexible="3+"):
    throttle_time_ms: int = field(INT32, "0+", default=0)
    error_code: int = field(INT16, "0+", default=0)


# -- EndTxn ------------------------------------------------------------------------------------


class EndTxnRequest(Message, api_key=26, valid="0-4", flexible="3+"):
    """Commit (`committed`) or abort the producer's ongoing transaction."""

    transactional_id: str = field(STRING, "0+")
    producer_id: int = field(INT64, "0+")
    producer_epoch: int = field(INT16, "0+")
    committed: bool = field(BOOL, "0+")


class EndTxnResponse(Message, api_key=26, valid="0-4", flexible="3+"):
    throttle_time_ms: int = field(INT32, "0+", default=0)
    error_code: int = field(INT16, "0+", default=0)


# -- TxnOffsetCommit ---------------------------------------------------------------------------


class TxnOffsetCommitRequestPartition(Struct):
    partition_index: int = field(INT32, "0+")
    committed_offset: int = field(INT64, "0+")
    committed_leader_epoch: int = field(INT32, "2+", default=-1, ignorable=True)
    committed_metadata: str | None = field(STRING, "0+", nullable="0+", default="")


class TxnOffsetCommitRequestTopic(Struct):
    name: str = field(STRING, "0+")
    partitions: list[TxnOffsetCommitRequestPartition] = field(Array(TxnOffsetCommitRequestPartition), "0+")


class TxnOffsetCommitRequest(Message, api_key=28, valid="0-3", flexible="3+"):
    """Offsets of `group_id` that become visible when the transaction commits."""

    transactional_id: str = field(STRING, "0+")
    group_id: str = field(STRING, "0+")
    producer_id: int = field(INT64, "0+")
    producer_epoch: int = field(INT16, "0+")
    generation_id: int = field(INT32, "3+", default=-1)
    member_id: str = field(STRING, "3+", default="")
    group_instance_id: str | None = field(STRING, "3+", nullable="3+", default=None)
    topics: list[TxnOffsetCommitRequestTopic] = field(Array(TxnOffsetCommitRequestTopic), "0+")


class TxnOffsetCommitResponsePartition(Struct):
    partition_index: int = field(INT32, "0+")
    error_code: int = field(INT16, "0+")


class TxnOffsetCommitResponseTopic(Struct):
    name: str = field(STRING, "0+")
    partitions: list[TxnOffsetCommitResponsePartition] = field(Array(TxnOffsetCommitResponsePartition), "0+")


class TxnOffsetCommitResponse(Message, api_key=28, valid="0-3", flexible="3+"):
    throttle_time_ms: int = field(INT32, "0+", default=0)
    topics: list[TxnOffsetCommitResponseTopic] = field(Array(TxnOffsetCommitResponseTopic), "0+")
