"""DescribeGroups (15) and the classic groups' entries in ListGroups.

A classic group shows its members' metadata and assignment only when Stable (as Kafka does). A
consumer group is described too, with protocol type ``consumer``; a group that does not exist is
GROUP_ID_NOT_FOUND from v6 and a ``Dead`` group before (KIP-1043).
"""

from __future__ import annotations

from ....errors import ErrorCode
from ....protocol.messages.classic_group import (
    DescribedGroup,
    DescribedGroupMember,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
)
from ....protocol.messages.list_groups import ListedGroup
from ..context import Context
from ..workers import api as workers_api
from .model import ClassicGroup, ClassicState

#: DescribeGroups v6 answers a missing group GROUP_ID_NOT_FOUND (a Dead group before).
NOT_FOUND_VERSION = 6


def describe_groups(ctx: Context, request: DescribeGroupsRequest, version: int) -> DescribeGroupsResponse:
    described = []
    for group_id in request.groups:
        classic = ctx.state.classic_groups.get(group_id)
        consumer = ctx.state.group(group_id)
        if classic is not None:
            described.append(_classic(classic))
        elif consumer is not None:
            described.append(
                DescribedGroup(
                    group_id=group_id,
                    group_state=consumer.state().value,
                    protocol_type="consumer",
                    members=[
                        DescribedGroupMember(
                            member_id=m.member_id,
                            group_instance_id=m.instance_id,
                            client_id=m.metadata.client_id,
                            client_host=m.metadata.client_host,
                        )
                        for m in consumer.members.values()
                    ],
                )
            )
        elif (workers := ctx.state.worker_groups.get(group_id)) is not None:
            described.append(workers_api.described(workers))
        elif group_id in ctx.state.simple_groups:
            described.append(DescribedGroup(group_id=group_id, group_state=ClassicState.EMPTY.value))
        elif version >= NOT_FOUND_VERSION:
            described.append(
                DescribedGroup(
                    group_id=group_id,
                    error_code=ErrorCode.GROUP_ID_NOT_FOUND,
                    error_message=f"Group {group_id} not found.",
                    group_state=ClassicState.DEAD.value,
                )
            )
        else:
            described.append(DescribedGroup(group_id=group_id, group_state=ClassicState.DEAD.value))
    return DescribeGroupsResponse(groups=described)


def _classic(group: ClassicGroup) -> DescribedGroup:
    """Kafka names the protocol and the members' metadata of a Stable group only; their
    assignments (the last ones given) in every state."""
    stable = group.state == ClassicState.STABLE
    return DescribedGroup(
        group_id=group.group_id,
        group_state=group.state.value,
        protocol_type=group.protocol_type or "",
        protocol_data=(group.protocol_name or "") if stable else "",
        members=[
            DescribedGroupMember(
                member_id=m.member_id,
                group_instance_id=m.instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                member_metadata=m.metadata(group.protocol_name) if stable else b"",
                member_assignment=m.assignment,
            )
            for m in group.members.values()
        ],
    )


def listed_classic_groups(ctx: Context, states: set[str], types: set[str]) -> list[ListedGroup]:
    """Classic groups for ListGroups (lower-cased state and type filters; empty: no filter)."""
    listed: list[ListedGroup] = []
    if types and "classic" not in types:
        return listed
    for group_id, group in sorted(ctx.state.classic_groups.items()):
        state = group.state.value
        if not states or state.lower() in states:
            listed.append(
                ListedGroup(
                    group_id=group_id,
                    protocol_type=group.protocol_type or "",
                    group_state=state,
                    group_type="classic",
                )
            )
    return listed
