"""Produce (0): validate each partition's record batch and append it to the in-memory log.

Like Kafka for Produce v3+: each partition carries exactly one magic-v2 batch (INVALID_RECORD
otherwise), whose sizes must add up and whose CRC must match (CORRUPT_MESSAGE), and which may not
exceed ``max.message.bytes`` (MESSAGE_TOO_LARGE). v13 names topics by id. Batches of idempotent
producers are checked and deduplicated by sequence number (`producers`). A transactional batch is
appended only if its partition was added to the producer's ongoing transaction (INVALID_TXN_STATE
otherwise, as Kafka verifies since 3.6); it opens the producer's transaction on the partition.
Acks 0, 1 and -1 all append at once (a single replica is always in sync); acks 0 gets no response.
"""

from __future__ import annotations

from collections.abc import Callable

from ...errors import ErrorCode
from ...protocol.messages.produce import (
    ACKS_ALL,
    ACKS_LEADER,
    ACKS_NONE,
    PartitionProduceData,
    PartitionProduceResponse,
    ProduceRequest,
    ProduceResponse,
    TopicProduceResponse,
)
from .log import InvalidRecords, TopicLog, Topics, validate_records
from .nodes import ANY_NODE

#: Kafka's ``message.max.bytes`` default (1 MiB plus the record-batch overhead).
MAX_MESSAGE_BYTES = 1_048_588
#: The leader epoch of every partition (there is one broker and no leader election).
LEADER_EPOCH = 0

#: Why a transactional batch may not be appended: (transactional id, producer id, epoch, topic,
#: partition) -> error code (NONE: it may).
TransactionCheck = Callable[[str, int, int, str, int], int]


def _no_transactions(tid: str, producer_id: int, epoch: int, topic: str, partition: int) -> int:
    return ErrorCode.INVALID_TXN_STATE


def handle_produce(
    topics: Topics,
    request: ProduceRequest,
    version: int,
    *,
    verify_crc: bool = True,
    node_id: int = 1,
    transactions: TransactionCheck = _no_transactions,
) -> ProduceResponse | None:
    """Append the request's batches (on broker `node_id`: NOT_LEADER_OR_FOLLOWER for partitions
    it does not lead); the response, or None for acks=0."""
    by_id = version >= 13
    acks_valid = request.acks in (ACKS_NONE, ACKS_LEADER, ACKS_ALL)
    responses = []
    for topic_data in request.topic_data:
        topic = topics.get_by_id(topic_data.topic_id) if by_id else topics.get(topic_data.name)
        results = []
        for data in topic_data.partition_data:
            if not acks_valid:
                results.append(_failed(data.index, ErrorCode.INVALID_REQUIRED_ACKS, None))
            else:
                txn = None if request.transactional_id is None else (request.transactional_id, transactions)
                results.append(_append(topics, topic, data, by_id, verify_crc, node_id, txn))
        responses.append(
            TopicProduceResponse(
                name=topic_data.name, topic_id=topic_data.topic_id, partition_responses=results
            )
        )
    if request.acks == ACKS_NONE:
        return None
    return ProduceResponse(responses=responses)


def _append(
    topics: Topics,
    topic: TopicLog | None,
    data: PartitionProduceData,
    by_id: bool,
    verify_crc: bool,
    node_id: int,
    txn: tuple[str, TransactionCheck] | None,
) -> PartitionProduceResponse:
    if topic is None:
        code = ErrorCode.UNKNOWN_TOPIC_ID if by_id else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return _failed(data.index, code, None)
    if not 0 <= data.index < len(topic.partitions):
        return _failed(data.index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)
    partition = topic.partitions[data.index]
    if partition.leader != node_id and node_id != ANY_NODE:
        return _failed(data.index, ErrorCode.NOT_LEADER_OR_FOLLOWER, f"broker {node_id} is not the leader")
    records = data.records
    if records is not None and len(records) > MAX_MESSAGE_BYTES:
        return _failed(
            data.index,
            ErrorCode.MESSAGE_TOO_LARGE,
            f"the batch of {len(records)} bytes exceeds the {MAX_MESSAGE_BYTES}-byte limit",
        )
    try:
        blob, headers = validate_records(records, verify_crc)
    except InvalidRecords as exc:
        return _failed(data.index, exc.error_code, exc.message)
    header = headers[0]
    if header.is_transactional:
        if txn is None:
            return _failed(
                data.index, ErrorCode.INVALID_TXN_STATE, "a transactional batch needs a transactional id"
            )
        refusal = txn[1](txn[0], header.producer_id, header.producer_epoch, topic.name, data.index)
        if refusal != ErrorCode.NONE:
            return _failed(data.index, refusal, f"not in an ongoing transaction of {txn[0]!r}")
    verdict = partition.producers.check(header)
    if verdict.error != ErrorCode.NONE:
        return _failed(data.index, verdict.error, verdict.message)
    if verdict.duplicate_of is not None:  # a retry of a batch already appended: its first answer
        return PartitionProduceResponse(
            index=data.index,
            error_code=0,
            base_offset=verdict.duplicate_of,
            log_start_offset=partition.log_start_offset,
        )
    base_offset = partition.append(blob, headers, partition.leader_epoch)
    partition.producers.appended(header, base_offset)
    if header.is_transactional:
        partition.transactions.began(header.producer_id, base_offset)
    return PartitionProduceResponse(
        index=data.index,
        error_code=0,
        base_offset=base_offset,
        log_start_offset=partition.log_start_offset,
    )


def _failed(index: int, code: int, message: str | None) -> PartitionProduceResponse:
    return PartitionProduceResponse(index=index, error_code=int(code), base_offset=-1, error_message=message)
