"""DeleteGroups on the coordinator, as Kafka 4.x's group coordinator answers it.

- A group the coordinator does not know (no consumer, classic or offsets-only group) is
  GROUP_ID_NOT_FOUND;
- a group with members (a consumer group not Empty, a classic group not Empty) is
  NON_EMPTY_GROUP;
- otherwise the group and every offset it committed are deleted (tombstones), and the answer is
  NONE.
"""

from __future__ import annotations

from ...errors import ErrorCode
from .context import Context
from .records import ClassicGroupTombstone, ConsumerGroupTombstone, OffsetTombstone, SimpleGroupTombstone


def delete(ctx: Context, group_id: str) -> ErrorCode:
    """Delete one group (see the module docstring); the error code to answer for it."""
    state = ctx.state
    consumer = state.group(group_id)
    classic = state.classic_groups.get(group_id)
    simple = group_id in state.simple_groups
    offsets = state.offsets.get(group_id, {})
    if consumer is None and classic is None and not simple and not offsets:
        return ErrorCode.GROUP_ID_NOT_FOUND
    if (consumer is not None and consumer.members) or (classic is not None and not classic.is_empty):
        return ErrorCode.NON_EMPTY_GROUP
    for topic, partition in list(offsets):
        ctx.writer.write(OffsetTombstone(group_id, topic, partition))
    if consumer is not None:
        ctx.writer.write(ConsumerGroupTombstone(group_id))
    if classic is not None:
        ctx.writer.write(ClassicGroupTombstone(group_id))
    if simple:
        ctx.writer.write(SimpleGroupTombstone(group_id))
    return ErrorCode.NONE
