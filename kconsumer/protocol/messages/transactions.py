"""The transaction APIs a transactional producer uses (transactions v1, before KIP-890 part 2).

* AddPartitionsToTxn (24): the partitions a transaction is about to write. v0-3 are the client
  versions (v3 flexible); v4+ batch several transactions and are sent by brokers only.
* AddOffsetsToTxn (25): the group whose offsets the transaction will commit. v3 flexible.
* EndTxn (26): commit or abort. v3 flexible; v4 allows TRANSACTION_ABORTABLE.
* TxnOffsetCommit (28): offsets committed inside the transaction, sent to the group coordinator.
  v2 adds the leader epoch, v3 (flexible) the member id, instance id and generation (KIP-447), so
  the coordinator can refuse a zombie member's commit.
* DescribeTransactions (65) and ListTransactions (66, v1 adds the duration filter): what tools
  (``kafka-transactions.sh``) ask of a transaction coordinator (KIP-664).
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


# -- DescribeTransactions and ListTransactions (KIP-664) ---------------------------------------


class DescribeTransactionsRequest(Message, api_key=65, valid="0", flexible="0+"):
    """The state of each transactional id (asked of its coordinator)."""

    transactional_ids: list[str] = field(Array(STRING), "0+")


class DescribeTransactionsTopicData(Struct):
    name: str = field(STRING, "0+")
    partition_indexes: list[int] = field(Array(INT32), "0+")


class DescribedTransaction(Struct):
    error_code: int = field(INT16, "0+")
    transactional_id: str = field(STRING, "0+")
    transaction_state: str = field(STRING, "0+", default="")
    transaction_timeout_ms: int = field(INT32, "0+", default=0)
    transaction_start_time_ms: int = field(INT64, "0+", default=-1)
    # Kafka leaves them at 0 in an entry that failed
    producer_id: int = field(INT64, "0+", default=0)
    producer_epoch: int = field(INT16, "0+", default=0)
    #: Not nullable in Kafka's schema, yet Kafka 4.4 sends null for an unknown transactional id.
    topic_partitions: list[DescribeTransactionsTopicData] | None = field(
        Array(DescribeTransactionsTopicData), "0+", nullable="0+"
    )


class DescribeTransactionsResponse(Message, api_key=65, valid="0", flexible="0+"):
    throttle_time_ms: int = field(INT32, "0+", default=0, ignorable=True)
    transaction_states: list[DescribedTransaction] = field(Array(DescribedTransaction), "0+")


class ListTransactionsRequest(Message, api_key=66, valid="0-1", flexible="0+"):
    """The transactions of this broker's coordinator, optionally filtered."""

    state_filters: list[str] = field(Array(STRING), "0+")
    producer_id_filters: list[int] = field(Array(INT64), "0+")
    duration_filter: int = field(INT64, "1+", default=-1)


class ListedTransaction(Struct):
    transactional_id: str = field(STRING, "0+")
    producer_id: int = field(INT64, "0+")
    transaction_state: str = field(STRING, "0+")


class ListTransactionsResponse(Message, api_key=66, valid="0-1", flexible="0+"):
    throttle_time_ms: int = field(INT32, "0+", default=0)
    error_code: int = field(INT16, "0+", default=0)
    #: State filters of the request the coordinator does not know.
    unknown_state_filters: list[str] = field(Array(STRING), "0+")
    transaction_states: list[ListedTransaction] = field(Array(ListedTransaction), "0+")
