"""Fetch (1) and ListOffsets (2): reading the in-memory log.

Fetch serves the stored batches as they are (a list of chunks handed to the RECORDS codec, never
re-encoded), whole batches only, within ``MaxBytes`` for the response and ``PartitionMaxBytes``
per partition. As in Kafka (KIP-74) the first partition that has data returns at least one whole
batch even when it exceeds the limits, so a consumer always makes progress. A fetch that finds
fewer than ``MinBytes`` waits up to ``MaxWaitMs`` and is woken by appends to the partitions it
reads. Fetch sessions are not kept: every answer is a full, sessionless one (SessionId 0), which
clients accept and keep sending full fetches.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from ...errors import ErrorCode
from ...protocol.messages.fetch import (
    READ_COMMITTED,
    AbortedTransaction,
    FetchableTopicResponse,
    FetchRequest,
    FetchResponse,
    FetchTopic,
    PartitionData,
)
from ...protocol.messages.list_offsets import (
    EARLIEST_LOCAL_TIMESTAMP,
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    ListOffsetsPartitionResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopicResponse,
)
from .log import PartitionLog, TopicLog, Topics
from .nodes import ANY_NODE
from .produce import LEADER_EPOCH

#: CurrentLeaderEpoch of a request that does not check the leader epoch.
NO_EPOCH = -1


def leader_epoch_error(current_leader_epoch: int, leader_epoch: int = LEADER_EPOCH) -> int:
    """Kafka's leader-epoch check: FENCED_LEADER_EPOCH for an older epoch than the partition's,
    UNKNOWN_LEADER_EPOCH for a newer one, NONE for the same or -1."""
    if current_leader_epoch in (NO_EPOCH, leader_epoch):
        return ErrorCode.NONE
    if current_leader_epoch > leader_epoch:
        return ErrorCode.UNKNOWN_LEADER_EPOCH
    return ErrorCode.FENCED_LEADER_EPOCH


#: How often a long-polling fetch checks that its client is still connected.
GONE_CHECK_S = 1.0


async def handle_fetch(
    topics: Topics,
    request: FetchRequest,
    version: int,
    gone: Callable[[], bool] = lambda: False,
    node_id: int = 1,
) -> FetchResponse:
    """Answer a Fetch, waiting for data when there is less than MinBytes (long poll). `gone` tells
    whether the client has disconnected meanwhile: the wait then ends early (nobody would read it)."""
    if request.session_id != 0 or request.session_epoch > 0:
        # No sessions are kept: an incremental fetch names a session we never created.
        code = (
            ErrorCode.FETCH_SESSION_ID_NOT_FOUND
            if request.session_id
            else ErrorCode.INVALID_FETCH_SESSION_EPOCH
        )
        return FetchResponse(error_code=code)
    response, total, failed = read_fetch(topics, request, version, node_id)
    if total >= request.min_bytes or failed or request.max_wait_ms <= 0 or not request.topics:
        return response
    loop = asyncio.get_running_loop()
    deadline = loop.time() + request.max_wait_ms / 1000
    woken = loop.create_future()

    def wake() -> None:
        if not woken.done():
            woken.set_result(None)

    watched = _partitions(topics, request, version)
    for partition in watched:
        partition.waiters.add(wake)
    try:
        while True:
            remaining = deadline - loop.time()
            if remaining <= 0 or gone():
                break
            try:
                await asyncio.wait_for(asyncio.shield(woken), min(remaining, GONE_CHECK_S))
            except asyncio.TimeoutError:
                continue
            response, total, failed = read_fetch(topics, request, version, node_id)
            if total >= request.min_bytes or failed:
                return response
            woken = loop.create_future()
    finally:
        for partition in watched:
            partition.waiters.discard(wake)
    return read_fetch(topics, request, version, node_id)[0]


def _partitions(topics: Topics, request: FetchRequest, version: int) -> list[PartitionLog]:
    out = []
    for fetch_topic in request.topics:
        topic = _topic(topics, fetch_topic, version)
        if topic is None:
            continue
        for fetch_partition in fetch_topic.partitions:
            if 0 <= fetch_partition.partition < len(topic.partitions):
                out.append(topic.partitions[fetch_partition.partition])
    return out


def _topic(topics: Topics, wanted: FetchTopic, version: int) -> TopicLog | None:
    if version >= 13:
        return topics.by_id.get(wanted.topic_id)
    return topics.by_name.get(wanted.topic)


def read_fetch(
    topics: Topics, request: FetchRequest, version: int, node_id: int = 1
) -> tuple[FetchResponse, int, bool]:
    """The response as the log stands now (on broker `node_id`: NOT_LEADER_OR_FOLLOWER for the
    partitions it does not lead), the record bytes in it, and whether any partition failed."""
    remaining = request.max_bytes
    total = 0
    failed = False
    by_id = version >= 13
    read_committed = request.isolation_level == READ_COMMITTED
    responses = []
    for fetch_topic in request.topics:
        topic = _topic(topics, fetch_topic, version)
        partitions = []
        for wanted in fetch_topic.partitions:
            index = wanted.partition
            code: int
            if topic is None or not 0 <= index < len(topic.partitions):
                if topic is None and by_id:
                    code = ErrorCode.UNKNOWN_TOPIC_ID
                else:
                    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                # Empty, not null, records, as Kafka (MemoryRecords.EMPTY): librdkafka fails to
                # parse the whole response on a null record set.
                partitions.append(
                    PartitionData(partition_index=index, error_code=code, high_watermark=-1, records=b"")
                )
                failed = True
                continue
            log = topic.partitions[index]
            hw = log.high_watermark
            stable = log.last_stable_offset
            aborted: list[AbortedTransaction] | None = None
            code = (
                leader_epoch_error(wanted.current_leader_epoch, log.leader_epoch)
                if log.leader == node_id or node_id == ANY_NODE
                else ErrorCode.NOT_LEADER_OR_FOLLOWER
            )
            offset = wanted.fetch_offset
            chunks: list[object] = []
            if code == ErrorCode.NONE and not log.log_start_offset <= offset <= hw:
                code = ErrorCode.OFFSET_OUT_OF_RANGE
            if code != ErrorCode.NONE:
                failed = True
            elif offset < hw and remaining > 0:
                limit = min(wanted.partition_max_bytes, remaining)
                upper = stable if read_committed else None
                found, size = log.read(offset, limit, min_one=total == 0, upper=upper)
                chunks = found  # type: ignore[assignment]
                total += size
                remaining -= size
            if read_committed:
                aborted = (
                    [
                        AbortedTransaction(producer_id=producer, first_offset=first)
                        for producer, first in log.transactions.aborted_between(offset, stable)
                    ]
                    if chunks
                    else []
                )
            partitions.append(
                PartitionData(
                    partition_index=index,
                    error_code=int(code),
                    high_watermark=hw,
                    last_stable_offset=stable,
                    log_start_offset=log.log_start_offset,
                    aborted_transactions=aborted,
                    records=chunks,
                )
            )
        responses.append(
            FetchableTopicResponse(
                topic=fetch_topic.topic, topic_id=fetch_topic.topic_id, partitions=partitions
            )
        )
    return FetchResponse(session_id=0, responses=responses), total, failed


def handle_list_offsets(
    topics: Topics, request: ListOffsetsRequest, version: int, node_id: int = 1
) -> ListOffsetsResponse:
    """Offsets by timestamp, earliest (-2), latest (-1), max timestamp (-3) or earliest local (-4)."""
    responses = []
    for wanted_topic in request.topics:
        topic = topics.get(wanted_topic.name)
        partitions = []
        for wanted in wanted_topic.partitions:
            index = wanted.partition_index
            if topic is None or not 0 <= index < len(topic.partitions):
                partitions.append(
                    ListOffsetsPartitionResponse(
                        partition_index=index, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    )
                )
                continue
            log = topic.partitions[index]
            code = (
                leader_epoch_error(wanted.current_leader_epoch, log.leader_epoch)
                if log.leader == node_id or node_id == ANY_NODE
                else ErrorCode.NOT_LEADER_OR_FOLLOWER
            )
            if code != ErrorCode.NONE:
                partitions.append(ListOffsetsPartitionResponse(partition_index=index, error_code=int(code)))
                continue
            found = _lookup(log, wanted.timestamp, request.isolation_level == READ_COMMITTED)
            offset, timestamp = found if found is not None else (-1, -1)
            partitions.append(
                ListOffsetsPartitionResponse(
                    partition_index=index,
                    error_code=0,
                    timestamp=timestamp,
                    offset=offset,
                    leader_epoch=log.leader_epoch if found is not None and version >= 4 else -1,
                )
            )
        responses.append(ListOffsetsTopicResponse(name=wanted_topic.name, partitions=partitions))
    return ListOffsetsResponse(topics=responses)


def _lookup(log: PartitionLog, timestamp: int, read_committed: bool) -> tuple[int, int] | None:
    if timestamp == LATEST_TIMESTAMP:
        return (log.last_stable_offset if read_committed else log.high_watermark), -1
    if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
        return log.log_start_offset, -1
    if timestamp == MAX_TIMESTAMP:
        return log.max_timestamp_offset()
    if timestamp < 0:
        return None  # tiered-storage lookups (-5, -6): nothing is tiered here
    return log.offset_for_timestamp(timestamp)
