"""OffsetCommit and OffsetFetch on the coordinator (Kafka 4.3 rules).

Offsets are stored by topic name and partition, with the topic id they were committed under
(Kafka 4.1+): an offset whose id differs from the topic's current id (the topic was deleted and
recreated) is never served, and deleting a topic removes exactly the offsets of that id.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ...errors import ErrorCode, KafkaApiError
from ...protocol.messages.offsets import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartition,
    OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic,
    OffsetFetchResponseTopics,
)
from ...protocol.uuid import ZERO_UUID, Uuid
from .classic.membership import classic_commit_error
from .context import Context
from .model import ConsumerGroup, ConsumerGroupMember
from .records import OffsetCommitRecord, OffsetValue, SimpleGroupRecord

#: OffsetCommit v9 is the first version a consumer-protocol member may use.
CONSUMER_PROTOCOL_COMMIT_VERSION = 9


def commit(ctx: Context, request: OffsetCommitRequest, version: int) -> OffsetCommitResponse:
    """Validate and store a commit. Per-partition and whole-request errors as Kafka 4.3 answers."""
    by_id = version >= 10
    # errors[(topic index, partition index)] = code; None = accepted so far
    topics: list[tuple[str | None, Uuid, list[tuple[int, int | None]]]] = []
    for topic in request.topics:
        meta = (
            ctx.image.topics_by_id.get(topic.topic_id) if by_id else ctx.image.topics_by_name.get(topic.name)
        )
        parts: list[tuple[int, int | None]] = []
        for partition in topic.partitions:
            if meta is None:
                code: int | None = (
                    ErrorCode.UNKNOWN_TOPIC_ID if by_id else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                )
            elif not 0 <= partition.partition_index < meta.num_partitions:
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                code = None
            parts.append((partition.partition_index, code))
        topics.append(
            (None if meta is None else meta.name, ZERO_UUID if meta is None else meta.topic_id, parts)
        )

    group_error = None
    if _is_null(request.group_id):  # Kafka accepts the empty group id, for backwards compatibility
        group_error = ErrorCode.INVALID_GROUP_ID
    else:
        try:
            _validate_commit(ctx, request, version, topics)
        except KafkaApiError as exc:
            group_error = exc.code

    response_topics = []
    for (name, topic_id, parts), topic in zip(topics, request.topics, strict=False):
        results = []
        for (index, code), partition in zip(parts, topic.partitions, strict=False):
            if code is None and group_error is not None:
                code = group_error
            if code is None:
                metadata = partition.committed_metadata
                if metadata is not None and _java_length(metadata) > ctx.config.offset_metadata_max_bytes:
                    code = ErrorCode.OFFSET_METADATA_TOO_LARGE
                else:
                    assert name is not None
                    value = OffsetValue(
                        partition.committed_offset,
                        partition.committed_leader_epoch,
                        "" if metadata is None else metadata,  # Kafka stores null as NO_METADATA ("")
                        ctx.now_ms,
                        topic_id,
                    )
                    ctx.writer.write(OffsetCommitRecord(request.group_id, name, index, value))
                    code = ErrorCode.NONE
            results.append(OffsetCommitResponsePartition(partition_index=index, error_code=int(code)))
        response_topics.append(
            OffsetCommitResponseTopic(name=topic.name, topic_id=topic.topic_id, partitions=results)
        )
    return OffsetCommitResponse(topics=response_topics)


def _is_null(value: object) -> bool:
    """A null string field (possible only for requests built in-process: the wire field is not nullable)."""
    return value is None


def _java_length(text: str) -> int:
    """Kafka compares ``String.length()``, in UTF-16 code units, to ``offset.metadata.max.bytes``."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _validate_commit(
    ctx: Context,
    request: OffsetCommitRequest,
    version: int,
    topics: list[tuple[str | None, Uuid, list[tuple[int, int | None]]]],
) -> None:
    """Facts §5.13, checks done by the coordinator. Raises for the whole request."""
    epoch = request.generation_id_or_member_epoch
    classic = ctx.state.classic_groups.get(request.group_id)
    if classic is not None:
        refusal = classic_commit_error(classic, request.member_id, request.group_instance_id, epoch)
        if refusal != ErrorCode.NONE:
            raise KafkaApiError(ErrorCode.of(refusal))
        return
    group = ctx.state.group(request.group_id)
    if group is None:
        if request.group_id in ctx.state.simple_groups:
            # An empty classic group (ClassicGroup.validateOffsetCommit): admin commits are
            # accepted; any other is checked against its members, and it has none.
            if epoch < 0:
                return
            raise KafkaApiError(ErrorCode.UNKNOWN_MEMBER_ID)
        if epoch < 0:
            # Kafka creates a "simple" group for admin / manual-assignment commits.
            ctx.writer.write(SimpleGroupRecord(request.group_id))
            return
        raise KafkaApiError(
            ErrorCode.GROUP_ID_NOT_FOUND
            if version >= CONSUMER_PROTOCOL_COMMIT_VERSION
            else ErrorCode.ILLEGAL_GENERATION
        )
    if epoch < 0 and not group.members:
        return
    member = group.members.get(request.member_id)
    if member is None:
        raise KafkaApiError(ErrorCode.UNKNOWN_MEMBER_ID)
    if member.uses_classic_protocol:
        # A classic member of a consumer group commits with its generation: its member epoch.
        if epoch != member.member_epoch:
            raise KafkaApiError(ErrorCode.ILLEGAL_GENERATION)
        return
    if version < CONSUMER_PROTOCOL_COMMIT_VERSION:
        raise KafkaApiError(ErrorCode.UNSUPPORTED_VERSION)
    current_epoch = member.member_epoch
    if epoch == current_epoch:
        return
    if epoch > current_epoch or epoch < 0:
        raise KafkaApiError(ErrorCode.STALE_MEMBER_EPOCH)
    # 4.3 (KIP-1251): an older epoch is fine for partitions the member still holds since then.
    for _name, topic_id, parts in topics:
        for index, code in parts:
            if code is None and not _holds_since(member, topic_id, index, epoch):
                raise KafkaApiError(ErrorCode.STALE_MEMBER_EPOCH)


def _holds_since(member: ConsumerGroupMember, topic_id: Uuid, partition: int, epoch: int) -> bool:
    """Whether the partition is assigned or pending revocation, assigned at an epoch <= `epoch`."""
    current = member.current
    assigned_at = current.assigned.get(topic_id, {}).get(partition)
    if assigned_at is None:
        assigned_at = current.pending_revocation.get(topic_id, {}).get(partition)
    return assigned_at is not None and assigned_at <= epoch


def fetch(ctx: Context, request: OffsetFetchRequest, version: int) -> OffsetFetchResponse:
    """OffsetFetch, any version from 1 to 10."""
    if version >= 8:
        groups = []
        for group_request in request.groups:
            wanted: list[tuple[str, Uuid, list[int] | None]] | None
            if group_request.topics is None:
                wanted = None
            else:
                wanted = [(t.name, t.topic_id, t.partition_indexes) for t in group_request.topics]
            error, topics = _fetch_group(
                ctx,
                group_request.group_id,
                group_request.member_id,
                group_request.member_epoch,
                wanted,
                version,
                request.require_stable,
            )
            groups.append(
                OffsetFetchResponseGroup(
                    group_id=group_request.group_id,
                    error_code=int(error),
                    topics=[
                        OffsetFetchResponseTopics(
                            name=name,
                            topic_id=topic_id,
                            partitions=[
                                OffsetFetchResponsePartitions(
                                    partition_index=p,
                                    committed_offset=offset,
                                    committed_leader_epoch=leader_epoch,
                                    metadata=metadata,
                                    error_code=int(code),
                                )
                                for p, offset, leader_epoch, metadata, code in parts
                            ],
                        )
                        for name, topic_id, parts in topics
                    ],
                )
            )
        return OffsetFetchResponse(groups=groups)
    legacy = (
        None if request.topics is None else [(t.name, ZERO_UUID, t.partition_indexes) for t in request.topics]
    )
    error, topics = _fetch_group(ctx, request.group_id, None, -1, legacy, version, request.require_stable)
    response_topics = [
        OffsetFetchResponseTopic(
            name=name,
            partitions=[
                OffsetFetchResponsePartition(
                    partition_index=p,
                    committed_offset=offset,
                    committed_leader_epoch=leader_epoch,
                    metadata=metadata,
                    error_code=int(error if version < 2 and error else code),
                )
                for p, offset, leader_epoch, metadata, code in parts
            ],
        )
        for name, _topic_id, parts in topics
    ]
    return OffsetFetchResponse(topics=response_topics, error_code=int(error))


_Partition = tuple[int, int, int, "str | None", int]


def _fetch_group(
    ctx: Context,
    group_id: str,
    member_id: str | None,
    member_epoch: int,
    wanted: Sequence[tuple[str, Uuid, list[int] | None]] | None,
    version: int,
    require_stable: bool = False,
) -> tuple[int, list[tuple[str, Uuid, list[_Partition]]]]:
    """(group error, [(name, id, [(partition, offset, leader epoch, metadata, error)])]).
    `require_stable`: a partition with an offset pending in an open transaction is answered
    UNSTABLE_OFFSET_COMMIT (the client retries until the transaction ends)."""
    if _is_null(group_id):  # only null is invalid: the empty group id is supported
        return int(ErrorCode.INVALID_GROUP_ID), []
    group = ctx.state.group(group_id)
    error = _fetch_member_error(group, member_id, member_epoch)
    if error:
        return error, []
    stored = ctx.state.offsets.get(group_id, {})
    if wanted is None:
        by_name: dict[str, list[int]] = {}
        for name, partition in stored:
            by_name.setdefault(name, []).append(partition)
        wanted = []
        for name in sorted(by_name):
            meta = ctx.image.topics_by_name.get(name)
            wanted.append((name, meta.topic_id if meta else ZERO_UUID, sorted(by_name[name])))
    by_id = version >= 10
    result = []
    for name, topic_id, partitions in wanted:
        meta = ctx.image.topics_by_id.get(topic_id) if by_id else ctx.image.topics_by_name.get(name)
        parts: list[_Partition] = []
        for partition in partitions or ():
            if by_id and meta is None:
                parts.append((partition, -1, -1, "", int(ErrorCode.UNKNOWN_TOPIC_ID)))
                continue
            topic_name = meta.name if meta is not None else name
            if require_stable and ctx.state.pending_producers(group_id, topic_name, partition):
                parts.append((partition, -1, -1, "", int(ErrorCode.UNSTABLE_OFFSET_COMMIT)))
                continue
            value = stored.get((topic_name, partition))
            current_id = meta.topic_id if meta is not None else None
            if value is None or (value.topic_id and value.topic_id != current_id):
                parts.append((partition, -1, -1, "", 0))
            else:
                parts.append((partition, value.offset, value.leader_epoch, value.metadata, 0))
        result.append(
            (name if meta is None else meta.name, topic_id if meta is None else meta.topic_id, parts)
        )
    return 0, result


def _fetch_member_error(group: ConsumerGroup | None, member_id: str | None, member_epoch: int) -> int:
    """Facts §5.14: admin fetches skip member checks; members must exist at their exact epoch."""
    if group is None or (member_id is None and member_epoch < 0):
        return 0
    member = group.members.get(member_id or "")
    if member is None:
        return int(ErrorCode.UNKNOWN_MEMBER_ID)
    if member.member_epoch != member_epoch:
        return int(
            ErrorCode.ILLEGAL_GENERATION if member.uses_classic_protocol else ErrorCode.STALE_MEMBER_EPOCH
        )
    return 0


def offsets_of_deleted_topic(ctx: Context, topic_name: str, topic_id: Uuid) -> Iterable[tuple[str, int]]:
    """(group id, partition) of the offsets to remove when the topic `topic_id` is deleted
    (4.3: only those stored under that id, or under no id)."""
    for group_id, offsets in ctx.state.offsets.items():
        for (name, partition), value in offsets.items():
            if name == topic_name and (value.topic_id == topic_id or not value.topic_id):
                yield group_id, partition
