"""OffsetDelete (KIP-496) on the coordinator, as Kafka 4.x's OffsetMetadataManager answers it.

- The group must exist (a consumer group, a classic group, or offsets committed by an admin or a
  manual-assignment consumer), else GROUP_ID_NOT_FOUND for the whole request.
- A non-empty classic group whose protocol type is not ``consumer`` cannot have offsets deleted
  (NON_EMPTY_GROUP): the coordinator cannot tell which topics it reads.
- Per partition: GROUP_SUBSCRIBED_TO_TOPIC when a member subscribes to the topic (by name or
  through a resolved regex; a classic ``consumer`` group's members by their JoinGroup metadata),
  else the committed offset (if any) is deleted with a tombstone and the answer is NONE (also
  when there was nothing to delete).
"""

from __future__ import annotations

from ...errors import ErrorCode, ProtocolError
from ...protocol.messages.offsets import (
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic,
)
from .classic.migration import decode_subscription
from .classic.model import ClassicGroup
from .context import Context
from .records import OffsetTombstone


def delete(ctx: Context, request: OffsetDeleteRequest) -> OffsetDeleteResponse:
    """Delete the requested offsets of `request.group_id` (see the module docstring)."""
    group_id = request.group_id
    consumer_group = ctx.state.group(group_id)
    classic = ctx.state.classic_groups.get(group_id)
    offsets = ctx.state.offsets.get(group_id, {})
    if consumer_group is None and classic is None and group_id not in ctx.state.simple_groups and not offsets:
        return OffsetDeleteResponse(error_code=int(ErrorCode.GROUP_ID_NOT_FOUND))
    if classic is not None and not classic.is_empty and classic.protocol_type != "consumer":
        return OffsetDeleteResponse(error_code=int(ErrorCode.NON_EMPTY_GROUP))
    if consumer_group is not None:
        subscribed = consumer_group.subscribed_topic_names()
    elif classic is not None:
        subscribed = _classic_subscriptions(classic)
    else:
        subscribed = set()
    topics = []
    for topic in request.topics:
        answers = []
        for partition in topic.partitions:
            index = partition.partition_index
            if topic.name in subscribed:
                code = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
            else:
                if (topic.name, index) in offsets:
                    ctx.writer.write(OffsetTombstone(group_id, topic.name, index))
                code = ErrorCode.NONE
            answers.append(OffsetDeleteResponsePartition(partition_index=index, error_code=int(code)))
        topics.append(OffsetDeleteResponseTopic(name=topic.name, partitions=answers))
    return OffsetDeleteResponse(error_code=int(ErrorCode.NONE), topics=topics)


def _classic_subscriptions(group: ClassicGroup) -> set[str]:
    """The topics the members of a classic ``consumer`` group subscribe to (none when empty)."""
    if group.is_empty or group.protocol_type != "consumer":
        return set()
    names: set[str] = set()
    for member in group.members.values():
        try:
            names.update(decode_subscription(member.metadata(group.protocol_name))[0].topics)
        except ProtocolError:
            continue  # Kafka skips a member whose metadata it cannot read
    return names
