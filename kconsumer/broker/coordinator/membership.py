"""Removing members and bumping the group epoch: shared by leaves, timeouts and replacements."""

from __future__ import annotations

from .classic import migration
from .context import Context, client_assignment_timer, member_timers
from .model import ConsumerGroup
from .records import (
    CurrentAssignmentTombstone,
    GroupEpochRecord,
    MemberMetadataTombstone,
    RegexTombstone,
    TargetMemberTombstone,
)
from .target import install_target


def remove_member(
    ctx: Context,
    group: ConsumerGroup,
    member_id: str,
    *,
    cancel_timers: bool = True,
    drop_regexes: bool = True,
) -> None:
    """Write the tombstones removing a member (current assignment, target, metadata) and, unless
    told not to (a static replacement: the new member subscribes the same way), the tombstones of
    regexes nobody uses any more; cancel the member's timers unless told not to (a timer of a
    member that is gone is ignored when it fires). No epoch bump."""
    group_id = group.group_id
    ctx.writer.write(CurrentAssignmentTombstone(group_id, member_id))
    ctx.writer.write(TargetMemberTombstone(group_id, member_id))
    ctx.writer.write(MemberMetadataTombstone(group_id, member_id))
    if drop_regexes:
        drop_unused_regexes(ctx, group)
    if cancel_timers:
        for key in member_timers(group_id, member_id):
            ctx.timers.cancel(key)
    run = ctx.client_runs.get(group_id)
    if run is not None and run.chosen_member == member_id:
        # The chosen member is gone: another one is chosen by the next heartbeat that finds the
        # target behind the group epoch (the epoch is bumped right after this).
        del ctx.client_runs[group_id]
        ctx.timers.cancel(client_assignment_timer(group_id))


def fence_member(ctx: Context, group: ConsumerGroup, member_id: str) -> None:
    """Remove a member and bump the group epoch: leave -1, session or rebalance
    timeout, static full leave. When it was the last member using the consumer protocol, the
    group becomes a classic group instead (online downgrade)."""
    if migration.may_downgrade_on_leave(ctx, group, member_id):
        migration.downgrade(ctx, group, member_id)
        return
    remove_member(ctx, group, member_id)
    bump_group_epoch(ctx, group)
    if not group.members:  # as Kafka: the empty group's (empty) target is at the new epoch at once
        install_target(ctx.writer, group, {}, group.group_epoch, ctx.now_ms)


def bump_group_epoch(ctx: Context, group: ConsumerGroup) -> None:
    """Write the next group epoch with the current metadata hash of the subscribed topics."""
    new_hash = ctx.image.topics_hash(group.subscribed_topic_names())
    ctx.writer.write(GroupEpochRecord(group.group_id, group.group_epoch + 1, new_hash))


def drop_unused_regexes(ctx: Context, group: ConsumerGroup) -> None:
    for regex in list(group.resolved_regexes):
        if regex not in group.subscribed_regexes:
            ctx.writer.write(RegexTombstone(group.group_id, regex))
