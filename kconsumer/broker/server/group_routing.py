"""Which groups a coordinator request names, and how a request naming several (OffsetFetch v8+,
ConsumerGroupDescribe) or none (ListGroups) is split into per-shard requests and merged back, so
each group is answered by the broker and shard coordinating it (NOT_COORDINATOR elsewhere, as
Kafka answers per group)."""

from __future__ import annotations

from typing import Any

from ...protocol.messages.classic_group import DescribeGroupsRequest
from ...protocol.messages.consumer_group import ConsumerGroupDescribeRequest
from ...protocol.messages.list_groups import DeleteGroupsRequest, DeleteGroupsResponse, ListGroupsRequest
from ...protocol.messages.offsets import OffsetFetchRequest
from ...protocol.schema import Message


def group_ids(request: Message) -> list[str] | None:
    """The groups a request names (None: it names none, as ListGroups)."""
    if isinstance(request, ListGroupsRequest):
        return None
    if isinstance(request, ConsumerGroupDescribeRequest):
        return list(request.group_ids)
    if isinstance(request, DescribeGroupsRequest):
        return list(request.groups)
    if isinstance(request, OffsetFetchRequest) and request.groups:
        return [group.group_id for group in request.groups]
    if isinstance(request, DeleteGroupsRequest):
        return list(request.groups_names)
    group_id: str = vars(request)["group_id"]
    return [group_id]


def for_group(request: Message, group_id: str) -> Message:
    """`request` narrowed to one of its groups."""
    values: dict[str, Any] = dict(request.__dict__)
    if isinstance(request, ConsumerGroupDescribeRequest):
        values["group_ids"] = [group_id]
    elif isinstance(request, DescribeGroupsRequest):
        values["groups"] = [group_id]
    elif isinstance(request, OffsetFetchRequest) and request.groups:
        values["groups"] = [g for g in request.groups if g.group_id == group_id][:1]
    elif isinstance(request, DeleteGroupsRequest):
        values["groups_names"] = [group_id]
    else:
        return request
    return type(request)(**values)


def merged(responses: list[Message]) -> Message:
    """One response carrying the groups of per-group (or per-shard) responses of the same API."""
    first = responses[0]
    listed = "results" if isinstance(first, DeleteGroupsResponse) else "groups"
    if len(responses) == 1 or not hasattr(first, listed):
        return first
    groups: list[Any] = []
    for response in responses:
        groups.extend(vars(response)[listed])
    values: dict[str, Any] = dict(first.__dict__)
    values[listed] = groups
    if "error_code" in values:
        codes = [getattr(r, "error_code", 0) for r in responses]
        values["error_code"] = next((code for code in codes if code), 0)
    return type(first)(**values)
