"""TxnOffsetCommit on the group coordinator, and the completion of a transaction's offsets.

A transactional producer commits a group's offsets with TxnOffsetCommit after AddOffsetsToTxn.
The offsets are stored *pending* under the producer id (`PendingOffsetRecord`): OffsetFetch does
not return them, and answers UNSTABLE_OFFSET_COMMIT for their partitions when asked with
``require_stable``. The transaction's marker completes them: COMMIT turns each into a committed
offset, ABORT drops them (`complete`).

KIP-447 fencing, as Kafka 4.x checks it: a request carrying group metadata (member id, group
instance id, generation or member epoch; v3+) must come from a current member at its current
epoch, so a zombie that lost its partitions cannot commit offsets for them in a transaction. The
member checks are OffsetCommit's, except that a stale epoch is ILLEGAL_GENERATION (the API has no
STALE_MEMBER_EPOCH), and a request with no group metadata at all (generation -1, no member id, no
instance id) is not checked.
"""

from __future__ import annotations

from ...errors import ErrorCode
from ...protocol.messages.transactions import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
    TxnOffsetCommitResponsePartition,
    TxnOffsetCommitResponseTopic,
)
from .classic.membership import classic_commit_error
from .context import Context
from .records import (
    OffsetCommitRecord,
    OffsetValue,
    PendingOffsetRecord,
    PendingOffsetTombstone,
    SimpleGroupRecord,
)


def commit(ctx: Context, request: TxnOffsetCommitRequest, version: int) -> TxnOffsetCommitResponse:
    """Validate a TxnOffsetCommit and store its offsets pending under the producer id."""
    group_error = _group_error(ctx, request)
    topics = []
    for topic in request.topics:
        meta = ctx.image.topics_by_name.get(topic.name)
        results = []
        for partition in topic.partitions:
            index = partition.partition_index
            code: int
            if meta is None or not 0 <= index < meta.num_partitions:
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif group_error != ErrorCode.NONE:
                code = group_error
            else:
                metadata = partition.committed_metadata
                value = OffsetValue(
                    partition.committed_offset,
                    partition.committed_leader_epoch,
                    "" if metadata is None else metadata,
                    ctx.now_ms,
                    meta.topic_id,
                )
                ctx.writer.write(
                    PendingOffsetRecord(request.group_id, request.producer_id, topic.name, index, value)
                )
                code = ErrorCode.NONE
            results.append(TxnOffsetCommitResponsePartition(partition_index=index, error_code=int(code)))
        topics.append(TxnOffsetCommitResponseTopic(name=topic.name, partitions=results))
    return TxnOffsetCommitResponse(topics=topics)


def _group_error(ctx: Context, request: TxnOffsetCommitRequest) -> int:
    generation, member_id = request.generation_id, request.member_id
    without_metadata = generation == -1 and not member_id and request.group_instance_id is None
    classic = ctx.state.classic_groups.get(request.group_id)
    if classic is not None:
        if without_metadata:
            return ErrorCode.NONE
        return classic_commit_error(classic, member_id, request.group_instance_id, generation)
    group = ctx.state.group(request.group_id)
    if group is None:
        if generation < 0:
            if request.group_id not in ctx.state.simple_groups:
                ctx.writer.write(SimpleGroupRecord(request.group_id))
            return ErrorCode.NONE
        return ErrorCode.ILLEGAL_GENERATION
    if (generation < 0 and not group.members) or without_metadata:
        return ErrorCode.NONE
    member = group.members.get(member_id)
    if member is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if generation != member.member_epoch:
        return ErrorCode.ILLEGAL_GENERATION
    return ErrorCode.NONE


def complete(ctx: Context, group_id: str, producer_id: int, committed: bool) -> None:
    """The transaction of `producer_id` ended: its pending offsets of `group_id` become committed
    offsets (`committed`) or are dropped."""
    pending = dict(ctx.state.pending_offsets.get(group_id, {}).get(producer_id, {}))
    for (topic, partition), value in sorted(pending.items()):
        if committed:
            ctx.writer.write(OffsetCommitRecord(group_id, topic, partition, value))
        ctx.writer.write(PendingOffsetTombstone(group_id, producer_id, topic, partition))
