"""ConsumerGroupDescribe and ListGroups."""

from __future__ import annotations

from collections.abc import Iterable

from ...errors import ErrorCode
from ...protocol.messages.consumer_group import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    DescribedAssignment,
    DescribedGroup,
    DescribedMember,
    DescribedTopicPartitions,
)
from ...protocol.messages.list_groups import ListedGroup, ListGroupsRequest, ListGroupsResponse
from ...protocol.uuid import Uuid
from .classic.describe import listed_classic_groups
from .client_assignment import select_assignor
from .context import Context
from .model import ConsumerGroup, ConsumerGroupMember
from .workers import api as workers_api

#: ConsumerGroupDescribe v1 MemberType of a consumer-protocol member.
MEMBER_TYPE_CLASSIC = 0
MEMBER_TYPE_CONSUMER = 1


def describe(ctx: Context, request: ConsumerGroupDescribeRequest) -> ConsumerGroupDescribeResponse:
    groups = []
    for group_id in request.group_ids:
        if not group_id:
            groups.append(
                DescribedGroup(
                    group_id=group_id,
                    error_code=ErrorCode.INVALID_GROUP_ID,
                    error_message="Group id can't be empty.",
                )
            )
            continue
        group = ctx.state.group(group_id)
        if group is None:
            groups.append(
                DescribedGroup(
                    group_id=group_id,
                    error_code=ErrorCode.GROUP_ID_NOT_FOUND,
                    error_message=f"Group {group_id} not found.",
                )
            )
            continue
        groups.append(describe_group(ctx, group))
    return ConsumerGroupDescribeResponse(groups=groups)


def describe_group(ctx: Context, group: ConsumerGroup) -> DescribedGroup:
    """One group as ConsumerGroupDescribe v1 (Kafka 4.3) shows it."""
    selection = select_assignor(group, ctx.default_assignor)
    return DescribedGroup(
        group_id=group.group_id,
        group_state=group.state().value,
        group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch,
        assignor_name=selection.name,
        members=[_member(ctx, group, group.members[m]) for m in sorted(group.members)],
    )


def _member(ctx: Context, group: ConsumerGroup, member: ConsumerGroupMember) -> DescribedMember:
    metadata = member.metadata
    current = member.current
    # 4.3 (KAFKA-20431): the assignment includes the partitions pending revocation.
    held: dict[Uuid, set[int]] = {t: set(p) for t, p in current.assigned.items()}
    for topic, parts in current.pending_revocation.items():
        held.setdefault(topic, set()).update(parts)
    return DescribedMember(
        member_id=member.member_id,
        instance_id=metadata.instance_id,
        rack_id=metadata.rack_id,
        member_epoch=current.member_epoch,
        client_id=metadata.client_id,
        client_host=metadata.client_host,
        subscribed_topic_names=list(metadata.subscribed_topic_names),
        # As Kafka: a member without a regex is described with an empty one, not a null.
        subscribed_topic_regex=metadata.subscribed_topic_regex or "",
        assignment=_assignment(ctx, held.items()),
        target_assignment=_assignment(ctx, group.target_of(member.member_id).partitions.items()),
        member_type=MEMBER_TYPE_CLASSIC if member.uses_classic_protocol else MEMBER_TYPE_CONSUMER,
    )


def _assignment(ctx: Context, items: Iterable[tuple[Uuid, Iterable[int]]]) -> DescribedAssignment:
    topic_partitions = []
    for topic_id, parts in sorted(items, key=lambda item: item[0]):
        partitions = sorted(parts)
        if not partitions:
            continue
        meta = ctx.image.topics_by_id.get(topic_id)
        if meta is None:
            continue  # a deleted topic is left out, as Kafka does (it has no name to show)
        topic_partitions.append(
            DescribedTopicPartitions(topic_id=topic_id, topic_name=meta.name, partitions=partitions)
        )
    return DescribedAssignment(topic_partitions=topic_partitions)


def list_groups(ctx: Context, request: ListGroupsRequest) -> ListGroupsResponse:
    """Consumer groups (type ``consumer``), classic groups and simple groups (type ``classic``),
    worker groups (type ``connect``)."""
    states = {s.lower() for s in request.states_filter}
    types = {t.lower() for t in request.types_filter}
    listed = []
    for group_id in sorted(ctx.state.groups):
        state = ctx.state.groups[group_id].state().value
        if (not states or state.lower() in states) and (not types or "consumer" in types):
            listed.append(
                ListedGroup(
                    group_id=group_id, protocol_type="consumer", group_state=state, group_type="consumer"
                )
            )
    listed.extend(listed_classic_groups(ctx, states, types))
    listed.extend(workers_api.listed(ctx, states, types))
    for group_id in sorted(ctx.state.simple_groups - set(ctx.state.groups) - set(ctx.state.classic_groups)):
        if (not states or "empty" in states) and (not types or "classic" in types):
            listed.append(
                ListedGroup(group_id=group_id, protocol_type="", group_state="Empty", group_type="classic")
            )
    return ListGroupsResponse(groups=listed)
